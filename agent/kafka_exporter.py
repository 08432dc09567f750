"""``exporter="kafka"``: an OTel ``SpanExporter`` writing OTLP TracesData records to Kafka.

Called only from the agent's export thread (:mod:`ragpulse.agent.processor`),
so nothing here runs on the request path. Each batch is grouped by trace and
encoded (:mod:`ragpulse.agent.otlp`), keyed by the trace id, and sent with
kafka-python's producer, which batches and compresses (gzip by default; lz4,
zstd and snappy when their libraries are installed). Every span that does not
reach Kafka is counted in ``stats()``: broker unreachable at start-up, a send
that could not get metadata or buffer space within ``max_block_ms`` (the only
place the producer may block, bounded, and on this thread only), or a record
that was never acknowledged within ``delivery_timeout_ms``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from .otlp import EncodedRecord, encode_records, encoded, records_of
from .stats import Stats

__all__ = ["KafkaSpanExporter", "PRODUCER_DEFAULTS"]

_log = logging.getLogger("ragpulse.agent")

# Bounded waits: the export thread never hangs for long on a broker that is down.
PRODUCER_DEFAULTS: dict[str, Any] = {
    "linger_ms": 20,
    "batch_size": 256 * 1024,
    "max_block_ms": 1000,
    "request_timeout_ms": 10000,
    "delivery_timeout_ms": 30000,
    "bootstrap_timeout_ms": 5000,
    "max_request_size": 1048576,
    "acks": "all",
    # At least once is the contract (storage deduplicates); idempotence would pin sequence state
    # that outlives expired batches after a broker outage.
    "enable_idempotence": False,
}
_RECONNECT_BACKOFF_S = 5.0


class KafkaSpanExporter(SpanExporter):
    """Writes spans to ``topic`` as OTLP TracesData records keyed by trace id."""

    counts_own_drops = True

    def __init__(
        self,
        bootstrap_servers: str | Sequence[str],
        topic: str = "ragpulse.spans",
        stats: Stats | None = None,
        compression: str | None = "gzip",
        max_record_bytes: int = 900_000,
        producer_options: Mapping[str, Any] | None = None,
        producer: Any = None,
    ):
        """``producer``: one already made, with kafka-python's ``KafkaProducer`` API (``send``,
        ``flush``, ``close``); by default one is made from the options on the first export."""
        self.bootstrap_servers = bootstrap_servers
        self.topic = topic
        self.stats = stats or Stats()
        self.compression = compression
        self.max_record_bytes = max_record_bytes
        self.producer_options = dict(producer_options or {})
        self._producer: Any = producer
        self._retry_at = 0.0
        self._lock = threading.Lock()
        self._orphans: list[Any] = []

    # -- producer lifecycle ------------------------------------------------------------------
    def _get_producer(self) -> Any:
        if self._producer is not None:
            return self._producer
        if time.monotonic() < self._retry_at:
            return None
        from kafka import KafkaProducer  # lazy: only processes that export to Kafka need it

        config = {**PRODUCER_DEFAULTS, **self.producer_options}
        servers = self.bootstrap_servers
        if isinstance(servers, str):
            servers = [s.strip() for s in servers.split(",") if s.strip()]
        try:
            self._producer = KafkaProducer(
                bootstrap_servers=servers, compression_type=self.compression, **config
            )
        except Exception as exc:  # noqa: BLE001 - broker down at start-up: retry later
            self._retry_at = time.monotonic() + _RECONNECT_BACKOFF_S
            _log.warning(
                "ragpulse: cannot create the Kafka producer (%s); spans are dropped and counted", exc
            )
            return None
        return self._producer

    def after_fork(self) -> None:
        """In a forked child the producer's threads are gone: forget it (never close it there)."""
        if self._producer is not None:
            self._orphans.append(self._producer)  # keep a reference so __del__ never runs in the child
        self._producer = None
        self._retry_at = 0.0
        self._lock = threading.Lock()

    # -- export --------------------------------------------------------------------------------
    def _acked(self, n: int, _metadata: Any) -> None:
        self.stats.add("records_acked")
        self.stats.add("spans_exported", n)

    def _failed(self, n: int, exc: BaseException) -> None:
        self.stats.drop("delivery_failed", n)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with self._lock:
            return self._export(spans, encode_records)

    def encode_finished(
        self, span: ReadableSpan, attributes: Mapping[str, Any], events: Sequence[Any]
    ) -> Any:
        """``span`` with the attributes and events it leaves the process with, encoded now: the
        agent's export thread encodes each span as soon as it is materialised, so the batch holds
        bytes, not every span's attributes, until :meth:`export_encoded`. What it was encoded
        from is kept only for a span that may not fit a record alone (over half the limit)."""
        return encoded((span, attributes, events), self.max_record_bytes // 2)

    def export_encoded(self, spans: Sequence[Any]) -> SpanExportResult:
        """Export spans made by :meth:`encode_finished`."""
        with self._lock:
            return self._export(spans, records_of)

    def _export(self, spans: Sequence[Any], encode: Callable[..., list[EncodedRecord]]) -> SpanExportResult:
        producer = self._get_producer()
        if producer is None:
            self.stats.drop("export_failed", len(spans))
            return SpanExportResult.FAILURE
        too_big: list[Any] = []
        try:
            records = encode(spans, self.max_record_bytes, too_big)
        except Exception:  # noqa: BLE001
            _log.exception("ragpulse: encoding spans failed")
            self.stats.drop("internal_error", len(spans))
            return SpanExportResult.FAILURE
        if too_big:
            self.stats.drop("oversize", len(too_big))
        failed = False
        for i, record in enumerate(records):
            try:
                future = producer.send(self.topic, key=record.key.encode(), value=record.value)
            except Exception as exc:  # noqa: BLE001 - e.g. KafkaTimeoutError after max_block_ms
                # Don't block again for every remaining record of this batch: drop them now.
                rest = sum(r.span_count for r in records[i:])
                self.stats.drop("export_failed", rest)
                _log.debug("ragpulse: Kafka send failed (%s); %d spans dropped", exc, rest)
                failed = True
                break
            self.stats.add("records_sent")
            future.add_callback(self._acked, record.span_count)
            future.add_errback(self._failed, record.span_count)
        return SpanExportResult.FAILURE if failed else SpanExportResult.SUCCESS

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        producer = self._producer
        if producer is None:
            return True
        try:
            producer.flush(timeout=timeout_millis / 1000.0)
            return True
        except Exception:  # noqa: BLE001 - KafkaTimeoutError: records still in flight
            return False

    def shutdown(self) -> None:
        producer, self._producer = self._producer, None
        if producer is not None:
            try:
                producer.close(timeout=5)
            except Exception:  # noqa: BLE001
                _log.debug("ragpulse: closing the Kafka producer failed", exc_info=True)
