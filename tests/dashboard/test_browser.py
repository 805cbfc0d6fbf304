"""The dashboard in a real browser: Playwright driving Debian's Chromium against a live
``kaudit serve`` on a database holding the sample trace replayed under two configurations.

Screenshots of every page are saved under ``artifacts/screenshots/`` (``KAUDIT_ARTIFACTS``
overrides the directory). Without Chromium or Playwright the tests are skipped, unless
``KAUDIT_REQUIRE_BROWSER=1`` (set by ``.ci/run``) makes that a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

from kaudit.queries.explain import explain_pod
from kaudit.readers.ingest import TraceInput, ingest_trace
from kaudit.replay.run import replay_trace
from kaudit.scheduler.build import load
from kaudit.store.models import Run
from kaudit.store.schema import open_database
from kaudit.store.traces import get_trace
from tests.conftest import replay_gpu_policies, replay_sample_twice

REQUIRED = os.environ.get("KAUDIT_REQUIRE_BROWSER") == "1"
ARTIFACTS = Path(os.environ.get("KAUDIT_ARTIFACTS",
                                Path(__file__).resolve().parents[2] / "artifacts"))
DRA_TRACE = Path(__file__).resolve().parents[2] / "traces" / "dra-gpu.jsonl"
HOSTILE = '<img src=x onerror="window.__xss=1">'
HOSTILE_RUN = "<img id=xss src=x onerror=window.__xss=2>"
KILLED_RUN = "killed"


def _unavailable(reason: str) -> None:
    if REQUIRED:
        pytest.fail(reason)
    pytest.skip(reason)


def _chromium() -> str:
    """The Chromium binary the browser tests drive, once Playwright is importable too."""
    for candidate in (os.environ.get("KAUDIT_CHROMIUM"), "chromium", "chromium-browser"):
        if candidate and shutil.which(candidate):
            try:
                import playwright.sync_api  # noqa: F401
            except ImportError:
                _unavailable("playwright is not installed (pip install -e '.[test]')")
            return str(shutil.which(candidate))
    _unavailable("no chromium binary (apt-get install chromium)")
    raise AssertionError  # unreachable


def _wide_trace(path: Path, nodes: int = 320, pods: int = 40) -> Path:
    """More nodes than the history page draws as bars: it switches to a heat map."""
    from kaudit.tracegen.builders import make_node, make_pod

    lines = [{"ts": 0, "type": "ADDED", "object": make_node(f"wide-{i:03d}").capacity(
        cpu="4", memory="16Gi", pods="110").zone(f"zone-{i % 2}").obj()} for i in range(nodes)]
    lines += [{"ts": 1, "type": "ADDED", "object": make_pod(f"p-{i:03d}").req(
        cpu="1", memory="1Gi").obj()} for i in range(pods)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _hostile_trace(path: Path) -> Path:
    """A tiny trace whose names, labels and annotations hold HTML."""
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": "node-x", "uid": "n-x", "labels": {"kubernetes.io/hostname": "node-x",
                                                  "topology.kubernetes.io/zone": HOSTILE,
                                                  "team": HOSTILE}},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "web-1", "namespace": "default", "uid": "p-1",
        "annotations": {"note": HOSTILE}, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
        "status": {"phase": "Pending"}}
    lines = [{"ts": "2026-01-05T09:00:00Z", "type": "ADDED", "object": node},
             {"ts": "2026-01-05T09:00:01Z", "type": "ADDED", "object": pod}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _killed_run(engine: Any, config: Any, registry: Any) -> None:
    """A run left "running" by a replay killed without a word on another host."""
    replay_trace(engine, get_trace(engine, HOSTILE), config, registry, name=KILLED_RUN)
    with engine.begin() as connection:
        connection.execute(update(Run).where(Run.name == KILLED_RUN).values(
            status="running", finished_at=None, owner_host="build-7", owner_pid=4242,
            heartbeat_at=datetime.now(UTC) - timedelta(minutes=10)))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A live ``kaudit serve`` on an SQLite database with the sample replayed twice and a
    hostile trace replayed once."""
    chromium = _chromium()
    directory = tmp_path_factory.mktemp("dashboard")
    url = f"sqlite:///{directory / 'kaudit.db'}"
    engine = open_database(url)
    replay_sample_twice(engine)
    ingest_trace(engine, [TraceInput(_hostile_trace(directory / "hostile.jsonl"))],
                 name=HOSTILE)
    config, registry = load()
    replay_trace(engine, get_trace(engine, HOSTILE), config, registry, name=HOSTILE_RUN)
    ingest_trace(engine, [TraceInput(_wide_trace(directory / "wide.jsonl"))], name="wide")
    replay_trace(engine, get_trace(engine, "wide"), config, registry, name="wide")
    _killed_run(engine, config, registry)
    replay_gpu_policies(engine, directory)
    ingest_trace(engine, [TraceInput(DRA_TRACE)], name="dra")
    replay_trace(engine, get_trace(engine, "dra"), config, registry, name="dra")
    try:
        with serving(url) as base:
            yield {"base": base, "engine": engine, "chromium": chromium}
    finally:
        engine.dispose()


@contextmanager
def serving(url: str) -> Iterator[str]:
    """A live ``kaudit serve`` on the database ``url``; yields its base URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "kaudit", "serve", "--db", url, "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=1) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                if process.poll() is not None:
                    raise AssertionError(f"kaudit serve exited: {process.stdout.read()}"
                                         ) from None
                time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=10)


@contextmanager
def launched(chromium: str) -> Iterator[Any]:
    """Debian's Chromium driven by Playwright (no browser download)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium,
                                             args=["--no-sandbox", "--disable-gpu"])
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def browser(server: dict[str, Any]) -> Iterator[Any]:
    with launched(server["chromium"]) as browser:
        yield browser


class Visit:
    """One page in a fresh tab, with its console errors collected."""

    def __init__(self, browser: Any, base: str) -> None:
        self.page = browser.new_page(viewport={"width": 1400, "height": 900})
        self.base = base
        self.errors: list[str] = []
        self.page.on("console", lambda message: self.errors.append(message.text)
                     if message.type == "error" else None)
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.on("dialog", lambda dialog: (self.errors.append(f"dialog {dialog.message}"),
                                               dialog.dismiss()))

    def open(self, path: str) -> Any:
        self.page.goto(self.base + path)
        self.page.wait_for_selector("body[data-ready]", timeout=30_000)
        assert self.page.evaluate("document.body.dataset.ready") == "1", \
            self.page.inner_text("#error")
        return self.page

    def plots(self) -> dict[str, int]:
        """Each drawn chart's id and how many values its traces hold."""
        return self.page.evaluate("""() => Object.fromEntries(
            [...document.querySelectorAll('.js-plotly-plot')].map(d => [d.id,
              (d.data || []).reduce((n, t) => n + ((t.x && t.x.length) || (t.z && t.z.length)
                || (t.y && t.y.length) || 0), 0)]))""")

    def screenshot(self, name: str) -> None:
        target = ARTIFACTS / "screenshots"
        target.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(target / f"{name}.png"), full_page=True)

    def close(self) -> None:
        self.page.close()
        assert self.errors == [], self.errors


PAGES = [
    ("home", "/", {"runs-chart"}, "#runs-table tbody tr"),
    ("run", "/runs/default", {"chart-pending", "chart-attempts", "chart-allocation",
                              "chart-preemptions"}, "#attempts-table tbody tr"),
    ("history", "/runs/default/history?t=240", {"chart-nodes"}, "#events-table tbody tr"),
    ("pod", "/runs/packing/pods/data/postgres-1", {"chart-lifecycle", "chart-scores",
                                                   "chart-filters"}, "#score-table tbody tr"),
    ("events", "/runs/default/events?kind=attempt", set(), "#events-table tbody tr"),
    ("diff", "/diff?a=default&b=packing", {"chart-pending", "chart-allocation", "chart-nodes"},
     "#changes-table tbody tr"),
    ("diff-pod", "/diff/pods/data/postgres-1?a=default&b=packing", set(), ".side table"),
    ("config", "/runs/packing/config", set(), "#config-yaml"),
    ("gpu", "/gpu?run=fgd&run=bestfit", {"chart-unallocated", "chart-bars", "chart-frag",
                                         "chart-rate"}, "#values-table tbody tr"),
]


@pytest.mark.parametrize(("name", "path", "charts", "content"), PAGES,
                         ids=[p[0] for p in PAGES])
def test_every_page_renders_its_charts(server: dict[str, Any], browser: Any, name: str,
                                       path: str, charts: set[str], content: str) -> None:
    visit = Visit(browser, server["base"])
    page = visit.open(path)
    plots = visit.plots()
    assert charts <= set(plots), (charts, plots)
    assert all(plots[chart] > 0 for chart in charts), plots
    assert page.locator(content).count() > 0, content
    visit.screenshot(name)
    visit.close()


def _until(page: Any, condition: Any, timeout: float = 15.0) -> None:
    """Poll ``condition()`` from Python: the page's CSP forbids the eval that Playwright's
    ``wait_for_function`` relies on, which is as it should be."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the page did not change in time")
        page.wait_for_timeout(50)


def _clock(page: Any) -> float:
    return float(page.inner_text("#clock").split("=")[1].split("s")[0].replace(",", ""))


def _card(page: Any, label: str) -> str:
    return page.locator(".card", has=page.locator(".label", has_text=label)).locator(
        ".value").first.inner_text()


def test_the_scrubber_moves_through_time(server: dict[str, Any], browser: Any) -> None:
    visit = Visit(browser, server["base"])
    page = visit.open("/runs/default/history?t=0")
    placed_at_start = _card(page, "pods placed")
    page.eval_on_selector("#time", "(el) => { el.value = 240; "
                                   "el.dispatchEvent(new Event('input')); }")
    _until(page, lambda: _clock(page) == 240)
    assert _card(page, "pods placed") != placed_at_start
    assert int(_card(page, "unschedulable")) >= 2
    before = _clock(page)
    page.click("#step")
    _until(page, lambda: _clock(page) != before)
    after = _clock(page)
    assert after > before
    page.click("#step-back")
    _until(page, lambda: _clock(page) != after)
    assert _clock(page) < after
    start = _clock(page)
    page.click("#play")
    _until(page, lambda: _clock(page) > start + 5)
    page.click("#play")  # pause
    assert "t=" in page.url
    # a click on a node's bar lists its pods
    bars = page.locator("#chart-nodes .point")
    box = next(b for b in (bars.nth(i).bounding_box() for i in range(bars.count()))
               if b and b["height"] > 20)
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_selector("#node-pods")
    assert page.inner_text("#node-name").startswith("node-")
    visit.screenshot("history-scrubbed")
    visit.close()


def _rows(page: Any, table: str) -> list[list[str]]:
    return page.eval_on_selector_all(
        f"#{table} tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.innerText))")


@pytest.mark.parametrize("pod", ["data/postgres-1", "web/ssd-cache", "web/payments-0"])
def test_pod_page_shows_what_explain_says(server: dict[str, Any], browser: Any,
                                          pod: str) -> None:
    explained = explain_pod(server["engine"], "packing", pod)
    visit = Visit(browser, server["base"])
    page = visit.open(f"/runs/packing/pods/{pod}")
    assert _card(page, "bound to") == (explained["boundNode"] or "never bound")
    assert _card(page, "recorded cluster placed it on") == (explained["recordedNode"] or "–")
    attempts = _rows(page, "attempts-table")
    assert len(attempts) == len(explained["attempts"])
    for row, attempt in zip(attempts, explained["attempts"], strict=True):
        assert row[7] == (attempt["message"] or "")
        assert row[5] == str(attempt["evaluatedNodes"]) and row[6] == str(
            attempt["feasibleNodes"])
    assert page.inner_text("#verdict") == explained["verdict"]["headline"]
    # the page opens on the decisive attempt, as explain prints it
    last = explained["attempts"][explained["verdict"]["decisiveAttempt"] - 1]
    # the filter matrix: one row per evaluated node, each rejecting cell with its reasons
    matrix = _rows(page, "filter-table")
    headers = page.eval_on_selector_all("#filter-table thead th", "hs => hs.map(h => h.innerText)")
    shown = {row[0]: row for row in matrix}
    assert len(matrix) == min(50, len(last["nodes"]))
    for node, row in shown.items():
        for plugin, verdict in last["nodes"][node]["filter"].items():
            cell = row[headers.index(plugin)]
            if verdict["code"] == "Success":
                assert cell == "✓"
            else:
                assert cell == ("; ".join(verdict["reasons"]) or verdict["code"])
    # the selected node first, then by total and name (it may tie with a page of others)
    scored = sorted(((n, v["total"]) for n, v in last["nodes"].items() if "total" in v),
                    key=lambda item: (item[0] != last["selectedNode"], -item[1], item[0]))
    scores = _rows(page, "score-table")
    assert [(r[0], int(r[1])) for r in scores] == scored[:20]
    if last["selectedNode"] is None:
        assert page.inner_text("#attempt-message") == last["message"]
    elif len(scored) > 1:
        assert last["selectedNode"] in page.inner_text("#decision")
    visit.screenshot(f"pod-{pod.replace('/', '-')}")
    visit.close()


def test_an_attempt_without_scores_says_why_instead_of_an_empty_table(
        server: dict[str, Any], browser: Any) -> None:
    """report-gen's decisive attempt found one feasible node, which upstream does not score:
    the score section says so; the attempt's title is its number from 1 and its moment."""
    from kaudit.queries.pods import attempt_detail

    explained = explain_pod(server["engine"], "default", "batch/report-gen")
    number = explained["verdict"]["decisiveAttempt"]
    detail = attempt_detail(server["engine"], "default", "batch/report-gen", number)
    assert detail["scoresNote"] and not detail["scores"]["nodes"]
    visit = Visit(browser, server["base"])
    page = visit.open("/runs/default/pods/batch/report-gen")
    _until(page, lambda: page.locator("#scores p.note").count() > 0)
    assert page.inner_text("#scores") == detail["scoresNote"]
    assert page.locator("#score-table").count() == 0
    assert page.inner_text("#attempt-title") == (
        f"{number} at {detail['momentText']}: {detail['countsText']}")
    visit.close()


def _moved_by_bin_packing(engine: Any) -> str:
    from kaudit.queries.diff import diff_runs

    changes = diff_runs(engine, "default", "packing")["changes"]
    return next(c["pod"] for c in changes if c["change"] == "moved")


@pytest.mark.parametrize("case", ["preemptor", "unschedulable", "moved-by-bin-packing"])
def test_the_first_screen_states_the_verdict_and_its_cause(server: dict[str, Any],
                                                           browser: Any, case: str) -> None:
    """At 1280×800, without scrolling: the verdict line and the evidence behind it."""
    pod = {"preemptor": "web/payments-0", "unschedulable": "web/ssd-cache",
           "moved-by-bin-packing": _moved_by_bin_packing(server["engine"])}[case]
    explained = explain_pod(server["engine"], "packing", pod)
    verdict = explained["verdict"]
    visit = Visit(browser, server["base"])
    visit.page.set_viewport_size({"width": 1280, "height": 800})
    page = visit.open(f"/runs/packing/pods/{pod}")

    def on_first_screen(selector: str) -> bool:
        box = page.locator(selector).first.bounding_box()
        return box is not None and box["y"] + box["height"] <= 800 and box["x"] >= 0 \
            and box["x"] + box["width"] <= 1280

    assert page.inner_text("#verdict") == verdict["headline"]
    assert on_first_screen("#verdict")
    expected = {"preemptor": "by evicting", "unschedulable": "Pending",
                "moved-by-bin-packing": "Placed on"}[case]
    assert expected in verdict["headline"]
    if verdict["causes"]:
        first_cause = page.locator("#causes tbody tr").first
        assert on_first_screen("#causes tbody tr")
        assert first_cause.inner_text().split("\t")[1] == verdict["causes"][0]["cause"]
    assert on_first_screen("#inputs-table")
    assert "requests" in page.inner_text("#inputs-table")
    # the page is as wide as the window: nothing overflows sideways
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    target = ARTIFACTS / "screenshots"
    target.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(target / f"first-screen-{case}.png"))
    visit.close()


def test_diff_page_lists_changed_pods(server: dict[str, Any], browser: Any) -> None:
    visit = Visit(browser, server["base"])
    page = visit.open("/diff?a=default&b=packing")
    changes = _rows(page, "changes-table")
    assert changes and {row[1] for row in changes} <= {
        "moved", "scheduled-only-in-a", "scheduled-only-in-b", "preempted-only-in-a",
        "preempted-only-in-b", "pending-time"}
    moved = next(row for row in changes if row[1] == "moved")
    assert moved[2] != moved[3] and moved[5]
    page.click(f"#changes-table a:text-is('{moved[0]}')")
    page.wait_for_selector("body[data-ready='1']")
    assert "/diff/pods/" in page.url
    sides = [page.inner_text("#side-a"), page.inner_text("#side-b")]
    assert f"bound to {moved[2]}" in sides[0] and f"bound to {moved[3]}" in sides[1]
    visit.screenshot("diff-pod-moved")
    visit.close()


def test_the_diff_pod_page_fits_a_1280_pixel_window(server: dict[str, Any],
                                                   browser: Any) -> None:
    pod = _moved_by_bin_packing(server["engine"])
    visit = Visit(browser, server["base"])
    visit.page.set_viewport_size({"width": 1280, "height": 800})
    page = visit.open(f"/diff/pods/{pod}?a=default&b=packing")
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    for side in ("#side-a", "#side-b"):
        card = page.locator(f"{side} .side").bounding_box()
        scroller = page.locator(f"{side} .scroll").bounding_box()
        assert card is not None and scroller is not None
        assert card["x"] + card["width"] <= 1280
        assert scroller["x"] + scroller["width"] <= card["x"] + card["width"] + 0.5
        verdict = explain_pod(server["engine"], "default" if side == "#side-a" else "packing",
                              pod)["verdict"]["headline"]
        assert page.inner_text(f"{side} .verdict") == verdict
    target = ARTIFACTS / "screenshots"
    target.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(target / "diff-pod-1280.png"), full_page=True)
    visit.close()


def test_the_diff_pod_page_shows_the_verdict_its_reason_states(server: dict[str, Any],
                                                               browser: Any) -> None:
    """The page states the diff's reason for the change, and the panel of the run that
    decided shows that run's verdict on the node the other run chose."""
    from kaudit.queries.diff import diff_runs

    changes = diff_runs(server["engine"], "default", "packing")["changes"]
    for wording in (" rejected ", " over "):
        change = next(c for c in changes if c["change"] == "moved" and wording in c["reason"])
        visit = Visit(browser, server["base"])
        page = visit.open(f"/diff/pods/{change['pod']}?a=default&b=packing")
        assert change["reason"] in page.inner_text("#change")
        other = change["a"]["node"]
        assert page.inner_text("#side-b .other-node") == change["reason"]
        # the other run's node has its row in the score table, however it ranked, and a
        # rejected one its rejection with the exact amounts the reason states
        rows = {row[0]: row[1:] for row in page.eval_on_selector_all(
            "#side-b tr.chosen", "rows => rows.map(r => [...r.cells].map(c => c.innerText))")}
        assert other in rows
        if wording == " rejected ":
            assert rows[other][0].endswith(change["reason"].split(": ", 1)[1]), rows[other]
        visit.close()


def test_the_home_page_names_files_briefly_and_fits_1024_pixels(server: dict[str, Any],
                                                               browser: Any) -> None:
    """Configurations and trace sources by their file names, the full paths (kaudit stores
    them absolute) in titles; nothing cut off or pushed sideways in a 1024-pixel window."""
    visit = Visit(browser, server["base"])
    visit.page.set_viewport_size({"width": 1024, "height": 800})
    page = visit.open("/")
    for table in ("runs-table", "traces-table"):
        cells = [cell for row in _rows(page, table) for cell in row]
        assert not [cell for cell in cells if "/" in cell and "://" not in cell
                    and cell.startswith("/")], cells
    paths = page.eval_on_selector_all(
        ".path", "spans => spans.map(s => [s.innerText, s.getAttribute('title')])")
    assert any(title.endswith("sample-bin-packing.yaml") for _, title in paths), paths
    assert all(Path(title).name == text for text, title in paths), paths
    assert page.evaluate("document.documentElement.scrollWidth") <= 1024
    content = page.locator("#runs").bounding_box()
    for selector in ("#runs-table", "#traces-table"):
        box = page.locator(selector).bounding_box()
        assert box is not None and content is not None
        assert box["x"] + box["width"] <= content["x"] + content["width"] + 0.5, (selector, box)
    times = page.eval_on_selector_all("#traces-table time", "ts => ts.map(t => t.offsetHeight)")
    line = page.evaluate("parseFloat(getComputedStyle(document.body).lineHeight) || 20")
    assert times and all(height <= line * 1.5 for height in times), (times, line)  # one line
    visit.screenshot("home-1024")
    visit.close()


def test_home_page_names_wrap_only_between_words(server: dict[str, Any],
                                                browser: Any) -> None:
    """A trace or run name is never cut inside a word (``big500`` over two lines): names wrap
    where the browser may break a line, and a table too wide scrolls in its box."""
    visit = Visit(browser, server["base"])
    visit.page.set_viewport_size({"width": 1024, "height": 800})
    page = visit.open("/")
    for table in ("runs-table", "traces-table"):
        styles = page.eval_on_selector_all(
            f"#{table} td.name", "cells => cells.map(c => [getComputedStyle(c).overflowWrap, "
            "getComputedStyle(c).wordBreak])")
        assert styles and all(wrap != "anywhere" and brk not in ("break-all", "break-word")
                              for wrap, brk in styles), (table, styles)
        assert page.evaluate(f"document.getElementById('{table}').parentElement"
                             ".classList.contains('scroll')")
    visit.close()


def test_event_lines_are_the_apis_sentences(server: dict[str, Any], browser: Any) -> None:
    """The history page's events around a moment and the event log page show each record
    as the API words it (one renderer), never as a JSON object."""
    import urllib.request as request

    visit = Visit(browser, server["base"])
    for path, api, key in (
            ("/runs/default/history?t=240", "/api/v1/runs/default/state?t=240", "events"),
            ("/runs/default/events", "/api/v1/runs/default/events?offset=0&limit=100",
             "items")):
        page = visit.open(path)
        page.wait_for_selector("#events-table tbody tr")
        shown = page.eval_on_selector_all("#events-table tbody td.message",
                                          "cells => cells.map(c => c.innerText)")
        with request.urlopen(f"{server['base']}{api}") as answer:
            records = json.loads(answer.read())[key]
        assert shown == [r["text"] for r in records], path
        kinds = {r["kind"] for r in records}
        assert not any("{" in line or "}" in line for line in shown), (path, kinds)
        if key == "events":  # at 240 s: preemption's records, once shown as JSON
            assert {"nominate", "preempt", "create", "terminate"} <= kinds, kinds
    visit.close()


def test_what_if_on_the_history_page(server: dict[str, Any], browser: Any) -> None:
    """Paste a manifest, evaluate it at the scrubber's moment, read the same answer as the
    API gives; a bad manifest is refused in words."""
    import urllib.request as request

    visit = Visit(browser, server["base"])
    page = visit.open("/runs/default/history?t=240")
    manifest = ("apiVersion: v1\nkind: Pod\nmetadata: {name: probe, namespace: web}\n"
                "spec:\n  containers:\n  - name: app\n"
                "    resources: {requests: {cpu: '2', memory: 4Gi}}\n")
    page.fill("#whatif-manifest", manifest)
    page.click("#whatif-run")
    page.wait_for_selector("#whatif-verdict")
    with request.urlopen(request.Request(f"{server['base']}/api/v1/runs/default/whatif?t=240",
                                         data=manifest.encode(), method="POST")) as answer:
        expected = json.loads(answer.read())
    verdict = page.inner_text("#whatif-verdict")
    assert verdict == expected["sentences"]["headline"] == (
        f"web/probe would not fit: {expected['evaluation']['message']}")
    assert page.inner_text("#whatif-moment").startswith("At t = 240 s")
    assert page.inner_text("#whatif-counts") == expected["sentences"]["nodeCounts"]
    # the cause groups are the API's, worded as `kaudit whatif` and `kaudit explain` word them
    rows = page.eval_on_selector_all(
        "#whatif-rejected tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.innerText))")
    assert [(int(r[0]), r[1], r[2]) for r in rows] == [
        (c["count"], c["cause"], c["detail"]) for c in expected["causes"]]
    assert len(rows) >= 2
    assert "null" not in page.inner_text("#whatif-result")
    visit.screenshot("history-what-if")
    page.fill("#whatif-manifest", "kind: Service\nmetadata: {name: x}\n")
    page.click("#whatif-run")
    page.wait_for_selector("#whatif-error")
    assert "document.kind: 'Service', expected 'Pod'" in page.inner_text("#whatif-error")
    # the refusal is the expected answer, not a page error
    visit.errors = [e for e in visit.errors if "status of 400" not in e]
    visit.close()


def test_the_release_of_runs_and_of_a_what_if(server: dict[str, Any], browser: Any) -> None:
    """Each run shows the Kubernetes release it mirrored; the what-if form evaluates a pod as
    the run's release or the one chosen, and says which."""
    visit = Visit(browser, server["base"])
    page = visit.open("/")
    row = page.locator("#runs-table tbody tr", has_text="packing").first
    assert "Kubernetes v1.34.2" in row.inner_text()
    page = visit.open("/runs/default/history?t=240")
    options = page.eval_on_selector_all("#whatif-version option", "os => os.map(o => o.value)")
    assert options[0] == "" and "v1.34.2" in options  # the run's, then each supported one
    page.select_option("#whatif-version", "v1.34.2")
    page.click("#whatif-run")
    page.wait_for_selector("#whatif-verdict")
    assert page.inner_text("#whatif-moment").endswith(", Kubernetes v1.34.2:")
    visit.close()


def test_hostile_values_are_shown_as_text(server: dict[str, Any], browser: Any) -> None:
    visit = Visit(browser, server["base"])
    for path in ("/", f"/runs/{HOSTILE_RUN}", f"/runs/{HOSTILE_RUN}/history?t=1&node=node-x",
                 f"/runs/{HOSTILE_RUN}/pods/default/web-1", f"/runs/{HOSTILE_RUN}/events"):
        page = visit.open(path)
        assert page.evaluate("window.__xss") is None
        assert page.locator("#xss").count() == 0
        assert page.locator("img[src=x]").count() == 0
    page = visit.open("/")
    assert HOSTILE_RUN in page.inner_text("#runs-table")
    assert HOSTILE in page.inner_text("#traces-table")
    page = visit.open(f"/runs/{HOSTILE_RUN}/history?t=1&node=node-x")
    page.wait_for_selector("#node-pods")
    page.click("#node-detail summary")
    assert f"team={HOSTILE}" in page.inner_text("#node-detail")
    visit.screenshot("hostile-values")
    visit.close()


def test_large_clusters_are_drawn_as_a_heat_map(server: dict[str, Any], browser: Any) -> None:
    visit = Visit(browser, server["base"])
    page = visit.open("/runs/wide/history?t=1")
    kind = page.evaluate("document.getElementById('chart-nodes').data[0].type")
    assert kind == "heatmap"
    rows = page.evaluate("document.getElementById('chart-nodes').data[0].y")
    assert rows == ["zone-0 1–100", "zone-0 101–160", "zone-1 1–100", "zone-1 101–160"]
    assert _card(page, "pods placed") == "40"
    cell = page.locator("#chart-nodes .nsewdrag").bounding_box()
    page.mouse.click(cell["x"] + 3, cell["y"] + 3)  # the first node of the first row
    page.wait_for_selector("#node-pods")
    assert page.inner_text("#node-name") == "wide-000"
    visit.screenshot("history-heat-map")
    visit.close()


def test_a_killed_run_shows_as_abandoned(server: dict[str, Any], browser: Any) -> None:
    """A run whose replay died without a word is shown as abandoned, with whose it was, on
    the home page and on its own page, and the rest of the pages still draw."""
    visit = Visit(browser, server["base"])
    page = visit.open("/")
    row = page.locator("#runs-table tbody tr", has_text=KILLED_RUN)
    assert "abandoned" in row.inner_text()
    page = visit.open(f"/runs/{KILLED_RUN}")
    assert "status abandoned" in page.inner_text("p.lead")
    assert "build-7" in page.inner_text("#run-error")
    visit.screenshot("abandoned-run")
    visit.close()


def test_a_nodes_gpus_on_the_history_page(server: dict[str, Any], browser: Any) -> None:
    visit = Visit(browser, server["base"])
    node = explain_pod(server["engine"], "fgd", "default/job-00")["verdict"]["node"]
    page = visit.open(f"/runs/fgd/history?t=4.7&node={node}")
    _until(page, lambda: page.locator("#node-gpus tbody tr").count() > 0)
    rows = _rows(page, "node-gpus")
    assert any("default/job-00 (500)" in row[-1] for row in rows), rows
    visit.screenshot("history-gpus")
    visit.close()


def test_whole_gpus_show_on_the_history_pages_node_panel(server: dict[str, Any],
                                                         browser: Any) -> None:
    """A pod asking ``nvidia.com/gpu: 2`` holds two of its node's GPUs in the panel, marked as
    counted by kube-scheduler (the kubelet picks the devices)."""
    visit = Visit(browser, server["base"])
    page = visit.open("/runs/default/history?t=240&node=gpu-c1")
    _until(page, lambda: page.locator("#node-gpus tbody tr").count() > 0)
    held = [row for row in _rows(page, "node-gpus") if "ml/train-resnet-0" in row[-1]]
    assert len(held) == 2 and all(row[1] == "1,000" for row in held), held
    assert "kubelet's device plugin" in page.inner_text("#node-gpus-assumed")
    visit.close()


def test_the_devices_a_pod_got_and_why_none_were_left(server: dict[str, Any],
                                                     browser: Any) -> None:
    """DRA pods: the pod page shows the devices of the chosen node's allocation, and for a pod
    that fit nowhere each request's matching and free devices, as ``kaudit explain`` does."""
    engine = server["engine"]
    bound = explain_pod(engine, "dra", "default/train-0001")
    notes = bound["attempts"][-1]["pluginNotes"]["DynamicResources"]
    visit = Visit(browser, server["base"])
    page = visit.open("/runs/dra/pods/default/train-0001")
    _until(page, lambda: page.locator("#devices-table tbody tr").count() > 0)
    rows = _rows(page, "devices-table")
    assert [row[-1] for row in rows] == [d["device"] for d in notes["devices"]]
    assert rows[0][3] == notes["devices"][0]["pool"]
    visit.screenshot("pod-dra-devices")
    pending = explain_pod(engine, "dra", "default/train-0047")
    supply = pending["attempts"][-1]["pluginNotes"]["DynamicResources"]["requests"]
    page = visit.open("/runs/dra/pods/default/train-0047")
    _until(page, lambda: page.locator("#device-supply-table tbody tr").count() > 0)
    rows = _rows(page, "device-supply-table")
    assert [(r[1], r[4], r[5]) for r in rows] == [
        (s["request"], str(s["matching"]), str(s["free"])) for s in supply]
    assert "cannot allocate all claims" in page.inner_text("#attempt-message")
    visit.screenshot("pod-dra-supply")
    visit.close()
