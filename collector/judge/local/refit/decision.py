"""Refit the local judge's whole decision on a team's labels: claim head and response rule.

A refit of the claim head alone moves its probability scale under a response rule fit on
the old one (a refit that raised the verdict threshold to 0.81 left the packaged
``mean_below`` of 0.63 below almost every answer's mean claim score, and answer-level recall
fell from 0.66 to 0.09). So :func:`fit_decision` fits both, in order:

1. **Claim head** (when the claim labels reach :class:`Minimums`): the logistic model
   L2-regularised towards the base head's coefficients (a domain adaptation, not a fit from
   nothing on a few hundred labels; the strength by inner cross-validation on log-loss,
   folds grouped as the labels are), the isotonic map and the number caps from inner
   cross-validated outputs, and the verdict threshold over the whole range (0.01 to 0.99)
   by claim balanced accuracy, ties to the base threshold.
2. **Response rule** ``mean_below`` over the whole range (0 to 1), on the inner
   cross-validated probabilities of the claims the judge extracts from each labelled answer.
   First the value that carries the base decision over to the new head: the one whose
   verdicts agree most with the base decision's on these answers (the base value when the
   head was kept). Then, when the answer labels reach :class:`Minimums`, the value closest to
   it among those whose answer-level balanced accuracy falls short of the best by no more
   than one bootstrap standard error (Breiman's one-standard-error rule: among values the
   labels cannot tell apart, the one that changes the least). With few answer labels the
   rule moves with the head and no further.

Everything else (the weak band, which the response verdict no longer reads) stays the base's.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

import numpy as np

from .data import Claims, LabelSet
from .head import Decision, Head, answer_flags, settle, sigmoid

__all__ = ["L2_GRID", "MEAN_GRID", "THRESHOLDS", "Fit", "Minimums", "fit_decision", "folds_of"]

THRESHOLDS = np.round(np.arange(0.01, 1.0, 0.01), 2)
MEAN_GRID = np.round(np.arange(0.0, 1.0001, 0.01), 2)
L2_GRID = (1.0, 4.0, 16.0, 64.0, 256.0)
INNER_FOLDS = 4
RULE_DRAWS = 200
_MIN_CAP_CELL = 10


@dataclass(frozen=True)
class Minimums:
    """Labels a part of the decision needs before it is refit: claim labels (and of each kind,
    supported and not) for the claim head, labelled answers (and of each kind) for the
    response rule."""

    claims: int = 150
    claims_each: int = 30
    answers: int = 40
    answers_each: int = 10

    def head_short(self, y: np.ndarray) -> dict[str, int]:
        """What the claim labels ``y`` lack: kind -> how many more."""
        pos = int((y == 1).sum())
        return _short(
            {"claim labels": (len(y), self.claims), "supported claims": (pos, self.claims_each),
             "unsupported or contradicted claims": (len(y) - pos, self.claims_each)}
        )  # fmt: skip

    def rule_short(self, gold: np.ndarray) -> dict[str, int]:
        """What the answer labels ``gold`` (1 hallucinated, 0 faithful, -1 none) lack."""
        pos, neg = int((gold == 1).sum()), int((gold == 0).sum())
        return _short(
            {"labelled answers": (pos + neg, self.answers), "faithful answers": (neg, self.answers_each),
             "unfaithful answers": (pos, self.answers_each)}
        )  # fmt: skip


def _short(have_need: dict[str, tuple[int, int]]) -> dict[str, int]:
    return {kind: need - have for kind, (have, need) in have_need.items() if have < need}


@dataclass(frozen=True)
class Fit:
    """A refit decision and which of its parts the labels moved."""

    decision: Decision
    head_refit: bool
    rule_refit: bool
    l2: float | None = None


def folds_of(groups: np.ndarray, k: int, seed: int = 0) -> np.ndarray:
    """The fold of each row: a hash of its group, so a group's rows share a fold."""
    return np.array([int(hashlib.sha1(f"{seed}:{g}".encode()).hexdigest()[:8], 16) % k for g in groups])


def fit_logistic_towards(
    x: np.ndarray, y: np.ndarray, coef0: np.ndarray, b0: float, l2: float, iterations: int = 50
) -> tuple[np.ndarray, float]:
    """Logistic regression by Newton steps with the penalty ``l2/2 * |beta - beta0|^2`` (the
    intercept penalised a hundredth as much): the base head, moved as far as the labels ask."""
    n, d = x.shape
    xa = np.hstack([x, np.ones((n, 1))])
    beta0 = np.append(coef0, b0)
    beta = beta0.copy()
    reg = np.full(d + 1, l2)
    reg[-1] = l2 / 100
    for _ in range(iterations):
        p = sigmoid(xa @ beta)
        g = xa.T @ (p - y) + reg * (beta - beta0)
        h = (xa * (p * (1 - p))[:, None]).T @ xa + np.diag(reg + 1e-9)
        step = np.linalg.solve(h, g)
        beta -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return beta[:-1], float(beta[-1])


def isotonic(raw: np.ndarray, y: np.ndarray) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Pool-adjacent-violators: knots (block mean of ``raw``, block rate), increasing."""
    blocks: list[list[float]] = []  # [sum raw, sum y, count]
    for i in np.argsort(raw, kind="mergesort"):
        blocks.append([float(raw[i]), float(y[i]), 1.0])
        while len(blocks) > 1 and blocks[-2][1] / blocks[-2][2] >= blocks[-1][1] / blocks[-1][2]:
            a = blocks.pop()
            for j in range(3):
                blocks[-1][j] += a[j]
    return tuple(b[0] / b[2] for b in blocks), tuple(b[1] / b[2] for b in blocks)


def _log_loss(p: np.ndarray, y: np.ndarray) -> float:
    p = np.clip(p, 1e-6, 1 - 1e-6)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def _inner_raw(ls: LabelSet, base: Head, l2: float, judged: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """Logistic outputs of the labelled claims (and, with ``judged``, of the extracted claims)
    cross-validated over :data:`INNER_FOLDS` folds of the label set's groups."""
    lab = ls.labelled
    fold = folds_of(ls.group, INNER_FOLDS, seed=1)
    out = np.full(len(lab), np.nan)
    out_j = np.full(len(ls.judged), np.nan) if judged else None
    for f in range(INNER_FOLDS):
        tr, te = fold[lab.trace] != f, fold[lab.trace] == f
        if not tr.any() or len(np.unique(lab.y[tr])) < 2:
            continue
        c, b = fit_logistic_towards(lab.x[tr], lab.y[tr], base.coef, base.intercept, l2)
        out[te] = sigmoid(lab.x[te] @ c + b)
        if out_j is not None:
            tj = fold[ls.judged.trace] == f
            out_j[tj] = sigmoid(ls.judged.x[tj] @ c + b)
    return out, out_j


def _threshold(head: Head, lab: Claims, p: np.ndarray, base_threshold: float) -> float:
    """The verdict threshold of best claim balanced accuracy, ties to the base threshold."""
    clears = lab.strong[None, :] | (p[None, :] >= THRESHOLDS[:, None])
    supported = clears & lab.rests[None, :]
    pos, neg = lab.y == 1, lab.y == 0
    ba = 0.5 * (supported[:, pos].mean(1) + (~supported[:, neg]).mean(1))
    best = np.flatnonzero(ba >= ba.max() - 1e-12)
    return float(THRESHOLDS[best[np.argmin(np.abs(THRESHOLDS[best] - base_threshold))]])


def fit_head(ls: LabelSet, base: Head) -> tuple[Head, np.ndarray, float]:
    """The claim head refit on the labelled claims (module docstring, step 1), the inner
    cross-validated probabilities of the extracted claims, and the L2 strength chosen."""
    lab, y = ls.labelled, ls.labelled.y
    losses = {}
    for l2 in L2_GRID:
        oof, _ = _inner_raw(ls, base, l2, judged=False)
        m = ~np.isnan(oof)
        losses[l2] = _log_loss(oof[m], y[m]) if m.any() else float("inf")
    l2 = min(L2_GRID, key=lambda v: (losses[v], -v))
    coef, b = fit_logistic_towards(lab.x, y, base.coef, base.intercept, l2)
    oof, oof_j = _inner_raw(ls, base, l2, judged=True)
    m = ~np.isnan(oof)
    caps = dict(base.caps)
    cells = {
        "number_cap": lab.lacks & ~lab.elsewhere & ~lab.ordinals,
        "joint_number_cap": lab.lacks & lab.elsewhere,
        "ordinal_number_cap": lab.lacks & ~lab.elsewhere & lab.ordinals,
    }
    for key, cell in cells.items():
        if (cell & m).sum() >= _MIN_CAP_CELL:
            caps[key] = round(float(y[cell & m].mean()), 4)
    head = Head(coef, b, isotonic(oof[m], y[m]), base.threshold, caps, base.weak)
    p = head.probability(lab.take(m), oof[m])
    head = replace(head, threshold=_threshold(head, lab.take(m), p, base.threshold))
    assert oof_j is not None
    raw_j = np.where(np.isnan(oof_j), head.raw(ls.judged), oof_j)
    return head, head.probability(ls.judged, raw_j), l2


def _group_counts(flags: np.ndarray, gold: np.ndarray, group: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per group: hallucinated answers, faithful ones, and per grid row of ``flags`` the
    hallucinated ones flagged and the faithful ones not flagged."""
    _, gi = np.unique(group, return_inverse=True)
    n_groups = gi.max() + 1
    pos, neg = gold == 1, gold == 0

    def per_group(weights: np.ndarray) -> np.ndarray:
        return np.stack([np.bincount(gi, weights=w, minlength=n_groups) for w in np.atleast_2d(weights)])

    return per_group(pos)[0], per_group(neg)[0], per_group(flags & pos), per_group(~flags & neg)


def _one_se(flags: np.ndarray, gold: np.ndarray, group: np.ndarray, carry: float) -> float:
    """``mean_below`` by the one-standard-error rule towards ``carry`` (module docstring)."""
    npos, nneg, hit, rej = _group_counts(flags, gold, group)
    ba = 0.5 * (hit.sum(1) / npos.sum() + rej.sum(1) / nneg.sum())
    best = int(np.argmax(ba))
    rng = np.random.default_rng(0)
    w = rng.multinomial(len(npos), np.full(len(npos), 1 / len(npos)), size=RULE_DRAWS).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = 0.5 * ((w @ hit.T) / (w @ npos)[:, None] + (w @ rej.T) / (w @ nneg)[:, None])
    boot = boot[~np.isnan(boot).any(1)]
    se = (boot[:, [best]] - boot).std(0) if len(boot) > 1 else np.zeros(len(ba))
    within = np.flatnonzero(ba[best] - ba <= se + 1e-12)
    return float(MEAN_GRID[within[np.argmin(np.abs(MEAN_GRID[within] - carry))]])


def fit_rule(ls: LabelSet, head: Head, p_judged: np.ndarray, base: Decision, carry_over: bool,
             minimums: Minimums) -> tuple[float, bool]:  # fmt: skip
    """``mean_below`` for ``head`` (module docstring, step 2) from the extracted claims'
    probabilities ``p_judged``, and whether the answer labels moved it."""
    n = len(ls.trace_ids)
    supported, p = settle(ls.judged, p_judged, head.threshold, head.caps["number_cap"])
    flags = answer_flags(ls.judged, n, supported, p, head.threshold, MEAN_GRID)
    carry = base.mean_below
    if carry_over:
        agree = (flags == base.answers(ls.judged, n)[None, :]).mean(1)
        best = np.flatnonzero(agree >= agree.max() - 1e-12)
        carry = float(MEAN_GRID[best[np.argmin(np.abs(MEAN_GRID[best] - base.mean_below))]])
    if minimums.rule_short(ls.gold):
        return carry, False
    has = ls.gold >= 0
    return _one_se(flags[:, has], ls.gold[has], ls.group[has], carry), True


def fit_decision(ls: LabelSet, base: Decision, minimums: Minimums) -> Fit:
    """The decision refit on ``ls`` (module docstring): the parts the labels suffice for."""
    head, l2, head_refit = base.head, None, not minimums.head_short(ls.labelled.y)
    if head_refit:
        head, p_judged, l2 = fit_head(ls, base.head)
    else:
        p_judged = head.probability(ls.judged)
    mean_below, rule_refit = fit_rule(ls, head, p_judged, base, head_refit, minimums)
    return Fit(Decision(head, mean_below), head_refit, rule_refit, l2)
