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

import gc
import logging
import signal
import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from ..feedback.sink import FeedbackSink
from ..feedback.spans import may_hold_feedback
from ..ingest.assemble import Assembler
from ..ingest.otlp import (
    Limits,
    MalformedRecord,
    decode_complete_traces,
    decode_record,
    decoder_description,
)
from ..ingest.pipeline import Ingestor
from ..ingest.sampling import SamplingPolicy
from ..memory import keep_freed_memory, release_free_memory
from ..serve.metrics import Metrics, MetricsServer
from ..storage.clickhouse import Storage, StorageUnavailable, encode_traces, json_bytes
from ..storage.retry import Backoff, retry_storage
from .group_join import keep_join_going
from .liveness import rebalance_allowance_s, rebalancing
from .records import install as install_record_unpacking

__all__ = ["KafkaCollector", "kafka_client_settings", "REASON_HEADER"]

log = logging.getLogger("ragpulse.collect")

REASON_HEADER = "ragpulse.reason"
_MAX_POLL_INTERVAL_MS = 300_000
_REBALANCE_ALLOWED_S = rebalance_allowance_s(_MAX_POLL_INTERVAL_MS)
SOURCE_HEADER = "ragpulse.source"


def kafka_client_settings(config: dict[str, Any]) -> dict[str, Any]:
    """bootstrap servers plus the ``kafka.security`` pass-through settings."""
    k = config["kafka"]
    return {"bootstrap_servers": k["bootstrap_servers"].split(","), **(k.get("security") or {})}


# A record to produce: (topic, key, value, headers).
_Send = tuple[str, bytes | None, bytes | None, list[tuple[str, bytes]]]


class _Stop(Exception):
    """Raised inside waits when shutdown must abandon a retry."""


class _Batch:
    """Traces and dead letters cut together, the offsets they let us commit, and the store."""

    __slots__ = ("sent", "count", "dead", "targets", "started", "block", "future", "after_store")

    def __init__(
        self,
        count: int,
        dead: list[tuple[Any, str, str]],
        targets: dict[int, tuple[int, int]],
        started: float,
    ) -> None:
        self.sent: list[tuple[_Send, Any]] = []  # judge messages sent, with their futures
        self.count = count  # traces in the batch
        self.dead = dead
        self.targets = targets
        self.started = started
        self.block = b""  # the encoded rows, joined (kept for a retry on the main thread)
        self.future: Future[list[dict[str, Any]]] | None = None
        self.after_store: Any = None  # the feedback stage's storage step (run by the writer)

    def done(self) -> bool:
        return self.future is None or self.future.done()


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
        self.metrics = metrics or Metrics()
        self.limits = Limits(**config["limits"])
        self.topic = config["kafka"]["spans_topic"]
        self.assembler = Assembler(config["assembly"]["timeout_s"], config["assembly"]["max_traces"])
        self.ingestor = Ingestor(self.storage, SamplingPolicy.from_config(config["sampling"]), self.metrics)
        self.feedback = FeedbackSink(
            self.storage, self.metrics, self.ingestor.sampler, config.get("feedback")
        )
        self._stop = threading.Event()
        self._stop_deadline: float | None = None
        self._ready: list[Any] = []
        self._first_ready = 0.0
        self._caught_up = True  # the last poll returned nothing
        self._dead: list[tuple[Any, str, str]] = []
        self._seen: dict[int, int] = {}
        self._committed: dict[int, int] = {}
        # Asynchronous commits not yet answered: (future, offsets, revocation epochs then).
        self._commits: list[tuple[Any, dict[Any, Any], dict[int, int]]] = []
        self._epochs: dict[int, int] = {}  # per partition, bumped on each revocation
        self._batch: _Batch | None = None  # the batch the writer thread is storing
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="ragpulse-writer")
        self._need_marks: set[int] = set()
        self._rewind: set[int] = set()
        # (kind, partitions) from the rebalance listener, applied on the main thread.
        self._rebalances: deque[tuple[str, set[int]]] = deque()
        self._serve_metrics = serve_metrics
        self._want_signals = False
        self._starting = True
        self._server: MetricsServer | None = None
        self.consumer: Any = None
        self.producer: Any = None
        self.running = False

    # -- lifecycle

    def request_stop(self) -> None:
        """Ask the loop to finish (signal-safe)."""
        if self._starting and self._want_signals:
            # Still connecting (kafka-python blocks while the brokers are unreachable):
            # nothing is buffered or uncommitted yet, so leave at once.
            raise _Stop
        if not self._stop.is_set():
            self._stop_deadline = time.monotonic() + float(self.config["shutdown"]["grace_s"])
            self._stop.set()

    def install_signal_handlers(self) -> None:
        """Handle SIGTERM/SIGINT as a graceful stop (re-installed after chDB opens: it sets its own)."""
        self._want_signals = True
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: self.request_stop())

    def _ready_check(self) -> bool:
        return self.running and self.consumer is not None and bool(self.consumer.assignment())

    def _connect(self) -> None:
        from kafka import KafkaConsumer, KafkaProducer

        k = self.config["kafka"]
        common = kafka_client_settings(self.config)
        self.producer = KafkaProducer(
            **common,
            acks="all",
            linger_ms=20,
            retries=10,
            max_in_flight_requests_per_connection=1,
            compression_type="lz4",
            max_request_size=4 << 20,
        )
        self.consumer = KafkaConsumer(
            **common,
            group_id=k["group_id"],
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            max_poll_records=k["max_poll_records"],
            fetch_max_bytes=k["fetch_max_bytes"],
            max_partition_fetch_bytes=min(k["fetch_max_bytes"], 4 << 20),
            max_poll_interval_ms=_MAX_POLL_INTERVAL_MS,
            session_timeout_ms=k["session_timeout_ms"],
            heartbeat_interval_ms=max(1000, k["session_timeout_ms"] // 3),
        )
        from kafka import ConsumerRebalanceListener

        outer = self

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked: Any) -> None:
                outer._on_revoked(revoked)

            def on_partitions_assigned(self, assigned: Any) -> None:
                outer._on_assigned(assigned)

        self.consumer.subscribe([self.topic], listener=Listener())

    def run(self) -> int:
        """Consume until stopped; returns the process exit status."""
        if self._want_signals:
            # Our own process (ragpulse collect): the batch in flight holds ~10^5 small objects,
            # and the default cyclic-GC thresholds rescan them many times per batch. Freeze
            # start-up objects and collect young ones less often. (Turning automatic GC off and
            # collecting every 10 s saved ~8 us per span more. It was reverted when the suite's
            # kafka-python group-join stall hit twice with it; the stall then recurred with GC
            # on, so GC was not its cause (kafka/group_join.py has the cause) and the change can come
            # back, measured.)
            gc.freeze()
            gc.set_threshold(20_000, 20, 100)
            keep_freed_memory()  # re-faulting freed pages every batch cost ~0.8 CPU-s per bench drain
        if self._serve_metrics:
            m = self.config["metrics"]
            self._server = MetricsServer(
                self.metrics, m["host"], m["port"], ready=self._ready_check, stall_s=m["stall_s"]
            ).start()
            log.info("metrics on %s", self._server.url)
        log.info("OTLP protobuf decoder: %s", decoder_description())
        log.info("Kafka record unpacking: %s", install_record_unpacking())
        try:
            retry_storage(self.storage.apply_schema, self.metrics, self._backoff(), self._wait_plain)
            released = self.storage.release_engine_pages()
            if released:
                log.info("released %d MB of chDB library pages that opening it touched", released >> 20)
            if self._want_signals:
                self.install_signal_handlers()
            self._connect()
            self._starting = False
            self.running = True
            self._loop()
            # Graceful stop: store and commit complete traces; partial ones stay uncommitted.
            self._ready.extend(self.assembler.pop_ready(time.monotonic()))
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
            self.running = False
            if self.consumer is not None:
                try:
                    self.consumer.close(autocommit=False)
                except Exception:  # noqa: BLE001 - closing on the way out
                    pass
            if self.producer is not None:
                try:
                    self.producer.close(timeout=2)
                except Exception:  # noqa: BLE001
                    pass
            if self._server is not None:
                self._server.stop()
            self._writer.shutdown(wait=True)  # an insert in flight finishes before storage closes
            self.storage.close()

    # -- waits and retries

    def _backoff(self) -> Backoff:
        st = self.config["storage"]
        return Backoff(st["retry_initial_s"], st["retry_max_s"])

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
        end = time.monotonic() + delay
        while time.monotonic() < end:
            if self._deadline_passed():
                raise _Stop
            parts = c.assignment()  # re-pause every time: a rebalance inside poll() brings new partitions
            if parts:
                c.pause(*parts)
            with self.metrics.polls.watching("collector"):
                polled = c.poll(timeout_ms=int(min(0.5, max(0.0, end - time.monotonic())) * 1000))
            keep_join_going(c)
            # Records can still arrive (fetched before the pause took effect): never drop them.
            self._take(polled, time.monotonic())
        return True

    # -- the loop

    def _loop(self) -> None:
        c = self.consumer
        batch_max = self.config["storage"]["batch_max_traces"]
        batch_secs = float(self.config["storage"]["batch_max_seconds"])
        last_commit = time.monotonic()
        last_lag = 0.0
        while not self._stop.is_set():
            with self.metrics.polls.watching("collector"):
                polled = c.poll(timeout_ms=100)
            keep_join_going(c)
            self._caught_up = not polled
            self.metrics.polls.joining("collector", rebalancing(c), _REBALANCE_ALLOWED_S)
            now = time.monotonic()
            self._take(polled, now)
            got = self.assembler.pop_ready(now)
            if got:
                self.ingestor.build(got)
                if not self._ready:
                    self._first_ready = now
                self._ready.extend(got)
            self.metrics.assembly_buffer.set(len(self.assembler))
            if self._batch is not None and self._batch.done():
                self._finish_batch()  # commit as soon as the writer is done, not at the next flush
            due = now - last_commit >= batch_secs
            # Caught up (an empty poll): store what is ready now if it is a sizeable batch or a
            # quarter of the timer has passed, instead of waiting for the timer. Light traffic
            # still makes at most a few inserts a second (each has a fixed cost of tens of ms).
            if not polled and (len(self._ready) >= batch_max // 4 or now - last_commit >= batch_secs / 4):
                due = True
            if len(self._ready) >= batch_max or (due and (self._ready or self._dead or self._uncommitted())):
                self._flush()
                last_commit = time.monotonic()
            if now - last_lag >= 5.0 and self._update_lag():
                last_lag = now

    def _take(self, polled: dict[Any, list[Any]], now: float) -> None:
        self._apply_rebalances()
        skip = self._rewind_retained() if self._rewind else set()
        handled = spans = 0
        dead = len(self._dead)
        for tp, records in polled.items():
            if not records or tp.partition in skip:
                continue
            part = tp.partition
            for rec in records:
                n = self._handle(part, rec, now)
                if n > 0:
                    spans += n
            handled += len(records)
            self._seen[part] = records[-1].offset
        # Counted once per poll: a labelled counter costs microseconds, a record a few dozen.
        m = self.metrics
        dead = len(self._dead) - dead  # whole and partly invalid records
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
        built = None if may_hold_feedback(rec.value) else decode_complete_traces(rec.value, self.limits)
        if built is not None and self.assembler.add_built(built, (partition, rec.offset)):
            spans = 0
            for t in built:
                spans += t.span_count
            return spans
        try:
            result = decode_record(rec.value, self.limits)
        except MalformedRecord as exc:
            kind = "oversized" if "exceeds" in str(exc) else "undecodable"
            self._dead.append((rec, str(exc), kind))
            return -1
        if result.errors:
            reason = f"{len(result.errors)} invalid span(s): " + "; ".join(result.errors[:3])
            kind = "oversized" if any("exceeds" in e for e in result.errors) else "invalid_spans"
            self._dead.append((rec, reason, kind))
        if result.spans:
            self.assembler.add(result.spans, (partition, rec.offset), now)
        return len(result.spans)

    def _uncommitted(self) -> bool:
        """True when a batch would commit progress (records read that nothing holds back)."""
        return bool(self._commit_targets())

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
        ready, self._ready = self._ready, []
        traces = self.ingestor.prepare(ready) if ready else []
        after_store = self.feedback.prepare(self.assembler.take_feedback(), traces)
        dead, self._dead = self._dead, []
        batch = _Batch(len(traces), dead, self._commit_targets(), time.perf_counter())
        if traces:
            # Encode here; the writer thread only runs the insert, during which chDB (or the
            # HTTP client) releases the GIL: storing one batch overlaps decoding the next.
            batch.block = b"".join(encode_traces(traces, self.topic))
            batch.future = self._writer.submit(self._store_batch, batch.block, len(traces), after_store)
            # The judge messages go out now, so their acknowledgements arrive while the batch is
            # stored; the commit still waits for both. (Sent before the rows are stored: a crash
            # in between replays the records, and the judge dedupes by trace id.)
            batch.sent = self._start_sends(self._judge_sends(traces))
        elif after_store is not None:
            batch.future = self._writer.submit(self._store_batch, b"", 0, after_store)
        batch.after_store = after_store
        # The batch keeps only its rows and send futures: the traces are freed now.
        del traces, ready
        self._batch = batch

    def _finish_batch(self) -> None:
        """Wait for the batch in flight to be stored (retrying with consumption paused while
        storage is down), produce its judge messages and dead letters, then commit it."""
        batch = self._batch
        if batch is None:
            return
        requeued: list[dict[str, Any]] = []
        if batch.future is not None:
            try:
                requeued = batch.future.result()
            except StorageUnavailable as exc:
                self.metrics.storage_up.set(0)
                self.metrics.storage_retries.inc()
                log.warning("storage unavailable (%s); retrying", str(exc).splitlines()[0][:200])
                # Retry here, on the main thread, where waiting keeps the paused consumer alive.
                requeued = retry_storage(
                    lambda: self._store_batch(batch.block, batch.count, batch.after_store),
                    self.metrics,
                    self._backoff(),
                    self._wait_paused,
                )
            self.metrics.storage_up.set(1)
            batch.block = b""
        judged = len(batch.sent)
        later = self._requeue_sends(requeued) + self._dead_sends(batch.dead)
        self._await_sends(batch.sent + self._start_sends(later))
        batch.sent = []
        self.metrics.judge_queue_sent.inc(judged)
        self._batch = None
        self._commit(batch.targets, wait=self._stop.is_set())
        parts = self.consumer.assignment()
        if parts:
            self.consumer.resume(*parts)
        if batch.count:
            self.metrics.batch_traces.observe(batch.count)
        self.metrics.batch_latency.observe(time.perf_counter() - batch.started)
        self.late_spans_to_metrics()
        if self._caught_up:  # idle: give the freed batch's pages back (busy: reuse them)
            release_free_memory()

    def late_spans_to_metrics(self) -> None:
        late = self.assembler.late_spans
        if late:
            self.metrics.late_spans.inc(late)
            self.assembler.late_spans = 0

    def _judge_sends(self, traces: list[Any]) -> list[_Send]:
        """The ``ragpulse.judge`` messages of the sampled traces."""
        topic = self.config["kafka"]["judge_topic"]
        return [(topic, t.trace_id.encode(), json_bytes(t.judge_message()), []) for t in traces if t.sampled]

    def _store_batch(self, block: bytes, count: int, after_store: Any) -> list[dict[str, Any]]:
        """The writer thread's job: the batch's rows, then the feedback stage's storage step
        (collector/feedback/sink.py), whose judge messages the batch sends before its commit."""
        if count:
            self.ingestor.store_encoded(block, count)
        return after_store() if after_store is not None else []

    def _requeue_sends(self, messages: list[dict[str, Any]]) -> list[_Send]:
        """Judge messages of stored traces that negative feedback queued (reason rule:feedback)."""
        topic = self.config["kafka"]["judge_topic"]
        return [(topic, m["trace_id"].encode(), json_bytes(m), []) for m in messages]

    def _dead_sends(self, dead: list[tuple[Any, str, str]]) -> list[_Send]:
        """Dead letters: the record as it came, with the reason and its source in headers."""
        topic = self.config["kafka"]["deadletter_topic"]
        sends: list[_Send] = []
        for rec, reason, kind in dead:
            headers = [
                (REASON_HEADER, reason[:2000].encode("utf-8", "replace")),
                (SOURCE_HEADER, f"{rec.topic}/{rec.partition}/{rec.offset}".encode()),
            ]
            sends.append((topic, rec.key, rec.value, headers))
            self.metrics.deadlettered.labels(kind).inc()
        return sends

    def _start_sends(self, sends: list[_Send]) -> list[tuple[_Send, Any]]:
        return [(s, self.producer.send(s[0], key=s[1], value=s[2], headers=s[3])) for s in sends]

    def _await_sends(self, started: list[tuple[_Send, Any]]) -> None:
        """Wait until every send is acknowledged (acks=all), re-sending failures with backoff
        while consumption is paused; nothing is committed before this returns."""
        backoff = self._backoff()
        while started:
            self.producer.flush(timeout=30)
            failed = []
            for s, f in started:
                if not f.is_done or f.failed():
                    err = f.exception if f.is_done else "not acknowledged in time"
                    from kafka.errors import MessageSizeTooLargeError

                    if isinstance(err, MessageSizeTooLargeError) and s[2] is not None:
                        s = (s[0], s[1], s[2][: 512 << 10], [*s[3], ("ragpulse.truncated", b"1")])
                    failed.append(s)
                    log.warning("produce to %s failed: %s; retrying", s[0], err)
            if not failed:
                return
            self._wait_paused(backoff.next())
            started = self._start_sends(failed)

    def _commit_targets(self) -> dict[int, tuple[int, int]]:
        """Per assigned partition, (offset to commit, revocation epoch) for everything read so far
        except records whose spans the assembler still buffers."""
        low = self.assembler.min_positions()
        out = {}
        for part, seen in self._seen.items():
            target = low.get(part, seen + 1)
            if target > self._committed.get(part, -1):
                out[part] = (target, self._epochs.get(part, 0))
        return out

    def _commit(self, targets: dict[int, tuple[int, int]], wait: bool = False) -> None:
        """Commit a batch's targets, skipping partitions revoked since the batch was cut
        (their new owner, possibly us again, replays from the committed offset).

        While running, commits are asynchronous: everything they cover is already stored and
        acknowledged, so waiting for the broker's answer only stalls the loop. A commit that
        fails is superseded by the next one, or its records are replayed (idempotent storage).
        The last commit before exiting waits (``wait``).
        """
        from kafka import TopicPartition
        from kafka.structs import OffsetAndMetadata

        self._apply_rebalances()
        self._settle_commits()
        offsets = {}
        assigned = {tp.partition for tp in self.consumer.assignment()}
        for part, (target, epoch) in targets.items():
            if part not in assigned or self._epochs.get(part, 0) != epoch:
                continue
            if target > self._committed.get(part, -1):
                offsets[TopicPartition(self.topic, part)] = OffsetAndMetadata(target, "", -1)
        if not offsets:
            return
        from kafka.errors import KafkaError

        try:
            if not wait:
                self._commits.append((self.consumer.commit_async(offsets), offsets, self._epoch_of(offsets)))
                return
            self.consumer.commit(offsets)
        except KafkaError as exc:
            # Typically a rebalance moved the partition: its new owner replays from the last
            # committed offset (storage is idempotent). If we keep it, the next flush commits.
            log.warning("commit of %s failed (%s); will be retried or replayed", offsets, exc)
            return
        self._committed_now(offsets, self._epoch_of(offsets))

    def _epoch_of(self, offsets: dict[Any, Any]) -> dict[int, int]:
        return {tp.partition: self._epochs.get(tp.partition, 0) for tp in offsets}

    def _committed_now(self, offsets: dict[Any, Any], epochs: dict[int, int]) -> None:
        for tp, om in offsets.items():
            part = tp.partition
            if self._epochs.get(part, 0) == epochs[part] and om.offset > self._committed.get(part, -1):
                self._committed[part] = om.offset

    def _settle_commits(self) -> None:
        """Record the asynchronous commits the broker has answered (main thread)."""
        pending = []
        for future, offsets, epochs in self._commits:
            if not future.is_done:
                pending.append((future, offsets, epochs))
            elif future.succeeded():
                self._committed_now(offsets, epochs)
            else:
                log.warning(
                    "commit of %s failed (%s); will be retried or replayed", offsets, future.exception
                )
        self._commits = pending

    def _update_lag(self) -> bool:
        """Set the consumer-lag gauges from the fetch high-water marks; True when any was set."""
        c = self.consumer
        updated = False
        for tp in c.assignment():
            high = c.highwater(tp)
            if high is None:
                continue
            try:
                pos = c.position(tp)
            except Exception:  # noqa: BLE001 - lag is best effort
                continue
            self.metrics.consumer_lag.labels(tp.topic, str(tp.partition)).set(max(0, high - pos))
            updated = True
        return updated

    # -- rebalancing
    #
    # kafka-python 3 runs rebalance listeners on its event-loop thread, concurrently with
    # the main thread. The listeners therefore only queue the event; the main thread applies
    # it before it next touches consumer state (after every poll, before flush and commit).
    # Mutating the assembler, _seen or _ready from the listener raced with _take: a record
    # handled after the drop could set _seen past traces that were just dropped, and the
    # next commit skipped them (lost). Until the main thread applies a revocation its state
    # is merely stale: commits for partitions no longer assigned are filtered out, and the
    # held offsets still cover everything buffered. What was stored but not committed for a
    # revoked partition is replayed by its new owner (idempotent storage); what was buffered
    # is dropped and re-read by the new owner.

    def _on_revoked(self, revoked: Any) -> None:
        self._rebalances.append(("revoked", {tp.partition for tp in revoked}))

    def _on_assigned(self, assigned: Any) -> None:
        self._rebalances.append(("assigned", {tp.partition for tp in assigned}))

    def _apply_rebalances(self) -> None:
        """Apply queued rebalance events in order (main thread only)."""
        while self._rebalances:
            kind, parts = self._rebalances.popleft()
            if kind == "revoked":
                self._apply_revoked(parts)
            else:
                self._apply_assigned(parts)

    def _apply_revoked(self, parts: set[int]) -> None:
        if not parts:
            return
        dropped = self.assembler.drop_partitions(parts)
        keep = [a for a in self._ready if not (parts & a.positions.keys())]
        if len(keep) != len(self._ready):
            # Emitted but not stored: their new owner (maybe us, after the rewind) re-reads
            # them, and the assembler must not count those spans as late.
            self.assembler.forget(a.trace_id for a in self._ready if parts & a.positions.keys())
        self._ready = keep
        self._dead = [d for d in self._dead if d[0].partition not in parts]
        if self._batch is not None:  # its dead letters are the new owner's to produce
            self._batch.dead = [d for d in self._batch.dead if d[0].partition not in parts]
        for p in parts:
            self._epochs[p] = self._epochs.get(p, 0) + 1
            self._seen.pop(p, None)
            self._committed.pop(p, None)
            self._need_marks.discard(p)
        # kafka-python keeps the fetch position of a partition that is assigned again: since
        # its buffered spans were just dropped, rewind it to the committed offset after poll().
        self._rewind |= parts
        log.info("partitions %s revoked (%d buffered traces left to their new owner)", sorted(parts), dropped)

    def _apply_assigned(self, parts: set[int]) -> None:
        for p in parts:
            self._committed.pop(p, None)
        self._need_marks |= parts

    def _rewind_retained(self) -> set[int]:
        """Seek partitions whose buffered state was dropped back to their committed offsets
        (main thread, right after poll); records that poll returned for them are skipped."""
        from kafka import TopicPartition

        assigned = {tp.partition for tp in self.consumer.assignment()}
        parts, self._rewind = self._rewind & assigned, set()
        for p in parts:
            tp = TopicPartition(self.topic, p)
            committed = self.consumer.committed(tp)
            if committed is None:
                self.consumer.seek_to_beginning(tp)
            else:
                self.consumer.seek(tp, committed)
        if parts:
            log.info("partitions %s assigned again: rewound to their committed offsets", sorted(parts))
        return parts

    def _load_marks(self) -> None:
        """Replay marks for newly assigned partitions (read before their traces are sampled)."""
        if not self._need_marks:
            return
        parts, self._need_marks = self._need_marks, set()
        marks = retry_storage(
            lambda: self.storage.read_progress(self.topic), self.metrics, self._backoff(), self._wait_paused
        )
        for p in parts:
            if p in marks:
                self.ingestor.replay_marks[p] = marks[p]
