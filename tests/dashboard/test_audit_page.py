"""The audit page, its JSON twin, and the audit's verdicts on the pod page, against a database
made the way a user makes one: the sample ingested and replayed, the replay exported and
ingested as a recording, and that recording audited with the bin-packing configuration (its
decisions disagree) and with the defaults (they agree). The browser test opens the page in
Chromium, as ``test_browser.py`` does."""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from click.testing import CliRunner, Result
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import create_engine, update

from kaudit.cli import cli
from kaudit.dashboard import create_app
from kaudit.datadirs import sample_config, sample_trace
from kaudit.queries.audit import DISAGREEING, audit_report
from kaudit.queries.pods import attempt_detail
from kaudit.store.models import Run
from kaudit.store.schema import open_database
from tests.dashboard.test_browser import Visit, _chromium, launched, serving

#: The audit whose decisions disagree (bin packing judging a replay under the defaults).
PACKED = "audit-packing"
#: The audit whose decisions agree (the defaults judging their own replay).
SAME = "audit-defaults"
#: A run that is not an audit.
REPLAY = "replayed"


def audit_the_sample(invoke: Callable[..., Result], directory: Path) -> None:
    """The CLI flow: ingest the sample, replay it, export the replay, ingest the export as a
    recording and audit it twice."""
    exported = directory / "replayed.jsonl"
    for args in (("ingest", str(sample_trace()), "--name", "sample"),
                 ("replay", "sample", "--name", REPLAY),
                 ("export", REPLAY, "-o", str(exported)),
                 ("ingest", str(exported), "--name", "recording"),
                 ("audit", "recording", "--config", str(sample_config()), "--name", PACKED),
                 ("audit", "recording", "--name", SAME)):
        result = invoke(*args)
        assert result.exit_code == 0, result.output


@pytest.fixture
def audited(run_kaudit: Callable[..., Result], db_url: str, tmp_path: Path
            ) -> Iterator[FlaskClient]:
    audit_the_sample(run_kaudit, tmp_path)
    app: Flask = create_app({"KAUDIT_DB": db_url, "TESTING": True})
    yield app.test_client()
    app.extensions["kaudit.engine"].dispose()


def _report(db_url: str, run: str) -> dict[str, Any]:
    engine = open_database(db_url)
    try:
        return audit_report(engine, run)
    finally:
        engine.dispose()


def _text(page: str) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


def _pod_href(run: str, pod: str) -> str:
    namespace, name = pod.split("/", 1)
    return f"/runs/{quote(run)}/pods/{quote(namespace)}/{quote(name)}"


def test_the_api_answers_the_audit_report(audited: FlaskClient, db_url: str) -> None:
    response = audited.get(f"/api/v1/runs/{PACKED}/audit")
    assert response.status_code == 200
    answer = response.get_json()
    assert answer == _report(db_url, PACKED)
    assert answer["classes"]["scoredLower"] > 0 and answer["disagreements"]


def test_the_page_states_the_counts_and_links_every_disagreement(audited: FlaskClient,
                                                                 db_url: str) -> None:
    report = _report(db_url, PACKED)
    response = audited.get(f"/runs/{PACKED}/audit")
    assert response.status_code == 200
    page = response.get_data(as_text=True)
    text = _text(page)
    disagreeing = sum(report["classes"][name] for name in DISAGREEING)
    assert (f"{report['decisions']} recorded decisions, {report['judged']} judged: "
            f"{report['agreeOrTie']} agree or tie") in text
    assert f"{disagreeing} disagree" in text
    assert report["kubernetesVersion"] == "v1.34.2"
    assert 'Kubernetes <b id="audit-kubernetes">v1.34.2</b>' in page
    for name, count in report["classes"].items():
        row = re.search(rf'<tr data-class="{name}">(.*?)</tr>', page, re.S)
        assert row is not None, name
        assert _text(row.group(1)).split()[-1] == str(count)
    table = re.search(r'id="disagreements-table">(.*?)</table>', page, re.S)
    assert table is not None
    links = re.findall(r'<a class="pod" href="([^"]+)">', table.group(1))
    assert links == [_pod_href(PACKED, d["pod"]) for d in report["disagreements"]]
    for group in report["groups"]:
        assert group["cause"] in text
    assert 'id="chart-timeline"' in page and "js/audit.js" in page


def test_every_pod_the_page_links_opens(audited: FlaskClient, db_url: str) -> None:
    report = _report(db_url, PACKED)
    page = audited.get(f"/runs/{PACKED}/audit").get_data(as_text=True)
    links = set(re.findall(r'href="(/runs/[^"]+/pods/[^"]+)"', page))
    assert links == {_pod_href(PACKED, d["pod"])
                     for d in report["disagreements"] + report["notJudged"]}
    for link in links:
        assert audited.get(link).status_code == 200, link


def test_an_audit_that_agrees_lists_no_disagreement(audited: FlaskClient) -> None:
    page = audited.get(f"/runs/{SAME}/audit").get_data(as_text=True)
    assert 'id="disagreements-note"' in page and 'id="disagreements-table"' not in page


@pytest.mark.parametrize(("path", "status", "message"), [
    (f"/api/v1/runs/{REPLAY}/audit", 400, f"run '{REPLAY}' is not an audit"),
    (f"/runs/{REPLAY}/audit", 400, f"run '{REPLAY}' is not an audit"),
    ("/api/v1/runs/no-such-run/audit", 404, "no run named 'no-such-run'"),
    ("/runs/no-such-run/audit", 404, "no run named 'no-such-run'"),
    (f"/runs/{PACKED}/audit?offset=-3", 400, "offset: must be between"),
    (f"/api/v1/runs/{PACKED}/pods/web/no-such-pod/audit", 404, "no pod 'web/no-such-pod'"),
])
def test_what_is_not_an_audit_is_refused_clearly(audited: FlaskClient, path: str,
                                                 status: int, message: str) -> None:
    response = audited.get(path)
    assert response.status_code == status
    assert message in html.unescape(response.get_data(as_text=True))


def test_the_run_page_links_its_audit_only_when_it_is_one(audited: FlaskClient) -> None:
    audit_href = f'href="/runs/{PACKED}/audit"'
    page = audited.get(f"/runs/{PACKED}").get_data(as_text=True)
    assert 'id="audit-note"' in page and audit_href in page
    replay = audited.get(f"/runs/{REPLAY}").get_data(as_text=True)
    assert 'id="audit-note"' not in replay and "/audit" not in replay


def test_an_audit_that_did_not_complete_is_still_linked_as_one(audited: FlaskClient,
                                                               db_url: str) -> None:
    engine = create_engine(db_url)
    with engine.begin() as connection:
        connection.execute(update(Run).where(Run.name == SAME)
                           .values(status="failed", summary=None, error="interrupted"))
    engine.dispose()
    page = audited.get(f"/runs/{SAME}").get_data(as_text=True)
    assert 'id="audit-note"' in page and f'href="/runs/{SAME}/audit"' in page


def _rank(detail: dict[str, Any], node: str) -> tuple[int, int, int]:
    """The node's rank among the attempt's scored nodes, its total and the top total."""
    totals = dict(zip(detail["scores"]["nodes"], detail["scores"]["total"], strict=True))
    return (1 + sum(total > totals[node] for total in totals.values()), totals[node],
            max(totals.values()))


def test_the_pod_page_puts_the_recorded_node_in_kaudits_ranking(audited: FlaskClient,
                                                                db_url: str) -> None:
    report = _report(db_url, PACKED)
    decision = next(d for d in report["disagreements"] if d["class"] == "scoredLower")
    pod = decision["pod"]
    verdicts = audited.get(f"/api/v1/runs/{PACKED}/pods/{pod}/audit").get_json()["verdicts"]
    assert [v["class"] for v in verdicts] == [decision["class"]]
    verdict = verdicts[0]
    engine = open_database(db_url)
    try:
        detail = attempt_detail(engine, PACKED, pod, verdict["attempt"])
    finally:
        engine.dispose()
    rank, score, top = _rank(detail, decision["recordedNode"])
    assert rank > 1 and (score, top) == (decision["score"], decision["topScore"])
    assert (verdict["standing"]["rank"], verdict["standing"]["score"],
            verdict["standing"]["topScore"]) == (rank, score, top)
    page = audited.get(_pod_href(PACKED, pod)).get_data(as_text=True)
    table = re.search(r'id="audit-table">(.*?)</table>', page, re.S)
    assert table is not None
    row = _text(table.group(1))
    assert f"bound to {decision['recordedNode']}" in row
    assert decision["class"] in row and decision["reason"] in row
    assert verdict["standingText"] in row and f"{score} against kaudit's top {top}" in row
    assert verdict["nearby"] and all(line in row for line in verdict["nearby"])
    assert f'data-attempt="{verdict["attempt"]}"' in table.group(1)


def test_a_replayed_pods_page_has_no_audit_section(audited: FlaskClient, db_url: str) -> None:
    pod = _report(db_url, PACKED)["disagreements"][0]["pod"]
    page = audited.get(_pod_href(REPLAY, pod)).get_data(as_text=True)
    assert 'id="audit-table"' not in page
    answer = audited.get(f"/api/v1/runs/{REPLAY}/pods/{pod}/audit").get_json()
    assert answer["verdicts"] == []


# ----------------------------------------------------------------------------- the browser

@pytest.fixture(scope="module")
def audit_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A live ``kaudit serve`` on an SQLite database made by the CLI flow above."""
    chromium = _chromium()
    directory = tmp_path_factory.mktemp("audit")
    url = f"sqlite:///{directory / 'kaudit.db'}"
    runner = CliRunner()
    audit_the_sample(lambda *args: runner.invoke(cli, [*args, "--db", url],
                                                 catch_exceptions=False), directory)
    with serving(url) as base:
        yield {"base": base, "chromium": chromium, "url": url}


def test_the_audit_page_in_a_browser(audit_server: dict[str, Any]) -> None:
    report = _report(audit_server["url"], PACKED)
    with launched(audit_server["chromium"]) as browser:
        visit = Visit(browser, audit_server["base"])
        page = visit.open(f"/runs/{PACKED}/audit")
        plots = visit.plots()
        drawn = len(report["disagreements"]) + len(report["notJudged"])
        assert plots.get("chart-timeline") == drawn, plots
        assert plots.get("chart-classes", 0) > 0, plots
        visit.screenshot("audit")
        first = report["disagreements"][0]
        with page.expect_navigation():
            page.click(f'#disagreements-table a.pod >> text="{first["pod"]}"')
        page.wait_for_selector("body[data-ready]", timeout=30_000)
        assert page.url.endswith(_pod_href(PACKED, first["pod"]))
        assert page.evaluate("document.body.dataset.ready") == "1", page.inner_text("#error")
        assert first["reason"] in page.inner_text("#audit-table")
        shown = page.locator(".audit-verdict:not([hidden])")
        assert shown.count() == 1 and first["class"] in shown.inner_text()
        assert page.locator("#score-table td.node", has_text="(recorded)").count() == 1
        visit.screenshot("audit-pod")
        visit.open("/")
        assert page.locator(f'#runs-table a.audit[href="/runs/{PACKED}/audit"]').count() == 1
        assert page.locator(f'#runs-table a.audit[href="/runs/{REPLAY}/audit"]').count() == 0
        visit.close()


def test_the_page_says_when_only_an_interval_was_judged(
        audited: FlaskClient, run_kaudit: Callable[..., Result], db_url: str) -> None:
    result = run_kaudit("audit", "recording", "--since", "10", "--name", "part")
    assert result.exit_code == 0, result.output
    since = _report(db_url, "part")["interval"]["since"]

    text = _text(audited.get("/runs/part/audit").get_data(as_text=True))
    assert f"Only the decisions recorded from {since} to the end of the trace were judged" \
        in text
    assert "Only the decisions recorded" not in _text(
        audited.get(f"/runs/{SAME}/audit").get_data(as_text=True))
