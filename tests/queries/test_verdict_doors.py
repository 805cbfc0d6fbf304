"""Every door of a pod's verdict states the same answer: for every pod of several runs (the
sample under two configurations, the DRA sample, a generated 2,000-node trace with preemption),
``kaudit explain`` text, ``kaudit explain --json``, the pod page's API and the rendered page give
the same verdict, node counts and cause groups, and no sentence on the page contradicts a count
on it.

The runs are replayed once per session on SQLite only: the comparison reads each pod through four
doors, and doing it again on PostgreSQL would double the test's time without testing anything
the per-backend query tests do not.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner
from flask.testing import FlaskClient

from kaudit.cli import cli
from kaudit.dashboard import create_app
from kaudit.queries.runs import get_run, iter_run_events
from tests.queries.conftest import DoorRuns

RUNS = ("default", "packing", "dra", "wide", "small")
COUNTS = re.compile(r"([\d,]+)(?: of [\d,]+)? nodes? evaluated, ([\d,]+) feasible, "
                    r"([\d,]+) rejected")
#: Words of a Python repr or a dict dump, which no sentence may carry.
REPR = re.compile(r"\w=\[|\{'|': |\[\{|\w=True|\w=False")


@dataclass
class PageText:
    """What a rendered pod page states: its verdict block, cause rows, events, all text."""

    verdict: str = ""
    summary: list[str] = field(default_factory=list)
    causes: list[list[str]] = field(default_factory=list)
    inputs: list[list[str]] = field(default_factory=list)
    causes_note: str = ""
    events: list[str] = field(default_factory=list)
    sentences: list[str] = field(default_factory=list)


class _PageParser(HTMLParser):
    """Collects the text of the elements the comparison reads (the page's own markup:
    ``#verdict``, ``#verdict-summary li``, the body cells of ``#causes-table`` and
    ``#inputs-table``, ``#causes-note``, ``.event-text``), and every text outside scripts and
    raw-record disclosures."""

    TABLES: ClassVar[dict[str, str]] = {"causes-table": "causes", "inputs-table": "inputs"}

    def __init__(self) -> None:
        super().__init__()
        self.page = PageText()
        self._open: list[tuple[str, str]] = []  # (tag, role)
        self._row: list[str] | None = None
        self._skip = 0

    def _role(self, tag: str, attrs: dict[str, str | None]) -> str:
        ident, classes = attrs.get("id") or "", (attrs.get("class") or "").split()
        inside = {role for _, role in self._open}
        if ident in ("verdict", "causes-note"):
            return ident
        if tag == "li" and "summary" in inside:
            return "summary-item"
        if ident == "verdict-summary":
            return "summary"
        if ident in self.TABLES:
            return self.TABLES[ident]
        if tag == "tbody" and inside & set(self.TABLES.values()):
            return "body"
        if tag == "tr" and "body" in inside:
            self._row = []
            return "row"
        if tag in ("td", "th") and "row" in inside:
            return "cell"
        if "event-text" in classes:
            return "event"
        return ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style", "pre", "details"):
            self._skip += 1
        if tag in ("br", "meta", "link", "img", "input"):
            return
        self._open.append((tag, self._role(tag, dict(attrs))))

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "pre", "details"):
            self._skip -= 1
        while self._open:
            opened, role = self._open.pop()
            if role == "row" and self._row is not None:
                table = next(r for _, r in reversed(self._open) if r in self.TABLES.values())
                getattr(self.page, table).append(self._row)
                self._row = None
            if opened == tag:
                break

    def handle_data(self, data: str) -> None:
        text = data.strip()
        if not text:
            return
        roles = [role for _, role in self._open]
        innermost = next((r for r in reversed(roles) if r), "")
        if innermost == "verdict":
            self.page.verdict += text
        elif innermost == "summary-item":
            self.page.summary.append(text)
        elif innermost == "cell" and self._row is not None:
            self._row.append(text)
        elif innermost == "causes-note":
            self.page.causes_note = text
        elif innermost == "event" and self._skip == 0:
            self.page.events.append(text)
        if self._skip == 0:
            self.page.sentences.append(text)


def _page(html: str) -> PageText:
    parser = _PageParser()
    parser.feed(html)
    return parser.page


def _number(text: str) -> int:
    return int(text.replace(",", ""))


@pytest.fixture(scope="module")
def client(door_runs: DoorRuns) -> Iterator[FlaskClient]:
    app = create_app({"KAUDIT_DB": door_runs.url, "TESTING": True})
    yield app.test_client()
    app.extensions["kaudit.engine"].dispose()


def _cause_key(cause: dict[str, Any]) -> tuple[int, str, str]:
    return cause["count"], cause["cause"], cause["detail"]


def _check_text_door(text: str, explained: dict[str, Any]) -> None:
    """The explain text's verdict block, decisive attempt, causes and events are the JSON's."""
    verdict = explained["verdict"]
    lines = text.splitlines()
    assert lines[1] == verdict["headline"]
    summary = [line.strip() for line in lines[2:2 + len(verdict["summary"])]]
    assert summary == verdict["summary"]
    number = verdict["decisiveAttempt"]
    if number is not None:
        attempt = explained["attempts"][number - 1]
        header = next(line for line in lines
                      if line.startswith(f"Decisive attempt #{number} at"))
        assert header.endswith(f": {attempt['countsText']}")
        for cause in verdict["causes"]:
            assert any(line.split()[:1] == [f"{cause['count']}"] and cause["cause"] in line
                       and cause["detail"] in line for line in lines), cause
        if not verdict["causes"] and verdict["causesNote"]:
            assert f"  {verdict['causesNote']}" in lines
    for event in explained["events"]:
        if event["kind"] != "watch":
            assert f"  {event['at']}  {event['text']}" in lines


def _check_counts(sentences: list[str], nodes: dict[str, int] | None) -> None:
    """No sentence states node counts other than the decisive attempt's, or says every
    evaluated node passed while some were rejected."""
    for sentence in sentences:
        if nodes is None:
            assert not COUNTS.search(sentence), sentence
            continue
        if sentence.startswith("Decisive attempt"):
            found = COUNTS.search(sentence)
            assert found is not None, sentence
            assert tuple(_number(g) for g in found.groups()) == (
                nodes["evaluated"], nodes["feasible"], nodes["rejected"]), sentence
        if "percentageOfNodesToScore" in sentence:
            # filtering stops only once feasible nodes were found
            assert nodes["feasible"] > 0, sentence
        if re.search(r"\b(every|all)\b.*\bpassed\b", sentence, re.IGNORECASE):
            assert nodes["rejected"] == 0, sentence
        if re.search(r"\bno node\b", sentence, re.IGNORECASE) and "fits" in sentence:
            assert nodes["feasible"] == 0 or sentence.startswith("Why"), sentence


def _check_pod(runner: CliRunner, client: FlaskClient, door_runs: DoorRuns, run: str,
               pod: str) -> None:
    db = ["--db", door_runs.url]
    text = runner.invoke(cli, ["explain", run, pod, *db], catch_exceptions=False).output
    explained = json.loads(runner.invoke(cli, ["explain", run, pod, "--json", *db],
                                         catch_exceptions=False).output)
    namespace, name = pod.split("/", 1)
    api = client.get(f"/api/v1/runs/{run}/pods/{namespace}/{name}").get_json()
    response = client.get(f"/runs/{run}/pods/{namespace}/{name}")
    assert response.status_code == 200
    page = _page(response.get_data(as_text=True))

    verdict = explained["verdict"]
    assert api["verdict"] == verdict
    _check_text_door(text, explained)
    assert page.verdict == verdict["headline"]
    assert page.summary == verdict["summary"]
    assert [tuple(row) for row in page.causes] == [
        (str(c["count"]), c["cause"], *((c["detail"],) if c["detail"] else ()), c["examples"])
        for c in verdict["causes"]]
    assert page.causes_note == (verdict["causesNote"] or "" if not verdict["causes"] else "")
    assert page.inputs == [[label.strip(), text] if label.strip() else [text]
                           for label, text in verdict["inputsLines"]]
    nodes = verdict["nodes"]
    if verdict["causes"]:
        assert nodes is not None
        left_out = sum(c["count"] for c in verdict["causes"] if c["facts"].get("leftOut"))
        assert sum(c["count"] for c in verdict["causes"]) - left_out == nodes["rejected"]
        if left_out:
            # the nodes a PreFilterResult left out are all the unevaluated ones: no sample
            assert left_out == nodes["all"] - nodes["evaluated"]
            assert "percentageOfNodesToScore" not in verdict["summary"][0]
    _check_counts(page.sentences, nodes)
    _check_counts(verdict["summary"], nodes)
    # the cards under the verdict: the node it names, and the recorded cluster's
    card = page.sentences.index("bound to")
    assert page.sentences[card - 1] == (explained["boundNode"] or "never bound")
    assert page.sentences[card + 1:card + 3] == [explained["recordedNode"] or "–",
                                                 "recorded cluster placed it on"]
    if verdict["state"] in ("bound", "bound-by-trace", "preempted"):
        assert explained["boundNode"] == verdict["node"]

    # attempts are numbered as the event log numbers them, at every door
    recorded = [e["attempt"] for e in iter_run_events(
        door_runs.engine, get_run(door_runs.engine, run).id, pod=pod, kind="attempt")]
    assert [a["attempt"] for a in explained["attempts"]] == recorded
    assert [a["attempt"] for a in api["attempts"]] == recorded
    number = verdict["decisiveAttempt"]
    if number is not None:
        assert f"Decisive attempt #{number}:" in verdict["summary"][0]
        detail = client.get(f"/api/v1/runs/{run}/pods/{namespace}/{name}/attempts/{number}"
                            ).get_json()
        assert detail["attempt"] == number
        assert detail["countsText"] == explained["attempts"][number - 1]["countsText"]
        assert (detail["evaluatedNodes"], detail["feasibleNodes"]) == (
            nodes["evaluated"], nodes["feasible"])
        assert [_cause_key(c) for c in detail["causes"]] == [
            _cause_key(c) for c in verdict["causes"]]
        if detail["selectedNode"] and detail["scores"]["nodes"]:
            assert detail["scores"]["nodes"][0] == detail["selectedNode"]

    events = [e for e in explained["events"] if e["kind"] != "watch"]
    assert [e["text"] for e in api["events"] if e["kind"] != "watch"] == \
        [e["text"] for e in events] == page.events
    for sentence in [*page.sentences, *(e["text"] for e in events)]:
        assert not REPR.search(sentence), sentence
        assert len(sentence) < 600, sentence


@pytest.mark.parametrize("run", RUNS)
def test_every_door_states_the_same_verdict(door_runs: DoorRuns, client: FlaskClient,
                                            run: str) -> None:
    runner = CliRunner()
    pods = door_runs.pods[run]
    assert len(pods) >= 5
    for pod in pods:
        _check_pod(runner, client, door_runs, run, pod)
