"""bench/judge_responses.py: the weak band's one-standard-error rule, on answers the test makes.

Each test composes answers whose claim scores are drawn so that the balanced accuracy
curve over ``weak`` has a known shape, and checks what the rule picks against it.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.bench_modules import bench_modules


@pytest.fixture(scope="module")
def weak():
    with bench_modules("judge_responses") as (module,):
        yield module


def _answers(rng: np.random.Generator, clean_low: float, bad_high: float, n: int = 400, k: int = 3, tail=0.0):
    """Answers of ``k`` claims, a fifth hallucinated: supported claims score in
    [clean_low, 1) (a ``tail`` share of them in [0, 0.5) instead), the one unsupported claim of
    a hallucinated answer in [0, bad_high) (squared uniform: most of them near 0)."""
    scores, groups, start = [], [], 0
    for _ in range(2):  # two (set, k) groups
        rows, gold = [], []
        for _ in range(n):
            bad = rng.random() < 0.2
            s = [
                rng.uniform(0.0, 0.5) if rng.random() < tail else rng.uniform(clean_low, 1.0)
                for _ in range(k)
            ]
            if bad:
                s[0] = bad_high * rng.random() ** 2
            scores.extend(s)
            rows.append(np.arange(start, start + k))
            start += k
            gold.append(bad)
        groups.append(("set", k, rows, np.array(gold)))
    return groups, np.array(scores)


def test_summaries_give_the_verdicts_of_response_verdict(weak) -> None:
    rng = np.random.default_rng(0)
    three, score3 = _answers(rng, 0.1, 0.5, n=60)
    one, score1 = _answers(rng, 0.1, 0.5, n=60, k=1)  # a lone claim below the threshold flags
    shift = len(score3)
    answers = three + [(s, k, [r + shift for r in rows], gold) for s, k, rows, gold in one]
    score = np.concatenate([score3, score1])
    threshold = 0.5
    for (_, _, rows, _), (weakest, always, _) in zip(
        answers, weak.answer_summaries(answers, score, threshold), strict=True
    ):
        for t in (0.0, 0.15, 0.3, 0.5):
            expected = [weak.response_verdict(list(score[r]), threshold, t) == "hallucinated" for r in rows]
            assert list((weakest < t) | always) == expected


def test_a_plateau_gives_its_smallest_value_and_a_flat_curve_the_smallest_of_all(weak) -> None:
    rng = np.random.default_rng(1)
    # Unsupported claims below 0.2, supported ones from 0.4: every weak in [0.2, 0.4] is
    # right about every answer, and below 0.2 the unsupported claims start to slip through.
    plateau, score = _answers(rng, 0.4, 0.2)
    fit = weak.fit_weak(plateau, score, threshold=0.4)
    assert fit["ba"] == pytest.approx(1.0)
    assert 0.2 <= fit["best"] <= 0.4
    assert fit["weak"] == pytest.approx(0.20)
    # Every claim above 0.5: no weak below the threshold changes a verdict, the curve is flat.
    flat, score = _answers(rng, 0.5, 0.0)
    score = np.where(score < 0.5, 0.55, score)
    assert weak.fit_weak(flat, score, threshold=0.5)["weak"] == pytest.approx(0.0)


def test_the_rule_takes_a_smaller_value_within_one_standard_error_and_is_reproducible(weak) -> None:
    rng = np.random.default_rng(2)
    # Unsupported claims mostly near 0, a tail of supported ones below 0.5: the curve rises
    # fast, peaks, then falls slowly, and a value below its maximum is as good within noise.
    answers, score = _answers(rng, 0.5, 0.5, tail=0.3)
    fit = weak.fit_weak(answers, score, threshold=0.5)
    grid = weak.WEAK_GRID[weak.WEAK_GRID <= 0.5]
    curve = weak.weak_curve(weak.answer_summaries(answers, score, 0.5), grid)
    assert fit["ba"] == pytest.approx(curve.max())
    assert grid[int(np.argmax(curve))] == pytest.approx(fit["best"])
    assert fit["weak"] < fit["best"]
    assert 0.0 < fit["gap"] <= fit["se"]
    # Nothing smaller is within its standard error: the values below fall further short.
    chosen = int(np.flatnonzero(np.isclose(grid, fit["weak"]))[0])
    assert (curve.max() - curve[:chosen] > fit["gap"]).all()
    assert weak.fit_weak(answers, score, threshold=0.5) == fit


def test_no_answers_leave_weak_at_the_threshold(weak) -> None:
    assert weak.fit_weak([], np.zeros(0), threshold=0.45)["weak"] == pytest.approx(0.45)
