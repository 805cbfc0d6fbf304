"""Which Kubernetes release a scheduling use case mirrors, and what differs between releases.

Every door that schedules (``kaudit replay``, ``whatif``, ``compare``, ``check``, ``audit``, a
sweep's cell, the dashboard's what-if) chooses its release by the one rule of
:func:`resolve_version`: the release the user names (``--kubernetes-version``, a sweep spec's
``kubernetesVersion``, the what-if's ``kubernetesVersion``) wins; else the release the trace
was recorded from (or the run was replayed as) when kaudit mirrors its minor (the exact patch
when supported, else the newest supported patch of that minor); a recorded release of a minor
kaudit does not mirror gets the nearest supported release (the oldest for an older cluster),
with a notice that says so; else :func:`fallback_release`, the newest supported release.

:func:`release_differences` computes, from the data of :mod:`kaudit.versions` alone, what
changed in each supported release since the previous one (``kaudit versions``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from kaudit import versions
from kaudit.config import FeatureGates
from kaudit.errors import ConfigError
from kaudit.model.recording import parse_release
from kaudit.versions import DefaultPlugin, GatedPlugin, GateSpec, KubernetesVersion

#: The flag every command names the release with.
FLAG = "--kubernetes-version"
#: The release every run was replayed as before kaudit kept a run's release (schema revision
#: 0009 backfills it); a sweep cell's key names any other release, so cells keyed before
#: releases existed keep their keys.
UNVERSIONED_RELEASE = "v1.34.2"

#: Where a resolved release came from.
FROM_USER, FROM_RECORDING, FROM_FALLBACK = "user", "recording", "fallback"


def fallback_release() -> KubernetesVersion:
    """The release mirrored when neither the user nor the recording names one:
    :data:`kaudit.versions.DEFAULT`, the newest supported release."""
    return versions.DEFAULT


def supported_names() -> list[str]:
    """The supported releases, oldest first."""
    return [v.name for v in versions.SUPPORTED]


def version_help(default: str) -> str:
    """The help of a ``--kubernetes-version`` option; ``default`` says what it defaults to."""
    return (f"The Kubernetes release whose kube-scheduler to mirror: "
            f"{', '.join(supported_names())} (`v1.34` or `1.34` names the newest supported "
            f"patch of a minor; `kaudit versions` lists what differs) [default: {default}].")


def explicit_version(name: str, field: str = FLAG) -> KubernetesVersion:
    """The supported release a user named in ``field``; :class:`ConfigError` naming the field
    and listing the supported releases otherwise."""
    try:
        return versions.get(name)
    except ConfigError as exc:
        raise ConfigError(f"{field}: {exc}") from None


def mirrored_release(recorded: str) -> KubernetesVersion | None:
    """The supported release that mirrors ``recorded``: the same patch when supported, else the
    newest supported patch of its minor; None when kaudit mirrors no release of its minor."""
    parsed = parse_release(recorded)
    if parsed is None:
        return None
    major, minor, patch = parsed
    same_minor = [v for v in versions.SUPPORTED if v.release[:2] == (major, minor)]
    exact = [v for v in same_minor if v.release[2] == patch]
    found = exact or same_minor
    return max(found, key=lambda v: v.release) if found else None


def nearest_release(recorded: str) -> KubernetesVersion | None:
    """The supported release nearest to ``recorded``, a release of a minor kaudit does not
    mirror: the oldest supported for an older one, else the newest supported before it; None
    when ``recorded`` is no release."""
    parsed = parse_release(recorded)
    if parsed is None:
        return None
    before = [v for v in versions.SUPPORTED if v.release[:2] < parsed[:2]]
    return max(before, key=lambda v: v.release) if before else min(
        versions.SUPPORTED, key=lambda v: v.release)


def exact_release(name: str | None) -> KubernetesVersion | None:
    """The supported release named exactly ``name`` (a run's, as it stored it), else None."""
    found = mirrored_release(name) if name is not None else None
    return found if found is not None and found.name == name else None


@dataclass(frozen=True)
class ResolvedVersion:
    """The release a use case mirrors, where it came from, and what to tell the user."""

    version: KubernetesVersion
    #: FROM_USER, FROM_RECORDING or FROM_FALLBACK.
    origin: str
    notices: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.version.name


def resolve_version(explicit: str | None, recorded: str | None = None, *, field: str = FLAG,
                    subject: str = "the trace was recorded from") -> ResolvedVersion:
    """The release to mirror, by this module's one rule. ``explicit`` is what the user named
    in ``field`` (refused with a :class:`ConfigError` naming ``field`` when unsupported);
    ``recorded`` the release the trace was recorded from (or a run replayed as), as its source
    says it; ``subject`` introduces it in notices (``trace 'monday' was recorded from``)."""
    if explicit is not None:
        return ResolvedVersion(explicit_version(explicit, field), FROM_USER)
    fallback = fallback_release()
    if recorded is None:
        return ResolvedVersion(fallback, FROM_FALLBACK)
    mirrored = mirrored_release(recorded)
    if mirrored is None:
        nearest = nearest_release(recorded)
        if nearest is None:
            return ResolvedVersion(fallback, FROM_FALLBACK, (
                f"{subject} Kubernetes {recorded}, which kaudit cannot read as a release: "
                f"using {fallback.name} ({field} to choose)",))
        return ResolvedVersion(nearest, FROM_RECORDING, (
            f"{subject} Kubernetes {recorded}, which kaudit does not mirror (it supports "
            f"{', '.join(supported_names())}): using {nearest.name}, the nearest "
            f"({field} to choose)",))
    notices: tuple[str, ...] = ()
    if parse_release(recorded) != mirrored.release:
        notices = (f"{subject} Kubernetes {recorded}: using {mirrored.name}, the release of "
                   f"its minor kaudit mirrors ({field} to choose)",)
    return ResolvedVersion(mirrored, FROM_RECORDING, notices)


def carry_gates(values: Mapping[str, bool], source: KubernetesVersion | None,
                target: KubernetesVersion, owner: str) -> tuple[FeatureGates, tuple[str, ...]]:
    """The feature gates of ``target`` that carry the gate ``values`` a run had under its
    release ``source`` (None when kaudit no longer mirrors it): the gates set away from
    ``source``'s defaults, as overrides of ``target``'s (``target`` may be ``source``). A gate
    ``target`` does not have, or has locked to another value, is left out with a notice naming
    ``owner`` (``run 'x'``)."""
    overrides = {name: on for name, on in values.items()
                 if source is None or name not in source.gates or source.gates[name].default != on}
    kept: dict[str, bool] = {}
    notices = []
    for name, on in sorted(overrides.items()):
        spec = target.gates.get(name)
        value = str(on).lower()
        if spec is None:
            notices.append(f"{owner}'s feature gate {name}={value} is not a gate of "
                           f"{target.name}: left out")
        elif spec.locked and spec.default != on:
            notices.append(f"{owner}'s feature gate {name}={value} is locked to "
                           f"{str(spec.default).lower()} in {target.name}: left out")
        elif spec.default != on:
            kept[name] = on
    return FeatureGates(kept, target), tuple(notices)


# ----------------------------------------------------------------------------- differences

def _gate(spec: GateSpec | None) -> dict[str, Any] | None:
    return None if spec is None else {"default": spec.default, "stage": spec.stage,
                                      "locked": spec.locked}


def _gate_changes(before: KubernetesVersion, after: KubernetesVersion) -> list[dict[str, Any]]:
    return [{"gate": name, "before": _gate(before.gates.get(name)),
             "after": _gate(after.gates.get(name))}
            for name in sorted(set(before.gates) | set(after.gates))
            if before.gates.get(name) != after.gates.get(name)]


def _plugin(plugin: DefaultPlugin | None, position: int | None) -> dict[str, Any] | None:
    return None if plugin is None else {"weight": plugin.weight, "position": position}


def _default_plugin_changes(before: KubernetesVersion, after: KubernetesVersion
                            ) -> tuple[list[dict[str, Any]], bool]:
    """Plugins added, removed or weighted anew in the default MultiPoint list, and whether the
    plugins both releases have run in another order."""
    old = {p.name: (i, p) for i, p in enumerate(before.default_multi_point)}
    new = {p.name: (i, p) for i, p in enumerate(after.default_multi_point)}
    changes = []
    for name in [*old, *(n for n in new if n not in old)]:
        a, b = old.get(name), new.get(name)
        if a is None or b is None or a[1].weight != b[1].weight:
            changes.append({"plugin": name,
                            "before": _plugin(a[1], a[0] + 1) if a else None,
                            "after": _plugin(b[1], b[0] + 1) if b else None})
    common_old = [p.name for p in before.default_multi_point if p.name in new]
    common_new = [p.name for p in after.default_multi_point if p.name in old]
    return changes, common_old != common_new


def _gated(plugin: GatedPlugin | None) -> dict[str, Any] | None:
    return None if plugin is None else {"weight": plugin.plugin.weight,
                                        "before": plugin.before}


def _gated_plugin_changes(before: KubernetesVersion, after: KubernetesVersion
                          ) -> list[dict[str, Any]]:
    """Plugins a gate adds that came, went, or moved or were weighted anew, by gate and
    plugin."""
    old = {(p.gate, p.plugin.name): p for p in before.gated_plugins}
    new = {(p.gate, p.plugin.name): p for p in after.gated_plugins}
    return [{"gate": gate, "plugin": name, "before": _gated(old.get((gate, name))),
             "after": _gated(new.get((gate, name)))}
            for gate, name in [*old, *(key for key in new if key not in old)]
            if old.get((gate, name)) != new.get((gate, name))]


def _api_default_changes(before: KubernetesVersion, after: KubernetesVersion
                         ) -> list[dict[str, Any]]:
    changes = []
    for item in fields(before.api_defaults):
        a = getattr(before.api_defaults, item.name)
        b = getattr(after.api_defaults, item.name)
        if a != b:
            changes.append({"field": item.name, "before": _plain(a), "after": _plain(b)})
    return changes


def _plain(value: Any) -> Any:
    """A value of :class:`~kaudit.versions.ApiDefaults` as JSON has it (tuples as lists)."""
    return [_plain(item) for item in value] if isinstance(value, tuple) else value


def release_differences() -> dict[str, Any]:
    """Every supported release, oldest first, with what changed since the previous supported
    one: gates whose default, stage or lock changed (or that came or went), default plugins
    added, removed or weighted anew (and whether their order changed), plugins gates add,
    configuration API defaults, and the release's ungated behaviour changes. The oldest
    release has no previous one to differ from; its ungated changes are listed."""
    default, fallback = versions.DEFAULT, fallback_release()
    releases = []
    previous: KubernetesVersion | None = None
    for version in versions.SUPPORTED:
        entry: dict[str, Any] = {
            "name": version.name, "minor": version.minor, "default": version is default,
            "fallback": version is fallback,
            "previous": None if previous is None else previous.name,
            "gateCount": len(version.gates),
            "defaultPlugins": [{"plugin": p.name, "weight": p.weight}
                               for p in version.default_multi_point],
            "changes": None,
            "ungatedChanges": [{"key": c.key, "summary": c.summary, "upstream": c.upstream}
                               for c in version.ungated_changes],
        }
        if previous is not None:
            plugins, reordered = _default_plugin_changes(previous, version)
            entry["changes"] = {
                "gates": _gate_changes(previous, version),
                "defaultPlugins": plugins, "defaultPluginOrderChanged": reordered,
                "gatedPlugins": _gated_plugin_changes(previous, version),
                "apiDefaults": _api_default_changes(previous, version),
            }
        releases.append(entry)
        previous = version
    return {"default": default.name, "fallback": fallback.name, "releases": releases}
