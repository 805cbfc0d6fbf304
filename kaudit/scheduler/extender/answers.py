"""Extender answers replayed from a previous run instead of calling the extender.

``kaudit replay --extender-answers RUN`` makes a replay deterministic without the extender
service (in CI, say): each call is answered with what the extender answered the same question
in the recorded run. The same question is the same extender, verb and request body (its
sha256, kept with every recorded call); when a question was asked several times, the answers
are given in the order they were recorded. The answer is the body the extender sent, byte for
byte, read again as the live call read it (errors in it included); a call that got no answer
fails again with its recorded error. The recorded latency is replayed too, so a run replayed
from its own answers has the same event log, byte for byte.

A question with no recorded answer is not invented: the call fails with an error saying so,
handled as any failed call (skipped for an ``ignorable`` extender, else the attempt fails),
and the replay counts it in :attr:`RecordedAnswers.missing`.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict, deque
from collections.abc import Iterable, Mapping
from typing import Any

from kaudit.config.extenders import ExtenderConfig
from kaudit.framework.extender import ExtenderError, recorded_body
from kaudit.scheduler.extender.http import Reply, Transport


class RecordedAnswers:
    """The recorded calls of one run, as a transport factory for the extenders."""

    def __init__(self, calls: Iterable[Mapping[str, Any]], source: str) -> None:
        self.source = source
        self._answers: dict[tuple[str, str, str], deque[Mapping[str, Any]]] = defaultdict(deque)
        self.recorded = 0
        for call in calls:
            key = (str(call.get("extender")), str(call.get("verb")), str(call.get("request")))
            self._answers[key].append(call)
            self.recorded += 1
        #: The questions no recorded answer was left for: (extender, verb, nodes asked about).
        self.missing: list[tuple[str, str, int]] = []

    def transport(self, config: ExtenderConfig) -> Transport:
        prefix = config.url_prefix.rstrip("/") + "/"

        def answer(url: str, body: bytes, timeout: float | None) -> Reply:
            verb = url[len(prefix):] if url.startswith(prefix) else url
            key = (config.name, verb, hashlib.sha256(body).hexdigest()[:32])
            queue = self._answers.get(key)
            if not queue:
                self.missing.append((config.name, verb, _nodes_asked(body)))
                raise ExtenderError(f"no recorded answer in {self.source} for {verb} with "
                                    f"extender at URL {url} (this question was not asked in "
                                    "the recorded run)", latency_us=0)
            call = queue.popleft()
            latency = int(call.get("latencyUs") or 0)
            recorded = recorded_body(call)
            if recorded is not None:
                return Reply(200, recorded, latency)
            # No answer was read (refused, timed out, not HTTP 200): the same failure again.
            raise ExtenderError(str(call.get("error") or "no answer recorded"),
                                latency_us=latency)
        return answer

    def missing_summary(self) -> dict[str, Any]:
        by_verb: dict[str, int] = defaultdict(int)
        for extender, verb, _ in self.missing:
            by_verb[f"{extender} {verb}"] += 1
        return {"source": self.source, "recorded": self.recorded,
                "missing": len(self.missing), "missingByCall": dict(by_verb)}


def _nodes_asked(body: bytes) -> int:
    try:
        args = json.loads(body)
    except ValueError:
        return 0
    if not isinstance(args, dict):
        return 0
    for key in ("NodeNames", "NodeNameToMetaVictims", "NodeNameToVictims"):
        if isinstance(args.get(key), (list, dict)):
            return len(args[key])
    items = (args.get("Nodes") or {}).get("items") if isinstance(args.get("Nodes"), dict) else None
    return len(items) if isinstance(items, list) else (1 if "Node" in args else 0)
