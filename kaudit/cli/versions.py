"""``kaudit versions``: the Kubernetes releases kaudit mirrors, and what differs between them.

Every difference is computed from the releases' data in :mod:`kaudit.versions` by
:func:`kaudit.services.versions.release_differences`; nothing here is written by hand.
"""

from __future__ import annotations

from typing import Any

import click

from kaudit.cli.options import echo_json, json_option
from kaudit.services.versions import FLAG, release_differences


def _gate(spec: dict[str, Any] | None) -> str:
    if spec is None:
        return "absent"
    return (f"{'on' if spec['default'] else 'off'} ({spec['stage']}"
            + (", locked" if spec["locked"] else "") + ")")


def _weight(plugin: dict[str, Any] | None) -> str:
    if plugin is None:
        return "absent"
    weight = "no weight" if plugin["weight"] is None else f"weight {plugin['weight']}"
    return f"{weight}, position {plugin['position']}"


def _gated(placement: dict[str, Any] | None) -> str:
    if placement is None:
        return "absent"
    where = f"before {placement['before']}" if placement["before"] else "appended"
    weight = "no weight" if placement["weight"] is None else f"weight {placement['weight']}"
    return f"{where}, {weight}"


def _changes(changes: dict[str, Any]) -> list[str]:
    lines = []
    if changes["gates"]:
        lines.append("    feature gates:")
        lines += [f"      {c['gate']}: {_gate(c['before'])} → {_gate(c['after'])}"
                  for c in changes["gates"]]
    if changes["defaultPlugins"] or changes["defaultPluginOrderChanged"]:
        lines.append("    default plugins (MultiPoint):")
        lines += [f"      {c['plugin']}: {_weight(c['before'])} → {_weight(c['after'])}"
                  for c in changes["defaultPlugins"]]
        if changes["defaultPluginOrderChanged"]:
            lines.append("      the plugins of both releases run in another order")
    if changes["gatedPlugins"]:
        lines.append("    plugins feature gates add:")
        lines += [f"      {c['plugin']} when {c['gate']} is on: {_gated(c['before'])} → "
                  f"{_gated(c['after'])}" for c in changes["gatedPlugins"]]
    if changes["apiDefaults"]:
        lines.append("    configuration API defaults:")
        lines += [f"      {c['field']}: {c['before']} → {c['after']}"
                  for c in changes["apiDefaults"]]
    if not lines:
        lines.append("    no gate, default plugin or API default changed")
    return lines


def _text(report: dict[str, Any]) -> str:
    lines = []
    for release in report["releases"]:
        marks = [mark for mark, on in (("the default", release["default"]),
                                       ("the fallback", release["fallback"]
                                        and not release["default"])) if on]
        lines.append(f"{release['name']}" + (f" ({', '.join(marks)})" if marks else ""))
        lines.append(f"  {release['gateCount']} feature gates, "
                     f"{len(release['defaultPlugins'])} default plugins")
        if release["previous"] is None:
            lines.append("  the oldest release kaudit mirrors: nothing earlier to compare with")
        else:
            lines.append(f"  changed since {release['previous']}:")
            lines += _changes(release["changes"])
        ungated = release["ungatedChanges"]
        lines.append("  behaviour changes without a feature gate:" if ungated else
                     "  no behaviour change without a feature gate")
        for change in ungated:
            lines.append(f"    {change['key']}: {change['summary']}")
            lines.append(f"      upstream: {change['upstream']}")
    lines.append("")
    lines.append(f"A replay mirrors the release {FLAG} names, else the one the trace was "
                 "recorded from when kaudit mirrors its minor, else "
                 f"{report['fallback']}.")
    return "\n".join(lines)


@click.command()
@json_option
def versions(as_json: bool) -> None:
    """List the Kubernetes releases kaudit mirrors, oldest first, and what changed in each
    since the one before: feature gates whose default, stage or lock changed, default plugins
    and their weights, plugins feature gates add, configuration API defaults, and behaviour
    changes no gate controls (with the upstream pull request).

    Every command that schedules takes --kubernetes-version V (`v1.34.2`, `1.34.2`, or a
    minor such as `v1.34` for its newest supported patch).
    """
    report = release_differences()
    if as_json:
        echo_json(report)
        return
    click.echo(_text(report))
