"""The replay raises the garbage collector's thresholds while it runs, and only then."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from kaudit.replay.collector import REPLAY_THRESHOLDS, replay_pace


@pytest.fixture(autouse=True)
def thresholds() -> Iterator[None]:
    """Whatever a test sets, the process gets its thresholds back."""
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)


def test_thresholds_are_raised_inside_and_restored_after() -> None:
    gc.set_threshold(700, 10, 10)
    with replay_pace():
        assert gc.get_threshold() == REPLAY_THRESHOLDS
    assert gc.get_threshold() == (700, 10, 10)


def test_higher_thresholds_are_kept_and_restored_after_an_error() -> None:
    gc.set_threshold(500_000, 10, 1_000)
    with pytest.raises(RuntimeError), replay_pace():
        assert gc.get_threshold() == (500_000, 50, 1_000)
        raise RuntimeError("stop")
    assert gc.get_threshold() == (500_000, 10, 1_000)


def test_nested_replays_restore_once_the_last_ends() -> None:
    gc.set_threshold(700, 10, 10)
    with replay_pace():
        with replay_pace():
            assert gc.get_threshold() == REPLAY_THRESHOLDS
        assert gc.get_threshold() == REPLAY_THRESHOLDS
    assert gc.get_threshold() == (700, 10, 10)


def test_a_collector_switched_off_stays_off() -> None:
    gc.set_threshold(0, 10, 10)
    with replay_pace():
        assert gc.get_threshold()[0] == 0
    assert gc.get_threshold() == (0, 10, 10)
