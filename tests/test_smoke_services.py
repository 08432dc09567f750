"""Smoke tests: each real component runs on this machine."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest

from tests.services import KafkaBroker


@pytest.mark.services
def test_kafka_produce_consume_1000_with_consumer_group(kafka_broker: KafkaBroker) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    topic = f"smoke-{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(topic, partitions=2)
    producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap, acks="all", linger_ms=5)
    for i in range(1000):
        producer.send(topic, key=f"k{i % 17}".encode(), value=f"v{i}".encode())
    producer.flush(30)
    producer.close()

    group = f"smoke-group-{uuid.uuid4().hex[:6]}"
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=kafka_broker.bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=15000,
    )
    seen: set[bytes] = set()
    for record in consumer:
        seen.add(record.value)
        if len(seen) == 1000:
            break
    consumer.commit()
    # The collector's liveness watch reads kafka-python's (private) member state: a joined
    # member must read as not rebalancing, through the attribute path the watch uses.
    from kafka.structs import MemberState
    from ragpulse.collector.kafka.liveness import rebalancing

    assert consumer._coordinator.state == MemberState.STABLE
    assert rebalancing(consumer) is False
    consumer._coordinator.state = MemberState.REBALANCING  # what a join in progress looks like
    assert rebalancing(consumer) is True
    consumer._coordinator.state = MemberState.STABLE
    assignment = consumer.assignment()
    committed = {tp: consumer.committed(tp) for tp in assignment}
    end = consumer.end_offsets(list(assignment))
    consumer.close()

    assert seen == {f"v{i}".encode() for i in range(1000)}
    assert len(assignment) == 2
    assert committed == end and sum(end.values()) == 1000

    # A new member of the same group resumes from the committed offsets: nothing to read.
    again = KafkaConsumer(
        bootstrap_servers=kafka_broker.bootstrap,
        group_id=group,
        enable_auto_commit=False,
        consumer_timeout_ms=3000,
    )
    parts = [TopicPartition(topic, p) for p in (0, 1)]
    again.assign(parts)
    assert {tp: again.committed(tp) for tp in parts} == end
    assert list(again) == []
    again.close()
    assert isinstance(OffsetAndMetadata, type)


def test_chdb_mergetree_through_clickhouse_connect(tmp_path: Path) -> None:
    import clickhouse_connect

    client = clickhouse_connect.get_client(dsn=f"chdb:///{tmp_path / 'db'}")
    try:
        client.command("CREATE DATABASE IF NOT EXISTS smoke")
        client.command(
            "CREATE TABLE smoke.t (id UInt32, name String, score Float64) ENGINE = MergeTree ORDER BY id"
        )
        rows = [(i, f"n{i}", i / 10) for i in range(1000)]
        client.insert("smoke.t", rows, column_names=["id", "name", "score"])
        result = client.query("SELECT count(), sum(id), round(avg(score), 4) FROM smoke.t")
        assert result.result_rows[0] == (1000, sum(range(1000)), round(sum(r[2] for r in rows) / 1000, 4))
    finally:
        client.close()


@pytest.mark.services
def test_promtool_checks_and_unit_tests_a_rule(promtool: str, tmp_path: Path) -> None:
    rules = tmp_path / "rules.yml"
    rules.write_text(
        """groups:
  - name: smoke
    rules:
      - alert: SmokeHigh
        expr: smoke_value > 1
        for: 1m
        labels: {severity: warning}
"""
    )
    check = subprocess.run([promtool, "check", "rules", str(rules)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    test = tmp_path / "rules_test.yml"
    test.write_text(
        """rule_files: [rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: smoke_value
        values: 2 2 2 2
    alert_rule_test:
      - eval_time: 3m
        alertname: SmokeHigh
        exp_alerts:
          - exp_labels: {severity: warning}
"""
    )
    run = subprocess.run([promtool, "test", "rules", str(test)], capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    broken = tmp_path / "broken.yml"
    broken.write_text("groups:\n  - name: x\n    rules:\n      - alert: X\n        expr: sum(\n")
    assert subprocess.run([promtool, "check", "rules", str(broken)], capture_output=True).returncode != 0


@pytest.mark.services
def test_helm_version_runs(helm: str) -> None:
    out = subprocess.run([helm, "version", "--short"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("v3.22.0")
