"""The quality report: every figure read from ClickHouse (or chDB) with one query each.

:func:`build_report` turns the tables ``rag_traces``, ``rag_judgments`` and
``rag_claims`` into a :class:`Report`: volumes, score summaries and
histograms, failure modes and abstentions, scores over time, the worst cases
with their unsupported claims and invalid citations, which quality
thresholds are breached, and the sessions (conversations by session id, from
the ``rag_sessions`` views: :mod:`.report_sessions`). The terminal text (:mod:`report_text`) and the HTML
page (:mod:`report_html`) only format a :class:`Report`; neither computes a
number of its own, so what they show is what the database says.

Queries read with ``FINAL`` because the tables are ReplacingMergeTrees that
may hold replayed duplicates until a merge.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any

from ..contract import SCORE_NAMES
from ..monitoring.report_slis import JUDGE_ERROR_RATE, objective_limits, objective_values
from .report_sessions import SessionsSummary, build_sessions

__all__ = [
    "THRESHOLDS",
    "Threshold",
    "ScoreSummary",
    "WorstCase",
    "Report",
    "QueryFn",
    "client_query",
    "build_report",
    "report_json",
]


#: Runs a SQL statement and returns its rows.
QueryFn = Callable[[str], Sequence[Sequence[Any]]]


def client_query(client: Any) -> QueryFn:
    """A :data:`QueryFn` over a clickhouse-connect client (server or ``chdb://``)."""
    return lambda sql: client.query(sql).result_rows


@dataclass(frozen=True)
class Threshold:
    """A quality objective: ``metric`` compared with ``limit`` (``>=`` or ``<=``)."""

    name: str
    description: str
    op: str
    limit: float
    value: float | None = None

    @property
    def breached(self) -> bool:
        if self.value is None:
            return False
        return self.value < self.limit if self.op == ">=" else self.value > self.limit


#: Quality objectives the report checks: the alerts' SLIs and limits, from the one objectives config
#: (collector/monitoring/objectives.yaml; pass ``thresholds=`` to build_report for others).
THRESHOLDS: tuple[Threshold, ...] = tuple(Threshold(*limit) for limit in objective_limits())


@dataclass
class ScoreSummary:
    count: int
    mean: float | None
    p10: float | None
    median: float | None
    minimum: float | None
    histogram: list[int]  # 10 bins over [0, 1]; the last bin includes 1.0


@dataclass
class WorstCase:
    trace_id: str
    time: str
    query: str
    answer: str
    failure_mode: str
    faithfulness: float | None
    citation_correctness: float | None
    unsupported_claims: list[dict[str, Any]] = field(default_factory=list)
    invalid_citations: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Report:
    """Everything the terminal and HTML reports show, as read from the database."""

    database: str
    generated_at: str
    judge_id: str | None
    judge_ids: dict[str, int]
    traces: int
    traces_complete: int
    traces_sampled: int
    sampled_by_reason: dict[str, int]
    services: dict[str, int]
    first_time: str | None
    last_time: str | None
    judged: int
    judge_errors: int
    claims: int
    claims_by_verdict: dict[str, int]
    scores: dict[str, ScoreSummary]
    failure_modes: dict[str, int]
    abstentions: dict[str, int]
    over_time: list[dict[str, Any]]
    over_time_bucket_s: float
    worst: list[WorstCase]
    thresholds: list[Threshold]
    sessions: SessionsSummary | None = None

    @property
    def breached(self) -> list[Threshold]:
        return [t for t in self.thresholds if t.breached]

    def to_json(self) -> dict[str, Any]:
        """A plain-JSON view (the HTML report embeds it as its chart data)."""
        out = asdict(self)
        out["thresholds"] = [{**asdict(t), "breached": t.breached} for t in self.thresholds]
        return out


def _q(s: str) -> str:
    """A ClickHouse string literal."""
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _float(v: Any) -> float | None:
    """A database number as a float, unrounded (the renderers round for display)."""
    return None if v is None else float(v)


def _iso(v: Any) -> str | None:
    if v is None:
        return None
    if isinstance(v, datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=timezone.utc)
        return v.isoformat()
    return str(v)


def build_report(
    query: QueryFn,
    *,
    database: str = "ragpulse",
    judge_id: str | None = None,
    worst: int = 5,
    bucket_count: int = 24,
    thresholds: Sequence[Threshold] = THRESHOLDS,
    sessions_ended_before_ns: int | None = None,
) -> Report:
    """Read the report from the database ``database`` through ``query``.

    ``judge_id`` selects whose judgments are summarised; by default the judge
    with the most judgments (a trace judged by two tiers is not counted twice).
    ``sessions_ended_before_ns``: sessions whose last turn is before it have ended; None: every
    session has (the traffic is over), see :mod:`.report_sessions`.
    """
    db = database
    traces_t, judg_t, claims_t = f"{db}.rag_traces", f"{db}.rag_judgments", f"{db}.rag_claims"

    (total, complete, sampled, t0, t1) = query(
        f"SELECT count(), countIf(complete = 1), countIf(sampled = 1), min(time), max(time) FROM {traces_t} FINAL"
    )[0]
    sampled_by_reason = _counts(
        query,
        f"SELECT sampled_reason, count() FROM {traces_t} FINAL WHERE sampled = 1 "
        "GROUP BY sampled_reason ORDER BY count() DESC, sampled_reason",
    )
    services = _counts(
        query,
        f"SELECT service, count() FROM {traces_t} FINAL GROUP BY service ORDER BY count() DESC, service",
    )
    judge_ids = _counts(
        query,
        f"SELECT judge_id, count() FROM {judg_t} FINAL GROUP BY judge_id ORDER BY count() DESC, judge_id",
    )
    if judge_id is None and judge_ids:
        judge_id = next(iter(judge_ids))
    jfilter = f"judge_id = {_q(judge_id or '')}"
    ok = f"{jfilter} AND error = ''"

    (judged, errors) = query(
        f"SELECT countIf(error = ''), countIf(error != '') FROM {judg_t} FINAL WHERE {jfilter}"
    )[0]
    judged, errors = int(judged), int(errors)

    scores = {name: _score_summary(query, judg_t, ok, name) for name in SCORE_NAMES}

    failure_modes, abstentions, claims_by_verdict = _verdict_counts(query, judg_t, claims_t, ok, jfilter)

    over_time, bucket_s = _over_time(query, judg_t, ok, bucket_count)
    worst_cases = _worst(query, traces_t, judg_t, claims_t, ok, jfilter, worst)

    checked = _checked(query, judg_t, claims_t, ok, jfilter, (judged, errors), thresholds)

    return Report(
        database=db,
        generated_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        judge_id=judge_id,
        judge_ids=judge_ids,
        traces=int(total),
        traces_complete=int(complete),
        traces_sampled=int(sampled),
        sampled_by_reason=sampled_by_reason,
        services=services,
        first_time=_iso(t0) if total else None,
        last_time=_iso(t1) if total else None,
        judged=judged,
        judge_errors=errors,
        claims=sum(claims_by_verdict.values()),
        claims_by_verdict=claims_by_verdict,
        scores=scores,
        failure_modes=failure_modes,
        abstentions=abstentions,
        over_time=over_time,
        over_time_bucket_s=bucket_s,
        worst=worst_cases,
        thresholds=checked,
        sessions=build_sessions(query, db, sessions_ended_before_ns),
    )


def _checked(
    query: QueryFn,
    judg_t: str,
    claims_t: str,
    ok: str,
    jfilter: str,
    judged_errors: tuple[int, int],
    thresholds: Sequence[Threshold],
) -> list[Threshold]:
    """The thresholds with their values: the objectives' SLIs and the judge error rate."""
    judged, errors = judged_errors
    values = objective_values(query, judg_t, claims_t, ok, jfilter)
    values[JUDGE_ERROR_RATE] = round(errors / (judged + errors), 6) if judged + errors else None
    return [Threshold(t.name, t.description, t.op, t.limit, values.get(t.name)) for t in thresholds]


def _verdict_counts(
    query: QueryFn, judg_t: str, claims_t: str, ok: str, jfilter: str
) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    """Judged traces by failure mode, abstentions by kind, claims by verdict."""
    failure_modes = _counts(
        query,
        f"SELECT failure_mode, count() FROM {judg_t} FINAL WHERE {ok} GROUP BY failure_mode "
        "ORDER BY count() DESC, failure_mode",
    )
    abstentions = _counts(
        query,
        f"SELECT abstention_kind, count() FROM {judg_t} FINAL WHERE {ok} AND abstained = 1 "
        "GROUP BY abstention_kind ORDER BY count() DESC, abstention_kind",
    )
    claims_by_verdict = _counts(
        query,
        f"SELECT verdict, count() FROM {claims_t} FINAL WHERE {jfilter} GROUP BY verdict ORDER BY count() DESC, verdict",
    )
    return failure_modes, abstentions, claims_by_verdict


def _counts(query: QueryFn, sql: str) -> dict[str, int]:
    """``{key: count}`` from a query returning (key, count) rows, in its order."""
    return {str(k): int(n) for k, n in query(sql)}


def _score_summary(query: QueryFn, judg_t: str, ok: str, name: str) -> ScoreSummary:
    """Count, mean, p10, median, minimum and a 10-bucket histogram of one score."""
    (n, mean, p10, med, mn) = query(
        f"SELECT count({name}), avg({name}), quantileExact(0.1)({name}), quantileExact(0.5)({name}), "
        f"min({name}) FROM {judg_t} FINAL WHERE {ok}"
    )[0]
    hist = [0] * 10
    for b, c in query(
        f"SELECT least(toUInt8(floor({name} * 10)), 9) AS b, count() FROM {judg_t} FINAL "
        f"WHERE {ok} AND {name} IS NOT NULL GROUP BY b ORDER BY b"
    ):
        hist[int(b)] = int(c)
    n = int(n)
    if not n:
        return ScoreSummary(0, None, None, None, None, hist)
    return ScoreSummary(n, _float(mean), _float(p10), _float(med), _float(mn), hist)


def _over_time(query: QueryFn, judg_t: str, ok: str, bucket_count: int) -> tuple[list[dict[str, Any]], float]:
    """Mean scores per time bucket of trace time (``bucket_count`` equal buckets over the judged range)."""
    lo, hi = query(
        f"SELECT min(toUnixTimestamp64Milli(time)), max(toUnixTimestamp64Milli(time)) FROM {judg_t} FINAL WHERE {ok}"
    )[0]
    if lo is None or hi is None or (lo == 0 and hi == 0):
        return [], 0.0
    width = max(1, -(-(int(hi) - int(lo) + 1) // bucket_count))  # ms, ceil division
    cols = ", ".join(f"avg({s})" for s in SCORE_NAMES)
    rows = query(
        f"SELECT intDiv(toUnixTimestamp64Milli(time) - {int(lo)}, {width}) AS b, count(), {cols} "
        f"FROM {judg_t} FINAL WHERE {ok} GROUP BY b ORDER BY b"
    )
    out = []
    for b, n, *means in rows:
        start = (int(lo) + int(b) * width) / 1000.0
        out.append(
            {
                "start": datetime.fromtimestamp(start, timezone.utc).isoformat(timespec="milliseconds"),
                "judged": int(n),
                "means": {s: _float(m) for s, m in zip(SCORE_NAMES, means, strict=True)},
            }
        )
    return out, width / 1000.0


def _worst(
    query: QueryFn, traces_t: str, judg_t: str, claims_t: str, ok: str, jfilter: str, limit: int
) -> list[WorstCase]:
    """The judged traces with the most damaging failures, with their bad claims and citations."""
    if limit <= 0:
        return []
    rows = query(
        f"SELECT j.trace_id, j.time, t.query, t.answer, j.failure_mode, j.faithfulness, j.citation_correctness "
        f"FROM (SELECT * FROM {judg_t} FINAL WHERE {ok} AND failure_mode NOT IN ('healthy', 'abstain') "
        f"  OR ({ok} AND abstention_kind = 'false_refusal')) AS j "
        f"LEFT JOIN (SELECT trace_id, query, answer FROM {traces_t} FINAL) AS t ON t.trace_id = j.trace_id "
        "ORDER BY ifNull(j.faithfulness, 2) ASC, j.claims_unsupported + j.claims_contradicted DESC, "
        f"ifNull(j.citation_correctness, 2) ASC, j.time ASC, j.trace_id ASC LIMIT {int(limit)}"
    )
    cases = [
        WorstCase(str(tid), _iso(tm) or "", str(q or ""), str(a or ""), str(fm), _float(f), _float(cc))
        for tid, tm, q, a, fm, f, cc in rows
    ]
    if not cases:
        return cases
    ids = ", ".join(_q(c.trace_id) for c in cases)
    by_id = {c.trace_id: c for c in cases}
    for tid, text, verdict, supporting, cited, valid, source in query(
        f"SELECT trace_id, text, verdict, supporting_chunk_ids, cited_chunk_ids, citation_valid, unsupported_source "
        f"FROM {claims_t} FINAL WHERE {jfilter} AND trace_id IN ({ids}) ORDER BY trace_id, claim_index"
    ):
        case = by_id[str(tid)]
        if verdict != "supported":
            case.unsupported_claims.append({"text": text, "verdict": verdict, "source": source or None})
        if valid is not None and int(valid) == 0:
            case.invalid_citations.append(
                {"text": text, "cited": list(cited), "supported_by": list(supporting)}
            )
    return cases


def report_json(report: Report) -> str:
    """The report's data as compact JSON."""
    return json.dumps(report.to_json(), separators=(",", ":"), sort_keys=True)
