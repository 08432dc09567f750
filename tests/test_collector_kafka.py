"""Acceptance tests of ``ragpulse collect`` against a real Kafka broker and chDB.

The collector runs as a real subprocess (``python -m ragpulse.collector.cli
collect``) that the tests SIGKILL, restart and SIGTERM; results are read from
the chDB database after the collector has exited (a chDB path has one owner).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from ragpulse.collector.storage import Storage
from ragpulse.collector.synthetic import make_trace, traces_data

from tests.services import KafkaBroker, process_alive

pytestmark = pytest.mark.services

ROOT = Path(__file__).resolve().parent.parent


class CollectorProcess:
    """One ``ragpulse collect`` subprocess in its own process group, stopped by PID."""

    def __init__(self, config_path: Path, log_path: Path, role: str = "ingest") -> None:
        self.config_path = config_path
        self.log_path = log_path
        self.role = role
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self._log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
        log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the child
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "ragpulse.collector.cli", "collect", "--config", str(self.config_path),
                 "--role", self.role, "--log-level", "INFO"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=ROOT,
                start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )  # fmt: skip
        finally:
            log.close()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait_ready(self, timeout: float = 60.0) -> str:
        """Wait until this process logs its metrics URL and answers /readyz; returns the URL."""
        import re
        import urllib.request

        deadline = time.monotonic() + timeout
        seen = self.log_path.stat().st_size if self.log_path.exists() else 0
        url = None
        while time.monotonic() < deadline:
            assert self.alive(), self.log_tail()
            if url is None:
                found = re.findall(
                    r"metrics on (http://\S+)", self.log_path.read_text(errors="replace")[self._log_start :]
                )
                url = found[-1] if found else None
            if url is not None:
                try:
                    with urllib.request.urlopen(url + "/readyz", timeout=2) as resp:
                        if resp.status == 200:
                            return url
                except OSError:
                    pass
            time.sleep(0.2)
        raise AssertionError(
            f"collector not ready after {timeout}s (log from byte {seen}):\n{self.log_tail()}"
        )

    def kill(self) -> None:
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def terminate(self) -> tuple[int, float]:
        """SIGTERM; returns (exit status, seconds until exit)."""
        assert self.proc is not None
        start = time.monotonic()
        os.kill(self.proc.pid, signal.SIGTERM)
        try:
            rc = self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.cleanup()
            return -999, time.monotonic() - start
        return rc, time.monotonic() - start

    def cleanup(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(10)
        if self.proc is not None:
            assert not process_alive(self.proc.pid)

    def log_tail(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""


class Setup:
    """Unique topics, group and chDB path for one test."""

    def __init__(
        self, broker: KafkaBroker, tmp: Path, sampling: dict[str, Any] | None = None, **extra: Any
    ) -> None:
        suffix = uuid.uuid4().hex[:8]
        self.broker = broker
        self.spans = f"spans-{suffix}"
        self.judge = f"judge-{suffix}"
        self.dead = f"dead-{suffix}"
        broker.create_topic(self.spans, 2)
        broker.create_topic(self.judge, 2)
        broker.create_topic(self.dead, 1)
        tmp.mkdir(parents=True, exist_ok=True)
        self.db = tmp / "chdb"
        self.config = {
            "kafka": {
                "bootstrap_servers": broker.bootstrap,
                "spans_topic": self.spans,
                "judge_topic": self.judge,
                "deadletter_topic": self.dead,
                "group_id": f"collector-{suffix}",
                "judge_group_id": f"judge-{suffix}",
                "session_timeout_ms": 6000,
                "max_poll_records": 1000,
            },
            "storage": {
                "dsn": f"chdb://{self.db}",
                "batch_max_seconds": 0.5,
                "retry_initial_s": 0.2,
                "retry_max_s": 1.0,
            },
            "assembly": {"timeout_s": 2.0},
            "metrics": {"port": 0},
            "judge": {"enabled": False},
            "sampling": sampling or {"rate": 0.1, "budget_per_minute": None},
        }
        for key, value in extra.items():
            self.config.setdefault(key, {}).update(value)
        self.config_path = tmp / "collector.yaml"
        self.config_path.write_text(yaml.safe_dump(self.config))
        self.tmp = tmp
        self.procs: list[CollectorProcess] = []

    def collector(self) -> CollectorProcess:
        proc = CollectorProcess(self.config_path, self.tmp / "collector.log")
        self.procs.append(proc)
        proc.start()
        return proc

    def producer(self) -> Any:
        from kafka import KafkaProducer

        return KafkaProducer(
            bootstrap_servers=self.broker.bootstrap, acks="all", linger_ms=10, batch_size=256 << 10
        )

    def end_offsets(self, topic: str) -> dict[int, int]:
        from kafka import KafkaConsumer, TopicPartition

        c = KafkaConsumer(bootstrap_servers=self.broker.bootstrap)
        try:
            parts = [TopicPartition(topic, p) for p in c.partitions_for_topic(topic)]
            return {tp.partition: off for tp, off in c.end_offsets(parts).items()}
        finally:
            c.close()

    def committed(self) -> dict[int, int]:
        from kafka import KafkaAdminClient

        admin = KafkaAdminClient(bootstrap_servers=self.broker.bootstrap)
        try:
            group = self.config["kafka"]["group_id"]
            offsets = admin.list_group_offsets({group: None}).get(group, {})
        finally:
            admin.close()
        return {tp.partition: om.offset for tp, om in offsets.items() if tp.topic == self.spans}

    def wait_caught_up(self, proc: CollectorProcess, timeout: float = 120.0) -> None:
        end = self.end_offsets(self.spans)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert proc.alive(), f"collector exited:\n{proc.log_tail()}"
            if self.committed() == end:
                return
            time.sleep(0.5)
        raise AssertionError(
            f"collector did not catch up: committed {self.committed()} end {end}\n{proc.log_tail()}"
        )

    def read_topic(self, topic: str) -> list[Any]:
        from kafka import KafkaConsumer, TopicPartition

        end = self.end_offsets(topic)
        c = KafkaConsumer(
            bootstrap_servers=self.broker.bootstrap, enable_auto_commit=False, consumer_timeout_ms=5000
        )
        parts = [TopicPartition(topic, p) for p in end]
        c.assign(parts)
        c.seek_to_beginning(*parts)
        out = []
        try:
            while any(c.position(tp) < end[tp.partition] for tp in parts):
                for records in c.poll(timeout_ms=1000).values():
                    out.extend(records)
        finally:
            c.close()
        return out

    def storage(self) -> Storage:
        return Storage(f"chdb://{self.db}")

    def cleanup(self) -> None:
        for p in self.procs:
            p.cleanup()


@pytest.fixture
def setup_factory(kafka_broker: KafkaBroker, tmp_path: Path) -> Iterator[Any]:
    made: list[Setup] = []

    def make(**kwargs: Any) -> Setup:
        s = Setup(kafka_broker, tmp_path / f"s{len(made)}", **kwargs)
        made.append(s)
        return s

    try:
        yield make
    finally:
        for s in made:
            s.cleanup()


def _records_for(traces: list[Any], rng: random.Random) -> list[tuple[bytes, bytes]]:
    """Kafka records (key, value) mixing three shapes, with split traces' parts interleaved.

    * one record per trace (the agent exporter / kafkaexporter with partition_traces_by_id);
    * a trace split in two records, children first and the root later, with other
      records in between (spans of one trace arriving in separate records);
    * several traces under shared resources in one record (a kafkaexporter batch).
    """
    out: list[tuple[bytes, bytes]] = []
    delayed: list[tuple[int, tuple[bytes, bytes]]] = []
    i = 0
    while i < len(traces):
        shape = rng.random()
        if shape < 0.5:
            t = traces[i]
            out.append((t.hex.encode(), traces_data([(t.service, t.spans)])))
            i += 1
        elif shape < 0.8:
            t = traces[i]
            out.append((t.hex.encode(), traces_data([(t.service, t.children())])))
            delayed.append(
                (len(out) + rng.randint(1, 40), (t.hex.encode(), traces_data([(t.service, [t.root()])])))
            )
            i += 1
        else:
            group = traces[i : i + rng.randint(2, 6)]
            out.append(
                (
                    group[0].hex.encode(),
                    traces_data([(t.service, t.spans) for t in group], shared_resource=True),
                )
            )
            i += len(group)
        ready = [d for d in delayed if d[0] <= len(out)]
        delayed = [d for d in delayed if d[0] > len(out)]
        out.extend(r for _, r in ready)
    out.extend(r for _, r in delayed)
    return out


def _synth(n: int, seed: str, rng: random.Random) -> list[Any]:
    traces = []
    for i in range(n):
        roll = rng.random()
        traces.append(
            make_trace(
                i, seed=seed, n_chunks=3, chunk_chars=120, rerank=(i % 3 == 0), rng=random.Random(i),
                error=roll < 0.02, refusal=0.02 <= roll < 0.04, risk="high" if 0.04 <= roll < 0.05 else "low",
                service=("checkout" if i % 2 else "support"),
            )
        )  # fmt: skip
    return traces


def test_crash_test_sigkill_three_times_loses_nothing_and_duplicates_nothing(setup_factory: Any) -> None:
    """20,000 traces, collector SIGKILLed at 3 random moments; exactly 20,000 traces, sampled ones queued."""
    rng = random.Random(20251129)
    s = setup_factory(sampling={"rate": 0.1, "budget_per_minute": 1200})
    traces = _synth(20_000, "crash", rng)
    records = _records_for(traces, rng)
    expected = {t.hex: len(t.spans) for t in traces}

    proc = s.collector()
    produced = threading.Event()
    errors: list[BaseException] = []

    def produce() -> None:
        try:
            p = s.producer()
            per_tick = 200
            for k in range(0, len(records), per_tick):
                for key, value in records[k : k + per_tick]:
                    p.send(s.spans, key=key, value=value)
                time.sleep(0.2)  # ~1,000 records/s: production lasts ~25 s
            p.flush(60)
            p.close()
        except BaseException as exc:  # noqa: BLE001 - reported by the test thread
            errors.append(exc)
        finally:
            produced.set()

    producer = threading.Thread(target=produce, daemon=True)
    producer.start()
    kill_times = sorted(rng.uniform(3.0, 24.0) for _ in range(3))
    start = time.monotonic()
    for when in kill_times:
        time.sleep(max(0.0, start + when - time.monotonic()))
        assert proc.alive(), f"collector exited on its own:\n{proc.log_tail()}"
        proc.kill()
        proc = s.collector()
    producer.join(120)
    assert not errors, errors
    assert produced.is_set()
    s.wait_caught_up(proc, timeout=150)
    proc.wait_ready()
    rc, took = proc.terminate()
    assert rc == 0, proc.log_tail()
    assert took < 10.0

    st = s.storage()
    try:
        rows = st.query("SELECT trace_id, span_count, sampled, sampled_reason FROM {db}.rag_traces FINAL")
        raw = st.query("SELECT count() FROM {db}.rag_traces")[0][0]
        once = st.query("SELECT count(), uniqExact(trace_id) FROM {db}.rag_traces FINAL")[0]
    finally:
        st.close()
    ids = [r[0] for r in rows]
    assert len(ids) == 20_000 and set(ids) == set(expected), (len(ids), len(set(ids) ^ set(expected)))
    assert once == (20_000, 20_000)
    incomplete = [r for r in rows if r[1] != expected[r[0]]]
    assert not incomplete, incomplete[:5]
    sampled = {r[0] for r in rows if r[2]}
    assert sampled, "nothing sampled"
    queued = [r for r in s.read_topic(s.judge)]
    queued_ids = {r.key.decode() for r in queued}
    assert queued_ids == sampled, (len(queued_ids), len(sampled), len(queued_ids ^ sampled))
    for r in queued[:50]:
        msg = json.loads(r.value)
        assert msg["trace_id"] == r.key.decode() and msg["chunks"] and msg["query"]
    assert s.read_topic(s.dead) == []
    print(
        f"\ncrash test: {raw} rows before FINAL for 20,000 traces; {len(queued)} judge records for {len(sampled)} sampled"
    )
