"""The FGD paper's table as a shipped sweep spec: its six configurations are the paper's, and
the spec asks for the paper's protocol."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kaudit.fgd.paper import POLICIES, paper_configuration
from kaudit.sweep.spec import SEED_TOKEN, read_spec
from tests.sweep.conftest import REPO

FGD = REPO / "traces" / "fgd-paper"


@pytest.mark.parametrize("policy", list(POLICIES))
def test_each_shipped_configuration_is_the_papers(policy: str) -> None:
    assert yaml.safe_load((FGD / f"{policy}.yaml").read_text()) == paper_configuration(policy)


def test_the_spec_is_the_papers_protocol(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                         ) -> None:
    for name in ("openb_node_list_gpu_node.csv", "openb_pod_list_default.csv"):
        (tmp_path / name).write_text("")
    monkeypatch.setenv("OPENB_CSV", str(tmp_path))
    spec = read_spec(FGD / "sweep.yaml")
    assert spec.name == "fgd-paper" and spec.baseline == "BestFit"
    assert [c.label for c in spec.configs] == list(POLICIES)
    assert spec.seeds == tuple(range(42, 52)) and len(spec.cells) == 60
    (trace,) = spec.traces
    assert trace.format == "alibaba"
    assert trace.alibaba == {"shuffle": True, "seed": SEED_TOKEN, "gpuLoad": 1.3,
                             "deletions": False, "gpuSharing": "milli"}
    assert spec.replay == {"oneTry": True, "gpuReport": True, "tieBreak": "shuffled-name"}
    assert spec.reference is not None
    assert spec.reference["metric"] == "gpuUnallocatedAt100"
    assert spec.reference["values"]["FGD"] == 4.8


def test_the_spec_says_which_variable_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    from kaudit.errors import InputError

    monkeypatch.delenv("OPENB_CSV", raising=False)
    with pytest.raises(InputError, match=r"traces\[0\]\.files\[0\]: environment variable "
                                         r"OPENB_CSV is not set"):
        read_spec(FGD / "sweep.yaml")
