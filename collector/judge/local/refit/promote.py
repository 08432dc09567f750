"""Whether a refit decision is better than the base where it matters, on held-out labels.

:func:`compare` refits the whole decision (:func:`.decision.fit_decision`) on all but
one of ``k`` folds grouped as the labels are (by trace, or by the session or source the
labels name) and scores the base decision and the refit on the held-out fold; the folds'
predictions are pooled. It scores, in order of what counts:

1. the answer-level decision: ``response_verdict`` hallucinated against the answer labels
   (balanced accuracy), which is what a faithfulness alert reads;
2. claim balanced accuracy: the claim verdicts against the claim labels;
3. ECE of the claim probabilities, reported, never a reason to promote on its own.

Each gain (refit minus base; for ECE base minus refit, lower being better) comes with a 95%
percentile interval from a paired bootstrap that resamples the groups (the same resamples
for both decisions and every metric); a metric with fewer than :data:`MEASURED_EACH` held-out
labels of either kind is not measured. A gain is ``better`` when the interval lies above
zero, ``worse`` when it lies below, else ``within noise``. The refit is promoted only when
the answer-level decision can be measured and is not worse, claim balanced accuracy is not
worse, and one of the two is better.

:func:`learning_curve` repeats the held-out scoring with the refit fit on a share of each
fold's training groups (25% and 50%) beside all of them, so a team sees whether more labels
would still move the figures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .data import LabelSet
from .decision import Fit, Minimums, fit_decision, folds_of
from .head import Decision, balanced_accuracy, ece

__all__ = [
    "BOOTSTRAP_DRAWS",
    "METRICS",
    "Comparison",
    "Gain",
    "HeldOut",
    "compare",
    "held_out",
    "learning_curve",
]

BOOTSTRAP_DRAWS = 2000
MEASURED_EACH = 5  # held-out labels of each kind a metric needs to be measured at all
METRICS: tuple[str, ...] = ("answer-level balanced accuracy", "claim balanced accuracy", "ECE")
_BINS = 10


@dataclass
class HeldOut:
    """Pooled held-out predictions of the base decision and the refit, and per-fold figures."""

    answer_gold: np.ndarray
    answer_group: np.ndarray
    answer: dict[str, np.ndarray]  # "base"/"refit" -> hallucinated
    claim_gold: np.ndarray
    claim_group: np.ndarray
    claim: dict[str, np.ndarray]  # "base"/"refit" -> supported
    prob: dict[str, np.ndarray]  # "base"/"refit" -> support probability
    per_fold: list[dict[str, float]] = field(default_factory=list)
    fits: list[Fit] = field(default_factory=list)

    def figures(self, name: str) -> dict[str, float]:
        """Pooled answer-level and claim balanced accuracy and ECE of ``name``."""
        return {
            METRICS[0]: balanced_accuracy(self.answer[name], self.answer_gold),
            METRICS[1]: balanced_accuracy(self.claim[name], self.claim_gold),
            METRICS[2]: ece(self.prob[name], self.claim_gold),
        }


def _subsample(groups: np.ndarray, fraction: float, seed: int) -> np.ndarray:
    """A mask keeping ``fraction`` of the distinct ``groups`` (at least one), drawn by ``seed``."""
    distinct = np.unique(groups)
    if fraction >= 1.0:
        return np.ones(len(groups), dtype=bool)
    rng = np.random.default_rng(seed)
    keep = rng.permutation(distinct)[: max(1, round(fraction * len(distinct)))]
    return np.isin(groups, keep)


def _fold_scores(ls: LabelSet, base: Decision, fit: Fit) -> dict[str, dict[str, np.ndarray]]:
    out: dict[str, dict[str, np.ndarray]] = {}
    for name, dec in (("base", base), ("refit", fit.decision)):
        supported, p = dec.claims(ls.labelled)
        out[name] = {"answer": dec.answers(ls.judged, len(ls.trace_ids)), "claim": supported, "prob": p}
    return out


def held_out(ls: LabelSet, base: Decision, minimums: Minimums, k: int = 5, fraction: float = 1.0) -> HeldOut:
    """Pooled predictions on ``k`` held-out folds (module docstring), the refit of each fold
    fit on ``fraction`` of its training groups."""
    fold = folds_of(ls.group, k)
    parts: dict[str, list[np.ndarray]] = {}
    per_fold, fits = [], []
    for f in range(k):
        test = fold == f
        train = ~test & _subsample(ls.group, fraction, seed=f)
        if not test.any() or not train.any():
            continue
        fit = fit_decision(ls.traces(train), base, minimums)
        held = ls.traces(test)
        scores = _fold_scores(held, base, fit)
        has = held.gold >= 0
        row = {}
        for name, s in scores.items():
            for key, values in (("answer", s["answer"][has]), ("claim", s["claim"]), ("prob", s["prob"])):
                parts.setdefault(f"{name}:{key}", []).append(values)
            row[f"{name}_answer"] = balanced_accuracy(s["answer"][has], held.gold[has])
            row[f"{name}_claim"] = balanced_accuracy(s["claim"], held.labelled.y)
            row[f"{name}_ece"] = ece(s["prob"], held.labelled.y)
        for key, values in (("answer_gold", held.gold[has]), ("answer_group", held.group[has]),
                            ("claim_gold", held.labelled.y), ("claim_group", held.group[held.labelled.trace])):  # fmt: skip
            parts.setdefault(key, []).append(values)
        per_fold.append(row)
        fits.append(fit)

    def cat(key: str, dtype: type = float) -> np.ndarray:
        return np.concatenate(parts[key]) if key in parts else np.array([], dtype=dtype)

    return HeldOut(
        cat("answer_gold", int), cat("answer_group", object),
        {n: cat(f"{n}:answer", bool) for n in ("base", "refit")},
        cat("claim_gold", int), cat("claim_group", object),
        {n: cat(f"{n}:claim", bool) for n in ("base", "refit")},
        {n: cat(f"{n}:prob") for n in ("base", "refit")},
        per_fold, fits,
    )  # fmt: skip


@dataclass(frozen=True)
class Gain:
    """A metric's gain of the refit over the base (positive = better), its 95% bootstrap
    interval, and the verdict: better, worse, within noise, or not measured."""

    gain: float
    low: float
    high: float
    verdict: str


def _ba_parts(pred: dict[str, np.ndarray], gold: np.ndarray, gi: np.ndarray, n: int) -> np.ndarray:
    """Per group: positives, negatives, and per decision the positives called positive and the
    negatives called negative (rows: pos, neg, base hit, base rejection, refit hit, refit rejection)."""
    pos, neg = gold == 1, gold == 0
    rows = [pos, neg]
    for name in ("base", "refit"):
        rows += [pred[name] & pos, ~pred[name] & neg]
    return np.stack([np.bincount(gi, weights=r, minlength=n) for r in rows])


def _ece_parts(prob: dict[str, np.ndarray], gold: np.ndarray, gi: np.ndarray, n: int) -> np.ndarray:
    """Per group and bin: claims, and per decision the bin's summed probabilities and labels."""
    rows = []
    for name in ("base", "refit"):
        b = np.minimum((prob[name] * _BINS).astype(int), _BINS - 1)
        for k in range(_BINS):
            rows += [np.bincount(gi, weights=(b == k) * prob[name], minlength=n),
                     np.bincount(gi, weights=(b == k) * gold, minlength=n)]  # fmt: skip
    rows.append(np.bincount(gi, minlength=n).astype(float))
    return np.stack(rows)


def _ba_gain(totals: np.ndarray) -> np.ndarray:
    pos, neg, bh, br, rh, rr = totals
    with np.errstate(invalid="ignore", divide="ignore"):
        return 0.5 * ((rh - bh) / pos + (rr - br) / neg)


def _ece_gain(totals: np.ndarray) -> np.ndarray:
    n = totals[-1]
    half = _BINS * 2
    base = np.abs(totals[0:half:2] - totals[1:half:2]).sum(0)
    refit = np.abs(totals[half : 2 * half : 2] - totals[half + 1 : 2 * half : 2]).sum(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (base - refit) / n


def _gain(point: float, draws: np.ndarray, measured: bool) -> Gain:
    draws = draws[~np.isnan(draws)]
    if not measured or math.isnan(point) or len(draws) < 20:
        return Gain(point, math.nan, math.nan, "not measured")
    low, high = (float(v) for v in np.percentile(draws, [2.5, 97.5]))
    verdict = "better" if low > 0 else "worse" if high < 0 else "within noise"
    return Gain(point, low, high, verdict)


def gains(h: HeldOut, draws: int = BOOTSTRAP_DRAWS, seed: int = 0) -> dict[str, Gain]:
    """Each metric's gain and its interval from a paired bootstrap over the groups."""
    groups, gi = np.unique(np.concatenate([h.answer_group, h.claim_group]).astype(str), return_inverse=True)
    n = len(groups)
    ga, gc = gi[: len(h.answer_group)], gi[len(h.answer_group) :]
    parts = {
        METRICS[0]: (_ba_parts(h.answer, h.answer_gold, ga, n), _ba_gain),
        METRICS[1]: (_ba_parts(h.claim, h.claim_gold, gc, n), _ba_gain),
        METRICS[2]: (_ece_parts(h.prob, h.claim_gold, gc, n), _ece_gain),
    }
    w = np.random.default_rng(seed).multinomial(n, np.full(n, 1 / n), size=draws).astype(float) if n else None
    measured = {
        METRICS[0]: min((h.answer_gold == 1).sum(), (h.answer_gold == 0).sum()) >= MEASURED_EACH,
        METRICS[1]: min((h.claim_gold == 1).sum(), (h.claim_gold == 0).sum()) >= MEASURED_EACH,
    }
    measured[METRICS[2]] = measured[METRICS[1]]
    out = {}
    for metric, (per_group, gain_of) in parts.items():
        point = float(gain_of(per_group.sum(1)[:, None])[0])
        boot = gain_of((w @ per_group.T).T) if w is not None else np.array([])
        out[metric] = _gain(point, boot, measured[metric])
    return out


@dataclass
class Comparison:
    """Held-out figures, the gains and the decision, with the reason when refused."""

    held: HeldOut
    gains: dict[str, Gain]
    promote: bool
    reason: str


def decide(g: dict[str, Gain]) -> tuple[bool, str]:
    """Promote or not, and why (module docstring)."""
    answer, claim, calib = g[METRICS[0]], g[METRICS[1]], g[METRICS[2]]
    if answer.verdict == "not measured":
        return False, (f"the answer-level decision cannot be measured: it needs at least {MEASURED_EACH} faithful "
                       f"and {MEASURED_EACH} unfaithful labelled answers (label traces faithful or unfaithful, "
                       "or every claim of a trace)")  # fmt: skip
    if answer.verdict == "worse":
        return False, "the answer-level decision is worse beyond noise"
    if claim.verdict == "worse":
        return False, "claim balanced accuracy is worse beyond noise"
    better = [m for m, v in ((METRICS[0], answer), (METRICS[1], claim)) if v.verdict == "better"]
    if better:
        return True, " and ".join(better)
    why = "neither the answer-level decision nor claim balanced accuracy gains beyond noise"
    if calib.verdict == "better":
        why += " (ECE does, and ECE alone never promotes)"
    return False, why


def compare(ls: LabelSet, base: Decision, minimums: Minimums, k: int = 5) -> Comparison:
    """The base decision against the refit on ``k`` held-out folds (module docstring)."""
    h = held_out(ls, base, minimums, k)
    g = gains(h)
    promote, reason = decide(g)
    return Comparison(h, g, promote, reason)


def learning_curve(
    ls: LabelSet,
    base: Decision,
    minimums: Minimums,
    k: int,
    full: HeldOut,
    fractions: tuple[float, ...] = (0.25, 0.5),
) -> list[tuple[float, dict[str, float]]]:
    """Held-out figures of the refit fit on each of ``fractions`` of the training groups, then
    ``full`` (the comparison's, all of them)."""
    out = [(f, held_out(ls, base, minimums, k, fraction=f).figures("refit")) for f in fractions]
    return [*out, (1.0, full.figures("refit"))]
