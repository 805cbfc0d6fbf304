"""Out-of-tree plugins used by the tests, written as a kaudit user would write them."""

from __future__ import annotations

from kaudit.framework.plugin import NodeFilterPlugin, NodeScorePlugin
from kaudit.framework.status import Code, Status


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
