"""A domain refit of the local judge's decision on a team's labels: the base, the run, the file.

The local judge ships fitted on public data; a team's traffic is another domain. A refit
(``ragpulse judge refit``) adapts everything its verdicts depend on to the team's labels:

- :mod:`.data` reads the labels (claim labels, trace labels) against their traces'
  chunks by the judge's own code;
- :mod:`.decision` refits the claim head and the response rule together;
- :mod:`.promote` compares the base decision and the refit on held-out folds, answer-level
  decision first, and decides whether the refit is better where it matters.

:func:`run` does all three and, when the refit is promoted, :func:`weights_text` writes the
refit decision as one weights file: the claim head's fields (the base file's, refit values)
and a ``response`` object with the response rule (``mean_below``), which the judge reads from
the same file (:func:`.response.load_response_rule`), plus a ``refit`` object recording the
labels and the held-out figures. A judge configured with the file has a new judge id (its
digest is in the id).
"""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ..claim_features import CLAIM_FEATURES
from ..response import load_response_rule
from .data import LabelSet
from .decision import Fit, Minimums, fit_decision
from .head import Decision, Head
from .promote import METRICS, Comparison, compare, learning_curve

__all__ = ["Base", "RefitRun", "read_base", "run", "shortfall", "weights_text"]


@dataclass(frozen=True)
class Base:
    """The decision a refit starts from: its weights file's fields, the decision, a label."""

    data: dict[str, Any]
    decision: Decision
    response_version: str
    name: str


def read_base(path: str | Path | None = None) -> Base:
    """The base claim weights file (default: the packaged claim head) and its response rule
    (the file's ``response`` object, else the packaged rule)."""
    from ..claim_model import load_claim_model

    packaged = inspect.signature(load_claim_model).parameters["packaged"].default
    raw = (
        Path(path).read_bytes()
        if path
        else resources.files(__package__.rpartition(".")[0]).joinpath(f"weights/{packaged}").read_bytes()
    )
    data = json.loads(raw)
    if tuple(data["features"]) != CLAIM_FEATURES or len(data["coef"]) != len(CLAIM_FEATURES):
        raise ValueError(
            f"the weights file's features are not the ones this judge computes: {data['features']}"
        )
    rule = load_response_rule(None, claim_weights=path)
    name = f"claim head v{data['version']} + response rule v{rule.version}"
    return Base(data, Decision(Head.from_weights(data), rule.mean_below), rule.version, name)


def shortfall(ls: LabelSet, minimums: Minimums, folds: int) -> str | None:
    """What the labels lack before any refit can be compared on ``folds`` held-out folds (None
    when nothing): labels of ``2 * folds`` groups, and for at least one part of the decision the
    labels :class:`.decision.Minimums` asks of it."""
    groups = len(set(ls.group))
    if groups < 2 * folds:
        what = "traces" if groups == len(ls.trace_ids) else "groups (the labels' sessions or sources)"
        return f"a held-out comparison needs labels of {2 * folds - groups} more {what}"
    head, rule = minimums.head_short(ls.labelled.y), minimums.rule_short(ls.gold)
    if head and rule:
        need_h = ", ".join(f"{n} more {kind}" for kind, n in head.items())
        need_r = ", ".join(f"{n} more {kind}" for kind, n in rule.items())
        return f"the claim head needs {need_h}, the response rule {need_r}"
    return None


@dataclass
class RefitRun:
    """A refit's held-out comparison, learning curve and, when promoted, the final fit."""

    comparison: Comparison
    curve: list[tuple[float, dict[str, float]]]
    fit: Fit | None


def run(ls: LabelSet, base: Base, minimums: Minimums, folds: int = 5, curve: bool = True) -> RefitRun:
    """Compare on held-out folds, print nothing; fit on every label when the refit is promoted.
    The labels must not fall short (:func:`shortfall`)."""
    cmp = compare(ls, base.decision, minimums, folds)
    points = learning_curve(ls, base.decision, minimums, folds, cmp.held) if curve else []
    fit = fit_decision(ls, base.decision, minimums) if cmp.promote else None
    return RefitRun(cmp, points, fit)


def _r(v: float, places: int = 4) -> float | None:
    return None if v != v else round(float(v), places)


def weights_text(base: Base, fit: Fit, ls: LabelSet, cmp: Comparison, labels_of: str) -> str:
    """The refit decision as one weights file the judge loads (module docstring)."""
    head = fit.decision.head
    xs, ys = head.knots
    version = str(base.data["version"])
    root = {k: v for k, v in base.data.items() if k not in ("response", "refit")}
    pooled = {name: cmp.held.figures(name) for name in ("base", "refit")}
    y = ls.labelled.y
    body = {
        **root,
        "version": version if version.endswith("-refit") else f"{version}-refit",
        "about": (
            "Local judge decision refit by `ragpulse judge refit` on a team's labels: the claim head "
            "(logistic, isotonic map, verdict threshold, number caps) and the response rule (response), "
            f"starting from {base.name}; the labels and held-out figures are under refit."
        ),
        "coef": [round(float(c), 5) for c in head.coef],
        "intercept": round(head.intercept, 5),
        "calibration": {"x": [round(v, 5) for v in xs], "y": [round(v, 5) for v in ys]},
        "threshold": head.threshold,
        "weak": head.weak,
        **head.caps,
        "response": {"version": f"{base.response_version.removesuffix('-refit')}-refit",
                     "mean_below": fit.decision.mean_below},  # fmt: skip
        "refit": {
            "base": base.name,
            "labels_of_judge": labels_of,
            "labels": {
                "traces": len(ls.trace_ids), "claims": len(y), "supported_claims": int((y == 1).sum()),
                "answers": int((ls.gold >= 0).sum()), "unfaithful_answers": int((ls.gold == 1).sum()),
                "trace_labels": int(ls.trace_label.sum()),
            },
            "refit_parts": {"claim_head": fit.head_refit, "response_rule": fit.rule_refit},
            "held_out": {
                m: {"base": _r(pooled["base"][m]), "refit": _r(pooled["refit"][m]), "gain": _r(g.gain),
                    "interval": [_r(g.low), _r(g.high)], "verdict": g.verdict}
                for m, g in cmp.gains.items()
            },
        },
    }  # fmt: skip
    assert set(body["refit"]["held_out"]) == set(METRICS)
    return json.dumps(body, indent=1) + "\n"
