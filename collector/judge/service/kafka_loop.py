"""Judge workers on Kafka: consume ``ragpulse.judge``, judge, store, commit.

Runs in ``ragpulse collect`` (``judge.enabled``) or alone (``ragpulse collect
--role judge``); scale out by running more processes in the same consumer
group (``kafka.judge_group_id``). Offsets are committed only after the
judgments and claims of everything they cover are stored; a message that is
not a JSON object with a trace id goes to the dead-letter topic with the
reason. Duplicate messages (the collector delivers at least once) are judged
once per batch and stored idempotently.
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
import time
from typing import Any

from ...contract import Judge
from ...core.metrics import Metrics
from ...kafka.clients import kafka_client_settings
from ...kafka.deadletter import dead_letter
from ...kafka.group_join import keep_join_going
from ...kafka.lag import ReadPositions
from ...kafka.liveness import rebalance_allowance_s, rebalancing
from ...storage.clickhouse import Storage
from ...storage.retry import StorageRetry
from .worker import JudgeWorker

__all__ = ["KafkaJudgeService"]

log = logging.getLogger("ragpulse.judge_service")


class KafkaJudgeService:
    """One consumer of the judge topic feeding one :class:`JudgeWorker`."""

    _instances = itertools.count()

    def __init__(
        self, config: dict[str, Any], judge: Judge, storage: Storage, metrics: Metrics, events: Any = None
    ) -> None:
        self.config = config
        self.worker = JudgeWorker(judge, storage, metrics, events=events)
        self.metrics = metrics
        self._stop = threading.Event()
        self.retry = StorageRetry.from_config(config["storage"], metrics, self._wait)
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None
        self.restarts = 0
        self.name = f"judge-{next(self._instances)}"  # in logs and /healthz

    def start(self) -> KafkaJudgeService:
        self._thread = threading.Thread(target=self._run, name="ragpulse-judge-kafka", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 8.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _wait(self, delay: float) -> bool:
        return not self._stop.wait(delay)

    def _run(self) -> None:
        """run() until stopped; an unexpected error restarts it after a pause (offsets are only
        committed after storage, so a restart re-reads what was not finished)."""
        while not self._stop.is_set():
            try:
                self.run()
            except Exception as exc:  # noqa: BLE001 - logged, counted, restarted
                self.error = exc
                self.restarts += 1
                log.exception("judge worker failed; restarting in 2 s")
                self._stop.wait(2.0)

    @staticmethod
    def _commit(consumer: Any) -> bool:
        """Commit the consumed positions; False (retried later) when a rebalance interfered."""
        from kafka.errors import KafkaError

        try:
            consumer.commit()
            return True
        except KafkaError as exc:  # stored rows are idempotent: a replay by a new owner is harmless
            log.warning("judge offset commit failed (%s); retrying", exc)
            return False

    def run(self) -> None:
        from kafka import KafkaConsumer, KafkaProducer

        k = self.config["kafka"]
        common = kafka_client_settings(self.config)
        max_poll_interval_ms = int(self.config["judge"]["max_poll_interval_s"] * 1000)
        consumer = KafkaConsumer(
            k["judge_topic"],
            **common,
            group_id=k["judge_group_id"],
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            max_poll_records=self.config["judge"]["batch_size"],
            max_poll_interval_ms=max_poll_interval_ms,
            # A crashed worker's partitions move after kafka.session_timeout_ms, as the ingest loop's do
            # (kafka-python's default is 45 s).
            session_timeout_ms=k["session_timeout_ms"],
            heartbeat_interval_ms=max(1000, k["session_timeout_ms"] // 3),
        )
        producer = KafkaProducer(**common, acks="all", linger_ms=5)
        positions = ReadPositions()  # ragpulse_consumer_lag of the judge topic, read at scrape time
        self.metrics.consumer_lag.read_from(lambda: positions.lag(consumer), self.name)
        stall_s = float(self.config["metrics"]["stall_s"])
        allowed_s = rebalance_allowance_s(max_poll_interval_ms)
        try:
            retry_commit = False
            while not self._stop.is_set():
                with self.metrics.polls.watching(self.name):
                    polled = consumer.poll(timeout_ms=200)
                positions.read(polled, consumer.assignment())
                keep_join_going(consumer)
                joining = self.metrics.polls.joining(self.name, rebalancing(consumer), allowed_s)
                if joining > allowed_s + stall_s:
                    # a group join that never completed (kafka/group_join.py guards the known cause): start over
                    # with a new consumer (run() is restarted by _run; nothing was committed).
                    raise RuntimeError(f"{self.name}: consumer group join stuck for {joining:.0f}s")
                if not polled:
                    if retry_commit:  # a commit failed during a rebalance: try again when idle too
                        retry_commit = not self._commit(consumer)
                    continue
                messages: dict[str, dict[str, Any]] = {}
                dead = []
                for records in polled.values():
                    for rec in records:
                        try:
                            msg = json.loads(rec.value)
                            if not isinstance(msg, dict) or not msg.get("trace_id"):
                                raise ValueError("not a judge message (JSON object with trace_id)")
                        except (ValueError, TypeError, UnicodeDecodeError) as exc:
                            dead.append((rec, str(exc)))
                            continue
                        prev = messages.get(msg["trace_id"])
                        if prev is None or int(msg.get("span_count") or 0) >= int(
                            prev.get("span_count") or 0
                        ):
                            messages[msg["trace_id"]] = msg
                results = self.worker.judge_messages(list(messages.values()))
                if not self.retry(lambda r=results: self.worker.store(r) or True):
                    return
                for rec, reason in dead:
                    topic, key, value, headers = dead_letter(k["deadletter_topic"], rec, reason)
                    producer.send(topic, key=key, value=value, headers=headers)
                    self.metrics.deadlettered.labels("bad_judge_message").inc()
                if dead:
                    producer.flush(30)
                retry_commit = not self._commit(consumer)
        finally:
            self.metrics.consumer_lag.read_from(None, self.name)
            self.metrics.polls.joining(self.name, False, 0.0)
            consumer.close(autocommit=False)
            producer.close(timeout=2)
            time.sleep(0)
