"""Calibrating a judge against human labels.

- Agreement: accuracy and Cohen's kappa for categorical verdicts (a trace is
  faithful, failure mode, abstained, abstention kind); mean absolute error,
  Pearson r and within-0.1 agreement for numeric scores.
- Prediction-powered inference (PPI, as used by ARES): the mean faithfulness
  over a large judged set, corrected by the judge's average error on a small
  human-labelled set that is a random sample of it (labels of the review
  queue's random slice, when rows record a slice: :func:`ppi_sample`), with a
  normal-approximation 95% interval:

      theta = mean(f(unlabelled)) + mean(y - f(labelled))
      se^2  = var(f(unlabelled)) / N + var(y - f(labelled)) / n

- Paired bootstrap: the difference between two judges scored on the same
  items (Delta_i = s_i(B) - s_i(A)), with a percentile interval.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

from ..contract import RANDOM_SLICE, SCORE_NAMES

__all__ = [
    "accuracy",
    "cohen_kappa",
    "ppi_mean",
    "paired_bootstrap",
    "pearson",
    "CATEGORICAL",
    "NUMERIC",
    "calibration_report",
    "ppi_sample",
]

CATEGORICAL: tuple[str, ...] = ("faithful", "failure_mode", "abstained", "abstention_kind")
NUMERIC: tuple[str, ...] = SCORE_NAMES
_Z95 = 1.959963984540054


def accuracy(a: Sequence[Any], b: Sequence[Any]) -> float:
    """Share of positions where ``a`` and ``b`` agree."""
    if len(a) != len(b) or not a:
        raise ValueError("need two equally long, non-empty sequences")
    return sum(1 for x, y in zip(a, b, strict=True) if x == y) / len(a)


def cohen_kappa(a: Sequence[Any], b: Sequence[Any]) -> float:
    """Cohen's kappa: (p_o - p_e) / (1 - p_e), p_e from the two raters' marginals.
    1.0 when both raters use one identical label throughout (p_e = 1)."""
    po = accuracy(a, b)
    n = len(a)
    labels = set(a) | set(b)
    pe = sum((sum(1 for x in a if x == k) / n) * (sum(1 for y in b if y == k) / n) for k in labels)
    if pe >= 1.0:
        return 1.0
    return (po - pe) / (1 - pe)


def _var(xs: Sequence[float]) -> float:
    n = len(xs)
    if n < 2:
        return 0.0
    m = sum(xs) / n
    return sum((x - m) ** 2 for x in xs) / (n - 1)


def pearson(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Pearson correlation, None when either side is constant."""
    n = len(a)
    if n < 2:
        return None
    ma, mb = sum(a) / n, sum(b) / n
    sa = math.sqrt(sum((x - ma) ** 2 for x in a))
    sb = math.sqrt(sum((y - mb) ** 2 for y in b))
    if sa == 0 or sb == 0:
        return None
    return sum((x - ma) * (y - mb) for x, y in zip(a, b, strict=True)) / (sa * sb)


def ppi_mean(
    labelled_human: Sequence[float],
    labelled_judge: Sequence[float],
    unlabelled_judge: Sequence[float],
    z: float = _Z95,
) -> tuple[float, float, float]:
    """Prediction-powered estimate of the mean human score and its interval.

    ``labelled_*`` are paired (human, judge) scores on the small labelled set;
    ``unlabelled_judge`` are judge scores on the large set. Returns (estimate, low, high).
    """
    n, big_n = len(labelled_human), len(unlabelled_judge)
    if n == 0 or big_n == 0 or n != len(labelled_judge):
        raise ValueError("PPI needs paired labelled scores and a non-empty judged set")
    rect = [y - f for y, f in zip(labelled_human, labelled_judge, strict=True)]
    theta = sum(unlabelled_judge) / big_n + sum(rect) / n
    se = math.sqrt(_var(unlabelled_judge) / big_n + _var(rect) / n)
    return theta, theta - z * se, theta + z * se


def paired_bootstrap(
    scores_a: Sequence[float],
    scores_b: Sequence[float],
    n_boot: int = 2000,
    seed: int = 0,
    alpha: float = 0.05,
) -> tuple[float, float, float]:
    """Mean of ``b - a`` over paired items and its percentile bootstrap interval."""
    if len(scores_a) != len(scores_b) or not scores_a:
        raise ValueError("need paired, non-empty score lists")
    deltas = [b - a for a, b in zip(scores_a, scores_b, strict=True)]
    n = len(deltas)
    rng = random.Random(seed)
    means = sorted(sum(deltas[rng.randrange(n)] for _ in range(n)) / n for _ in range(n_boot))
    lo = means[int(math.floor(alpha / 2 * (n_boot - 1)))]
    hi = means[int(math.ceil((1 - alpha / 2) * (n_boot - 1)))]
    return sum(deltas) / n, lo, hi


def _categorical(record: dict[str, Any], key: str) -> Any:
    if key == "faithful":
        if "faithful" in record:
            return bool(record["faithful"])
        f = record.get("faithfulness")
        return None if f is None else f >= 1.0 - 1e-9
    return record.get(key)


def _faith(record: dict[str, Any] | None) -> float | None:
    if not record or record.get("error"):
        return None
    f = record.get("faithfulness")
    if f is None and "faithful" in record:
        return 1.0 if record["faithful"] else 0.0
    return None if f is None else float(f)


def _categorical_metrics(labelled: list[dict[str, Any]]) -> dict[str, Any]:
    """Accuracy and Cohen's kappa of the judge against the human labels, per categorical field."""
    out: dict[str, Any] = {}
    for key in CATEGORICAL:
        pairs = [
            (_categorical(r["human"], key), _categorical(r["judge"], key))
            for r in labelled
            if _categorical(r["human"], key) is not None and not r["judge"].get("error")
        ]
        if pairs:
            h, j = zip(*pairs, strict=True)
            out[key] = {
                "n": len(pairs),
                "accuracy": round(accuracy(h, j), 4),
                "kappa": round(cohen_kappa(h, j), 4),
            }
    return out


def _numeric_metrics(labelled: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean absolute error, share within 0.1 and Pearson r of the judge against the human
    scores, per numeric field."""
    out: dict[str, Any] = {}
    for key in NUMERIC:
        pairs = [
            (float(r["human"][key]), float(r["judge"][key]))
            for r in labelled
            if r["human"].get(key) is not None and r["judge"].get(key) is not None
        ]
        if pairs:
            h, j = zip(*pairs, strict=True)
            r_ = pearson(h, j)
            out[key] = {
                "n": len(pairs),
                "mae": round(sum(abs(a - b) for a, b in pairs) / len(pairs), 4),
                "within_0.1": round(sum(1 for a, b in pairs if abs(a - b) <= 0.1 + 1e-9) / len(pairs), 4),
                "pearson": None if r_ is None else round(r_, 4),
            }
    return out


def ppi_sample(
    labelled: list[dict[str, Any]], unlabelled: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str]:
    """The rows the prediction-powered estimate may use: labelled rows that are a random sample,
    and the judge records of every other judged trace; and which labels those are.

    The estimate is unbiased only when the labelled traces are a random sample of the judged
    ones. When labelled rows record the review queue's ``slice``, only the ``random`` slice's
    count as labelled; the others' judge records join the judged set (they are part of the
    population). Rows that record no slice (a labels file from another tool) all count."""
    if not any("slice" in r for r in labelled):
        return labelled, unlabelled, "all labelled rows (no slice recorded)"
    random = [r for r in labelled if r.get("slice") == RANDOM_SLICE]
    rest = [r["judge"] for r in labelled if r.get("slice") != RANDOM_SLICE]
    return random, unlabelled + rest, "the random slice only"


def _ppi_faithfulness(
    labelled: list[dict[str, Any]], unlabelled: list[dict[str, Any]]
) -> dict[str, Any] | None:
    """The prediction-powered estimate of mean faithfulness over :func:`ppi_sample`'s rows
    (None without both sets)."""
    labelled, unlabelled, labels = ppi_sample(labelled, unlabelled)
    lab = [(_faith(r["human"]), _faith(r["judge"])) for r in labelled]
    lab = [(h, j) for h, j in lab if h is not None and j is not None]
    unl = [f for f in (_faith(u) for u in unlabelled) if f is not None]
    if not (lab and unl):
        return None
    h, j = zip(*lab, strict=True)
    est, lo, hi = ppi_mean(h, j, unl)
    return {
        "estimate": round(est, 4),
        "ci95": [round(lo, 4), round(hi, 4)],
        "judge_only_mean": round(sum(unl) / len(unl), 4),
        "n_labelled": len(lab),
        "n_judged": len(unl),
        "labels": labels,
    }


def _judge_difference(labelled: list[dict[str, Any]], n_boot: int, seed: int) -> dict[str, Any] | None:
    """Paired bootstrap of the two judges' accuracy on ``faithful`` (None without ``judge_b`` rows)."""
    both = [r for r in labelled if isinstance(r.get("judge_b"), dict)]
    a_ok, b_ok = [], []
    for r in both:
        hv = _categorical(r["human"], "faithful")
        av, bv = _categorical(r["judge"], "faithful"), _categorical(r["judge_b"], "faithful")
        if hv is None or av is None or bv is None:
            continue
        a_ok.append(1.0 if av == hv else 0.0)
        b_ok.append(1.0 if bv == hv else 0.0)
    if not a_ok:
        return None
    d, lo, hi = paired_bootstrap(a_ok, b_ok, n_boot=n_boot, seed=seed)
    return {
        "metric": "accuracy on 'faithful' (judge_b - judge)",
        "n": len(a_ok),
        "judge": (both[0]["judge"] or {}).get("judge_id"),
        "judge_b": (both[0]["judge_b"] or {}).get("judge_id"),
        "delta": round(d, 4),
        "ci95": [round(lo, 4), round(hi, 4)],
        "significant": not (lo <= 0.0 <= hi),
    }


def _slices(labelled: list[dict[str, Any]]) -> dict[str, int]:
    """Labelled rows per review-queue slice, of the rows that record one ('': saved before the
    queue recorded slices); empty when no row records a slice."""
    out: dict[str, int] = {}
    for r in labelled:
        if "slice" not in r:
            continue
        key = str(r["slice"] or "")
        out[key] = out.get(key, 0) + 1
    return out


def calibration_report(
    rows: list[dict[str, Any]],
    judged: list[dict[str, Any]] | None = None,
    n_boot: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """Everything ``ragpulse calibrate`` prints, as a dict.

    ``rows``: objects with ``human`` (labels), ``judge`` (a judge output record)
    and optionally ``judge_b`` (a second judge on the same trace); rows without
    ``human`` join the unlabelled set. ``judged``: extra judge output records
    for the unlabelled set.
    """
    labelled = [r for r in rows if isinstance(r.get("human"), dict) and isinstance(r.get("judge"), dict)]
    unlabelled = [
        r["judge"] for r in rows if not isinstance(r.get("human"), dict) and isinstance(r.get("judge"), dict)
    ]
    unlabelled += list(judged or [])
    report: dict[str, Any] = {
        "labelled": len(labelled),
        "unlabelled": len(unlabelled),
        "slices": _slices(labelled),
        "metrics": {**_categorical_metrics(labelled), **_numeric_metrics(labelled)},
    }
    ppi = _ppi_faithfulness(labelled, unlabelled)
    if ppi is not None:
        report["ppi_faithfulness"] = ppi
    diff = _judge_difference(labelled, n_boot, seed)
    if diff is not None:
        report["judge_difference"] = diff
    return report
