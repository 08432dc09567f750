"""Metrics that are state, read when Prometheus scrapes instead of pushed from loops.

How many partial traces the assembler buffers, how far the consumer is behind,
how many spans arrived late: each is a number the owning object already keeps.
Pushing it into a gauge from the loop costs the loop time on every iteration
and shows a stale value while the loop is busy or stuck. A :class:`StateMetric`
is declared with the other metrics and given a reader by the loop that owns
the state (``metrics.assembly_buffer.read_from(lambda: len(assembler))``);
:class:`StateCollector`, a prometheus-client custom collector, calls the
readers on each scrape. Several loops can feed one metric, each under its own
``source`` (the ingest loop and the judge workers each report the consumer lag
of their own topic): their samples are joined. Readers run on the metrics server's thread, so they
only read plain attributes (no locks taken, no network calls); a reader that
raises leaves its metric out of that scrape.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

__all__ = ["StateMetric", "StateCollector", "Reader"]

log = logging.getLogger("ragpulse.metrics")

# Returns the value (no labels), or (label values, value) pairs (labelled metrics).
Reader = Callable[[], float | Iterable[tuple[Sequence[str], float]]]


class StateMetric:
    """A gauge or counter whose value a reader supplies at scrape time."""

    def __init__(
        self, name: str, documentation: str, labels: Sequence[str] = (), kind: str = "gauge"
    ) -> None:
        if kind not in ("gauge", "counter"):
            raise ValueError(f"kind must be gauge or counter, not {kind!r}")
        self.name = name
        self.documentation = documentation
        self.labels = tuple(labels)
        self.kind = kind
        self._reads: dict[str, Reader] = {}

    def read_from(self, read: Reader | None, source: str = "") -> None:
        """Attach (or, with None, detach) the reader of the owning loop ``source``; a labelled
        metric may have several sources, whose samples are joined."""
        if read is None:
            self._reads.pop(source, None)
        elif source not in self._reads and self._reads and not self.labels:
            raise ValueError(f"{self.name} has no labels: one source only")
        else:
            self._reads[source] = read

    def family(self, with_samples: bool = True) -> Metric:
        """The metric family; its samples come from the readers (none without one). A reader
        that raises leaves its own samples out and the others in."""
        cls = GaugeMetricFamily if self.kind == "gauge" else CounterMetricFamily
        family = cls(self.name, self.documentation, labels=self.labels)
        reads = list(self._reads.items()) if with_samples else []
        failed: list[str] = []
        for source, read in reads:
            try:
                value = read()
                if not self.labels:
                    family.add_metric([], float(value))  # type: ignore[arg-type]
                    continue
                samples = [([str(x) for x in labels], float(v)) for labels, v in value]  # type: ignore[union-attr]
            except Exception:  # noqa: BLE001 - a scrape must not fail for one reader
                log.debug("reading %s from %r failed", self.name, source, exc_info=True)
                failed.append(source)
                continue
            for label_values, v in samples:
                family.add_metric(label_values, v)
        if failed and len(failed) == len(reads):
            raise RuntimeError(f"every reader of {self.name} failed")
        return family


class StateCollector(Collector):
    """Yields the :class:`StateMetric` families on each scrape."""

    def __init__(self, metrics: Sequence[StateMetric]) -> None:
        self.metrics = tuple(metrics)

    def describe(self) -> Iterator[Metric]:
        """The names, without calling readers (the registry checks names at registration)."""
        for m in self.metrics:
            yield m.family(with_samples=False)

    def collect(self) -> Iterator[Metric]:
        for m in self.metrics:
            try:
                family = m.family()
            except Exception:  # noqa: BLE001 - a scrape must not fail for one metric
                continue  # every reader failed (each logged): the metric is left out
            yield family
