"""Imported feedback takes the collector's path: store, then judge the unjudged traces it condemns.

``ragpulse feedback import`` hands its rows to a :class:`~.sink.FeedbackSink`
built from the collector config, exactly as the collector hands it feedback
spans: the sink stores the rows and returns the judge messages (sampling
reason ``rule:feedback``, the budget rules applied by the same sampler) of the
stored traces that negative feedback queues. Those messages then go where the
collector's own go:

- ``kafka``: to the config's judge topic, keyed by trace id, where the
  collector's judge workers judge them (the default with a ClickHouse server,
  which a Kafka deployment stores to);
- ``here``: judged in this process by the config's judge with the judge
  worker the embedded collector runs (the default with an embedded database:
  the import owns it, so no collector is judging for it meanwhile);
- ``off``: not judged (the rows are stored all the same).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.metrics import Metrics
from ..ingest.pipeline import Ingestor
from ..ingest.sampling import SamplingPolicy
from ..storage.clickhouse import Storage
from ..storage.retry import StorageRetry
from ..storage.rows import json_bytes
from .sink import FeedbackSink

__all__ = ["JUDGING", "ImportOutcome", "default_judging", "import_feedback"]

JUDGING = ("kafka", "here", "off")


@dataclass
class ImportOutcome:
    """What an import did: rows stored, traces queued for judging (and where), traces not stored."""

    stored: int = 0
    queued: list[str] = field(default_factory=list)
    judged_by: str = ""  # the judge id (here) or the topic (kafka)
    not_stored: list[str] = field(default_factory=list)


def default_judging(config: Mapping[str, Any]) -> str:
    """``here`` for an embedded database, ``kafka`` for a ClickHouse server."""
    return "here" if str(config["storage"]["dsn"]).startswith("chdb://") else "kafka"


def _judge_here(config: Mapping[str, Any], storage: Storage, metrics: Metrics, messages: list[dict]) -> str:
    from ..judge.service.worker import JudgeWorker, load_judge

    judge = load_judge(config["judge"]["judge"], config["judge"]["settings"])
    worker = JudgeWorker(judge, storage, metrics)
    size = int(config["judge"]["batch_size"])
    for i in range(0, len(messages), size):
        worker.store(worker.judge_messages(messages[i : i + size]))
    return judge.judge_id


def _send_to_kafka(config: Mapping[str, Any], messages: list[dict]) -> str:
    from kafka import KafkaProducer

    from ..kafka.clients import kafka_client_settings

    topic = config["kafka"]["judge_topic"]
    producer = KafkaProducer(**kafka_client_settings(dict(config)), acks="all")
    try:
        futures = [producer.send(topic, key=m["trace_id"].encode(), value=json_bytes(m)) for m in messages]
        for f in futures:
            f.get(timeout=30)  # acknowledged, or the import fails (the rows are stored; rerun it)
    finally:
        producer.close(timeout=10)
    return topic


def import_feedback(
    storage: Storage, config: Mapping[str, Any], rows: Sequence[dict[str, Any]], judging: str
) -> ImportOutcome:
    """Store ``rows`` (rag_feedback rows, see importer.py) and queue judging as the collector does."""
    if judging not in JUDGING:
        raise ValueError(f"judging must be one of {', '.join(JUDGING)}")
    metrics = Metrics()  # counted like the collector's, but no scrape reaches a CLI run
    give_up = lambda _delay: False  # noqa: E731 - a CLI fails at once on an outage, in one line
    policy = SamplingPolicy.from_config(config["sampling"])
    sampler = Ingestor(storage, policy, metrics, StorageRetry(metrics, give_up)).sampler
    section = {**dict(config.get("feedback") or {}), "reask": {"enabled": False}}
    if judging == "off":
        section["judge_on_negative"] = False
    sink = FeedbackSink(storage, metrics, sampler, section, give_up)
    messages = sink.store_rows(list(rows))
    out = ImportOutcome(stored=len(rows), queued=[m["trace_id"] for m in messages], not_stored=sink.pending)
    if messages:
        if judging == "here":
            out.judged_by = _judge_here(config, storage, metrics, messages)
        else:
            out.judged_by = _send_to_kafka(config, messages)
    return out
