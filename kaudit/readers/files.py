"""Open trace files (plain or gzip, detected by content) and read them line by line.

Reading is streaming and memory stays bounded whatever the file size. A damaged gzip stream
becomes a :class:`~kaudit.errors.TraceError` naming the line where the data stopped.
"""

from __future__ import annotations

import gzip
import hashlib
import zlib
from collections.abc import Callable, Generator
from pathlib import Path
from typing import BinaryIO

from kaudit.errors import TraceError

#: How much of a rejected line is kept to show (characters).
SNIPPET = 1000
GZIP_MAGIC = b"\x1f\x8b"
UTF8_BOM = b"\xef\xbb\xbf"
_CHUNK = 1 << 20


def is_gzip(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(2) == GZIP_MAGIC


def snippet(line: bytes) -> str:
    """The start of a rejected line, as text, to show with the reason."""
    return line[:SNIPPET].decode("utf-8", errors="replace").rstrip("\r\n")


def _open(path: Path) -> tuple[BinaryIO, BinaryIO]:
    """(raw file, readable stream); the raw file's position measures progress."""
    try:
        raw = path.open("rb")
    except OSError as exc:
        raise TraceError(str(path), None, f"cannot open: {exc.strerror or exc}") from None
    if raw.read(2) == GZIP_MAGIC:
        raw.seek(0)
        return raw, gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    raw.seek(0)
    return raw, raw


def _damage(exc: Exception) -> str:
    if isinstance(exc, EOFError):
        return "truncated gzip stream: the file ends before the end of the compressed data"
    return f"corrupt gzip stream: {exc}"


def iter_lines(path: Path, progress: Callable[[int], None] | None = None
               ) -> Generator[tuple[int, bytes], None, None]:
    """Yield ``(line_number, line)`` from ``path``; ``progress`` receives bytes consumed."""
    raw, stream = _open(path)
    line_number = 0
    reported = 0
    try:
        while True:
            try:
                line = stream.readline()
            except (EOFError, OSError, zlib.error) as exc:
                raise TraceError(str(path), line_number + 1, _damage(exc)) from None
            if not line:
                break
            line_number += 1
            if line_number == 1 and line.startswith(UTF8_BOM):
                line = line[len(UTF8_BOM):]  # written by some Windows editors
            yield line_number, line
            if progress is not None and line_number % 512 == 0:
                position = raw.tell()
                progress(position - reported)
                reported = position
        if progress is not None:
            progress(raw.tell() - reported)
    finally:
        stream.close()
        raw.close()


def read_all(path: Path) -> bytes:
    """The whole (decompressed) content of a small file such as a snapshot."""
    raw, stream = _open(path)
    try:
        return stream.read()
    except (EOFError, OSError, zlib.error) as exc:
        raise TraceError(str(path), None, _damage(exc)) from None
    finally:
        stream.close()
        raw.close()


def hash_content(path: Path, digest: hashlib._Hash) -> None:
    """Feed the decompressed content of ``path`` to ``digest``; damaged tails are ignored here
    (reading the file for real reports them)."""
    raw, stream = _open(path)
    try:
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
    except (EOFError, OSError, zlib.error):
        digest.update(b"\0damaged")
    finally:
        stream.close()
        raw.close()
