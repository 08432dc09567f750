"""``ragpulse collect`` with Kafka: consume ragpulse.spans, store, sample, queue for judging.

Reliability rules this loop keeps:

* offsets are committed only after everything they cover is stored in
  ClickHouse and the judge-topic and dead-letter records produced for them are
  acknowledged by the broker (acks=all, flushed, futures checked);
* batches are stored by one writer thread while the main thread decodes and
  assembles the next (at most one batch in flight); a batch's commit offsets
  are fixed when it is cut, so records read meanwhile are never committed
  with it;
* a record whose spans are still buffered for assembly is never committed
  past: the commit offset of a partition is the smallest offset still feeding
  a buffered trace (or the next unread offset when none is buffered), so a
  crash replays those records and nothing is lost;
* every stored trace row carries the Kafka position of the last record that
  fed it (one insert: data and progress together); after a (re)assignment the
  collector reads max(src_offset) per partition, and traces from records at or
  below it may already be stored, so their stored sampling decisions are
  re-used (replay makes the same decisions; ReplacingMergeTree keeps one row);
* malformed records go to ``ragpulse.deadletter`` with the reason in the
  ``ragpulse.reason`` header, and processing continues;
* ClickHouse unavailable: retry with exponential backoff while the consumer
  is paused (it keeps polling so the group does not evict it); nothing is
  committed until the batch is stored;
* SIGTERM/SIGINT: stop polling, flush and commit the complete traces, leave
  partial ones uncommitted (the next owner replays them), exit 0.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from ..core.metrics import Metrics
from ..core.variants import VariantLabels
from ..feedback.sink import FeedbackSink
from ..ingest.assemble import Assembler
from ..ingest.batcher import Batcher
from ..ingest.cost import Pricing
from ..ingest.otlp import Limits, MalformedRecord, decode_record, decoder_description
from ..ingest.pipeline import Ingestor
from ..ingest.sampling import SamplingPolicy
from ..memory import release_free_memory
from ..review.store_metrics import register_review_metrics
from ..serve.server import MetricsServer
from ..sessions.metrics import register_session_metrics
from ..storage.clickhouse import Storage
from ..storage.retry import StorageRetry
from ..storage.rows import encode_traces, json_bytes
from .clients import Send, kafka_client_settings
from .deadletter import DeadLetters, without_partitions
from .group_join import guard_description, keep_join_going
from .lag import lag_of
from .liveness import rebalance_allowance_s, rebalancing
from .offsets import OffsetTracker
from .process import handle_stop_signals, tune_for_ingest
from .producer import ReliableProducer
from .rebalance import RebalanceEvents
from .writer import NO_ROWS, Batch, BatchWriter

__all__ = ["KafkaCollector"]

log = logging.getLogger("ragpulse.collect")

_MAX_POLL_INTERVAL_MS = 300_000
_REBALANCE_ALLOWED_S = rebalance_allowance_s(_MAX_POLL_INTERVAL_MS)
_POLLER = "collector"  # this loop's name in the poll watch (/healthz)
# Per partition and fetch. A fetch response is read whole into one buffer before its records are
# unpacked (and copied out), so this bounds the loop's largest transient blocks; larger fetches
# only save round trips to a broker the loop keeps up with anyway (measured: 4 MiB left ~25 MB
# more private memory in the heap than 1 MiB, for the same drain time).
_PARTITION_FETCH_BYTES = 1 << 20


class _Stop(Exception):
    """Raised inside waits when shutdown must abandon a retry."""


class KafkaCollector:
    """The ingest service (see the module docstring). ``run()`` blocks until stopped."""

    def __init__(
        self,
        config: dict[str, Any],
        storage: Storage | None = None,
        metrics: Metrics | None = None,
        serve_metrics: bool = True,
    ) -> None:
        self.config = config
        st = config["storage"]
        self.storage = storage or Storage(st["dsn"], st["database"], st["ttl_days"])
        self.metrics = metrics or Metrics(VariantLabels.from_config(config.get("variants")))
        self.limits = Limits(**config["limits"])
        self.topic = config["kafka"]["spans_topic"]
        self.retry = StorageRetry.from_config(st, self.metrics, self._wait_paused)
        self.assembler = Assembler(config["assembly"]["timeout_s"], config["assembly"]["max_traces"])
        policy = SamplingPolicy.from_config(config["sampling"])
        self.ingestor = Ingestor(
            self.storage, policy, self.metrics, self.retry, Pricing.from_config(config.get("cost"))
        )
        # Its storage step runs on the writer thread: no waiting there; a failure goes to the
        # batch's retry on the loop's thread (with consumption paused).
        self.feedback = FeedbackSink(
            self.storage, self.metrics, self.ingestor.sampler, config.get("feedback"), wait=lambda _: False
        )
        self.feedback.reask.local = False  # until an assignment shows this process owns every partition
        self.batcher = Batcher(st["batch_max_traces"], st["batch_max_seconds"], time.monotonic())
        self.dead = DeadLetters(config["kafka"]["deadletter_topic"], self.metrics)
        self.offsets = OffsetTracker(self.topic)
        self.rebalances = RebalanceEvents(self.topic)
        self.writer = BatchWriter(self.ingestor)
        self._batch: Batch | None = None  # the batch the writer is storing
        self._stop = threading.Event()
        self._stop_deadline: float | None = None
        self._caught_up = True  # the last poll read everything the broker had (see _read_all)
        self._serve_metrics = serve_metrics
        self._broker_warned_at = float("-inf")
        self._own_process = False  # install_signal_handlers() was called: ragpulse collect
        self._starting = True
        self.consumer: Any = None
        self.producer: ReliableProducer | None = None
        self.running = False

    # -- lifecycle

    def request_stop(self) -> None:
        """Ask the loop to finish (signal-safe)."""
        if self._starting and self._own_process:
            # Still connecting (kafka-python blocks while the brokers are unreachable):
            # nothing is buffered or uncommitted yet, so leave at once.
            raise _Stop
        if not self._stop.is_set():
            self._stop_deadline = time.monotonic() + float(self.config["shutdown"]["grace_s"])
            self._stop.set()

    def install_signal_handlers(self) -> None:
        """Handle SIGTERM/SIGINT as a graceful stop; marks this process as the collector's own."""
        self._own_process = True
        handle_stop_signals(self.request_stop)

    def _ready_check(self) -> bool:
        return self.running and self.consumer is not None and bool(self.consumer.assignment())

    def _connect(self) -> None:
        from kafka import KafkaConsumer

        k = self.config["kafka"]
        self.producer = ReliableProducer(self.config)
        self.consumer = KafkaConsumer(
            **kafka_client_settings(self.config),
            group_id=k["group_id"],
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            max_poll_records=k["max_poll_records"],
            fetch_max_bytes=k["fetch_max_bytes"],
            max_partition_fetch_bytes=min(k["fetch_max_bytes"], _PARTITION_FETCH_BYTES),
            max_poll_interval_ms=_MAX_POLL_INTERVAL_MS,
            session_timeout_ms=k["session_timeout_ms"],
            heartbeat_interval_ms=max(1000, k["session_timeout_ms"] // 3),
        )
        self.consumer.subscribe([self.topic], listener=self.rebalances.listener())

    def _watch_state(self, on: bool) -> None:
        """Let /metrics read this loop's state at scrape time (or stop reading it)."""
        m = self.metrics
        m.read_state_of(self.assembler if on else None, self.feedback.reask.index if on else None)
        m.consumer_lag.read_from(self._lag if on else None)

    def _lag(self) -> list[tuple[tuple[str, str], int]]:
        """Records behind the fetched high-water mark, per partition this loop has read."""
        return lag_of(self.consumer, self.offsets.next_offset)

    def run(self) -> int:
        """Consume until stopped; returns the process exit status."""
        if self._own_process:
            tune_for_ingest()
        server = self._start_server()
        log.info("%s", decoder_description())
        log.info("kafka-python coordinator guard: %s", guard_description())
        try:
            self.retry(self.storage.apply_schema, self._wait_plain)
            if self._own_process:
                self.install_signal_handlers()
            self._connect()
            self._starting = False
            self.running = True
            self._watch_state(True)
            self._loop()
            # Graceful stop: store and commit complete traces; partial ones stay uncommitted.
            self.batcher.add(self.assembler.pop_ready(time.monotonic()))
            self._flush()
            self._finish_batch()
            return 0
        except _Stop:
            if self._starting:
                log.info("stopped during start-up")
                return 0
            log.error("stopping before the batch could be stored: nothing committed for it")
            return 1
        finally:
            self._shut_down(server)

    def _start_server(self) -> MetricsServer | None:
        if not self._serve_metrics:
            return None
        m = self.config["metrics"]
        register_review_metrics(self.metrics.registry, self.storage, self.config.get("review_metrics", {}))
        register_session_metrics(
            self.metrics.registry, self.storage, self.config.get("session_metrics", {}),
            self.config.get("feedback", {}).get("reask"),
        )  # fmt: skip
        server = MetricsServer(
            self.metrics, m["host"], m["port"], ready=self._ready_check, stall_s=m["stall_s"]
        )
        log.info("metrics on %s", server.start().url)
        return server

    def _shut_down(self, server: MetricsServer | None) -> None:
        self.running = False
        self._watch_state(False)
        if self.consumer is not None:
            try:
                self.consumer.close(autocommit=False)
            except Exception:  # noqa: BLE001 - closing on the way out
                pass
        if self.producer is not None:
            self.producer.close()
        if server is not None:
            server.stop()
        self.writer.shutdown()  # an insert in flight finishes before storage closes
        self.storage.close()

    # -- waits

    def _deadline_passed(self) -> bool:
        return self._stop_deadline is not None and time.monotonic() >= self._stop_deadline

    def _wait_plain(self, delay: float) -> bool:
        if self._stop.is_set() and self._deadline_passed():
            raise _Stop
        self._stop.wait(delay)
        return True

    def _wait_paused(self, delay: float) -> bool:
        """Back off with consumption paused; poll() keeps the group membership alive."""
        if self._deadline_passed():
            raise _Stop
        c = self.consumer
        if c is None:  # not connected yet: nothing to keep alive
            return self._wait_plain(delay)
        end = time.monotonic() + delay
        while time.monotonic() < end:
            if self._deadline_passed():
                raise _Stop
            parts = c.assignment()  # re-pause every time: a rebalance inside poll() brings new partitions
            if parts:
                c.pause(*parts)
            polled = self._poll(min(0.5, max(0.0, end - time.monotonic())))
            # Records can still arrive (fetched before the pause took effect): never drop them.
            self._take(polled, time.monotonic())
        return True

    # -- the loop

    def _poll(self, timeout_s: float) -> dict[Any, list[Any]]:
        c = self.consumer
        try:
            with self.metrics.polls.watching(_POLLER):
                polled = c.poll(timeout_ms=int(timeout_s * 1000))
        except Exception as exc:
            if not getattr(exc, "retriable", False):
                raise
            # kafka-python can raise a retriable error (connection refused, a timeout) out of
            # poll() while the broker is away; the consumer reconnects on the next poll, and
            # nothing is committed that is not stored, so wait a moment and poll again.
            self._broker_away(exc)
            return {}
        keep_join_going(c)
        self.metrics.polls.joining(_POLLER, rebalancing(c), _REBALANCE_ALLOWED_S)
        return polled

    def _broker_away(self, exc: Exception) -> None:
        """Log a retriable poll error (at most every 10 s) and back off half a second."""
        now = time.monotonic()
        if now - self._broker_warned_at >= 10.0:
            self._broker_warned_at = now
            log.warning("kafka poll failed while the broker is unreachable (%s); retrying", exc)
        self._stop.wait(0.5)

    def _loop(self) -> None:
        while not self._stop.is_set():
            polled = self._poll(0.1)
            now = time.monotonic()
            self._take(polled, now)
            self._caught_up = not polled or self._read_all()
            got = self.assembler.pop_ready(now)
            if got:
                self.ingestor.build(got)
                self.batcher.add(got)
            if self._batch is not None and self._batch.done():
                self._finish_batch()  # commit as soon as the writer is done, not at the next flush
            if self.batcher.due(now, self._caught_up, pending=bool(self.dead) or self._uncommitted()):
                self._flush()

    def _read_all(self) -> bool:
        """True when this loop has read every record its partitions held at their last fetch.

        Under steady traffic a poll rarely comes back empty, yet the loop is not behind: what
        makes a batch worth waiting for is a backlog, not a busy topic. So the loop counts as
        caught up when no assigned partition has records past the fetched high-water mark,
        and the batcher then cuts early (ingest/batcher.py), as it does when a poll is empty."""
        c = self.consumer
        for tp in c.assignment():
            high = c.highwater(tp)
            pos = self.offsets.next_offset(tp.partition)
            if high is not None and pos is not None and high > pos:
                return False  # (a partition not read yet, or not fetched yet, shows no backlog)
        return True

    def _take(self, polled: dict[Any, list[Any]], now: float) -> None:
        self._apply_rebalances()
        skip = self.rebalances.rewind_retained(self.consumer) if self.rebalances.rewind else set()
        handled = spans = 0
        dead = len(self.dead)
        for tp, records in polled.items():
            if not records or tp.partition in skip:
                continue
            part = tp.partition
            for rec in records:
                n = self._handle(part, rec, now)
                if n > 0:
                    spans += n
            handled += len(records)
            self.offsets.read(part, records[-1].offset)
        # Counted once per poll: a labelled counter costs microseconds, a record a few dozen.
        m = self.metrics
        dead = len(self.dead) - dead  # whole and partly invalid records
        if handled > dead:
            m.records.labels("ok").inc(handled - dead)
        if dead:
            m.records.labels("deadletter").inc(dead)
        if spans:
            m.spans_received.inc(spans)

    def _handle(self, partition: int, rec: Any, now: float) -> int:
        """Decode one record into the assembler; returns its span count, or -1 when it is
        dead-lettered whole. A record with some invalid spans is dead-lettered *and* its
        valid spans are used."""
        try:
            result = decode_record(rec.value, self.limits)
        except MalformedRecord as exc:
            self.dead.add(rec, str(exc), "oversized" if "exceeds" in str(exc) else "undecodable")
            return -1
        if result.errors:
            self.dead.add_errors(rec, result.errors)
        if result.spans:
            self.assembler.add(result.spans, (partition, rec.offset), now)
        return len(result.spans)

    def _uncommitted(self) -> bool:
        """True when a batch would commit progress (records read that nothing holds back)."""
        return bool(self.offsets.targets(self.assembler.min_positions()))

    def _flush(self) -> None:
        """Hand the ready traces and dead letters to the writer as one batch.

        The previous batch is finished first (at most one is in flight). The
        batch's commit targets are taken now, when everything read so far is
        either in the batch or still buffered by the assembler; records read
        while the writer stores it are not covered and wait for the next batch.
        """
        if self.consumer is None:
            return
        self._finish_batch()
        self._apply_rebalances()
        self._load_marks()
        ready = self.batcher.take(time.monotonic())
        traces = self.ingestor.prepare(ready) if ready else []
        after_store = self.feedback.prepare(self.assembler.take_feedback(), traces)
        # Dead letters and targets after prepare(): its storage reads may poll (paused) meanwhile.
        targets = self.offsets.targets(self.assembler.min_positions())
        batch = Batch(len(traces), self.dead.take(), targets, time.perf_counter())
        batch.after_store = after_store
        if not traces and after_store is not None:
            self.writer.submit(batch, NO_ROWS)
        if traces:
            self.writer.submit(batch, encode_traces(traces, self.topic))
            # The judge messages go out now, so their acknowledgements arrive while the batch is
            # stored; the commit still waits for both. (Sent before the rows are stored: a crash
            # in between replays the records, and the judge dedupes by trace id.)
            batch.sent = self.producer.start(self._judge_sends(traces))  # type: ignore[union-attr]
        # The batch keeps only its rows and send futures: the traces are freed now.
        del traces, ready
        self._batch = batch

    def _requeue_sends(self, messages: list[dict[str, Any]]) -> list[Send]:
        """Judge messages of stored traces that negative feedback queued (reason rule:feedback)."""
        topic = self.config["kafka"]["judge_topic"]
        return [(topic, m["trace_id"].encode(), json_bytes(m), []) for m in messages]

    def _finish_batch(self) -> None:
        """Wait for the batch in flight to be stored, its judge messages and dead letters to be
        acknowledged (retrying with consumption paused while either is down), then commit it."""
        batch = self._batch
        if batch is None:
            return
        self.writer.wait_stored(batch, self.retry, self._wait_paused)
        judged = len(batch.sent)
        producer = self.producer
        assert producer is not None
        started = batch.sent + producer.start(
            self._requeue_sends(batch.requeued) + self.dead.sends(batch.dead)
        )
        producer.await_acks(started, self.retry.backoff, self._wait_paused)
        batch.sent = []
        self.metrics.judge_queue_sent.inc(judged)
        self._batch = None
        self._apply_rebalances()
        self.offsets.commit(self.consumer, batch.targets, wait=self._stop.is_set())
        parts = self.consumer.assignment()
        if parts:
            self.consumer.resume(*parts)
        if batch.count:
            self.metrics.batch_traces.observe(batch.count)
        self.metrics.batch_latency.observe(time.perf_counter() - batch.started)
        if self._caught_up:  # idle: give the freed batch's pages back (busy: reuse them)
            release_free_memory()

    def _judge_sends(self, traces: list[Any]) -> list[Send]:
        """The ``ragpulse.judge`` messages of the sampled traces."""
        topic = self.config["kafka"]["judge_topic"]
        return [(topic, t.trace_id.encode(), json_bytes(t.judge_message()), []) for t in traces if t.sampled]

    # -- rebalancing (see rebalance.py for why events are queued and applied here)

    def _apply_rebalances(self) -> None:
        """Apply queued rebalance events in order (loop thread only)."""
        changed = False
        while (event := self.rebalances.pop()) is not None:
            changed = True
            kind, parts = event
            if kind == "revoked":
                self._apply_revoked(parts)
            else:
                self.offsets.assigned(parts)
                self.rebalances.assigned(parts)
        if changed:
            # Owning every partition, this process sees every call of a session: re-ask
            # detection needs no storage reads (feedback/reask.py).
            owned = {tp.partition for tp in self.consumer.assignment()}
            every = self.consumer.partitions_for_topic(self.topic)
            self.feedback.reask.local = bool(every) and owned >= every

    def _apply_revoked(self, parts: set[int]) -> None:
        if not parts:
            return
        dropped = self.assembler.drop_partitions(parts)
        ready = self.batcher.ready
        keep = [a for a in ready if not (parts & a.positions.keys())]
        if len(keep) != len(ready):
            # Emitted but not stored: their new owner (maybe us, after the rewind) re-reads
            # them, and the assembler must not count those spans as late.
            self.assembler.forget(a.trace_id for a in ready if parts & a.positions.keys())
        self.batcher.ready = keep
        self.dead.drop_partitions(parts)
        if self._batch is not None:  # its dead letters are the new owner's to produce
            self._batch.dead = without_partitions(self._batch.dead, parts)
        self.offsets.revoked(parts)
        self.rebalances.revoked(parts)
        log.info("partitions %s revoked (%d buffered traces left to their new owner)", sorted(parts), dropped)

    def _load_marks(self) -> None:
        """Replay marks for newly assigned partitions (read before their traces are sampled)."""
        parts = self.rebalances.take_need_marks()
        if not parts:
            return
        marks = self.retry(lambda: self.storage.read_progress(self.topic))
        for p in parts:
            if p in marks:
                self.ingestor.replay_marks[p] = marks[p]
