"""``kaudit whatif``: evaluate one pod against a cluster state, every plugin on every node."""

from __future__ import annotations

from pathlib import Path

import click

from kaudit.cli.explain_text import device_lines
from kaudit.cli.options import (
    SEED,
    echo_config_warnings,
    echo_json,
    kubernetes_version_option,
    table,
)
from kaudit.eventlog.codec import rejects
from kaudit.queries import record_text
from kaudit.queries.verdict import scored_winner_first
from kaudit.readers.snapshot import load_objects
from kaudit.scheduler.build import load
from kaudit.services.replay import release_gates
from kaudit.services.versions import fallback_release, resolve_version
from kaudit.services.whatif import WhatIfReport, evaluate_pod, read_pod_manifest

feature_gates_option = click.option(
    "--feature-gates", metavar="A=true,B=false",
    help="Feature gates that change in-tree plugin behaviour, as kube-scheduler takes them "
         "(the gates and defaults of the Kubernetes release mirrored: --kubernetes-version).")
plugin_option = click.option(
    "--plugin", "plugins", multiple=True, metavar="MODULE:CLASS",
    help="Register an out-of-tree plugin class (repeatable); enable it in --config.")


@click.command()
@click.option("--cluster", "cluster_path", required=True, metavar="STATE",
              type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="Cluster state: a Kubernetes List (kubectl get nodes,pods,namespaces,"
                   "services,replicasets -A -o json), JSON or YAML.")
@click.option("--pod", "pod_path", required=True, metavar="POD",
              type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="The Pod manifest to evaluate (JSON or YAML).")
@click.option("--config", "config_path", metavar="FILE",
              type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="A KubeSchedulerConfiguration [default: kube-scheduler's defaults].")
@feature_gates_option
@click.option("--candidates", metavar="NODE,...",
              help="Evaluate only these nodes; the others stay in the cluster (for spreading "
                   "and affinity) but count as having failed filtering.")
@click.option("--seed", type=SEED, default=0, show_default=True,
              help="Seed of the tie-break among top-scoring nodes.")
@plugin_option
@kubernetes_version_option(fallback_release().name)
@click.option("--json", "as_json", is_flag=True, help="Print the evaluation as JSON.")
def whatif(cluster_path: Path, pod_path: Path, config_path: Path | None,
           feature_gates: str | None, candidates: str | None, seed: int,
           plugins: tuple[str, ...], kubernetes_version: str | None, as_json: bool) -> None:
    """Explain where POD would go in the cluster STATE, and why.

    Unlike a real scheduling cycle, every filter plugin runs on every node (not only up to
    the first failure), no nodes are sampled, and a single feasible node is still scored.
    """
    release = resolve_version(kubernetes_version).version
    config, registry = load(config_path, release_gates(feature_gates, release), plugins)
    echo_config_warnings(config)
    pod = read_pod_manifest(pod_path)
    names = [n.strip() for n in candidates.split(",") if n.strip()] if candidates else None
    report = evaluate_pod(load_objects(cluster_path), pod, config, registry,
                          pod_source=str(pod_path), seed=seed, candidates=names)
    if as_json:
        # The evaluation's own ``preemption`` (candidates, victims, PDB violations) stands.
        echo_json({"pod": report.pod, **report.evaluation, "causes": report.causes,
                   "sentences": report.sentences,
                   "kubernetesVersion": report.kubernetes_version})
        return
    _print_report(report)


def _print_report(report: WhatIfReport) -> None:
    """The evaluation as text: the sentences and cause groups the service worded through
    :mod:`kaudit.queries.verdict_text`, as ``kaudit explain`` and the pod page word a replayed
    attempt, and the history page's what-if words this one."""
    evaluation, sentences = report.evaluation, report.sentences
    click.echo(f"Pod {report.pod}, profile {evaluation['profile']}, "
               f"{report.node_count} nodes, Kubernetes {report.kubernetes_version}\n")
    if evaluation["preFilter"]:
        click.echo("PreFilter: " + ", ".join(
            f"{name} {entry['code']}" + (f" ({'; '.join(entry['reasons'])})"
                                         if entry["reasons"] else "")
            for name, entry in evaluation["preFilter"].items()))
    rows = []
    for name, node in evaluation["nodes"].items():
        failed = [f"{plugin}: {'; '.join(v['reasons']) or v['code']}"
                  for plugin, v in node["filter"].items()
                  if rejects(v)]
        rows.append((name, "yes" if node["feasible"] else "no", node.get("total", ""),
                     " | ".join(failed)))
    rows.sort(key=lambda r: (r[1] != "yes", -(r[2] if isinstance(r[2], int) else 0), r[0]))
    if rows:
        click.echo(table(rows, ["NODE", "FEASIBLE", "SCORE", "FAILED FILTERS"]))
    click.echo(f"\n{sentences['nodeCounts']}")
    if report.causes:
        click.echo(f"{sentences['causesTitle']}:")
        click.echo(table([(c["count"], c["cause"], c["detail"], c["examples"])
                          for c in report.causes],
                         ["NODES", "CAUSE", "DETAIL", "FOR EXAMPLE"], indent=2))
    elif sentences["causesNote"]:
        click.echo(sentences["causesNote"])
    calls = evaluation.get("extenderCalls") or []
    if calls:
        click.echo("\nExtender calls:")
        for call in calls:
            click.echo(f"  {record_text.extender_call(call)}")
    feasible = [(n, v) for n, v in scored_winner_first(evaluation) if v["feasible"]]
    if feasible:
        plugins = list(feasible[0][1]["score"])
        click.echo("\nTop nodes, the selected first, weighted score per plugin "
                   "(normalized × weight):")
        click.echo(table(
            [(n, v["total"], *(v["score"][p]["weighted"] for p in plugins))
             for n, v in feasible[:5]],
            ["NODE", "TOTAL", *plugins], indent=2))
    click.echo(f"\n{sentences['headline']}")
    for line in device_lines((evaluation.get("pluginNotes") or {}).get("DynamicResources")):
        click.echo(line)
    if sentences["preemption"]:
        click.echo(sentences["preemption"])
