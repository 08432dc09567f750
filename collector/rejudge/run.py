"""Re-judge stored history under a new judge id (``ragpulse rejudge``).

Before a new judge (a refit's weights file, another model) is promoted, the traces an old
judge scored are judged again by the new one, so flag rates and scores can be compared on
the same traces (:mod:`.diff`) before any alert reads the new judge. The new rows go into
``rag_judgments`` and ``rag_claims`` under the new judge's id; the old id's rows stay.

- Which traces: those the base judge (``from_id``) judged without error and ``rag_traces``
  still holds (a trace past its TTL has nothing to judge), optionally one service and a
  start time (trace time), oldest first.
- Idempotent and resumable: a trace that already has a row under the new id is not judged
  again (with ``retry_errors``, only a successful row counts), so a second run adds nothing
  and an interrupted run goes on where it stopped. Rows are stored per batch, the claims
  before the judgment row, so a trace whose judgment row is missing is simply judged again
  (the same key replaces its claims).
- Bounded: at most ``limit`` traces per run; the caller says how many are left.

Judging and storing go through :class:`~..judge.service.worker.JudgeWorker`, the collector's
own path, so a re-judged row is the row the collector would have written with the new judge.
Each message is the stored trace read back (:mod:`..storage.stored_traces`), carrying the
base judgment's sampling reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..contract import Judge
from ..core.metrics import Metrics
from ..judge.service.worker import JudgeWorker
from ..storage.clickhouse import Storage
from ..storage.stored_traces import read_traces
from .scope import JudgeScope, judgment_filter

__all__ = ["Outcome", "RejudgeScope", "base_judge", "pending", "pending_count", "rejudge"]

DEFAULT_BATCH = 64  # traces judged, then stored, at a time: what an interruption can lose


@dataclass(frozen=True)
class RejudgeScope(JudgeScope):
    """The base judge's successfully judged traces (one service, from a start) to judge as ``to_id``."""

    retry_errors: bool = False

    def sql(self, select: str) -> tuple[str, dict[str, Any]]:
        """``SELECT {select}`` over the traces still to judge, and the query's parameters."""
        cond, params = self.judgment_filter()
        cond.insert(0, "judge_id = %(base)s")
        params.update(base=self.from_id, new=self.to_id)
        done = "judge_id = %(new)s" + (" AND error = ''" if self.retry_errors else "")
        return (
            f"SELECT {select} FROM (SELECT trace_id, time, sampled_reason FROM {{db}}.rag_judgments FINAL "
            f"WHERE {' AND '.join(cond)}) AS base WHERE base.trace_id NOT IN "
            f"(SELECT trace_id FROM {{db}}.rag_judgments FINAL WHERE {done}) "
            "AND base.trace_id IN (SELECT trace_id FROM {db}.rag_traces)",
            params,
        )


@dataclass
class Outcome:
    """What one run did: traces judged (of them with an error), traces whose stored trace went
    while the run read them (its TTL), and traces the scope still holds unjudged."""

    judged: int = 0
    errors: int = 0
    gone: int = 0
    left: int = 0


def base_judge(storage: Storage, service: str | None = None, since_ns: int | None = None) -> str | None:
    """The judge with the most successful judgments (of ``service``, since ``since_ns``), or None."""
    cond, params = judgment_filter(service, since_ns)
    rows = storage.query(
        f"SELECT judge_id, count() AS n FROM {{db}}.rag_judgments FINAL WHERE {' AND '.join(cond)} "
        "GROUP BY judge_id ORDER BY n DESC, judge_id LIMIT 1",
        params,
    )
    return str(rows[0][0]) if rows else None


def pending_count(storage: Storage, scope: RejudgeScope) -> int:
    """How many traces of ``scope`` have no row under the new judge id yet."""
    sql, params = scope.sql("count()")
    return int(storage.query(sql, params)[0][0])


def pending(storage: Storage, scope: RejudgeScope, limit: int) -> list[tuple[str, str]]:
    """(trace id, the base judgment's sampling reason) of the next ``limit`` traces, oldest first."""
    sql, params = scope.sql("base.trace_id, base.sampled_reason")
    params["limit"] = int(limit)
    rows = storage.query(sql + " ORDER BY base.time, base.trace_id LIMIT %(limit)s", params)
    return [(str(t), str(r)) for t, r in rows]


def rejudge(
    storage: Storage,
    judge: Judge,
    scope: RejudgeScope,
    limit: int,
    batch: int = DEFAULT_BATCH,
    progress: Callable[[int], None] | None = None,
) -> Outcome:
    """Judge up to ``limit`` pending traces of ``scope`` with ``judge`` and store the rows;
    ``progress(n)`` after each stored batch of ``n``. A judge whose id is not ``scope.to_id``
    is refused (the rows would land under another id than the one the run resumes)."""
    if judge.judge_id != scope.to_id:
        raise ValueError(f"judge {judge.judge_id} is not the scope's new judge {scope.to_id}")
    if scope.to_id == scope.from_id:
        raise ValueError(f"judge {scope.to_id} is the base judge itself: nothing to re-judge")
    worker = JudgeWorker(judge, storage, Metrics())
    out = Outcome()
    todo = pending(storage, scope, limit)
    for start in range(0, len(todo), batch):
        part = todo[start : start + batch]
        traces = read_traces(storage, [tid for tid, _ in part])
        messages = []
        for tid, reason in part:
            trace = traces.get(tid)
            if trace is None:
                out.gone += 1
                continue
            message = trace.judge_message()
            message["sampled_reason"] = reason
            messages.append(message)
        results = worker.judge_messages(messages)
        worker.store(results)
        out.judged += len(results)
        out.errors += sum(1 for row, _, _ in results if row["error"])
        if progress is not None:
            progress(len(part))
    out.left = pending_count(storage, scope)
    return out
