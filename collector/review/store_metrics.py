"""The review metrics on the collector's ``/metrics``, read from the store.

``RagpulseJudgeHumanAgreementLow`` and the *Judge health* dashboard's *Human review* row read
``ragpulse_judge_human_agreement``, ``ragpulse_judge_human_labels``,
``ragpulse_review_backlog`` and ``ragpulse_reviews_total``. The review server serves them
while it runs; a deployment scrapes the collector, so the collector serves them too, from the
labels in ``rag_reviews`` (every reviewer's, whichever server saved them):

- agreement and its label count: the review server's gauges, over the latest
  ``agreement_window`` claim labels per service and judge (:meth:`.store.ReviewStore.agreement`);
- ``ragpulse_review_backlog{queue="judgments"}``: per service, traces judged without error
  that have no trace label (the collector reads no eval set: proposed cases are counted by
  the review server alone);
- ``ragpulse_reviews_total{source="store"}``: the labels stored, by service, queue and label.

The store is read when Prometheus scrapes, at most once per ``refresh_s`` seconds: a scrape
in between (another Prometheus, a replica's) gets the last read, and a scrape that arrives
while another reads waits for that read rather than starting its own. A failed read yields
no review samples; the rest of the scrape is unaffected.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from prometheus_client.core import Metric
from prometheus_client.registry import CollectorRegistry

from ..core.throttled_read import StoreCollector
from ..storage.clickhouse import Storage
from .metrics import store_families
from .store import ReviewStore

__all__ = ["StoreReviewMetrics", "register_review_metrics"]


class StoreReviewMetrics(StoreCollector):
    """A prometheus-client collector of the review families, read through ``store``."""

    def __init__(
        self,
        store: ReviewStore,
        agreement_window: int = 200,
        refresh_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.window = int(agreement_window)
        super().__init__("review metrics", refresh_s, clock)

    def _read(self) -> dict[str, Any]:
        backlog = {(svc, "judgments"): n for svc, n in self.store.unlabelled_traces().items()}
        return {
            "agreement": self.store.agreement(self.window),
            "backlog": backlog,
            "labels": self.store.label_counts(),
        }

    def data(self) -> dict[str, Any]:
        """The last read, made again first when it is older than ``refresh_s`` (``{}`` when it failed)."""
        return self.latest() or {}

    def collect(self) -> Iterator[Metric]:
        yield from store_families(self.data())


def register_review_metrics(
    registry: CollectorRegistry, storage: Storage, settings: Mapping[str, Any]
) -> StoreReviewMetrics | None:
    """Serve the review metrics from ``storage`` on ``registry`` (the collector config's
    ``review_metrics`` section: ``enabled``, ``agreement_window``, ``refresh_s``); None when off."""
    if not settings.get("enabled", True):
        return None
    metrics = StoreReviewMetrics(
        ReviewStore(storage),
        int(settings.get("agreement_window", 200)),
        float(settings.get("refresh_s", 30.0)),
    )
    registry.register(metrics)
    return metrics
