"""Acceptance tests of ``ragpulse collect`` against a real Kafka broker and chDB.

The collector runs as a real subprocess (``python -m ragpulse.collector.cli.main
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
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from ragpulse.collector.demo.synthetic import make_trace, traces_data
from ragpulse.collector.ingest.sampling import SamplingPolicy, trace_hash
from ragpulse.collector.storage.clickhouse import Storage

from tests.services import KafkaBroker, chdb_holder, post_otlp, process_alive, release

pytestmark = pytest.mark.services

ROOT = Path(__file__).resolve().parent.parent


class CollectorProcess:
    """One ``ragpulse collect`` subprocess in its own process group, stopped by PID."""

    def __init__(self, config_path: Path, log_path: Path, role: str = "ingest", python: str = "") -> None:
        """``python``: the interpreter to run it with (default this one; bench/ingest_throughput.py
        --against runs another checkout's)."""
        self.config_path = config_path
        self.log_path = log_path
        self.role = role
        self.python = python or sys.executable
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self._log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
        log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the child
        try:
            self.proc = subprocess.Popen(
                [self.python, "-m", "ragpulse.collector.cli", "collect", "--config", str(self.config_path),
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
        # Ask the stuck process for its thread stacks (collect registers SIGUSR1) for the failure.
        if self.alive():
            os.kill(self.proc.pid, signal.SIGUSR1)
            time.sleep(1.0)
        raise AssertionError(
            f"collector not ready after {timeout}s (log from byte {seen}):\n"
            + self.log_path.read_text(errors="replace")[-12000:]
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

    def stacks_and_log(self, chars: int = 16000) -> str:
        """Ask a stuck process for its thread stacks (collect registers SIGUSR1), then return
        the end of its log, stacks included, for a failure message."""
        if self.alive():
            os.kill(self.proc.pid, signal.SIGUSR1)
            time.sleep(1.0)
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""


def _caught_up(committed: dict[int, int], end: dict[int, int]) -> bool:
    """Every partition committed to its end; a partition that never held a record needs no commit
    (a consumer only commits what it fetched, so an empty partition may have none)."""
    return all(committed.get(partition, 0) == offset for partition, offset in end.items())


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
            # The synthetic streams repeat a query within a session (the same rng per trace
            # number across seeds): re-asks by definition, whose implicit feedback would queue
            # judge messages that these sampling and delivery invariants do not model.
            "feedback": {"reask": {"enabled": False}},
        }
        for key, value in extra.items():
            self.config.setdefault(key, {}).update(value)
        self.config_path = tmp / "collector.yaml"
        self.config_path.write_text(yaml.safe_dump(self.config))
        self.tmp = tmp
        self.procs: list[CollectorProcess] = []

    def collector(self, role: str = "ingest") -> CollectorProcess:
        proc = CollectorProcess(self.config_path, self.tmp / "collector.log", role=role)
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

    def committed(self, group: str | None = None, topic: str | None = None) -> dict[int, int]:
        from kafka import KafkaAdminClient
        from kafka.errors import KafkaError

        group = group or self.config["kafka"]["group_id"]
        topic = topic or self.spans
        admin = KafkaAdminClient(bootstrap_servers=self.broker.bootstrap)
        try:
            try:
                offsets = admin.list_group_offsets({group: None}).get(group, {})
            except KafkaError:  # the coordinator is not known yet on a fresh broker
                return {}
        finally:
            admin.close()
        return {tp.partition: om.offset for tp, om in offsets.items() if tp.topic == topic}

    def wait_caught_up(self, proc: CollectorProcess, timeout: float = 120.0, judges: bool = False) -> None:
        """Wait until the collector committed the whole spans topic (and, with ``judges``,
        the judge workers the whole judge topic)."""
        end = self.end_offsets(self.spans)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert proc.alive(), f"collector exited:\n{proc.log_tail()}"
            if _caught_up(self.committed(), end) and (
                not judges
                or _caught_up(
                    self.committed(self.config["kafka"]["judge_group_id"], self.judge),
                    self.end_offsets(self.judge),
                )
            ):
                return
            time.sleep(0.5)
        judged = ""
        if judges:
            group = self.config["kafka"]["judge_group_id"]
            judged = f"; judge group committed {self.committed(group, self.judge)} end {self.end_offsets(self.judge)}"
        raise AssertionError(
            f"collector did not catch up: committed {self.committed()} end {end}{judged}\n"
            + proc.stacks_and_log()
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
    # Batches of up to 3 s: each SIGKILL loses up to 3 s of stored-but-uncommitted work to replay.
    s = setup_factory(sampling={"rate": 0.1, "budget_per_minute": 1200}, storage={"batch_max_seconds": 3.0})
    traces = _synth(20_000, "crash", rng)
    records = _records_for(traces, rng)
    expected = {t.hex: len(t.spans) for t in traces}

    proc = s.collector()
    produced = threading.Event()
    errors: list[BaseException] = []

    def produce() -> None:
        try:
            p = s.producer()
            per_tick = 100
            for k in range(0, len(records), per_tick):
                for key, value in records[k : k + per_tick]:
                    p.send(s.spans, key=key, value=value)
                time.sleep(0.2)  # ~500 records/s: production lasts ~50 s
            p.flush(60)
            p.close()
        except BaseException as exc:  # noqa: BLE001 - reported by the test thread
            errors.append(exc)
        finally:
            produced.set()

    producer = threading.Thread(target=produce, daemon=True)
    producer.start()
    kill_times = sorted(rng.uniform(3.0, 48.0) for _ in range(3))
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


def _run_to_end(s: Setup, timeout: float = 150.0) -> None:
    """Start a collector, wait until it committed everything, stop it with SIGTERM (exit 0, < 10 s)."""
    proc = s.collector()
    s.wait_caught_up(proc, timeout=timeout)
    proc.wait_ready()
    assert proc.alive(), proc.log_tail()
    rc, took = proc.terminate()
    assert rc == 0 and took < 10.0, (rc, took, proc.log_tail())


def _produce_all(s: Setup, records: list[tuple[bytes | None, bytes | None]]) -> None:
    p = s.producer()
    for key, value in records:
        p.send(s.spans, key=key, value=value)
    p.flush(60)
    p.close()


def _bad_records(n: int, good: list[Any], rng: random.Random) -> list[tuple[str, bytes | None]]:
    """``n`` malformed records of many kinds (kind, value)."""
    from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

    out: list[tuple[str, bytes | None]] = []
    kinds = ["garbage", "truncated", "utf8", "oversized", "no_trace_id", "bad_span_id", "no_end", "json_garbage",
             "json_types", "empty", "null", "empty_batch"]  # fmt: skip
    for k in range(n):
        kind = kinds[k % len(kinds)]
        t = make_trace(100_000 + k, seed="fuzz-bad", n_chunks=2, chunk_chars=60, rng=random.Random(k))
        whole = traces_data([(t.service, t.spans)])
        if kind == "garbage":
            value: bytes | None = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 400)))
        elif kind == "truncated":
            value = whole[: rng.randint(5, len(whole) - 5)]
        elif kind == "utf8":
            t.spans[-1].attributes[2].value.string_value = "MARKERMARKER"
            raw = traces_data([(t.service, t.spans)])
            value = raw.replace(b"MARKERMARKER", b"\xff\xfe\xc3\x28bad\xa0\xa1utf8")
        elif kind == "oversized":
            t.spans[-1].attributes[2].value.string_value = "x" * 70_000
            value = traces_data([(t.service, t.spans)])
        elif kind == "no_trace_id":
            for sp in t.spans:
                sp.trace_id = b""
            value = traces_data([(t.service, t.spans)])
        elif kind == "bad_span_id":
            for sp in t.spans:
                sp.span_id = b"\x01\x02\x03"
            value = traces_data([(t.service, t.spans)])
        elif kind == "no_end":
            for sp in t.spans:
                sp.end_time_unix_nano = 0
            value = traces_data([(t.service, t.spans)])
        elif kind == "json_garbage":
            value = b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz'
        elif kind == "json_types":
            value = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
                {"traceId": "ab" * 16, "spanId": 12345, "name": ["not", "a", "string"], "startTimeUnixNano": "x"}
            ]}]}]}).encode()  # fmt: skip
        elif kind == "empty":
            value = b""
        elif kind == "null":
            value = None
        else:
            value = TracesData().SerializeToString() + b"\x0a\x00"
        out.append((kind, value))
    return out


def test_fuzz_malformed_records_are_dead_lettered_and_good_traces_all_stored(setup_factory: Any) -> None:
    """5,000 malformed records mixed into 5,000 good traces."""
    rng = random.Random(7)
    s = setup_factory(limits={"max_attribute_chars": 65_536}, sampling={"rate": 0.0, "rules": []})
    good = [
        make_trace(i, seed="fuzz", n_chunks=3, chunk_chars=100, rng=random.Random(i)) for i in range(5_000)
    ]
    bad = _bad_records(5_000, good, rng)
    records: list[tuple[bytes | None, bytes | None]] = [
        (t.hex.encode(), traces_data([(t.service, t.spans)])) for t in good
    ]
    for kind, value in bad:
        records.insert(rng.randrange(len(records) + 1), (f"bad-{kind}".encode(), value))
    proc = s.collector()
    _produce_all(s, records)
    s.wait_caught_up(proc, timeout=150)
    url = proc.wait_ready()

    with urllib.request.urlopen(url + "/healthz", timeout=5) as resp:
        assert resp.status == 200
    with urllib.request.urlopen(url + "/metrics", timeout=5) as resp:
        metrics = resp.read().decode()
    assert proc.alive(), "the collector exited on malformed input"
    rc, took = proc.terminate()
    assert rc == 0 and took < 10.0, (rc, took)

    dead = s.read_topic(s.dead)
    assert len(dead) == 5_000, len(dead)
    by_kind: dict[str, int] = {}
    for rec in dead:
        headers = dict(rec.headers)
        reason = headers.get("ragpulse.reason", b"").decode()
        assert reason, rec
        assert rec.key.decode().startswith("bad-"), (rec.key, reason)
        assert headers.get("ragpulse.source", b"").decode().startswith(s.spans + "/")
        by_kind[rec.key.decode()] = by_kind.get(rec.key.decode(), 0) + 1
    assert sum(by_kind.values()) == 5_000 and len(by_kind) == 12, by_kind
    values = sorted((v or b"") for _, v in bad)
    assert sorted((r.value or b"") for r in dead) == values
    assert 'ragpulse_deadlettered_total{kind="undecodable"}' in metrics
    assert "ragpulse_consumer_lag{partition=" in metrics and "ragpulse_batch_seconds_count" in metrics
    st = s.storage()
    try:
        rows = st.query("SELECT trace_id, complete, span_count FROM {db}.rag_traces FINAL")
    finally:
        st.close()
    stored = {r[0]: r for r in rows}
    good_ids = {t.hex for t in good}
    assert good_ids <= stored.keys()
    assert all(stored[t.hex][1:] == (1, len(t.spans)) for t in good)
    # A record with some invalid spans is dead-lettered and its valid spans still processed:
    # only the oversized-root records have valid spans (their children), stored as incomplete.
    oversized = {
        make_trace(100_000 + k, seed="fuzz-bad", n_chunks=2, chunk_chars=60, rng=random.Random(k)).hex
        for k, (kind, _) in enumerate(bad)
        if kind == "oversized"
    }
    extra = stored.keys() - good_ids
    assert extra == oversized, (len(extra), len(oversized))
    assert all(stored[h][1:] == (0, 2) for h in extra)
    assert f'ragpulse_traces_sampled_total{{reason="unsampled",sampled="0"}} {float(len(stored))}' in metrics


def _spread_traces(n: int, seed: str) -> list[Any]:
    """``n`` traces over 40 minutes of trace time: 10 busy minutes (1,400/min), 30 quiet ones."""
    from ragpulse.collector.demo.synthetic import BASE_TIME_NS

    minute = 60_000_000_000
    base = (BASE_TIME_NS // minute - 45) * minute
    traces = []
    busy = 14_000
    for i in range(n):
        if i < busy:
            start = base + (i // 1_400) * minute + (i % 1_400) * 40_000_000
        else:
            j = i - busy
            start = base + (10 + j // 200) * minute + (j % 200) * 250_000_000
        traces.append(
            make_trace(i, seed=seed, n_chunks=2, chunk_chars=60, rng=random.Random(i), start_ns=start,
                       risk="high" if i % 20 == 7 else "low")
        )  # fmt: skip
    return traces


def test_sampling_rate_rules_budget_and_identical_decisions_on_replay(setup_factory: Any) -> None:
    """Base rate 0.1 + an always-rule over 20,000 traces; a per-minute budget; replay keeps decisions."""
    sampling = {
        "rate": 0.1,
        "seed": "sampling-test",
        "budget_per_minute": 60,
        "rules": [{"name": "high_risk", "action": "always", "match": {"risk_level": ["high"]}}],
    }
    s = setup_factory(sampling=sampling)
    traces = _spread_traces(20_000, "sampling")
    _produce_all(s, [(t.hex.encode(), traces_data([(t.service, t.spans)])) for t in traces])
    _run_to_end(s)

    def decisions() -> dict[str, tuple[int, str, int]]:
        st = s.storage()
        try:
            rows = st.query(
                "SELECT trace_id, sampled, sampled_reason, toUnixTimestamp(toStartOfMinute(time)) FROM {db}.rag_traces FINAL"
            )
        finally:
            st.close()
        return {r[0]: (r[1], r[2], r[3]) for r in rows}

    first = decisions()
    assert len(first) == 20_000
    rule = {t.hex for t in traces if t.risk == "high"}
    assert all(first[h][:2] == (1, "rule:high_risk") for h in rule)
    rest = [h for h in first if h not in rule]
    chosen = [h for h in rest if first[h][1] in ("rate", "budget")]
    fraction = len(chosen) / len(rest)
    assert 0.09 <= fraction <= 0.11, fraction
    policy_hash = {h: trace_hash(h, "sampling-test") < 0.1 for h in rest}
    assert set(chosen) == {h for h, hit in policy_hash.items() if hit}
    per_minute: dict[int, list[str]] = {}
    for _h, (sampled, reason, minute) in first.items():
        per_minute.setdefault(minute, []).append(reason if sampled else "-" + reason)
    assert len(per_minute) == 40
    busy_minutes = 0
    for reasons in per_minute.values():
        assert reasons.count("rate") <= 60, reasons.count("rate")
        if reasons.count("-budget"):
            busy_minutes += 1
            assert reasons.count("rate") == 60
    assert busy_minutes == 10
    judge_ids = {r.key.decode() for r in s.read_topic(s.judge)}
    assert judge_ids == {h for h, d in first.items() if d[0]}

    # Replay: a new consumer group re-reads the topic into the same database.
    s.config["kafka"]["group_id"] += "-replay"
    s.config_path.write_text(yaml.safe_dump(s.config))
    _run_to_end(s)
    assert decisions() == first
    assert {r.key.decode() for r in s.read_topic(s.judge)} == judge_ids

    # A fresh database over the same topic: rate and rule decisions are the same (hash of the trace id).
    fresh = SamplingPolicy.from_config(sampling)
    assert fresh.rate == 0.1 and len(fresh.rules) == 1


def _sdk_traces() -> tuple[list[Any], dict[str, dict[str, Any]]]:
    """Spans from the real OTel SDK in three instrumentation styles, and what each trace must store."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import Status, StatusCode

    exporter = InMemorySpanExporter()
    expected: dict[str, dict[str, Any]] = {}
    for service in ("ragpulse-app", "langchain-app", "openllmetry-app"):
        provider = TracerProvider(resource=Resource.create({"service.name": service}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        tracer = provider.get_tracer("interop")
        for i in range(30):
            q, a = f"{service} question {i}?", f"{service} answer {i} [1]."
            if service == "ragpulse-app":
                with tracer.start_as_current_span("rag", attributes={
                    "openinference.span.kind": "CHAIN", "rag.root": True, "input.value": q, "output.value": a,
                    "rag.risk_level": "low",
                }) as root:  # fmt: skip
                    with tracer.start_as_current_span("retrieve", attributes={
                        "openinference.span.kind": "RETRIEVER", "gen_ai.operation.name": "retrieval",
                        "retrieval.documents.0.document.id": f"D{i}", "retrieval.documents.0.document.content": "text",
                        "retrieval.documents.0.document.score": 0.7, "retrieval.documents.1.document.id": f"E{i}",
                        "retrieval.documents.1.document.content": "more", "retrieval.documents.1.document.score": 0.5,
                    }):  # fmt: skip
                        pass
                    with tracer.start_as_current_span("llm", attributes={
                        "openinference.span.kind": "LLM", "gen_ai.operation.name": "chat", "gen_ai.request.model": "m1",
                        "gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 5,
                    }):  # fmt: skip
                        pass
                    root.add_event("rag.citation", {"rag.citation.document.id": f"D{i}", "rag.citation.marker": "[1]",
                                                    "rag.citation.answer.start": 0, "rag.citation.answer.end": len(a) - 4})  # fmt: skip
                    tid = format(root.get_span_context().trace_id, "032x")
                expected[tid] = {"service": service, "source": "ragpulse", "query": q, "answer": a,
                                 "chunks": [f"D{i}", f"E{i}"], "citations": 1, "model": "m1"}  # fmt: skip
            elif service == "langchain-app":
                # OpenInference (LangChain instrumentor): CHAIN root without rag.*, LLM messages.
                with tracer.start_as_current_span("RetrievalQA", attributes={
                    "openinference.span.kind": "CHAIN", "input.value": q, "output.value": a,
                }) as root:  # fmt: skip
                    with tracer.start_as_current_span("VectorStoreRetriever", attributes={
                        "openinference.span.kind": "RETRIEVER", "input.value": q,
                        "retrieval.documents.0.document.id": f"L{i}", "retrieval.documents.0.document.content": "doc",
                        "retrieval.documents.0.document.metadata": json.dumps({"source": "kb"}),
                    }):  # fmt: skip
                        pass
                    with tracer.start_as_current_span("ChatOpenAI", attributes={
                        "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini",
                        "llm.input_messages.0.message.role": "system", "llm.input_messages.0.message.content": "sys",
                        "llm.input_messages.1.message.role": "user", "llm.input_messages.1.message.content": q,
                        "llm.output_messages.0.message.role": "assistant", "llm.output_messages.0.message.content": a,
                        "llm.token_count.prompt": 20, "llm.token_count.completion": 7,
                    }) as llm:  # fmt: skip
                        if i % 10 == 0:
                            llm.set_status(Status(StatusCode.ERROR, "rate limited"))
                    tid = format(root.get_span_context().trace_id, "032x")
                expected[tid] = {"service": service, "source": "openinference", "query": q, "answer": a,
                                 "chunks": [f"L{i}"], "citations": 1, "model": "gpt-4o-mini",
                                 "status": "error" if i % 10 == 0 else "ok"}  # fmt: skip
            else:
                # gen_ai only (OpenLLMetry style): an HTTP root and one LLM call with prompt/completion.
                with tracer.start_as_current_span("POST /ask", attributes={"http.route": "/ask"}) as root:
                    with tracer.start_as_current_span("openai.chat", attributes={
                        "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4.1", "gen_ai.prompt.0.role": "user",
                        "gen_ai.prompt.0.content": q, "gen_ai.completion.0.role": "assistant",
                        "gen_ai.completion.0.content": a, "gen_ai.usage.input_tokens": 3,
                    }):  # fmt: skip
                        pass
                    tid = format(root.get_span_context().trace_id, "032x")
                # The answer's [1] is read as a citation (of no retrieved chunk) as for any answer.
                expected[tid] = {"service": service, "source": "gen_ai", "query": q, "answer": a, "chunks": [],
                                 "citations": 1, "model": "gpt-4.1", "route": "/ask"}  # fmt: skip
    # Plain non-RAG traffic in the same batches must be ignored (not stored, not dead-lettered).
    provider = TracerProvider(resource=Resource.create({"service.name": "web"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    for _ in range(10):
        with provider.get_tracer("x").start_as_current_span(
            "GET /health", attributes={"http.route": "/health"}
        ):
            pass
    return list(exporter.get_finished_spans()), expected


def _otlp_json(request: Any) -> bytes:
    """OTLP/JSON as kafkaexporter writes it with encoding otlp_json: hex ids, camelCase."""
    import base64

    from google.protobuf.json_format import MessageToDict

    doc = MessageToDict(request)
    for rs in doc.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for sp in ss.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if sp.get(key):
                        sp[key] = base64.b64decode(sp[key]).hex()
    return json.dumps(doc).encode()


def test_interop_kafkaexporter_shaped_records(setup_factory: Any) -> None:
    """Multi-resource batches, per-trace records and otlp_json records from the real OTLP encoder."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    spans, expected = _sdk_traces()
    by_trace: dict[int, list[Any]] = {}
    for sp in spans:
        by_trace.setdefault(sp.context.trace_id, []).append(sp)
    traces = list(by_trace.values())
    records: list[tuple[bytes | None, bytes | None]] = []
    # 1) one multi-resource, multi-trace batch per third of the traffic, no key (partition_traces_by_id off)
    third = len(traces) // 3
    records.append((None, encode_spans([sp for t in traces[:third] for sp in t]).SerializeToString()))
    # 2) one record per trace keyed by trace id (partition_traces_by_id: true)
    for t in traces[third : 2 * third]:
        records.append((format(t[0].context.trace_id, "032x").encode(), encode_spans(t).SerializeToString()))
    # 3) otlp_json, per trace and one multi-trace batch
    rest = traces[2 * third :]
    for t in rest[:10]:
        records.append((format(t[0].context.trace_id, "032x").encode(), _otlp_json(encode_spans(t))))
    records.append((None, _otlp_json(encode_spans([sp for t in rest[10:] for sp in t]))))
    from tests.services import free_port

    port, grpc_port = free_port(), free_port()
    # The in-process judge consumer sometimes never finishes its first group join (kafka-python
    # 3.0.12; docs/collector.md, "Metrics, health, readiness"). With a short rebalance allowance
    # the worker notices within ~50 s and starts over with a new consumer, as in production
    # (there after ~450 s by default); the test still requires every trace to be judged.
    s = setup_factory(
        sampling={"rate": 1.0, "budget_per_minute": None},
        receiver={"enabled": True, "port": port, "grpc_enabled": True, "grpc_port": grpc_port},
        judge={"enabled": True, "judge": "local", "max_poll_interval_s": 15},
        metrics={"stall_s": 5},
    )
    _produce_all(s, records)
    # OTLP/HTTP into the same pipeline: the receiver forwards each trace to the spans topic.
    proc = s.collector(role="all")
    proc.wait_ready()
    http_traces = [make_trace(i, seed="otlp-http", service="http-app") for i in range(8)]
    body = traces_data([(t.service, t.spans) for t in http_traces], shared_resource=True)
    assert post_otlp(f"http://127.0.0.1:{port}/v1/traces", body, timeout=30)[0] == 200
    # OTLP/gRPC too: the real exporter; the intake forwards each trace to the spans topic as well.
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    grpc_spans, grpc_expected = _sdk_traces()
    exporter = OTLPSpanExporter(endpoint=f"127.0.0.1:{grpc_port}", insecure=True, timeout=30)
    assert exporter.export(grpc_spans) is SpanExportResult.SUCCESS
    exporter.shutdown()
    expected.update(grpc_expected)
    for t in http_traces:
        expected[t.hex] = {"service": "http-app", "source": "ragpulse", "query": t.query, "answer": t.answer,
                           "chunks": t.chunk_ids, "citations": 3, "model": "gpt-x"}  # fmt: skip
    s.wait_caught_up(proc, timeout=90)
    s.wait_caught_up(proc, timeout=90, judges=True)
    rc, took = proc.terminate()
    assert rc == 0 and took < 10.0, (rc, took, proc.log_tail())
    st = s.storage()
    try:
        judged = st.query(
            "SELECT count(), uniqExact(trace_id), countIf(error != ''), any(judge_id), sum(claims_total) "
            "FROM {db}.rag_judgments FINAL"
        )[0]
        claims = st.query("SELECT count() FROM {db}.rag_claims FINAL")[0][0]
        rows = st.query(
            "SELECT trace_id, service, source, query, answer, chunk_ids, length(citation_doc_ids), model, status, route "
            "FROM {db}.rag_traces FINAL"
        )
    finally:
        st.close()
    got = {r[0]: r for r in rows}
    missing = {expected[t]["service"] for t in expected.keys() - got.keys()}
    assert got.keys() == expected.keys(), (len(got), len(expected), missing)
    for tid, want in expected.items():
        _, service, source, query, answer, chunk_ids, ncit, model, status, route = got[tid]
        assert (service, source, query, answer) == (
            want["service"],
            want["source"],
            want["query"],
            want["answer"],
        )
        assert (chunk_ids, ncit, model) == (want["chunks"], want["citations"], want["model"])
        assert status == want.get("status", "ok") and route == want.get("route", "")
    assert s.read_topic(s.dead) == []
    assert {r.key.decode() for r in s.read_topic(s.judge)} == set(expected)
    # The judge workers (same process, role all) judged every sampled trace once, with the local judge.
    assert judged[:3] == (len(expected), len(expected), 0) and judged[3].startswith("local-")
    assert claims == judged[4] > 0


def test_two_collectors_in_one_group_rebalance_without_loss(setup_factory: Any) -> None:
    """Members join and leave (SIGTERM) while traffic flows; every trace is stored complete.

    Each process owns its own chDB path (a chDB database has one owner), so the
    check runs over the union of the databases.
    """
    rng = random.Random(99)
    # Production pauses while members come and go (a member's start-up under CI load can take
    # 10-20 s): the assembly timeout must outlast those pauses so split traces wait for their
    # roots. A root arriving after its trace timed out is a known gap (docs/collector.md,
    # "Assembly"): the partial is dropped as non-RAG and the root counted as late.
    s = setup_factory(sampling={"rate": 0.2, "budget_per_minute": None}, assembly={"timeout_s": 20.0})
    traces = _synth(6_000, "rebalance", rng)
    records = _records_for(traces, rng)
    expected = {t.hex: len(t.spans) for t in traces}
    dbs: list[Path] = []

    def member(k: int) -> CollectorProcess:
        cfg = json.loads(json.dumps(s.config))
        db = s.tmp / f"member{k}"
        cfg["storage"]["dsn"] = f"chdb://{db}"
        path = s.tmp / f"member{k}.yaml"
        path.write_text(yaml.safe_dump(cfg))
        dbs.append(db)
        proc = CollectorProcess(path, s.tmp / f"member{k}.log")
        s.procs.append(proc)
        proc.start()
        return proc

    a, b = member(0), member(1)
    a.wait_ready()
    b.wait_ready()
    p = s.producer()
    third = len(records) // 3
    for key, value in records[:third]:
        p.send(s.spans, key=key, value=value)
    p.flush(30)
    time.sleep(1.0)
    rc, took = a.terminate()  # leaves the group gracefully: its partition moves to b
    assert rc == 0 and took < 10.0, (rc, took, a.log_tail())
    for key, value in records[third : 2 * third]:
        p.send(s.spans, key=key, value=value)
    p.flush(30)
    c = member(2)  # joins: the partitions are split again
    c.wait_ready()
    for key, value in records[2 * third :]:
        p.send(s.spans, key=key, value=value)
    p.flush(30)
    p.close()
    s.wait_caught_up(b, timeout=120)
    for proc in (b, c):
        assert proc.alive(), proc.log_tail()
        rc, took = proc.terminate()
        assert rc == 0 and took < 10.0, (rc, took, proc.log_tail())
    seen: dict[str, int] = {}
    sampled: set[str] = set()
    for db in dbs:
        st = Storage(f"chdb://{db}")
        try:
            rows = st.query("SELECT trace_id, span_count, sampled FROM {db}.rag_traces FINAL")
            assert st.query("SELECT count() - uniqExact(trace_id) FROM {db}.rag_traces FINAL")[0][0] == 0
        finally:
            st.close()
        for tid, count, smp in rows:
            # A member that takes a partition over may replay the tail of a trace another member
            # already stored: it stores that partial assembly with a lower version. In one shared
            # ClickHouse, FINAL keeps the most complete row; across separate chDB files, the max.
            seen[tid] = max(seen.get(tid, 0), count)
            if smp:
                sampled.add(tid)
    assert seen == expected, [(t, seen.get(t), n) for t, n in expected.items() if seen.get(t) != n][:5]
    assert {r.key.decode() for r in s.read_topic(s.judge)} == sampled


def test_storage_unavailable_nothing_committed_until_it_returns(setup_factory: Any) -> None:
    """The chDB database is held by another process: the collector retries with backoff,
    commits nothing, stays alive, and stores everything once the database is free."""
    s = setup_factory(sampling={"rate": 0.0, "rules": []})
    traces = [make_trace(i, seed="unavailable", n_chunks=2, chunk_chars=60) for i in range(500)]
    _produce_all(s, [(t.hex.encode(), traces_data([(t.service, t.spans)])) for t in traces])
    with chdb_holder(s.db) as holder:
        proc = s.collector()
        deadline = time.monotonic() + 90  # start-up under load can take tens of seconds
        while "storage unavailable" not in proc.log_tail():
            assert proc.alive() and time.monotonic() < deadline, proc.log_tail()
            time.sleep(0.2)
        time.sleep(2.0)  # a few retries more, with the records fetched
        assert proc.alive(), proc.log_tail()
        assert s.committed() == {}
        release(holder)
        s.wait_caught_up(proc, timeout=90)
        proc.wait_ready()
        rc, took = proc.terminate()
        assert rc == 0 and took < 10.0, (rc, took)
    st = s.storage()
    try:
        assert st.query("SELECT count(), uniqExact(trace_id) FROM {db}.rag_traces FINAL")[0] == (500, 500)
    finally:
        st.close()
