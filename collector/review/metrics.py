"""The review server's Prometheus metrics (its ``/metrics``; docs/review.md).

- ``ragpulse_reviews_total{service, queue, verdict}``: decisions saved. Queue
  ``cases``: ``accepted`` / ``edited`` / ``rejected``; queue ``judgments``: one
  per claim label (``supported`` / ``unsupported`` / ``contradicted``) and per
  trace label (``faithful`` / ``unfaithful``).
- ``ragpulse_judge_human_agreement{service, judge}``: over the latest N claim
  labels per service and judge, the share where the judge's verdict (supported
  or not) equals the reviewer's; ``ragpulse_judge_human_labels{service, judge}``
  is that N (the alert's volume guard).
- ``ragpulse_review_backlog{service, queue}``: eval cases still ``proposed``
  and judged traces without a trace label.

Gauges are read from the store at scrape time, so they hold every reviewer's
labels, whichever server saved them; a failed read yields no sample rather
than an error (the scrape still returns the counters). The collector serves the
same gauges from the store (:mod:`.store_metrics`, :func:`store_families`), so
the alert and the dashboard work where no review server runs; its
``ragpulse_reviews_total`` carries ``source="store"`` (the labels stored,
not the decisions one server saw).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

__all__ = ["ReviewMetrics", "store_families"]

log = logging.getLogger(__name__)


def store_families(data: dict[str, Any]) -> Iterator[Metric]:
    """The families read from the store, from ``data`` as a reader returns it: ``agreement``
    ((service, judge, share, labels) tuples), ``backlog`` ({(service, queue): count}) and, for
    the collector (:mod:`.store_metrics`), ``labels`` ({(service, queue, verdict): count}: the
    labels stored, served as ``ragpulse_reviews_total{source="store"}``)."""
    agree = GaugeMetricFamily(
        "ragpulse_judge_human_agreement",
        "Share of the latest claim labels where the judge's verdict equals the reviewer's",
        labels=["service", "judge"],
    )
    n = GaugeMetricFamily(
        "ragpulse_judge_human_labels",
        "Claim labels behind ragpulse_judge_human_agreement",
        labels=["service", "judge"],
    )
    backlog = GaugeMetricFamily(
        "ragpulse_review_backlog", "Items waiting for a reviewer", labels=["service", "queue"]
    )
    for service, judge, share, count in data.get("agreement", []):
        agree.add_metric([service, judge], share)
        n.add_metric([service, judge], count)
    for (service, queue), count in sorted(data.get("backlog", {}).items()):
        backlog.add_metric([service, queue], count)
    yield agree
    yield n
    yield backlog
    if "labels" in data:
        stored = CounterMetricFamily(
            "ragpulse_reviews",
            "Review labels stored in rag_reviews (the latest label of each claim and trace)",
            labels=["service", "queue", "verdict", "source"],
        )
        for (service, queue, verdict), count in sorted(data["labels"].items()):
            stored.add_metric([service, queue, verdict, "store"], count)
        yield stored


class _StoreGauges(Collector):
    def __init__(self, read: Callable[[], dict[str, Any]]) -> None:
        self.read = read

    def collect(self) -> Iterator[Metric]:
        try:
            data = self.read()
        except Exception:  # noqa: BLE001 - a scrape never fails on a store read
            log.warning("review metrics: reading the store failed", exc_info=True)
            data = {}
        yield from store_families(data)


class ReviewMetrics:
    """A registry of its own (the server's ``/metrics``) with the counter and the store gauges."""

    def __init__(self, read: Callable[[], dict[str, Any]]) -> None:
        self.registry = CollectorRegistry()
        self.reviews = Counter(
            "ragpulse_reviews",
            "Review decisions saved",
            ["service", "queue", "verdict"],
            registry=self.registry,
        )
        self.registry.register(_StoreGauges(read))

    def count(self, service: str, queue: str, verdict: str, n: int = 1) -> None:
        self.reviews.labels(service or "unknown", queue, verdict).inc(n)
