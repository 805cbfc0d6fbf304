"""The audit policy ``docs/audit-policy.md`` recommends (and the benchmark's API server uses)
logs each request kaudit replays at the level its reader needs.

Levels are resolved as the API server resolves them (``k8s.io/apiserver/pkg/audit/policy/
checker.go``): the first rule whose verbs, users and resources all match wins; ``resource/*``
matches the resource with any subresource, none included.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from benchmarks.realcluster.controlplane import audit_policy


def _matches(rule: dict[str, Any], verb: str, user: str, group: str, resource: str) -> bool:
    if rule.get("verbs") and verb not in rule["verbs"]:
        return False
    if rule.get("users") and user not in rule["users"]:
        return False
    if "resources" not in rule:
        return True
    name = resource.split("/")[0]
    for kinds in rule["resources"]:
        if kinds.get("group", "") != group:
            continue
        for entry in kinds.get("resources", []):
            if entry == resource or (entry.endswith("/*") and entry[:-2] == name):
                return True
    return False


def _level(verb: str, user: str, group: str, resource: str) -> str:
    policy = yaml.safe_load(audit_policy())
    for rule in policy["rules"]:
        if _matches(rule, verb, user, group, resource):
            return str(rule["level"])
    return "None"


@pytest.mark.parametrize(("verb", "user", "group", "resource", "level"), [
    ("create", "system:serviceaccount:kube-system:replicaset-controller", "", "pods",
     "RequestResponse"),
    ("create", "system:kube-scheduler", "", "pods/binding", "Request"),
    # Two status writes on one pod may commit in the other order than received: only the
    # response's resourceVersion tells.
    ("patch", "system:kube-scheduler", "", "pods/status", "RequestResponse"),
    ("patch", "system:node:node-1", "", "pods/status", "RequestResponse"),
    ("patch", "system:node:node-1", "", "nodes/status", "Request"),
    ("update", "system:serviceaccount:kube-system:disruption-controller", "policy",
     "poddisruptionbudgets/status", "RequestResponse"),
    ("create", "system:node:node-1", "", "pods/eviction", "None"),
    ("get", "system:kube-scheduler", "", "pods", "None"),
    ("update", "system:kube-scheduler", "coordination.k8s.io", "leases", "None"),
])
def test_each_request_is_logged_at_the_level_the_reader_needs(
        verb: str, user: str, group: str, resource: str, level: str) -> None:
    assert _level(verb, user, group, resource) == level
