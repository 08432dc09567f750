"""The claim model's weak band, fit on composed answers by the one-standard-error rule.

``weak`` splits the claims below the verdict threshold in two: a claim under ``weak`` makes its
answer ``hallucinated`` on its own, one between ``weak`` and the threshold among supported
claims makes it ``unsure`` (:func:`ragpulse.collector.judge.local.claim_model.response_verdict`).
It is fit on RAG-shaped answers composed from the training claims (:mod:`judge_responses`),
scored by mean response-level balanced accuracy over their (set, length) groups.

That objective is flat over a wide range of ``weak`` (within 0.006 from 0.20 to 0.41 on the
dev data), so the value that maximises it is noise, and a refit could move it by 0.15 from one
feature change to the next. The fit therefore takes the smallest ``weak`` whose balanced
accuracy falls short of the best one's by no more than one bootstrap standard error of that
shortfall (Breiman's one-standard-error rule): among the values the data cannot tell apart,
the one that calls the fewest answers ``hallucinated`` outright, which is what a faithfulness
alert pages on.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["WEAK_GRID", "answer_summaries", "fit_weak", "weak_curve"]

# The candidate values, every hundredth from 0 to 0.99; a fit takes those at most its threshold.
WEAK_GRID = np.round(np.arange(0.0, 1.0, 0.01), 2)
BOOTSTRAP_DRAWS = 300


def answer_summaries(
    answers: list[tuple[str, int, list[np.ndarray], np.ndarray]], score: np.ndarray, threshold: float
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per composed-answer group: each answer's weakest claim score, whether the answer is
    ``hallucinated`` whatever ``weak`` is (two or more claims below ``threshold``, or its only
    claim), and whether it is hallucinated in truth. With these, the verdict at any ``weak``
    is ``weakest < weak or always`` (the rule of ``response_verdict``)."""
    out = []
    for _, _, claim_rows, gold in answers:
        weakest = np.array([score[r].min() for r in claim_rows])
        below = np.array([(score[r] < threshold).sum() for r in claim_rows])
        sizes = np.array([len(r) for r in claim_rows])
        always = (below >= 2) | ((below >= 1) & (sizes < 2))
        out.append((weakest, always, np.asarray(gold, dtype=bool)))
    return out


def _group_ba(weakest: np.ndarray, always: np.ndarray, gold: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Balanced accuracy of one group's answers at each ``weak`` in ``grid`` (the group holds
    clean and hallucinated answers alike: :func:`judge_responses.compose`)."""
    flags = (weakest[None, :] < grid[:, None]) | always[None, :]
    hit = (flags & gold).sum(1) / gold.sum()
    rejected = (~flags & ~gold).sum(1) / (~gold).sum()
    return (hit + rejected) / 2


def weak_curve(summaries: list[tuple[np.ndarray, np.ndarray, np.ndarray]], grid: np.ndarray) -> np.ndarray:
    """Mean balanced accuracy over the groups at each ``weak`` in ``grid``."""
    return np.mean([_group_ba(*s, grid) for s in summaries], axis=0)


def fit_weak(
    answers: list[tuple[str, int, list[np.ndarray], np.ndarray]],
    score: np.ndarray,
    threshold: float,
    draws: int = BOOTSTRAP_DRAWS,
    seed: int = 0,
) -> dict[str, Any]:
    """The weak band by the one-standard-error rule: the smallest grid value at most
    ``threshold`` whose mean balanced accuracy falls short of the best one's by no more than
    the standard error of that shortfall, estimated from ``draws`` bootstrap resamples of each
    group's answers (paired: every value is scored on the same resamples; seeded, so the fit
    is reproducible). Returns ``weak``, the best value, its balanced accuracy, and the
    shortfall and its standard error at the value chosen."""
    grid = WEAK_GRID[WEAK_GRID <= threshold + 1e-9]
    if not len(grid) or not answers:
        return {"weak": float(threshold), "best": float(threshold), "ba": float("nan"), "gap": 0.0, "se": 0.0}
    summaries = answer_summaries(answers, score, threshold)
    curve = weak_curve(summaries, grid)
    best = int(np.argmax(curve))
    rng = np.random.default_rng(seed)
    shortfalls = np.empty((draws, len(grid)))
    for d in range(draws):
        picks = [rng.integers(0, len(g), len(g)) for _, _, g in summaries]
        resampled = np.mean(
            [_group_ba(w[i], a[i], g[i], grid) for (w, a, g), i in zip(summaries, picks, strict=True)], axis=0
        )
        shortfalls[d] = resampled[best] - resampled
    gap = curve[best] - curve
    se = shortfalls.std(axis=0)
    chosen = int(np.flatnonzero(gap <= se)[0])
    return {
        "weak": float(grid[chosen]),
        "best": float(grid[best]),
        "ba": float(curve[best]),
        "gap": float(gap[chosen]),
        "se": float(se[chosen]),
    }
