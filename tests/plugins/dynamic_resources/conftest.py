"""Shared by the DRA tests: the pathological selectors and devices of issue 33's item 1, and a
CPU-time guard that turns a search or evaluation that would run on into a failure."""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import pytest

#: A 200-element list literal, as the issue's ``[0..199]`` stands for.
RANGE_200 = "[" + ",".join(str(i) for i in range(200)) + "]"
#: Three nested ``all`` over 200 elements: 8,000,000 evaluations of the body.
NESTED_ALL = f"{RANGE_200}.all(a,{RANGE_200}.all(b,{RANGE_200}.all(c,a+b+c>=0)))"


def string_doubling(times: int = 40) -> str:
    """A ``cel.bind`` chain doubling a 16-character string ``times`` times (2^40 · 16
    characters at the end: memory runs out long before)."""
    chain = 'cel.bind(s0, "xxxxxxxxxxxxxxxx", '
    for i in range(1, times + 1):
        chain += f"cel.bind(s{i}, s{i - 1} + s{i - 1}, "
    return chain + f"s{times}.size() > 0 && device.driver != ''" + ")" * (times + 1)


def distinct_devices(count: int) -> list[dict[str, Any]]:
    """Devices whose ``serial`` attributes all differ: no two share a ``matchAttribute``."""
    return [{"name": f"d{i}", "attributes": {"serial": {"int": i}}} for i in range(count)]


class CpuTimeExceeded(BaseException):
    """The guarded block used more CPU time than allowed (a BaseException, as
    KeyboardInterrupt, so that no ``except Exception`` of the code under test swallows it)."""


@contextmanager
def cpu_time_limit(seconds: float) -> Iterator[None]:
    def stop(signum: int, frame: Any) -> None:
        raise CpuTimeExceeded(f"more than {seconds} s of CPU")
    previous = signal.signal(signal.SIGPROF, stop)
    signal.setitimer(signal.ITIMER_PROF, seconds, 0.5)  # again every 0.5 s until stopped
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


@pytest.fixture
def cpu_limit() -> Callable[[float], AbstractContextManager[None]]:
    """``with cpu_limit(s): ...`` fails the test with :class:`CpuTimeExceeded` past ``s``
    seconds of CPU (the code before the bound ran on for minutes, or out of memory)."""
    return cpu_time_limit
