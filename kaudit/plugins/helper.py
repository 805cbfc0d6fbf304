"""Shared scoring helpers: ``framework/plugins/helper/normalize_score.go`` (v1.34), and Go's
integer division and ``math.Round`` as the plugins' arithmetic needs them."""

from __future__ import annotations

import math

import numpy as np

from kaudit.framework.plugin import MAX_NODE_SCORE


def trunc_div(numerator: np.ndarray | int, denominator: np.ndarray | int) -> np.ndarray:
    """Go's integer division: truncates toward zero (Python's ``//`` floors)."""
    num = np.asarray(numerator, dtype=np.int64)
    den = np.asarray(denominator, dtype=np.int64)
    if num.min(initial=0) >= 0 and den.min(initial=1) > 0:
        return num // den  # the same, faster, when nothing is negative
    quotient = np.abs(num) // np.abs(den)
    return np.where((num < 0) ^ (den < 0), -quotient, quotient)


def go_round(values: np.ndarray) -> np.ndarray:
    """Go's ``math.Round`` (half away from zero) of non-negative floats, as int64."""
    floor = np.floor(values)
    rounded: np.ndarray = (floor + (values - floor >= 0.5)).astype(np.int64)
    return rounded


def go_round_scalar(value: float) -> int:
    """Go's ``math.Round`` of one non-negative float."""
    floor = math.floor(value)
    return floor + (value - floor >= 0.5)


def default_normalize(scores: np.ndarray, reverse: bool,
                      max_priority: int = MAX_NODE_SCORE) -> np.ndarray:
    """``DefaultNormalizeScore``: scale to [0, max] by the largest score, optionally reversed.
    A 2-D array is normalized row by row (each row the nodes of one cycle)."""
    scores = np.asarray(scores, dtype=np.int64)
    if scores.max(initial=0) <= 0:  # every row's largest score is 0 (or there is none)
        return np.full_like(scores, max_priority) if reverse else scores.copy()
    highest = np.maximum(scores.max(axis=-1, keepdims=True, initial=0), 0)
    unscaled = np.full_like(scores, max_priority) if reverse else scores
    scaled = trunc_div(max_priority * scores, np.where(highest == 0, 1, highest))
    return np.where(highest == 0, unscaled, max_priority - scaled if reverse else scaled)
