"""Helpers for the configuration tests: write a config file and load it."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kaudit.config import SchedulerConfiguration, load_configuration
from kaudit.errors import ConfigError

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


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
