"""Metrics and model fitting for the judge benches (numpy; bench-only).

- binary metrics with ``1`` = supported (claims) or hallucinated (responses):
  balanced accuracy, macro-F1, F1 of the positive class, AUROC;
- calibration: expected calibration error over ten equal-width probability
  bins, ``ECE = sum_b n_b / N * |mean(p_b) - mean(y_b)|``, and the reliability
  table it comes from; and the ECE a perfectly calibrated judge would show on the same
  probabilities (labels drawn from them), the estimator's noise floor on a set of that size;
- L2-regularised, weighted logistic regression by Newton's method (IRLS);
- grouped folds: a group's fold is a hash of its name, so records that share
  evidence never straddle a split and the folds do not depend on row order;
- a grouped bootstrap interval of any statistic of rows (groups drawn whole, since rows of
  one group share evidence and are not independent);
- the tallies of the hand-written benches that pair a faithful text with a hallucinated version
  (bench/judge_rag_answers.py, bench/judge_summaries.py): how the response verdicts fall, and
  the precision, recall, F1 and balanced accuracy of each choice of positive call.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
from ragpulse.collector.judge.local.response import RESPONSE_VERDICTS

__all__ = [
    "balanced_accuracy",
    "macro_f1",
    "f1",
    "auroc",
    "ece",
    "claim_scores",
    "reliability",
    "ece_floor",
    "fit_logistic",
    "fold_of",
    "group_bootstrap",
    "VERDICTS",
    "print_claims",
    "print_verdicts",
    "rates",
]


def _counts(pred: np.ndarray, gold: np.ndarray) -> tuple[int, int, int, int]:
    pred = np.asarray(pred, dtype=bool)
    gold = np.asarray(gold, dtype=bool)
    return (
        int(np.sum(pred & gold)),
        int(np.sum(pred & ~gold)),
        int(np.sum(~pred & gold)),
        int(np.sum(~pred & ~gold)),
    )


def balanced_accuracy(pred, gold) -> float:
    """Mean of the recall of both classes (0.5 for a constant prediction)."""
    tp, fp, fn, tn = _counts(pred, gold)
    pos, neg = tp + fn, tn + fp
    if not pos or not neg:
        return float("nan")
    return 0.5 * (tp / pos + tn / neg)


def f1(pred, gold) -> float:
    """F1 of the positive class."""
    tp, fp, fn, _ = _counts(pred, gold)
    return 2 * tp / max(1, 2 * tp + fp + fn)


def macro_f1(pred, gold) -> float:
    """Mean of the F1 of both classes."""
    tp, fp, fn, tn = _counts(pred, gold)
    return 0.5 * (2 * tp / max(1, 2 * tp + fp + fn) + 2 * tn / max(1, 2 * tn + fn + fp))


def auroc(score, gold) -> float:
    """Area under the ROC curve (ties count half), by ranks."""
    score = np.asarray(score, dtype=float)
    gold = np.asarray(gold, dtype=bool)
    n_pos, n_neg = int(gold.sum()), int((~gold).sum())
    if not n_pos or not n_neg:
        return float("nan")
    order = np.argsort(score, kind="mergesort")
    ranks = np.empty(len(score))
    s = score[order]
    i = 0
    while i < len(s):
        j = i
        while j + 1 < len(s) and s[j + 1] == s[i]:
            j += 1
        ranks[order[i : j + 1]] = 0.5 * (i + j) + 1
        i = j + 1
    return float((ranks[gold].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def reliability(prob, gold, bins: int = 10) -> list[tuple[float, float, float, int]]:
    """Per equal-width bin: (lower edge, mean probability, observed frequency, count)."""
    prob = np.clip(np.asarray(prob, dtype=float), 0.0, 1.0)
    gold = np.asarray(gold, dtype=float)
    idx = np.minimum((prob * bins).astype(int), bins - 1)
    out = []
    for b in range(bins):
        m = idx == b
        if m.any():
            out.append((b / bins, float(prob[m].mean()), float(gold[m].mean()), int(m.sum())))
    return out


def ece(prob, gold, bins: int = 10) -> float:
    """Expected calibration error over ``bins`` equal-width bins."""
    n = len(prob)
    return sum(c / n * abs(p - y) for _, p, y, c in reliability(prob, gold, bins)) if n else float("nan")


def ece_floor(prob, bins: int = 10, draws: int = 2000, seed: int = 0) -> tuple[float, float]:
    """The ECE of a perfectly calibrated judge with these probabilities: the median and the
    95th percentile over ``draws`` label sets drawn as ``y ~ Bernoulli(p)``.

    Binned ECE is biased upwards on small sets (each bin's observed rate is a noisy mean), so
    a set of a few hundred claims shows an ECE of several hundredths even when every
    probability is exact; this is the yardstick for reading a measured ECE."""
    prob = np.clip(np.asarray(prob, dtype=float), 0.0, 1.0)
    if not len(prob):
        return float("nan"), float("nan")
    idx = np.minimum((prob * bins).astype(int), bins - 1)
    counts = np.bincount(idx, minlength=bins)
    mean_p = np.bincount(idx, weights=prob, minlength=bins) / np.maximum(counts, 1)
    labels = np.random.default_rng(seed).random((draws, len(prob))) < prob
    observed = np.stack([np.bincount(idx, weights=row, minlength=bins) for row in labels])
    observed /= np.maximum(counts, 1)
    values = (np.abs(observed - mean_p) * counts).sum(axis=1) / len(prob)
    return float(np.median(values)), float(np.quantile(values, 0.95))


def claim_scores(score, pred, gold) -> dict[str, float]:
    """The claim-level figures every quality bench reports for one judge on one set: balanced
    accuracy and macro-F1 of the verdicts ``pred``, AUROC and ECE of the probabilities ``score``."""
    return {
        "balanced_accuracy": balanced_accuracy(pred, gold),
        "macro_f1": macro_f1(pred, gold),
        "auroc": auroc(score, gold),
        "ece": ece(score, gold),
    }


def fit_logistic(
    x: np.ndarray, y: np.ndarray, weight: np.ndarray | None = None, l2: float = 1.0, iterations: int = 50
) -> tuple[np.ndarray, float]:
    """Weighted L2-regularised logistic regression (intercept unpenalised) by Newton steps.

    ``l2`` is the penalty on the summed, weight-normalised log-loss (weights are rescaled to
    sum to the number of rows). Returns (coefficients, intercept)."""
    n, d = x.shape
    w = np.ones(n) if weight is None else weight * (n / weight.sum())
    xa = np.hstack([x, np.ones((n, 1))])
    beta = np.zeros(d + 1)
    reg = np.full(d + 1, l2)
    reg[-1] = 0.0
    for _ in range(iterations):
        s = np.clip(xa @ beta, -30, 30)
        p = 1.0 / (1.0 + np.exp(-s))
        g = xa.T @ (w * (p - y)) + reg * beta
        h = (xa * (w * p * (1 - p))[:, None]).T @ xa + np.diag(reg + 1e-9)
        step = np.linalg.solve(h, g)
        beta -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return beta[:-1], float(beta[-1])


def fold_of(group: str, folds: int, seed: int = 0) -> int:
    """The cross-validation fold of a group: a hash of its name (and the repetition seed)."""
    return int(hashlib.sha1(f"{seed}:{group}".encode()).hexdigest()[:8], 16) % folds


def group_bootstrap(
    statistic: Callable[[np.ndarray], float],
    groups: np.ndarray,
    draws: int = 2000,
    seed: int | np.random.Generator = 0,
    level: float = 0.95,
) -> tuple[float, float]:
    """The ``level`` interval of ``statistic(rows)`` over bootstrap draws of whole groups:
    ``groups[i]`` names row i's group; each draw takes as many groups as there are, with
    replacement, and passes the concatenated row indices of the drawn groups. ``seed`` may be
    a generator shared by several calls (one stream of draws for a whole table)."""
    names, inv = np.unique(np.asarray(groups), return_inverse=True)
    members = [np.flatnonzero(inv == g) for g in range(len(names))]
    rng = np.random.default_rng(seed)
    values = [
        statistic(np.concatenate([members[g] for g in rng.integers(0, len(members), len(members))]))
        for _ in range(draws)
    ]
    tail = (1.0 - level) / 2
    return float(np.nanquantile(values, tail)), float(np.nanquantile(values, 1.0 - tail))


# -- the hand-written pair sets' tallies ------------------------------------------------------

VERDICTS = RESPONSE_VERDICTS


def rates(tp: int, fp: int, fn: int, tn: int) -> tuple[float, float, float, float]:
    """Precision, recall, F1 and balanced accuracy (mean of recall and specificity)."""
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    specificity = tn / (tn + fp) if tn + fp else 0.0
    return p, r, f, (r + specificity) / 2


def print_claims(i: int, gold: str, noun: str, case: dict[str, Any], out: dict[str, Any]) -> None:
    """Every claim of a wrongly judged text of case ``i`` (a ``noun``: answer, summary), the
    unsupported ones marked with ``**``."""
    print(f"  case {i} {gold} {noun} judged {out['response_verdict']} ({case['kind']}: {case['changed']!r})")
    for c in out["claims"]:
        mark = "  " if c["verdict"] == "supported" else "**"
        print(f"    {mark} {c['verdict']:<12} p={c['support_probability']:.2f}  {c['text']}")


def print_verdicts(counts: dict[str, Counter], noun: str, pairs: int) -> None:
    """How the verdicts of ``pairs`` faithful texts and their hallucinated versions fall
    (``counts``: gold -> verdict counts), then the scores with "hallucinated" as the positive
    call and with "unsure" counted positive too."""
    for gold in counts:
        row = "  ".join(f"{v} {counts[gold][v]:>2}" for v in VERDICTS)
        print(f"  {gold:<13} {noun} judged: {row}")
    for label, positive in (("hallucinated", ("hallucinated",)), ("hallucinated or unsure", VERDICTS[1:])):
        tp = sum(counts["hallucinated"][v] for v in positive)
        fp = sum(counts["faithful"][v] for v in positive)
        p, r, f, bacc = rates(tp, fp, pairs - tp, pairs - fp)
        print(
            f"  positive = {label:<22}: precision {p:.2f}  recall {r:.2f}  F1 {f:.2f}  balanced accuracy {bacc:.2f}"
        )
