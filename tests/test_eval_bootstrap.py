"""The paired bootstrap: coverage at the stated rate for a known difference, 'not established' for
none, verdicts in each metric's direction, reproducible for a seed."""

from __future__ import annotations

import numpy as np
from ragpulse.collector.eval.bootstrap import BETTER, NOT_ESTABLISHED, WORSE, compare, mean_interval, verdict


def _runs(scores_b: np.ndarray, scores_a: np.ndarray, metric: str) -> tuple[list[dict], dict[str, dict]]:
    cand = [{"case_id": f"c{i}", "metrics": {metric: float(v)}} for i, v in enumerate(scores_b)]
    base = {f"c{i}": {"case_id": f"c{i}", "metrics": {metric: float(v)}} for i, v in enumerate(scores_a)}
    return cand, base


def test_interval_covers_a_known_difference_at_the_stated_rate() -> None:
    """Synthetic paired runs, true mean difference +0.08 on a 0/1 metric (strict pass): over 300
    independent data sets and bootstrap seeds the 95% interval covers +0.08 at about 95%."""
    true_delta, n_cases, reps = 0.08, 200, 300
    covered = 0
    for rep in range(reps):
        rng = np.random.default_rng(1000 + rep)
        ability = rng.uniform(0.2, 0.9, n_cases)  # per-case difficulty shared by both runs (pairing)
        a = rng.random(n_cases) < ability
        b = rng.random(n_cases) < np.clip(ability + true_delta, 0, 1)
        # p + 0.08 <= 0.98 never clips, so the design's mean difference is exactly true_delta.
        cand, base = _runs(b, a, "strict_pass")
        ci = compare(cand, base, seed=rep, n_resamples=1000)["strict_pass"]["ci"]
        covered += ci[0] <= true_delta <= ci[1]
    rate = covered / reps
    # 3 binomial standard deviations around 0.95 for 300 repetitions: [0.912, 0.988].
    assert 0.912 <= rate <= 0.988, rate


def test_continuous_metric_coverage() -> None:
    reps, covered = 200, 0
    for rep in range(reps):
        rng = np.random.default_rng(rep)
        base = rng.normal(0.6, 0.2, 120)
        cand = base - 0.05 + rng.normal(0, 0.1, 120)  # a regression of 0.05 with noise
        lo, hi = mean_interval(cand - base, seed=rep, n_resamples=1000)
        covered += lo <= -0.05 <= hi
    assert 0.90 <= covered / reps <= 0.99, covered / reps


def test_zero_difference_is_not_established() -> None:
    rng = np.random.default_rng(5)
    scores = rng.random(80)
    cand, base = _runs(scores, scores, "claim_recall")
    out = compare(cand, base, seed=1)["claim_recall"]
    assert out["delta"] == 0.0 and out["ci"] == [0.0, 0.0] and out["verdict"] == NOT_ESTABLISHED
    # Noise without a true difference: the interval spans 0 for this seed, nothing is established.
    noisy = np.clip(scores + rng.normal(0, 0.05, 80), 0, 1)
    noisy = noisy - (noisy.mean() - scores.mean())
    cand, base = _runs(noisy, scores, "claim_recall")
    out = compare(cand, base, seed=1)["claim_recall"]
    assert out["ci"][0] < 0 < out["ci"][1] and out["verdict"] == NOT_ESTABLISHED


def test_verdicts_follow_the_metric_direction() -> None:
    assert verdict((0.01, 0.2), "higher") == BETTER
    assert verdict((-0.2, -0.01), "higher") == WORSE
    assert verdict((0.01, 0.2), "lower") == WORSE  # e.g. hallucination went up
    assert verdict((-0.2, -0.01), "lower") == BETTER
    assert verdict((-0.1, 0.1), "higher") == NOT_ESTABLISHED
    assert verdict(None, "higher") == NOT_ESTABLISHED


def test_seeded_and_reproducible() -> None:
    rng = np.random.default_rng(9)
    d = rng.normal(0.02, 0.1, 50)
    assert mean_interval(d, seed=3) == mean_interval(d, seed=3)
    assert mean_interval(d, seed=3) != mean_interval(d, seed=4)
    assert mean_interval(d[:1]) is None
