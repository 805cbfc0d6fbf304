"""The command line as a user meets it: version, help, demo, listings, errors."""

from __future__ import annotations

import json
from collections.abc import Callable

from click.testing import CliRunner, Result

from kaudit import KUBERNETES_VERSION, __version__, versions
from kaudit.cli import cli


def test_version_names_the_mirrored_kubernetes_release() -> None:
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0
    assert __version__ in result.output and versions.SUPPORTED[-1].name == KUBERNETES_VERSION
    assert f"{KUBERNETES_VERSION} by default" in result.output
    assert all(release.name in result.output for release in versions.SUPPORTED)


def test_every_command_has_help_and_a_db_option() -> None:
    runner = CliRunner()
    for command in (["ingest"], ["traces"], ["demo"], ["db", "upgrade"], ["db", "current"],
                    ["replay"], ["runs"], ["explain"], ["events"]):
        result = runner.invoke(cli, [*command, "--help"])
        assert result.exit_code == 0, command
        assert "--db URL" in result.output and "KAUDIT_DB" in result.output, command


def test_demo_ingests_the_sample_once(run_kaudit: Callable[..., Result]) -> None:
    first = run_kaudit("demo")
    assert first.exit_code == 0, first.output
    assert "Ingested the sample trace 'sample'" in first.output
    assert "cordoned" in first.output and "nvidia.com/gpu 4" in first.output
    assert "leaves at +180s" in first.output and "never scheduled:" in first.output
    second = run_kaudit("demo", "--json")
    assert second.exit_code == 0
    report = json.loads(second.output)
    assert report["newlyIngested"] is False
    assert len(report["nodes"]) == 13
    assert {"data/scratch-worker", "web/ssd-cache"} == set(report["pods"]["neverBound"])
    assert len(json.loads(run_kaudit("traces", "--json").output)) == 1


def test_traces_listing_and_unknown_trace(run_kaudit: Callable[..., Result]) -> None:
    empty = run_kaudit("traces")
    assert empty.exit_code == 0 and "no traces yet" in empty.output
    assert json.loads(run_kaudit("traces", "--json").output) == []
    run_kaudit("demo")
    listing = run_kaudit("traces")
    assert listing.output.splitlines()[0].split() == ["ID", "NAME", "EVENTS", "SPAN",
                                                      "REJECTED", "RECORDED", "FROM", "KINDS"]
    missing = run_kaudit("traces", "nope")
    assert missing.exit_code == 2 and "no trace named 'nope'" in missing.output


def test_db_from_environment(run_kaudit: Callable[..., Result], db_url: str,
                             monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("KAUDIT_DB", db_url)
    result = run_kaudit("demo", db=False)
    assert result.exit_code == 0
    assert json.loads(run_kaudit("traces", "--json").output)[0]["name"] == "sample"


def test_pure_computations_take_no_database() -> None:
    """whatif and config show evaluate files; they neither need nor accept --db."""
    runner = CliRunner()
    for command in (["whatif"], ["config", "show"]):
        result = runner.invoke(cli, [*command, "--help"])
        assert result.exit_code == 0 and "--db" not in result.output


def test_demo_counts_the_recorded_placements_as_the_diff_does(
        run_kaudit: Callable[..., Result]) -> None:
    """One count, one name: the pods a scheduler placed in the recorded cluster are the
    diff's `scheduled` of `recorded`; pods created on their node are counted apart."""
    text = run_kaudit("demo").output
    report = json.loads(run_kaudit("diff", "recorded", "sample-1", "--json").output)
    recorded = report["aggregates"]["a"]
    assert f"  {recorded['scheduled']} scheduled in the recorded cluster" in text
    demo = json.loads(run_kaudit("demo", "--json").output)["recordedAgainstDefault"]
    assert demo["recordedScheduled"] == recorded["scheduled"]
    assert recorded["scheduled"] + demo["createdOnNode"] == \
        json.loads(run_kaudit("demo", "--json").output)["pods"]["recordedBound"]


def test_demo_counts_only_pods_the_recording_scheduled_as_landing(
        run_kaudit: Callable[..., Result]) -> None:
    """"N of M pods land where the recording put them": M is the compared pods the recording
    scheduled (a pod scheduled in neither run lands nowhere), N those on the same node."""
    text = run_kaudit("demo").output
    report = json.loads(run_kaudit("diff", "recorded", "sample-1", "--json").output)
    placed = [c for c in report["changes"] if c["a"]["node"] is not None]
    counts = report["counts"]
    scheduled = report["compared"] - counts["unscheduledInBoth"] - counts["scheduledOnlyInB"]
    assert counts["unscheduledInBoth"] == 2 and scheduled == counts["same"] + len(placed)
    assert (f"{counts['same']} of {scheduled} pods scheduled by the recording land where it "
            f"put them; {len(placed)} differ") in text


def test_spans_of_time_and_config_files_read_as_on_the_pages(
        run_kaudit: Callable[..., Result]) -> None:
    """demo and replay write a span as units.duration does (9m30s, as the pod page); the
    runs table names a configuration by its file (the JSON keeps the full path)."""
    text = run_kaudit("demo").output
    assert "watch events over 9m30s" in text and "9m 30s" not in text
    replayed = run_kaudit("replay", "sample", "--name", "again").output
    assert "virtual time 9m30s" in replayed, replayed
    listing = run_kaudit("runs").output
    full = {r["name"]: r["config"] for r in json.loads(run_kaudit("runs", "--json").output)}
    assert full["sample-2"].startswith("/") and full["sample-2"] not in listing
    assert full["sample-2"].rsplit("/", 1)[-1] in listing


def test_a_seed_beyond_int64_is_a_usage_error_at_every_command() -> None:
    """A seed is stored as an int64: a larger one is refused before anything runs, never a
    traceback when the run is written."""
    huge = str(10**27)
    for args in (["replay", "sample"], ["whatif"],
                 ["compare", "sample", "--config", "default", "--config", "trace"],
                 ["check", "--sweep", "x.yaml"]):
        # the seed first: click checks options in the order given
        result = CliRunner().invoke(cli, [args[0], "--seed", huge, *args[1:]])
        assert result.exit_code == 2, (args, result.output)
        assert "Invalid value for '--seed'" in result.output, (args, result.output)
