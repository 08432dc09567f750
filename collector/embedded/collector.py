"""The embedded collector: the whole pipeline in one process, no servers.

``EmbeddedCollector(db_path)`` owns a chDB database and runs::

    agent embedded sink / OTLP/HTTP receiver / OTLP/gRPC receiver
      -> in-process queue -> assembly -> rag_traces (chDB) -> sampler
      -> in-process judge queue -> judge (local by default) -> rag_judgments, rag_claims
      -> Prometheus metrics on a local port (/metrics, /healthz, /readyz)

``start()`` installs it as the agent's embedded sink (ragpulse.agent.embedded),
``flush()`` waits until everything submitted so far is assembled, stored and
judged (buffered partial traces are emitted as they are), and ``stop()``
flushes, stops the threads and servers, and releases the chDB path. The same
assembly, sampling, storage and judge-worker code runs as in the Kafka service.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..config import load_config
from ..contract import Judge
from ..core.metrics import Metrics
from ..core.model import Span
from ..core.variants import VariantLabels
from ..feedback.sink import FeedbackSink
from ..ingest.assemble import Assembler
from ..ingest.batcher import Batcher
from ..ingest.cost import Pricing
from ..ingest.otlp import Limits
from ..ingest.pipeline import Ingestor
from ..ingest.readable import spans_from_readable
from ..ingest.sampling import SamplingPolicy
from ..judge.service.evaluation_events import EvaluationEvents
from ..judge.service.worker import JudgeWorker, load_judge
from ..review.store_metrics import register_review_metrics
from ..serve.server import MetricsServer
from ..sessions.metrics import register_session_metrics
from ..storage.clickhouse import Storage
from ..storage.retry import StorageRetry

__all__ = ["EmbeddedCollector"]

log = logging.getLogger("ragpulse.embedded")


class _Marker:
    """A flush or stop request travelling through both queues in order."""

    def __init__(self, stop: bool = False) -> None:
        self.stop = stop
        self.done = threading.Event()


class EmbeddedCollector:
    """In-process collector + judge worker over a chDB database (see the module docstring)."""

    def __init__(
        self,
        db_path: str | Path,
        config: Mapping[str, Any] | str | Path | None = None,
        metrics_port: int | None = 0,
        judge: str | Judge | None = "local",
        receiver_port: int | None = None,
        install_sink: bool = True,
        metrics_host: str = "127.0.0.1",
        grpc_port: int | None = None,
    ) -> None:
        """``config``: a YAML path or a mapping of overrides on the defaults; ``metrics_port``
        None disables the HTTP endpoint (0 picks a free port); ``judge`` is a spec for
        ``get_judge`` (``"local"``, a litellm model), a judge object, or None for no judging;
        ``receiver_port`` (0 = free port) also starts the OTLP/HTTP receiver, ``grpc_port`` the
        OTLP/gRPC one. While storing fails the receivers refuse new requests (503 / UNAVAILABLE,
        retry later): what they accepted waits in memory and is stored once storage is back."""
        path, sep, options = str(db_path).partition("?")  # chDB engine options, as in storage.dsn
        dsn = f"chdb://{Path(path).resolve()}{sep}{options}"
        overrides = {"storage": {"dsn": dsn}}
        if isinstance(config, str | Path):
            self.config = load_config(config, overrides=overrides)
        else:
            from ..config import merge

            self.config = load_config(None, overrides=merge(dict(config or {}), overrides))
        st = self.config["storage"]
        self.storage = Storage(st["dsn"], st["database"], st["ttl_days"])
        self.metrics = Metrics(VariantLabels.from_config(self.config.get("variants")))
        self.retry = StorageRetry.from_config(st, self.metrics, self._wait)
        self.limits = Limits(**self.config["limits"])
        self._judge_spec = judge
        self._metrics_port = metrics_port
        self._metrics_host = metrics_host
        self._receiver_port = receiver_port
        self._grpc_port = grpc_port
        self.grpc_receiver: Any = None
        self._storage_down = False
        self._install_sink = install_sink
        self._in: queue.Queue[Any] = queue.Queue(maxsize=100_000)
        self._judge_q: queue.Queue[Any] = queue.Queue()
        self._threads: list[threading.Thread] = []
        self._server: MetricsServer | None = None
        self.receiver: Any = None
        self.judge: Judge | None = None
        self.evaluation_events: EvaluationEvents | None = None
        self.dropped_batches = 0
        self._started = False
        self._stopping = threading.Event()

    # -- lifecycle

    def start(self) -> EmbeddedCollector:
        """Apply the schema, start threads and endpoints, install the agent sink."""
        if self._started:
            return self
        self.retry(self.storage.apply_schema)
        if self._judge_spec is not None:
            self.judge = (
                load_judge(self._judge_spec, self.config["judge"]["settings"])
                if isinstance(self._judge_spec, str)
                else self._judge_spec
            )
        policy = SamplingPolicy.from_config(self.config["sampling"])
        self._ingestor = Ingestor(
            self.storage, policy, self.metrics, self.retry, Pricing.from_config(self.config.get("cost"))
        )
        self._assembler = Assembler(
            self.config["assembly"]["timeout_s"], self.config["assembly"]["max_traces"]
        )
        self._feedback = FeedbackSink(
            self.storage, self.metrics, self._ingestor.sampler, self.config.get("feedback"), self._wait
        )
        self.metrics.read_state_of(self._assembler, self._feedback.reask.index)
        self.evaluation_events = EvaluationEvents.from_config(self.config, self.metrics)
        self._worker = (
            JudgeWorker(self.judge, self.storage, self.metrics, events=self.evaluation_events)
            if self.judge is not None
            else None
        )
        self._threads = [
            threading.Thread(target=self._ingest_loop, name="ragpulse-ingest", daemon=True),
            threading.Thread(target=self._judge_loop, name="ragpulse-judge", daemon=True),
        ]
        for t in self._threads:
            t.start()
        if self._metrics_port is not None:
            register_review_metrics(self.metrics.registry, self.storage, self.config["review_metrics"])
            register_session_metrics(
                self.metrics.registry, self.storage, self.config["session_metrics"],
                self.config["feedback"].get("reask"),
            )  # fmt: skip
            self._server = MetricsServer(
                self.metrics, self._metrics_host, self._metrics_port, ready=self._ready
            ).start()
        if self._receiver_port is not None or self._grpc_port is not None:
            self._receivers()
        if self._install_sink:
            from ...agent.embedded import install_embedded_sink

            install_embedded_sink(self)
        self._started = True
        return self

    def _receivers(self) -> None:
        """Start the OTLP/HTTP and OTLP/gRPC receivers asked for, both handing to ``submit_decoded``."""
        from ..core.bearer import token_from_config
        from ..serve.otlp_request import OtlpIntake

        r = self.config["receiver"]
        intake = OtlpIntake(
            self.submit_decoded,
            self.limits,
            self.metrics,
            auth_token=token_from_config(r),
            refusing=self.refusing,
        )
        if self._receiver_port is not None:
            from ..serve.otlp_http import OtlpHttpReceiver

            self.receiver = OtlpHttpReceiver(
                intake,
                host=r["host"],
                port=self._receiver_port,
                read_timeout_s=float(r["read_timeout_s"]),
                max_inflight_bytes=int(r["max_inflight_bytes"]),
            ).start()
        if self._grpc_port is not None:
            from ..serve.otlp_grpc import OtlpGrpcReceiver

            self.grpc_receiver = OtlpGrpcReceiver(
                intake, host=r["host"], port=self._grpc_port, workers=int(r["grpc_workers"])
            ).start()

    def refusing(self) -> str | None:
        """Why the receivers must refuse new requests now (storage is down), else None."""
        return "storage unavailable" if self._storage_down else None

    def _ready(self) -> bool:
        return self._started and not self._stopping.is_set() and all(t.is_alive() for t in self._threads)

    @property
    def metrics_url(self) -> str | None:
        """``http://127.0.0.1:PORT`` of /metrics, /healthz, /readyz (None when disabled)."""
        return self._server.url if self._server else None

    @property
    def receiver_url(self) -> str | None:
        """Base URL of the OTLP/HTTP receiver (POST {url}/v1/traces), None when disabled."""
        return self.receiver.url if self.receiver else None

    @property
    def grpc_url(self) -> str | None:
        """``grpc://HOST:PORT`` of the OTLP/gRPC receiver, None when disabled."""
        return self.grpc_receiver.url if self.grpc_receiver else None

    def flush(self, timeout: float = 60.0) -> bool:
        """Wait until everything submitted so far is stored and judged; False on timeout."""
        if not self._started:
            return True
        marker = _Marker()
        self._in.put(marker)
        return marker.done.wait(timeout)

    def stop(self, timeout: float = 10.0) -> None:
        """Flush, stop threads and endpoints, uninstall the sink, close chDB."""
        if not self._started:
            return
        if self._install_sink:
            from ...agent.embedded import uninstall_embedded_sink

            uninstall_embedded_sink(self)
        if self.receiver is not None:
            self.receiver.stop()
        if self.grpc_receiver is not None:
            self.grpc_receiver.stop()
        marker = _Marker(stop=True)
        self._in.put(marker)
        marker.done.wait(timeout)
        self._stopping.set()
        for t in self._threads:
            t.join(timeout)
        if self._server is not None:
            self._server.stop()
        if self.evaluation_events is not None:
            self.evaluation_events.shutdown()
        self.storage.close()
        self._started = False

    def __enter__(self) -> EmbeddedCollector:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- input (agent sink contract: enqueue, never raise)

    def submit_spans(self, spans: Sequence[Any]) -> None:
        """Agent sink: take a batch of finished ``ReadableSpan`` objects."""
        try:
            self._in.put_nowait(("readable", list(spans)))
        except queue.Full:
            self.dropped_batches += 1
            self.metrics.records.labels("dropped_queue_full").inc()
        except Exception:  # noqa: BLE001 - the sink must never raise into the agent
            self.dropped_batches += 1

    def submit_decoded(self, spans: list[Span]) -> bool:
        """Take spans already decoded (OTLP/HTTP receiver); False when the queue is full."""
        try:
            self._in.put_nowait(("spans", spans))
            return True
        except queue.Full:
            self.metrics.records.labels("dropped_queue_full").inc()
            return False

    # -- threads

    def _wait(self, delay: float) -> bool:
        return not self._stopping.wait(delay)

    def _wait_storage(self, delay: float) -> bool:
        """The ingest loop's wait while storing fails: the receivers refuse meanwhile."""
        self._storage_down = True
        return self._wait(delay)

    def _ingest_loop(self) -> None:
        cfg = self.config["storage"]
        batcher = Batcher(cfg["batch_max_traces"], cfg["batch_max_seconds"], time.monotonic())
        while True:
            try:
                item = self._in.get(timeout=0.1)
            except queue.Empty:
                item = None
            now = time.monotonic()
            marker = None
            if isinstance(item, _Marker):
                marker = item
            elif item is not None:
                kind, payload = item
                try:
                    spans = spans_from_readable(payload) if kind == "readable" else payload
                except Exception:  # noqa: BLE001 - a bad batch must not kill the thread
                    log.exception("could not convert a span batch")
                    self.metrics.records.labels("deadletter").inc()
                    continue
                self.metrics.records.labels("ok").inc()
                self.metrics.spans_received.inc(len(spans))
                self._assembler.add(spans, None, now)
            batcher.add(self._assembler.pop_ready(now) if marker is None else self._assembler.drain())
            # caught up: nothing waiting behind what was read (steady traffic is not a backlog)
            caught_up = item is None or self._in.empty()
            due = batcher.ready and (marker is not None or batcher.due(now, caught_up=caught_up))
            if due or (self._assembler.feedback and not batcher.ready):  # feedback alone: at once
                self._store(batcher.take(now))
            if marker is not None:
                self._judge_q.put(marker)
                if marker.stop:
                    return

    def _store(self, assembled: list[Any]) -> None:
        start = time.perf_counter()
        traces = self._ingestor.prepare(assembled)
        after_store = self._feedback.prepare(self._assembler.take_feedback(), traces)
        try:
            self.retry(lambda: self._ingestor.store(traces), self._wait_storage)
        except Exception:  # noqa: BLE001 - only on shutdown while storage is down
            log.exception("dropping %d traces at shutdown: storage unavailable", len(traces))
            return
        self._storage_down = False
        try:
            requeued = after_store() if after_store is not None else []
        except Exception:  # noqa: BLE001 - only on shutdown while storage is down
            log.exception("dropping feedback at shutdown: storage unavailable")
            requeued = []
        sampled = [t.judge_message() for t in traces if t.sampled] + requeued
        if sampled and self._worker is not None:
            self._judge_q.put(sampled)
            self.metrics.judge_queue_sent.inc(len(sampled))
        if traces:
            self.metrics.batch_traces.observe(len(traces))
        self.metrics.batch_latency.observe(time.perf_counter() - start)

    def _next_judge_batch(self, batch_size: int) -> tuple[list[dict[str, Any]], _Marker | None]:
        """The messages waiting in the judge queue, up to ``batch_size`` (or one storage batch's
        whole sample when that is larger), and the flush/stop marker that ended the take.

        Several storage batches waiting behind a slow judge are judged and stored as one: each
        store is two inserts of a fixed cost (about 15 ms of CPU each in chDB, whatever their
        size), and the later batches' judgments are counted sooner. A marker is never passed:
        what came before it is judged first."""
        messages: list[dict[str, Any]] = []
        item = self._judge_q.get()
        while True:
            if isinstance(item, _Marker):
                return messages, item
            messages.extend(item)
            if len(messages) >= batch_size:
                return messages, None
            try:
                item = self._judge_q.get_nowait()
            except queue.Empty:
                return messages, None

    def _judge_loop(self) -> None:
        batch_size = self.config["judge"]["batch_size"]
        while True:
            messages, marker = self._next_judge_batch(batch_size)
            if messages and self._worker is not None:
                self._judge(messages, batch_size)
            if marker is not None:
                marker.done.set()
                if marker.stop:
                    return

    def _judge(self, messages: list[dict[str, Any]], batch_size: int) -> None:
        """Judge and store ``messages`` in batches of at most ``batch_size``."""
        assert self._worker is not None
        for i in range(0, len(messages), batch_size):
            results = self._worker.judge_messages(messages[i : i + batch_size])
            try:
                self.retry(lambda r=results: self._worker.store(r))  # type: ignore[union-attr]
            except Exception:  # noqa: BLE001 - only on shutdown while storage is down
                log.exception("dropping %d judgments at shutdown: storage unavailable", len(results))
