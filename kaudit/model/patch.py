"""Apply Kubernetes PATCH bodies to objects, in pure Python, the way the API server does.

An audit event for a ``patch`` logged at level ``Request`` carries the patch body
(``requestObject``) but not the resulting object, and not the patch's content type. kaudit keeps
the last known state of each object and applies the patch to it here:

* a JSON array is an RFC 6902 JSON Patch (``application/json-patch+json``), applied as
  ``gopkg.in/evanphx/json-patch.v4`` (``patch.go``) does for the API server
  (``k8s.io/apiserver/pkg/endpoints/handlers/patch.go``, ``applyJSPatch``);
* a JSON object sent to a kind kaudit knows (:data:`SCHEMAS`) is taken as a strategic merge
  patch (``application/strategic-merge-patch+json``): kubectl, the kubelet, the scheduler and
  the controllers send those to built-in types. A JSON merge patch on the same object gives the
  same result except that lists are replaced whole and ``$``-directives are plain keys; the audit
  log cannot tell the two apart, so the common case wins. The merge follows
  ``k8s.io/apimachinery/pkg/util/strategicpatch/patch.go`` (``StrategicMergeMapPatch``,
  ``mergeMap``, ``mergeSlice``, ``mergePatchIntoOriginal``, ``normalizeElementOrder``,
  ``removeDirectives``), with the ordering rules of the design proposal
  ``contributors/design-proposals/cli/preserve-order-in-strategic-merge-patch.md``;
* a JSON object sent to any other kind is an RFC 7386 JSON merge patch (``merge.go`` of
  evanphx/json-patch): the API server refuses strategic merge patches for types it has no Go
  struct for, such as custom resources.

Field strategies (``patchStrategy``/``patchMergeKey`` struct tags) come from
``k8s.io/api/core/v1/types.go``, ``apps/v1/types.go``, ``policy/v1/types.go`` and
``storage/v1/types.go``. Only fields with a strategy, and the structs leading to them, are
listed; every other map is merged key by key and every other list is replaced whole.

Where this differs from upstream, on purpose:

* ``$patch: merge`` on a map is accepted as the (default) merge; upstream rejects it.
* Patch content that lands in the result as is (new keys, new list elements, replaced values) is
  cleaned as upstream's ``removeDirectives`` and ``discardNullValuesFromPatch`` do for new keys:
  maps carrying ``$patch`` are dropped, ``null`` members and directive keys are removed. Upstream
  leaves some of it raw and lets the typed decoding of the result drop what it cannot hold.
* Fields missing from the tables get no strategy, where upstream rejects fields its struct does
  not have. ``$setElementOrder`` on a list that is empty in both object and patch is a no-op,
  where upstream fails.
* JSON Patch: a ``test`` of ``null`` against a member holding ``null`` succeeds, ``copy`` from a
  missing member fails, and pointers must start with ``/``; json-patch v4 does otherwise. Like
  v4 (and unlike RFC 6902), ``replace`` of a missing object member adds it, a ``test`` of
  ``null`` against a missing member succeeds, and negative array indices count from the end.

Upstream orders merged lists with the live list as it sits in memory after Go's in-place
deletions and appends (slice aliasing): :class:`_LiveList` reproduces that so that results match
the API server element for element, including its upstream test tables. Without
``$setElementOrder``, a new element of a merged list goes before the server-only elements that
follow its predecessor in the patch: a patch that only adds elements puts them first.

The input object and the patch are never mutated: dicts and lists are rebuilt along the changed
paths, unchanged sub-trees are shared with the input.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "JSON_PATCH",
    "MERGE",
    "MERGE_PATCH",
    "REPLACE",
    "SCHEMAS",
    "STRATEGIC_MERGE_PATCH",
    "Field",
    "PatchError",
    "apply_patch",
    "json_patch",
    "merge_patch",
    "patch_type",
    "schema_for",
    "strategic_merge_patch",
]

JSON_PATCH = "json"
STRATEGIC_MERGE_PATCH = "strategic"
MERGE_PATCH = "merge"

#: Field strategies (``patchStrategy`` tag values) that change how a patch is applied.
MERGE = "merge"
REPLACE = "replace"

_DIRECTIVE = "$patch"
_RETAIN_KEYS = "$retainKeys"
_SET_ORDER = "$setElementOrder"
_DELETE_FROM = "$deleteFromPrimitiveList"
_SNIPPET = 80


class PatchError(ValueError):
    """A patch that cannot be applied. The message starts with the path inside the patch."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path or "patch"
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")


# ---------------------------------------------------------------------------------------------
# Field strategies
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Field:
    """Patch metadata of one field: its upstream ``patchStrategy`` and ``patchMergeKey`` tags.

    ``schema`` describes the field's own struct (for a list: its elements' struct). The
    ``retainKeys`` strategy is not recorded: it only shapes the patches clients generate, and
    a ``$retainKeys`` directive is honoured on any map.
    """

    strategy: str | None = None
    merge_key: str | None = None
    schema: Mapping[str, Field] | None = None


Schema = Mapping[str, Field]
_NO_FIELD = Field()
_EMPTY: Schema = {}


def _merge(merge_key: str | None = None, schema: Schema | None = None) -> Field:
    return Field(MERGE, merge_key, schema)


def _struct(schema: Schema) -> Field:
    return Field(schema=schema)


# k8s.io/apimachinery/pkg/apis/meta/v1/types.go, ObjectMeta.
_OBJECT_META: Schema = {"ownerReferences": _merge("uid"), "finalizers": _merge()}
_CONDITIONS = _merge("type")
# k8s.io/api/core/v1/types.go, Container (EphemeralContainerCommon carries the same tags);
# envFrom and resizePolicy are atomic.
_CONTAINER: Schema = {
    "ports": _merge("containerPort"),
    "env": _merge("name"),
    "volumeMounts": _merge("mountPath"),
    "volumeDevices": _merge("devicePath"),
}
# core/v1 PodSpec: volumes and resourceClaims are "merge,retainKeys"; tolerations and
# readinessGates are atomic.
_POD_SPEC: Schema = {
    "volumes": _merge("name"),
    "initContainers": _merge("name", _CONTAINER),
    "containers": _merge("name", _CONTAINER),
    "ephemeralContainers": _merge("name", _CONTAINER),
    "imagePullSecrets": _merge("name"),
    "hostAliases": _merge("ip"),
    "topologySpreadConstraints": _merge("topologyKey"),
    "schedulingGates": _merge("name"),
    "resourceClaims": _merge("name"),
}
# core/v1 PodStatus: the container status lists are atomic (no strategy: replaced whole).
_POD_STATUS: Schema = {
    "conditions": _CONDITIONS,
    "hostIPs": _merge("ip"),
    "podIPs": _merge("ip"),
    "resourceClaimStatuses": _merge("name"),
}
_META = _struct(_OBJECT_META)
_POD_TEMPLATE = _struct({"metadata": _META, "spec": _struct(_POD_SPEC)})
_WITH_CONDITIONS = _struct({"conditions": _CONDITIONS})
_WORKLOAD: Schema = {
    "metadata": _META,
    "spec": _struct({"template": _POD_TEMPLATE}),
    "status": _WITH_CONDITIONS,
}

#: Kind → field strategies, from the upstream struct tags (files cited in the module docstring).
SCHEMAS: dict[str, Schema] = {
    "Pod": {"metadata": _META, "spec": _struct(_POD_SPEC), "status": _struct(_POD_STATUS)},
    # core/v1 NodeSpec.podCIDRs is a merged set, NodeSpec.taints is atomic; NodeStatus images,
    # volumesInUse and volumesAttached are atomic.
    "Node": {
        "metadata": _META,
        "spec": _struct({"podCIDRs": _merge()}),
        "status": _struct({"conditions": _CONDITIONS, "addresses": _merge("type")}),
    },
    # core/v1 NamespaceSpec.finalizers is atomic.
    "Namespace": {"metadata": _META, "status": _WITH_CONDITIONS},
    "PriorityClass": {"metadata": _META},
    # policy/v1 PodDisruptionBudgetSpec.selector has patchStrategy "replace".
    "PodDisruptionBudget": {
        "metadata": _META,
        "spec": _struct({"selector": Field(REPLACE)}),
        "status": _WITH_CONDITIONS,
    },
    "PersistentVolume": {"metadata": _META},
    "PersistentVolumeClaim": {"metadata": _META, "status": _WITH_CONDITIONS},
    "StorageClass": {"metadata": _META},
    # storage/v1 CSINodeSpec.drivers.
    "CSINode": {"metadata": _META, "spec": _struct({"drivers": _merge("name")})},
    "Service": {
        "metadata": _META,
        "spec": _struct({"ports": _merge("port")}),
        "status": _WITH_CONDITIONS,
    },
    "ReplicationController": _WORKLOAD,
    # apps/v1: Deployment.spec.strategy is "retainKeys" (not recorded, see Field).
    "ReplicaSet": _WORKLOAD,
    "StatefulSet": _WORKLOAD,
    "Deployment": _WORKLOAD,
    "DaemonSet": _WORKLOAD,
}

_PLURALS = {
    "Pod": "pods", "Node": "nodes", "Namespace": "namespaces", "PriorityClass": "priorityclasses",
    "PodDisruptionBudget": "poddisruptionbudgets", "PersistentVolume": "persistentvolumes",
    "PersistentVolumeClaim": "persistentvolumeclaims", "StorageClass": "storageclasses",
    "CSINode": "csinodes", "Service": "services",
    "ReplicationController": "replicationcontrollers", "ReplicaSet": "replicasets",
    "StatefulSet": "statefulsets", "Deployment": "deployments", "DaemonSet": "daemonsets",
}
_ALIASES = {alias: kind for kind, plural in _PLURALS.items() for alias in (kind.lower(), plural)}


def schema_for(kind: str | None) -> Schema | None:
    """The field strategies of ``kind`` (a Kind, or its lower-case name or plural resource)."""
    if not kind:
        return None
    found = SCHEMAS.get(kind)
    if found is None:
        alias = _ALIASES.get(kind.lower())
        found = SCHEMAS.get(alias) if alias else None
    return found


# ---------------------------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------------------------


def patch_type(patch: Any, kind: str | None = None) -> str:
    """Infer the content type of ``patch``: ``"json"``, ``"strategic"`` or ``"merge"``.

    A list is a JSON Patch. A dict is a strategic merge patch, unless ``kind`` is given and has
    no entry in :data:`SCHEMAS` (a custom resource, say), where it is a JSON merge patch.
    """
    if isinstance(patch, list):
        return JSON_PATCH
    if isinstance(patch, dict):
        if kind is None or schema_for(kind) is not None:
            return STRATEGIC_MERGE_PATCH
        return MERGE_PATCH
    raise PatchError("patch", "expected a JSON array (JSON Patch) or a JSON object (merge "
                              f"patch), got {_type_name(patch)}")


def apply_patch(obj: dict[str, Any], patch: Any, kind: str) -> dict[str, Any]:
    """Return the patched object; `obj` is never mutated (build new dicts/lists along changed
    paths; unchanged sub-trees may be shared).

    The patch type is inferred by :func:`patch_type`; :class:`PatchError` says what is wrong.
    """
    if not isinstance(obj, dict):
        raise PatchError("object", f"expected a JSON object to patch, got {_type_name(obj)}")
    kind_of_patch = patch_type(patch, kind)
    if kind_of_patch == JSON_PATCH:
        result = json_patch(obj, patch)
    elif kind_of_patch == STRATEGIC_MERGE_PATCH:
        result = strategic_merge_patch(obj, patch, schema_for(kind) or _EMPTY)
    else:
        result = merge_patch(obj, patch)
    if not isinstance(result, dict):
        raise PatchError("patch", f"the patched document is a {_type_name(result)}, not an "
                                  "object")
    return result


def strategic_merge_patch(obj: dict[str, Any], patch: dict[str, Any],
                          schema: Schema) -> dict[str, Any]:
    """Apply a strategic merge patch to ``obj`` with the field strategies ``schema``."""
    if not isinstance(patch, dict):
        raise PatchError("patch", f"a strategic merge patch is an object, got "
                                  f"{_type_name(patch)}")
    return _merge_map(obj, patch, schema, "")


def merge_patch(obj: Any, patch: Any) -> Any:
    """Apply an RFC 7386 JSON merge patch as evanphx/json-patch ``MergePatch`` does."""
    if not isinstance(patch, dict):
        return _prune_nulls(patch)
    if not isinstance(obj, dict):
        return _prune_nulls(patch)
    return _merge_patch_map(obj, patch)


def json_patch(obj: Any, operations: Sequence[Any]) -> Any:
    """Apply an RFC 6902 JSON Patch (a list of operations) as json-patch v4 does."""
    doc = obj
    for index, operation in enumerate(operations):
        doc = _apply_operation(doc, operation, index)
    return doc


# ---------------------------------------------------------------------------------------------
# Strategic merge patch: maps
# ---------------------------------------------------------------------------------------------


def _merge_map(original: dict[str, Any], patch: dict[str, Any], schema: Schema,
               path: str) -> dict[str, Any]:
    """``mergeMap``: directives first, then ``$retainKeys``, ``$setElementOrder``, members."""
    if _DIRECTIVE in patch:
        directive = patch[_DIRECTIVE]
        if directive == REPLACE:
            return _clean_map({k: v for k, v in patch.items() if k != _DIRECTIVE})
        if directive == "delete":
            return {}
        if directive != MERGE:
            raise PatchError(_join(path, _DIRECTIVE), f"unknown directive {directive!r}")
    result = dict(original)
    if _RETAIN_KEYS in patch:
        result = _retain_keys(result, patch, path)
    ordered = _apply_element_orders(result, patch, schema, path)
    for key, value in patch.items():
        if key in (_DIRECTIVE, _RETAIN_KEYS) or key in ordered or key.startswith(_SET_ORDER):
            continue
        _merge_member(result, key, value, schema, path)
    return result


def _merge_member(result: dict[str, Any], key: str, value: Any, schema: Schema,
                  path: str) -> None:
    """Merge one member of the patch into ``result`` (a copy owned by the caller)."""
    where = _join(path, key)
    is_delete_list = key.startswith(_DELETE_FROM)
    name = _directive_target(key, _DELETE_FROM, where) if is_delete_list else key
    if value is None:
        result.pop(name, None)
        return
    if is_delete_list and not isinstance(value, list):
        raise PatchError(where, f"expected a list of values to delete, got {_type_name(value)}")
    if name not in result or _shape(result[name]) != _shape(value):
        if not is_delete_list:
            _put_clean(result, name, value)
        return
    current = result[name]
    field = schema.get(name, _NO_FIELD)
    if isinstance(current, dict):
        if field.strategy == REPLACE:
            result[name] = _clean_map(value)
        else:
            result[name] = _merge_map(current, value, field.schema or _EMPTY, where)
    elif isinstance(current, list):
        result[name] = _merge_list(current, value, field, is_delete_list, where)[0]
    else:
        _put_clean(result, name, value)


def _retain_keys(result: dict[str, Any], patch: dict[str, Any], path: str) -> dict[str, Any]:
    """``applyRetainKeysDirective``: keep only the listed fields of the object."""
    where = _join(path, _RETAIN_KEYS)
    keys = patch[_RETAIN_KEYS]
    if not isinstance(keys, list):
        raise PatchError(where, f"expected a list of field names, got {_type_name(keys)}")
    allowed = {key for key in keys if isinstance(key, str)}
    for key, value in patch.items():
        if value is None or key in (_RETAIN_KEYS, _DIRECTIVE) or _is_directive_key(key):
            continue
        if key not in allowed:
            raise PatchError(where, f"{key!r} is set by the patch but not listed")
    return {key: value for key, value in result.items() if key in allowed}


def _directive_target(key: str, prefix: str, where: str) -> str:
    """``extractKey``: the field a ``$prefix/field`` directive applies to."""
    head, sep, tail = key.partition("/")
    if not sep or head != prefix:
        raise PatchError(where, f"malformed directive key {key!r}, expected {prefix}/<field>")
    return tail


# ---------------------------------------------------------------------------------------------
# Strategic merge patch: lists
# ---------------------------------------------------------------------------------------------


class _LiveList:
    """A list being merged, plus the live list as upstream's Go code goes on seeing it.

    Upstream deletes elements in place (shifting the tail left) and appends new ones into the
    freed slots, so the slice it later uses as the "server order" shows, over the live list's
    length: the survivors, then the appended elements that fit, then stale copies.
    """

    def __init__(self, items: list[Any]) -> None:
        self.items = list(items)
        self.view = list(items)

    def delete(self, index: int) -> None:
        length = len(self.items)
        self.view[index:length - 1] = self.view[index + 1:length]
        del self.items[index]

    def append(self, item: Any) -> None:
        self.items.append(item)
        if len(self.items) <= len(self.view):
            self.view[len(self.items) - 1] = item


def _merge_list(original: list[Any], patch: list[Any], field: Field, is_delete_list: bool,
                where: str) -> tuple[list[Any], list[Any]]:
    """``mergeSliceHandler``: (merged list, upstream's view of the live list for ordering)."""
    if field.strategy != MERGE and not is_delete_list:
        return _clean_list(patch), original
    if not original and not patch:
        return list(original), original
    shape = _element_shape(where, original, patch)
    if shape != "map":
        if is_delete_list:
            drop = {_token(value) for value in patch}
            return [value for value in original if _token(value) not in drop], original
        merged = _dedupe([*original, *patch])
        return _normalize(merged, patch, original, None), original
    key = field.merge_key
    if not key:
        raise PatchError(where, "cannot merge a list of objects that has no merge key")
    live, items, replaced = _special_elements(original, patch, key, where)
    if replaced:
        merged = _clean_list([item for _, item in items])
        _require_merge_key(merged, key, where)
        return merged, live.view
    survivors = list(live.items)
    _merge_items(live, items, key, field.schema or _EMPTY, where)
    _require_merge_key(live.items, key, where)
    order = [item for _, item in items]
    return _normalize(live.items, order, survivors, key), live.view


def _special_elements(original: list[Any], patch: list[Any], key: str,
                      where: str) -> tuple[_LiveList, list[tuple[int, Any]], bool]:
    """``mergeSliceWithSpecialElements``: apply the ``$patch: delete`` elements; (live list,
    the other elements with their index in the patch, whether ``$patch: replace`` was seen)."""
    live = _LiveList(original)
    items: list[tuple[int, Any]] = []
    replace = False
    for index, element in enumerate(patch):
        at = f"{where}[{index}]"
        if _DIRECTIVE not in element:
            items.append((index, element))
            continue
        directive = element[_DIRECTIVE]
        if directive == "delete":
            if key not in element:
                raise PatchError(at, f"does not contain declared merge key {key!r}")
            _delete_matching(live, key, element[key])
        elif directive == REPLACE:
            replace = True
        elif directive == MERGE:
            raise PatchError(at, "merging lists cannot yet be specified in the patch")
        else:
            raise PatchError(at, f"unknown directive {directive!r}")
    return live, items, replace


def _delete_matching(live: _LiveList, key: str, value: Any) -> None:
    wanted = _token(value)
    while (index := _find(live.items, key, wanted)) is not None:
        live.delete(index)


def _merge_items(live: _LiveList, items: list[tuple[int, Any]], key: str, schema: Schema,
                 where: str) -> None:
    """``mergeSliceWithoutSpecialElements``: merge by key, append what is new."""
    for index, element in items:
        at = f"{where}[{index}]"
        if key not in element:
            raise PatchError(at, f"does not contain declared merge key {key!r}")
        found = _find(live.items, key, _token(element[key]))
        if found is None:
            live.append(_clean_map(element))
        else:
            live.items[found] = _merge_map(live.items[found], element, schema, at)


def _find(items: list[Any], key: str, wanted: tuple[str, Any]) -> int | None:
    for index, item in enumerate(items):
        if key in item and _token(item[key]) == wanted:
            return index
    return None


def _apply_element_orders(result: dict[str, Any], patch: dict[str, Any], schema: Schema,
                          path: str) -> set[str]:
    """``mergePatchIntoOriginal``: merge and reorder the lists named by ``$setElementOrder``."""
    done: set[str] = set()
    for key, order in patch.items():
        if not key.startswith(_SET_ORDER):
            continue
        where = _join(path, key)
        name = _directive_target(key, _SET_ORDER, where)
        _set_element_order(result, patch, name, order, schema.get(name, _NO_FIELD), path, where)
        done.add(name)
    return done


def _set_element_order(result: dict[str, Any], patch: dict[str, Any], name: str, order: Any,
                       field: Field, path: str, where: str) -> None:
    if not isinstance(order, list):
        raise PatchError(where, f"expected a list, got {_type_name(order)}")
    original, patch_list = result.get(name), patch.get(name)
    if name in result and not isinstance(original, list):
        raise PatchError(where, f"{name!r} is a {_type_name(original)} in the object, not a list")
    if name in patch and not isinstance(patch_list, list):
        raise PatchError(_join(path, name), f"expected a list, got {_type_name(patch_list)}")
    key = field.merge_key or None
    _validate_order(patch_list or [], order, key, where)
    if original is not None and patch_list is not None:
        merged, view = _merge_list(original, patch_list, field, False, _join(path, name))
    elif original is not None:
        merged, view = original, original
    elif patch_list is not None:
        merged, view = _clean_list(patch_list), []
    else:
        return
    if merged and _element_shape(where, original or [], patch_list or []) == "map":
        if key is None:
            raise PatchError(where, "cannot order a list of objects that has no merge key")
        _require_merge_key(merged, key, where)
        _require_merge_key(order, key, where)
    result[name] = _normalize(merged, order, view, key) if merged else merged


def _validate_order(patch_list: list[Any], order: list[Any], key: str | None,
                    where: str) -> None:
    """``validatePatchWithSetOrderList``: patch elements appear in the order list, in order."""
    if not patch_list or not order:
        return
    if key is not None:
        patch_list = [item for item in patch_list
                      if not (isinstance(item, dict) and item.get(_DIRECTIVE) == "delete")]
    at_patch = at_order = 0
    while at_patch < len(patch_list) and at_order < len(order):
        item = patch_list[at_patch]
        if isinstance(item, dict) and _DIRECTIVE in item:
            at_patch += 1
            continue
        if _identity(item, key, where) == _identity(order[at_order], key, where):
            at_patch += 1
        at_order += 1
    if at_patch < len(patch_list):
        raise PatchError(where, "the order of the patch list doesn't match the "
                                f"{_SET_ORDER} list")


def _normalize(merged: list[Any], order: list[Any], server_order: list[Any],
               key: str | None) -> list[Any]:
    """``normalizeElementOrder``: patch items in ``order``, server-only items interleaved."""
    ident = _identity_of(key)
    wanted = {ident(item) for item in order}
    patch_items = [item for item in merged if ident(item) in wanted]
    server_only = [item for item in merged if ident(item) not in wanted]
    patch_items = _sort_by(patch_items, [ident(item) for item in order], ident)
    server_positions = _positions([ident(item) for item in server_order])
    server_only = _sort_by(server_only, [ident(item) for item in server_order], ident)
    return _merge_sorted(server_only, patch_items, server_positions, ident)


def _identity_of(key: str | None) -> Callable[[Any], tuple[str, Any]]:
    """How ``index`` in upstream compares list items: by merge key value, or by value."""
    def ident(item: Any) -> tuple[str, Any]:
        if key is not None and isinstance(item, dict):
            return _token(item.get(key))
        return _token(item)
    return ident


def _merge_sorted(left: list[Any], right: list[Any], positions: dict[tuple[str, Any], int],
                  ident: Callable[[Any], tuple[str, Any]]) -> list[Any]:
    """``mergeSortedSlice``: take a server-only item first only if the live list says so."""
    out: list[Any] = []
    i = j = 0
    while i < len(left) and j < len(right):
        before = positions.get(ident(left[i]))
        after = positions.get(ident(right[j]))
        if before is not None and after is not None and before < after:
            out.append(left[i])
            i += 1
        else:
            out.append(right[j])
            j += 1
    return out + left[i:] + right[j:]


def _sort_by(items: list[Any], order: list[tuple[str, Any]],
             ident: Callable[[Any], tuple[str, Any]]) -> list[Any]:
    positions = _positions(order)
    return sorted(items, key=lambda item: positions.get(ident(item), len(order)))


def _positions(tokens: Iterable[tuple[str, Any]]) -> dict[tuple[str, Any], int]:
    positions: dict[tuple[str, Any], int] = {}
    for index, token in enumerate(tokens):
        positions.setdefault(token, index)
    return positions


def _dedupe(items: list[Any]) -> list[Any]:
    seen: set[tuple[str, Any]] = set()
    out = []
    for item in items:
        token = _token(item)
        if token not in seen:
            seen.add(token)
            out.append(item)
    return out


def _identity(item: Any, key: str | None, where: str) -> tuple[str, Any]:
    if key is None:
        return _token(item)
    if not isinstance(item, dict) or key not in item:
        raise PatchError(where, f"{_snippet(item)} does not contain declared merge key {key!r}")
    return _token(item[key])


def _require_merge_key(items: Iterable[Any], key: str, where: str) -> None:
    for item in items:
        _identity(item, key, where)


def _element_shape(where: str, *lists: list[Any]) -> str | None:
    """``sliceElementType``: every element of the lists is of one JSON type, not a list."""
    seen: str | None = None
    for values in lists:
        for value in values:
            shape = _json_type(value)
            if shape == "list":
                raise PatchError(where, "lists of lists are not supported")
            if seen is not None and shape != seen:
                raise PatchError(where, f"list elements are not all of one type ({seen}, "
                                        f"{shape})")
            seen = shape
    return seen


# ---------------------------------------------------------------------------------------------
# Strategic merge patch: cleaning patch content that lands in the result as is
# ---------------------------------------------------------------------------------------------


def _put_clean(result: dict[str, Any], name: str, value: Any) -> None:
    cleaned, keep = _clean(value)
    if keep:
        result[name] = cleaned
    else:
        result.pop(name, None)


def _clean(value: Any) -> tuple[Any, bool]:
    """``removeDirectives`` + ``discardNullValuesFromPatch``, on a copy: (value, keep it?)."""
    if isinstance(value, dict):
        if _DIRECTIVE in value:
            return None, False
        return _clean_map(value), True
    if isinstance(value, list):
        return _clean_list(value), True
    return value, True


def _clean_map(value: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, member in value.items():
        if member is None or key == _DIRECTIVE or _is_directive_key(key):
            continue
        cleaned, keep = _clean(member)
        if keep:
            out[key] = cleaned
    return out


def _clean_list(values: list[Any]) -> list[Any]:
    out = []
    for value in values:
        cleaned, keep = _clean(value)
        if keep:
            out.append(cleaned)
    return out


def _is_directive_key(key: str) -> bool:
    return key == _RETAIN_KEYS or key.startswith((f"{_SET_ORDER}/", f"{_DELETE_FROM}/"))


# ---------------------------------------------------------------------------------------------
# JSON merge patch (RFC 7386)
# ---------------------------------------------------------------------------------------------


def _merge_patch_map(target: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """evanphx ``mergeDocs``: ``null`` deletes, objects merge, anything else replaces."""
    out = dict(target)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif not isinstance(out.get(key), dict):
            out[key] = _prune_nulls(value)
        elif isinstance(value, dict):
            out[key] = _merge_patch_map(out[key], value)
        else:
            out[key] = _clone(value)
    return out


def _prune_nulls(value: Any) -> Any:
    """evanphx ``pruneNulls``: drop ``null`` members of objects, at any depth."""
    if isinstance(value, dict):
        return {key: _prune_nulls(member) for key, member in value.items() if member is not None}
    if isinstance(value, list):
        return [_prune_nulls(member) for member in value]
    return value


# ---------------------------------------------------------------------------------------------
# JSON Patch (RFC 6902)
# ---------------------------------------------------------------------------------------------

_INDEX = re.compile(r"[+-]?[0-9]+")


def _apply_operation(doc: Any, operation: Any, index: int) -> Any:
    where = f"patch[{index}]"
    if not isinstance(operation, dict):
        raise PatchError(where, f"an operation is an object, got {_type_name(operation)}")
    name = operation.get("op")
    handler = _OPERATIONS.get(name) if isinstance(name, str) else None
    if handler is None:
        raise PatchError(where, f"unknown operation {name!r}")
    path = _operation_pointer(operation, "path", where)
    try:
        return handler(doc, path, operation, where)
    except PatchError as err:
        raise PatchError(err.path, f"{err.reason} ({name}, operation {index})") from None


def _operation_pointer(operation: dict[str, Any], member: str, where: str) -> str:
    pointer = operation.get(member)
    if not isinstance(pointer, str):
        raise PatchError(where, f"{member!r} must be a JSON pointer string, got "
                                f"{_type_name(pointer)}")
    if pointer and not pointer.startswith("/"):
        raise PatchError(pointer, "a JSON pointer must be empty or start with '/'")
    return pointer


def _tokens(pointer: str) -> list[str]:
    if not pointer:
        return []
    return [token.replace("~1", "/").replace("~0", "~") for token in pointer[1:].split("/")]


def _op_add(doc: Any, path: str, operation: dict[str, Any], where: str) -> Any:
    return _add(doc, path, _clone(operation.get("value")))


def _op_remove(doc: Any, path: str, operation: dict[str, Any], where: str) -> Any:
    return _remove(doc, path)


def _op_replace(doc: Any, path: str, operation: dict[str, Any], where: str) -> Any:
    value = _clone(operation.get("value"))
    tokens = _tokens(path)
    if not tokens:
        if not isinstance(value, (dict, list)):
            raise PatchError(path, "the document can only be replaced by an object or array")
        return value

    def replace(container: Any) -> Any:
        last = tokens[-1]
        if isinstance(container, dict):
            # json-patch v4 (which the API server uses) sets a missing member too.
            return {**container, last: value}
        updated = list(container)
        updated[_index(last, len(container), path, insert=False)] = value
        return updated

    return _update(doc, tokens[:-1], replace, path)


def _op_move(doc: Any, path: str, operation: dict[str, Any], where: str) -> Any:
    source = _operation_pointer(operation, "from", where)
    value = _get(doc, source)
    return _add(_remove(doc, source), path, value)


def _op_copy(doc: Any, path: str, operation: dict[str, Any], where: str) -> Any:
    source = _operation_pointer(operation, "from", where)
    return _add(doc, path, _clone(_get(doc, source)))


def _op_test(doc: Any, path: str, operation: dict[str, Any], where: str) -> Any:
    if "value" not in operation:
        raise PatchError(where, "a test operation needs a value")
    expected = operation["value"]
    tokens = _tokens(path)
    if tokens:
        parent = _get_tokens(doc, tokens[:-1], path)
        if isinstance(parent, dict) and tokens[-1] not in parent:
            if expected is None:
                return doc
            raise PatchError(path, f"test failed: no such member, expected {_snippet(expected)}")
    actual = _get(doc, path)
    if not _json_equal(actual, expected):
        raise PatchError(path, f"test failed: found {_snippet(actual)}, expected "
                               f"{_snippet(expected)}")
    return doc


_OPERATIONS: dict[str, Callable[[Any, str, dict[str, Any], str], Any]] = {
    "add": _op_add,
    "remove": _op_remove,
    "replace": _op_replace,
    "move": _op_move,
    "copy": _op_copy,
    "test": _op_test,
}


def _add(doc: Any, path: str, value: Any) -> Any:
    tokens = _tokens(path)
    if not tokens:
        raise PatchError(path, "cannot add at the document root")

    def add(container: Any) -> Any:
        last = tokens[-1]
        if isinstance(container, dict):
            return {**container, last: value}
        updated = list(container)
        if last == "-":
            updated.append(value)
        else:
            updated.insert(_index(last, len(container), path, insert=True), value)
        return updated

    return _update(doc, tokens[:-1], add, path)


def _remove(doc: Any, path: str) -> Any:
    tokens = _tokens(path)
    if not tokens:
        raise PatchError(path, "cannot remove the document root")

    def remove(container: Any) -> Any:
        last = tokens[-1]
        if isinstance(container, dict):
            if last not in container:
                raise PatchError(path, f"no such member {last!r}")
            return {key: value for key, value in container.items() if key != last}
        updated = list(container)
        del updated[_index(last, len(container), path, insert=False)]
        return updated

    return _update(doc, tokens[:-1], remove, path)


def _get(doc: Any, path: str) -> Any:
    return _get_tokens(doc, _tokens(path), path)


def _get_tokens(doc: Any, tokens: list[str], path: str) -> Any:
    node = doc
    for token in tokens:
        node = _child(node, token, path)
    return node


def _update(doc: Any, parents: list[str], change: Callable[[Any], Any], path: str) -> Any:
    """Copy ``doc`` along ``parents`` and replace the container there by ``change(it)``."""
    if not parents:
        if not isinstance(doc, (dict, list)):
            raise PatchError(path, f"the parent is a {_type_name(doc)}, not an object or array")
        return change(doc)
    head = parents[0]
    child = _update(_child(doc, head, path), parents[1:], change, path)
    if isinstance(doc, dict):
        return {**doc, head: child}
    updated = list(doc)
    updated[_index(head, len(doc), path, insert=False)] = child
    return updated


def _child(node: Any, token: str, path: str) -> Any:
    if isinstance(node, dict):
        if token not in node:
            raise PatchError(path, f"no such member {token!r}")
        return node[token]
    if isinstance(node, list):
        return node[_index(token, len(node), path, insert=False)]
    raise PatchError(path, f"cannot look up {token!r} in a {_type_name(node)}")


def _index(token: str, size: int, path: str, *, insert: bool) -> int:
    """An array index as json-patch v4 reads it; negative indices count from the end."""
    if not _INDEX.fullmatch(token):
        raise PatchError(path, f"{token!r} is not an array index")
    index = int(token)
    limit = size + 1 if insert else size
    if index < 0:
        index += limit
    if not 0 <= index < limit:
        raise PatchError(path, f"index {token} is out of range for an array of {size}")
    return index


def _json_equal(left: Any, right: Any) -> bool:
    if isinstance(left, dict):
        return (isinstance(right, dict) and left.keys() == right.keys()
                and all(_json_equal(value, right[key]) for key, value in left.items()))
    if isinstance(left, list):
        return (isinstance(right, list) and len(left) == len(right)
                and all(map(_json_equal, left, right)))
    return type(left) is type(right) and left == right


# ---------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------


def _token(value: Any) -> tuple[str, Any]:
    """A hashable identity for a JSON value: ``1`` and ``1.0`` match, ``true`` and ``1`` don't."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (int, float)):
        return ("number", value)
    if isinstance(value, str):
        return ("string", value)
    if value is None:
        return ("null", None)
    return ("json", json.dumps(value, sort_keys=True, default=str))


def _json_type(value: Any) -> str:
    if isinstance(value, dict):
        return "map"
    if isinstance(value, list):
        return "list"
    return _token(value)[0]


def _shape(value: Any) -> str:
    if isinstance(value, dict):
        return "map"
    if isinstance(value, list):
        return "list"
    return "scalar"


def _clone(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _clone(member) for key, member in value.items()}
    if isinstance(value, list):
        return [_clone(member) for member in value]
    return value


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _type_name(value: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number" if isinstance(value, (int, float)) else
                     type(value).__name__)


def _snippet(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= _SNIPPET else text[:_SNIPPET - 3] + "..."
