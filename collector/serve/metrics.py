"""Prometheus metrics of the collector and the judge workers, plus /healthz and /readyz.

Every metric lives in the :class:`Metrics` object's own ``CollectorRegistry``
(several pipelines can run in one process, e.g. in tests). Names start with
``ragpulse_``; quality metrics are labelled by ``service`` and ``judge`` only,
never by trace or user id, so cardinality stays bounded. The full list is in
docs/collector.md.
"""

from __future__ import annotations

from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from ..kafka.liveness import DEFAULT_STALL_S, PollWatch
from .http_server import BackgroundHTTPServer

__all__ = ["Metrics", "MetricsServer", "SCORE_NAMES"]

SCORE_NAMES = (
    "faithfulness",
    "citation_correctness",
    "citation_completeness",
    "answer_relevance",
    "context_precision",
    "context_utilization",
)
_SCORE_BUCKETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0)
_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
_LAG_BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800)


class Metrics:
    """All ragpulse metrics in one registry."""

    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        # ingest
        self.records = Counter(
            "ragpulse_records_total", "Kafka records / OTLP requests received", ["result"], registry=r
        )
        self.spans_received = Counter("ragpulse_spans_received_total", "Spans decoded", registry=r)
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
        self.late_spans = Counter(
            "ragpulse_late_spans_total", "Spans arriving after their trace was emitted", registry=r
        )
        self.deadlettered = Counter(
            "ragpulse_deadlettered_total", "Records sent to the dead-letter topic", ["kind"], registry=r
        )
        self.consumer_lag = Gauge(
            "ragpulse_consumer_lag",
            "Records behind the end of the partition",
            ["topic", "partition"],
            registry=r,
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
        self.assembly_buffer = Gauge("ragpulse_assembly_buffer_traces", "Partial traces buffered", registry=r)
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
        # judging
        self.traces_judged = Counter(
            "ragpulse_traces_judged_total", "Traces judged", ["service", "judge"], registry=r
        )
        self.judge_errors = Counter(
            "ragpulse_judge_errors_total",
            "Judgments that failed (recorded as errors)",
            ["service", "judge"],
            registry=r,
        )
        self.scores = {
            name: Histogram(
                f"ragpulse_{name}", f"{name.replace('_', ' ')} per judged trace", ["service", "judge"],
                buckets=_SCORE_BUCKETS, registry=r,
            )
            for name in SCORE_NAMES
        }  # fmt: skip
        self.claims = Counter(
            "ragpulse_claims_total", "Judged claims by verdict", ["service", "judge", "verdict"], registry=r
        )
        self.claim_citations = Counter(
            "ragpulse_claim_citations_total",
            "Judged claims by citation: valid (its citations support it), invalid, none (uncited)",
            ["service", "judge", "citation"],
            registry=r,
        )
        self.unsupported_claims = Counter(
            "ragpulse_unsupported_claims_total",
            "Judged claims not supported, by source: hallucination (in no chunk), noise (copied from a chunk)",
            ["service", "judge", "source"],
            registry=r,
        )
        self.judge_budget_paused = Counter(
            "ragpulse_judge_budget_paused_seconds_total",
            "Seconds the judge waited for its cost budget",
            ["judge"],
            registry=r,
        )
        self.abstentions = Counter(
            "ragpulse_abstentions_total", "Abstentions by kind", ["service", "judge", "kind"], registry=r
        )
        self.failure_modes = Counter(
            "ragpulse_failure_modes_total",
            "Judged traces by failure mode",
            ["service", "judge", "mode"],
            registry=r,
        )
        self.judge_latency = Histogram(
            "ragpulse_judge_latency_seconds", "Time to judge one trace", ["service", "judge"],
            buckets=_LATENCY_BUCKETS, registry=r,
        )  # fmt: skip
        self.judge_cost = Counter(
            "ragpulse_judge_cost_usd_total", "Judge cost in USD", ["service", "judge"], registry=r
        )
        self.pipeline_lag = Histogram(
            "ragpulse_pipeline_lag_seconds", "From span end to judgment stored", ["service"],
            buckets=_LAG_BUCKETS, registry=r,
        )  # fmt: skip
        self.judgments_stored = Counter(
            "ragpulse_judgments_stored_total", "Rows written to rag_judgments", registry=r
        )
        # which OTLP protobuf decoder this process runs (native or python), as an info-style gauge
        self.decoder = Gauge(
            "ragpulse_otlp_decoder_info", "1 for the OTLP protobuf decoder in use", ["decoder"], registry=r
        )
        from ..ingest.otlp import DECODER

        self.decoder.labels(DECODER).set(1)
        self.polls = PollWatch()  # Kafka polls in progress, for /healthz

    def render(self) -> bytes:
        return generate_latest(self.registry)


class MetricsServer(BackgroundHTTPServer):
    """``/metrics``, ``/healthz`` (alive, and no Kafka poll stuck for more than ``stall_s``)
    and ``/readyz`` (``ready()`` returns True) on one port."""

    thread_name = "ragpulse-metrics"

    def __init__(
        self,
        metrics: Metrics,
        host: str = "127.0.0.1",
        port: int = 0,
        ready: Callable[[], bool] | None = None,
        stall_s: float = DEFAULT_STALL_S,
    ) -> None:
        self.metrics = metrics
        self.ready = ready or (lambda: True)
        self.stall_s = stall_s
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server API
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    self._send(200, outer.metrics.render(), CONTENT_TYPE_LATEST)
                elif path == "/healthz":
                    stuck = outer.metrics.polls.stuck(outer.stall_s)
                    if stuck:
                        text = ", ".join(f"{n} stuck for {s:.0f}s" for n, s in sorted(stuck.items()))
                        self._send(503, f"stalled: {text}\n".encode())
                    else:
                        self._send(200, b"ok\n")
                elif path == "/readyz":
                    ok = False
                    try:
                        ok = bool(outer.ready())
                    except Exception:  # noqa: BLE001 - not ready is the answer
                        ok = False
                    self._send(200 if ok else 503, b"ready\n" if ok else b"not ready\n")
                else:
                    self._send(404, b"not found\n")

            def _send(self, code: int, body: bytes, ctype: str = "text/plain; charset=utf-8") -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self._bind(host, port, Handler)
