"""Reading the export's candidates from ClickHouse: failing, fed-back and alerted traces of a window.

Four queries per run (traces' latest judgments, their claims, negative
feedback, queued alert windows) and one for the traces themselves; all read
with FINAL so replays never count twice. The result is a list of
:class:`Candidate`, each with every reason it matched (criteria.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..core.feedback_spans import is_negative
from ..storage.clickhouse import Storage
from .criteria import Criteria

__all__ = ["Candidate", "AlertWindow", "select_candidates", "alert_windows", "stored_metadata"]

_SCORES = (
    "faithfulness", "citation_correctness", "citation_completeness",
    "answer_relevance", "context_precision", "context_utilization",
)  # fmt: skip
_JUDGMENTS = (
    "SELECT trace_id, argMax(judge_id, judged_at), "
    + ", ".join(f"argMax({s}, judged_at)" for s in _SCORES)
    + ", argMax(failure_mode, judged_at), argMax(abstention_kind, judged_at), "
    "argMax(unsupported_hallucination, judged_at) "
    "FROM {db}.rag_judgments FINAL WHERE error = '' AND trace_id IN %(ids)s GROUP BY trace_id"
)
_TRACES = (
    "SELECT trace_id, toUnixTimestamp64Nano(time), service, query, answer, chunk_ids, chunk_contents, "
    "chunk_scores, chunk_metadata, citation_doc_ids, citation_markers, citation_starts, citation_ends, "
    "corpus_version, risk_level, query_type, conversation_roles, conversation_contents, "
    "chunk_source_types, chunk_tools, chunk_queries FROM {db}.rag_traces FINAL WHERE trace_id IN %(ids)s"
)
_WINDOW = (
    "SELECT trace_id FROM {db}.rag_traces FINAL "
    "WHERE time >= fromUnixTimestamp64Nano(%(lo)s) AND time < fromUnixTimestamp64Nano(%(hi)s)"
)
_CLAIMS = (
    "SELECT trace_id, judge_id, claim_index, text, verdict, supporting_chunk_ids, citation_valid, "
    "unsupported_source FROM {db}.rag_claims FINAL WHERE trace_id IN %(ids)s ORDER BY trace_id, claim_index"
)
_FEEDBACK = "SELECT trace_id, value, label FROM {db}.rag_feedback FINAL WHERE trace_id IN %(ids)s"
_ALERTS = (
    "SELECT case_id, reasons, service, toUnixTimestamp64Nano(window_start), toUnixTimestamp64Nano(window_end) "
    "FROM {db}.rag_exports FINAL WHERE kind = 'queued' AND window_end >= fromUnixTimestamp64Nano(%(lo)s) "
    "AND window_start < fromUnixTimestamp64Nano(%(hi)s) ORDER BY window_start, case_id"
)


@dataclass
class Candidate:
    """One trace the criteria picked: the trace row, its latest judgment and claims, its reasons."""

    trace_id: str
    time_ns: int
    service: str
    query: str
    answer: str
    chunks: list[dict[str, Any]]
    citations: list[dict[str, Any]]
    corpus_version: str
    risk_level: str
    query_type: str
    judgment: dict[str, Any] | None = None
    claims: list[dict[str, Any]] = field(default_factory=list)
    reasons: set[str] = field(default_factory=set)
    conversation: list[dict[str, str]] = field(default_factory=list)  # the messages before the turn


@dataclass(frozen=True)
class AlertWindow:
    """A queued alert: its key, name, service and window (nanoseconds)."""

    key: str
    name: str
    service: str
    start_ns: int
    end_ns: int


def stored_metadata(text: str) -> Any:
    """A stored JSON text column (chunk metadata, attributes) as a dict; other JSON values and
    unparsable text are wrapped (``{"value": ...}``, ``{"raw": ...}``) rather than dropped."""
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {"raw": text}
    return value if isinstance(value, dict) else {"value": value}


def _chunked(storage: Storage, sql: str, ids: list[str]) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []
    for i in range(0, len(ids), 5000):
        rows.extend(storage.query(sql, {"ids": ids[i : i + 5000]}))
    return rows


def alert_windows(storage: Storage, lo_ns: int, hi_ns: int) -> list[AlertWindow]:
    """Queued alert windows overlapping [lo, hi)."""
    out = []
    for key, reasons, service, start, end in storage.query(_ALERTS, {"lo": lo_ns, "hi": hi_ns}):
        name = reasons[0].split(":", 1)[1] if reasons and ":" in reasons[0] else "unknown"
        out.append(AlertWindow(key, name, service, int(start), int(end)))
    return out


def _judgment_reasons(j: dict[str, Any], claims: list[dict[str, Any]], c: Criteria) -> set[str]:
    reasons = set()
    if j["failure_mode"] in c.failure_modes:
        reasons.add(f"failure_mode:{j['failure_mode']}")
    if c.false_refusal and j["abstention_kind"] == "false_refusal":
        reasons.add("false_refusal")
    if c.hallucination and j["unsupported_hallucination"] > 0:
        reasons.add("hallucination")
    if c.invalid_citation and any(cl["citation_valid"] == 0 for cl in claims):
        reasons.add("invalid_citation")
    f = j["scores"]["faithfulness"]
    if c.faithfulness_below is not None and f is not None and f < c.faithfulness_below:
        reasons.add("low_faithfulness")
    return reasons


def _judgments(storage: Storage, ids: list[str]) -> dict[str, dict[str, Any]]:
    out = {}
    for row in _chunked(storage, _JUDGMENTS, ids):
        scores = dict(zip(_SCORES, row[2:8], strict=True))
        out[row[0]] = {
            "judge_id": row[1],
            "scores": scores,
            "failure_mode": row[8],
            "abstention_kind": row[9],
            "unsupported_hallucination": int(row[10]),
        }
    return out


def _claims(storage: Storage, ids: list[str], judges: dict[str, dict[str, Any]]) -> dict[str, list[dict]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for tid, jid, _, text, verdict, supporting, valid, source in _chunked(storage, _CLAIMS, ids):
        if judges.get(tid, {}).get("judge_id") != jid:
            continue
        out.setdefault(tid, []).append(
            {"text": text, "verdict": verdict, "supporting_chunk_ids": list(supporting),
             "citation_valid": valid, "unsupported_source": source}
        )  # fmt: skip
    return out


def _provenance(kind: str, tool: str, query: str) -> dict[str, str]:
    """Where a stored chunk came from, as the eval set keeps it: a tool's result says so and names
    the tool (its arguments as ``query``); a retrieved chunk keeps the query that fetched it."""
    out = {"source_type": kind, "tool": tool} if kind == "tool" else {}
    return {**out, "query": query} if query else out


def _candidate(row: tuple[Any, ...]) -> Candidate:
    (tid, ns, service, query, answer, ids, contents, scores, metas, cdocs, cmarks, cstarts, cends) = row[:13]
    roles, texts, kinds, tools, queries = row[16:21]
    n = len(ids)  # rows stored before the provenance columns have them empty
    kinds, tools, queries = (list(a) + [""] * (n - len(a)) for a in (kinds, tools, queries))
    return Candidate(
        trace_id=tid, time_ns=int(ns), service=service, query=query, answer=answer,
        chunks=[{"id": i, "content": t, "score": s, "metadata": stored_metadata(m), **_provenance(k, tl, q)}
                for i, t, s, m, k, tl, q in zip(ids, contents, scores, metas, kinds, tools, queries, strict=True)],
        citations=[{"doc_id": d, "marker": m, "start": int(s), "end": int(e)}
                   for d, m, s, e in zip(cdocs, cmarks, cstarts, cends, strict=True)],
        corpus_version=row[13], risk_level=row[14], query_type=row[15],
        conversation=[{"role": r, "content": c} for r, c in zip(roles, texts, strict=True)],
    )  # fmt: skip


def select_candidates(
    storage: Storage, lo_ns: int, hi_ns: int, criteria: Criteria, alerts: list[AlertWindow]
) -> list[Candidate]:
    """Every trace of [lo, hi) that matched a criterion, with all its reasons, ordered by trace id."""
    ids = sorted(r[0] for r in storage.query(_WINDOW, {"lo": lo_ns, "hi": hi_ns}))
    judges = _judgments(storage, ids)
    claims = _claims(storage, sorted(judges), judges)
    reasons: dict[str, set[str]] = {}
    for tid, j in judges.items():
        found = _judgment_reasons(j, claims.get(tid, []), criteria)
        if found:
            reasons[tid] = found
    if criteria.negative_feedback:
        for tid, value, label in _chunked(storage, _FEEDBACK, ids):
            if is_negative({"value": value, "label": label}):
                reasons.setdefault(tid, set()).add("feedback:negative")
    rows = _chunked(storage, _TRACES, sorted(reasons))
    out = []
    for row in sorted(rows, key=lambda r: r[0]):
        cand = _candidate(row)
        cand.judgment = judges.get(cand.trace_id)
        cand.claims = claims.get(cand.trace_id, [])
        cand.reasons = reasons[cand.trace_id]
        failing = any(not r.startswith("feedback:") for r in cand.reasons)
        if criteria.alerts and failing:
            for a in alerts:
                if a.service == cand.service and a.start_ns <= cand.time_ns <= a.end_ns:
                    cand.reasons.add(f"alert:{a.name}")
        out.append(cand)
    return out
