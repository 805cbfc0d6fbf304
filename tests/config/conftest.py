"""Helpers for the configuration tests: write a config file and load it, as v1.34.2 (whose
upstream tables and messages the cases are taken from) unless gates of another release are
given."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kaudit import versions
from kaudit.config import FeatureGates, PluginSpec, SchedulerConfiguration
from kaudit.config import load as config_load
from kaudit.errors import ConfigError
from kaudit.scheduler.registry import plugin_specs
from tests.conftest import V1_34

#: The release the configuration tests load as.
RELEASE = versions.get(V1_34)


def v1_34_gates(overrides: dict[str, bool] | None = None) -> FeatureGates:
    """``overrides`` over :data:`RELEASE`'s gates."""
    return FeatureGates(overrides, RELEASE)

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def load_configuration(path: Path | None = None, *, feature_gates: FeatureGates | None = None,
                       extra_plugins: dict[str, PluginSpec] | None = None
                       ) -> SchedulerConfiguration:
    """The configuration layer's loader with the in-tree plugins' specs (plus ``extra_plugins``),
    as the scheduler calls it."""
    return config_load.load_configuration(
        path, plugins={**plugin_specs(), **(extra_plugins or {})},
        feature_gates=feature_gates or v1_34_gates())


def load_object(obj: Any, source: str, *, feature_gates: FeatureGates | None = None
                ) -> SchedulerConfiguration:
    return config_load.load_object(obj, source, plugins=plugin_specs(),
                                   feature_gates=feature_gates or v1_34_gates())


@pytest.fixture
def load_yaml(tmp_path: Path) -> Callable[..., SchedulerConfiguration]:
    """Load YAML text (``HEADER`` is prepended unless ``header=False``) from config.yaml."""

    def load(text: str, *, header: bool = True, **kwargs: Any) -> SchedulerConfiguration:
        path = tmp_path / "config.yaml"
        path.write_text((HEADER if header else "") + textwrap.dedent(text))
        return load_configuration(path, **kwargs)

    return load


@pytest.fixture
def config_error(tmp_path: Path,
                 load_yaml: Callable[..., SchedulerConfiguration]) -> Callable[..., str]:
    """The ConfigError message of loading YAML text, with the tmp directory stripped."""

    def error(text: str, **kwargs: Any) -> str:
        with pytest.raises(ConfigError) as info:
            load_yaml(text, **kwargs)
        return str(info.value).replace(f"{tmp_path}/", "")

    return error
