"""The sample trace's recorded history, decided by kube-scheduler's default configuration.

:mod:`kaudit.tracegen.sample` writes the sample's scenario; the placements its "recorded
cluster" makes come from the chooser here: each pending pod is scheduled by kaudit's
kube-scheduler (default ``KubeSchedulerConfiguration``, seed 0) against the cluster as the
recording has it at that moment, and a pod that fits nowhere gets DefaultPreemption's
nomination and victims. So the sample reads like a trace of a cluster running the default
scheduler, and ``kaudit diff recorded RUN`` shows what the replay's timing changes, not a
stand-in's rules. The recorded cluster runs Kubernetes :data:`SAMPLE_RELEASE`, which the
trace's header names (:mod:`kaudit.model.recording`): a replay mirrors that release unless
told another (``--kubernetes-version``).

Regenerate the shipped file with ``python -m kaudit.replay.sample_history traces/sample.jsonl``;
a test checks the committed file matches.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson

from kaudit import versions
from kaudit.cluster.objects import cluster_from_objects, pod_info
from kaudit.config import parse_feature_gates
from kaudit.model.recording import header_object
from kaudit.scheduler.build import build_scheduler, load
from kaudit.tracegen.sample import Chooser, Decision, render

#: The release of the sample's recorded cluster.
SAMPLE_RELEASE = "v1.34.2"


def default_scheduler_chooser() -> Chooser:
    """Decisions of kube-scheduler's default configuration, as :data:`SAMPLE_RELEASE`, on the
    recording's objects."""
    config, registry = load(None, parse_feature_gates("", versions.get(SAMPLE_RELEASE)))
    scheduler = build_scheduler(config, registry, seed=0)

    def choose(objects: list[dict[str, Any]], pod: dict[str, Any]) -> Decision:
        cluster, _pending = cluster_from_objects(objects, config.feature_gates)
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
    """The shipped sample trace's bytes: the header naming :data:`SAMPLE_RELEASE`, then the
    scenario's events."""
    events = render(default_scheduler_chooser())
    first = orjson.loads(events[:events.index(b"\n")])
    header = {"ts": first["ts"], "type": "BOOKMARK",
              "object": header_object(SAMPLE_RELEASE, "kaudit.replay.sample_history")}
    return orjson.dumps(header) + b"\n" + events


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m kaudit.replay.sample_history OUTPUT.jsonl", file=sys.stderr)
        return 2
    Path(argv[1]).write_bytes(render_sample())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
