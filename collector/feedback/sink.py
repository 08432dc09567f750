"""The collector's feedback stage: store feedback, add re-asks, queue unjudged traces for judging.

Called once per ingest batch by the Kafka collector and the embedded
collector, with the feedback spans the assembler set aside and the batch's
freshly decided traces: :meth:`FeedbackSink.prepare` in memory before they
are stored, its returned step (storage reads and writes) after, on the thread
that stores the batch, so the Kafka consumer's loop never waits for storage. Feedback never waits for its trace:
rows go to ``rag_feedback`` at once, keyed by trace id, whether the trace was
stored an hour ago, is in this batch, or arrives later.

Negative feedback on a trace nobody judged queues it for judging with the
sampling reason ``rule:feedback``: a trace of this batch is flipped to sampled
before it is stored; a stored, unsampled, unjudged trace is read back and its
judge message returned; a trace not seen yet is remembered (bounded) and
flipped when it arrives. With ``sampling.budget_includes_rules`` each of these
spends the sampling budget like any rule, and is skipped when it is used up.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..core.feedback_spans import FEEDBACK_COLUMNS, FEEDBACK_REASON, feedback_row, is_negative
from ..core.metrics import Metrics
from ..core.model import Chunk, Message, RagTrace, Span, judge_conversation
from ..export.select import stored_metadata
from ..ingest.sampling import Sampler
from ..storage.clickhouse import Storage
from ..storage.retry import Backoff, retry_storage
from .reask import Call, ReaskDetector

__all__ = ["FeedbackSink", "store_feedback_rows"]

log = logging.getLogger("ragpulse.feedback")

_PENDING_MAX = 100_000


def store_feedback_rows(storage: Storage, metrics: Metrics | None, rows: Sequence[dict[str, Any]]) -> int:
    """Insert ``rag_feedback`` rows and count them in ``ragpulse_feedback_total``."""
    n = storage.insert_json_rows("rag_feedback", FEEDBACK_COLUMNS, rows, nanos=("time",))
    if metrics is not None:
        for r in rows:
            metrics.feedback.labels(r["service"], r["kind"], r["label"]).inc()
    return n


class FeedbackSink:
    """See the module docstring. One per collector process (it holds the pending set)."""

    def __init__(
        self,
        storage: Storage,
        metrics: Metrics,
        sampler: Sampler,
        section: Mapping[str, Any] | None = None,
        wait: Callable[[float], bool] = lambda delay: not time.sleep(delay),
    ) -> None:
        section = dict(section or {})
        self.storage = storage
        self.metrics = metrics
        self.sampler = sampler
        self.judge_on_negative = bool(section.get("judge_on_negative", True))
        self.reask = ReaskDetector(storage, section.get("reask"))
        self._wait = wait
        self._pending: OrderedDict[str, None] = OrderedDict()  # negative feedback, trace not seen
        self._queued: OrderedDict[str, None] = OrderedDict()  # already queued by this sink

    def _retry(self, fn: Callable[[], Any]) -> Any:
        return retry_storage(fn, self.metrics, Backoff(), self._wait)

    def handle(self, spans: Sequence[Span], traces: Sequence[RagTrace]) -> list[dict[str, Any]]:
        """:meth:`prepare` then the storage step at once (for callers that store in between
        themselves, the embedded collector calls the two around its insert)."""
        after = self.prepare(spans, traces)
        return after() if after is not None else []

    def prepare(self, spans: Sequence[Span], traces: Sequence[RagTrace]) -> Callable[[], list[dict]] | None:
        """In memory, before ``traces`` are stored: flip this batch's traces that have negative
        feedback pending. Returns the storage step to run once the batch is stored (None when
        there is nothing to do): it stores the feedback and the re-asks and returns the judge
        messages of stored traces now queued for judging."""
        rows = [feedback_row(s) for s in spans]
        calls = (
            [Call(t.trace_id, t.session_id, t.time, t.query, t.service) for t in traces if t.session_id]
            if self.reask.enabled
            else []
        )
        if self.judge_on_negative:
            for tid in sorted({r["trace_id"] for r in rows if is_negative(r)} - self._queued.keys()):
                self._remember(self._pending, tid)
            in_batch = {t.trace_id: t for t in traces} if self._pending else {}
            for tid in [tid for tid in self._pending if tid in in_batch]:
                del self._pending[tid]
                self._claim(in_batch[tid])
        if not rows and not calls:
            return None
        return lambda: self._after_store(rows, calls)

    def store_rows(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Store feedback that did not arrive as spans (``ragpulse feedback import``) through the
        same step as span feedback: the rows, the metric, and the judge messages of stored traces
        that negative feedback now queues. Negative feedback on a trace not stored (yet) stays in
        :attr:`pending`."""
        return self._after_store(rows, [])

    @property
    def pending(self) -> list[str]:
        """Trace ids with negative feedback whose trace this sink has not seen stored."""
        return list(self._pending)

    def _after_store(self, rows: list[dict[str, Any]], calls: list[Call]) -> list[dict[str, Any]]:
        if calls:
            rows = rows + self._retry(lambda: self.reask.detect(calls))
        if rows:
            self._retry(lambda: store_feedback_rows(self.storage, self.metrics, rows))
        if not self.judge_on_negative:
            return []
        negative = {r["trace_id"] for r in rows if is_negative(r)} - self._queued.keys()
        for tid in negative:
            self._remember(self._pending, tid)
        ids = sorted(tid for tid in negative if tid in self._pending)
        return self._requeue_stored(ids) if ids else []

    def _claim(self, t: RagTrace) -> None:
        if t.sampled or not self.sampler.admit_rule(t.time):
            return
        t.sampled, t.sampled_reason = True, FEEDBACK_REASON
        self._remember(self._queued, t.trace_id)
        self.metrics.feedback_requeued.inc()

    def _requeue_stored(self, ids: list[str]) -> list[dict[str, Any]]:
        """Judge messages for stored traces among ``ids`` that were neither sampled nor judged."""
        judged = {r[0] for r in self._retry(lambda: self.storage.query(_JUDGED_SQL, {"ids": ids}))}
        rows = self._retry(lambda: self.storage.query(_TRACE_SQL, {"ids": ids}))
        out = []
        for row in rows:
            tid, sampled = row[0], row[-1]
            self._pending.pop(tid, None)
            if sampled or tid in judged or not self.sampler.admit_rule(int(row[2])):
                continue
            out.append(_judge_message(row))
            self._remember(self._queued, tid)
        self.metrics.feedback_requeued.inc(len(out))
        return out

    @staticmethod
    def _remember(store: OrderedDict[str, None], tid: str) -> None:
        store[tid] = None
        if len(store) > _PENDING_MAX:
            store.popitem(last=False)


_JUDGED_SQL = "SELECT DISTINCT trace_id FROM {db}.rag_judgments WHERE trace_id IN %(ids)s"
_TRACE_SQL = (
    "SELECT trace_id, service, toUnixTimestamp64Nano(time), toUnixTimestamp64Nano(end_time), query, answer, "
    "chunk_ids, chunk_contents, chunk_scores, chunk_metadata, citation_doc_ids, citation_markers, "
    "citation_starts, citation_ends, model, corpus_version, risk_level, span_count, attributes, "
    "chunk_source_types, chunk_tools, chunk_queries, conversation_roles, conversation_contents, sampled "
    "FROM {db}.rag_traces FINAL WHERE trace_id IN %(ids)s ORDER BY trace_id"
)


def _judge_message(row: tuple[Any, ...]) -> dict[str, Any]:
    """A stored trace's ``ragpulse.judge`` message (the shape of RagTrace.judge_message: its chunks
    and conversation made by the model's own records)."""
    (tid, service, t0, t1, query, answer, ids, contents, scores, metas, cdocs, cmarks, cstarts, cends) = row[
        :14
    ]
    model, corpus, risk, span_count, attributes = row[14:19]
    types, tools, queries, roles, texts = row[19:24]
    chunks = [
        Chunk(i, c, s, m, None, st, tool, q)
        for i, c, s, m, st, tool, q in zip(ids, contents, scores, metas, types, tools, queries, strict=True)
    ]
    return {
        "trace_id": tid,
        "service": service,
        "time_unix_nano": int(t0),
        "end_time_unix_nano": int(t1),
        "query": query,
        "answer": answer,
        "chunks": [c.as_record() for c in chunks],
        "citations": [
            {"doc_id": d, "marker": m, "start": int(s), "end": int(e)}
            for d, m, s, e in zip(cdocs, cmarks, cstarts, cends, strict=True)
        ],
        "conversation": judge_conversation([Message(r, c) for r, c in zip(roles, texts, strict=True)]),
        "model": model,
        "corpus_version": corpus,
        "risk_level": risk,
        "sampled_reason": FEEDBACK_REASON,
        "span_count": int(span_count),
        "attributes": stored_metadata(attributes),
    }
