"""``kaudit config``: inspect scheduler configurations.

``show`` is kaudit's counterpart of ``kube-scheduler --config F --write-config-to -``
(``cmd/kube-scheduler/app/options``): the configuration after defaulting, with each
profile's plugin lists already expanded as the framework runs them.
"""

from __future__ import annotations

from pathlib import Path

import click
import yaml

from kaudit import KUBERNETES_VERSION
from kaudit.cli.options import echo_config_warnings, echo_json, json_option
from kaudit.cli.whatif import plugin_option
from kaudit.config import FeatureGates, parse_feature_gates
from kaudit.errors import ConfigError
from kaudit.scheduler.build import load


def _gates(text: str) -> FeatureGates:
    try:
        return parse_feature_gates(text)
    except ConfigError as exc:
        raise ConfigError(f"--feature-gates: {exc}") from None


@click.group()
def config() -> None:
    """Inspect KubeSchedulerConfiguration files (kubescheduler.config.k8s.io/v1)."""


@config.command(short_help="Print the effective scheduler configuration.")
@click.argument("file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--feature-gates", "feature_gates", default="", metavar="A=true,B=false",
              help="Feature gates, as kube-scheduler's --feature-gates takes them.")
@plugin_option
@json_option
def show(file: Path | None, feature_gates: str, plugins: tuple[str, ...], as_json: bool) -> None:
    """Print the effective configuration: FILE (YAML or JSON) after defaulting, or
    kube-scheduler's defaults without FILE.

    Each profile lists the plugins that run at every extension point, in order, with the
    score weights and the defaulted args of every plugin.
    """
    gates = _gates(feature_gates)
    effective, _ = load(file, gates, plugins)
    echo_config_warnings(effective)
    document = effective.to_dict()
    if as_json:
        echo_json(document)
        return
    header = [f"# Effective configuration of {file or 'kube-scheduler defaults'} "
              f"(Kubernetes {KUBERNETES_VERSION})"]
    changed = gates.non_default()
    if changed:
        header.append("# feature gates: " + ",".join(f"{k}={str(v).lower()}"
                                                     for k, v in changed.items()))
    click.echo("\n".join(header))
    click.echo(yaml.safe_dump(document, sort_keys=False, default_flow_style=False), nl=False)
