"""The pod page states its verdict from the story the API gives, rendered by the server: no
sentence on it contradicts a count on it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from flask.testing import FlaskClient
from sqlalchemy import Engine

from kaudit.cli import cli
from kaudit.dashboard import create_app
from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.replay.run import replay_trace
from kaudit.scheduler.build import load
from kaudit.store.traces import get_trace
from kaudit.tracegen.builders import make_node, make_pod
from tests.queries.conftest import replay_small_cluster
from tests.queries.test_verdict_doors import _page


def _story(client: FlaskClient, pod: str) -> dict:  # type: ignore[type-arg]
    response = client.get(f"/api/v1/runs/default/pods/{pod}")
    assert response.status_code == 200
    return response.get_json()  # type: ignore[no-any-return]


def test_a_preempted_pods_page_does_not_say_every_node_passed(client: FlaskClient) -> None:
    """The victim's placement evaluated 12 nodes and found 1 feasible: the first block groups
    the 11 others by cause instead of saying every evaluated node passed."""
    victim = client.get("/api/v1/runs/default/events?kind=preempt").get_json()["items"][0]["pod"]
    story = _story(client, victim)
    nodes = story["verdict"]["nodes"]
    assert nodes["rejected"] > 0
    page = _page(client.get(f"/runs/default/pods/{victim}").get_data(as_text=True))
    assert page.verdict == story["verdict"]["headline"]
    assert sum(int(row[0]) for row in page.causes) == nodes["rejected"]
    assert not any(re.search(r"passed the filters", s) for s in page.sentences)
    assert (f"{nodes['evaluated']} nodes evaluated, {nodes['feasible']} feasible, "
            f"{nodes['rejected']} rejected") in page.summary[0]


def test_the_pages_words_are_the_apis(client: FlaskClient) -> None:
    story = _story(client, "batch/report-gen")
    html = client.get("/runs/default/pods/batch/report-gen").get_data(as_text=True)
    page = _page(html)
    assert page.summary == story["verdict"]["summary"]
    assert story["verdict"]["wait"]["words"] == "gated 2m30s, then waited 0.3s over 2 attempts"
    assert story["verdict"]["wait"]["words"] in page.sentences  # the card, one way of writing
    others = [e for e in story["events"] if e["kind"] != "watch"]
    assert page.events == [e["text"] for e in others]
    # each event's raw record behind a disclosure, never dumped in the sentence
    assert html.count('<details class="raw">') == len(others)
    # With bin packing, report-gen's nomination names the victims a tie decided.
    tied = client.get("/runs/packing/pods/batch/report-gen").get_data(as_text=True)
    assert "tiedVictims=" not in tied and "tiedVictims: [" in tied


def test_a_pod_the_recorded_cluster_bound_is_not_said_to_fit_nowhere(
        client: FlaskClient) -> None:
    """custom-scheduled was bound by its own scheduler in the recording: the page names that
    node as the recorded cluster's and does not head its (empty) causes "Why no node fits"."""
    story = _story(client, "default/custom-scheduled")
    assert story["verdict"]["state"] == "bound-by-trace"
    assert story["recordedNode"] == story["boundNode"] == story["verdict"]["node"]
    page = _page(client.get("/runs/default/pods/default/custom-scheduled").get_data(
        as_text=True))
    assert "Why no node fits" not in page.sentences
    cards = page.sentences[page.sentences.index("bound to") - 1:]
    assert cards[:4] == [story["boundNode"], "bound to", story["boundNode"],
                         "recorded cluster placed it on"]


@pytest.fixture
def small_client(engine: Engine, db_url: str, tmp_path: Path) -> Iterator[FlaskClient]:
    """The dashboard on run ``small`` (:func:`tests.queries.conftest.small_cluster_events`)."""
    replay_small_cluster(engine, tmp_path)
    app = create_app({"KAUDIT_DB": db_url, "TESTING": True})
    yield app.test_client()
    app.extensions["kaudit.engine"].dispose()


def test_a_pod_never_attempted_says_so_once_without_empty_sections(
        small_client: FlaskClient) -> None:
    """gated is held by its scheduling gate the whole run: the page says kaudit never tried it
    and why, and shows no attempt, score or filter headings over nothing."""
    story = small_client.get("/api/v1/runs/small/pods/default/gated").get_json()
    assert story["attempts"] == []
    html = small_client.get("/runs/small/pods/default/gated").get_data(as_text=True)
    page = _page(html)
    assert ("kaudit never tried to schedule this pod: held by scheduling gates "
            "example.com/wait.") in page.sentences
    for heading in ("Score breakdown (top nodes)", "Filter matrix", "Filter verdicts",
                    "Scores (the selected node first)", "Rejected nodes by cause"):
        assert heading not in page.sentences
    assert 'id="attempt-title"' not in html


def test_the_wait_card_is_labelled_by_what_the_pod_did(client: FlaskClient) -> None:
    """report-gen was gated, then waited; payments-0 was never gated."""
    gated = _page(client.get("/runs/default/pods/batch/report-gen").get_data(as_text=True))
    assert "gated, then waited" in gated.sentences
    never = _page(client.get("/runs/default/pods/web/payments-0").get_data(as_text=True))
    assert "waited for the scheduler" in never.sentences
    assert "gated and waiting" not in never.sentences


def test_moments_are_seconds_since_the_start_never_a_duration(
        engine: Engine, db_url: str, tmp_path: Path) -> None:
    """A trace of numeric times (seconds) has no wall clock: the bound-at card and the
    attempt's moment say ``t = 2 s``, not ``2s``; a wall-clock trace adds the timestamp."""
    nodes = [make_node("n1").capacity(cpu="4", memory="8Gi").obj()]
    lines = [orjson.dumps({"ts": 0, "type": "ADDED", "object": nodes[0]}),
             orjson.dumps({"ts": 2, "type": "ADDED",
                           "object": make_pod("p").req(cpu="100m").obj()})]
    path = tmp_path / "numeric.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    ingest_trace(engine, [TraceInput(path)], name="numeric")
    config, registry = load()
    replay_trace(engine, get_trace(engine, "numeric"), config, registry, name="numeric")
    app = create_app({"KAUDIT_DB": db_url, "TESTING": True})
    client = app.test_client()
    try:
        page = _page(client.get("/runs/numeric/pods/default/p").get_data(as_text=True))
        assert page.sentences[page.sentences.index("bound at") - 1] == "t = 2 s"
        detail = client.get("/api/v1/runs/numeric/pods/default/p/attempts/1").get_json()
        assert detail["attempt"] == 1 and detail["momentText"] == "t = 2 s"
        assert client.get("/api/v1/runs/numeric/pods/default/p/attempts/0").status_code == 404
    finally:
        app.extensions["kaudit.engine"].dispose()
    text = CliRunner().invoke(cli, ["explain", "numeric", "default/p", "--db", db_url],
                              catch_exceptions=False).output
    assert "Decisive attempt #1 at t = 2 s, cycle" in text


def test_a_wall_clock_moment_carries_its_timestamp(client: FlaskClient) -> None:
    story = _story(client, "data/postgres-0")
    page = _page(client.get("/runs/default/pods/data/postgres-0").get_data(as_text=True))
    assert page.sentences[page.sentences.index("bound at") - 1] == (
        f"t = 25 s ({story['boundTime']})")
