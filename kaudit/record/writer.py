"""Write recorded events as a kaudit native trace: JSON Lines, gzip when the name ends in .gz.

One line per event, ``{"ts": RFC 3339 UTC with microseconds, "type", "object"}``, written
whole, so stopping between two writes never leaves half a line. Times never go backwards in
the file (an event stamped earlier than the one before it, by another thread or a clock step,
takes the previous time), as ``kaudit ingest`` requires. The file opens with the recording's
header when the API server said its release (:mod:`kaudit.model.recording`: a ``BOOKMARK``
every watch reader skips, which ``kaudit ingest`` reads the release from). An existing file is
only replaced when asked to.
"""

from __future__ import annotations

import gzip
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO

import orjson

from kaudit import __version__
from kaudit.errors import InputError, KauditError
from kaudit.model.recording import header_object

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_BUFFER = 1 << 20


def format_rfc3339(ts_us: int) -> str:
    """``2026-11-23T10:00:00.123456Z`` for epoch microseconds (always six fraction digits)."""
    moment = _EPOCH + timedelta(microseconds=ts_us)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class TraceWriter:
    """The output file of one recording; use as a context manager or call :meth:`close`."""

    def __init__(self, path: Path, *, force: bool = False) -> None:
        self.path = path
        self.compressed = path.name.endswith(".gz")
        self.events = 0
        self._last_ts = 0
        self._dirty = False
        try:
            self._raw: BinaryIO = path.open("wb" if force else "xb", buffering=_BUFFER)
        except FileExistsError:
            raise InputError(f"{path} exists: give --force to overwrite it") from None
        except OSError as exc:
            raise InputError(f"cannot create {path}: {exc.strerror or exc}") from None
        self._out: BinaryIO = (
            gzip.GzipFile(filename=path.name[:-3], mode="wb", fileobj=self._raw)  # type: ignore[assignment]
            if self.compressed else self._raw)
        self._closed = False

    def write(self, ts_us: int, event_type: str, obj: dict[str, Any]) -> None:
        """Append one event; ``ts_us`` is when it was received (epoch microseconds)."""
        self._line(ts_us, event_type, obj)
        self.events += 1

    def write_header(self, ts_us: int, kubernetes_version: str) -> None:
        """Write the recording's header (the API server's release, :mod:`kaudit.model.
        recording`); it is no event: a file holding only its header is still empty."""
        self._line(ts_us, "BOOKMARK", header_object(kubernetes_version,
                                                    f"kaudit/{__version__}"))

    def _line(self, ts_us: int, event_type: str, obj: dict[str, Any]) -> None:
        ts_us = max(ts_us, self._last_ts)
        self._last_ts = ts_us
        line = orjson.dumps({"ts": format_rfc3339(ts_us), "type": event_type, "object": obj})
        try:
            self._out.write(line + b"\n")
        except OSError as exc:
            raise KauditError(f"cannot write {self.path}: {exc.strerror or exc}") from None
        self._dirty = True

    def flush(self) -> None:
        """Push what was written to the operating system (a gzip file stays decodable)."""
        if self._dirty and not self._closed:
            try:
                self._out.flush()
                if self._out is not self._raw:
                    self._raw.flush()
            except OSError as exc:
                raise KauditError(f"cannot write {self.path}: {exc.strerror or exc}") from None
            self._dirty = False

    def close(self) -> None:
        """Finish the file (the gzip trailer included); safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._out is not self._raw:
                self._out.close()
        finally:
            self._raw.close()

    def discard(self) -> None:
        """Close and remove the file (nothing worth keeping was recorded)."""
        self.close()
        self.path.unlink(missing_ok=True)

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()
