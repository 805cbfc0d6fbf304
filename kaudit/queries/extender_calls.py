"""The extender calls a run recorded, in the order they were made: what
``kaudit replay --extender-answers RUN`` answers from.

Calls are kept in the JSON of the run's ``attempt`` records (filter, prioritize, preempt),
``bind``/``bindfail`` records (bind) and ``extender`` records (the bind call of a pod deleted
while it was being bound), under ``extenders``.
"""

from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy import Engine, select

from kaudit.eventlog.records import RecordKind
from kaudit.queries.runs import get_run
from kaudit.store.models import RunEvent

_KINDS = (RecordKind.ATTEMPT.value, RecordKind.BIND.value, RecordKind.BIND_FAIL.value,
          RecordKind.EXTENDER.value)


def recorded_extender_calls(engine: Engine, run_ref: str) -> tuple[str, list[dict[str, Any]]]:
    """(the run's name, its extender calls in order)."""
    run = get_run(engine, run_ref)
    calls: list[dict[str, Any]] = []
    query = (select(RunEvent.data)
             .where(RunEvent.run_id == run.id, RunEvent.kind.in_(_KINDS),
                    RunEvent.data.like('%"extenders"%'))
             .order_by(RunEvent.seq))
    with engine.connect() as connection:
        for (data,) in connection.execute(query):
            calls.extend(orjson.loads(data).get("extenders") or ())
    return run.name, calls
