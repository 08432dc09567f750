"""Per-variant estimates with 95% bootstrap intervals, and the differences between two variants
with 95% *simultaneous* intervals over the metrics compared.

A variant's estimate of a metric is the offline eval's (:mod:`..eval.bootstrap`): the mean and
its 95% percentile bootstrap interval over the variant's traces. The differences of a candidate
against the baseline are one family: every metric of :data:`METRICS` is compared, so their
intervals are simultaneous (:mod:`.simultaneous`, Bonferroni's level over the family): with
identical variants, any verdict of the family other than "not established" has a probability of
at most 5%. The verdict reads an interval in the metric's own direction (better / worse / not
established). Judged traces of two variants are different queries, so their difference is
unpaired (each resample draws each variant's traces from themselves); where the same request was
served by both (shadow traffic: both traces carry the same ``rag.request.id``) and at least
:data:`MIN_PAIRS` such requests were judged in both, the difference is paired on those requests,
which removes the between-query variance.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..contract import SCORE_NAMES
from ..eval.bootstrap import mean_interval, verdict
from .simultaneous import RESAMPLES, Family, resampled_means, simultaneous_intervals

__all__ = [
    "Metric",
    "METRICS",
    "METRIC_NAMES",
    "FAILURE_MODES",
    "MIN_PAIRS",
    "Estimate",
    "Difference",
    "Family",
    "estimate",
    "differences",
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


def estimate(values: np.ndarray, *, n_resamples: int = 2000, seed: int = 0) -> Estimate:
    """The mean and its bootstrap interval (NaN values do not apply and are left out)."""
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    if not len(v):
        return Estimate(0, None, None)
    return Estimate(len(v), float(v.mean()), mean_interval(v, n_resamples=n_resamples, seed=seed))


def _by_request(values: np.ndarray, keys: Sequence[str]) -> dict[str, np.ndarray]:
    """Request key (non-empty) -> the mean of each metric over that request's traces (NaN: none)."""
    rows: dict[str, list[int]] = {}
    for i, k in enumerate(keys):
        if k:
            rows.setdefault(k, []).append(i)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a metric with no value for a request
        return {k: np.nanmean(values[idx], axis=0) for k, idx in rows.items()}


def _pairs(
    cand: np.ndarray, cand_keys: Sequence[str], base: np.ndarray, base_keys: Sequence[str]
) -> np.ndarray:
    """(requests judged in both) x metrics: candidate's mean minus baseline's for that request,
    NaN where a side has no value of the metric."""
    a, b = _by_request(cand, cand_keys), _by_request(base, base_keys)
    shared = sorted(a.keys() & b.keys())
    if not shared:
        return np.empty((0, cand.shape[1]))
    return np.vstack([a[k] - b[k] for k in shared])


def _column_means(values: np.ndarray) -> np.ndarray:
    """NaN-aware column means (NaN for a column without values), without warnings."""
    n = (~np.isnan(values)).sum(axis=0)
    total = np.where(np.isnan(values), 0.0, values).sum(axis=0)
    return np.divide(total, n, out=np.full(values.shape[1], np.nan), where=n > 0)


def differences(
    metrics: Sequence[Metric],
    cand: dict[str, np.ndarray],
    base: dict[str, np.ndarray],
    *,
    cand_keys: Sequence[str] | None = None,
    base_keys: Sequence[str] | None = None,
    confidence: float = 0.95,
    n_resamples: int = RESAMPLES,
    seed: int = 0,
) -> tuple[dict[str, Difference], Family]:
    """candidate - baseline of every metric, with simultaneous intervals over the family.

    A metric is paired on shared request keys when at least :data:`MIN_PAIRS` requests have a
    value of it on both sides, else unpaired over the two variants' traces (each resample draws
    each variant's traces from themselves). Every interval is at Bonferroni's level over the
    metrics that have one (:func:`.simultaneous.simultaneous_intervals`), so the family is jointly
    right with probability at least ``confidence``.
    """
    names = [m.name for m in metrics]
    c = np.column_stack([np.asarray(cand[n], dtype=float) for n in names])
    b = np.column_stack([np.asarray(base[n], dtype=float) for n in names])
    pairs = np.empty((0, len(names)))
    if cand_keys is not None and base_keys is not None:
        pairs = _pairs(c, cand_keys, b, base_keys)
    n_pairs = (~np.isnan(pairs)).sum(axis=0)
    paired = n_pairs >= MIN_PAIRS
    n_c, n_b = (~np.isnan(c)).sum(axis=0), (~np.isnan(b)).sum(axis=0)
    delta = np.where(paired, _column_means(pairs), _column_means(c) - _column_means(b))
    has_interval = paired | ((n_c >= 2) & (n_b >= 2))

    rng = np.random.default_rng(seed)
    resampled = np.full((n_resamples, len(names)), np.nan)
    if (~paired).any():
        cand_means = resampled_means(c[:, ~paired], n_resamples, rng)
        resampled[:, ~paired] = cand_means - resampled_means(b[:, ~paired], n_resamples, rng)
    if paired.any():
        resampled[:, paired] = resampled_means(pairs[:, paired], n_resamples, rng)
    intervals, family = simultaneous_intervals(
        np.where(has_interval, delta, np.nan), resampled, confidence=confidence
    )
    out = {}
    for j, m in enumerate(metrics):
        d = None if np.isnan(delta[j]) else float(delta[j])
        ci = intervals[j]
        n = int(n_pairs[j]) if paired[j] else int(n_c[j] + n_b[j])
        out[m.name] = Difference(
            m.name, d, ci, None if d is None else verdict(ci, m.better), bool(paired[j]), n
        )
    return out, family


def difference(
    metric: Metric,
    cand: np.ndarray,
    base: np.ndarray,
    *,
    cand_keys: Sequence[str] | None = None,
    base_keys: Sequence[str] | None = None,
    n_resamples: int = RESAMPLES,
    seed: int = 0,
) -> Difference:
    """candidate - baseline of one metric alone (a family of one: its plain 95% interval)."""
    diffs, _ = differences(
        [metric], {metric.name: cand}, {metric.name: base},
        cand_keys=cand_keys, base_keys=base_keys, n_resamples=n_resamples, seed=seed,
    )  # fmt: skip
    return diffs[metric.name]


def metric_by_name(name: str) -> Metric:
    """The :data:`METRICS` entry called ``name`` (KeyError names the known ones)."""
    for m in METRICS:
        if m.name == name:
            return m
    raise KeyError(f"unknown metric {name!r}; known: {', '.join(METRIC_NAMES)}")
