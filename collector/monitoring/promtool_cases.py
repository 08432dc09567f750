"""What every promtool test group of the mixin's alerts is made of (:mod:`.rule_tests` renders
them; :mod:`.pipeline_rule_tests` and :mod:`.variant_rule_tests` write the pipeline's and the
variants' cases): the labels the input series carry, a test group (:class:`Case`) and an alert
expected to fire (:class:`Expect`), and promtool's notation for series and their values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["Case", "Expect", "counter", "gauge", "series", "SERVICE", "JUDGE", "SCRAPE"]

SERVICE = "policy-assistant"
JUDGE = "local-1.0:test"
#: Target labels Prometheus adds to everything it scrapes from the collector.
SCRAPE = {"job": "ragpulse", "instance": "collector:9464"}


@dataclass(frozen=True)
class Expect:
    """One alert expected to fire: the labels its rule adds, the series labels it keeps, its value."""

    rule_labels: Mapping[str, str]
    labels: Mapping[str, str]
    value: float | None = None


@dataclass
class Case:
    """One promtool test group: input series and, per eval time, the alerts expected to fire."""

    name: str
    interval: str
    series: list[tuple[str, str]]
    checks: list[tuple[str, str, list[Expect]]] = field(default_factory=list)


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.10g}"


def counter(*segments: tuple[float, int]) -> str:
    """promtool values for a counter from 0 rising by ``inc`` per step for ``steps`` steps, per segment.

    One segment is written in promtool's expanding notation; several are written sample by sample,
    because promtool sums fractional increments with float error and a next segment written from
    the exact value could then read as a (tiny) counter reset.
    """
    if len(segments) == 1:
        inc, steps = segments[0]
        return f"0+{_fmt(inc)}x{steps}"
    values, total = [0.0], 0.0
    for inc, steps in segments:
        for _ in range(steps):
            total += inc
            values.append(round(total, 6))
    return " ".join(_fmt(v) for v in values)


def gauge(*segments: tuple[float | None, int]) -> str:
    """promtool values for a level held for ``steps`` samples per segment (None = no sample)."""
    return " ".join(" ".join(["_"] * n) if v is None else f"{_fmt(v)}x{n - 1}" for v, n in segments)


def series(metric: str, labels: Mapping[str, str]) -> str:
    """A series in promtool's input notation."""
    inner = ",".join(f'{k}="{v}"' for k, v in labels.items())
    return f"{metric}{{{inner}}}"
