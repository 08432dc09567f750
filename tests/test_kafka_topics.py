"""The collector's topics on a broker that has never seen them: ``ragpulse collect`` creates
them at start and logs no ERROR line for them (kafka-python logs one per metadata refresh for a
subscribed topic that does not exist), against the real test broker."""

from __future__ import annotations

import logging
import time
import uuid
from pathlib import Path

import pytest
import yaml
from ragpulse.collector.kafka.topics import quiet_missing_topics

from tests.services import KafkaBroker
from tests.test_collector_kafka import CollectorProcess

pytestmark = pytest.mark.services


def test_a_fresh_start_creates_the_topics_and_logs_no_error(
    kafka_broker: KafkaBroker, tmp_path: Path
) -> None:
    from kafka import KafkaAdminClient

    suffix = uuid.uuid4().hex[:8]
    topics = {"spans_topic": f"fresh-spans-{suffix}", "judge_topic": f"fresh-judge-{suffix}",
              "deadletter_topic": f"fresh-dead-{suffix}"}  # fmt: skip
    config = {
        "kafka": {"bootstrap_servers": kafka_broker.bootstrap, "group_id": f"c-{suffix}",
                  "judge_group_id": f"j-{suffix}", **topics},
        "storage": {"dsn": f"chdb://{tmp_path / 'chdb'}"},
        "metrics": {"port": 0},
        "judge": {"enabled": True, "judge": "local"},
    }  # fmt: skip
    path = tmp_path / "collector.yaml"
    path.write_text(yaml.safe_dump(config))
    proc = CollectorProcess(path, tmp_path / "collector.log", role="all")
    proc.start()
    try:
        proc.wait_ready(90)
        time.sleep(3.0)  # a few metadata refreshes of the judge consumer
        rc, _ = proc.terminate()
    finally:
        proc.cleanup()
    log = (tmp_path / "collector.log").read_text(errors="replace")
    assert rc == 0, log[-4000:]
    errors = [line for line in log.splitlines() if "ERROR" in line]
    assert not errors, "\n".join(errors)
    admin = KafkaAdminClient(bootstrap_servers=kafka_broker.bootstrap)
    try:
        assert set(topics.values()) <= set(admin.list_topics())
    finally:
        admin.close()


def test_missing_topic_errors_become_one_info_line_and_others_stay_errors(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cluster = logging.getLogger("kafka.cluster")
    filt = quiet_missing_topics({"kafka": {"spans_topic": "s", "judge_topic": "j", "deadletter_topic": "d"}})
    try:
        with caplog.at_level(logging.INFO, logger="kafka.cluster"):
            for _ in range(5):
                cluster.error("Topic %s not found in cluster metadata", "j")
            cluster.error("Topic %s not found in cluster metadata", "someone-elses")
    finally:
        cluster.removeFilter(filt)
    ours = [r for r in caplog.records if "j" in r.getMessage().split()]
    assert [(r.levelname, r.getMessage()) for r in ours] == [
        ("INFO", "topic j does not exist yet; waiting until it is created or written")
    ]
    others = [r for r in caplog.records if "someone-elses" in r.getMessage()]
    assert [r.levelname for r in others] == ["ERROR"]
