"""What InterPodAffinity's filtering and scoring share: terms, the pod index, topology-pair
counting and label-selector errors.

Mirrors, for Kubernetes v1.34, the helpers of ``interpodaffinity/plugin.go``
(``mergeAffinityTermNamespacesIfNotEmpty``, ``GetNamespaceLabelsSnapshot``),
``AffinityTerm.Matches`` and ``NewPodInfo`` from ``pkg/scheduler/framework/types.go`` and the
label-selector error texts of ``apimachinery/pkg/labels/selector.go`` and
``util/validation/validation.go``.

Counters are kept as upstream keeps them, ``{(topologyKey, value): count}``, so that the
PreFilter extensions and ``clone()`` behave the same. They are *built* per topology key: the
slots of the matching existing pods are turned into interned label codes
(``ClusterState.topology_codes``) and counted with ``np.bincount``; Filter and Score map the
counters back to an array per key and index it with ``codes[slots]``.

Only the incoming pod's terms need every existing pod, and only those in the namespaces the
terms name. Existing pods' own terms are read from the pods that have (anti-)affinity, found
by one pass over the cluster's pods per cluster generation (see :class:`PodIndex`).
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from kaudit.cluster.state import ClusterState, TopologyCodes
from kaudit.model.pod import AffinityTerm, PodInfo
from kaudit.model.selectors import LabelSelector
from kaudit.plugins import names

PRE_FILTER_STATE_KEY = "PreFilter" + names.INTER_POD_AFFINITY
PRE_SCORE_STATE_KEY = "PreScore" + names.INTER_POD_AFFINITY

REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"

TopologyPair = tuple[str, str]
Counts = dict[TopologyPair, int]


# --------------------------------------------------------------------------- terms

@dataclass(frozen=True, slots=True)
class IncomingTerm:
    """A term of the pod being scheduled, its namespaceSelector unrolled into namespaces.

    ``mergeAffinityTermNamespacesIfNotEmpty``: a non-empty selector is replaced by the
    namespaces it selects now; an empty one (``{}``) keeps matching every namespace.
    """

    selector: LabelSelector
    namespaces: frozenset[str]
    all_namespaces: bool
    topology_key: str
    weight: int = 0

    def matches(self, pod: PodInfo) -> bool:
        if self.all_namespaces or pod.namespace in self.namespaces:
            return self.selector.matches(pod.labels)
        return False


def incoming_term(term: AffinityTerm, cluster: ClusterState) -> IncomingTerm:
    selector = term.namespace_selector
    namespaces = term.namespaces
    if not selector.empty and not selector.nothing:
        namespaces = namespaces | {name for name, labels in cluster.namespaces.items()
                                   if selector.matches(labels)}
    return IncomingTerm(term.selector, namespaces, selector.empty, term.topology_key,
                        term.weight)


def incoming_terms(terms: Iterable[AffinityTerm], cluster: ClusterState
                   ) -> tuple[IncomingTerm, ...]:
    return tuple(incoming_term(term, cluster) for term in terms)


def matches_all(terms: tuple[IncomingTerm, ...], pod: PodInfo) -> bool:
    """``podMatchesAllAffinityTerms``: false for no terms."""
    return bool(terms) and all(term.matches(pod) for term in terms)


# --------------------------------------------------------------------------- pod index

@dataclass
class NamespaceGroup:
    """Pods of one namespace on live nodes, and their slots."""

    pods: list[PodInfo]
    slots: np.ndarray


@dataclass
class PodIndex:
    """Pods on live nodes, grouped as the plugin reads them; valid for one generation.

    Upstream's NodeInfo keeps ``PodsWithAffinity`` and ``PodsWithRequiredAntiAffinity`` and the
    snapshot lists the nodes that have them; ClusterState has no such index, so this one is
    rebuilt (one pass over the pods) whenever the cluster's generation moves.
    """

    generation: int
    with_affinity: list[tuple[int, PodInfo]]
    with_required_anti_affinity: list[tuple[int, PodInfo]]

    def groups(self, cluster: ClusterState, namespaces: frozenset[str] | None
               ) -> Iterator[NamespaceGroup]:
        """The groups of ``namespaces`` (every namespace for None)."""
        names = cluster.pods_by_namespace if namespaces is None else namespaces
        for namespace in names:
            group = namespace_group(cluster, namespace)
            if group is not None:
                yield group


def _live_slots(cluster: ClusterState, pods: Iterable[PodInfo]
                ) -> Iterator[tuple[int, PodInfo]]:
    """(slot, pod) for the pods bound to live nodes (removed nodes keep their pods' slots)."""
    pods = list(pods)
    if not pods:
        return
    live = cluster.live.tolist()
    slot_of = cluster.slot_of
    for pod in pods:
        slot = slot_of.get(pod.node_name)
        if slot is not None and live[slot]:
            yield slot, pod


_GROUPS: weakref.WeakKeyDictionary[ClusterState, dict[str, tuple[tuple[int, int],
                                                                  NamespaceGroup]]] = (
    weakref.WeakKeyDictionary())


def namespace_group(cluster: ClusterState, namespace: str) -> NamespaceGroup | None:
    """The namespace's pods on live nodes with their slots, cached until they change."""
    pods = cluster.pods_by_namespace.get(namespace)
    if not pods:
        return None
    key = (cluster.namespace_generation[namespace], cluster.node_generation)
    cache = _GROUPS.setdefault(cluster, {})
    cached = cache.get(namespace)
    if cached is not None and cached[0] == key:
        return cached[1]
    pairs = list(_live_slots(cluster, pods.values()))
    group = NamespaceGroup([p for _, p in pairs],
                           np.asarray([s for s, _ in pairs], dtype=np.int64))
    cache[namespace] = (key, group)
    return group


_INDEXES: weakref.WeakKeyDictionary[ClusterState, PodIndex] = weakref.WeakKeyDictionary()


def pod_index(cluster: ClusterState) -> PodIndex:
    index = _INDEXES.get(cluster)
    if index is not None and index.generation == cluster.generation:
        return index
    with_affinity = list(_live_slots(cluster, cluster.affinity_pods.values()))
    anti = list(_live_slots(cluster, cluster.anti_affinity_pods.values()))
    index = PodIndex(cluster.generation, with_affinity, anti)
    _INDEXES[cluster] = index
    return index


# --------------------------------------------------------------------------- counting

def count_pairs(cluster: ClusterState, key: str, slots: np.ndarray) -> Counts:
    """How many of ``slots`` (one per matching pod) lie in each value of label ``key``."""
    if len(slots) == 0:
        return {}
    topology = cluster.topology_codes(key)
    codes = topology.codes[slots]
    codes = codes[codes >= 0]
    if len(codes) == 0:
        return {}
    counts = np.bincount(codes, minlength=len(topology.values))
    return {(key, topology.values[i]): int(counts[i]) for i in np.flatnonzero(counts).tolist()}


def merge(into: Counts, counts: Counts) -> None:
    for pair, count in counts.items():
        into[pair] = into.get(pair, 0) + count


def bump(counts: Counts, labels: Mapping[str, str], key: str, delta: int) -> None:
    """``topologyToMatchedTermCount.update``: entries that reach zero are deleted."""
    value = labels.get(key)
    if value is None:
        return
    pair = (key, value)
    total = counts.get(pair, 0) + delta
    if total:
        counts[pair] = total
    else:
        counts.pop(pair, None)


def count_array(counts: Counts, key: str, topology: TopologyCodes) -> np.ndarray:
    """``counts`` of ``key`` per value code, with a trailing 0 that code -1 picks."""
    array = np.zeros(len(topology.values) + 1, dtype=np.int64)
    for (pair_key, value), count in counts.items():
        if pair_key == key:
            code = topology.index.get(value)
            if code is not None:
                array[code] = count
    return array


def _slots_matching_all(terms: tuple[IncomingTerm, ...], index: PodIndex,
                        cluster: ClusterState) -> np.ndarray:
    namespaces: frozenset[str] | None = None
    for term in terms:
        if not term.all_namespaces:
            namespaces = term.namespaces if namespaces is None else namespaces & term.namespaces
    chunks = []
    for group in index.groups(cluster, namespaces):
        mask = np.fromiter((all(t.selector.matches(p.labels) for t in terms)
                            for p in group.pods), bool, count=len(group.pods))
        chunks.append(group.slots[mask])
    return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int64)


def matching_slots(term: IncomingTerm, index: PodIndex, cluster: ClusterState) -> np.ndarray:
    """Slots of the existing pods ``term`` matches, one entry per pod."""
    return _slots_matching_all((term,), index, cluster)


def existing_anti_affinity_counts(pod: PodInfo, namespace_labels: Mapping[str, str],
                                  index: PodIndex, cluster: ClusterState) -> Counts:
    """Existing pods' required anti-affinity terms that match the incoming pod."""
    slots_by_key: dict[str, list[int]] = {}
    for slot, existing in index.with_required_anti_affinity:
        for term in existing.required_anti_affinity:
            if term.matches(pod, namespace_labels):
                slots_by_key.setdefault(term.topology_key, []).append(slot)
    counts: Counts = {}
    for key, slots in slots_by_key.items():
        merge(counts, count_pairs(cluster, key, np.asarray(slots, dtype=np.int64)))
    return counts


def incoming_counts(affinity: tuple[IncomingTerm, ...], anti: tuple[IncomingTerm, ...],
                    index: PodIndex, cluster: ClusterState) -> tuple[Counts, Counts]:
    """Existing pods matching all the incoming affinity terms (counted once per term), and
    existing pods matching each incoming anti-affinity term."""
    affinity_counts: Counts = {}
    anti_counts: Counts = {}
    if affinity:
        slots = _slots_matching_all(affinity, index, cluster)
        for term in affinity:
            merge(affinity_counts, count_pairs(cluster, term.topology_key, slots))
    for term in anti:
        merge(anti_counts, count_pairs(cluster, term.topology_key,
                                       matching_slots(term, index, cluster)))
    return affinity_counts, anti_counts


# --------------------------------------------------------------------------- parse errors
# ``NewPodInfo`` rejects label selectors that ``metav1.LabelSelectorAsSelector`` cannot build.

_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must "
                       "start and end with an alphanumeric character")
_LABEL_VALUE_FMT = f"({_QUALIFIED_NAME_FMT})?"
_LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric "
                    "characters, '-', '_' or '.', and must start and end with an alphanumeric "
                    "character")
_DNS_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN_FMT = f"{_DNS_LABEL_FMT}(\\.{_DNS_LABEL_FMT})*"
_DNS_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                      "characters, '-' or '.', and must start and end with an alphanumeric "
                      "character")
_OPERATORS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}


def _regex_error(message: str, fmt: str, *examples: str) -> str:
    """``validation.RegexError``."""
    if not examples:
        return f"{message} (regex used for validation is '{fmt}')"
    quoted = " or ".join(f"'{e}', " for e in examples)
    return f"{message} (e.g. {quoted}regex used for validation is '{fmt}')"


def _go_quote(text: str) -> str:
    """Go's ``%q`` for the strings selectors hold."""
    escapes = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}
    body = "".join(escapes.get(c, c if c.isprintable() else f"\\x{ord(c):02x}") for c in text)
    return f'"{body}"'


def _invalid(path: str, value: str | list[str], detail: str) -> str:
    """``field.Invalid(...).Error()``: a string is quoted, a list printed as ``%#v``."""
    shown = (_go_quote(value) if isinstance(value, str)
             else "[]string{" + ", ".join(_go_quote(v) for v in value) + "}")
    return f"{path}: Invalid value: {shown}: {detail}"


def _qualified_name_errors(key: str) -> list[str]:
    """``validation.IsQualifiedName``."""
    errors: list[str] = []
    parts = key.split("/")
    if len(parts) > 2:
        regex = _regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT,
                             "MyName", "my.name", "123-abc")
        return [f"a qualified name {regex} with an optional DNS subdomain prefix and '/' "
                "(e.g. 'example.com/MyName')"]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            if len(prefix) > 253:
                errors.append("prefix part must be no more than 253 characters")
            if re.fullmatch(_DNS_SUBDOMAIN_FMT, prefix) is None:
                errors.append("prefix part " + _regex_error(_DNS_SUBDOMAIN_MSG,
                                                            _DNS_SUBDOMAIN_FMT, "example.com"))
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part must be no more than 63 characters")
    if re.fullmatch(_QUALIFIED_NAME_FMT, name) is None:
        errors.append("name part " + _regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT,
                                                  "MyName", "my.name", "123-abc"))
    return errors


def _label_value_errors(value: str) -> list[str]:
    """``validation.IsValidLabelValue``."""
    errors = []
    if len(value) > 63:
        errors.append("must be no more than 63 characters")
    if re.fullmatch(_LABEL_VALUE_FMT, value) is None:
        errors.append(_regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT,
                                   "MyValue", "my_value", "12345"))
    return errors


def _aggregate(messages: list[str]) -> str | None:
    """``utilerrors.NewAggregate(...).Error()``: duplicates dropped, brackets for several."""
    unique = list(dict.fromkeys(messages))
    if not unique:
        return None
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


def _requirement_error(key: str, operator: str, values: list[str]) -> str | None:
    """``labels.NewRequirement``'s aggregated validation errors."""
    errors = []
    key_errors = _qualified_name_errors(key)
    if key_errors:
        errors.append(_invalid("key", key, "; ".join(key_errors)))
    if operator in ("in", "notin") and not values:
        errors.append(_invalid("values", values,
                               "for 'in', 'notin' operators, values set can't be empty"))
    elif operator == "=" and len(values) != 1:
        errors.append(_invalid("values", values,
                               "exact-match compatibility requires one single value"))
    elif operator in ("exists", "!") and values:
        errors.append(_invalid("values", values,
                               "values set must be empty for exists and does not exist"))
    for i, value in enumerate(values):
        value_errors = _label_value_errors(value)
        if value_errors:
            errors.append(_invalid(f"values[{i}][{key}]", value, "; ".join(value_errors)))
    return _aggregate(errors)


def selector_error(raw: Any) -> str | None:
    """Why ``metav1.LabelSelectorAsSelector`` rejects ``raw``, or None."""
    if not isinstance(raw, dict):
        return None
    for key, value in sorted((raw.get("matchLabels") or {}).items()):
        error = _requirement_error(str(key), "=", [str(value)])
        if error:
            return error
    for expression in raw.get("matchExpressions") or []:
        if not isinstance(expression, dict):
            continue
        operator = _OPERATORS.get(str(expression.get("operator")))
        if operator is None:
            return f"{_go_quote(str(expression.get('operator') or ''))} is not a valid label " \
                   "selector operator"
        values = [str(v) for v in expression.get("values") or []]
        error = _requirement_error(str(expression.get("key") or ""), operator, values)
        if error:
            return error
    return None


def _terms_error(terms: Iterable[Any]) -> str | None:
    for term in terms:
        if isinstance(term, dict):
            error = (selector_error(term.get("labelSelector"))
                     or selector_error(term.get("namespaceSelector")))
            if error:
                return error
    return None


def affinity_parse_error(pod: PodInfo) -> str | None:
    """``NewPodInfo``'s error for the pod's (anti-)affinity terms, or None."""
    affinity = ((pod.obj.get("spec") or {}).get("affinity") or {}) if pod.obj else {}
    if not isinstance(affinity, dict):
        return None
    required = "requiredDuringSchedulingIgnoredDuringExecution"
    preferred = "preferredDuringSchedulingIgnoredDuringExecution"
    sections: dict[str, dict[str, Any]] = {
        kind: section if isinstance(section := affinity.get(kind), dict) else {}
        for kind in ("podAffinity", "podAntiAffinity")}
    if not any(sections.values()):
        return None
    groups = (
        ("requiredAffinityTerms", sections["podAffinity"].get(required) or []),
        ("requiredAntiAffinityTerms", sections["podAntiAffinity"].get(required) or []),
        ("preferredAffinityTerms", [t.get("podAffinityTerm") or {} for t in
                                    sections["podAffinity"].get(preferred) or []]),
        ("preferredAntiAffinityTerms", [t.get("podAffinityTerm") or {} for t in
                                        sections["podAntiAffinity"].get(preferred) or []]),
    )
    errors = []
    for label, terms in groups:
        error = _terms_error(terms)
        if error:
            errors.append(f"{label}: {error}")
    return _aggregate(errors)
