"""Amounts as people read them, the same in every view."""

from __future__ import annotations

import pytest

from kaudit.queries import units


@pytest.mark.parametrize(("milli", "text"), [(2000, "2 cores"), (1000, "1 core"),
                                             (1400, "1.4 cores"), (250, "0.25 cores"),
                                             (60, "0.06 cores"), (31850, "31.9 cores")])
def test_cores(milli: int, text: str) -> None:
    assert units.cores(milli) == text


@pytest.mark.parametrize(("amount", "text"), [(6 * 2**30, "6 GiB"), (int(4.56 * 2**30),
                                                                       "4.56 GiB"),
                                              (200 * 2**20, "200 MiB"), (240 * 2**30, "240 GiB"),
                                              (0, "0 MiB"), (512, "512 B")])
def test_memory(amount: int, text: str) -> None:
    assert units.memory(amount) == text


def test_percent_seconds_and_durations() -> None:
    assert units.percent(0.6666) == "66.7%" and units.percent(None) == "–"
    assert units.seconds(241.08) == "241.08 s" and units.seconds(25.0) == "25 s"
    assert units.duration(580) == "9m40s" and units.duration(600) == "10m"
    assert units.duration(7500) == "2h05m" and units.duration(1.08) == "1.1s"
    assert units.amount("nvidia.com/gpu", 4) == "4" and units.amount("memory", 2**30) == "1 GiB"


@pytest.mark.parametrize(("resource", "value", "text"), [
    ("cpu", 500, "500m"), ("cpu", 496, "496m"), ("cpu", 2000, "2"), ("cpu", 1500, "1500m"),
    ("memory", 2 * 2**30, "2Gi"), ("memory", 1536 * 2**20, "1536Mi"), ("memory", 10**9, "1G"),
    ("memory", 0, "0"), ("ephemeral-storage", 512, "512"), ("nvidia.com/gpu", 4, "4")])
def test_exact_quantities_as_kubernetes_writes_them(resource: str, value: int,
                                                    text: str) -> None:
    """Where a decision is explained, 496m free never reads as the 500m requested."""
    assert units.quantity(resource, value) == text


def test_a_range_of_exact_quantities() -> None:
    assert units.quantity_range("cpu", [470, 60, 220]) == "60m–470m"
    assert units.quantity_range("memory", [2**30, 2**30]) == "1Gi"
