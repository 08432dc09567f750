"""Judge workers: judge queued traces, store rag_judgments and rag_claims, export quality metrics.

A :class:`JudgeWorker` takes ``ragpulse.judge`` messages (docs/contracts.md),
runs a judge from ``ragpulse.collector.judge`` (anything with ``judge_id`` and
``judge(record) -> output record``), and writes one ``rag_judgments`` row per
(trace id, judge id) plus one ``rag_claims`` row per claim. Both tables are
ReplacingMergeTree keyed by trace id + judge id (+ claim index) with the
trace's span count as version, so a replayed or repeated message changes
nothing in query results. Metrics are updated only after the rows are stored,
once per (trace, judge) seen by this process.

The transport around it is separate: the Kafka loop in judge/service.py and
the in-process queue of the embedded collector.
"""

from __future__ import annotations

import json
import logging
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from ....agent.values import optional_float
from ...contract import SCORE_NAMES, Judge
from ...core.metrics import Metrics
from ...storage.clickhouse import Storage

__all__ = ["Judge", "JudgeWorker", "load_judge", "judgment_rows"]

log = logging.getLogger("ragpulse.judge_worker")

_KNOWN = set(SCORE_NAMES) | {
    "trace_id", "judge_id", "abstained", "abstention_kind", "failure_mode", "unsupported_claims",
    "claims", "error", "tier", "cost_usd", "latency_ms", "judge_tier", "judge_latency_ms", "judge_cost_usd",
}  # fmt: skip


def load_judge(spec: str = "local", settings: dict[str, Any] | None = None) -> Judge:
    """``ragpulse.collector.judge.get_judge(spec, **settings)``, imported only when judging is on."""
    from .. import get_judge  # type: ignore[attr-defined]

    return get_judge(spec, **(settings or {}))


def judgment_rows(
    message: dict[str, Any], output: dict[str, Any], judge_id: str, latency_ms: float, now_ms: int
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The rag_judgments row and rag_claims rows for one judged message."""
    claims = output.get("claims") or []
    verdicts = [str(c.get("verdict", "")) for c in claims if isinstance(c, dict)]
    sources = [
        str(c.get("unsupported_source") or c.get("source") or "")
        for c in claims
        if isinstance(c, dict) and c.get("verdict") != "supported"
    ]
    tid = str(message.get("trace_id") or output.get("trace_id"))
    jid = str(output.get("judge_id") or judge_id)
    service = str(message.get("service", ""))
    variant = str(message.get("variant") or "")
    t = int(message.get("time_unix_nano") or 0)
    version = int(message.get("span_count") or 0)
    error = output.get("error")
    row: dict[str, Any] = {
        "trace_id": tid,
        "judge_id": jid,
        "service": service,
        "variant": variant,
        "time": t,
        "judged_at": now_ms,
        "abstained": 1 if output.get("abstained") else 0,
        "abstention_kind": str(output.get("abstention_kind") or ""),
        "failure_mode": str(output.get("failure_mode") or ""),
        "claims_total": len(verdicts),
        "claims_supported": verdicts.count("supported"),
        "claims_unsupported": verdicts.count("unsupported"),
        "claims_contradicted": verdicts.count("contradicted"),
        "unsupported_hallucination": sources.count("hallucination"),
        "unsupported_noise": sources.count("noise"),
        "unsupported_claims": int(output.get("unsupported_claims") or 0),
        "tier": str(output.get("judge_tier") or output.get("tier") or jid.split("-", 1)[0]),
        "judge_latency_ms": float(output.get("judge_latency_ms") or output.get("latency_ms") or latency_ms),
        "judge_cost_usd": float(output.get("judge_cost_usd") or output.get("cost_usd") or 0.0),
        "error": str(error) if error else "",
        "sampled_reason": str(message.get("sampled_reason", "")),
        "version": version,
        "extra": json.dumps({k: v for k, v in output.items() if k not in _KNOWN}, default=str),
    }
    for name in SCORE_NAMES:
        row[name] = optional_float(output.get(name))
    claim_rows = []
    for i, c in enumerate(claims):
        if not isinstance(c, dict):
            continue
        valid = c.get("citation_valid")
        claim_rows.append(
            {
                "trace_id": tid,
                "judge_id": jid,
                "claim_index": i,
                "service": service,
                "variant": variant,
                "time": t,
                "text": str(c.get("text", "")),
                "verdict": str(c.get("verdict", "")),
                "supporting_chunk_ids": [str(x) for x in c.get("supporting_chunk_ids") or []],
                "cited_chunk_ids": [str(x) for x in c.get("cited_chunk_ids") or []],
                "citation_valid": None if valid is None else (1 if valid else 0),
                "unsupported_source": str(c.get("unsupported_source") or c.get("source") or "")
                if c.get("verdict") != "supported"
                else "",
                "support_probability": _probability(c.get("support_probability")),
                "restates_user": 1 if c.get("restates_user") and c.get("verdict") == "supported" else 0,
                "version": version,
            }
        )
    return row, claim_rows


class JudgeWorker:
    """Judges messages with one judge and stores the results idempotently."""

    def __init__(
        self, judge: Judge, storage: Storage, metrics: Metrics, seen: int = 100_000, events: Any = None
    ) -> None:
        """``events``: an :class:`~.evaluation_events.EvaluationEvents` that gets every newly
        stored judgment (None: no evaluation events)."""
        self.judge = judge
        self.events = events
        self.storage = storage
        self.metrics = metrics
        self._seen: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._seen_max = seen
        self._paused_s = 0.0

    def judge_messages(
        self, messages: Sequence[dict[str, Any]]
    ) -> list[tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]]:
        """Judge each message (the judge never raises by contract; if it does, the error is recorded)."""
        results = []
        jid = self.judge.judge_id
        for msg in messages:
            start = time.perf_counter()
            try:
                output = self.judge.judge(msg)
                if not isinstance(output, dict):
                    raise TypeError(f"judge returned {type(output).__name__}, not a dict")
            except Exception as exc:  # noqa: BLE001 - a judge failure is recorded, never a score of 0
                log.exception("judge %s failed on %s", jid, msg.get("trace_id"))
                output = {
                    "trace_id": msg.get("trace_id"),
                    "judge_id": jid,
                    "error": f"{type(exc).__name__}: {exc}",
                }
                output.update({name: None for name in SCORE_NAMES})
            latency_ms = (time.perf_counter() - start) * 1000.0
            row, claims = judgment_rows(msg, output, jid, latency_ms, int(time.time() * 1000))
            results.append((row, claims, msg))
        self._count_budget_pauses()
        return results

    def _count_budget_pauses(self) -> None:
        """Add the time the judge's cost budget held it back (LLM judges; tiered through their LLM tier)."""
        budget = getattr(self.judge, "budget", None) or getattr(
            getattr(self.judge, "llm", None), "budget", None
        )
        paused = getattr(budget, "paused_seconds", None)
        if isinstance(paused, int | float) and paused > self._paused_s:
            self.metrics.judge_budget_paused.labels(self.judge.judge_id).inc(paused - self._paused_s)
            self._paused_s = float(paused)

    def store(self, results: Sequence[tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]]) -> None:
        """Insert judgments and claims (raises StorageUnavailable; callers retry), then update metrics."""
        if not results:
            return
        self.storage.insert_claims([c for _, claims, _ in results for c in claims])
        self.storage.insert_judgments([row for row, _, _ in results])
        self.metrics.judgments_stored.inc(len(results))
        now_ns = time.time_ns()
        for row, claims, msg in results:
            key = (row["trace_id"], row["judge_id"])
            if key in self._seen:
                continue
            self._seen[key] = None
            if len(self._seen) > self._seen_max:
                self._seen.popitem(last=False)
            self._observe(row, claims, msg, now_ns)
            if self.events is not None:
                self.events.emit(row, claims, msg)

    def _observe(
        self, row: dict[str, Any], claims: list[dict[str, Any]], msg: dict[str, Any], now_ns: int
    ) -> None:
        m = self.metrics
        service, judge = row["service"], row["judge_id"]
        m.traces_judged.labels(service, judge).inc()
        m.judge_latency.labels(service, judge).observe(row["judge_latency_ms"] / 1000.0)
        if row["judge_cost_usd"]:
            m.judge_cost.labels(service, judge).inc(row["judge_cost_usd"])
        end = int(msg.get("end_time_unix_nano") or 0)
        if end:
            m.pipeline_lag.labels(service).observe(max(0.0, (now_ns - end) / 1e9))
        if row["error"]:
            m.judge_errors.labels(service, judge).inc()
            return
        if '"llm_error"' in row["extra"] and json.loads(row["extra"]).get("llm_error"):
            m.escalation_errors.labels(service, judge).inc()
        variant = m.variants.label(row["variant"])
        for name in SCORE_NAMES:
            value = row.get(name)
            if value is not None:
                m.scores[name].labels(service, judge, variant).observe(value)
        for c in claims:
            m.claims.labels(service, judge, variant, c["verdict"] or "unknown").inc()
            valid = c["citation_valid"]
            m.claim_citations.labels(
                service, judge, variant, "none" if valid is None else "valid" if valid else "invalid"
            ).inc()
            if c["verdict"] != "supported":
                m.unsupported_claims.labels(
                    service, judge, variant, c["unsupported_source"] or "unknown"
                ).inc()
        if row["abstained"]:
            m.abstentions.labels(service, judge, variant, row["abstention_kind"] or "unknown").inc()
        if row["failure_mode"]:
            m.failure_modes.labels(service, judge, variant, row["failure_mode"]).inc()


def _probability(value: Any) -> float | None:
    """A claim's support probability for storage: a number in [0, 1], else NULL (the LLM
    judge has none)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return min(1.0, max(0.0, float(value)))
