"""Read what ``ragpulse compare`` compares from ClickHouse: judged traces, latencies and cost per variant.

Judged traces come from ``rag_judgments`` (which stores each trace's
variant), one judge, no failed judgments, at most ``max_rows`` per variant
(a deterministic sample by trace-id hash when a variant has more, so the
bootstrap's memory stays bounded); the request key that pairs shadow
traffic is the root span's ``rag.request.id`` kept in ``rag_traces.attributes``.
Latency quantiles and cost per query are aggregated by ClickHouse over every
stored trace of the window, judged or not. Every read uses ``FINAL``: the
tables are ReplacingMergeTrees that may hold replayed duplicates until a merge.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...agent.conventions import RAG_REQUEST_ID
from ..contract import SCORE_NAMES
from .stats import FAILURE_MODES

__all__ = ["STAGES", "Judged", "Served", "pick_judge", "load_judged", "load_served"]

#: Latency columns of rag_traces compared per variant, as (column, stage name).
STAGES: tuple[tuple[str, str], ...] = (
    ("retrieval_ms", "retrieval"),
    ("rerank_ms", "rerank"),
    ("generation_ms", "generation"),
    ("latency_ms", "total"),
)

QueryFn = Callable[[str, dict[str, Any]], Sequence[Sequence[Any]]]


@dataclass
class Judged:
    """One variant's judged traces: per metric (stats.METRICS) one value per trace (NaN: n/a)."""

    variant: str
    values: dict[str, np.ndarray]
    request_ids: list[str]
    sampled: bool  # more judged traces than max_rows: these are a hash sample of them

    @property
    def n(self) -> int:
        return len(self.request_ids)


@dataclass
class Served:
    """One variant's stored traces (judged or not): volume, latency per stage, tokens and cost."""

    variant: str
    traces: int
    latency_ms: dict[str, tuple[float, float]] = field(default_factory=dict)  # stage -> (p50, p95)
    priced: int = 0
    cost_per_query: float | None = None
    cost_total: float = 0.0
    input_tokens: float = 0.0
    output_tokens: float = 0.0


_WINDOW = "service = %(service)s AND time >= toDateTime64(%(since)s, 9, 'UTC')"


def pick_judge(query: QueryFn, service: str, since_s: float) -> str | None:
    """The judge with the most successful judgments of ``service`` in the window."""
    rows = query(
        f"SELECT judge_id, count() AS n FROM {{db}}.rag_judgments FINAL WHERE {_WINDOW} AND error = '' "
        "GROUP BY judge_id ORDER BY n DESC, judge_id LIMIT 1",
        {"service": service, "since": since_s},
    )
    return str(rows[0][0]) if rows else None


def _columns(rows: Sequence[Sequence[Any]]) -> dict[str, np.ndarray]:
    """The per-metric value arrays of judged rows (scores..., failure_mode, unsupported, hallucinated)."""
    k = len(SCORE_NAMES)
    out: dict[str, np.ndarray] = {}
    for i, name in enumerate(SCORE_NAMES):
        out[name] = np.asarray([np.nan if r[i] is None else float(r[i]) for r in rows], dtype=float)
    modes = [str(r[k]) for r in rows]
    out["unsupported_answer"] = np.asarray([1.0 if int(r[k + 1]) > 0 else 0.0 for r in rows])
    out["hallucinated_answer"] = np.asarray([1.0 if int(r[k + 2]) > 0 else 0.0 for r in rows])
    for mode, _ in FAILURE_MODES:
        out[f"failure_mode:{mode}"] = np.asarray(
            [np.nan if not m else 1.0 if m == mode else 0.0 for m in modes], dtype=float
        )
    return out


def load_judged(
    query: QueryFn, service: str, since_s: float, judge_id: str, variants: Sequence[str], max_rows: int
) -> dict[str, Judged]:
    """Variant -> its judged traces (the variants given, or every variant when none is)."""
    only = "AND variant IN %(variants)s" if variants else ""
    scores = ", ".join(SCORE_NAMES)
    sql = (
        f"SELECT j.variant, {', '.join('j.' + s for s in SCORE_NAMES)}, j.failure_mode, "
        "j.unsupported_claims, j.unsupported_hallucination, t.request_id, j.total "
        f"FROM (SELECT variant, trace_id, {scores}, failure_mode, unsupported_claims, unsupported_hallucination, "
        "count() OVER (PARTITION BY variant) AS total "
        f"FROM {{db}}.rag_judgments FINAL WHERE {_WINDOW} AND judge_id = %(judge)s AND error = '' {only} "
        "ORDER BY cityHash64(trace_id) LIMIT %(max_rows)s BY variant) AS j "
        "LEFT JOIN (SELECT trace_id, JSONExtractString(attributes, %(request_key)s) AS request_id "
        f"FROM {{db}}.rag_traces FINAL WHERE {_WINDOW}) AS t ON t.trace_id = j.trace_id"
    )
    params = {
        "service": service,
        "since": since_s,
        "judge": judge_id,
        "variants": list(variants),
        "max_rows": int(max_rows),
        "request_key": RAG_REQUEST_ID,
    }
    grouped: dict[str, list[Sequence[Any]]] = {}
    for row in query(sql, params):
        grouped.setdefault(str(row[0]), []).append(row)
    return {
        variant: Judged(
            variant,
            _columns([r[1:-2] for r in rows]),
            [str(r[-2] or "") for r in rows],
            int(rows[0][-1]) > len(rows),
        )
        for variant, rows in sorted(grouped.items())
    }


def load_served(query: QueryFn, service: str, since_s: float, variants: Sequence[str]) -> dict[str, Served]:
    """Variant -> volume, p50/p95 latency per stage, tokens and cost per priced query."""
    only = "AND variant IN %(variants)s" if variants else ""
    # A stage that did not run (no reranker) has 0 ms: its quantiles are over the traces that ran it.
    quantiles = ", ".join(
        f"quantiles(0.5, 0.95)({col})" if stage == "total" else f"quantilesIf(0.5, 0.95)({col}, {col} > 0)"
        for col, stage in STAGES
    )
    sql = (
        f"SELECT variant, count(), {quantiles}, count(generation_cost_usd), avg(generation_cost_usd), "
        "sum(ifNull(generation_cost_usd, 0)), avg(input_tokens), avg(output_tokens) "
        f"FROM {{db}}.rag_traces FINAL WHERE {_WINDOW} {only} GROUP BY variant ORDER BY variant"
    )
    out = {}
    for row in query(sql, {"service": service, "since": since_s, "variants": list(variants)}):
        variant, traces = str(row[0]), int(row[1])
        lat = {
            stage: (float(q[0]), float(q[1]))
            for (_, stage), q in zip(STAGES, row[2 : 2 + len(STAGES)], strict=True)
            if q and not math.isnan(q[0])
        }
        priced, avg_cost, total, tin, tout = row[2 + len(STAGES) :]
        out[variant] = Served(
            variant, traces, lat, int(priced), None if not priced else float(avg_cost), float(total),
            float(tin or 0.0), float(tout or 0.0),
        )  # fmt: skip
    return out
