"""The dashboard's JSON API and pages through Flask's test client, on both backends."""

from __future__ import annotations

import json

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from kaudit import KUBERNETES_VERSION
from kaudit.queries.explain import explain_pod
from kaudit.queries.pods import nodes_from_detail


def _json(client: FlaskClient, url: str, status: int = 200) -> dict:  # type: ignore[type-arg]
    response = client.get(url)
    assert response.status_code == status, (url, response.status_code, response.data[:300])
    assert response.is_json, url
    return response.get_json()


PAGES = ["/", "/runs/default", "/runs/default/history?t=240", "/runs/default/events",
         "/runs/default/pods/web/payments-0", "/diff?a=default&b=packing",
         "/diff/pods/web/payments-0?a=default&b=packing"]


def test_pages_render_with_security_headers(client: FlaskClient) -> None:
    for url in PAGES:
        response = client.get(url)
        assert response.status_code == 200, url
        policy = response.headers["Content-Security-Policy"]
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy.split(
            "script-src")[1].split(";")[0]
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        body = response.get_data(as_text=True)
        assert "<script>" not in body and "onload=" not in body  # no inline script
        assert "/static/vendor/plotly-" in body or "events" in url or "diff/pods" in url


def test_home_and_run_timeline(client: FlaskClient) -> None:
    runs = _json(client, "/api/v1/runs")["runs"]
    assert [r["name"] for r in runs] == ["default", "packing"]
    traces = _json(client, "/api/v1/traces")["traces"]
    assert traces[0]["name"] == "sample"
    run = _json(client, "/api/v1/runs/default")
    assert run["timeline"] is True and run["span"]["seconds"] > 0
    timeline = _json(client, "/api/v1/runs/default/timeline")
    series = timeline["series"]
    assert len(series["t"]) == len(series["pending"]) == len(series["allocation"]["cpu"])
    assert max(series["unschedulable"]) >= 2 and set(series["allocation"]) >= {"cpu", "memory"}
    histograms = timeline["histograms"]
    summary = runs[0]["summary"]
    assert sum(histograms["scheduled"]) + sum(histograms["failed"]) == summary["attempts"]
    assert sum(histograms["preemptions"]) == summary["podsPreempted"]


def test_the_run_page_names_its_configuration_file_briefly(client: FlaskClient) -> None:
    source = _json(client, "/api/v1/runs/packing")["run"]["config"]
    assert source.startswith("/")  # stored absolute
    page = client.get("/runs/packing").get_data(as_text=True)
    assert f'title="{source}">{source.rsplit("/", 1)[-1]}</a>' in page
    assert f">{source}<" not in page


def test_the_allocation_chart_draws_the_resources_pods_request(client: FlaskClient) -> None:
    """A resource the nodes offer but no pod of the run requests (the sample's
    ephemeral-storage) is not drawn as a flat 0 % line; every resource drawn was requested."""
    summary = _json(client, "/api/v1/runs/default")["run"]["summary"]["allocation"]
    never_requested = {name for name, share in summary.items() if share["peak"] == 0}
    assert never_requested  # the sample's nodes offer ephemeral-storage nobody asks for
    allocation = _json(client, "/api/v1/runs/default/timeline")["series"]["allocation"]
    assert all(any(values) for values in allocation.values()), allocation
    assert set(allocation) == set(summary) - never_requested


def test_state_at_a_moment_and_a_node(client: FlaskClient) -> None:
    early = _json(client, "/api/v1/runs/default/state?t=0")
    late = _json(client, "/api/v1/runs/default/state?t=240")
    assert late["totals"]["pods"] > early["totals"]["pods"]
    nodes = late["nodes"]
    assert len(nodes["name"]) == late["totals"]["nodes"] == 11
    assert nodes["zone"] == sorted(nodes["zone"])  # grouped by zone
    assert "nvidia.com/gpu" in nodes["extended"]
    assert late["queues"]["unschedulable"]["count"] >= 2
    assert any(e["current"] for e in late["events"]) and any(
        not e["current"] for e in late["events"])
    busiest = nodes["name"][nodes["pods"].index(max(nodes["pods"]))]
    node = _json(client, f"/api/v1/runs/default/nodes/{busiest}?t=240")
    assert len(node["pods"]) == max(nodes["pods"])
    assert node["labels"]["kubernetes.io/hostname"] == busiest
    assert sum(p["cpu"] for p in node["pods"]) == nodes["cpuRequested"][
        nodes["name"].index(busiest)]


@pytest.mark.parametrize("pod", ["web/payments-0", "data/postgres-1", "web/ssd-cache"])
def test_pod_json_states_the_same_facts_as_explain(app: Flask, client: FlaskClient,
                                                   pod: str) -> None:
    engine = app.extensions["kaudit.engine"]
    explained = explain_pod(engine, "default", pod)
    story = _json(client, f"/api/v1/runs/default/pods/{pod}")
    for key in ("pod", "recordedNode", "boundNode", "boundTime"):
        assert story[key] == explained[key]
    assert [(q["time"], q["from"], q["to"], q["event"]) for q in story["queue"]] == [
        (q["time"], q["from"], q["to"], q["event"]) for q in explained["queue"]]
    assert len(story["attempts"]) == len(explained["attempts"])
    for index, expected in enumerate(explained["attempts"]):
        summary = story["attempts"][index]
        detail = _json(client, f"/api/v1/runs/default/pods/{pod}/attempts/{index + 1}")
        for key in ("selectedNode", "message", "evaluatedNodes", "feasibleNodes", "cycle",
                    "time", "tiedNodes", "preFilter", "preScore"):
            assert detail[key] == expected[key], key
        assert summary["message"] == expected["message"]
        assert summary["selectedNode"] == expected["selectedNode"]
        assert nodes_from_detail(detail) == expected["nodes"]
        if "preemption" in expected:
            assert detail["preemption"] == expected["preemption"]
            assert summary["victims"] == expected["preemption"]["victims"]
    _json(client, f"/api/v1/runs/default/pods/{pod}/attempts/99", 404)
    _json(client, f"/api/v1/runs/default/pods/{pod}/attempts/0", 404)  # numbered from 1


def test_winner_against_runner_up(client: FlaskClient) -> None:
    story = _json(client, "/api/v1/runs/packing/pods/data/postgres-1")
    detail = _json(client, f"/api/v1/runs/packing/pods/data/postgres-1/attempts/"
                           f"{len(story['attempts'])}")
    decision = detail["decision"]
    assert decision["winner"] == story["boundNode"]
    totals = dict(zip(detail["scores"]["nodes"], detail["scores"]["total"], strict=True))
    assert decision["winnerTotal"] == totals[decision["winner"]] >= decision["runnerUpTotal"]
    assert sum(decision["deltas"].values()) == decision["winnerTotal"] - decision["runnerUpTotal"]


def test_event_log_filters_and_pages(client: FlaskClient) -> None:
    everything = _json(client, "/api/v1/runs/default/events?limit=500")
    assert everything["total"] > 500 and len(everything["items"]) == 500
    second = _json(client, "/api/v1/runs/default/events?offset=500&limit=10")
    assert [e["seq"] for e in second["items"]] == list(range(500, 510))
    assert second["total"] == everything["total"]
    last = _json(client, f"/api/v1/runs/default/events?offset={everything['total'] - 3}")
    assert len(last["items"]) == 3
    kinds = _json(client, "/api/v1/runs/default/events?kind=queue&offset=5&limit=5")
    everything_queue = _json(client, "/api/v1/runs/default/events?kind=queue&limit=10")
    assert kinds["items"] == everything_queue["items"][5:]
    attempts = _json(client, "/api/v1/runs/default/events?kind=attempt&limit=500")
    assert all(e["kind"] == "attempt" for e in attempts["items"])
    rejected = _json(client, "/api/v1/runs/default/events?plugin=NodeAffinity&limit=500")
    assert rejected["total"] >= 1 and all(
        "NodeAffinity" in e["data"]["rejectedBy"] for e in rejected["items"])
    assert {e["pod"] for e in rejected["items"]} >= {"web/ssd-cache"}
    web = _json(client, "/api/v1/runs/default/events?pod=web/*&kind=bind&limit=500")
    assert web["total"] > 0 and all(e["pod"].startswith("web/") for e in web["items"])
    one = _json(client, "/api/v1/runs/default/events?pod=web/payments-0")
    assert {e["pod"] for e in one["items"]} == {"web/payments-0"}
    window = _json(client, "/api/v1/runs/default/events?since=200&until=250&limit=500")
    assert window["total"] and all(200 <= e["t"] <= 250 for e in window["items"])
    on_node = _json(client, "/api/v1/runs/default/events?node=node-a1&kind=bind&limit=500")
    assert on_node["total"] and {e["node"] for e in on_node["items"]} == {"node-a1"}


def test_diff_lists_changed_pods(client: FlaskClient) -> None:
    report = _json(client, "/api/v1/diff?a=default&b=packing")
    assert report["changes"]["total"] > 0 and report["counts"]["moved"] > 0
    moved = [c for c in report["changes"]["items"] if c["change"] == "moved"]
    assert moved and all(c["reason"] for c in moved)
    assert report["timelines"]["a"]["t"] and report["timelines"]["b"]["t"]
    recorded = _json(client, "/api/v1/diff?a=recorded&b=default")
    assert recorded["timelines"]["a"] is None and recorded["a"] == "recorded"
    ties = _json(client, "/api/v1/diff?a=default&b=packing&change=tie-flip")
    assert all(c["change"] == "tie-flip" for c in ties["changes"]["items"])


def test_a_pods_row_of_the_diff_is_the_diff_pages_row(client: FlaskClient) -> None:
    """The diff pod page states the reason the diff gives, from the same report."""
    listed = _json(client, "/api/v1/diff?a=default&b=packing&limit=1000")["changes"]["items"]
    for change in listed[:5]:
        one = _json(client, f"/api/v1/diff/pods/{change['pod']}?a=default&b=packing")
        assert {k: v for k, v in one.items() if k != "otherNode"} == {
            "a": "default", "b": "packing", "pod": change["pod"], "change": change}
    assert "web/payments-0" not in {change["pod"] for change in listed}
    unchanged = _json(client, "/api/v1/diff/pods/web/payments-0?a=default&b=packing")
    assert unchanged["change"] is None and unchanged["otherNode"] == {"a": None, "b": None}


def test_a_moved_pods_row_carries_each_runs_verdict_on_the_other_node(
        client: FlaskClient) -> None:
    """The diff pod page's panels show each run's verdict on the node the other run chose:
    the deciding run's is the diff's reason, a rejection with its exact amounts."""
    listed = _json(client, "/api/v1/diff?a=default&b=packing&change=moved&limit=1000")
    rejected = [c for c in listed["changes"]["items"] if " rejected " in c["reason"]]
    assert rejected
    for change in rejected[:3]:
        one = _json(client, f"/api/v1/diff/pods/{change['pod']}?a=default&b=packing")
        verdict = one["otherNode"]["b"]
        assert verdict["node"] == change["a"]["node"] and verdict["text"] == change["reason"]
        assert verdict["rejection"]["cause"] in change["cause"]
        if verdict["rejection"]["cause"].startswith("lack "):
            assert "needs " in verdict["rejection"]["detail"]
            assert ", free " in verdict["rejection"]["detail"]
        assert one["otherNode"]["a"]["node"] == change["b"]["node"]


def test_spans_of_time_are_sent_as_every_door_writes_them(client: FlaskClient) -> None:
    """The run page's cards and the home page's traces table show units.duration's text."""
    from kaudit.queries import units

    run = _json(client, "/api/v1/runs/default")
    assert run["spanText"] == units.duration(run["span"]["seconds"]) == "9m30s"
    assert run["wallText"] == units.duration(run["run"]["summary"]["wallSeconds"])
    trace = _json(client, "/api/v1/traces")["traces"][0]
    assert trace["spanText"] == units.duration(trace["spanSeconds"])


@pytest.mark.parametrize(("url", "status", "words"), [
    ("/api/v1/runs/nope", 404, "no run named 'nope'"),
    ("/api/v1/runs/default/pods/web/nope", 404, "no pod 'web/nope'"),
    ("/api/v1/runs/default/nodes/nope?t=1", 404, "no node 'nope'"),
    ("/api/v1/runs/default/state?t=abc", 400, "t: 'abc' is not a number"),
    ("/api/v1/runs/default/state?t=-1", 400, "t: -1 s is outside the run"),
    ("/api/v1/runs/default/state?t=nan", 400, "t: 'nan' is not a finite number"),
    ("/api/v1/runs/default/state?t=99999", 400, "t: 99999 s is outside the run"),
    ("/api/v1/runs/default/state?t=1999-01-01T00:00:00Z", 400, "is outside the run"),
    ("/api/v1/runs/default/events?kind=bogus", 400, "kind: unknown record kind"),
    ("/api/v1/runs/default/events?limit=0", 400, "limit: must be between 1 and 500"),
    ("/api/v1/runs/default/events?offset=x", 400, "offset: 'x' is not an integer"),
    ("/api/v1/runs/default/events?plugin=a'b", 400, "is not a plugin name"),
    ("/api/v1/runs/default/events?since=9&until=1", 400, "since must not be after until"),
    ("/api/v1/diff?a=default", 400, "b: required"),
    ("/api/v1/diff?a=recorded&b=recorded", 400, "compare `recorded` with a run"),
    ("/api/v1/nothing", 404, "not found"),
    ("/-/config/nope", 404, "no run named"),
])
def test_bad_requests_get_clear_answers(client: FlaskClient, url: str, status: int,
                                        words: str) -> None:
    answer = _json(client, url, status)
    assert words.lower() in answer["error"].lower() and answer["status"] == status
    assert "Traceback" not in answer["error"]


def test_unknown_pages_are_html_404s(client: FlaskClient) -> None:
    response = client.get("/runs/nope")
    assert response.status_code == 404 and b"no run named" in response.data
    assert client.post("/api/v1/runs").status_code == 405


def test_introspection(client: FlaskClient) -> None:
    versions = _json(client, "/-/versions")
    assert versions["kubernetes"] == KUBERNETES_VERSION and versions["schemaRevision"] == "0009"
    config = _json(client, "/-/config/packing")
    strategy = config["configuration"]["profiles"][0]["pluginConfig"]
    assert "MostAllocated" in json.dumps(strategy)
    assert _json(client, "/healthz") == {"status": "ok", "schemaRevision": "0009"}
    answer = client.get("/metrics")
    assert answer.headers["Content-Type"].count("charset") == 1  # once, not twice
    metrics = answer.get_data(as_text=True)
    assert 'kaudit_stored_objects{kind="run"} 2.0' in metrics
    assert "kaudit_http_request_duration_seconds_bucket" in metrics
    plotly = client.get(f"/static/vendor/{versions['plotlyJs']}",
                        headers={"Accept-Encoding": "gzip"})
    assert plotly.status_code == 200 and plotly.headers["Content-Encoding"] == "gzip"
    assert len(plotly.data) < 2_000_000
    assert client.get("/static/vendor/other.js").status_code == 404


def test_the_dashboard_cannot_write(app: Flask) -> None:
    engine = app.extensions["kaudit.engine"]
    with pytest.raises(DBAPIError), engine.begin() as connection:
        connection.execute(text("DELETE FROM runs"))


def test_state_answers_equal_the_uncached_query(app: Flask, client: FlaskClient) -> None:
    """Moments between two records share one cached cluster, which must be the cluster the
    query computes for each of them."""
    from kaudit.queries.runs import get_run
    from kaudit.queries.timeline import run_span, state_at

    engine = app.extensions["kaudit.engine"]
    run = get_run(engine, "default")
    span = run_span(engine, run.id)
    for seconds in (0, 5.01, 5.02, 90.35, 240, 240.2, 241, span.seconds):
        for _ in range(2):
            assert _json(client, f"/api/v1/runs/default/state?t={seconds}") == json.loads(
                json.dumps(state_at(engine, run.id, span, seconds)))


def test_the_configuration_page_is_readable_yaml(client: FlaskClient) -> None:
    """The run's effective configuration as YAML, equal to its JSON twin."""
    import html

    import yaml

    page = client.get("/runs/packing/config")
    assert page.status_code == 200
    body = page.get_data(as_text=True)
    text = html.unescape(body.split('<pre id="config-yaml" class="config">')[1].split("</pre>")[0])
    twin = client.get("/-/config/packing").get_json()
    assert yaml.safe_load(text) == twin["configuration"]
    assert "kind: KubeSchedulerConfiguration" in text and "NodeResourcesFitArgs" in text
    assert "Feature gates changed" not in body  # the sample runs with v1.34's defaults
    assert client.get("/runs/nope/config").status_code == 404
