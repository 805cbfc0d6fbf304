"""A run warns once per feature its release turns on and kaudit does not model, at its first
use in the trace: on stderr (``--json`` stays JSON), in the run's summary, in ``kaudit runs``.

The trace is the GPU cluster of ``traces/dra-gpu.jsonl`` (smaller) with objects that use two
such features: two ResourceSlices whose devices have binding conditions
(DRADeviceBindingConditions, warned about once, naming the first) and a DeviceClass backing an
extended resource (DRAExtendedResource). Slices with capacity request policies, a
DeviceTaintRule and a request's tolerations are no warning at v1.37: kaudit models consumable
capacity, device taints and DeviceTaintRules there. The sample traces use none.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import Result
from sqlalchemy import Engine

from kaudit.datadirs import sample_trace
from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.replay.engine import Replay
from kaudit.replay.run import options_for
from kaudit.scheduler.build import load, scheduler_factory
from kaudit.store.traces import get_trace, iter_events
from kaudit.tracegen.dra import (
    DRIVER,
    claim_spec,
    claim_template,
    exact_request,
    gpu,
    gpu_cluster_events,
    resource_slice,
    write_events,
)
from tests.conftest import gates_at

JSON = dict[str, Any]
TRACES = Path(__file__).resolve().parents[2] / "traces"
NOT_MODELLED = "which kaudit does not model"


def _shared_gpus(node: str) -> JSON:
    device = gpu(0, "A100", "80Gi", "pci-0")
    device["capacity"]["memory"]["requestPolicy"] = {
        "default": "10Gi", "validRange": {"min": "1Gi", "step": "1Gi"}}
    return resource_slice(f"{node}-slice", DRIVER, f"{node}-shared", [device], node=node)


TAINT_RULE: JSON = {
    "apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule",
    "metadata": {"name": "drain-gpu-node-0000", "uid": "rule-0"},
    "spec": {"deviceSelector": {"driver": DRIVER, "pool": "gpu-node-0000"},
             "taint": {"key": "example.com/maintenance", "effect": "NoSchedule"}}}


def _attached_gpu(node: str) -> JSON:
    device = gpu(1, "A100", "80Gi", "pci-1")
    device["bindingConditions"] = ["gpu.example.com/attached"]
    device["bindingFailureConditions"] = ["gpu.example.com/attach-failed"]
    return resource_slice(f"{node}-attached", DRIVER, f"{node}-attached", [device], node=node)


EXTENDED_CLASS: JSON = {
    "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
    "metadata": {"name": "gpu-ext", "uid": "class-ext"},
    "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}],
             "extendedResourceName": "example.com/gpu"}}


def _tolerating_template() -> JSON:
    request = exact_request("gpu", "gpu.example.com")
    request["exactly"]["tolerations"] = [{"key": "example.com/maintenance",
                                          "operator": "Exists", "effect": "NoSchedule"}]
    return claim_template("tolerant-gpu", claim_spec(request))


@pytest.fixture
def trace_file(tmp_path: Path) -> Path:
    events = gpu_cluster_events(nodes=2, pods=4, gpus_per_node=2)
    events += [(0.5, "ADDED", _shared_gpus("gpu-node-0001")),
               (0.5, "ADDED", _shared_gpus("gpu-node-0000")),
               (0.6, "ADDED", TAINT_RULE),
               (0.7, "ADDED", _attached_gpu("gpu-node-0001")),
               (0.7, "ADDED", _attached_gpu("gpu-node-0000")),
               (3.5, "ADDED", _tolerating_template()),
               (3.6, "ADDED", EXTENDED_CLASS)]
    events.sort(key=lambda event: event[0])
    path = tmp_path / "unmodelled.jsonl"
    write_events(path, events)
    return path


def _line_of(path: Path, name: str) -> int:
    for number, line in enumerate(path.read_bytes().splitlines(), 1):
        if orjson.loads(line)["object"]["metadata"]["name"] == name:
            return number
    raise AssertionError(name)


def _warnings(text: str) -> list[str]:
    return [line for line in text.splitlines() if NOT_MODELLED in line]


def test_a_run_warns_once_per_feature_on_stderr_and_keeps_it(
        engine: Engine, trace_file: Path, run_kaudit: Callable[..., Result]) -> None:
    ingest_trace(engine, [TraceInput(trace_file)], name="unmodelled")
    result = run_kaudit("replay", "unmodelled", "--json")
    assert result.exit_code == 0, result.output
    run = json.loads(result.stdout)  # stdout is the JSON alone
    assert run["status"] == "complete" and run["kubernetesVersion"] == "v1.37.2"

    warned = _warnings(result.stderr)
    assert len(warned) == 2, result.stderr
    line = _line_of(trace_file, "gpu-node-0001-attached")
    assert warned[0].startswith(
        f"kaudit: warning: Kubernetes v1.37.2 turns on DRADeviceBindingConditions, "
        f"{NOT_MODELLED}: ResourceSlice gpu-node-0001-attached uses it (device "
        f"bindingConditions, at {trace_file}:{line}); kaudit schedules as with the gate "
        "off: "), warned[0]
    assert sum("DRADeviceBindingConditions" in w for w in warned) == 1  # the second: quiet
    assert any("DRAExtendedResource" in w and "DeviceClass gpu-ext uses it "
               "(spec.extendedResourceName" in w for w in warned)
    assert not any("Taint" in w or "Capacity" in w for w in warned)  # modelled at v1.37

    found = run["summary"]["unmodelledFeatures"]
    assert [(f["gate"], f["kind"], f["namespace"], f["name"]) for f in found] == [
        ("DRADeviceBindingConditions", "ResourceSlice", None, "gpu-node-0001-attached"),
        ("DRAExtendedResource", "DeviceClass", None, "gpu-ext")]
    assert found[0]["line"] == line and found[0]["source"] == 0 and found[0]["traceSeq"] >= 0
    assert [f"kaudit: warning: {f['message']}" for f in found] == warned

    shown = run_kaudit("runs", run["name"])
    assert shown.exit_code == 0, shown.output
    assert [f"  warning: {f['message']}" for f in found] == \
        [line for line in shown.stdout.splitlines() if line.startswith("  warning: ")]
    as_json = run_kaudit("runs", run["name"], "--json")
    assert json.loads(as_json.stdout)["summary"]["unmodelledFeatures"] == found


def test_a_release_with_the_gates_off_warns_of_nothing(
        engine: Engine, trace_file: Path, run_kaudit: Callable[..., Result]) -> None:
    ingest_trace(engine, [TraceInput(trace_file)], name="unmodelled")
    result = run_kaudit("replay", "unmodelled", "--kubernetes-version", "v1.34.2", "--json")
    assert result.exit_code == 0, result.output
    run = json.loads(result.stdout)
    assert _warnings(result.stderr) == [] and "unmodelledFeatures" not in run["summary"]
    shown = run_kaudit("runs", run["name"])
    assert "warning:" not in shown.stdout


@pytest.mark.parametrize("path", [sample_trace(), TRACES / "dra-gpu.jsonl"],
                         ids=["sample", "dra-gpu"])
def test_the_sample_traces_use_no_unmodelled_feature(
        engine: Engine, run_kaudit: Callable[..., Result], path: Path) -> None:
    ingest_trace(engine, [TraceInput(path)], name="t")
    result = run_kaudit("replay", "t", "--json")
    assert result.exit_code == 0, result.output
    assert _warnings(result.output) == []
    assert "unmodelledFeatures" not in json.loads(result.stdout)["summary"]


def test_the_engine_reports_each_feature_once_without_a_database_run(
        engine: Engine, trace_file: Path) -> None:
    """The engine alone (a MemorySink replay, as benchmarks and what-ifs use it) finds the
    same first uses; without the trace's paths it names the event instead."""
    from kaudit.eventlog.sink import MemorySink

    ingest_trace(engine, [TraceInput(trace_file)], name="unmodelled")
    trace = get_trace(engine, "unmodelled")
    config, registry = load(None, gates_at("v1.37.2"))
    summary = Replay(scheduler_factory(config, registry), MemorySink(),
                     options_for(config)).run(iter_events(engine, trace.id))
    assert [f["gate"] for f in summary.unmodelled_features] == [
        "DRADeviceBindingConditions", "DRAExtendedResource"]
    first = summary.unmodelled_features[0]
    assert f"(device bindingConditions, at trace event {first['traceSeq']})" in \
        summary.warnings[0]


def test_compare_and_audit_warn_on_stderr_too(
        engine: Engine, trace_file: Path, run_kaudit: Callable[..., Result]) -> None:
    ingest_trace(engine, [TraceInput(trace_file)], name="unmodelled")
    compared = run_kaudit("compare", "unmodelled", "--kubernetes-version", "v1.34",
                          "--kubernetes-version", "v1.37")
    assert compared.exit_code == 0, compared.output
    gates = [w.split(" turns on ")[1].split(",")[0] for w in _warnings(compared.stderr)]
    assert gates == ["DRADeviceBindingConditions", "DRAExtendedResource"]
    assert _warnings(compared.stdout) == []
    audited = run_kaudit("audit", "unmodelled")
    assert len(_warnings(audited.stderr)) == 2, audited.output
