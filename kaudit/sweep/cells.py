"""A sweep's cells in the database: registering them, claiming, finishing and releasing.

Every change of a cell is one short statement, so concurrent workers on SQLite (which
serialises writers, waiting up to its busy timeout) and on PostgreSQL never hold a lock across
a read and a write. A cell is claimed by an attempt with a fresh token; only the attempt that
still holds the claim may finish the cell, so an attempt presumed lost (its worker died and
Dask ran the cell elsewhere) can never overwrite the retry's result.

Cell states: ``pending`` (never run, or released), ``running`` (claimed), ``complete`` (its run
is stored; redone only if that run is removed), ``failed`` (with the error; retried when the
sweep runs again).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy import Engine, delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from kaudit import __version__
from kaudit.errors import InputError
from kaudit.eventlog.runs import RunStatus, effective_status, this_owner
from kaudit.queries.sweeps import cell_of, is_sweep_run, sweep_identity
from kaudit.store.models import Run, Sweep, SweepCell
from kaudit.sweep.plan import CellTask
from kaudit.sweep.spec import SweepSpec

PENDING, RUNNING, COMPLETE, FAILED = "pending", "running", "complete", "failed"


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class CellState:
    id: int
    key: str
    status: str
    run_id: int | None
    attempts: int

    @property
    def done(self) -> bool:
        return self.status == COMPLETE and self.run_id is not None


def _document(spec: SweepSpec) -> str:
    return orjson.dumps({"path": str(spec.path), "spec": spec.document,
                         "baseline": spec.baseline,
                         "traces": [t.label for t in spec.traces],
                         "configs": [c.label for c in spec.configs],
                         "seeds": sorted({cell.seed for cell in spec.cells}),
                         "reference": spec.reference,
                         "description": spec.description}, default=str).decode()


def acquire_sweep(engine: Engine, spec: SweepSpec) -> tuple[int, str]:
    """Create the sweep (or find it) and become its coordinator; returns its id and identity
    (:func:`kaudit.queries.sweeps.sweep_identity`). Refused while another ``kaudit sweep``
    process runs it: a coordinator holds the sweep while its heartbeat is fresh and, on this
    host, while its process exists; a gone one's sweep is taken over."""
    host, pid = this_owner()
    for _ in range(3):
        with engine.connect() as connection:
            row = connection.execute(select(
                Sweep.id, Sweep.created_at, Sweep.coordinator_host, Sweep.coordinator_pid,
                Sweep.coordinator_heartbeat_at).where(Sweep.name == spec.name)).first()
        if row is None:
            try:
                with engine.begin() as connection:
                    created = _now()
                    sweep_id = connection.execute(insert(Sweep).values(
                        name=spec.name, spec=_document(spec), baseline=spec.baseline,
                        created_at=created, updated_at=created, kaudit_version=__version__,
                        coordinator_host=host, coordinator_pid=pid,
                        coordinator_heartbeat_at=created).returning(Sweep.id)).scalar_one()
                return sweep_id, sweep_identity(sweep_id, created)
            except IntegrityError:
                continue  # created meanwhile by another coordinator: look again
        holder = (row.coordinator_host, row.coordinator_pid)
        if row.coordinator_host is not None and holder != (host, pid) and effective_status(
                RunStatus.RUNNING, row.coordinator_host, row.coordinator_pid,
                row.coordinator_heartbeat_at) == RunStatus.RUNNING:
            raise InputError(f"sweep {spec.name} is being run by another `kaudit sweep` "
                             f"(pid {row.coordinator_pid} on {row.coordinator_host}); wait "
                             "for it to finish or stop it, then run it again")
        with engine.begin() as connection:
            taken = connection.execute(update(Sweep).where(
                Sweep.id == row.id,
                Sweep.coordinator_host.is_not_distinct_from(row.coordinator_host),
                Sweep.coordinator_pid.is_not_distinct_from(row.coordinator_pid),
                Sweep.coordinator_heartbeat_at.is_not_distinct_from(
                    row.coordinator_heartbeat_at),
            ).values(coordinator_host=host, coordinator_pid=pid,
                     coordinator_heartbeat_at=_now())).rowcount
        if taken:
            return row.id, sweep_identity(row.id, row.created_at)
    raise InputError(f"sweep {spec.name}: another `kaudit sweep` is starting it at the same "
                     "time; run it again once that one is done")


def beat(engine: Engine, sweep_id: int) -> None:
    """The coordinator is alive (called every few seconds while the sweep runs)."""
    host, pid = this_owner()
    with engine.begin() as connection:
        connection.execute(update(Sweep).where(
            Sweep.id == sweep_id, Sweep.coordinator_host == host,
            Sweep.coordinator_pid == pid).values(coordinator_heartbeat_at=_now()))


def release_sweep(engine: Engine, sweep_id: int) -> None:
    """Give the sweep up; a sweep left without cells (its planning failed before any were
    registered) is removed, so a failed first start leaves nothing behind."""
    host, pid = this_owner()
    with engine.begin() as connection:
        connection.execute(update(Sweep).where(
            Sweep.id == sweep_id, Sweep.coordinator_host == host,
            Sweep.coordinator_pid == pid).values(
            coordinator_host=None, coordinator_pid=None, coordinator_heartbeat_at=None))
        if connection.scalar(select(SweepCell.id).where(SweepCell.sweep_id == sweep_id)
                             .limit(1)) is None:
            connection.execute(delete(Sweep).where(Sweep.id == sweep_id))


def register_cells(engine: Engine, sweep_id: int, spec: SweepSpec,
                   tasks: Sequence[CellTask]) -> dict[str, CellState]:
    """Store the spec and its cells in one transaction. Cells of an earlier version of the
    spec that this one no longer has are dropped (their runs stay, as ordinary runs). A cell
    keeps the name of the run it has (a renamed configuration keeps its runs' names)."""
    with engine.begin() as connection:
        connection.execute(update(Sweep).where(Sweep.id == sweep_id).values(
            spec=_document(spec), baseline=spec.baseline, updated_at=_now(),
            kaudit_version=__version__))
        existing = {row.key: row for row in connection.execute(
            select(SweepCell.id, SweepCell.key).where(SweepCell.sweep_id == sweep_id))}
        wanted = {task.key for task in tasks}
        stale = [row.id for key, row in existing.items() if key not in wanted]
        if stale:
            connection.execute(delete(SweepCell).where(SweepCell.id.in_(stale)))
        for task in tasks:
            labels = {"position": task.position, "trace": task.trace, "config": task.config,
                      "seed": task.seed}
            if task.key in existing:
                connection.execute(update(SweepCell).where(
                    SweepCell.id == existing[task.key].id).values(**labels))
            else:
                connection.execute(insert(SweepCell).values(
                    sweep_id=sweep_id, key=task.key, status=PENDING, attempts=0,
                    run_name=task.run_name, **labels))
    return cell_states(engine, sweep_id)


def cell_states(engine: Engine, sweep_id: int) -> dict[str, CellState]:
    with engine.connect() as connection:
        rows = connection.execute(select(
            SweepCell.id, SweepCell.key, SweepCell.status, SweepCell.run_id,
            SweepCell.attempts).where(SweepCell.sweep_id == sweep_id)).all()
    return {row.key: CellState(row.id, row.key, row.status, row.run_id, row.attempts)
            for row in rows}


def status_counts(engine: Engine, sweep_id: int) -> Counter[str]:
    with engine.connect() as connection:
        rows = connection.execute(select(SweepCell.status, SweepCell.run_id)
                                  .where(SweepCell.sweep_id == sweep_id)).all()
    return Counter(PENDING if status == COMPLETE and run_id is None else status
                   for status, run_id in rows)


def claim(engine: Engine, cell_id: int, token: str, worker: str) -> bool:
    """Take the cell for this attempt; False when it is already complete (nothing to do).
    A cell marked running by an earlier attempt is taken over: the scheduler ran the cell
    again because that attempt's worker was lost."""
    with engine.begin() as connection:
        taken = connection.execute(update(SweepCell).where(
            SweepCell.id == cell_id,
            (SweepCell.status != COMPLETE) | SweepCell.run_id.is_(None),
        ).values(status=RUNNING, claim=token, worker=worker, error=None, run_id=None,
                 metrics=None, attempts=SweepCell.attempts + 1, started_at=_now(),
                 finished_at=None, seconds=None)).rowcount
    return bool(taken)


def holds(engine: Engine, cell_id: int, token: str) -> bool:
    with engine.connect() as connection:
        return connection.scalar(select(SweepCell.claim).where(SweepCell.id == cell_id)) == token


def finish(engine: Engine, cell_id: int, token: str, run_id: int, metrics: dict[str, Any],
           seconds: float) -> bool:
    """Mark the cell complete with its run, if this attempt still holds it."""
    with engine.begin() as connection:
        done = connection.execute(update(SweepCell).where(
            SweepCell.id == cell_id, SweepCell.claim == token).values(
            status=COMPLETE, claim=None, run_id=run_id, finished_at=_now(),
            seconds=round(seconds, 3), metrics=orjson.dumps(metrics).decode())).rowcount
    return bool(done)


#: A failed cell keeps the start of its error (a database error may quote kilobytes of SQL).
MAX_ERROR = 2000


def fail(engine: Engine, cell_id: int, token: str, error: str, seconds: float) -> None:
    if len(error) > MAX_ERROR:
        error = error[:MAX_ERROR] + " …"
    with engine.begin() as connection:
        connection.execute(update(SweepCell).where(
            SweepCell.id == cell_id, SweepCell.claim == token).values(
            status=FAILED, claim=None, error=error, finished_at=_now(),
            seconds=round(seconds, 3)))


def release_running(engine: Engine, sweep_id: int, identity: str, reason: str,
                    cell_ids: Sequence[int] | None = None) -> int:
    """After the sweep stopped (interrupted, or a cell's worker lost for good): every cell
    still marked running (of ``cell_ids`` if given) is failed with ``reason``, and its run,
    if the process replaying it is gone, is marked failed rather than left running. Returns
    the cells released."""
    query = select(SweepCell.id, SweepCell.run_name).where(
        SweepCell.sweep_id == sweep_id, SweepCell.status == RUNNING)
    if cell_ids is not None:
        query = query.where(SweepCell.id.in_(list(cell_ids)))
    with engine.begin() as connection:
        rows = connection.execute(query).all()
        if not rows:
            return 0
        connection.execute(update(SweepCell).where(
            SweepCell.id.in_([r.id for r in rows])).values(
            status=FAILED, claim=None, error=reason, finished_at=_now()))
    fail_abandoned_runs(engine, [r.run_name for r in rows], identity, reason)
    return len(rows)


def fail_unfinished(engine: Engine, cell_id: int, error: str) -> None:
    """A cell whose task never reported (Dask gave up on it) is failed, unless complete."""
    with engine.begin() as connection:
        connection.execute(update(SweepCell).where(
            SweepCell.id == cell_id, SweepCell.status != COMPLETE).values(
            status=FAILED, claim=None, error=error, finished_at=_now()))


def fail_abandoned_runs(engine: Engine, names: Sequence[str], identity: str,
                        reason: str) -> None:
    """Mark failed the runs among ``names`` that are this sweep's (their labels say so),
    still marked running, and whose replaying process is gone (dead on this host, or silent
    past the heartbeat limit)."""
    if not names:
        return
    with engine.connect() as connection:
        runs = connection.execute(select(Run.id, Run.status, Run.owner_host, Run.owner_pid,
                                         Run.heartbeat_at, Run.options)
                                  .where(Run.name.in_(list(names)))).all()
    gone = [r.id for r in runs if r.status == RunStatus.RUNNING
            and is_sweep_run(r.options, identity) and effective_status(
                r.status, r.owner_host, r.owner_pid, r.heartbeat_at) == RunStatus.ABANDONED]
    if gone:
        with engine.begin() as connection:
            connection.execute(update(Run).where(Run.id.in_(gone),
                                                 Run.status == RunStatus.RUNNING).values(
                status=RunStatus.FAILED, error=f"abandoned: {reason}",
                finished_at=_now()))


def run_name_for(engine: Engine, cell_id: int, token: str, wanted: str, identity: str) -> str:
    """The name of the run this attempt makes: ``wanted``, after removing a previous attempt's
    run of the same cell (partial or failed: the run's labels name this sweep and cell). A run
    of that name that is not this cell's (kept from a removed sweep, or made by hand) stays,
    and the new run takes the first free ``wanted-N``. The cell records the name it chose."""
    with engine.connect() as connection:
        rows = connection.execute(select(Run.id, Run.name, Run.options).where(
            Run.name.like(f"{wanted}%"))).all()
    ours = [r.id for r in rows if (r.name == wanted or r.name.startswith(f"{wanted}-"))
            and cell_of(r.options) == identity]
    if ours:
        with engine.begin() as connection:
            connection.execute(delete(Run).where(Run.id.in_(ours)))
    taken = {r.name for r in rows if r.id not in ours}
    name, counter = wanted, 1
    while name in taken:
        counter += 1
        name = f"{wanted}-{counter}"
    with engine.begin() as connection:
        connection.execute(update(SweepCell).where(
            SweepCell.id == cell_id, SweepCell.claim == token).values(run_name=name))
    return name


def remove_run(engine: Engine, run_id: int) -> None:
    with engine.begin() as connection:
        connection.execute(delete(Run).where(Run.id == run_id))
