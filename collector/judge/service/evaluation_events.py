"""Judgments back out as OpenTelemetry events: one ``gen_ai.evaluation.result`` per score.

With ``evaluations.otlp_endpoint`` set, every judgment the judge workers store
(Kafka judge role and embedded loop alike) becomes one log record per score of
:data:`~..contract.SCORE_NAMES`, following the GenAI semantic conventions'
evaluation event: event name ``gen_ai.evaluation.result``, parented to the
trace's RAG root span (trace id and span id of the record), with
``gen_ai.evaluation.name`` (the score), ``gen_ai.evaluation.score.value``,
``gen_ai.evaluation.score.label`` (``pass`` / ``fail`` against the score's
threshold), ``gen_ai.evaluation.explanation`` (the unsupported claims, the
invalid citations, ...) and ``error.type`` when the judge failed. So any OTel
backend shows ragpulse's verdicts next to the trace they judge.

Thresholds: a score named like a quality objective (faithfulness, citation
correctness and completeness, in ``collector/monitoring/objectives.yaml``)
passes when it reaches that objective, the promised share of good claims;
``evaluations.thresholds`` adds or overrides thresholds; a score without one
carries no label. A score that does not apply (``null``) has no value and no
label, and its explanation says why.

The records go through the OTel SDK's logs API into a
``BatchLogRecordProcessor`` and its OTLP/HTTP exporter: emitting only appends
to a bounded queue, so the judge never waits for the network; a background
thread exports batches. ``ragpulse_evaluation_events_total{result}`` counts
records ``exported``, ``failed`` (the export failed after the exporter's
retries) and ``dropped`` (the queue was full, or the processor shut down).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult

from ...config import logs_url
from ...contract import SCORE_NAMES
from ...core.metrics import Metrics

__all__ = ["EvaluationEvents", "EvaluationRecord", "evaluation_records", "score_thresholds"]

log = logging.getLogger("ragpulse.evaluation_events")

# The GenAI semantic conventions' evaluation event (semantic-conventions-genai, gen-ai-events.md).
EVENT_NAME = "gen_ai.evaluation.result"
EVALUATION_NAME = "gen_ai.evaluation.name"
SCORE_VALUE = "gen_ai.evaluation.score.value"
SCORE_LABEL = "gen_ai.evaluation.score.label"
EXPLANATION = "gen_ai.evaluation.explanation"
ERROR_TYPE = "error.type"
# ragpulse's own attributes beside them.
JUDGE_ID = "ragpulse.judge.id"
FAILURE_MODE = "ragpulse.failure_mode"
SERVICE = "ragpulse.service"

PASS, FAIL = "pass", "fail"
_MAX_EXPLANATION = 4000
# The SDK's own counter of finished log records; those with error.type were dropped.
_PROCESSED = "otel.sdk.processor.log.processed"


@dataclass(frozen=True)
class EvaluationRecord:
    """One score of one judgment, as its evaluation event carries it."""

    name: str
    value: float | None
    label: str | None
    explanation: str
    error_type: str | None = None


def score_thresholds(config: Mapping[str, Any]) -> dict[str, float]:
    """score -> pass threshold: the quality objectives of the same name, then
    ``evaluations.thresholds`` (which may add scores or override objectives)."""
    from ...monitoring.config import load_objectives

    objectives = load_objectives()["objectives"]
    out = {name: float(objectives[name]["objective"]) for name in SCORE_NAMES if name in objectives}
    out.update({k: float(v) for k, v in (config.get("thresholds") or {}).items()})
    return out


def evaluation_records(
    row: Mapping[str, Any], claims: Sequence[Mapping[str, Any]], thresholds: Mapping[str, float]
) -> list[EvaluationRecord]:
    """One record per score of a stored judgment (``rag_judgments`` row and its claim rows)."""
    if row.get("error"):
        error = str(row["error"])
        kind = error.split(":", 1)[0].strip() if ":" in error else "_OTHER"
        return [EvaluationRecord(n, None, None, _cap(f"judge failed: {error}"), kind) for n in SCORE_NAMES]
    out = []
    for name in SCORE_NAMES:
        value = row.get(name)
        if value is None:
            out.append(EvaluationRecord(name, None, None, _not_applicable(name, row)))
            continue
        threshold = thresholds.get(name)
        label = None if threshold is None else PASS if float(value) >= threshold else FAIL
        out.append(EvaluationRecord(name, float(value), label, _cap(_explain(name, row, claims))))
    return out


def _explain(name: str, row: Mapping[str, Any], claims: Sequence[Mapping[str, Any]]) -> str:
    """Why a score is what it is, in the judge's own terms (claims, citations, failure mode)."""
    total = len(claims)
    if name == "faithfulness":
        bad = [f"{c['verdict']}: {c['text']}" for c in claims if c.get("verdict") != "supported"]
        return "; ".join(bad) if bad else f"all {total} claims supported by the retrieved chunks"
    if name == "citation_correctness":
        bad = [
            f"citation {_ids(c.get('cited_chunk_ids'))} does not support: {c['text']}"
            for c in claims
            if c.get("citation_valid") == 0
        ]
        return "; ".join(bad) if bad else "every cited claim is supported by its citations"
    if name == "citation_completeness":
        bad = [
            f"{'uncited' if c.get('citation_valid') is None else 'not supported by its citation'}: {c['text']}"
            for c in claims
            if c.get("citation_valid") != 1
        ]
        return "; ".join(bad) if bad else f"all {total} claims carry a supporting citation"
    supported = sum(1 for c in claims if c.get("verdict") == "supported")
    return f"failure mode {row.get('failure_mode') or 'unknown'}; {supported} of {total} claims supported"


def _not_applicable(name: str, row: Mapping[str, Any]) -> str:
    if row.get("abstained"):
        return f"not applicable: the answer abstained ({row.get('abstention_kind') or 'unknown'})"
    if name.startswith("citation_"):
        return "not applicable: the answer cites nothing and has no verifiable claim"
    return "not applicable to this answer"


def _ids(ids: Any) -> str:
    return "[" + ", ".join(str(i) for i in ids or []) + "]"


def _cap(text: str) -> str:
    return text if len(text) <= _MAX_EXPLANATION else text[: _MAX_EXPLANATION - 1] + "…"


class EvaluationEvents:
    """Emits the evaluation events of stored judgments through the OTel SDK (module docstring)."""

    def __init__(self, section: Mapping[str, Any], metrics: Metrics) -> None:
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.resources import Resource

        self.metrics = metrics
        self.thresholds = score_thresholds(section)
        self.url = logs_url(str(section["otlp_endpoint"]))
        exporter = _CountingExporter(
            OTLPLogExporter(
                endpoint=self.url,
                headers={str(k): str(v) for k, v in (section.get("headers") or {}).items()},
                timeout=float(section.get("timeout_s", 10.0)),
            ),
            metrics,
        )
        self._reader = InMemoryMetricReader()
        self._sdk_meters = MeterProvider(metric_readers=[self._reader])
        self._dropped_seen = 0
        self._provider = LoggerProvider(resource=Resource.create({"service.name": "ragpulse"}))
        with _sdk_self_metrics():
            processor = BatchLogRecordProcessor(
                exporter,
                schedule_delay_millis=float(section.get("schedule_delay_s", 1.0)) * 1000,
                max_export_batch_size=int(section.get("max_export_batch_size", 512)),
                max_queue_size=int(section.get("max_queue_size", 2048)),
                meter_provider=self._sdk_meters,
            )
        self._provider.add_log_record_processor(processor)
        self._logger = self._provider.get_logger("ragpulse.judge")

    @classmethod
    def from_config(cls, config: Mapping[str, Any], metrics: Metrics) -> EvaluationEvents | None:
        """The emitter of the ``evaluations`` section; None when no endpoint is configured."""
        section = config.get("evaluations") or {}
        if not section.get("otlp_endpoint"):
            return None
        events = cls(section, metrics)
        log.info("evaluation events (gen_ai.evaluation.result) go to %s", events.url)
        return events

    def emit(
        self, row: Mapping[str, Any], claims: Sequence[Mapping[str, Any]], msg: Mapping[str, Any]
    ) -> None:
        """Queue the records of one stored judgment (never blocks on the network)."""
        from opentelemetry._logs import SeverityNumber

        context = _parent(str(row.get("trace_id") or ""), str(msg.get("root_span_id") or ""))
        when = int(row.get("judged_at") or time.time() * 1000) * 1_000_000
        for rec in evaluation_records(row, claims, self.thresholds):
            attributes: dict[str, Any] = {
                EVALUATION_NAME: rec.name,
                EXPLANATION: rec.explanation,
                JUDGE_ID: str(row.get("judge_id", "")),
                SERVICE: str(row.get("service", "")),
                FAILURE_MODE: str(row.get("failure_mode", "")),
            }
            if rec.value is not None:
                attributes[SCORE_VALUE] = rec.value
            if rec.label is not None:
                attributes[SCORE_LABEL] = rec.label
            if rec.error_type is not None:
                attributes[ERROR_TYPE] = rec.error_type
            failed = rec.label == FAIL or rec.error_type is not None
            self._logger.emit(
                timestamp=when,
                context=context,
                severity_number=SeverityNumber.WARN if failed else SeverityNumber.INFO,
                attributes=attributes,
                event_name=EVENT_NAME,
            )
        self._count_dropped()

    def _count_dropped(self) -> None:
        """Add the records the SDK's processor dropped since the last call (drops happen only
        inside emit, so reading after it is exact)."""
        dropped = 0
        data = self._reader.get_metrics_data()
        for rm in data.resource_metrics if data else ():
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    if m.name == _PROCESSED:
                        dropped += sum(
                            p.value for p in m.data.data_points if ERROR_TYPE in (p.attributes or {})
                        )
        if dropped > self._dropped_seen:
            self.metrics.evaluation_events.labels("dropped").inc(dropped - self._dropped_seen)
            self._dropped_seen = dropped

    def flush(self, timeout_s: float = 10.0) -> bool:
        """Export everything queued (tests and shutdown)."""
        return self._provider.force_flush(int(timeout_s * 1000))

    def shutdown(self) -> None:
        """Export what is queued, then stop the export thread."""
        self._provider.shutdown()
        self._sdk_meters.shutdown()


@contextlib.contextmanager
def _sdk_self_metrics() -> Iterator[None]:
    """Switch on the SDK's metrics about itself while our processor is made: its count of
    dropped records (queue full) exists only then, and goes to our own MeterProvider. The
    switch (``OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED``) is read once, at construction, so it
    is restored at once and other providers in the process (the application's) are unaffected."""
    from opentelemetry.sdk.environment_variables import OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED as KEY

    before = os.environ.get(KEY)
    os.environ[KEY] = "true"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(KEY, None)
        else:
            os.environ[KEY] = before


def _parent(trace_id: str, span_id: str) -> Any:
    """A context whose current span is the judged trace's root, so the record carries its ids."""
    from opentelemetry import trace
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    try:
        ctx = SpanContext(int(trace_id, 16), int(span_id, 16), is_remote=True, trace_flags=TraceFlags(1))
    except ValueError:
        return None
    return trace.set_span_in_context(NonRecordingSpan(ctx)) if ctx.is_valid else None


class _CountingExporter(LogRecordExporter):
    """The OTLP exporter, counting the records each export delivered or lost."""

    def __init__(self, inner: LogRecordExporter, metrics: Metrics) -> None:
        self.inner = inner
        self.metrics = metrics

    def export(self, batch: Sequence[Any]) -> LogRecordExportResult:
        result = self.inner.export(batch)
        ok = result == LogRecordExportResult.SUCCESS
        self.metrics.evaluation_events.labels("exported" if ok else "failed").inc(len(batch))
        return result

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)

    def shutdown(self) -> None:
        self.inner.shutdown()
