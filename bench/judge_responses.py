"""RAG-shaped answers composed from labelled claims: the response level where a monitor pages.

The dev sets' own responses cannot say how often a faithfulness alert fires on clean traffic:
FActScore's and Factcheck-GPT's are 95% and 90% hallucinated (33 clean ones between them),
and AttributionBench and WiCE records hold one claim each. A production RAG answer is mostly
faithful, and a hallucinated one usually holds one unsupported claim among supported ones.
So, per set, this draws answers of ``k`` labelled claims: a clean answer is ``k`` supported
claims, a hallucinated one ``k - 1`` supported claims and one that is not, hallucinated answers
making up ``prevalence`` of them.

The claims of one answer come from one *pool*: one record where the set's records hold many
claims (FActScore: one biography judged against one article), otherwise the records of one
cross-validation fold (each claim against its own chunks, as an answer drawing on several
retrieved passages). Every claim keeps its out-of-fold probability, so an answer is judged by
a model fit without any of its claims, with its fold's threshold and weak band.

The claim model's weak band is fit on such answers by the one-standard-error rule
(:func:`fit_weak`). ``weak`` splits the claims below the verdict threshold in two: a claim under ``weak`` makes its
answer ``hallucinated`` on its own, one between ``weak`` and the threshold among supported
claims makes it ``unsure`` (:func:`ragpulse.collector.judge.local.claim_model.response_verdict`).
It is fit on RAG-shaped answers composed from the training claims (:func:`compose`),
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

from collections import defaultdict
from typing import Any

import numpy as np

__all__ = [
    "MANY_CLAIMS",
    "WEAK_GRID",
    "answer_summaries",
    "compose",
    "fit_weak",
    "flag_everything_f1",
    "pools",
    "weak_curve",
]

# Records holding at least this many claims on average are pools of their own.
MANY_CLAIMS = 4


def pools(records: np.ndarray, folds: np.ndarray) -> np.ndarray:
    """Each claim's pool: its record when the records (of this set) hold ``MANY_CLAIMS`` claims
    or more on average, else its fold."""
    _, counts = np.unique(records, return_counts=True)
    if counts.mean() >= MANY_CLAIMS:
        return np.asarray(records, dtype=str)
    return np.array([f"fold {f}" for f in folds])


def compose(
    supported: np.ndarray,
    pool: np.ndarray,
    k: int,
    prevalence: float,
    n: int,
    seed: int = 0,
) -> list[tuple[np.ndarray, bool]]:
    """``n`` answers of ``k`` claims (row indices into ``supported``, the claims' labels), each
    drawn from one pool (weighted by its size), with whether it is hallucinated. Pools without
    enough claims of the kind a draw needs are skipped; raises ValueError when none has."""
    if k < 1 or not 0.0 <= prevalence <= 1.0:
        raise ValueError(f"need k >= 1 and 0 <= prevalence <= 1, got k={k}, prevalence={prevalence}")
    members: dict[str, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
    for i, (s, p) in enumerate(zip(supported, pool, strict=True)):
        members[p][0 if s else 1].append(i)
    clean = [(np.array(sup), np.array(uns)) for sup, uns in members.values() if len(sup) >= k]
    halluc = [(np.array(sup), np.array(uns)) for sup, uns in members.values() if len(sup) >= k - 1 and uns]
    if (prevalence < 1 and not clean) or (prevalence > 0 and not halluc):
        raise ValueError(f"no pool has enough claims for answers of {k}")
    rng = np.random.default_rng(seed)
    out: list[tuple[np.ndarray, bool]] = []
    for hallucinated in rng.random(n) < prevalence:
        choices = halluc if hallucinated else clean
        sizes = np.array([len(s) + len(u) for s, u in choices], dtype=float)
        sup, uns = choices[rng.choice(len(choices), p=sizes / sizes.sum())]
        rows = rng.choice(sup, k - int(hallucinated), replace=False)
        if hallucinated:
            rows = np.append(rows, rng.choice(uns))
        out.append((rows.astype(int), bool(hallucinated)))
    return out


def flag_everything_f1(prevalence: float) -> float:
    """F1 of calling every answer hallucinated: the floor a response judge must clear."""
    return 2 * prevalence / (1 + prevalence)


# -- the weak band ------------------------------------------------------------------------------

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
    clean and hallucinated answers alike: :func:`compose`)."""
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
