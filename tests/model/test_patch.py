"""Applying PATCH bodies: JSON Patch, strategic merge patch, JSON merge patch.

Realistic patches are shaped as kubectl, the kubelet and the scheduler send them. The
``UPSTREAM_CASES`` table is ported from the YAML tables of
k8s.io/apimachinery/pkg/util/strategicpatch/patch_test.go
(``customStrategicMergePatchTestCaseData``, ``customStrategicMergePatchRawTestCases``,
``createStrategicMergePatchTestCaseData`` and
``strategicMergePatchRawTestCases``; three-way cases use their ``current`` and ``threeWay``
documents), with the ``MergeItem`` test struct of that file as schema.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kaudit.model.patch import (
    JSON_PATCH,
    MERGE,
    MERGE_PATCH,
    REPLACE,
    STRATEGIC_MERGE_PATCH,
    Field,
    PatchError,
    apply_patch,
    json_patch,
    merge_patch,
    patch_type,
    schema_for,
    strategic_merge_patch,
)

# ---------------------------------------------------------------------------------------------
# Objects
# ---------------------------------------------------------------------------------------------


def _condition(kind: str, status: str, when: str = "2024-05-01T10:00:00Z") -> dict[str, Any]:
    return {"type": kind, "status": status, "lastProbeTime": None, "lastTransitionTime": when}


def _pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web-0",
            "namespace": "shop",
            "uid": "0b6e-pod",
            "labels": {"app": "web", "tier": "front"},
            "annotations": {"example.com/owner": "team-a"},
            "finalizers": ["example.com/protect"],
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                                 "uid": "rs-1", "controller": True}],
        },
        "spec": {
            "nodeName": "node-1",
            "schedulerName": "default-scheduler",
            "containers": [
                {"name": "app", "image": "shop/web:1.0",
                 "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                 "env": [{"name": "MODE", "value": "prod"}, {"name": "DEBUG", "value": "0"}],
                 "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}},
                 "volumeMounts": [{"name": "data", "mountPath": "/data"}]},
                {"name": "sidecar", "image": "proxy:2.1"},
            ],
            "volumes": [{"name": "data", "emptyDir": {}}],
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                             "effect": "NoExecute", "tolerationSeconds": 300}],
        },
        "status": {
            "phase": "Pending",
            "conditions": [
                _condition("PodReadyToStartContainers", "False"),
                _condition("Initialized", "True"),
                _condition("Ready", "False"),
                _condition("ContainersReady", "False"),
                _condition("PodScheduled", "True"),
            ],
            "containerStatuses": [
                {"name": "app", "ready": False, "restartCount": 0,
                 "state": {"waiting": {"reason": "ContainerCreating"}}},
                {"name": "sidecar", "ready": False, "restartCount": 0,
                 "state": {"waiting": {"reason": "ContainerCreating"}}},
            ],
            "hostIP": "10.0.0.11",
            "qosClass": "Burstable",
        },
    }


def _node() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "node-1", "labels": {"kubernetes.io/hostname": "node-1"}},
        "spec": {"podCIDR": "10.244.1.0/24", "podCIDRs": ["10.244.1.0/24"],
                 "taints": [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]},
        "status": {
            "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "allocatable": {"cpu": "3800m", "memory": "15Gi", "pods": "110"},
            "conditions": [
                {"type": "MemoryPressure", "status": "False",
                 "lastHeartbeatTime": "2024-05-01T10:00:00Z"},
                {"type": "DiskPressure", "status": "False",
                 "lastHeartbeatTime": "2024-05-01T10:00:00Z"},
                {"type": "PIDPressure", "status": "False",
                 "lastHeartbeatTime": "2024-05-01T10:00:00Z"},
                {"type": "Ready", "status": "True", "reason": "KubeletReady",
                 "lastHeartbeatTime": "2024-05-01T10:00:00Z"},
            ],
            "addresses": [{"type": "InternalIP", "address": "10.0.0.11"},
                          {"type": "Hostname", "address": "node-1"}],
            "images": [{"names": ["shop/web:1.0"], "sizeBytes": 1000}],
        },
    }


def _apply(obj: dict[str, Any], patch: Any, kind: str) -> dict[str, Any]:
    """Apply and check that neither the object nor the patch was touched."""
    obj_before, patch_before = copy.deepcopy(obj), copy.deepcopy(patch)
    result = apply_patch(obj, patch, kind)
    assert obj == obj_before
    assert patch == patch_before
    return result


def _types(conditions: list[dict[str, Any]]) -> list[str]:
    return [condition["type"] for condition in conditions]


# ---------------------------------------------------------------------------------------------
# Patch type
# ---------------------------------------------------------------------------------------------


def test_patch_type() -> None:
    assert patch_type([{"op": "remove", "path": "/a"}]) == JSON_PATCH
    assert patch_type([]) == JSON_PATCH
    assert patch_type({"metadata": {}}) == STRATEGIC_MERGE_PATCH
    assert patch_type({"metadata": {}}, "Pod") == STRATEGIC_MERGE_PATCH
    assert patch_type({"metadata": {}}, "pods") == STRATEGIC_MERGE_PATCH
    assert patch_type({"spec": {}}, "Widget") == MERGE_PATCH


@pytest.mark.parametrize("patch", ["spec", 3, None, True])
def test_patch_neither_list_nor_object(patch: Any) -> None:
    with pytest.raises(PatchError, match=r"^patch: expected a JSON array"):
        apply_patch(_pod(), patch, "Pod")
    with pytest.raises(PatchError):
        patch_type(patch)


def test_schema_lookup_accepts_kind_and_resource_names() -> None:
    assert schema_for("Pod") is schema_for("pod") is schema_for("pods")
    assert schema_for("Widget") is None
    assert schema_for("") is None


# ---------------------------------------------------------------------------------------------
# Strategic merge patches as kubectl, the kubelet and the scheduler send them
# ---------------------------------------------------------------------------------------------


def test_kubelet_pod_status_patch() -> None:
    # kubelet status manager: CreateTwoWayMergePatch of the old and new status.
    patch = {
        "metadata": {"uid": "0b6e-pod"},
        "status": {
            "$setElementOrder/conditions": [
                {"type": "PodReadyToStartContainers"}, {"type": "Initialized"},
                {"type": "Ready"}, {"type": "ContainersReady"}, {"type": "PodScheduled"}],
            "conditions": [
                {"lastTransitionTime": "2024-05-01T10:00:05Z", "status": "True",
                 "type": "PodReadyToStartContainers"},
                {"lastTransitionTime": "2024-05-01T10:00:09Z", "status": "True",
                 "type": "Ready"},
                {"lastTransitionTime": "2024-05-01T10:00:09Z", "status": "True",
                 "type": "ContainersReady"},
            ],
            "containerStatuses": [
                {"name": "app", "ready": True, "restartCount": 0, "started": True,
                 "state": {"running": {"startedAt": "2024-05-01T10:00:07Z"}}},
                {"name": "sidecar", "ready": True, "restartCount": 0, "started": True,
                 "state": {"running": {"startedAt": "2024-05-01T10:00:08Z"}}},
            ],
            "phase": "Running",
            "podIP": "10.244.1.7",
            "podIPs": [{"ip": "10.244.1.7"}],
            "startTime": "2024-05-01T10:00:01Z",
        },
    }
    pod = _pod()
    result = _apply(pod, patch, "Pod")
    status = result["status"]
    assert status["phase"] == "Running"
    assert _types(status["conditions"]) == ["PodReadyToStartContainers", "Initialized", "Ready",
                                            "ContainersReady", "PodScheduled"]
    ready = status["conditions"][2]
    assert ready == {"type": "Ready", "status": "True", "lastProbeTime": None,
                     "lastTransitionTime": "2024-05-01T10:00:09Z"}
    assert status["conditions"][1] is pod["status"]["conditions"][1]
    # containerStatuses has no patch strategy upstream: the list is replaced whole.
    assert status["containerStatuses"] == patch["status"]["containerStatuses"]
    assert status["podIPs"] == [{"ip": "10.244.1.7"}]
    assert status["hostIP"] == "10.0.0.11"
    assert result["spec"] is pod["spec"]


def test_scheduler_unschedulable_condition_and_nominated_node() -> None:
    pod = _pod()
    pod["status"] = {"phase": "Pending", "conditions": []}
    patch = {"status": {
        "$setElementOrder/conditions": [{"type": "PodScheduled"}],
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                        "message": "0/3 nodes are available", "lastProbeTime": None,
                        "lastTransitionTime": "2024-05-01T10:00:00Z"}],
        "nominatedNodeName": "node-2",
    }}
    status = _apply(pod, patch, "Pod")["status"]
    assert status["nominatedNodeName"] == "node-2"
    assert status["conditions"] == [{"type": "PodScheduled", "status": "False",
                                     "reason": "Unschedulable",
                                     "message": "0/3 nodes are available",
                                     "lastTransitionTime": "2024-05-01T10:00:00Z"}]


def test_condition_updated_by_type_without_order_directive() -> None:
    patch = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    conditions = _apply(_pod(), patch, "Pod")["status"]["conditions"]
    assert len(conditions) == 5
    assert [c["status"] for c in conditions if c["type"] == "Ready"] == ["True"]


def test_kubectl_label_and_annotate() -> None:
    pod = _pod()
    labelled = _apply(pod, {"metadata": {"labels": {"env": "prod", "tier": "back"}}}, "Pod")
    assert labelled["metadata"]["labels"] == {"app": "web", "tier": "back", "env": "prod"}
    assert labelled["metadata"]["annotations"] is pod["metadata"]["annotations"]
    # kubectl label pod web-0 tier-
    unlabelled = _apply(labelled, {"metadata": {"labels": {"tier": None}}}, "Pod")
    assert unlabelled["metadata"]["labels"] == {"app": "web", "env": "prod"}
    annotated = _apply(pod, {"metadata": {"annotations": {
        "example.com/owner": None, "kubectl.kubernetes.io/last-applied-configuration": "{}"}}},
        "Pod")
    assert annotated["metadata"]["annotations"] == {
        "kubectl.kubernetes.io/last-applied-configuration": "{}"}
    # A label patch on an object without labels creates the map.
    node = _node()
    del node["metadata"]["labels"]
    assert _apply(node, {"metadata": {"labels": {"zone": "a"}}}, "Node")["metadata"] == {
        "name": "node-1", "labels": {"zone": "a"}}


def test_kubectl_cordon_and_uncordon() -> None:
    cordoned = _apply(_node(), {"spec": {"unschedulable": True}}, "Node")
    assert cordoned["spec"]["unschedulable"] is True
    assert cordoned["spec"]["taints"] == _node()["spec"]["taints"]
    uncordoned = _apply(cordoned, {"spec": {"unschedulable": None}}, "Node")
    assert "unschedulable" not in uncordoned["spec"]


def test_kubectl_taint_replaces_the_whole_list() -> None:
    # NodeSpec.taints is atomic (no patch strategy): kubectl sends the complete new list.
    patch = {"spec": {"taints": [
        {"key": "dedicated", "value": "db", "effect": "NoSchedule"},
        {"key": "gpu", "value": "true", "effect": "NoExecute"}]}}
    assert _apply(_node(), patch, "Node")["spec"]["taints"] == patch["spec"]["taints"]
    # kubectl taint node node-1 dedicated- (the last taint)
    assert "taints" not in _apply(_node(), {"spec": {"taints": None}}, "Node")["spec"]


def test_kubelet_node_status_heartbeat() -> None:
    patch = {"status": {
        "$setElementOrder/conditions": [{"type": "MemoryPressure"}, {"type": "DiskPressure"},
                                        {"type": "PIDPressure"}, {"type": "Ready"}],
        "allocatable": {"cpu": "3700m", "ephemeral-storage": "90Gi"},
        "conditions": [
            {"lastHeartbeatTime": "2024-05-01T10:00:40Z", "type": "MemoryPressure"},
            {"lastHeartbeatTime": "2024-05-01T10:00:40Z", "type": "DiskPressure"},
            {"lastHeartbeatTime": "2024-05-01T10:00:40Z", "type": "PIDPressure"},
            {"lastHeartbeatTime": "2024-05-01T10:00:40Z", "status": "False",
             "reason": "KubeletNotReady", "type": "Ready"},
        ],
    }}
    node = _node()
    status = _apply(node, patch, "Node")["status"]
    assert status["allocatable"] == {"cpu": "3700m", "memory": "15Gi", "pods": "110",
                                     "ephemeral-storage": "90Gi"}
    assert _types(status["conditions"]) == ["MemoryPressure", "DiskPressure", "PIDPressure",
                                            "Ready"]
    assert status["conditions"][0] == {"type": "MemoryPressure", "status": "False",
                                       "lastHeartbeatTime": "2024-05-01T10:00:40Z"}
    assert status["conditions"][3]["status"] == "False"
    assert status["conditions"][3]["reason"] == "KubeletNotReady"
    assert status["capacity"] is node["status"]["capacity"]
    assert status["images"] is node["status"]["images"]


def test_node_addresses_merge_by_type_and_pod_cidrs_as_set() -> None:
    patch = {"status": {"addresses": [{"type": "ExternalIP", "address": "203.0.113.4"},
                                      {"type": "InternalIP", "address": "10.0.0.12"}]},
             "spec": {"podCIDRs": ["fd00:10:244:1::/64"]}}
    result = _apply(_node(), patch, "Node")
    assert result["status"]["addresses"] == [
        {"type": "ExternalIP", "address": "203.0.113.4"},
        {"type": "InternalIP", "address": "10.0.0.12"},
        {"type": "Hostname", "address": "node-1"},
    ]
    # Upstream places new set members before the server-only ones when no order is given.
    assert result["spec"]["podCIDRs"] == ["fd00:10:244:1::/64", "10.244.1.0/24"]


def test_finalizers() -> None:
    pod = _pod()
    removed = _apply(pod, {"metadata": {
        "$deleteFromPrimitiveList/finalizers": ["example.com/protect"]}}, "Pod")
    assert removed["metadata"]["finalizers"] == []
    added = _apply(pod, {"metadata": {"finalizers": ["example.com/backup",
                                                      "example.com/protect"]}}, "Pod")
    assert added["metadata"]["finalizers"] == ["example.com/backup", "example.com/protect"]
    ordered = _apply(pod, {"metadata": {
        "$setElementOrder/finalizers": ["example.com/protect", "example.com/backup"],
        "finalizers": ["example.com/backup"]}}, "Pod")
    assert ordered["metadata"]["finalizers"] == ["example.com/protect", "example.com/backup"]
    # Deleting from a list the object does not have is a no-op (upstream since 1.30).
    del pod["metadata"]["finalizers"]
    assert "finalizers" not in _apply(pod, {"metadata": {
        "$deleteFromPrimitiveList/finalizers": ["example.com/protect"]}}, "Pod")["metadata"]


def test_owner_references_merge_by_uid() -> None:
    patch = {"metadata": {"ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "rs-1",
         "controller": False},
        {"apiVersion": "v1", "kind": "Node", "name": "node-1", "uid": "node-uid"}]}}
    refs = _apply(_pod(), patch, "Pod")["metadata"]["ownerReferences"]
    assert [ref["uid"] for ref in refs] == ["rs-1", "node-uid"]
    assert refs[0]["controller"] is False


def test_delete_a_container() -> None:
    patch = {"spec": {
        "$setElementOrder/containers": [{"name": "app"}],
        "containers": [{"$patch": "delete", "name": "sidecar"}]}}
    containers = _apply(_pod(), patch, "Pod")["spec"]["containers"]
    assert [c["name"] for c in containers] == ["app"]


def test_container_env_and_image_merge_in_a_pod_template() -> None:
    replicaset = {"kind": "ReplicaSet", "metadata": {"name": "web"},
                  "spec": {"replicas": 2, "template": {"metadata": {"labels": {"app": "web"}},
                                                       "spec": copy.deepcopy(_pod()["spec"])}}}
    patch = {"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "app"}, {"name": "sidecar"}],
        "containers": [{
            "name": "app", "image": "shop/web:1.1",
            "$setElementOrder/env": [{"name": "MODE"}, {"name": "DEBUG"}, {"name": "TZ"}],
            "env": [{"name": "DEBUG", "value": "1"}, {"name": "TZ", "value": "UTC"}],
        }]}}}}
    for kind in ("ReplicaSet", "StatefulSet", "ReplicationController", "Deployment"):
        spec = _apply(replicaset, patch, kind)["spec"]["template"]["spec"]
        app = spec["containers"][0]
        assert app["image"] == "shop/web:1.1"
        assert app["env"] == [{"name": "MODE", "value": "prod"}, {"name": "DEBUG", "value": "1"},
                              {"name": "TZ", "value": "UTC"}]
        assert app["ports"] == [{"containerPort": 8080, "protocol": "TCP"}]
        assert spec["containers"][1] is replicaset["spec"]["template"]["spec"]["containers"][1]


def test_new_list_element_comes_before_server_only_elements() -> None:
    # Without $setElementOrder, upstream's mergeSortedSlice puts new patch items first.
    patch = {"spec": {"containers": [{"name": "debug", "image": "busybox"}]}}
    containers = _apply(_pod(), patch, "Pod")["spec"]["containers"]
    assert [c["name"] for c in containers] == ["debug", "app", "sidecar"]


def test_retain_keys_switches_a_volume_source() -> None:
    # kubectl apply switching a volume from emptyDir to hostPath (volumes: merge,retainKeys).
    patch = {"spec": {"volumes": [{"$retainKeys": ["hostPath", "name"], "name": "data",
                                   "hostPath": {"path": "/srv/data"}}]}}
    volumes = _apply(_pod(), patch, "Pod")["spec"]["volumes"]
    assert volumes == [{"name": "data", "hostPath": {"path": "/srv/data"}}]


def test_retain_keys_must_list_every_patched_field() -> None:
    patch = {"spec": {"volumes": [{"$retainKeys": ["name"], "name": "data",
                                   "hostPath": {"path": "/srv/data"}}]}}
    with pytest.raises(PatchError, match=r"^spec\.volumes\[0\]\.\$retainKeys: 'hostPath'"):
        apply_patch(_pod(), patch, "Pod")


def test_map_and_list_replace_directives() -> None:
    pod = _pod()
    replaced = _apply(pod, {"metadata": {"labels": {"$patch": "replace", "app": "api"}}}, "Pod")
    assert replaced["metadata"]["labels"] == {"app": "api"}
    deleted = _apply(pod, {"metadata": {"annotations": {"$patch": "delete"}}}, "Pod")
    assert deleted["metadata"]["annotations"] == {}
    merged = _apply(pod, {"metadata": {"labels": {"$patch": "merge", "env": "dev"}}}, "Pod")
    assert merged["metadata"]["labels"] == {"app": "web", "tier": "front", "env": "dev"}
    env = _apply(pod, {"spec": {"containers": [{"name": "app", "env": [
        {"$patch": "replace"}, {"name": "ONLY", "value": "x"}]}]}}, "Pod")
    assert env["spec"]["containers"][0]["env"] == [{"name": "ONLY", "value": "x"}]


def test_pdb_selector_is_replaced_not_merged() -> None:
    pdb = {"kind": "PodDisruptionBudget", "metadata": {"name": "web"},
           "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}
    patch = {"spec": {"selector": {"matchLabels": {"tier": "front"}}}}
    assert _apply(pdb, patch, "PodDisruptionBudget")["spec"]["selector"] == {
        "matchLabels": {"tier": "front"}}


def test_new_fields_are_cleaned_of_nulls_and_directives() -> None:
    patch = {"spec": {"affinity": {"nodeAffinity": {"preferred": None, "required": {
        "$retainKeys": ["terms"], "terms": [{"key": "zone"}, {"$patch": "delete", "x": 1}]}}}}}
    spec = _apply(_pod(), patch, "Pod")["spec"]
    assert spec["affinity"] == {"nodeAffinity": {"required": {"terms": [{"key": "zone"}]}}}
    gone = _apply(_pod(), {"spec": {"overhead": {"$patch": "delete"}}}, "Pod")["spec"]
    assert "overhead" not in gone


def test_type_change_replaces_the_value() -> None:
    patch = {"spec": {"nodeSelector": ["not", "a", "map"]}}
    pod = _pod()
    pod["spec"]["nodeSelector"] = {"disk": "ssd"}
    assert _apply(pod, patch, "Pod")["spec"]["nodeSelector"] == ["not", "a", "map"]


def test_smp_errors_name_the_path() -> None:
    pod = _pod()
    with pytest.raises(PatchError, match=r"^spec\.containers\[0\]: .*merge key 'name'"):
        apply_patch(pod, {"spec": {"containers": [{"image": "x"}]}}, "Pod")
    with pytest.raises(PatchError, match=r"^spec\.containers\[1\]: unknown directive"):
        apply_patch(pod, {"spec": {"containers": [{"name": "app"},
                                                  {"name": "x", "$patch": "drop"}]}}, "Pod")
    with pytest.raises(PatchError, match=r"^status\.\$setElementOrder/conditions: the order"):
        apply_patch(pod, {"status": {
            "$setElementOrder/conditions": [{"type": "Ready"}, {"type": "Initialized"}],
            "conditions": [{"type": "Initialized", "status": "True"},
                           {"type": "Ready", "status": "True"}]}}, "Pod")
    with pytest.raises(PatchError, match=r"^metadata\.\$deleteFromPrimitiveList/finalizers"):
        apply_patch(pod, {"metadata": {"$deleteFromPrimitiveList/finalizers": "x"}}, "Pod")
    with pytest.raises(PatchError, match=r"^metadata\.labels\.\$patch: unknown directive"):
        apply_patch(pod, {"metadata": {"labels": {"$patch": "explode"}}}, "Pod")
    with pytest.raises(PatchError, match=r"not all of one type"):
        apply_patch(pod, {"metadata": {"finalizers": [1]}}, "Pod")


def test_whole_object_directives() -> None:
    assert _apply(_pod(), {"$patch": "delete"}, "Pod") == {}
    assert _apply(_pod(), {"$patch": "replace", "kind": "Pod", "spec": None},
                  "Pod") == {"kind": "Pod"}


# ---------------------------------------------------------------------------------------------
# JSON merge patch (kinds without a schema)
# ---------------------------------------------------------------------------------------------


def test_merge_patch_for_unknown_kinds() -> None:
    widget = {"kind": "Widget", "metadata": {"name": "w", "finalizers": ["a"]},
              "spec": {"sizes": [1, 2], "color": "red", "opts": {"x": 1}}}
    patch = {"metadata": {"finalizers": ["b"]},
             "spec": {"sizes": [3], "color": None, "opts": {"y": {"z": None, "w": 2}},
                      "extra": {"keep": 1, "drop": None}}}
    result = _apply(widget, patch, "Widget")
    assert result["metadata"]["finalizers"] == ["b"]
    assert result["spec"] == {"sizes": [3], "opts": {"x": 1, "y": {"w": 2}},
                              "extra": {"keep": 1}}
    assert merge_patch({"a": 1}, ["x", None]) == ["x", None]
    assert merge_patch("scalar", {"a": {"b": None}}) == {"a": {}}


# ---------------------------------------------------------------------------------------------
# JSON Patch
# ---------------------------------------------------------------------------------------------


def test_json_patch_add_remove_replace() -> None:
    pod = _pod()
    patch = [
        {"op": "add", "path": "/metadata/labels/release", "value": "canary"},
        {"op": "add", "path": "/spec/tolerations/-", "value": {"key": "gpu",
                                                               "operator": "Exists"}},
        {"op": "add", "path": "/spec/containers/0", "value": {"name": "init-ish"}},
        {"op": "replace", "path": "/spec/containers/1/image", "value": "shop/web:2.0"},
        {"op": "remove", "path": "/status/hostIP"},
        {"op": "remove", "path": "/spec/containers/-1"},
    ]
    result = _apply(pod, patch, "Pod")
    assert result["metadata"]["labels"]["release"] == "canary"
    assert result["spec"]["tolerations"][-1] == {"key": "gpu", "operator": "Exists"}
    assert [c["name"] for c in result["spec"]["containers"]] == ["init-ish", "app"]
    assert result["spec"]["containers"][1]["image"] == "shop/web:2.0"
    assert "hostIP" not in result["status"]
    assert result["status"]["conditions"] is pod["status"]["conditions"]


def test_json_patch_move_copy_test_and_escapes() -> None:
    patch = [
        {"op": "test", "path": "/metadata/annotations/example.com~1owner", "value": "team-a"},
        {"op": "copy", "from": "/metadata/annotations/example.com~1owner",
         "path": "/metadata/labels/owner~0team"},
        {"op": "move", "from": "/metadata/labels/tier", "path": "/metadata/annotations/tier"},
        {"op": "move", "from": "/spec/containers/1", "path": "/spec/containers/0"},
        {"op": "test", "path": "/spec/containers/0/name", "value": "sidecar"},
        {"op": "test", "path": "/metadata/labels/missing", "value": None},
        {"op": "test", "path": "/status/conditions/0/lastProbeTime", "value": None},
    ]
    result = _apply(_pod(), patch, "Pod")
    assert result["metadata"]["labels"] == {"app": "web", "owner~team": "team-a"}
    assert result["metadata"]["annotations"] == {"example.com/owner": "team-a", "tier": "front"}
    assert [c["name"] for c in result["spec"]["containers"]] == ["sidecar", "app"]


def test_json_patch_replace_of_missing_member_adds_it_like_the_api_server() -> None:
    # json-patch v4, which the API server uses, sets a missing object member on replace.
    patch = [{"op": "replace", "path": "/metadata/labels/release", "value": "stable"}]
    assert _apply(_pod(), patch, "Pod")["metadata"]["labels"]["release"] == "stable"


def test_json_patch_whole_document() -> None:
    pod = _pod()
    assert json_patch(pod, [{"op": "test", "path": "", "value": _pod()}]) is pod
    assert json_patch(pod, [{"op": "replace", "path": "", "value": {"kind": "Pod"}}]) == {
        "kind": "Pod"}


@pytest.mark.parametrize(("patch", "message"), [
    ([{"op": "remove", "path": "/metadata/labels/nope"}],
     r"^/metadata/labels/nope: no such member 'nope' \(remove, operation 0\)"),
    ([{"op": "remove", "path": "/spec/containers/2"}],
     r"^/spec/containers/2: index 2 is out of range for an array of 2"),
    ([{"op": "add", "path": "/spec/nothing/here", "value": 1}],
     r"^/spec/nothing/here: no such member 'nothing'"),
    ([{"op": "add", "path": "/spec/containers/3", "value": {}}],
     r"^/spec/containers/3: index 3 is out of range"),
    ([{"op": "replace", "path": "/spec/containers/x", "value": {}}],
     r"^/spec/containers/x: 'x' is not an array index"),
    ([{"op": "test", "path": "/spec/nodeName", "value": "node-2"}],
     r'^/spec/nodeName: test failed: found "node-1", expected "node-2"'),
    ([{"op": "test", "path": "/metadata/labels/app", "value": None}],
     r"^/metadata/labels/app: test failed"),
    ([{"op": "test", "path": "/metadata/labels/nope", "value": "x"}],
     r"^/metadata/labels/nope: test failed: no such member"),
    ([{"op": "copy", "from": "/metadata/nope", "path": "/metadata/x"}],
     r"^/metadata/nope: no such member 'nope' \(copy, operation 0\)"),
    ([{"op": "move", "from": "/metadata", "path": "/metadata/labels/m"}],
     r"^/metadata/labels/m: no such member 'metadata' \(move"),
    ([{"op": "add", "path": "", "value": {}}], r"^patch: cannot add at the document root"),
    ([{"op": "add", "path": "/spec/nodeName/x", "value": 1}],
     r"^/spec/nodeName/x: the parent is a string"),
    ([{"op": "add", "path": "metadata/x", "value": 1}],
     r"^metadata/x: a JSON pointer must be empty or start with '/'"),
    ([{"op": "frobnicate", "path": "/a"}], r"^patch\[0\]: unknown operation 'frobnicate'"),
    ([{"op": "remove"}], r"^patch\[0\]: 'path' must be a JSON pointer string"),
    ([{"op": "test", "path": "/spec"}], r"^patch\[0\]: a test operation needs a value"),
    (["remove /a"], r"^patch\[0\]: an operation is an object"),
    ([{"op": "test", "path": "/spec/nodeName", "value": "node-1"},
      {"op": "test", "path": "/spec/schedulerName", "value": 7}],
     r"^/spec/schedulerName: .*\(test, operation 1\)"),
])
def test_json_patch_errors(patch: list[Any], message: str) -> None:
    pod = _pod()
    before = copy.deepcopy(pod)
    with pytest.raises(PatchError, match=message):
        apply_patch(pod, patch, "Pod")
    assert pod == before


def test_json_patch_test_compares_json_types_strictly() -> None:
    doc = {"a": 1, "b": True, "c": [1, {"d": "x"}]}
    json_patch(doc, [{"op": "test", "path": "/c", "value": [1, {"d": "x"}]}])
    for value in (True, 1.5, "1"):
        with pytest.raises(PatchError):
            json_patch(doc, [{"op": "test", "path": "/a", "value": value}])
    with pytest.raises(PatchError):
        json_patch(doc, [{"op": "test", "path": "/b", "value": 1}])


def test_json_patch_result_must_be_an_object() -> None:
    with pytest.raises(PatchError, match="not an object"):
        apply_patch({"a": 1}, [{"op": "replace", "path": "", "value": [1]}], "Pod")


def test_json_patch_values_are_copied() -> None:
    value = {"nested": ["x"]}
    result = apply_patch({"a": {}}, [{"op": "add", "path": "/a/b", "value": value}], "Pod")
    result["a"]["b"]["nested"].append("y")
    assert value == {"nested": ["x"]}


# ---------------------------------------------------------------------------------------------
# Cases ported from k8s.io/apimachinery/pkg/util/strategicpatch/patch_test.go
# ---------------------------------------------------------------------------------------------

#: The ``MergeItem`` test struct of patch_test.go, as field strategies.
MERGE_ITEM: dict[str, Field] = {}
MERGE_ITEM.update({
    "mergingList": Field(MERGE, "name", MERGE_ITEM),
    "mergingIntList": Field(MERGE),
    "mergeItemPtr": Field(MERGE, "name", MERGE_ITEM),
    "replacingItem": Field(REPLACE),
    "retainKeysMap": Field(schema=MERGE_ITEM),
    "retainKeysMergingList": Field(MERGE, "name", MERGE_ITEM),
})


def _names(*items: Any) -> list[dict[str, Any]]:
    return [item if isinstance(item, dict) else {"name": item} for item in items]


UPSTREAM_CASES: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]] = [
    ("unique scalars when merging lists",
     {"mergingIntList": [1, 2]}, {"mergingIntList": [2, 3]}, {"mergingIntList": [1, 2, 3]}),
    ("delete map from nested map",
     {"simpleMap": {"key1": 1, "key2": 1}}, {"simpleMap": {"$patch": "delete"}},
     {"simpleMap": {}}),
    ("delete all items from merging list",
     {"mergingList": _names(1, 2)}, {"mergingList": [{"$patch": "replace"}]},
     {"mergingList": []}),
    ("merge empty merging lists", {"mergingList": []}, {"mergingList": []}, {"mergingList": []}),
    ("delete all keys from map", {"name": 1, "value": 1}, {"$patch": "replace"}, {}),
    ("add key and delete all keys from map",
     {"name": 1, "value": 1}, {"other": "a", "$patch": "replace"}, {"other": "a"}),
    ("de-duplicate entries in a merging list",
     {"mergingList": _names(1, 1, {"name": 2, "value": "a"}, 3, 3)},
     {"mergingList": [{"name": 1, "$patch": "delete"}, {"name": 3, "$patch": "delete"}]},
     {"mergingList": [{"name": 2, "value": "a"}]}),
    ("retainKeys map can delete a field when no retainKeys directive present",
     {"retainKeysMap": {"name": "foo", "value": "a"}}, {"retainKeysMap": {"value": None}},
     {"retainKeysMap": {"name": "foo"}}),
    ("preserve the order from the patch in a merging list",
     {"mergingList": _names(1, {"name": 2, "value": "b"}, 3)},
     {"mergingList": [{"name": 3, "value": "c"}, {"name": 1, "value": "a"},
                      {"name": 2, "other": "x"}]},
     {"mergingList": [{"name": 3, "value": "c"}, {"name": 1, "value": "a"},
                      {"name": 2, "value": "b", "other": "x"}]}),
    ("preserve the order from the patch in a merging list 2",
     {"mergingList": _names(1, {"name": 2, "value": "b"}, 3)},
     {"mergingList": [{"name": 3, "value": "c"}, {"name": 1, "value": "a"}]},
     {"mergingList": [{"name": 2, "value": "b"}, {"name": 3, "value": "c"},
                      {"name": 1, "value": "a"}]}),
    ("preserve the order from the patch in a merging int list",
     {"mergingIntList": [1, 2, 3]}, {"mergingIntList": [3, 1]}, {"mergingIntList": [2, 3, 1]}),
    ("$setElementOrder contains item that is not present in the list to be merged",
     {"mergingList": _names(1, 3)},
     {"$setElementOrder/mergingList": _names(3, 2, 1),
      "mergingList": [{"name": 3, "value": 3}, {"name": 1, "value": 1}]},
     {"mergingList": [{"name": 3, "value": 3}, {"name": 1, "value": 1}]}),
    ("$setElementOrder contains item that is not present in the int list to be merged",
     {"mergingIntList": [1, 3]}, {"$setElementOrder/mergingIntList": [3, 2, 1]},
     {"mergingIntList": [3, 1]}),
    ("nil original",
     {"name": 1, "other": "a"}, {"value": 1}, {"name": 1, "value": 1, "other": "a"}),
    ("add field and delete field from map",
     {"name": 1, "other": "a"}, {"name": None, "value": 1}, {"value": 1, "other": "a"}),
    ("delete field from nested map",
     {"simpleMap": {"key1": 1, "key2": 1, "other": "a"}}, {"simpleMap": {"key2": None}},
     {"simpleMap": {"key1": 1, "other": "a"}}),
    ("replace list of scalars",
     {"nonMergingIntList": [1, 2]}, {"nonMergingIntList": [2, 3]},
     {"nonMergingIntList": [2, 3]}),
    ("delete all maps from merging list with conflict",
     {"mergingList": [{"name": 1, "other": "a"}, {"name": 2, "other": "b"}]},
     {"mergingList": [{"name": 1, "$patch": "delete"}, {"name": 2, "$patch": "delete"}]},
     {"mergingList": []}),
    ("defined null values should propagate removing original fields",
     {"name": "original-name", "value": "original-value", "other": "current-other"},
     {"name": "modified-name", "value": None},
     {"name": "modified-name", "other": "current-other"}),
    ("delete items in lists of scalars",
     {"mergingIntList": [1, 2, 3, 4]},
     {"$setElementOrder/mergingIntList": [1, 2], "$deleteFromPrimitiveList/mergingIntList": [3]},
     {"mergingIntList": [1, 2, 4]}),
    ("add and delete items in lists of scalars",
     {"mergingIntList": [1, 2, 3, 4]},
     {"$setElementOrder/mergingIntList": [1, 2, 4],
      "$deleteFromPrimitiveList/mergingIntList": [3]},
     {"mergingIntList": [1, 2, 4]}),
    ("merge lists of maps",
     {"mergingList": [{"name": 1, "other": "a"}, {"name": 2, "value": 2, "other": "b"}]},
     {"$setElementOrder/mergingList": _names(4, 1, 2, 3),
      "mergingList": [{"name": 4, "value": 4}, {"name": 3, "value": 3}]},
     {"mergingList": [{"name": 4, "value": 4}, {"name": 1, "other": "a"},
                      {"name": 2, "value": 2, "other": "b"}, {"name": 3, "value": 3}]}),
    ("add field to map in merging list with conflict",
     {"mergingList": [{"name": 1, "other": "a"}, {"name": 3, "value": 2, "other": "b"}]},
     {"$setElementOrder/mergingList": _names(1, 2),
      "mergingList": [{"name": 1, "value": 1}, {"name": 2, "value": 2}]},
     {"mergingList": [{"name": 1, "value": 1, "other": "a"}, {"name": 2, "value": 2},
                      {"name": 3, "value": 2, "other": "b"}]}),
    ("delete missing map from merging list with conflict",
     {"mergingList": [{"name": 3, "other": "a"}]},
     {"$setElementOrder/mergingList": _names(2),
      "mergingList": [{"name": 2}, {"name": 1, "$patch": "delete"}]},
     {"mergingList": [{"name": 2}, {"name": 3, "other": "a"}]}),
    ("add map and delete map from merging list",
     {"mergingList": [{"name": 1}, {"name": 2, "other": "b"}, {"name": 4, "other": "c"}]},
     {"$setElementOrder/mergingList": _names(2, 3),
      "mergingList": [{"name": 3}, {"name": 1, "$patch": "delete"}]},
     {"mergingList": [{"name": 2, "other": "b"}, {"name": 4, "other": "c"}, {"name": 3}]}),
    ("add map and delete map from merging list with conflict",
     {"mergingList": [{"name": 1, "other": "a"}, {"name": 4, "other": "c"}]},
     {"$setElementOrder/mergingList": _names(2, 3),
      "mergingList": [{"name": 2}, {"name": 3}, {"name": 1, "$patch": "delete"}]},
     {"mergingList": [{"name": 4, "other": "c"}, {"name": 2}, {"name": 3}]}),
    ("replace non merging list nested in merging list",
     {"mergingList": [{"name": 1, "other": "a", "nonMergingList": _names(1, 2)},
                      {"name": 2, "other": "b"}]},
     {"$setElementOrder/mergingList": _names(1, 2),
      "mergingList": [{"name": 1, "nonMergingList": [{"name": 1, "value": 1}]}]},
     {"mergingList": [{"name": 1, "other": "a", "nonMergingList": [{"name": 1, "value": 1}]},
                      {"name": 2, "other": "b"}]}),
    ("add field to map in merging list nested in merging list with deletion conflict",
     {"mergingList": [{"name": 1, "other": "a",
                       "mergingList": [{"name": 2, "value": 2, "other": "d"}]},
                      {"name": 2, "other": "b"}]},
     {"$setElementOrder/mergingList": _names(1, 2),
      "mergingList": [{"$setElementOrder/mergingList": _names(2, 1), "name": 1,
                       "mergingList": [{"name": 1, "value": 1}]}]},
     {"mergingList": [{"name": 1, "other": "a",
                       "mergingList": [{"name": 2, "value": 2, "other": "d"},
                                       {"name": 1, "value": 1}]},
                      {"name": 2, "other": "b"}]}),
    ("add map to merging list by pointer",
     {"mergeItemPtr": [{"name": 1, "other": "a"}, {"name": 3}]},
     {"$setElementOrder/mergeItemPtr": _names(1, 2), "mergeItemPtr": _names(2)},
     {"mergeItemPtr": [{"name": 1, "other": "a"}, {"name": 2}, {"name": 3}]}),
    ("add map to merging list by pointer with conflict",
     {"mergeItemPtr": _names(3)},
     {"$setElementOrder/mergeItemPtr": _names(1, 2), "mergeItemPtr": _names(1, 2)},
     {"mergeItemPtr": _names(1, 2, 3)}),
    ("merge lists of scalars",
     {"mergingIntList": [1, 2, 4]},
     {"$setElementOrder/mergingIntList": [1, 2, 3], "mergingIntList": [3]},
     {"mergingIntList": [1, 2, 3, 4]}),
    ("add an item in a list of primitives and preserve order",
     {"mergingIntList": [1, 4, 2]},
     {"$setElementOrder/mergingIntList": [3, 1, 2], "mergingIntList": [3]},
     {"mergingIntList": [3, 1, 4, 2]}),
    ("delete an item in a list and preserve order",
     {"mergingList": [{"name": 1, "other": "a"}, {"name": 2, "value": 2, "other": "b"},
                      {"name": 3, "value": 3}]},
     {"$setElementOrder/mergingList": _names(2, 1),
      "mergingList": [{"name": 3, "$patch": "delete"}]},
     {"mergingList": [{"name": 2, "value": 2, "other": "b"}, {"name": 1, "other": "a"}]}),
    ("add and delete an item in a list and preserve order",
     {"mergingList": [{"name": 1, "other": "a"}, {"name": 2, "value": 2, "other": "b"},
                      {"name": 3, "value": 3}]},
     {"$setElementOrder/mergingList": _names(4, 2, 1),
      "mergingList": [{"name": 4, "value": 4}, {"name": 3, "$patch": "delete"}]},
     {"mergingList": [{"name": 4, "value": 4}, {"name": 2, "value": 2, "other": "b"},
                      {"name": 1, "other": "a"}]}),
    ("set elements order in a list with server-only items 2",
     {"mergingList": [{"name": 1, "other": "a"}, {"name": 2, "value": 2}, {"name": 9},
                      {"name": 3, "value": 3}, {"name": 4, "value": 4}]},
     {"$setElementOrder/mergingList": _names(2, 1, 4, 3)},
     {"mergingList": [{"name": 2, "value": 2}, {"name": 1, "other": "a"}, {"name": 9},
                      {"name": 4, "value": 4}, {"name": 3, "value": 3}]}),
    ("set elements order in a int list with server-only items 3",
     {"mergingIntList": [1, 2, 7, 9, 8, 3, 4]},
     {"$setElementOrder/mergingIntList": [2, 1, 4, 3]},
     {"mergingIntList": [2, 1, 7, 9, 8, 4, 3]}),
    ("behavior of set element order for a merging list with duplicate",
     {"mergingList": [{"name": 1}, {"name": 2, "value": "dup1"}, {"name": 3},
                      {"name": 2, "value": "dup2"}, {"name": 4}]},
     {"$setElementOrder/mergingList": _names(2, 1, 4, 3, 2)},
     {"mergingList": [{"name": 2, "value": "dup1"}, {"name": 2, "value": "dup2"}, {"name": 1},
                      {"name": 4}, {"name": 3}]}),
    ("retainKeys map should clear defaulted field with conflict (discriminated union)",
     {"retainKeysMap": {"name": "type1", "value": "foo"}},
     {"retainKeysMap": {"$retainKeys": ["name", "other"], "name": "type2", "other": "bar"}},
     {"retainKeysMap": {"name": "type2", "other": "bar"}}),
    ("retainKeys map deletes a field and clears a field",
     {"retainKeysMap": {"name": "foo", "value": "bar", "other": "a"}},
     {"retainKeysMap": {"$retainKeys": ["name"], "value": None}},
     {"retainKeysMap": {"name": "foo"}}),
    ("retainKeys map adds a field in a nested map",
     {"retainKeysMap": {"name": "foo", "value": "bar",
                        "simpleMap": {"key1": "a", "key3": "c"}}},
     {"retainKeysMap": {"$retainKeys": ["name", "simpleMap", "value"],
                        "simpleMap": {"key2": "b"}}},
     {"retainKeysMap": {"name": "foo", "value": "bar",
                        "simpleMap": {"key1": "a", "key2": "b", "key3": "c"}}}),
]


@pytest.mark.parametrize(("description", "current", "patch", "expected"), UPSTREAM_CASES,
                         ids=[case[0] for case in UPSTREAM_CASES])
def test_upstream_cases(description: str, current: dict[str, Any], patch: dict[str, Any],
                        expected: dict[str, Any]) -> None:
    current_before, patch_before = copy.deepcopy(current), copy.deepcopy(patch)
    assert strategic_merge_patch(current, patch, MERGE_ITEM) == expected
    assert (current, patch) == (current_before, patch_before)


@pytest.mark.parametrize(("description", "current", "patch", "message"), [
    ("should check if order in $setElementOrder and patch list match",
     {"mergingList": _names(1, 3, 2)},
     {"$setElementOrder/mergingList": _names(1, 2, 3),
      "mergingList": [{"name": 3, "value": 3}, {"name": 1, "value": 1}]}, "doesn't match"),
    ("$setElementOrder int list mismatch",
     {"mergingIntList": [1, 3, 2]},
     {"$setElementOrder/mergingIntList": [1, 2, 3], "mergingIntList": [3, 1]}, "doesn't match"),
    ("missing merge key should error out",
     {"mergingList": [{"name": 1, "value": "a"}]}, {"mergingList": [{"value": "b"}]},
     "does not contain declared merge key"),
])
def test_upstream_error_cases(description: str, current: dict[str, Any],
                              patch: dict[str, Any], message: str) -> None:
    with pytest.raises(PatchError, match=message):
        strategic_merge_patch(current, patch, MERGE_ITEM)
