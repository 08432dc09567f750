"""A domain refit of the local judge's claim head on a team's own claim labels.

The claim head (:mod:`.claim_model`) is a logistic model over the claim
features, an isotonic map, the verdict threshold, the number caps and the weak
band, fit on public development data. A team's reviewers label claims of
their own traffic (``ragpulse review``); :func:`refit` adapts the head to
them and :func:`compare` says whether the adapted head is better, on held-out
folds of those labels:

- Features: each labelled claim is read against its trace's chunks by the
  judge's own code (:func:`featurise`), and the columns are taken by the names
  the base weights file lists, so the refit follows whatever features the head
  has.
- Logistic: L2-regularised towards the base head's coefficients (a domain
  adaptation, not a fit from nothing on a few hundred labels); the strength is
  chosen by inner cross-validation on log-loss.
- Isotonic map and verdict threshold: from inner cross-validated outputs (as
  the development fit does); number caps from the labels where a cap's cell
  holds enough claims, else the base's; the weak band stays the base's (it is
  fit on multi-claim answers, which a label set this size cannot give).
- Folds are grouped by trace, so claims of one answer never straddle a split.

:func:`compare` scores the base head and the refit on the same held-out folds:
balanced accuracy of the verdicts and ECE of the probabilities. Per metric,
the gain is the mean over the folds of the per-fold improvement, and the
folds' noise twice its standard error. The refit is better when one metric
gains by more than its noise and neither loses by more than its noise.
Verdicts that the judge's rules decide whatever the probability (one chunk
alone supports the claim; the claim conflicts with its chunk) are the same
for both heads, so a refit can only move the rest.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..record import normalise_input
from ..text.tokens import profile
from .claim_features import CLAIM_FEATURES, ChunkIndex, claim_evidence
from .claims import normalise_claim
from .evidence import build_evidence
from .judge import QUESTION_WORDS
from .rules.approximate import claim_profile
from .rules.conflicts import conflicts
from .support import claim_view, load_model

__all__ = ["Labelled", "Comparison", "featurise", "refit", "compare", "weights_text", "THRESHOLDS", "L2_GRID"]

THRESHOLDS = np.round(np.arange(0.20, 0.81, 0.01), 2)
L2_GRID = (1.0, 4.0, 16.0, 64.0)
_CAPS = ("number_cap", "joint_number_cap", "ordinal_number_cap")
_MIN_CAP_CELL = 10


@dataclass
class Labelled:
    """Labelled claims as arrays: features (the base file's columns), labels (1 = supported),
    the trace of each claim, and the judge's verdict flags."""

    x: np.ndarray
    y: np.ndarray
    group: np.ndarray
    strong: np.ndarray  # one chunk supports the claim on its own (the judge's verdict rule)
    neg: np.ndarray  # the claim conflicts with its best chunk (negation, sufficiency)
    lacks: np.ndarray  # the best chunk lacks one of the claim's numbers
    elsewhere: np.ndarray  # ... which another chunk has next to the claim's words
    ordinals: np.ndarray  # every number the best chunk lacks is an ordinal


def featurise(
    traces: dict[str, dict[str, Any]], claims: Sequence[tuple[str, str, int]], features: Sequence[str]
) -> Labelled:
    """``claims``: (trace id, claim text, label) with ``traces`` holding each trace's judge input
    record; ``features``: the columns to keep, by name (the base weights file's list)."""
    cols = [CLAIM_FEATURES.index(name) for name in features]
    num_miss = CLAIM_FEATURES.index("num_miss")
    model = load_model()
    rows: list[tuple[list[float], int, str, bool, bool, bool, bool, bool]] = []
    by_trace: dict[str, list[tuple[str, int]]] = {}
    for tid, text, label in claims:
        by_trace.setdefault(tid, []).append((text, label))
    for tid, items in by_trace.items():
        rec = normalise_input(traces[tid])
        chunks = build_evidence(rec["chunks"])
        qstems = frozenset(s for s in profile(rec["query"]).stem_set if s not in QUESTION_WORDS)
        index = ChunkIndex(chunks)
        for text, label in items:
            cp = claim_profile(normalise_claim(text), chunks, index.all_numbers)
            ce = claim_evidence(claim_view(cp, qstems), index, model, text)
            neg = bool(chunks) and ce.best >= 0 and conflicts(cp, chunks[ce.best])
            x = [float(ce.features[c]) for c in cols]
            lacks = ce.features[num_miss] > 0
            rows.append(
                (x, label, tid, ce.one_chunk_supports, neg, lacks, ce.numbers_elsewhere, ce.ordinals_missing)
            )
    if not rows:
        raise ValueError("no labelled claims")
    x, y, g, strong, neg, lacks, elsewhere, ordinals = zip(*rows, strict=True)
    return Labelled(np.array(x, dtype=float), np.array(y, dtype=int), np.array(g), np.array(strong, dtype=bool),
                    np.array(neg, dtype=bool), np.array(lacks, dtype=bool), np.array(elsewhere, dtype=bool),
                    np.array(ordinals, dtype=bool))  # fmt: skip


def folds_of(groups: np.ndarray, k: int, seed: int = 0) -> np.ndarray:
    """The fold of each row: a hash of its trace id, so a trace's claims share a fold."""
    return np.array([int(hashlib.sha1(f"{seed}:{g}".encode()).hexdigest()[:8], 16) % k for g in groups])


def _sigmoid(s: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(s, -30, 30)))


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
        p = _sigmoid(xa @ beta)
        g = xa.T @ (p - y) + reg * (beta - beta0)
        h = (xa * (p * (1 - p))[:, None]).T @ xa + np.diag(reg + 1e-9)
        step = np.linalg.solve(h, g)
        beta -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return beta[:-1], float(beta[-1])


def isotonic(raw: np.ndarray, y: np.ndarray) -> tuple[list[float], list[float]]:
    """Pool-adjacent-violators: knots (block mean of ``raw``, block rate), increasing."""
    blocks: list[list[float]] = []  # [sum raw, sum y, count]
    for i in np.argsort(raw, kind="mergesort"):
        blocks.append([float(raw[i]), float(y[i]), 1.0])
        while len(blocks) > 1 and blocks[-2][1] / blocks[-2][2] >= blocks[-1][1] / blocks[-1][2]:
            a = blocks.pop()
            for j in range(3):
                blocks[-1][j] += a[j]
    return [b[0] / b[2] for b in blocks], [b[1] / b[2] for b in blocks]


def balanced_accuracy(pred: np.ndarray, gold: np.ndarray) -> float:
    """Mean recall of both classes (nan when one class is absent)."""
    pos, neg = gold == 1, gold == 0
    if not pos.any() or not neg.any():
        return float("nan")
    return 0.5 * (float(np.mean(pred[pos])) + float(np.mean(~pred[neg])))


def ece(prob: np.ndarray, gold: np.ndarray, bins: int = 10) -> float:
    """Expected calibration error over equal-width bins."""
    idx = np.minimum((prob * bins).astype(int), bins - 1)
    total = 0.0
    for b in range(bins):
        m = idx == b
        if m.any():
            total += m.sum() / len(prob) * abs(float(prob[m].mean()) - float(gold[m].mean()))
    return total


@dataclass
class Head:
    """A claim head as the judge applies it (ClaimModel.probability and the verdict rule)."""

    coef: np.ndarray
    intercept: float
    knots: tuple[list[float], list[float]]
    threshold: float
    caps: dict[str, float]
    weak: float

    @classmethod
    def from_weights(cls, data: dict[str, Any]) -> Head:
        cal = data.get("calibration") or {}
        caps = {k: float(data.get(k, data["number_cap"])) for k in _CAPS}
        return cls(np.array(data["coef"], dtype=float), float(data["intercept"]),
                   (list(cal.get("x", [])), list(cal.get("y", []))), float(data["threshold"]), caps,
                   float(data["weak"]))  # fmt: skip

    def raw(self, d: Labelled, rows: np.ndarray) -> np.ndarray:
        return _sigmoid(d.x[rows] @ self.coef + self.intercept)

    def probability(self, d: Labelled, rows: np.ndarray, raw: np.ndarray | None = None) -> np.ndarray:
        """Calibrated, capped probabilities of ``rows`` (a conflict caps like a missing number)."""
        r = self.raw(d, rows) if raw is None else raw
        xs, ys = self.knots
        p = np.interp(r, xs, ys) if xs else r
        return _capped(p, d, rows, self.caps)

    def verdict(self, d: Labelled, rows: np.ndarray, p: np.ndarray | None = None) -> np.ndarray:
        """The judge's verdict (supported) of ``rows``."""
        p = self.probability(d, rows) if p is None else p
        return _score(p, d, rows) >= self.threshold


def _capped(p: np.ndarray, d: Labelled, rows: np.ndarray, caps: dict[str, float]) -> np.ndarray:
    lacks, elsewhere, ordinals = d.lacks[rows], d.elsewhere[rows], d.ordinals[rows]
    p = np.where(lacks & elsewhere, np.minimum(p, caps["joint_number_cap"]), p)
    p = np.where(lacks & ~elsewhere & ordinals, np.minimum(p, caps["ordinal_number_cap"]), p)
    alone = lacks & ~elsewhere & ~ordinals
    return np.where(alone | d.neg[rows], np.minimum(p, caps["number_cap"]), p)


def _score(p: np.ndarray, d: Labelled, rows: np.ndarray) -> np.ndarray:
    """The score the threshold applies to: 0 on a conflict, 1 when one chunk alone supports."""
    return np.where(d.neg[rows], 0.0, np.where(d.strong[rows], 1.0, p))


def _inner_raw(d: Labelled, rows: np.ndarray, base: Head, l2: float, k: int = 4) -> np.ndarray:
    """Logistic outputs of ``rows`` cross-validated within them (grouped by trace)."""
    out = np.full(len(d.y), np.nan)
    fold = folds_of(d.group, k, seed=1)
    for f in range(k):
        tr, te = rows & (fold != f), rows & (fold == f)
        if not te.any() or not tr.any():
            continue
        c, b = fit_logistic_towards(d.x[tr], d.y[tr], base.coef, base.intercept, l2)
        out[te] = _sigmoid(d.x[te] @ c + b)
    return out


def _log_loss(p: np.ndarray, y: np.ndarray) -> float:
    p = np.clip(p, 1e-6, 1 - 1e-6)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def refit(d: Labelled, rows: np.ndarray, base: Head) -> Head:
    """The base head adapted to the labels of ``rows`` (module docstring)."""
    y = d.y
    losses = {}
    for l2 in L2_GRID:
        oof = _inner_raw(d, rows, base, l2)
        m = rows & ~np.isnan(oof)
        losses[l2] = _log_loss(oof[m], y[m]) if m.any() else float("inf")
    l2 = min(L2_GRID, key=lambda v: (losses[v], -v))
    coef, b = fit_logistic_towards(d.x[rows], y[rows], base.coef, base.intercept, l2)
    oof = _inner_raw(d, rows, base, l2)
    m = rows & ~np.isnan(oof)
    xs, ys = isotonic(oof[m], y[m])
    caps = dict(base.caps)
    cells = {
        "number_cap": d.lacks & ~d.elsewhere & ~d.ordinals,
        "joint_number_cap": d.lacks & d.elsewhere,
        "ordinal_number_cap": d.lacks & ~d.elsewhere & d.ordinals,
    }
    for key, cell in cells.items():
        if (cell & m).sum() >= _MIN_CAP_CELL:
            caps[key] = round(float(y[cell & m].mean()), 4)
    head = Head(coef, b, (xs, ys), base.threshold, caps, base.weak)
    p = head.probability(d, m, oof[m])
    score, gold = _score(p, d, m), y[m]
    head.threshold = float(
        max(THRESHOLDS, key=lambda t: (np.nan_to_num(balanced_accuracy(score >= t, gold)), -abs(t - 0.5)))
    )
    return head


@dataclass
class Comparison:
    """Held-out figures of the base head and the refit, and the decision."""

    folds: int
    per_fold: list[dict[str, float]] = field(default_factory=list)  # ba/ece of both, per fold
    pooled: dict[str, dict[str, float]] = field(default_factory=dict)  # "shipped"/"refit" -> ba, ece
    gains: dict[str, tuple[float, float, int]] = field(default_factory=dict)  # metric -> (mean, SE, folds)
    better: bool = False

    def verdicts(self) -> dict[str, str]:
        """Per metric: ``better``, ``worse`` or ``within noise`` (``too few folds`` below 3)."""
        out = {}
        for metric, (gain, se, n) in self.gains.items():
            if n < 3:
                out[metric] = "too few folds"
            elif gain > 2 * se and gain > 0:
                out[metric] = "better"
            elif gain < -2 * se and gain < 0:
                out[metric] = "worse"
            else:
                out[metric] = "within noise"
        return out


def _gain(values: list[float]) -> tuple[float, float, int]:
    v = np.array([x for x in values if not np.isnan(x)])
    if len(v) < 2:
        return float("nan"), float("nan"), len(v)
    return float(v.mean()), float(v.std(ddof=1) / np.sqrt(len(v))), len(v)


def compare(d: Labelled, base: Head, k: int = 5) -> Comparison:
    """The base head against the refit on ``k`` held-out folds grouped by trace."""
    fold = folds_of(d.group, k)
    oof = {"shipped": np.zeros(len(d.y)), "refit": np.zeros(len(d.y))}
    verdict = {"shipped": np.zeros(len(d.y), dtype=bool), "refit": np.zeros(len(d.y), dtype=bool)}
    cmp = Comparison(folds=k)
    for f in range(k):
        te = fold == f
        if not te.any():
            continue
        head = refit(d, ~te, base)
        row = {}
        for name, h in (("shipped", base), ("refit", head)):
            oof[name][te] = h.probability(d, te)
            verdict[name][te] = h.verdict(d, te, oof[name][te])
            row[f"{name}_ba"] = balanced_accuracy(verdict[name][te], d.y[te])
            row[f"{name}_ece"] = ece(oof[name][te], d.y[te])
        cmp.per_fold.append(row)
    for name in oof:
        cmp.pooled[name] = {"ba": balanced_accuracy(verdict[name], d.y), "ece": ece(oof[name], d.y)}
    cmp.gains = {
        "balanced accuracy": _gain([r["refit_ba"] - r["shipped_ba"] for r in cmp.per_fold]),
        "ECE": _gain([r["shipped_ece"] - r["refit_ece"] for r in cmp.per_fold]),  # lower is better
    }
    v = cmp.verdicts()
    cmp.better = "better" in v.values() and "worse" not in v.values() and "too few folds" not in v.values()
    return cmp


def weights_text(base: dict[str, Any], head: Head, about: str) -> str:
    """The refit head as a weights file the judge loads (the base file's fields, refit values)."""
    xs, ys = head.knots
    body = {
        **base,
        "version": f"{base['version']}-refit",
        "about": about,
        "coef": [round(float(c), 5) for c in head.coef],
        "intercept": round(head.intercept, 5),
        "calibration": {"x": [round(v, 5) for v in xs], "y": [round(v, 5) for v in ys]},
        "threshold": head.threshold,
        "weak": head.weak,
        **head.caps,
    }
    return json.dumps(body, indent=1) + "\n"


def read_base(path: str | Path | None) -> tuple[dict[str, Any], Head]:
    """The base weights file (default: the packaged claim head) parsed, and its head."""
    import inspect
    from importlib import resources

    from .claim_model import load_claim_model

    packaged = inspect.signature(load_claim_model).parameters["packaged"].default
    raw = (
        Path(path).read_bytes()
        if path
        else resources.files(__package__).joinpath(f"weights/{packaged}").read_bytes()
    )
    data = json.loads(raw)
    unknown = [f for f in data["features"] if f not in CLAIM_FEATURES]
    if unknown:
        raise ValueError(f"the weights file names features this judge does not compute: {unknown}")
    return data, Head.from_weights(data)
