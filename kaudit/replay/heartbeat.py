"""A run's heartbeat, kept fresh from a thread of its own while the replay's process lives.

The heartbeat is what tells a live run from an abandoned one (:mod:`kaudit.eventlog.runs`), so
it must not wait for the scheduling loop: one attempt can keep the loop busy for minutes (a
costly filter, a large DRA search). The thread has its own connection from the engine's pool
and writes ``heartbeat_at`` every ``HEARTBEAT_SECONDS``, only while the run is still this
process's and still ``running``; when that update finds no such row the run was removed under
the replay, which :attr:`RunHeartbeat.removed` tells the replay at its next step.

Pure Python work releases the interpreter lock every few milliseconds, so the thread gets its
turn; a single C call that holds the lock for more than ``STALE_SECONDS`` would still starve it.
"""

from __future__ import annotations

import logging
import threading
from datetime import UTC, datetime

from sqlalchemy import Engine, update

from kaudit.eventlog import runs
from kaudit.eventlog.runs import RunStatus, this_owner
from kaudit.store.models import Run

log = logging.getLogger("kaudit.replay")


class RunHeartbeat:
    """Start with :meth:`start`, end with :meth:`stop` before the run's final status is
    written (the thread only touches a ``running`` run)."""

    def __init__(self, engine: Engine, run_id: int,
                 interval_seconds: float | None = None) -> None:
        self.engine = engine
        self.run_id = run_id
        self.interval_seconds = interval_seconds or runs.HEARTBEAT_SECONDS
        self._stopping = threading.Event()
        self._removed = threading.Event()
        self._thread = threading.Thread(target=self._beat_until_stopped, daemon=True,
                                        name=f"kaudit-heartbeat-{run_id}")

    @property
    def removed(self) -> bool:
        """The run's row is gone (or no longer this process's running run)."""
        return self._removed.is_set()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(timeout=self.interval_seconds)

    def beat(self) -> None:
        """Write the heartbeat once; note the run's removal when no row was updated."""
        host, pid = this_owner()
        with self.engine.begin() as connection:
            updated = connection.execute(
                update(Run)
                .where(Run.id == self.run_id, Run.owner_host == host, Run.owner_pid == pid,
                       Run.status == RunStatus.RUNNING)
                .values(heartbeat_at=datetime.now(UTC))).rowcount
        if updated == 0:
            self._removed.set()

    def _beat_until_stopped(self) -> None:
        while not self._stopping.wait(self.interval_seconds):
            try:
                self.beat()
            except Exception as exc:  # a locked or briefly unreachable database: beat again
                log.warning("run %s: heartbeat not written: %s", self.run_id, exc)
            if self.removed:
                return
