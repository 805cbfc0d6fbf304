"""InterPodAffinity: required pod (anti-)affinity filters nodes; preferred terms score them.

Mirrors, for Kubernetes v1.34, ``pkg/scheduler/framework/plugins/interpodaffinity/plugin.go``
(args, ``mergeAffinityTermNamespacesIfNotEmpty``, ``GetNamespaceLabelsSnapshot``),
``filtering.go`` (the three PreFilter counters, Skip, AddPod/RemovePod, Filter order, reasons
and codes) and ``scoring.go`` (PreScore skip rules, ``hardPodAffinityWeight``,
``ignorePreferredTermsOfExistingPods``, min-max NormalizeScore), with ``AffinityTerm.Matches``
and ``NewPodInfo`` from ``pkg/scheduler/framework/types.go`` and the label-selector error texts
of ``apimachinery/pkg/labels/selector.go`` and ``util/validation/validation.go``.

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
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kaudit.cluster.state import ClusterState, TopologyCodes
from kaudit.config import ArgsSpec, args_defaults, args_schema, args_validation
from kaudit.framework.cycle_state import CycleState
from kaudit.framework.events import NODE, POD, ClusterEventWithHint, QueueingHint, register
from kaudit.framework.plugin import (
    MAX_NODE_SCORE,
    FilterPlugin,
    NodeVerdicts,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
)
from kaudit.framework.runtime import PluginError
from kaudit.framework.status import Code, Status
from kaudit.model.pod import AffinityTerm, PodInfo
from kaudit.model.selectors import LabelSelector
from kaudit.plugins import names
from kaudit.plugins.hint_objects import as_node, as_pod

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


# --------------------------------------------------------------------------- PreFilter state

@dataclass
class PreFilterState:
    """``preFilterState``: the three counters, the incoming pod's terms and namespace labels."""

    existing_anti_affinity_counts: Counts
    affinity_counts: Counts
    anti_affinity_counts: Counts
    pod: PodInfo
    affinity_terms: tuple[IncomingTerm, ...]
    anti_affinity_terms: tuple[IncomingTerm, ...]
    namespace_labels: Mapping[str, str]
    matches_own_affinity: bool
    _arrays: dict[tuple[str, str], tuple[TopologyCodes, np.ndarray]] = field(
        default_factory=dict, repr=False, compare=False)

    def clone(self) -> PreFilterState:
        return PreFilterState(dict(self.existing_anti_affinity_counts),
                              dict(self.affinity_counts), dict(self.anti_affinity_counts),
                              self.pod, self.affinity_terms, self.anti_affinity_terms,
                              self.namespace_labels, self.matches_own_affinity)

    def update_with_pod(self, other: PodInfo, node_labels: Mapping[str, str],
                        multiplier: int) -> None:
        """``updateWithPod``: account ``other`` (added or removed) on a node with these labels."""
        self._arrays.clear()
        for term in other.required_anti_affinity:
            if term.matches(self.pod, self.namespace_labels):
                bump(self.existing_anti_affinity_counts, node_labels, term.topology_key,
                     multiplier)
        if matches_all(self.affinity_terms, other):
            for incoming in self.affinity_terms:
                bump(self.affinity_counts, node_labels, incoming.topology_key, multiplier)
        for incoming in self.anti_affinity_terms:
            if incoming.matches(other):
                bump(self.anti_affinity_counts, node_labels, incoming.topology_key, multiplier)

    def per_slot(self, which: str, key: str, cluster: ClusterState,
                 slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(label code, counter value) of every slot for counter ``which`` and label ``key``."""
        topology = cluster.topology_codes(key)
        cached = self._arrays.get((which, key))
        if cached is None or cached[0] is not topology:
            counts: Counts = getattr(self, which)
            cached = (topology, count_array(counts, key, topology))
            self._arrays[(which, key)] = cached
        codes = topology.codes[slots]
        return codes, cached[1][codes]


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
        operator = _OPERATORS.get(expression.get("operator"))
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
    sections = {kind: affinity.get(kind) if isinstance(affinity.get(kind), dict) else {}
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


# --------------------------------------------------------------------------- scoring state

@dataclass
class ScoreAccumulator:
    """``topologyScore`` being built: per topology key, a score per label-value code."""

    cluster: ClusterState
    scores: dict[str, tuple[TopologyCodes, np.ndarray]] = field(default_factory=dict)
    touched: bool = False

    def add(self, key: str, slots: np.ndarray, weight: int) -> None:
        """Add ``weight`` at the topology value of every slot (one entry per matching pod)."""
        if len(slots) == 0:
            return
        entry = self.scores.get(key)
        if entry is None:
            topology = self.cluster.topology_codes(key)
            entry = (topology, np.zeros(len(topology.values) + 1, dtype=np.int64))
        codes = entry[0].codes[slots]
        codes = codes[codes >= 0]
        if len(codes) == 0:
            return
        self.scores[key] = entry
        self.touched = True
        np.add.at(entry[1], codes, weight)


@dataclass
class PreScoreState:
    """``preScoreState.topologyScore``, as arrays over each key's value codes."""

    topology_score: dict[str, tuple[TopologyCodes, np.ndarray]]

    def as_dict(self) -> dict[str, dict[str, int]]:
        """The upstream shape ``{key: {value: score}}``, for inspection."""
        return {key: {topology.values[i]: int(array[i])
                      for i in range(len(topology.values)) if array[i]}
                for key, (topology, array) in self.topology_score.items()}


# --------------------------------------------------------------------------- plugin

class InterPodAffinity(PreFilterPlugin, PreFilterExtensions, FilterPlugin, PreScorePlugin,
                       ScorePlugin):
    name = names.INTER_POD_AFFINITY
    args_spec = ArgsSpec(
        kind="InterPodAffinityArgs", schema=args_schema.INTER_POD_AFFINITY_ARGS,
        set_defaults=args_defaults.set_defaults_inter_pod_affinity,
        validate=args_validation.validate_inter_pod_affinity_args)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """v1.34 ``EventsToRegister`` (queueing hints on)."""
        return [register(POD, ["Add", "UpdatePodLabel", "Delete"], _after_pod_change),
                register(NODE, ["Add", "UpdateNodeLabel"], _after_node_change)]

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Any = None) -> None:
        super().__init__(args, handle)
        weight = self.args.get("hardPodAffinityWeight")
        self.hard_pod_affinity_weight = 1 if weight is None else int(weight)
        self.ignore_preferred_terms_of_existing_pods = bool(
            self.args.get("ignorePreferredTermsOfExistingPods") or False)

    # ----------------------------------------------------------------- PreFilter

    def pre_filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState
                   ) -> tuple[PreFilterResult | None, Status]:
        error = affinity_parse_error(pod)
        if error is not None:
            return None, Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f"parsing pod: {error}")
        affinity = incoming_terms(pod.required_affinity, cluster)
        anti = incoming_terms(pod.required_anti_affinity, cluster)
        namespace_labels = dict(cluster.namespace_labels(pod.namespace))
        index = pod_index(cluster)
        existing = existing_anti_affinity_counts(pod, namespace_labels, index, cluster)
        affinity_counts, anti_counts = incoming_counts(affinity, anti, index, cluster)
        if not existing and not affinity and not anti:
            return None, Status.of(Code.SKIP)
        state.write(PRE_FILTER_STATE_KEY, PreFilterState(
            existing, affinity_counts, anti_counts, pod, affinity, anti, namespace_labels,
            matches_all(affinity, pod)))
        return None, Status.success()

    def _update(self, state: CycleState, other: PodInfo, slot: int, cluster: ClusterState,
                multiplier: int) -> Status:
        prefilter = state.read(PRE_FILTER_STATE_KEY)
        if not isinstance(prefilter, PreFilterState):
            return Status.of(Code.ERROR, f'error reading "{PRE_FILTER_STATE_KEY}" from '
                                         "cycleState: not found")
        prefilter.update_with_pod(other, cluster.node(slot).labels, multiplier)
        return Status.success()

    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, slot: int,
                cluster: ClusterState) -> Status:
        return self._update(state, pod_to_add, slot, cluster, 1)

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, slot: int,
                   cluster: ClusterState) -> Status:
        return self._update(state, pod_to_remove, slot, cluster, -1)

    # ----------------------------------------------------------------- Filter

    def filter(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
               slots: np.ndarray) -> NodeVerdicts:
        slots = np.asarray(slots, dtype=np.int64)
        prefilter = state.read(PRE_FILTER_STATE_KEY)
        if not isinstance(prefilter, PreFilterState):
            message = f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found'
            return NodeVerdicts(np.full(len(slots), np.int8(Code.ERROR)),
                                np.ones(len(slots), np.int32), [(), (message,)])
        affinity = affinity_failures(prefilter, cluster, slots)
        anti = ~affinity & anti_affinity_failures(prefilter, cluster, slots)
        existing = ~affinity & ~anti & existing_anti_affinity_failures(prefilter, cluster, slots)
        codes = np.zeros(len(slots), dtype=np.int8)
        codes[affinity] = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        codes[anti | existing] = Code.UNSCHEDULABLE
        reason_ids = (affinity * 1 + anti * 2 + existing * 3).astype(np.int32)
        return NodeVerdicts(codes, reason_ids, [(), (REASON_AFFINITY,), (REASON_ANTI_AFFINITY,),
                                                (REASON_EXISTING_ANTI_AFFINITY,)])

    # ----------------------------------------------------------------- Score

    def pre_score(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
                  slots: np.ndarray) -> Status:
        if len(slots) == 0:
            return Status.of(Code.SKIP)
        has_constraints = bool(pod.preferred_affinity or pod.preferred_anti_affinity)
        if self.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return Status.of(Code.SKIP)
        error = affinity_parse_error(pod)
        if error is not None:
            return Status.of(Code.ERROR, f"failed to parse pod: {error}")
        accumulator = ScoreAccumulator(cluster)
        index = pod_index(cluster)
        if has_constraints:
            for term in incoming_terms(pod.preferred_affinity, cluster):
                accumulator.add(term.topology_key, matching_slots(term, index, cluster),
                                term.weight)
            for term in incoming_terms(pod.preferred_anti_affinity, cluster):
                accumulator.add(term.topology_key, matching_slots(term, index, cluster),
                                -term.weight)
        self._score_existing_terms(accumulator, pod, cluster, index)
        if not accumulator.touched:
            return Status.of(Code.SKIP)
        state.write(PRE_SCORE_STATE_KEY, PreScoreState(accumulator.scores))
        return Status.success()

    def _score_existing_terms(self, accumulator: ScoreAccumulator, pod: PodInfo,
                              cluster: ClusterState, index: PodIndex) -> None:
        """Existing pods' required (× hardPodAffinityWeight) and preferred terms that match
        the incoming pod; their required anti-affinity does not score."""
        namespace_labels = cluster.namespace_labels(pod.namespace)
        hard = self.hard_pod_affinity_weight
        weighted: dict[tuple[str, int], list[int]] = {}
        for slot, existing in index.with_affinity:
            if hard > 0:
                for term in existing.required_affinity:
                    if term.matches(pod, namespace_labels):
                        weighted.setdefault((term.topology_key, hard), []).append(slot)
            for term in existing.preferred_affinity:
                if term.matches(pod, namespace_labels):
                    weighted.setdefault((term.topology_key, term.weight), []).append(slot)
            for term in existing.preferred_anti_affinity:
                if term.matches(pod, namespace_labels):
                    weighted.setdefault((term.topology_key, -term.weight), []).append(slot)
        for (key, weight), slots in weighted.items():
            accumulator.add(key, np.asarray(slots, dtype=np.int64), weight)

    def score(self, state: CycleState, pod: PodInfo, cluster: ClusterState,
              slots: np.ndarray) -> np.ndarray:
        prescore = _pre_score_state(state)
        slots = np.asarray(slots, dtype=np.int64)
        total = np.zeros(len(slots), dtype=np.int64)
        for topology, array in prescore.topology_score.values():
            total += array[topology.codes[slots]]
        return total

    def normalize(self, state: CycleState, pod: PodInfo, slots: np.ndarray,
                  scores: np.ndarray) -> np.ndarray | None:
        prescore = _pre_score_state(state)
        scores = np.asarray(scores, dtype=np.int64)
        if not prescore.topology_score or len(scores) == 0:
            return None
        low, high = int(scores.min()), int(scores.max())
        if high - low <= 0:
            return np.zeros_like(scores)
        fraction = (scores - low).astype(np.float64) / float(high - low)
        return np.trunc(float(MAX_NODE_SCORE) * fraction).astype(np.int64)


def _pre_score_state(state: CycleState) -> PreScoreState:
    prescore = state.read(PRE_SCORE_STATE_KEY)
    if not isinstance(prescore, PreScoreState):
        raise PluginError(f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
    return prescore


# --------------------------------------------------------------------------- Filter checks

def affinity_failures(prefilter: PreFilterState, cluster: ClusterState,
                      slots: np.ndarray) -> np.ndarray:
    """``satisfyPodAffinity`` negated: a term's key is missing, or some term has no matching
    pod in the node's domain (forgiven when nothing matches anywhere and the pod matches all
    its own terms)."""
    missing = np.zeros(len(slots), dtype=bool)
    if not prefilter.affinity_terms:
        return missing
    pods_exist = np.ones(len(slots), dtype=bool)
    for term in prefilter.affinity_terms:
        codes, counts = prefilter.per_slot("affinity_counts", term.topology_key, cluster, slots)
        missing |= codes < 0
        pods_exist &= counts > 0
    if not prefilter.affinity_counts and prefilter.matches_own_affinity:
        return missing
    return missing | ~pods_exist


def anti_affinity_failures(prefilter: PreFilterState, cluster: ClusterState,
                           slots: np.ndarray) -> np.ndarray:
    """``satisfyPodAntiAffinity`` negated."""
    failed = np.zeros(len(slots), dtype=bool)
    if not prefilter.anti_affinity_counts:
        return failed
    for term in prefilter.anti_affinity_terms:
        codes, counts = prefilter.per_slot("anti_affinity_counts", term.topology_key, cluster,
                                           slots)
        failed |= (codes >= 0) & (counts > 0)
    return failed


def existing_anti_affinity_failures(prefilter: PreFilterState, cluster: ClusterState,
                                    slots: np.ndarray) -> np.ndarray:
    """``satisfyExistingPodsAntiAffinity`` negated: any of the node's labels is a pair with a
    positive count."""
    failed = np.zeros(len(slots), dtype=bool)
    counts = prefilter.existing_anti_affinity_counts
    for key in sorted({key for (key, _), count in counts.items() if count > 0}):
        codes, per_slot = prefilter.per_slot("existing_anti_affinity_counts", key, cluster,
                                             slots)
        failed |= (codes >= 0) & (per_slot > 0)
    return failed


# ------------------------------------------------------------------ queueing hints


def _matches_all(terms: tuple[AffinityTerm, ...], pod: PodInfo) -> bool:
    """``podMatchesAllAffinityTerms``: every required term matches (false for no terms);
    namespace labels are not looked up."""
    return bool(terms) and all(term.matches(pod, {}) for term in terms)


def _after_pod_change(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """``isSchedulableAfterPodChange``: an assigned pod that now matches all the pod's
    affinity terms, or no longer matches (or was deleted matching) all its anti-affinity
    terms."""
    original, modified = as_pod(old), as_pod(new)
    if (modified is not None and not modified.node_name) or \
            (original is not None and not original.node_name):
        return QueueingHint.QUEUE_SKIP
    terms, anti = pod.required_affinity, pod.required_anti_affinity
    if original is not None and modified is not None:
        if not _matches_all(terms, original) and _matches_all(terms, modified):
            return QueueingHint.QUEUE
        if _matches_all(anti, original) and not _matches_all(anti, modified):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP
    if modified is not None:
        return QueueingHint.QUEUE if _matches_all(terms, modified) else QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE if _matches_all(anti, original) else QueueingHint.QUEUE_SKIP


def _after_node_change(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """``isSchedulableAfterNodeChange`` (v1.33+): for an affinity term, a new node with its
    topology key, or a node that gained the key or changed its value; for an anti-affinity
    term, any new node (one without the key always accepts the pod), or a node that lost the
    key or changed its value."""
    original, modified = as_node(old), as_node(new)
    for term in pod.required_affinity:
        key = term.topology_key
        if original is None:
            if key in modified.labels:
                return QueueingHint.QUEUE
            continue
        if key in modified.labels and original.labels.get(key) != modified.labels[key]:
            return QueueingHint.QUEUE
    for term in pod.required_anti_affinity:
        if original is None:
            return QueueingHint.QUEUE
        key = term.topology_key
        if key in original.labels and original.labels[key] != modified.labels.get(key):
            return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP
