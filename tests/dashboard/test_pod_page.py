"""The pod page states its verdict from the story the API gives, rendered by the server: no
sentence on it contradicts a count on it."""

from __future__ import annotations

import re

from flask.testing import FlaskClient

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
    assert story["verdict"]["wait"]["words"] == "gated 2m30s, then waited 1s over 3 attempts"
    assert story["verdict"]["wait"]["words"] in page.sentences  # the card, one way of writing
    others = [e for e in story["events"] if e["kind"] != "watch"]
    assert page.events == [e["text"] for e in others]
    # each event's raw record behind a disclosure, never dumped in the sentence
    assert html.count('<details class="raw">') == len(others)
    assert "tiedVictims=" not in html and "tiedVictims: [" in html


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
