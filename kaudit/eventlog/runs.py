"""A run's status, who is replaying it, and whether that process is still there.

A run records its owner (host and pid) and a heartbeat the replay refreshes every
``HEARTBEAT_SECONDS`` from a thread of its own (:mod:`kaudit.replay.heartbeat`), so a replay
busy in one long scheduling attempt still reads ``running``. A run still marked ``running``
reads as ``abandoned`` when its owner is gone: the heartbeat is older than ``STALE_SECONDS``,
or the owner ran on this host and its pid no longer exists (a SIGKILL, a crash). Runs made
before owners were recorded have no heartbeat and read as abandoned if still marked running.
"""

from __future__ import annotations

import os
import socket
from datetime import UTC, datetime
from enum import StrEnum

from kaudit.errors import KauditError


class RunStatus(StrEnum):
    """What the store says (``running``, ``complete``, ``failed``) and, shown only, ``abandoned``:
    a run still marked running whose replay is gone."""

    RUNNING = "running"
    COMPLETE = "complete"
    FAILED = "failed"
    ABANDONED = "abandoned"


HEARTBEAT_SECONDS = 10.0
STALE_SECONDS = 60.0


def this_owner() -> tuple[str, int]:
    return socket.gethostname(), os.getpid()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: it exists
    return True


def effective_status(status: str, owner_host: str | None, owner_pid: int | None,
                     heartbeat_at: datetime | None, now: datetime | None = None) -> RunStatus:
    """The status to show: ``abandoned`` for a running run whose owner is gone."""
    if status != RunStatus.RUNNING:
        return RunStatus(status)
    if heartbeat_at is None:
        return RunStatus.ABANDONED
    now = now or datetime.now(UTC)
    beat = heartbeat_at if heartbeat_at.tzinfo is not None else heartbeat_at.replace(tzinfo=UTC)
    if (now - beat).total_seconds() > STALE_SECONDS:
        return RunStatus.ABANDONED
    host, _ = this_owner()
    if owner_host == host and owner_pid is not None and not _alive(owner_pid):
        return RunStatus.ABANDONED
    return RunStatus.RUNNING


class RunRemovedError(KauditError):
    """The run a replay writes was removed (``kaudit runs rm``) while it was replaying: the
    writer stops; there is nothing left to mark."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"run {name} was removed while it was replaying; stopped")
