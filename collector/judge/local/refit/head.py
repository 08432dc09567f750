"""The local judge's decision on arrays: claim head, verdict rule and response rule.

:class:`Decision` is what a refit fits and what its weights file holds: the claim head (a
logistic model over the claim features, an isotonic map, the number caps and the verdict
threshold, :mod:`.claim_model`) and the response rule's ``mean_below`` (:mod:`.response`).
Applied to the claims of :class:`.data.Claims` it gives what the judge gives:

- :meth:`Head.probability`: the calibrated, capped probability the judge rounds to four places;
- :func:`settle`: the verdict rule of :func:`.reading.settle` on arrays (a claim clears when one
  chunk supports it or its probability reaches the threshold; a cleared claim is supported when
  it rests on a chunk that does not conflict with it, and capped when every one conflicts);
- :func:`answer_flags`: ``ResponseRule.hallucinated`` on arrays (a claim is not supported, and
  one is contradicted or the mean :func:`.response.claim_score` is below ``mean_below``), for
  one ``mean_below`` or a grid of them.

``tests/test_judge_refit_parity.py`` holds these equal to the judge's own verdicts,
probabilities and response verdicts. The metrics the refit is judged by are here too:
balanced accuracy and expected calibration error.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .data import Claims

__all__ = ["CAPS", "Decision", "Head", "answer_flags", "balanced_accuracy", "ece", "settle", "sigmoid"]

CAPS: tuple[str, ...] = ("number_cap", "joint_number_cap", "ordinal_number_cap")


def sigmoid(s: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(s, -30, 30)))


@dataclass(frozen=True)
class Head:
    """A claim head as :class:`.claim_model.ClaimModel` applies it."""

    coef: np.ndarray
    intercept: float
    knots: tuple[tuple[float, ...], tuple[float, ...]]
    threshold: float
    caps: dict[str, float]
    weak: float

    @classmethod
    def from_weights(cls, data: dict[str, Any]) -> Head:
        cal = data.get("calibration") or {}
        caps = {k: float(data.get(k, data["number_cap"])) for k in CAPS}
        return cls(np.array(data["coef"], dtype=float), float(data["intercept"]),
                   (tuple(cal.get("x", [])), tuple(cal.get("y", []))), float(data["threshold"]), caps,
                   float(data["weak"]))  # fmt: skip

    def raw(self, c: Claims) -> np.ndarray:
        """The uncalibrated logistic probability of each claim."""
        return sigmoid(c.x @ self.coef + self.intercept)

    def probability(self, c: Claims, raw: np.ndarray | None = None) -> np.ndarray:
        """The calibrated probability, capped where the best chunk lacks a number, rounded to
        four places as the judge rounds it; ``raw`` in place of :meth:`raw` when given."""
        r = self.raw(c) if raw is None else raw
        xs, ys = self.knots
        p = np.interp(r, xs, ys) if xs else r
        caps = self.caps
        p = np.where(c.lacks & c.elsewhere, np.minimum(p, caps["joint_number_cap"]), p)
        p = np.where(c.lacks & ~c.elsewhere & c.ordinals, np.minimum(p, caps["ordinal_number_cap"]), p)
        p = np.where(c.lacks & ~c.elsewhere & ~c.ordinals, np.minimum(p, caps["number_cap"]), p)
        return np.round(p, 4)


@dataclass(frozen=True)
class Decision:
    """The claim head and the response rule: everything between a trace and its verdict."""

    head: Head
    mean_below: float

    def claims(self, c: Claims, p: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Each claim's verdict (supported) and its probability after the conflict cap."""
        p = self.head.probability(c) if p is None else p
        return settle(c, p, self.head.threshold, self.head.caps["number_cap"])

    def answers(self, judged: Claims, n_traces: int) -> np.ndarray:
        """Whether each trace's answer is hallucinated, from the claims the judge extracts."""
        supported, p = self.claims(judged)
        return answer_flags(judged, n_traces, supported, p, self.head.threshold, np.array([self.mean_below]))[
            0
        ]

    def with_threshold(self, threshold: float) -> Decision:
        return replace(self, head=replace(self.head, threshold=float(threshold)))


def settle(c: Claims, p: np.ndarray, threshold: float, number_cap: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`.reading.settle` on arrays: (supported, probability after the conflict cap)."""
    clears = c.strong | (p >= threshold)
    return clears & c.rests, np.where(clears & c.conflicted, np.minimum(p, number_cap), p)


def answer_flags(
    judged: Claims,
    n_traces: int,
    supported: np.ndarray,
    p: np.ndarray,
    threshold: float,
    mean_below: np.ndarray,
) -> np.ndarray:
    """``[len(mean_below), n_traces]``: whether each answer is hallucinated at each
    ``mean_below``, from its claims' verdicts (``supported``; a claim not supported is
    contradicted where a chunk contradicts it) and probabilities ``p``. An answer without
    claims is never hallucinated (the judge's verdict is None)."""
    contra = ~supported & judged.contradicted
    score = np.where(supported, np.maximum(p, threshold), np.where(contra | (p >= threshold), 0.0, p))
    t = judged.trace
    n = np.bincount(t, minlength=n_traces)
    unsupported = np.bincount(t, weights=~supported, minlength=n_traces) > 0
    any_contra = np.bincount(t, weights=contra, minlength=n_traces) > 0
    mean = np.bincount(t, weights=score, minlength=n_traces) / np.maximum(n, 1)
    return unsupported[None, :] & (any_contra[None, :] | (mean[None, :] < np.asarray(mean_below)[:, None]))


def balanced_accuracy(pred: np.ndarray, gold: np.ndarray) -> float:
    """Mean recall of both classes (nan when one class is absent)."""
    pos, neg = gold == 1, gold == 0
    if not pos.any() or not neg.any():
        return float("nan")
    return 0.5 * (float(np.mean(pred[pos])) + float(np.mean(~pred[neg])))


def ece(prob: np.ndarray, gold: np.ndarray, bins: int = 10) -> float:
    """Expected calibration error over equal-width bins (nan without claims)."""
    if not len(prob):
        return float("nan")
    idx = np.minimum((prob * bins).astype(int), bins - 1)
    total = 0.0
    for b in range(bins):
        m = idx == b
        if m.any():
            total += m.sum() / len(prob) * abs(float(prob[m].mean()) - float(gold[m].mean()))
    return total
