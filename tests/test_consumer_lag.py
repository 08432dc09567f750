"""``ragpulse_consumer_lag`` of the judge topic, against a real broker.

A judge worker (:class:`KafkaJudgeService`, the loop ``ragpulse collect`` runs) consumes a
judge topic holding ``N`` messages with the real local judge, held behind a gate while it
judges its first batch: its consumer has read exactly one batch (``judge.batch_size``
records), so the lag it reports for the partitions it has read must be their end offsets on
the broker less that batch. Once the gate opens and every message is judged and committed,
both partitions report 0. The ingest loop's lag (the spans topic) is the same function
(collector/kafka/lag.py) and is read beside it, each loop under its own source.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from ragpulse.collector.config import load_config
from ragpulse.collector.core.metrics import Metrics
from ragpulse.collector.judge.service.kafka_loop import KafkaJudgeService
from ragpulse.collector.judge.service.worker import load_judge
from ragpulse.collector.storage.clickhouse import Storage

from tests.judge_records import record
from tests.test_collector_kafka import Setup, setup_factory  # noqa: F401 - the fixture

pytestmark = pytest.mark.services

N = 120
BATCH = 25


class GatedJudge:
    """The local judge, after ``gate`` opens; ``entered`` is set when the first record arrives."""

    def __init__(self) -> None:
        self.inner = load_judge("local")
        self.judge_id = self.inner.judge_id
        self.gate = threading.Event()
        self.entered = threading.Event()

    def judge(self, message: dict[str, Any]) -> dict[str, Any]:
        self.entered.set()
        assert self.gate.wait(120), "the test never opened the gate"
        return self.inner.judge(message)


def _judge_lag(metrics: Metrics, topic: str) -> dict[str, float]:
    from prometheus_client.parser import text_string_to_metric_families

    out = {}
    for family in text_string_to_metric_families(metrics.render().decode()):
        for s in family.samples:
            if s.name == "ragpulse_consumer_lag" and s.labels["topic"] == topic:
                out[s.labels["partition"]] = s.value
    return out


def _until(check: Any, timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if result := check():
            return result
        time.sleep(0.2)
    raise AssertionError(f"not reached within {timeout:.0f}s")


def test_judge_topic_lag_is_exported_per_partition_and_matches_the_broker(
    setup_factory: Any,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
) -> None:
    s: Setup = setup_factory(judge={"enabled": True, "batch_size": BATCH})
    config = load_config(s.config_path)
    producer = s.producer()
    for i in range(N):
        msg = record(f"Refunds take {i % 7 + 3} days [1].", "Refunds take 5 days.", query="refunds?")
        producer.send(
            s.judge, key=f"{i:032x}".encode(), value=json.dumps({**msg, "trace_id": f"{i:032x}"}).encode()
        )
    producer.flush(60)
    producer.close()
    end = s.end_offsets(s.judge)
    assert sum(end.values()) == N and all(end.values())  # both partitions hold messages

    metrics = Metrics()
    metrics.consumer_lag.read_from(lambda: [(("spans-topic", "0"), 4)])  # the ingest loop's own source
    storage = Storage(f"chdb://{tmp_path / 'db'}")
    storage.apply_schema()
    judge = GatedJudge()
    service = KafkaJudgeService(config, judge, storage, metrics).start()
    try:
        assert judge.entered.wait(120), "the judge worker read nothing"
        lag = _until(lambda: _judge_lag(metrics, s.judge), 30)
        # Held on its first batch: what it has read is that batch, from the partitions it reports.
        assert set(lag) <= {"0", "1"}
        assert sum(lag.values()) == sum(end[int(p)] for p in lag) - BATCH, (lag, end)
        assert _judge_lag(metrics, "spans-topic") == {"0": 4.0}  # both sources in one scrape
        judge.gate.set()
        _until(lambda: _judge_lag(metrics, s.judge) == {"0": 0.0, "1": 0.0}, 120)
        committed = _until(
            lambda: (c := s.committed(config["kafka"]["judge_group_id"], s.judge)) == end and c, 60
        )
        assert committed == end
    finally:
        judge.gate.set()
        service.stop(timeout=30)
        storage.close()
    assert not service.alive()
    assert _judge_lag(metrics, s.judge) == {}  # the stopped worker's reader is detached
    assert _judge_lag(metrics, "spans-topic") == {"0": 4.0}
