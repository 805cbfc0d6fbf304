"""The lag of the real scheduler's decisions behind their cycles (benchmarks/realcluster/lag.py)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from benchmarks.realcluster.lag import cycle_starts, decision_lags
from kaudit.store.traces import StoredEvent


def _us(text: str) -> int:
    """A local time (as klog writes it) in µs since the epoch."""
    return int(datetime.fromisoformat(text).astimezone().timestamp() * 1_000_000)


def _pod(seq: int, at: str, node: str | None) -> StoredEvent:
    spec = {"containers": [{"name": "c", "image": "pause"}],
            **({"nodeName": node} if node else {})}
    obj = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "web-1", "namespace": "shop", "uid": "u1"},
           "spec": spec, "status": {"phase": "Pending"}}
    return StoredEvent(seq, _us(at), "ADDED" if seq == 1 else "MODIFIED", "Pod", "shop",
                       "web-1", obj)


def test_each_decision_is_measured_from_the_start_of_its_pods_last_cycle(tmp_path: Path) -> None:
    log = tmp_path / "kube-scheduler.log"
    log.write_text(
        'I1127 20:18:16.800000   12345 schedule_one.go:100] "Attempting to schedule pod" '
        'pod="shop/web-1"\n'
        'I1127 20:18:16.893641   12345 schedule_one.go:100] "Attempting to schedule pod" '
        'pod="shop/web-1"\n'
        'I1127 20:18:16.900000   12345 schedule_one.go:346] "Successfully bound pod to node" '
        'pod="shop/web-1" node="n1"\n')
    assert cycle_starts(log, 2026) == {"shop/web-1": [_us("2026-11-27T20:18:16.800000"),
                                                      _us("2026-11-27T20:18:16.893641")]}
    events = [_pod(1, "2026-11-27T20:18:16.700000", None),
              _pod(2, "2026-11-27T20:18:16.901641", "n1")]

    lags = decision_lags(events, log)

    assert lags["decisions"] == 1 and lags["withoutCycle"] == 0
    assert lags["maxMs"] == 8.0  # from the second cycle, not the first
