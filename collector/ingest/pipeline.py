"""The ingest core shared by the Kafka service, the OTLP/HTTP receiver and the embedded collector.

:class:`Ingestor` takes assembled traces, builds :class:`RagTrace` rows,
decides sampling once per trace (re-using stored decisions for traces it
replays), and stores them. Deciding and storing are separate steps so that a
storage retry never spends the sampling budget twice. Transport (Kafka
offsets, in-process queues) is the caller's business, and so is waiting: the
storage reads made while deciding (the budget already spent, replayed traces'
stored decisions) retry through the caller's :class:`StorageRetry`, whose wait
keeps the caller's loop alive (the Kafka loop polls with consumption paused).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.metrics import Metrics
from ..core.model import RagTrace
from ..storage.clickhouse import Storage
from ..storage.retry import StorageRetry
from ..storage.rows import EncodedRows, encode_traces
from .assemble import Assembled
from .build import build_trace
from .cost import Pricing
from .sampling import Sampler, SamplingPolicy
from .served import observe_served

__all__ = ["Ingestor"]


class Ingestor:
    """Assembled traces -> sampled RagTrace rows -> rag_traces."""

    def __init__(
        self,
        storage: Storage,
        policy: SamplingPolicy,
        metrics: Metrics,
        retry: StorageRetry,
        pricing: Pricing | None = None,
    ) -> None:
        self.storage = storage
        self.metrics = metrics
        self.retry = retry
        self.pricing = pricing or Pricing()
        reasons = policy.budgeted_reasons()
        self.sampler = Sampler(
            policy,
            budget_loader=lambda minute_ns: self._budget_spent(minute_ns, reasons),
            variant_label=metrics.variants.label,
            stratum_loader=lambda minute_ns, label: self._budget_spent(minute_ns, [f"variant:{label}"]),
        )
        self.replay_marks: dict[Any, int] = {}

    def _budget_spent(self, minute_ns: int, reasons: Sequence[str]) -> int:
        return self.retry(lambda: self.storage.budget_spent(minute_ns, reasons))

    def build(self, assembled: Sequence[Assembled]) -> None:
        """Build each RAG trace now and drop its spans (a batch in flight holds traces, not spans)."""
        for a in assembled:
            if a.is_rag and a.trace is None:
                a.trace = build_trace(a.trace_id, a.spans)
                a.spans = []

    def prepare(self, assembled: Sequence[Assembled]) -> list[RagTrace]:
        """Build traces and decide sampling (once). Non-RAG traces are dropped and counted."""
        by_id: dict[str, RagTrace] = {}
        replayed: list[str] = []
        marks = self.replay_marks
        m = self.metrics
        for a in assembled:
            if not a.is_rag:
                m.traces_dropped.labels("non_rag").inc()
                continue
            t = a.trace if a.trace is not None else build_trace(a.trace_id, a.spans)
            t.complete = a.complete
            if a.last is not None:
                t.src_partition, t.src_offset = a.last
            prev = by_id.get(t.trace_id)
            if prev is not None and prev.span_count >= t.span_count:
                continue
            by_id[t.trace_id] = t
            if marks and any(off <= marks.get(part, -1) for part, off in a.positions.items()):
                replayed.append(t.trace_id)
        traces = list(by_id.values())
        stored = self.retry(lambda: self.storage.stored_decisions(replayed)) if replayed else {}
        decided: dict[tuple[str, str], int] = {}
        received: dict[tuple[str, str], int] = {}
        decide = self.sampler.decide
        cost = self.pricing.cost
        fresh: list[RagTrace] = []
        for t in traces:
            t.generation_cost_usd, _ = cost(t.model, t.provider, t.input_tokens, t.output_tokens)
            decision = stored.get(t.trace_id)
            if decision is None:
                decision = decide(t)
                fresh.append(t)
            t.sampled, t.sampled_reason = decision
            key = (t.sampled_reason, "1" if t.sampled else "0")
            decided[key] = decided.get(key, 0) + 1
            key = (t.service, t.source)
            received[key] = received.get(key, 0) + 1
        for key, n in decided.items():
            m.traces_sampled.labels(*key).inc(n)
        for key, n in received.items():
            m.traces_received.labels(*key).inc(n)
        observe_served(m, fresh)
        return traces

    def store(self, traces: Sequence[RagTrace], src_topic: str = "") -> None:
        """Insert into rag_traces (raises StorageUnavailable; callers retry)."""
        self.store_encoded(encode_traces(traces, src_topic), len(traces))

    def store_encoded(self, rows: EncodedRows, count: int) -> None:
        """Insert ``count`` rows encoded by :func:`encode_traces` (thread-safe; raises
        StorageUnavailable)."""
        self.storage.insert_encoded_traces(rows)
        self.metrics.traces_stored.inc(count)
