"""The sweep spec: what it accepts, and errors that name the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from kaudit.errors import InputError
from kaudit.sweep.spec import CellSpec, merge_patch, read_spec

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "traces" / "sample.jsonl"
BIN_PACKING = REPO / "traces" / "sample-bin-packing.yaml"


def _spec(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    return path


def test_a_product_of_traces_configs_and_seeds(tmp_path: Path) -> None:
    (tmp_path / "sample.jsonl").write_bytes(SAMPLE.read_bytes())
    spec = read_spec(_spec(tmp_path, f"""
name: tuning
traces:
  - files: [sample.jsonl]          # relative to the spec
  - name: stored
    trace: some-stored-trace
configs:
  - name: default
  - file: {BIN_PACKING}
  - name: fewer-nodes
    patch: {{percentageOfNodesToScore: 50}}
    replay: {{tieBreak: name}}
seeds: 1-3
replay: {{oneTry: true}}
baseline: sample-bin-packing
"""))
    assert spec.name == "tuning"
    assert [t.label for t in spec.traces] == ["sample", "stored"]
    assert spec.traces[0].files == (tmp_path / "sample.jsonl",)
    assert spec.traces[1].stored == "some-stored-trace"
    assert [c.label for c in spec.configs] == ["default", "sample-bin-packing", "fewer-nodes"]
    assert spec.configs[2].document["percentageOfNodesToScore"] == 50
    assert spec.configs[2].document["kind"] == "KubeSchedulerConfiguration"
    assert spec.configs[2].replay == {"tieBreak": "name"}
    assert spec.seeds == (1, 2, 3)
    assert spec.replay == {"oneTry": True}
    assert spec.baseline == "sample-bin-packing"
    assert len(spec.cells) == 2 * 3 * 3
    assert spec.cells[0] == CellSpec("sample", "default", 1)


def test_explicit_cells_and_the_seed_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    monkeypatch.setenv("KAUDIT_TEST_TRACES", str(SAMPLE.parent))
    spec = read_spec(_spec(tmp_path, """
traces:
  - name: t
    files: ["${KAUDIT_TEST_TRACES}/sample.jsonl"]
    alibaba: {shuffle: true, seed: "{seed}"}
configs: [{name: a}, {name: b}]
cells:
  - {config: a, seed: 7}
  - {config: b, seed: 8}
"""))
    assert spec.name == "spec"
    assert spec.traces[0].files == (SAMPLE,)
    assert spec.traces[0].per_seed
    assert spec.cells == (CellSpec("t", "a", 7), CellSpec("t", "b", 8))


@pytest.mark.parametrize(("text", "message"), [
    ("traces: [x]\nconfig: []\n", "spec.yaml: unknown field 'config'"),
    ("configs: [{name: a}]\n", "spec.yaml: traces: expected a non-empty list, got nothing"),
    ("traces: [{files: [missing.jsonl]}]\n",
     "spec.yaml: traces[0].files[0]: no such file"),
    ("traces: [{files: [$NO_SUCH_VARIABLE_HERE/x.csv]}]\n",
     "traces[0].files[0]: environment variable NO_SUCH_VARIABLE_HERE is not set"),
    ("traces: [x]\nseeds: 5-1\n", "spec.yaml: seeds: '5-1': the range is empty"),
    ("traces: [x]\nseeds: [1, 1]\n", "seeds: a seed is listed twice"),
    ("traces: [x]\nseeds: [1, true]\n", "seeds[1]: expected an integer, got a boolean"),
    ("traces: [x]\nconfigs: [{name: a}, {name: a}]\n", "configs[1].name: 'a' is used twice"),
    ("traces: [x]\nbaseline: nope\n", "baseline: 'nope' is not one of the configs"),
    ("traces: [x]\nreplay: {tieBreak: lowest}\n",
     "replay.tieBreak: 'lowest': expected one of random, name, shuffled-name"),
    ("traces: [x]\nreplay: {bindLatency: -1}\n", "replay.bindLatency: -1 seconds"),
    ("traces: [x]\nconfigs: [{file: a.yaml, patch: {}}]\n", "configs[0]: give file, or base"),
    ("traces: [{trace: x, format: watch}]\n",
     "traces[0].format: applies to files, not a stored trace"),
    ("traces: [x]\ncells: [{config: zz}]\n", "cells[0].config: 'zz' is not one of the configs"),
    ("traces: [{name: 'a b', trace: x}]\n", "traces[0].name: 'a b' is not a label"),
    ("traces: [x]\nkind: Job\n", "kind: 'Job': expected Sweep"),
    ("traces: [x\n", "spec.yaml:"),
    ("- a\n", "spec.yaml: expected a mapping, got a list"),
    ("traces: [{files: []}]\n", "traces[0]: give either trace"),
    ("traces: [x]\ncells: [{trace: [a]}]\n", "cells[0].trace: expected a trace's name, got a "
                                              "list"),
    ("traces: [{name: a, trace: x}, {name: b, trace: y}]\ncells: [{seed: 1}]\n",
     "cells[0].trace: expected a trace's name (the spec has several traces)"),
    ("traces: [x]\nseeds: [9223372036854775808]\n",
     "seeds[0]: 9223372036854775808 is beyond a 64-bit integer"),
    ("traces: [x]\nseeds: 1-3000000000\n", "3,000,000,000 seeds; at most 100,000 cells"),
    ("traces: [x]\nname: \"abc\\n\"\n", "name: 'abc\\n' is not a label"),
    ("traces: [x]\nreplay: {apiLatency: .nan}\n", "replay.apiLatency: nan seconds"),
])
def test_errors_name_the_file_and_the_field(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(InputError) as caught:
        read_spec(_spec(tmp_path, text))
    assert message in str(caught.value)


def test_a_configuration_file_that_is_not_yaml_is_named(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("profiles: [\n")
    with pytest.raises(InputError, match=r"configs\[0\]\.file: .*bad\.yaml:2"):
        read_spec(_spec(tmp_path, "traces: [x]\nconfigs: [bad.yaml]\n"))


def test_merge_patch_follows_rfc_7386() -> None:
    base = {"a": {"b": 1, "c": [1, 2]}, "d": 1}
    assert merge_patch(base, {"a": {"b": None, "c": [3]}, "e": {"f": 1}}) == {
        "a": {"c": [3]}, "d": 1, "e": {"f": 1}}
    assert base == {"a": {"b": 1, "c": [1, 2]}, "d": 1}


@pytest.mark.parametrize("step", [".nan", ".inf", "-1"])
def test_a_step_must_be_finite(tmp_path: Path, step: str) -> None:
    (tmp_path / "t.jsonl").write_bytes(SAMPLE.read_bytes())
    with pytest.raises(InputError, match=r"traces\[0\]\.step: .* seconds: expected 0 to 86400"):
        read_spec(_spec(tmp_path, f"traces: [{{files: [t.jsonl], step: {step}}}]\n"))
