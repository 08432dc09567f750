"""Metrics that are state, read when Prometheus scrapes instead of pushed from loops.

How many partial traces the assembler buffers, how far the consumer is behind,
how many spans arrived late: each is a number the owning object already keeps.
Pushing it into a gauge from the loop costs the loop time on every iteration
and shows a stale value while the loop is busy or stuck. A :class:`StateMetric`
is declared with the other metrics and given a reader by the loop that owns
the state (``metrics.assembly_buffer.read_from(lambda: len(assembler))``);
:class:`StateCollector`, a prometheus-client custom collector, calls the
readers on each scrape. Readers run on the metrics server's thread, so they
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
        self._read: Reader | None = None

    def read_from(self, read: Reader | None) -> None:
        """Attach (or, with None, detach) the reader of the owning loop."""
        self._read = read

    def family(self, with_samples: bool = True) -> Metric:
        """The metric family; its samples come from the reader (none without one)."""
        cls = GaugeMetricFamily if self.kind == "gauge" else CounterMetricFamily
        family = cls(self.name, self.documentation, labels=self.labels)
        read = self._read
        if not with_samples or read is None:
            return family
        value = read()
        if self.labels:
            for label_values, v in value:  # type: ignore[union-attr]
                family.add_metric([str(x) for x in label_values], float(v))
        else:
            family.add_metric([], float(value))  # type: ignore[arg-type]
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
            except Exception:  # noqa: BLE001 - a scrape must not fail for one reader
                log.debug("reading %s failed", m.name, exc_info=True)
                continue
            yield family
