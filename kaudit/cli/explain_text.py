"""``kaudit explain`` as text: the verdict first, then the evidence, then the whole story.

Reads only the :func:`kaudit.queries.explain.explain_pod` document, so the text states exactly
what ``--json`` and the pod page state.
"""

from __future__ import annotations

from typing import Any

import click

from kaudit.cli.options import table, tie_note
from kaudit.eventlog.codec import rejects
from kaudit.queries import units
from kaudit.queries.verdict import group_rejections

#: Rows of the shown attempt's score table.
TOP_SCORES = 5
#: Characters of an attempt's message in the attempts table.
MESSAGE_WIDTH = 90


def _inputs_lines(inputs: dict[str, Any]) -> list[tuple[str, str]]:
    if not inputs.get("found"):
        return [("pod", "the trace holds no object for it (created by the replay)")]
    requests = ", ".join(inputs["requestsText"].values()) or "none"
    scored = ", ".join(inputs["scoringRequestsText"].values())
    defaults = inputs.get("scoringDefaults") or []
    scoring = f"scored as {scored}" + (
        f" (upstream's non-zero defaults for {', '.join(defaults)}: 0.1 cores, 200 MiB)"
        if defaults else "")
    priority = inputs.get("priority")
    lines = [("requests", f"{requests}; {scoring}"),
             ("priority", f"{priority if priority is not None else 0}"
              + (f" (class {inputs['priorityClassName']})" if inputs.get("priorityClassName")
                 else "") + f", preemptionPolicy {inputs['preemptionPolicy']}")]
    if inputs.get("nodeSelector"):
        lines.append(("nodeSelector", ", ".join(f"{k}={v}"
                                                for k, v in inputs["nodeSelector"].items())))
    for i, term in enumerate(inputs.get("requiredNodeAffinity") or []):
        lines.append(("node affinity" if i == 0 else "  or", term))
    for i, term in enumerate(inputs.get("preferredNodeAffinity") or []):
        lines.append(("preferred" if i == 0 else "", term))
    lines.append(("tolerations", ", ".join(inputs.get("tolerations") or []) or "none"))
    for kind, label in (("requiredPodAffinityTerms", "pod affinity"),
                        ("requiredPodAntiAffinityTerms", "pod anti-affinity")):
        if inputs.get(kind):
            lines.append((label, f"{inputs[kind]} required term(s)"))
    for i, constraint in enumerate(inputs.get("spreadConstraints") or []):
        lines.append(("spread" if i == 0 else "", constraint))
    if not inputs.get("spreadConstraints"):
        lines.append(("spread", "none in the spec (the profile's default constraints apply "
                                "to pods of a Service or controller)"))
    if inputs.get("hostPorts"):
        lines.append(("host ports", ", ".join(inputs["hostPorts"])))
    if inputs.get("gpu"):
        lines.append(("GPU devices", inputs["gpu"]))
    if inputs.get("schedulingGates"):
        lines.append(("gates", ", ".join(inputs["schedulingGates"])))
    if inputs.get("schedulerName") != "default-scheduler":
        lines.append(("scheduler", inputs["schedulerName"]))
    return lines


def _grouped(attempt: dict[str, Any]) -> list[dict[str, Any]]:
    """Rejected nodes grouped by plugin and reasons (for attempts other than the decisive)."""
    groups = sorted(group_rejections(attempt["nodes"]), key=lambda g: -len(g.nodes))
    return [{"count": len(g.nodes), "cause": f"{g.plugin}: {'; '.join(g.reasons)}",
             "detail": "", "nodes": g.nodes[:8], "moreNodes": max(len(g.nodes) - 8, 0)}
            for g in groups]


def _examples(group: dict[str, Any]) -> str:
    names = ", ".join(group["nodes"][:3])
    more = group["count"] - min(len(group["nodes"]), 3)
    return names + (f" and {more} more" if more else "")


def _print_attempt(story: dict[str, Any], index: int, decisive: bool, all_nodes: bool) -> None:
    attempt = story["attempts"][index]
    label = "Decisive attempt" if decisive else "Attempt"
    click.echo(f"\n{label} #{index} at t={units.seconds(attempt['t'])} ({attempt['time']}, "
               f"cycle {attempt['cycle']}): {attempt['evaluatedNodes']} nodes evaluated, "
               f"{attempt['feasibleNodes']} feasible")
    if attempt["selectedNode"]:
        click.echo(f"  selected {tie_note(attempt['selectedNode'], attempt['tiedNodes'])}")
    elif attempt.get("message"):
        click.echo(f"  {attempt['message']}")
    for call in attempt.get("extenderCalls") or []:
        click.echo(f"  {extender_call_line(call)}")
    rejected = [(name, plugin, "; ".join(v["reasons"]) or v["code"])
                for name, node in attempt["nodes"].items()
                for plugin, v in node["filter"].items()
                if rejects(v)]
    if rejected and all_nodes:
        click.echo("  Rejected nodes:")
        click.echo(table(rejected, ["NODE", "REJECTED BY", "REASONS"], indent=4))
    elif rejected:
        groups = (story["verdict"]["causes"] if decisive else []) or _grouped(attempt)
        click.echo("  Rejected nodes by cause (--all-nodes lists each):")
        click.echo(table([(g["count"], g["cause"], g["detail"], _examples(g)) for g in groups],
                         ["NODES", "CAUSE", "DETAIL", "FOR EXAMPLE"], indent=4))
    for line in device_lines((attempt.get("pluginNotes") or {}).get("DynamicResources")):
        click.echo(f"  {line}")
    preemption = attempt.get("preemption")
    if preemption and preemption.get("nominatedNode"):
        pdb = preemption.get("pdbViolations") or 0
        click.echo(f"  preemption nominated {preemption['nominatedNode']}, evicting "
                   f"{', '.join(preemption['victims'])} ({pdb} PodDisruptionBudget "
                   f"violation(s); best of {preemption['candidates']} candidate node(s))")
    scored = sorted(((n, v) for n, v in attempt["nodes"].items() if "total" in v),
                    key=lambda item: (-item[1]["total"], item[0]))
    if scored:
        free = story.get("decisiveFreeCapacity") if decisive else None
        plugins = list(scored[0][1]["score"])
        headers = ["NODE", "TOTAL", *plugins]
        if free:
            headers += ["FREE CPU", "FREE MEMORY"]
        rows = []
        for name, node in scored[:TOP_SCORES]:
            row = [name, node["total"], *(node["score"][p]["weighted"] for p in plugins)]
            if free:
                room = free.get(name, {})
                row += [units.cores(room.get("cpu", 0)), units.memory(room.get("memory", 0))]
            rows.append(row)
        click.echo(f"  Scores (top {min(TOP_SCORES, len(scored))} of {len(scored)}, weighted):")
        click.echo(table(rows, headers, indent=4))


def device_lines(notes: dict[str, Any] | None) -> list[str]:
    """DynamicResources' notes on an attempt: the devices the pod's claims got, or, when it
    fit nowhere, the devices each request could use."""
    if not notes:
        return []
    lines = []
    claims = ", ".join(f"{c['claim']} ({'allocated already' if c['allocated'] else 'to allocate'})"
                       for c in notes.get("claims") or [])
    lines.append(f"ResourceClaims: {claims}")
    for device in notes.get("devices") or []:
        lines.append(f"  {device['claim']} request {device['request']}: {device['driver']} "
                     f"pool {device['pool']} device {device['device']}")
    for request in notes.get("requests") or []:
        if "error" in request:
            lines.append(f"  {request['claim']} request {request['request']}: {request['error']}")
            continue
        lines.append(f"  {request['claim']} request {request['request']} wants "
                     f"{request['count']} of class {request['deviceClass']}: "
                     f"{request['matching']} device(s) in the cluster match, "
                     f"{request['free']} of them free")
        for pool in request.get("unusablePools") or []:
            lines.append(f"    pool {pool['pool']} cannot be allocated from: {pool['problem']}")
    return lines


def extender_call_line(call: dict[str, Any]) -> str:
    """One extender call: step, extender, nodes sent, latency and how it ended."""
    if call.get("error"):
        outcome = f"failed ({'ignored' if call.get('ignorable') else 'not ignorable'}): " \
                  f"{call['error']}"
    elif call.get("step") == "filter":
        passing = call.get("passing")
        outcome = f"{len(passing or ())} passed"
    else:
        outcome = "answered"
    return (f"extender {call['step']} {call['extender']} ({len(call.get('nodes') or ())} "
            f"node(s), {(call.get('latencyUs') or 0) / 1000:.1f} ms): {outcome}")


def print_story(story: dict[str, Any], attempt_index: int | None, all_nodes: bool) -> None:
    verdict = story["verdict"]
    click.echo(f"{story['pod']} in run {story['run']}")
    click.echo(click.style(verdict["headline"], bold=True))
    recorded = story["recordedNode"]
    if recorded:
        same = "the same node" if recorded == story["boundNode"] else "a different node"
        click.echo(f"The recorded cluster placed it on {recorded} ({same}).")

    click.echo("\nThe pod as the scheduler saw it:")
    click.echo(table(_inputs_lines(verdict["inputs"]), ["", ""], indent=2).split("\n", 1)[-1])

    decisive = verdict["decisiveAttempt"]
    shown = attempt_index if attempt_index is not None else decisive
    if shown is not None:
        _print_attempt(story, shown, shown == decisive, all_nodes)

    if len(story["attempts"]) > 1:
        click.echo("\nAttempts (--attempt N shows one in full):")
        rows = []
        for i, attempt in enumerate(story["attempts"]):
            node = attempt["selectedNode"] or (
                f"nominated {attempt['preemption']['nominatedNode']}"
                if (attempt.get("preemption") or {}).get("nominatedNode") else "")
            message = attempt.get("message") or ""
            if len(message) > MESSAGE_WIDTH:
                message = message[:MESSAGE_WIDTH - 1] + "…"
            marker = "*" if i == decisive else ""
            rows.append((f"{i}{marker}", units.seconds(attempt["t"]), attempt["result"], node,
                         attempt["evaluatedNodes"], attempt["feasibleNodes"],
                         "" if attempt["selectedNode"] else message))
        click.echo(table(rows, ["#", "T", "RESULT", "NODE", "EVALUATED", "FEASIBLE", "MESSAGE"],
                         indent=2))
        if decisive is not None:
            click.echo("  (* the decisive attempt)")

    click.echo("\nQueue:")
    click.echo(table([(units.seconds(q["t"]), q["from"], q["to"], q["event"])
                      for q in story["queue"]], ["T", "FROM", "TO", "EVENT"], indent=2))
    others = [e for e in story["events"] if e["kind"] != "watch"]
    if others:
        click.echo("\nOther events:")
        for event in others:
            detail = {k: v for k, v in event.items()
                      if k not in ("time", "t", "kind", "node", "extenders")}
            words = " ".join(f"{k}={v}" for k, v in detail.items())
            for call in event.get("extenders") or ():
                words += f"; {extender_call_line(call)}"
            click.echo(f"  {units.seconds(event['t'])} {event['kind']} {event['node'] or ''} "
                       f"{words}".rstrip())
