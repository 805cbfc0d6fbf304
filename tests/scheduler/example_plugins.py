"""Out-of-tree plugins used by the tests, written as a kaudit user would write them."""

from __future__ import annotations

from typing import Any

from kaudit.config import ArgsSpec, FeatureGates, FieldError
from kaudit.config.fielderrors import invalid
from kaudit.config.schema import Obj
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.events import NODE, POD, ClusterEventWithHint, register
from kaudit.framework.plugin import NodeFilterPlugin, NodeScorePlugin, NodeView
from kaudit.framework.status import Code, Status
from kaudit.model.pod import PodInfo


class NoFridays(NodeFilterPlugin):
    """Rejects nodes labelled ``example.com/no-fridays=true``."""

    name = "NoFridays"

    def filter_node(self, state, pod, node):  # type: ignore[no-untyped-def]
        if node.labels.get(self.args.get("label", "example.com/no-fridays")) == "true":
            return Status.of(Code.UNSCHEDULABLE, "node(s) rest on Fridays")
        return Status.success()


class PreferLabel(NodeScorePlugin):
    """Scores 100 on nodes carrying ``example.com/preferred``, 0 elsewhere."""

    name = "PreferLabel"

    def score_node(self, state, pod, node):  # type: ignore[no-untyped-def]
        return 100 if "example.com/preferred" in node.labels else 0


def _rest_defaults(args: dict[str, Any], gates: FeatureGates) -> dict[str, Any]:
    return {"label": args.get("label") or "example.com/resting", "maxPods": args.get("maxPods", 0)}


def _rest_validate(args: dict[str, Any], gates: FeatureGates) -> list[FieldError]:
    errors = []
    if args.get("maxPods", 0) < 0:
        errors.append(invalid("maxPods", args["maxPods"], "must not be negative"))
    return errors


class RestingNodes(NodeFilterPlugin):
    """The example of docs/plugins.md: rejects nodes labelled as resting, or holding
    ``maxPods`` pods or more; a node losing the label may make a rejected pod schedulable."""

    name = "RestingNodes"
    args_spec = ArgsSpec(kind="RestingNodesArgs",
                         schema=Obj({"label": "string", "maxPods": "int32"}),
                         set_defaults=_rest_defaults, validate=_rest_validate)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [register(NODE, ["Add", "UpdateNodeLabel"]), register(POD, "Delete")]

    def filter_node(self, state: CycleState, pod: PodInfo, node: NodeView) -> Status:
        if node.labels.get(self.args["label"]) == "true":
            return Status.of(Code.UNSCHEDULABLE, "node(s) are resting")
        if self.args["maxPods"] and len(node.pods) >= self.args["maxPods"]:
            return Status.of(Code.UNSCHEDULABLE, "node(s) hold enough pods")
        return Status.success()
