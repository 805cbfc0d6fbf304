"""Benchmark ``kaudit ingest``: events per second and peak memory on a generated trace.

    python -m benchmarks.ingest --events 1000000            # SQLite in a temporary directory
    python -m benchmarks.ingest --events 1000000 --postgres postgresql://postgres@127.0.0.1/test
    python -m benchmarks.ingest --audit --events 1000000  # a kube-apiserver audit log instead

The trace is generated first (not timed), then ``kaudit ingest`` runs as a child process so
its peak resident memory is measured on its own (``wait4``'s rusage). Each run
uses a new, empty database: a temporary SQLite file, or with ``--postgres SERVER_URL`` a
database created on that server for the run and dropped after it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from benchmarks.audit_log import write_audit_log
from kaudit.store.engine import resolve_url
from kaudit.tracegen.synthetic import write_synthetic


@contextmanager
def fresh_postgres_database(server_url: str) -> Iterator[str]:
    """Create an empty database on the server for one run; drop it afterwards."""
    admin = create_engine(resolve_url(server_url), isolation_level="AUTOCOMMIT")
    name = f"kaudit_bench_{uuid.uuid4().hex[:10]}"
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(resolve_url(server_url)).set(database=name).render_as_string(False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--gzip", action="store_true", help="compress the generated trace")
    parser.add_argument("--audit", action="store_true",
                        help="generate a kube-apiserver audit log (benchmarks/audit_log.py) "
                             "instead of watch events; --events counts its lines")
    parser.add_argument("--postgres", metavar="SERVER_URL",
                        help="benchmark PostgreSQL: a URL of a server to create the run's "
                             "database on [default: SQLite in a temporary directory]")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="kaudit-bench-") as tmp:
        trace = Path(tmp) / ("bench.jsonl.gz" if args.gzip else "bench.jsonl")
        print(f"generating {args.events:,} {'audit events' if args.audit else 'events'} ...",
              file=sys.stderr)
        size = (write_audit_log(trace, args.events, args.nodes) if args.audit
                else write_synthetic(trace, args.events, args.nodes))
        with (fresh_postgres_database(args.postgres) if args.postgres
              else nullcontext(f"sqlite:///{Path(tmp) / 'bench.db'}")) as db:
            subprocess.run([sys.executable, "-m", "kaudit", "db", "upgrade", "--db", db],
                           check=True, stdout=subprocess.DEVNULL)
            command = [sys.executable, "-m", "kaudit", "ingest", str(trace), "--db", db]
            print(f"running: kaudit ingest {trace.name} ({size / 1e6:,.0f} MB)",
                  file=sys.stderr)
            began = time.perf_counter()
            child = subprocess.Popen(command, stdout=subprocess.DEVNULL)
            _, status, usage = os.wait4(child.pid, 0)
            elapsed = time.perf_counter() - began
            child.returncode = os.waitstatus_to_exitcode(status)
            if child.returncode != 0:
                raise SystemExit(f"kaudit ingest failed with exit code {child.returncode}")
            peak_kib = usage.ru_maxrss
        db_size = Path(tmp, "bench.db").stat().st_size if not args.postgres else None

    figures = {
        "events": args.events, "format": "audit" if args.audit else "watch",
        "inputBytes": size, "gzip": args.gzip,
        "database": "postgresql" if args.postgres else "sqlite",
        "seconds": round(elapsed, 2), "eventsPerSecond": round(args.events / elapsed),
        "inputMBPerSecond": round(size / 1e6 / elapsed, 1),
        "peakRSSMiB": round(peak_kib / 1024, 1),
        "databaseMB": None if db_size is None else round(db_size / 1e6, 1),
    }
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        for key, value in figures.items():
            print(f"{key:>18}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
