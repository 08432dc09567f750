"""Bootstrap intervals of a mean and of a difference: paired (same cases) and unpaired.

For a metric s and the cases where both runs have a value,
``Delta_i = s_i(candidate) - s_i(baseline)`` and ``mean(Delta)`` is the
estimated change. Its 95% interval is the percentile bootstrap over cases
(scipy.stats.bootstrap, resampling the Delta_i with replacement), seeded so the
same inputs give the same interval. The verdict reads the interval in the
metric's own direction: entirely on the good side of 0 is ``better``, entirely
on the bad side ``worse``, and an interval that contains 0 is ``not
established``: the data do not show a change. Two samples of different cases
(``ragpulse compare``'s variants, which serve different queries) have no
pairs: :func:`difference_interval` resamples each side independently.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from scipy import stats

from .metrics import METRICS, MetricSpec

__all__ = ["BETTER", "WORSE", "NOT_ESTABLISHED", "mean_interval", "difference_interval", "verdict", "compare"]

BETTER, WORSE, NOT_ESTABLISHED = "better", "worse", "not established"


def mean_interval(
    deltas: np.ndarray, *, confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of mean(deltas) (paired differences, or plain per-case values
    for the interval of a mean); None with fewer than two values."""
    if len(deltas) < 2:
        return None
    if np.all(deltas == deltas[0]):  # every resample has the same mean
        return float(deltas[0]), float(deltas[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        res = stats.bootstrap(
            (deltas,),
            np.mean,
            n_resamples=n_resamples,
            confidence_level=confidence,
            method="percentile",
            vectorized=True,
            rng=np.random.default_rng(seed),
        )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def _mean_difference(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x, axis=axis) - np.mean(y, axis=axis)


def difference_interval(
    candidate: np.ndarray,
    baseline: np.ndarray,
    *,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of mean(candidate) - mean(baseline) for independent samples
    (different cases on each side: every resample draws each side from itself); None when a side
    has fewer than two values. Resamples are taken in batches so memory stays bounded for tens of
    thousands of cases."""
    if len(candidate) < 2 or len(baseline) < 2:
        return None
    if np.all(candidate == candidate[0]) and np.all(baseline == baseline[0]):
        d = float(candidate[0] - baseline[0])
        return d, d
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        res = stats.bootstrap(
            (candidate, baseline),
            _mean_difference,
            n_resamples=n_resamples,
            confidence_level=confidence,
            method="percentile",
            vectorized=True,
            paired=False,
            batch=max(1, min(n_resamples, 4_000_000 // max(len(candidate), len(baseline)))),
            rng=np.random.default_rng(seed),
        )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def verdict(interval: tuple[float, float] | None, better: str | None) -> str | None:
    """better / worse / not established for an interval of (candidate - baseline)."""
    if better is None:
        return None
    if interval is None:
        return NOT_ESTABLISHED
    lo, hi = interval
    sign = 1.0 if better == "higher" else -1.0
    if (lo if sign > 0 else -hi) > 0:
        return BETTER
    if (hi if sign > 0 else -lo) < 0:
        return WORSE
    return NOT_ESTABLISHED


def _pairs(
    candidate: list[dict[str, Any]], baseline: dict[str, dict[str, Any]], spec: MetricSpec
) -> np.ndarray:
    out = []
    for r in candidate:
        b = baseline.get(r["case_id"])
        if b is None:
            continue
        x, y = r["metrics"].get(spec.name), b["metrics"].get(spec.name)
        if x is not None and y is not None:
            out.append(float(x) - float(y))
    return np.asarray(out, dtype=float)


def compare(
    candidate: list[dict[str, Any]],
    baseline: dict[str, dict[str, Any]],
    *,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """Per metric: n pairs, mean Delta, its interval and the verdict (categories are skipped)."""
    out: dict[str, Any] = {}
    for spec in METRICS:
        if spec.kind == "category":
            continue
        deltas = _pairs(candidate, baseline, spec)
        interval = mean_interval(deltas, confidence=confidence, n_resamples=n_resamples, seed=seed)
        out[spec.name] = {
            "n": int(len(deltas)),
            "delta": float(deltas.mean()) if len(deltas) else None,
            "ci": list(interval) if interval else None,
            "verdict": verdict(interval, spec.better) if len(deltas) else None,
        }
    return out
