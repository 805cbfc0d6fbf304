"""Run a sweep's cells on Dask distributed: a local cluster by default, or an existing one.

Without ``scheduler`` a local Dask cluster starts here (one single-threaded worker process
per core: replays are CPU-bound Python, so threads would only share one interpreter lock);
with ``scheduler="tcp://HOST:8786"`` the cells go to that cluster, whose workers have kaudit
installed and reach the database. Dask decides where each cell runs and runs a cell again
elsewhere when its worker dies (up to its ``distributed.scheduler.allowed-failures``);
:mod:`kaudit.sweep.cells` keeps the cells' states true meanwhile.

Finished cells are never submitted again, so a sweep run a second time does no work (no
cluster is even started). Ctrl-C (or SIGTERM) cancels the cells not yet started, closes a
local cluster, and marks the cells that were running failed ("interrupted"), so the next run
of the sweep retries them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from sqlalchemy import Engine
from sqlalchemy.engine import make_url

from kaudit.errors import InputError, KauditError
from kaudit.eventlog.runs import HEARTBEAT_SECONDS
from kaudit.store.engine import resolve_url
from kaudit.sweep import cells
from kaudit.sweep.plan import CellTask, plan_cells
from kaudit.sweep.spec import SweepSpec
from kaudit.sweep.worker import execute_cell, worker_version

LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", ""}
WORKER_LOG_LEVEL = "DASK_LOGGING__DISTRIBUTED"  # Dask's config key logging.distributed


@dataclass
class SweepProgress:
    """What the sweep is doing, for progress lines and ``--json``."""

    sweep: str
    total: int
    skipped: int = 0
    complete: int = 0
    failed: int = 0
    running: int = 0
    pending: int = 0
    seconds: float = 0.0
    eta_seconds: float | None = None
    workers: int = 0
    where: str = ""
    failures: list[dict[str, str]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["etaSeconds"] = out.pop("eta_seconds")
        return out


def worker_url(db: str | None) -> str:
    """The database URL as workers must see it: an SQLite path made absolute (workers run
    in other directories)."""
    url = resolve_url(db)
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        database = str(Path(parsed.database).expanduser().resolve())
        return parsed.set(database=database).render_as_string(hide_password=False)
    return url


def _check_reachable(url: str, scheduler: str | None) -> None:
    if scheduler is None or make_url(url).get_backend_name() != "sqlite":
        return
    parsed = urlparse(scheduler if "://" in scheduler else f"tcp://{scheduler}")
    if parsed.scheme != "inproc" and (parsed.hostname or "") not in LOCAL_HOSTS:
        raise InputError(f"--scheduler {scheduler}: workers on other machines cannot write to "
                         "an SQLite file here; give --db postgresql://... (a database every "
                         "worker reaches)")


def _client(scheduler: str | None, workers: int | None) -> tuple[Any, Any, str]:
    from dask.distributed import Client, LocalCluster

    if scheduler is not None:
        try:
            client = Client(scheduler, timeout="15s")
        except (OSError, TimeoutError) as exc:
            raise InputError(f"--scheduler {scheduler}: cannot reach a Dask scheduler "
                             f"({exc})") from None
        return client, None, scheduler
    count = workers or os.cpu_count() or 1
    with _ignoring_sigint():
        cluster = LocalCluster(n_workers=count, threads_per_worker=1, processes=True,
                               dashboard_address=":0", silence_logs=logging.CRITICAL)
    return Client(cluster), cluster, f"local Dask cluster of {count} worker(s)"


@contextlib.contextmanager
def _quiet_worker_logs() -> Iterator[None]:
    """Run the local workers with Dask's own logging off. A worker process reads its log
    levels from the environment when it imports Dask (``silence_logs`` reaches only its
    nanny's logger), and a worker whose scheduler goes away mid-write (Ctrl-C) would print a
    traceback for a stop the sweep itself reports. Cells' failures are in the database."""
    import distributed  # noqa: F401 - this process reads its own log levels first, unquieted

    previous = os.environ.get(WORKER_LOG_LEVEL)
    os.environ[WORKER_LOG_LEVEL] = "critical"
    try:
        yield
    finally:
        if previous is None:
            del os.environ[WORKER_LOG_LEVEL]
        else:
            os.environ[WORKER_LOG_LEVEL] = previous


@contextlib.contextmanager
def _dask_quiet_here() -> Iterator[None]:
    """Dask's own logging off in this process while the sweep stops its cluster: the local
    scheduler lives here, and workers killed on purpose make its open streams report
    tracebacks (``distributed.batched``) for a stop the sweep itself reports."""
    dask_logger = logging.getLogger("distributed")
    previous = dask_logger.level
    dask_logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        dask_logger.setLevel(previous)


@contextlib.contextmanager
def _ignoring_sigint() -> Iterator[None]:
    """Start the local workers with Ctrl-C ignored (they inherit it): a terminal sends it to
    every process of the group, and the sweep, not each worker, decides how to stop."""
    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread: signals are not ours to change
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def check_workers(client: Any, where: str) -> None:
    """Refuse a cluster whose workers cannot run kaudit's cells: kaudit missing there, or
    another version of it (its replays would not be this kaudit's)."""
    from kaudit import __version__

    try:
        versions = client.run(worker_version, on_error="return")
    except (OSError, TimeoutError) as exc:
        raise InputError(f"{where}: cannot ask the workers their kaudit version ({exc})") from None
    if not versions:
        raise InputError(f"{where}: the Dask cluster has no workers (start some with `dask "
                         "worker ADDRESS`)")
    wrong = {address: (f"cannot run kaudit: {type(v).__name__}: {v}"
                       if isinstance(v, BaseException) else f"kaudit {v}")
             for address, v in versions.items() if v != __version__}
    if wrong:
        listed = "; ".join(f"{address}: {problem}" for address, problem in sorted(wrong.items()))
        raise InputError(f"{where}: every worker needs kaudit {__version__} installed; "
                         f"{listed}")


def _worker_count(client: Any) -> int:
    try:
        return len(client.scheduler_info().get("workers", {}))
    except (OSError, KeyError, AttributeError):
        return 0


def _failure(task: CellTask, error: str) -> dict[str, str]:
    return {"cell": f"{task.config} × {task.trace} × seed {task.seed}",
            "run": task.run_name, "error": error}


def run_sweep(engine: Engine, db: str | None, spec: SweepSpec, *, scheduler: str | None = None,
              workers: int | None = None,
              progress: Callable[[SweepProgress], None] | None = None,
              planning: Callable[[str], None] | None = None,
              check_stop: Callable[[], None] | None = None) -> SweepProgress:
    """Run every cell of ``spec`` not finished yet; returns the final tally."""
    if workers is not None and workers < 1:
        raise InputError(f"--workers {workers}: expected at least 1")
    url = worker_url(db)
    _check_reachable(url, scheduler)
    sweep_id, identity = cells.acquire_sweep(engine, spec)
    try:
        return _run_cells(engine, url, spec, sweep_id, identity, scheduler, workers, progress,
                          planning, check_stop)
    finally:
        cells.release_sweep(engine, sweep_id)


def _run_cells(engine: Engine, url: str, spec: SweepSpec, sweep_id: int, identity: str,
               scheduler: str | None, workers: int | None,
               progress: Callable[[SweepProgress], None] | None,
               planning: Callable[[str], None] | None,
               check_stop: Callable[[], None] | None) -> SweepProgress:
    """Plan and register the cells, then run the unfinished ones (the caller coordinates the
    sweep)."""
    tasks = plan_cells(engine, spec, planning)
    states = cells.register_cells(engine, sweep_id, spec, tasks)
    todo = [t for t in tasks if not states[t.key].done]
    tally = SweepProgress(sweep=spec.name, total=len(tasks), skipped=len(tasks) - len(todo),
                          pending=len(todo))
    if not todo:
        return tally
    # Kept for the cluster's life: a worker the nanny restarts starts from it too.
    with _quiet_worker_logs() if scheduler is None else contextlib.nullcontext():
        began = time.monotonic()
        client, cluster, tally.where = _client(scheduler, workers)
        by_key: dict[str, Any] = {}
        try:
            if scheduler is not None:
                check_workers(client, f"--scheduler {scheduler}")
            tally.workers = _worker_count(client)
            futures = {}
            for task in todo:
                data = {**asdict(task), "cellId": states[task.key].id, "sweep": spec.name,
                        "sweepIdentity": identity}
                future = client.submit(execute_cell, url, data, pure=False,
                                       key=f"kaudit-cell-{task.key[:20]}-{time.time_ns()}")
                futures[future] = task
                by_key[task.key] = future
            _wait(engine, client, sweep_id, identity, futures,
                  {k: s.id for k, s in states.items()}, tally, began, progress, check_stop)
        except BaseException as exc:
            for future in by_key.values():
                future.cancel()
            with _dask_quiet_here():
                if cluster is not None:
                    _stop_local_workers(client)
                _close(client, cluster)
            client = cluster = None
            reason = ("interrupted: the sweep was stopped" if not isinstance(exc, KauditError)
                      else f"the sweep failed: {exc}")
            cells.release_running(engine, sweep_id, identity, reason)
            raise
        finally:
            _close(client, cluster)
    # A cell whose worker was lost too often, or a task Dask gave up on, may still read
    # running: it is not, and its run must not look it.
    cells.release_running(engine, sweep_id, identity, "its worker was lost")
    _count(engine, sweep_id, tally, began)
    return tally


def _stop_local_workers(client: Any) -> None:
    """Kill the local cluster's worker processes: closing it gracefully would let each
    finish its cell first, and Ctrl-C means now. Their cells are released after."""
    try:
        pids = client.run(os.getpid, nanny=False)
    except Exception:  # the cluster is already going; closing it is all there is
        return
    for pid in pids.values():
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _close(client: Any, cluster: Any) -> None:
    for thing in (client, cluster):
        if thing is not None:
            try:
                thing.close()
            except Exception:  # closing is best effort; the cells are released after
                logging.getLogger(__name__).debug("closing %r failed", thing, exc_info=True)


def _count(engine: Engine, sweep_id: int, tally: SweepProgress, began: float) -> None:
    counts = cells.status_counts(engine, sweep_id)
    tally.running = counts[cells.RUNNING]
    tally.failed = counts[cells.FAILED]
    tally.complete = counts[cells.COMPLETE] - tally.skipped
    tally.pending = tally.total - tally.skipped - tally.complete - tally.failed - tally.running
    tally.seconds = round(time.monotonic() - began, 2)
    finished = tally.complete + tally.failed
    remaining = tally.running + tally.pending
    tally.eta_seconds = (round(tally.seconds / finished * remaining, 1)
                         if finished and remaining else (0.0 if not remaining else None))


def _wait(engine: Engine, client: Any, sweep_id: int, identity: str,
          futures: dict[Any, CellTask],
          cell_ids: dict[str, int],
          tally: SweepProgress, began: float,
          progress: Callable[[SweepProgress], None] | None,
          check_stop: Callable[[], None] | None) -> None:
    from dask.distributed import wait

    pending = set(futures)
    last_beat = time.monotonic()
    while pending:
        if check_stop is not None:
            check_stop()
        if time.monotonic() - last_beat >= HEARTBEAT_SECONDS:
            cells.beat(engine, sweep_id)
            last_beat = time.monotonic()
        try:
            done, pending = wait(pending, timeout=1.0, return_when="FIRST_COMPLETED")
        except TimeoutError:  # nothing finished within the second: report progress anyway
            done = set()
        for future in done:
            task = futures[future]
            try:
                result = future.result()
            except Exception as exc:  # Dask gave up on the cell (KilledWorker, lost data)
                error = f"{type(exc).__name__}: {exc}"
                cells.release_running(engine, sweep_id, identity, error,
                                      [cell_ids[task.key]])
                cells.fail_unfinished(engine, cell_ids[task.key], error)
                tally.failures.append(_failure(task, f"{type(exc).__name__}: {exc}"))
                continue
            if result.get("status") == "failed":
                tally.failures.append(_failure(task, result.get("error", "")))
        tally.workers = _worker_count(client) or tally.workers
        _count(engine, sweep_id, tally, began)
        if progress is not None:
            progress(tally)
