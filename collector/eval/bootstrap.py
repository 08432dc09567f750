"""Paired bootstrap of the difference between two runs on the same cases.

For a metric s and the cases where both runs have a value,
``Delta_i = s_i(candidate) - s_i(baseline)`` and ``mean(Delta)`` is the
estimated change. Its 95% interval is the percentile bootstrap over cases
(scipy.stats.bootstrap, resampling the Delta_i with replacement), seeded so the
same inputs give the same interval. The verdict reads the interval in the
metric's own direction: entirely on the good side of 0 is ``better``, entirely
on the bad side ``worse``, and an interval that contains 0 is ``not
established``: the data do not show a change.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from scipy import stats

from .metrics import METRICS, MetricSpec

__all__ = ["BETTER", "WORSE", "NOT_ESTABLISHED", "mean_interval", "verdict", "compare"]

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
