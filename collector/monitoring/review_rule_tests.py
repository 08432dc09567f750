"""The promtool cases of ``RagpulseJudgeHumanAgreementLow`` (``rules/tests/review_test.yaml``).

The review server's gauges as Prometheus scrapes them: low agreement with
enough labels fires, high agreement does not, low agreement on a handful of
labels does not (the volume guard), and agreement that recovers resolves.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .config import duration_seconds
from .promtool_cases import JUDGE, SERVICE, Case, Expect, gauge, series
from .review_rules import AGREEMENT, LABELS, check_review_config

__all__ = ["review_cases"]

_SCRAPE = {"job": "ragpulse-review", "instance": "review:8470"}


def _inputs(phases: list[tuple[float, int, int]]) -> list[tuple[str, str]]:
    """The two gauges for phases of (agreement, labels, minutes)."""
    labels = {"service": SERVICE, "judge": JUDGE, **_SCRAPE}
    return [
        (series(AGREEMENT, labels), gauge(*[(a, m) for a, _, m in phases])),
        (series(LABELS, labels), gauge(*[(float(n), m) for _, n, m in phases])),
    ]


def review_cases(config: Mapping[str, Any]) -> list[Case]:
    """Fires and resolves, quiet when the judge agrees, volume guard."""
    ra = check_review_config(config)
    a, rule = ra["alert"], {"severity": ra["severity"]}
    low = round(float(ra["min_agreement"]) * 0.75, 3)
    high = round(min(1.0, float(ra["min_agreement"]) + (1 - float(ra["min_agreement"])) / 2), 3)
    n, few = 2 * int(ra["min_labels"]), max(1, int(ra["min_labels"]) // 2)
    hold = int(duration_seconds(ra["for"]) // 60)
    steps = 2 * hold + 30
    fire_at = f"{hold + 10}m"
    fired = Expect(rule, {"service": SERVICE, "judge": JUDGE}, low)
    return [
        Case(f"{a} fires and resolves when agreement recovers", "1m",
             _inputs([(low, n, hold + 20), (high, n, steps)]),
             [(fire_at, a, [fired]), (f"{hold + 25}m", a, [])]),
        Case(f"{a} healthy: the judge agrees with the reviewers", "1m", _inputs([(high, n, steps)]),
             [(fire_at, a, [])]),
        Case(f"{a} volume guard: too few labels", "1m", _inputs([(low, few, steps)]),
             [(fire_at, a, [])]),
    ]  # fmt: skip
