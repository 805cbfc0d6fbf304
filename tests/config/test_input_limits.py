"""One validation for every door: what ``config show`` accepts, ``replay`` runs (int64
backoffs, extender TLS settings), and configuration files meet the input limits."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kaudit.cli import cli

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
EXTENDER = ("extenders:\n- urlPrefix: https://127.0.0.1:1\n  filterVerb: filter\n"
            "  enableHTTPS: true\n  tlsConfig: ")
TRACE = [{"ts": 0, "type": "ADDED", "object": {
    "apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "uid": "n1"},
    "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"}}}},
    {"ts": 1, "type": "ADDED", "object": {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default",
                                                        "uid": "p"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "8"}}}]}}}]


def _replay(tmp_path: Path, config: Path) -> tuple[int, str]:
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps(line) + "\n" for line in TRACE))
    db = f"sqlite:///{tmp_path}/k.db"
    runner = CliRunner()
    ingested = runner.invoke(cli, ["ingest", str(trace), "--db", db], catch_exceptions=False)
    assert ingested.exit_code == 0, ingested.output
    replayed = runner.invoke(cli, ["replay", "t", "--config", str(config), "--json",
                                   "--db", db], catch_exceptions=False)
    return replayed.exit_code, replayed.output


@pytest.mark.parametrize(("tls", "message"), [
    ("{insecure: true, caData: aGVsbG8=}",
     "extenders[0].tlsConfig.insecure: Invalid value: true: specifying a root certificates "
     "file with the insecure flag is not allowed"),
    ("{certData: aGVsbG8=}",
     "extenders[0].tlsConfig.keyFile: Required value: a client certificate needs both a "
     "certificate (certFile or certData) and a key (keyFile or keyData)"),
    ("{keyFile: /k.pem}",
     "extenders[0].tlsConfig.certFile: Required value: a client certificate needs both a "
     "certificate (certFile or certData) and a key (keyFile or keyData)"),
])
def test_config_show_and_replay_refuse_the_same_extender_tls_settings(
        tls: str, message: str, tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(HEADER + EXTENDER + tls + "\n")
    shown = CliRunner().invoke(cli, ["config", "show", str(config)], catch_exceptions=False)
    assert (shown.exit_code, shown.output.strip()) == (2, f"kaudit: error: {config}: {message}")
    code, output = _replay(tmp_path, config)
    assert (code, output.strip().splitlines()[-1]) == (2, f"kaudit: error: {config}: {message}")


def test_the_largest_int64_backoff_is_accepted_and_replays_to_the_end(tmp_path: Path) -> None:
    """Upstream validates the backoffs as positive int64s only; its Duration arithmetic would
    overflow, kaudit's saturates at the longest duration and says so."""
    config = tmp_path / "config.yaml"
    config.write_text(HEADER + "podInitialBackoffSeconds: 9223372036854775807\n"
                      "podMaxBackoffSeconds: 9223372036854775807\n")
    shown = CliRunner().invoke(cli, ["config", "show", str(config)], catch_exceptions=False)
    assert shown.exit_code == 0, shown.output
    assert "podInitialBackoffSeconds: 9223372036854775807 is beyond the longest duration" \
        in shown.output
    code, output = _replay(tmp_path, config)
    assert code == 0, output
    assert json.loads(output[output.index("{"):])["status"] == "complete"


@pytest.mark.parametrize(("text", "reason"), [
    (HEADER + "parallelism: " + "9" * 5000 + "\n",
     ":3: integer 9999999999…(5000 digits) is beyond the 64-bit range"),
    (HEADER + "parallelism: !!binary aGVsbG8=\n", ":3: tag !!binary is not allowed"),
    ('{"apiVersion": "kubescheduler.config.k8s.io/v1",\t"parallelism": 1e400}',
     ": parallelism: inf is not a finite number"),
    ('{"apiVersion": "kubescheduler.config.k8s.io/v1",\t"parallelism": ' + "9" * 5000 + "}",
     ": integer 9999999999…(5000 digits) is beyond the 64-bit range"),
])
def test_configuration_files_meet_the_input_limits(text: str, reason: str,
                                                   tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(text)
    shown = CliRunner().invoke(cli, ["config", "show", str(config)], catch_exceptions=False)
    assert shown.exit_code == 2, shown.output
    assert shown.output.startswith(f"kaudit: error: {config}{reason}"), shown.output


# A configuration's every door agrees: config show accepts exactly what replay runs.
INT_EDGES = st.sampled_from([0, -1, 1, 100, 101, 2**31 - 1, 2**31, 2**63 - 1, 2**63, -(2**63)])


def _top_level(name: str) -> Callable[[dict[str, Any], int], None]:
    def put(document: dict[str, Any], value: int) -> None:
        document[name] = value
    return put


def _profile(plugin_config: Callable[[int], dict[str, Any]]
             ) -> Callable[[dict[str, Any], int], None]:
    def put(document: dict[str, Any], value: int) -> None:
        document["profiles"] = [{"schedulerName": "default-scheduler", **plugin_config(value)}]
    return put


SETTERS: dict[str, Callable[[dict[str, Any], int], None]] = {
    **{name: _top_level(name) for name in ("podInitialBackoffSeconds", "podMaxBackoffSeconds",
                                           "parallelism", "percentageOfNodesToScore")},
    "extender weight": lambda document, weight: document.update(extenders=[{
        "urlPrefix": "http://127.0.0.1:9", "prioritizeVerb": "prioritize", "weight": weight,
        "ignorable": True, "httpTimeout": "1ms"}]),
    "score weight": _profile(lambda weight: {"plugins": {"score": {"enabled": [
        {"name": "NodeResourcesFit", "weight": weight}]}}}),
    "bindTimeoutSeconds": _profile(lambda seconds: {"pluginConfig": [
        {"name": "VolumeBinding", "args": {"bindTimeoutSeconds": seconds}}]}),
}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(changes=st.lists(st.tuples(st.sampled_from(sorted(SETTERS)), INT_EDGES), min_size=1,
                        max_size=3))
@example(changes=[("podInitialBackoffSeconds", 2**63 - 1), ("podMaxBackoffSeconds", 2**63 - 1)])
def test_config_show_accepts_exactly_what_replay_runs(
        changes: list[tuple[str, int]], tmp_path_factory: pytest.TempPathFactory) -> None:
    tmp_path = tmp_path_factory.mktemp("cfg")
    document: dict[str, Any] = {"apiVersion": "kubescheduler.config.k8s.io/v1",
                                "kind": "KubeSchedulerConfiguration"}
    for name, value in changes:
        SETTERS[name](document, value)
    config = tmp_path / "config.json"
    config.write_text(json.dumps(document))
    shown = CliRunner().invoke(cli, ["config", "show", str(config)], catch_exceptions=False)
    assert shown.exit_code in (0, 2), shown.output
    code, output = _replay(tmp_path, config)
    assert code == shown.exit_code, (shown.output, output)
    if code == 2:
        assert output.strip().splitlines()[-1] == shown.output.strip().splitlines()[-1]
    else:
        assert json.loads(output[output.index("{"):])["status"] == "complete"


REPOSITORY = Path(__file__).resolve().parents[2]
REAL_CONFIGS = {path.name: path.read_text() for path in (
    REPOSITORY / "traces" / "sample-bin-packing.yaml", REPOSITORY / "traces" / "fgd-paper" /
    "FGD.yaml")}
HOSTILE_YAML = ["[" * 300 + "]" * 300, "9" * 25, "9" * 5000, "-" + "9" * 19, "1.0e+400", ".nan",
                "!!binary aGVsbG8=", "!!set {a: null}", "&a [*a]", "2026-01-01T00:00:00Z",
                "0x" + "f" * 40, "null", "[]", "{}", "''", "-1", "2147483648"]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(REAL_CONFIGS)), line=st.integers(0, 10**6),
       how=st.sampled_from(["value", "key", "truncate"]), value=st.sampled_from(HOSTILE_YAML))
@example(name="sample-bin-packing.yaml", line=12, how="value", value="9" * 5000)
def test_any_mutation_of_a_real_configuration_replays_or_is_refused_cleanly(
        name: str, line: int, how: str, value: str,
        tmp_path_factory: pytest.TempPathFactory) -> None:
    tmp_path = tmp_path_factory.mktemp("cfg")
    lines = REAL_CONFIGS[name].splitlines()
    number = line % len(lines)
    text = lines[number]
    if how == "value" and ":" in text:
        lines[number] = text[:text.index(":") + 1] + " " + value
    elif how == "key":
        indent = text[:len(text) - len(text.lstrip(" -"))].replace("-", " ")
        lines.insert(number + 1, f"{indent}zz: {value}")
    else:
        lines = [*lines[:number], text[:len(text) // 2]]
    config = tmp_path / name
    config.write_text("\n".join(lines) + "\n")
    shown = CliRunner().invoke(cli, ["config", "show", str(config)], catch_exceptions=False)
    assert shown.exit_code in (0, 2), shown.output
    if shown.exit_code == 2:
        assert shown.output.startswith(f"kaudit: error: {config}"), shown.output
        return
    code, output = _replay(tmp_path, config)
    assert code == 0, output
    assert json.loads(output[output.index("{"):])["status"] == "complete"


@pytest.mark.parametrize(("tls", "message"), [
    ("{caFile: /nonexistent/ca.pem}",
     'extenders[0].tlsConfig.caFile: Invalid value: "/nonexistent/ca.pem": cannot load the CA '
     "certificates: No such file or directory"),
    ("{caData: aGVsbG8=}",
     "extenders[0].tlsConfig.caData: Invalid value: cannot load the CA certificates: "),
    ("{certFile: NOT_PEM, keyFile: NOT_PEM}",
     'extenders[0].tlsConfig.certFile: Invalid value: "NOT_PEM": cannot load the client '
     "certificate and key as PEM: "),
    ("{certData: aGVsbG8=, keyFile: /nonexistent/key.pem}",
     'extenders[0].tlsConfig.keyFile: Invalid value: "/nonexistent/key.pem": cannot read '
     "/nonexistent/key.pem: No such file or directory"),
])
def test_config_show_loads_the_tls_files_and_data_as_replay_does(
        tls: str, message: str, tmp_path: Path) -> None:
    """client-go reads the files and parses the PEM when the scheduler starts; ``config show``
    used to accept what ``replay`` then refused."""
    not_pem = tmp_path / "not.pem"
    not_pem.write_text("hello\n")
    tls = tls.replace("NOT_PEM", str(not_pem))
    message = message.replace("NOT_PEM", str(not_pem))
    config = tmp_path / "config.yaml"
    config.write_text(HEADER + EXTENDER + tls + "\n")
    shown = CliRunner().invoke(cli, ["config", "show", str(config)], catch_exceptions=False)
    assert shown.exit_code == 2, shown.output
    assert shown.output.strip().startswith(f"kaudit: error: {config}: {message}")
    code, output = _replay(tmp_path, config)
    assert (code, output.strip().splitlines()[-1]) == (2, shown.output.strip())
