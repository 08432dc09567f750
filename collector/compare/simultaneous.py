"""Simultaneous bootstrap intervals over a family of metrics (Bonferroni): all right at once.

``ragpulse compare`` reports a difference and a verdict for every metric of a
candidate variant. Thirteen 95% intervals read one by one would, between two
identical configurations, show some spurious ``better`` or ``worse`` in a large
share of comparisons. Here the intervals of one comparison are a family whose
joint coverage is at least 95%: each metric's interval is its percentile
bootstrap interval at level ``1 - 0.05 / metrics`` (99.62% for 13), so by the
union bound the chance that any of them misses its true difference, and with
identical variants the chance of any verdict other than "not established", is
at most 5%. Interval and verdict stay one thing: the verdict reads the
widened interval. As these intervals end near the 0.2% and 99.8% points of
the bootstrap distribution, a family is resampled :data:`RESAMPLES` times, all
metrics from the same resamples of whole traces (one pass for the family).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["RESAMPLES", "Family", "resampled_means", "simultaneous_intervals"]

#: Default resamples of a family (about 19 resamples beyond each end of a 13-metric interval).
RESAMPLES = 10_000

#: Bootstrap counts held at once (resamples x cases), so memory stays bounded for large samples.
_CHUNK_CELLS = 4_000_000


@dataclass(frozen=True)
class Family:
    """How one comparison's intervals were made simultaneous: ``metrics`` intervals, each a
    percentile interval at ``level``, jointly right with probability at least ``confidence``."""

    confidence: float
    level: float
    metrics: int


def resampled_means(values: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(n_resamples, metrics) column means of ``values`` (cases x metrics, NaN where a metric does
    not apply) over bootstrap resamples of its rows; NaN where a resample holds no value of a
    metric. Each resample is a count per row, so all metrics' means come from one matrix product."""
    n, m = values.shape
    present = ~np.isnan(values)
    filled = np.where(present, values, 0.0)
    out = np.empty((n_resamples, m))
    chunk = max(1, _CHUNK_CELLS // max(n, 1))
    for start in range(0, n_resamples, chunk):
        k = min(chunk, n_resamples - start)
        rows = rng.integers(0, n, size=(k, n)) + (np.arange(k) * n)[:, None]
        counts = np.bincount(rows.ravel(), minlength=k * n).reshape(k, n).astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[start : start + k] = (counts @ filled) / (counts @ present)
    return out


def simultaneous_intervals(
    estimates: np.ndarray, resampled: np.ndarray, *, confidence: float = 0.95
) -> tuple[list[tuple[float, float] | None], Family]:
    """Per metric, its percentile interval at Bonferroni's level over the family.

    ``resampled`` is (resamples x metrics). The family is the metrics whose point ``estimates``
    are finite and that have at least two resampled values (a resample without a value of a
    metric, NaN there, is left out of that metric's quantiles); the others get None.
    """
    member = np.isfinite(estimates) & (np.isfinite(resampled).sum(axis=0) >= 2)
    n_member = int(member.sum())
    intervals: list[tuple[float, float] | None] = [None] * len(estimates)
    level = 1 - (1 - confidence) / max(n_member, 1)
    for j in np.flatnonzero(member):
        col = resampled[:, j]
        lo, hi = np.quantile(col[np.isfinite(col)], [(1 - level) / 2, (1 + level) / 2])
        intervals[j] = (float(lo), float(hi))
    return intervals, Family(confidence, float(level), n_member)
