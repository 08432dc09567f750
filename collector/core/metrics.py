"""Prometheus metrics of the collector and the judge workers.

Every metric lives in the :class:`Metrics` object's own ``CollectorRegistry``
(several pipelines can run in one process, e.g. in tests). Events (records,
traces stored, judgments) are counters the loops increment; state (assembly
buffer, consumer lag, late spans) is read at scrape time (:mod:`.state`).
The HTTP endpoint is :mod:`.server`, health is :mod:`.health`. Names start with
``ragpulse_``; quality metrics are labelled by ``service``, ``judge`` and
``variant`` (bounded by :class:`.variants.VariantLabels`), never by trace or
user id, so cardinality stays bounded. The full list is in
docs/collector.md.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from ..contract import SCORE_NAMES
from .batch_histogram import BatchHistogram
from .native import implementation
from .poll_watch import PollWatch
from .state import StateCollector, StateMetric
from .variants import VariantLabels

__all__ = ["Metrics"]

_SCORE_BUCKETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0)
_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
# intake result -> ragpulse_records_total result (ok, empty, rejected and throttled as they are)
_RECORD_RESULTS = {"unauthenticated": "rejected", "unavailable": "throttled"}
_LAG_BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800)


class Metrics:
    """All ragpulse metrics in one registry."""

    def __init__(self, variants: VariantLabels | None = None) -> None:
        r = self.registry = CollectorRegistry()
        self.variants = variants or VariantLabels()  # rag.variant -> a bounded label value
        self._ingest_metrics(r)
        self._state_metrics(r)
        self._judge_metrics(r)
        self._variant_metrics(r)
        # which OTLP protobuf decoder this process runs (native or python), as an info-style gauge
        self.decoder = Gauge(
            "ragpulse_otlp_decoder_info", "1 for the OTLP protobuf decoder in use", ["decoder"], registry=r
        )
        self.decoder.labels(implementation()).set(1)
        self.polls = PollWatch()  # Kafka polls in progress, reported by the loops for /healthz

    def _ingest_metrics(self, r: CollectorRegistry) -> None:
        self.records = Counter(
            "ragpulse_records_total", "Kafka records / OTLP requests received", ["result"], registry=r
        )
        self.spans_received = Counter("ragpulse_spans_received_total", "Spans decoded", registry=r)
        self.intake_requests = Counter(
            "ragpulse_intake_requests_total",
            "OTLP requests answered by the intakes, by protocol (http, grpc) and result",
            ["protocol", "result"],
            registry=r,
        )
        self.intake_spans = Counter(
            "ragpulse_intake_spans_total",
            "Spans in OTLP requests accepted, by protocol",
            ["protocol"],
            registry=r,
        )
        self.traces_received = Counter(
            "ragpulse_traces_received_total", "Assembled RAG traces", ["service", "source"], registry=r
        )
        self.traces_stored = Counter(
            "ragpulse_traces_stored_total", "RAG traces written to rag_traces", registry=r
        )
        self.traces_sampled = Counter(
            "ragpulse_traces_sampled_total", "Sampling decisions by reason", ["reason", "sampled"], registry=r
        )
        self.traces_dropped = Counter(
            "ragpulse_traces_dropped_total",
            "Traces not stored (non_rag: no RAG span)",
            ["reason"],
            registry=r,
        )
        self.deadlettered = Counter(
            "ragpulse_deadlettered_total", "Records sent to the dead-letter topic", ["kind"], registry=r
        )
        self.batch_latency = Histogram(
            "ragpulse_batch_seconds",
            "Time to store, queue and commit one batch",
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.batch_traces = Histogram(
            "ragpulse_batch_traces",
            "Traces per stored batch",
            buckets=(1, 10, 100, 500, 1000, 5000, 20000),
            registry=r,
        )
        self.storage_retries = Counter(
            "ragpulse_storage_retries_total",
            "Storage operations retried after ClickHouse was unavailable",
            registry=r,
        )
        self.storage_up = Gauge(
            "ragpulse_storage_up", "1 when the last storage operation succeeded", registry=r
        )
        self.judge_queue_sent = Counter(
            "ragpulse_judge_queued_total", "Traces queued for judging", registry=r
        )
        # feedback (collector/feedback/)
        self.feedback = Counter(
            "ragpulse_feedback_total",
            "Feedback events stored (explicit, imported and implicit re-asks)",
            ["service", "kind", "label"],
            registry=r,
        )
        self.feedback_requeued = Counter(
            "ragpulse_feedback_requeued_total",
            "Unjudged traces queued for judging because of negative feedback",
            registry=r,
        )

    def _state_metrics(self, r: CollectorRegistry) -> None:
        """The metrics read at scrape time (:mod:`.state`), by one custom collector."""
        self.late_spans = StateMetric(
            "ragpulse_late_spans_total", "Spans arriving after their trace was emitted", kind="counter"
        )
        self.consumer_lag = StateMetric(
            "ragpulse_consumer_lag", "Records behind the end of the partition", ["topic", "partition"]
        )
        self.assembly_buffer = StateMetric("ragpulse_assembly_buffer_traces", "Partial traces buffered")
        self.assembly_evicted = StateMetric(
            "ragpulse_assembly_evicted_total",
            "Partial traces emitted early because the assembly buffer was full",
            kind="counter",
        )
        self.reask_index_calls = StateMetric(
            "ragpulse_reask_index_calls", "Calls held in memory for re-ask detection"
        )
        self.reask_index_evicted = StateMetric(
            "ragpulse_reask_index_evicted_total",
            "Calls dropped from the re-ask index before their window ended (its max_calls cap)",
            kind="counter",
        )
        self.intake_inflight = StateMetric(
            "ragpulse_intake_inflight_bytes", "Request body bytes the OTLP/HTTP intake holds now"
        )
        r.register(StateCollector([
            self.late_spans, self.consumer_lag, self.assembly_buffer, self.assembly_evicted,
            self.reask_index_calls, self.reask_index_evicted, self.intake_inflight,
        ]))  # fmt: skip

    def _judge_metrics(self, r: CollectorRegistry) -> None:
        by = ("service", "judge")
        self.traces_judged = Counter("ragpulse_traces_judged_total", "Traces judged", by, registry=r)
        self.judge_errors = Counter(
            "ragpulse_judge_errors_total", "Judgments that failed (recorded as errors)", by, registry=r
        )
        self.escalation_errors = Counter(
            "ragpulse_judge_escalation_errors_total",
            "Tiered judgments whose LLM tier failed (the local verdict was stored instead)",
            ["service", "judge"],
            registry=r,
        )
        # Quality metrics also carry the bounded variant label (core/variants.py).
        q = (*by, "variant")
        self.scores = {
            name: Histogram(f"ragpulse_{name}", f"{name.replace('_', ' ')} per judged trace", q,
                            buckets=_SCORE_BUCKETS, registry=r)
            for name in SCORE_NAMES
        }  # fmt: skip
        self.claims = Counter(
            "ragpulse_claims_total", "Judged claims by verdict", (*q, "verdict"), registry=r
        )
        citation = "Judged claims by citation: valid (its citations support it), invalid, none (uncited)"
        self.claim_citations = Counter(
            "ragpulse_claim_citations_total", citation, (*q, "citation"), registry=r
        )
        unsupported = (
            "Judged claims not supported, by source: hallucination (in no chunk), noise (copied from a chunk)"
        )
        self.unsupported_claims = Counter(
            "ragpulse_unsupported_claims_total", unsupported, (*q, "source"), registry=r
        )
        paused = "Seconds the judge waited for its cost budget"
        self.judge_budget_paused = Counter(
            "ragpulse_judge_budget_paused_seconds_total", paused, ["judge"], registry=r
        )
        self.abstentions = Counter(
            "ragpulse_abstentions_total", "Abstentions by kind", (*q, "kind"), registry=r
        )
        modes = "Judged traces by failure mode"
        self.failure_modes = Counter("ragpulse_failure_modes_total", modes, (*q, "mode"), registry=r)
        self.judge_latency = Histogram(
            "ragpulse_judge_latency_seconds",
            "Time to judge one trace",
            by,
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.judge_cost = Counter("ragpulse_judge_cost_usd_total", "Judge cost in USD", by, registry=r)
        self.pipeline_lag = Histogram(
            "ragpulse_pipeline_lag_seconds", "From span end to judgment stored", ["service"],
            buckets=_LAG_BUCKETS, registry=r,
        )  # fmt: skip
        self.evaluation_events = Counter(
            "ragpulse_evaluation_events_total",
            "gen_ai.evaluation.result log records: exported, failed (export failed after retries), "
            "dropped (export queue full or shut down)",
            ["result"],
            registry=r,
        )
        self.judgments_stored = Counter(
            "ragpulse_judgments_stored_total", "Rows written to rag_judgments", registry=r
        )

    def _variant_metrics(self, r: CollectorRegistry) -> None:
        """Cost and latency of every stored trace, per variant (counted once, at its first decision)."""
        by = ("service", "variant")
        cost = "Generation cost in USD of the priced traces (model price x tokens)"
        self.generation_cost = Counter("ragpulse_generation_cost_usd_total", cost, by, registry=r)
        priced = "Traces with a generation cost"
        self.generation_priced = Counter("ragpulse_generation_priced_total", priced, by, registry=r)
        unpriced = "Traces without a generation cost: no_model (no LLM span) or unknown_model (no price)"
        self.generation_unpriced = Counter(
            "ragpulse_generation_unpriced_total", unpriced, (*by, "reason"), registry=r
        )
        stages = "Latency per stage (retrieval, rerank, generation, total) of each trace"
        self.stage_latency = BatchHistogram(
            "ragpulse_stage_latency_seconds", stages, (*by, "stage"), _LATENCY_BUCKETS
        )
        r.register(self.stage_latency)

    def intake_result(self, protocol: str, result: str, spans: int = 0) -> None:
        """Count one OTLP request answered by an intake (and ``spans`` accepted with it); also as
        ``ragpulse_records_total``, where refusals to retry later are ``throttled``."""
        self.intake_requests.labels(protocol, result).inc()
        self.records.labels(_RECORD_RESULTS.get(result, result)).inc()
        if spans:
            self.intake_spans.labels(protocol).inc(spans)

    def read_state_of(self, assembler: Any, index: Any) -> None:
        """Read the assembler's and the re-ask index's state at scrape time (None: stop reading)."""
        on = assembler is not None
        self.assembly_buffer.read_from((lambda: len(assembler)) if on else None)
        self.late_spans.read_from((lambda: assembler.late_spans) if on else None)
        self.assembly_evicted.read_from((lambda: assembler.evicted) if on else None)
        self.reask_index_calls.read_from((lambda: index.calls) if index is not None else None)
        self.reask_index_evicted.read_from((lambda: index.evicted) if index is not None else None)

    def render(self) -> bytes:
        return generate_latest(self.registry)
