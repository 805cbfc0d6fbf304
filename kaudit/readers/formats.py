"""Trace formats ``kaudit ingest`` reads, and telling them apart from a file's first line.

The user may name a family with ``--format`` (``watch``, ``audit``, ``simulator``,
``alibaba``); ``auto`` (the default) looks at each file's first non-empty line, decompressed.
A JSON or YAML *document* (a Kubernetes List, a kube-scheduler-simulator export) is a
snapshot: the cluster's state at the trace's start.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from kaudit.errors import TraceError
from kaudit.readers import alibaba, simulator
from kaudit.readers.files import iter_lines

AUTO = "auto"
WATCH = "watch"
AUDIT = "audit"
SIMULATOR = "simulator"
ALIBABA = "alibaba"
FAMILIES = (AUTO, WATCH, AUDIT, SIMULATOR, ALIBABA)

#: What :func:`sniff` tells.
DOCUMENT = "document"
ALIBABA_NODES = "alibaba-nodes"
ALIBABA_PODS = "alibaba-pods"
SIMULATOR_RECORDS = simulator.SIMULATOR_RECORDS


def _first_lines(path: Path, count: int = 5) -> list[bytes]:
    lines: list[bytes] = []
    for _, line in iter_lines(path):
        if line.strip():
            lines.append(line.strip())
            if len(lines) == count:
                break
    return lines


def _json_format(doc: object) -> str:
    if not isinstance(doc, dict):
        return WATCH
    api_version = doc.get("apiVersion")
    if isinstance(api_version, str) and api_version.startswith("audit.k8s.io/"):
        return AUDIT
    if simulator.is_record(doc):
        return SIMULATOR_RECORDS
    if "type" in doc and "object" in doc:
        return WATCH
    if doc.get("kind") == "List" or "items" in doc or simulator.is_snapshot(doc):
        return DOCUMENT
    return WATCH  # the watch reader says what is wrong with the line


def sniff(path: Path) -> str:
    """The format of ``path``: WATCH, AUDIT, SIMULATOR_RECORDS, DOCUMENT, ALIBABA_NODES or
    ALIBABA_PODS; a file none of these raises :class:`TraceError`.

    JSON Lines are told by the first of their first lines that parses, so that one damaged
    line does not hide the format of the rest (its reader then reports that line).
    """
    lines = _first_lines(path)
    if not lines:
        return WATCH  # an empty file: an empty trace
    line = lines[0]
    if line[:1] == b"{":
        if line == b"{":
            return DOCUMENT  # indented JSON: a List or an export
        for candidate in lines:
            try:
                return _json_format(orjson.loads(candidate))
            except orjson.JSONDecodeError:
                continue
        return WATCH
    if line[:1] == b"[":
        return DOCUMENT
    header = [cell.strip() for cell in line.decode("utf-8", errors="replace").split(",")]
    if alibaba.is_node_list(header):
        return ALIBABA_NODES
    if alibaba.is_pod_list(header):
        return ALIBABA_PODS
    nearly = alibaba.missing_columns(header)
    if nearly is not None:
        shape, missing = nearly
        raise TraceError(str(path), 1, f"an Alibaba openb {shape} without the column(s) "
                                       f"{', '.join(missing)}")
    if b":" in line or line.startswith(b"---"):
        return DOCUMENT  # YAML
    raise TraceError(str(path), 1, "unknown format: not JSON Lines watch events, an audit log, "
                                   "a simulator record, a Kubernetes List or an Alibaba openb "
                                   "CSV (use --format to say which)")


def family_of(sniffed: str) -> str:
    return {AUDIT: AUDIT, SIMULATOR_RECORDS: SIMULATOR, ALIBABA_NODES: ALIBABA,
            ALIBABA_PODS: ALIBABA}.get(sniffed, WATCH)
