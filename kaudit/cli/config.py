"""``kaudit config``: inspect scheduler configurations.

``show`` is kaudit's counterpart of ``kube-scheduler --config F --write-config-to -``
(``cmd/kube-scheduler/app/options``): the configuration after defaulting, with each
profile's plugin lists already expanded as the framework runs them.
"""

from __future__ import annotations

from pathlib import Path

import click
import yaml

from kaudit.cli.options import (
    echo_config_warnings,
    echo_json,
    json_option,
    kubernetes_version_option,
)
from kaudit.cli.whatif import plugin_option
from kaudit.config import FeatureGates, parse_feature_gates
from kaudit.errors import ConfigError
from kaudit.scheduler.build import load
from kaudit.services.versions import fallback_release, resolve_version
from kaudit.versions import KubernetesVersion


def _gates(text: str, version: KubernetesVersion) -> FeatureGates:
    try:
        return parse_feature_gates(text, version)
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
@kubernetes_version_option(fallback_release().name)
@json_option
def show(file: Path | None, feature_gates: str, plugins: tuple[str, ...],
         kubernetes_version: str | None, as_json: bool) -> None:
    """Print the effective configuration: FILE (YAML or JSON) after defaulting, or
    kube-scheduler's defaults without FILE, as kube-scheduler of the Kubernetes release
    --kubernetes-version names.

    Each profile lists the plugins that run at every extension point, in order, with the
    score weights and the defaulted args of every plugin.
    """
    release = resolve_version(kubernetes_version).version
    gates = _gates(feature_gates, release)
    effective, _ = load(file, gates, plugins)
    echo_config_warnings(effective)
    document = effective.to_dict()
    if as_json:
        echo_json(document)
        return
    header = [f"# Effective configuration of {file or 'kube-scheduler defaults'} "
              f"(Kubernetes {release.name})"]
    changed = gates.non_default()
    if changed:
        header.append("# feature gates: " + ",".join(f"{k}={str(v).lower()}"
                                                     for k, v in changed.items()))
    click.echo("\n".join(header))
    click.echo(yaml.safe_dump(document, sort_keys=False, default_flow_style=False), nl=False)
