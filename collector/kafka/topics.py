"""The collector's own topics: created at start when missing, and no ERROR lines while absent.

kafka-python logs ``ERROR kafka.cluster: Topic ... not found in cluster
metadata`` on every metadata refresh for a subscribed topic that does not
exist yet, which on a fresh broker is every start (the judge topic exists only
once the ingest side has written to it). Neither is an error: the collector
creates its three topics (spans, judge, dead letters) when it starts, with the
broker's default partition count and replication factor (KIP-464, Kafka 2.4+),
and a topic that cannot be created here (no CreateTopics permission, topics
managed by an operator) simply has not been written yet. So:

* :func:`ensure_topics` creates what is missing and returns the names it made;
  a refusal is one WARNING naming the topics to create, never an exception;
* :func:`quiet_missing_topics` turns kafka-python's per-refresh ERROR for those
  topics into one INFO line per topic (other topics' errors stay ERROR).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from .clients import kafka_client_settings

__all__ = ["collector_topics", "ensure_topics", "quiet_missing_topics"]

log = logging.getLogger("ragpulse.kafka.topics")

# kafka-python's message (kafka/cluster.py) for a topic the broker does not know.
_NOT_FOUND = "Topic %s not found in cluster metadata"


def collector_topics(config: dict[str, Any]) -> list[str]:
    """The topics the collector reads and writes: spans, judge, dead letters."""
    k = config["kafka"]
    return [k["spans_topic"], k["judge_topic"], k["deadletter_topic"]]


def ensure_topics(config: dict[str, Any]) -> list[str]:
    """Create the collector's missing topics with the broker's defaults; the names created."""
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic
    from kafka.errors import KafkaError, TopicAlreadyExistsError

    wanted = collector_topics(config)
    try:
        admin = KafkaAdminClient(**kafka_client_settings(config), client_id="ragpulse-topics")
    except KafkaError as exc:
        log.warning("cannot reach Kafka to check topics %s (%s); the consumers will retry", wanted, exc)
        return []
    try:
        missing = [t for t in wanted if t not in set(admin.list_topics())]
        created = []
        for topic in missing:  # one at a time: a topic created meanwhile must not fail the others
            try:
                admin.create_topics([NewTopic(topic, -1, -1)])
                created.append(topic)
            except TopicAlreadyExistsError:
                pass
        if created:
            log.info("created Kafka topics %s (broker default partitions and replication)", created)
        return created
    except KafkaError as exc:
        log.warning(
            "could not create Kafka topics %s (%s): create them with the partitions you need; "
            "until then the collector waits for them",
            missing,
            exc,
        )
        return []
    finally:
        admin.close()


class _MissingTopicFilter(logging.Filter):
    """Rewrites kafka-python's repeated 'not found' ERROR for our topics to one INFO per topic."""

    def __init__(self, topics: Iterable[str]) -> None:
        super().__init__()
        self.topics = set(topics)
        self.told: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg != _NOT_FOUND or not record.args:
            return True
        topic = record.args[0] if isinstance(record.args, tuple) else None
        if topic not in self.topics:
            return True
        if topic in self.told:
            return False
        self.told.add(topic)
        record.levelno, record.levelname = logging.INFO, "INFO"
        record.msg, record.args = (
            "topic %s does not exist yet; waiting until it is created or written",
            (topic,),
        )
        return True


def quiet_missing_topics(config: dict[str, Any]) -> logging.Filter:
    """Install (and return) the filter for the collector's topics on kafka-python's cluster logger."""
    filt = _MissingTopicFilter(collector_topics(config))
    logging.getLogger("kafka.cluster").addFilter(filt)
    return filt
