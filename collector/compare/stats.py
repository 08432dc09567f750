"""Per-variant estimates and the difference between two variants, each with a 95% bootstrap interval.

The statistics are the offline eval's (:mod:`..eval.bootstrap`): the interval
of a mean and of a paired difference is its percentile bootstrap over cases,
the unpaired difference resamples each variant's traces independently, and the
verdict reads an interval in the metric's own direction (better / worse / not
established). Judged traces of two variants are different queries, so their
difference is unpaired; where the same request was served by both (shadow
traffic: both traces carry the same ``rag.request.id``) and at least
:data:`MIN_PAIRS` such requests were judged in both, the difference is paired
on those requests, which removes the between-query variance.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..contract import SCORE_NAMES
from ..eval.bootstrap import difference_interval, mean_interval, verdict

__all__ = [
    "Metric",
    "METRICS",
    "METRIC_NAMES",
    "FAILURE_MODES",
    "MIN_PAIRS",
    "Estimate",
    "Difference",
    "estimate",
    "difference",
    "metric_by_name",
]

#: Paired requests needed before a difference is paired rather than unpaired.
MIN_PAIRS = 30

#: Failure modes whose share of judged traces is compared, with the direction that is better.
FAILURE_MODES: tuple[tuple[str, str], ...] = (
    ("healthy", "higher"),
    ("retrieval", "lower"),
    ("generation", "lower"),
    ("both", "lower"),
    ("abstain", "lower"),
)


@dataclass(frozen=True)
class Metric:
    """A per-judged-trace value compared across variants: a score, or a 0/1 share."""

    name: str
    title: str
    better: str  # "higher" or "lower"


METRICS: tuple[Metric, ...] = (
    *(Metric(s, s.replace("_", " "), "higher") for s in SCORE_NAMES),
    Metric("unsupported_answer", "answers with an unsupported claim", "lower"),
    Metric("hallucinated_answer", "answers with a hallucinated claim", "lower"),
    *(Metric(f"failure_mode:{m}", f"failure mode {m}", b) for m, b in FAILURE_MODES),
)
METRIC_NAMES: tuple[str, ...] = tuple(m.name for m in METRICS)


@dataclass(frozen=True)
class Estimate:
    """One variant's mean of a metric over its judged traces (those where it applies)."""

    n: int
    mean: float | None
    ci: tuple[float, float] | None


@dataclass(frozen=True)
class Difference:
    """candidate - baseline for one metric: estimate, interval, verdict and how it was paired."""

    metric: str
    delta: float | None
    ci: tuple[float, float] | None
    verdict: str | None
    paired: bool
    n: int  # pairs when paired, else the candidate's and baseline's values together


def _present(values: np.ndarray) -> np.ndarray:
    return values[~np.isnan(values)]


def estimate(values: np.ndarray, *, n_resamples: int = 2000, seed: int = 0) -> Estimate:
    """The mean and its bootstrap interval (NaN values do not apply and are left out)."""
    v = _present(np.asarray(values, dtype=float))
    if not len(v):
        return Estimate(0, None, None)
    return Estimate(len(v), float(v.mean()), mean_interval(v, n_resamples=n_resamples, seed=seed))


def _pairs(
    cand: np.ndarray, cand_keys: Sequence[str], base: np.ndarray, base_keys: Sequence[str]
) -> np.ndarray:
    """Per request judged in both (non-empty key, a value on both sides): the difference of the
    two sides' means for that request."""

    def by_key(values: np.ndarray, keys: Sequence[str]) -> dict[str, float]:
        sums: dict[str, list[float]] = {}
        for k, v in zip(keys, values, strict=True):
            if k and not np.isnan(v):
                sums.setdefault(k, []).append(float(v))
        return {k: sum(vs) / len(vs) for k, vs in sums.items()}

    a, b = by_key(cand, cand_keys), by_key(base, base_keys)
    return np.asarray([a[k] - b[k] for k in sorted(a.keys() & b.keys())], dtype=float)


def difference(
    metric: Metric,
    cand: np.ndarray,
    base: np.ndarray,
    *,
    cand_keys: Sequence[str] | None = None,
    base_keys: Sequence[str] | None = None,
    n_resamples: int = 2000,
    seed: int = 0,
) -> Difference:
    """candidate - baseline of ``metric``: paired on shared request keys when there are at least
    :data:`MIN_PAIRS`, else the unpaired bootstrap over the two variants' traces."""
    cand, base = np.asarray(cand, dtype=float), np.asarray(base, dtype=float)
    if cand_keys is not None and base_keys is not None:
        deltas = _pairs(cand, cand_keys, base, base_keys)
        if len(deltas) >= MIN_PAIRS:
            ci = mean_interval(deltas, n_resamples=n_resamples, seed=seed)
            return Difference(
                metric.name, float(deltas.mean()), ci, verdict(ci, metric.better), True, len(deltas)
            )
    a, b = _present(cand), _present(base)
    if not len(a) or not len(b):
        return Difference(metric.name, None, None, None, False, len(a) + len(b))
    ci = difference_interval(a, b, n_resamples=n_resamples, seed=seed)
    delta = float(a.mean() - b.mean())
    return Difference(metric.name, delta, ci, verdict(ci, metric.better), False, len(a) + len(b))


def metric_by_name(name: str) -> Metric:
    """The :data:`METRICS` entry called ``name`` (KeyError names the known ones)."""
    for m in METRICS:
        if m.name == name:
            return m
    raise KeyError(f"unknown metric {name!r}; known: {', '.join(METRIC_NAMES)}")
