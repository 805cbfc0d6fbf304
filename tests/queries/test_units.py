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
