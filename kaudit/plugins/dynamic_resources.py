"""DynamicResources, as far as kaudit models it: pods without ResourceClaims.

Upstream's plugin (``pkg/scheduler/framework/plugins/dynamicresources``, on by default in
v1.34) skips pods that use no ResourceClaims, and its PostFilter then answers
``no new claims to deallocate``, which shows up in the ``0/N nodes are available`` message
before the preemption message. kaudit does not model dynamic resource allocation: a pod that
uses ResourceClaims is reported as unschedulable with a clear reason instead of being
scheduled wrongly.
"""

from __future__ import annotations

from kaudit.config import ArgsSpec, args_defaults, args_schema, args_validation
from kaudit.framework.plugin import (
    FilterPlugin,
    NodeVerdicts,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    ReservePlugin,
)
from kaudit.framework.status import Code, Status
from kaudit.model.pod import PodInfo
from kaudit.plugins import names

NO_CLAIMS_TO_DEALLOCATE = "no new claims to deallocate"
UNSUPPORTED = "kaudit does not model dynamic resource allocation (pod uses ResourceClaims)"


def _uses_claims(pod) -> bool:  # type: ignore[no-untyped-def]
    return bool((pod.obj.get("spec") or {}).get("resourceClaims"))


class DynamicResources(PreEnqueuePlugin, PreFilterPlugin, FilterPlugin, PostFilterPlugin,
                       ReservePlugin, PreBindPlugin):
    name = names.DYNAMIC_RESOURCES
    reads_only_its_node = True
    added_pods_only_hinder = True

    def reads_node_pods(self, pod: PodInfo) -> bool:
        return False  # it reads the node and the sums only
    args_spec = ArgsSpec(
        kind="DynamicResourcesArgs", schema=args_schema.DYNAMIC_RESOURCES_ARGS,
        set_defaults=args_defaults.set_defaults_dynamic_resources,
        validate=args_validation.validate_dynamic_resources_args)

    def pre_enqueue(self, pod):  # type: ignore[no-untyped-def]
        return Status.success()

    def pre_filter(self, state, pod, cluster):  # type: ignore[no-untyped-def]
        if not _uses_claims(pod):
            return None, Status.of(Code.SKIP)
        return None, Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, UNSUPPORTED)

    def filter(self, state, pod, cluster, slots):  # type: ignore[no-untyped-def]
        return NodeVerdicts.passing(len(slots))

    def post_filter(self, state, pod, cluster, diagnosis):  # type: ignore[no-untyped-def]
        return None, Status.of(Code.UNSCHEDULABLE, NO_CLAIMS_TO_DEALLOCATE)

    def reserve(self, state, pod, node_name):  # type: ignore[no-untyped-def]
        return Status.success()

    def unreserve(self, state, pod, node_name):  # type: ignore[no-untyped-def]
        return None

    def pre_bind(self, state, pod, node_name):  # type: ignore[no-untyped-def]
        return Status.success()
