"""The sample trace's recorded history, decided by kube-scheduler's default configuration.

:mod:`kaudit.tracegen.sample` writes the sample's scenario; the placements its "recorded
cluster" makes come from the chooser here: each pending pod is scheduled by kaudit's
kube-scheduler (default ``KubeSchedulerConfiguration``, seed 0) against the cluster as the
recording has it at that moment, and a pod that fits nowhere gets DefaultPreemption's
nomination and victims. So the sample reads like a trace of a cluster running the default
scheduler, and ``kaudit diff recorded RUN`` shows what the replay's timing changes, not a
stand-in's rules.

Regenerate the shipped file with ``python -m kaudit.replay.sample_history traces/sample.jsonl``;
a test checks the committed file matches.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from kaudit.cluster.objects import cluster_from_objects, pod_info
from kaudit.scheduler.build import build_scheduler, load
from kaudit.tracegen.sample import Chooser, Decision, render


def default_scheduler_chooser() -> Chooser:
    """Decisions of kube-scheduler's default configuration on the recording's objects."""
    config, registry = load()
    scheduler = build_scheduler(config, registry, seed=0)

    def choose(objects: list[dict[str, Any]], pod: dict[str, Any]) -> Decision:
        cluster, _pending = cluster_from_objects(objects)
        info = pod_info(cluster, pod)
        if scheduler.framework_for(info) is None:
            return Decision(None)
        attempt = scheduler.schedule(cluster, info)
        if attempt.selected is not None:
            return Decision(attempt.selected)
        result = attempt.post_filter_result
        chosen = getattr(result.details, "chosen", None) if result is not None else None
        if chosen is None:
            return Decision(None)
        return Decision(None, chosen.node, tuple(v.key for v in chosen.victims))

    return choose


def render_sample() -> bytes:
    """The shipped sample trace's bytes."""
    return render(default_scheduler_chooser())


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m kaudit.replay.sample_history OUTPUT.jsonl", file=sys.stderr)
        return 2
    Path(argv[1]).write_bytes(render_sample())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
