"""The quality report: every figure read from ClickHouse (or chDB) with one query each.

:func:`build_report` turns the tables ``rag_traces``, ``rag_judgments`` and
``rag_claims`` into a :class:`Report`: volumes, score summaries and
histograms, failure modes and abstentions, scores over time, the worst cases
with their unsupported claims and invalid citations, and which quality
thresholds are breached. The terminal text (:mod:`report_text`) and the HTML
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

from ..monitoring.report_slis import JUDGE_ERROR_RATE, objective_limits, objective_values

__all__ = [
    "SCORES",
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

#: The per-trace scores of a judgment, in display order.
SCORES: tuple[str, ...] = (
    "faithfulness",
    "citation_correctness",
    "citation_completeness",
    "answer_relevance",
    "context_precision",
    "context_utilization",
)

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
) -> Report:
    """Read the report from the database ``database`` through ``query``.

    ``judge_id`` selects whose judgments are summarised; by default the judge
    with the most judgments (a trace judged by two tiers is not counted twice).
    """
    db = database
    traces_t, judg_t, claims_t = f"{db}.rag_traces", f"{db}.rag_judgments", f"{db}.rag_claims"

    (total, complete, sampled, t0, t1) = query(
        f"SELECT count(), countIf(complete = 1), countIf(sampled = 1), min(time), max(time) FROM {traces_t} FINAL"
    )[0]
    sampled_by_reason = {
        str(r): int(n)
        for r, n in query(
            f"SELECT sampled_reason, count() FROM {traces_t} FINAL WHERE sampled = 1 "
            "GROUP BY sampled_reason ORDER BY count() DESC, sampled_reason"
        )
    }
    services = {
        str(s): int(n)
        for s, n in query(
            f"SELECT service, count() FROM {traces_t} FINAL GROUP BY service ORDER BY count() DESC, service"
        )
    }
    judge_ids = {
        str(j): int(n)
        for j, n in query(
            f"SELECT judge_id, count() FROM {judg_t} FINAL GROUP BY judge_id ORDER BY count() DESC, judge_id"
        )
    }
    if judge_id is None and judge_ids:
        judge_id = next(iter(judge_ids))
    jfilter = f"judge_id = {_q(judge_id or '')}"
    ok = f"{jfilter} AND error = ''"

    (judged, errors) = query(
        f"SELECT countIf(error = ''), countIf(error != '') FROM {judg_t} FINAL WHERE {jfilter}"
    )[0]
    judged, errors = int(judged), int(errors)

    scores: dict[str, ScoreSummary] = {}
    for name in SCORES:
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
        scores[name] = ScoreSummary(
            n,
            _float(mean) if n else None,
            _float(p10) if n else None,
            _float(med) if n else None,
            _float(mn) if n else None,
            hist,
        )

    failure_modes = {
        str(m): int(c)
        for m, c in query(
            f"SELECT failure_mode, count() FROM {judg_t} FINAL WHERE {ok} GROUP BY failure_mode "
            "ORDER BY count() DESC, failure_mode"
        )
    }
    abstentions = {
        str(k): int(c)
        for k, c in query(
            f"SELECT abstention_kind, count() FROM {judg_t} FINAL WHERE {ok} AND abstained = 1 "
            "GROUP BY abstention_kind ORDER BY count() DESC, abstention_kind"
        )
    }
    claims_by_verdict = {
        str(v): int(c)
        for v, c in query(
            f"SELECT verdict, count() FROM {claims_t} FINAL WHERE {jfilter} GROUP BY verdict ORDER BY count() DESC, verdict"
        )
    }

    over_time, bucket_s = _over_time(query, judg_t, ok, bucket_count)
    worst_cases = _worst(query, traces_t, judg_t, claims_t, ok, jfilter, worst)

    values = objective_values(query, judg_t, claims_t, ok, jfilter)
    values[JUDGE_ERROR_RATE] = round(errors / (judged + errors), 6) if judged + errors else None
    checked = [Threshold(t.name, t.description, t.op, t.limit, values.get(t.name)) for t in thresholds]

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
    )


def _over_time(query: QueryFn, judg_t: str, ok: str, bucket_count: int) -> tuple[list[dict[str, Any]], float]:
    """Mean scores per time bucket of trace time (``bucket_count`` equal buckets over the judged range)."""
    lo, hi = query(
        f"SELECT min(toUnixTimestamp64Milli(time)), max(toUnixTimestamp64Milli(time)) FROM {judg_t} FINAL WHERE {ok}"
    )[0]
    if lo is None or hi is None or (lo == 0 and hi == 0):
        return [], 0.0
    width = max(1, -(-(int(hi) - int(lo) + 1) // bucket_count))  # ms, ceil division
    cols = ", ".join(f"avg({s})" for s in SCORES)
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
                "means": {s: _float(m) for s, m in zip(SCORES, means, strict=True)},
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
