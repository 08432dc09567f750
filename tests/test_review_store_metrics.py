"""The review metrics the collector serves from the store (review/store_metrics.py).

Labels saved through the review app's store call are read back as the agreement, label-count,
backlog and stored-label series, read at most once per refresh interval however often
Prometheus scrapes, and a store that fails to answer leaves the review series out of a scrape
instead of failing it. The collector's own ``/metrics`` serves them (the embedded collector
here; the live-demo test checks every metric the dashboards and alerts name).
"""

from __future__ import annotations

import time
import urllib.request
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from ragpulse.collector.review.labels import TRACE_LEVEL, Label
from ragpulse.collector.review.store import ReviewStore
from ragpulse.collector.review.store_metrics import StoreReviewMetrics, register_review_metrics


def _judged(storage: Any, service: str, judge: str, n: int) -> list[str]:
    """``n`` judged traces of ``service`` (judgment rows as the judge worker writes them)."""
    from ragpulse.collector.judge.service.worker import judgment_rows

    ids = [f"{service[:4]}{i:028x}" for i in range(n)]
    now = time.time_ns()  # within the tables' TTL
    rows = []
    for tid in ids:
        output = {
            "trace_id": tid,
            "judge_id": judge,
            "faithfulness": 1.0,
            "claims": [{"text": "c", "verdict": "supported"}],
        }
        rows.append(
            judgment_rows(
                {"trace_id": tid, "service": service, "span_count": 1, "time_unix_nano": now},
                output,
                judge,
                1.0,
                0,
            )[0]
        )
    storage.insert_judgments(rows)
    return ids


def _samples(registry: CollectorRegistry) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = generate_latest(registry).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
    }


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_labels_in_the_store_become_the_review_series_read_once_per_refresh(chdb_storage: Any) -> None:
    store = ReviewStore(chdb_storage)
    ids = _judged(chdb_storage, "shop", "local-x", 5)
    _judged(chdb_storage, "help", "local-x", 2)
    clock = _Clock()
    metrics = StoreReviewMetrics(store, agreement_window=3, refresh_s=30.0, clock=clock)
    registry = CollectorRegistry()
    registry.register(metrics)

    first = _samples(registry)
    assert first[("ragpulse_review_backlog", (("queue", "judgments"), ("service", "shop")))] == 5
    assert first[("ragpulse_review_backlog", (("queue", "judgments"), ("service", "help")))] == 2
    assert not any(name == "ragpulse_judge_human_agreement" for name, _ in first)

    # Four claim labels on two traces (the judge said supported each time), two trace labels;
    # bob's saved after ann's.
    ann = [
        Label(ids[0], 0, "supported", "ann", "local-x", "c", "supported"),
        Label(ids[0], TRACE_LEVEL, "faithful", "ann", "local-x", "", "faithful"),
    ]
    store.save_labels(ann, "judgments", "shop")
    bob = [
        Label(ids[1], 0, "unsupported", "bob", "local-x", "c", "supported"),
        Label(ids[1], 1, "contradicted", "bob", "local-x", "c", "supported"),
        Label(ids[1], 2, "supported", "bob", "local-x", "c", "supported"),
        Label(ids[1], TRACE_LEVEL, "unfaithful", "bob", "local-x", "", "faithful"),
    ]
    store.save_labels(bob, "judgments", "shop")
    clock.now = 29.0
    assert _samples(registry) == first and metrics.reader.reads == 1  # within the refresh: the last read
    clock.now = 30.0
    after = _samples(registry)
    assert metrics.reader.reads == 2
    judge = (("judge", "local-x"), ("service", "shop"))
    # the latest three claim labels of (shop, local-x): ids[1]'s, of which one agrees
    assert after[("ragpulse_judge_human_labels", judge)] == 3
    assert abs(after[("ragpulse_judge_human_agreement", judge)] - 1 / 3) < 1e-9
    assert after[("ragpulse_review_backlog", (("queue", "judgments"), ("service", "shop")))] == 3
    stored = {k: v for k, v in after.items() if k[0] == "ragpulse_reviews_total"}
    by_verdict = {dict(k[1])["verdict"]: v for k, v in stored.items()}
    assert all(dict(k[1])["source"] == "store" and dict(k[1])["queue"] == "judgments" for k in stored)
    assert by_verdict == {"supported": 2, "unsupported": 1, "contradicted": 1, "faithful": 1, "unfaithful": 1}


def test_a_failing_store_leaves_the_review_series_out_and_the_scrape_up(chdb_storage: Any) -> None:
    metrics = StoreReviewMetrics(ReviewStore(chdb_storage), refresh_s=0.0)
    registry = CollectorRegistry()
    registry.register(metrics)
    chdb_storage.command("DROP TABLE {db}.rag_reviews".replace("{db}", chdb_storage.database))
    samples = _samples(registry)
    assert metrics.reader.reads == 1 and not samples


def test_the_embedded_collector_serves_them_on_its_metrics_port(tmp_path: Path) -> None:
    from ragpulse.collector.embedded.collector import EmbeddedCollector

    collector = EmbeddedCollector(tmp_path / "db", metrics_port=0, judge=None)
    collector.start()
    try:
        ids = _judged(collector.storage, "shop", "local-x", 2)
        ReviewStore(collector.storage).save_labels(
            [Label(ids[0], 0, "supported", "ann", "local-x", "c", "unsupported")], "judgments", "shop"
        )
        with urllib.request.urlopen(f"{collector.metrics_url}/metrics", timeout=10) as resp:
            text = resp.read().decode()
    finally:
        collector.stop()
    samples = {s.name: s for f in text_string_to_metric_families(text) for s in f.samples}
    assert samples["ragpulse_judge_human_agreement"].value == 0.0
    assert samples["ragpulse_judge_human_labels"].value == 1
    assert samples["ragpulse_review_backlog"].value == 2
    assert samples["ragpulse_reviews_total"].labels["source"] == "store"
    assert "ragpulse_traces_stored_total" in samples  # beside the collector's own


def test_review_metrics_can_be_turned_off(chdb_storage: Any) -> None:
    registry = CollectorRegistry()
    assert register_review_metrics(registry, chdb_storage, {"enabled": False}) is None
    assert register_review_metrics(registry, chdb_storage, {"refresh_s": 5}).reader.refresh_s == 5.0
