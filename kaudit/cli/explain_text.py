"""``kaudit explain`` as text: the verdict first, then the evidence, then the whole story.

Reads only the :func:`kaudit.queries.explain.explain_pod` document and words it through
:mod:`kaudit.queries.verdict_text` and :mod:`kaudit.queries.record_text` (most sentences come
ready-made in the document), so the text states exactly what ``--json`` and the pod page state.
"""

from __future__ import annotations

from typing import Any

import click

from kaudit.cli.options import table
from kaudit.eventlog.codec import rejects
from kaudit.queries import record_text, units, verdict_text
from kaudit.queries.verdict import plain_causes, scored_winner_first

#: Rows of the shown attempt's score table.
TOP_SCORES = 5
#: Characters of an attempt's message in the attempts table.
MESSAGE_WIDTH = 90


def _print_attempt(story: dict[str, Any], number: int, decisive: bool, all_nodes: bool) -> None:
    attempt = story["attempts"][number - 1]
    label = "Decisive attempt" if decisive else "Attempt"
    click.echo(f"\n{label} #{number} at {attempt['momentText']}, cycle {attempt['cycle']}: "
               f"{attempt['countsText']}")
    if attempt["outcomeText"]:
        click.echo(f"  {attempt['outcomeText']}")
    for call in attempt.get("extenderCalls") or []:
        click.echo(f"  {record_text.extender_call(call)}")
    rejected = [(name, plugin, "; ".join(v["reasons"]) or v["code"])
                for name, node in attempt["nodes"].items()
                for plugin, v in node["filter"].items()
                if rejects(v)]
    groups = (story["verdict"]["causes"] if decisive
              else attempt["causes"] if "causes" in attempt else plain_causes(attempt["nodes"]))
    if rejected and all_nodes:
        click.echo("  Rejected nodes:")
        click.echo(table(rejected, ["NODE", "REJECTED BY", "REASONS"], indent=4))
    elif groups:
        click.echo("  Rejected nodes by cause (--all-nodes lists each):")
        click.echo(table([(g["count"], g["cause"], g["detail"], g["examples"]) for g in groups],
                         ["NODES", "CAUSE", "DETAIL", "FOR EXAMPLE"], indent=4))
    else:
        note = (story["verdict"]["causesNote"] if decisive
                else verdict_text.causes_note(attempt, groups))
        if note:
            click.echo(f"  {note}")
    for line in attempt["deviceLines"]:
        click.echo(f"  {line}")
    if attempt["preemptionText"]:
        click.echo(f"  {attempt['preemptionText']}")
    scored = scored_winner_first(attempt)
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
                row += [units.quantity("cpu", room.get("cpu", 0)),
                        units.quantity("memory", room.get("memory", 0))]
            rows.append(row)
        click.echo(f"  Scores (the selected node first, then the top of {len(scored)}, "
                   "weighted):")
        click.echo(table(rows, headers, indent=4))


def device_lines(notes: dict[str, Any] | None) -> list[str]:
    """DynamicResources' notes on an attempt (:func:`kaudit.queries.record_text.device_lines`),
    request lines indented under the claims line."""
    lines = record_text.device_lines(notes)
    return lines[:1] + [f"  {line}" for line in lines[1:]]


def extender_call_line(call: dict[str, Any]) -> str:
    """One extender call (:func:`kaudit.queries.record_text.extender_call`)."""
    return record_text.extender_call(call)


def print_story(story: dict[str, Any], attempt_number: int | None, all_nodes: bool) -> None:
    """The story in text; ``attempt_number`` (from 1) is shown in full instead of the
    decisive attempt."""
    verdict = story["verdict"]
    click.echo(f"{story['pod']} in run {story['run']}")
    click.echo(click.style(verdict["headline"], bold=True))
    for sentence in verdict.get("summary") or []:
        click.echo(f"  {sentence}")
    recorded = story["recordedNode"]
    if recorded:
        same = "the same node" if recorded == story["boundNode"] else "a different node"
        click.echo(f"The recorded cluster placed it on {recorded} ({same}).")

    click.echo("\nThe pod as the scheduler saw it:")
    click.echo(table([tuple(line) for line in verdict["inputsLines"]], ["", ""],
                     indent=2).split("\n", 1)[-1])

    decisive = verdict["decisiveAttempt"]
    shown = attempt_number if attempt_number is not None else decisive
    if shown is not None:
        _print_attempt(story, shown, shown == decisive, all_nodes)
    elif verdict.get("attemptsNote"):
        click.echo(f"\n{verdict['attemptsNote']}")

    if len(story["attempts"]) > 1:
        click.echo("\nAttempts (--attempt N shows one in full):")
        rows = []
        for attempt in story["attempts"]:
            node = attempt["selectedNode"] or (
                f"nominated {attempt['preemption']['nominatedNode']}"
                if (attempt.get("preemption") or {}).get("nominatedNode") else "")
            message = attempt.get("message") or ""
            if len(message) > MESSAGE_WIDTH:
                message = message[:MESSAGE_WIDTH - 1] + "…"
            marker = "*" if attempt["attempt"] == decisive else ""
            rows.append((f"{attempt['attempt']}{marker}", units.seconds(attempt["t"]),
                         attempt["result"], node,
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
            click.echo(f"  {units.seconds(event['t'])}  {event['text']}")
