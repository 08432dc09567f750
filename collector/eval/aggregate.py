"""Aggregates over cases: overall, per slice, and the holdout split apart.

Every aggregate carries its n (the cases where the metric applies), because a
rate over four cases and a rate over four hundred are different statements.
The headline (``overall``) and the slices are computed over the dev split;
holdout cases are aggregated separately (``holdout``) and never folded into
the headline, so a team that tunes on the eval set keeps an honest check. The
``split`` slice is the one place where both splits appear side by side.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from .bootstrap import mean_interval
from .metrics import METRICS, MetricSpec

__all__ = ["DEFAULT_SLICES", "summarize", "aggregate", "slice_value", "slice_cases", "split_of"]

DEFAULT_SLICES: tuple[str, ...] = ("query_type", "risk_level", "difficulty", "answerability", "split")


def split_of(case: dict[str, Any]) -> str:
    return "holdout" if case.get("split") == "holdout" else "dev"


def summarize(values: list[Any], spec: MetricSpec, **interval: Any) -> dict[str, Any]:
    """Mean, n and the bootstrap interval of the mean (``interval``: seed, n_resamples,
    confidence) of the non-null values (bools count as 0/1); amounts add p50, p95 and the total;
    categories give counts."""
    present = [v for v in values if v is not None]
    n = len(present)
    if spec.kind == "category":
        return {"n": n, "counts": dict(sorted(Counter(str(v) for v in present).items()))}
    if not n:
        return {"n": 0, "mean": None, "ci": None}
    arr = np.asarray(present, dtype=float)
    ci = mean_interval(arr, **interval)
    out: dict[str, Any] = {"n": n, "mean": float(arr.mean()), "ci": list(ci) if ci else None}
    if spec.kind == "amount":
        out["p50"] = float(np.percentile(arr, 50))
        out["p95"] = float(np.percentile(arr, 95))
        out["total"] = float(arr.sum())
    return out


def aggregate(results: list[dict[str, Any]], **interval: Any) -> dict[str, Any]:
    """{"n": cases, "metrics": {name: summary}} over per-case results (each with ``metrics``)."""
    return {
        "n": len(results),
        "metrics": {
            m.name: summarize([r["metrics"].get(m.name) for r in results], m, **interval) for m in METRICS
        },
    }


def slice_value(case: dict[str, Any], field: str) -> str | None:
    """A case's value for a slice field: a top-level field, or a dotted path (``provenance.service``)."""
    if field == "split":
        return split_of(case)
    node: Any = case
    for part in field.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    if node is None or isinstance(node, (dict, list)):
        return None
    return str(node)


def slice_cases(
    cases: dict[str, dict[str, Any]], results: list[dict[str, Any]], fields: list[str]
) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """{field: {value: results}}: dev results for every field, both splits for ``split``."""
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for field in fields:
        groups: dict[str, list[dict[str, Any]]] = {}
        for r in results:
            case = cases[r["case_id"]]
            if field != "split" and split_of(case) == "holdout":
                continue
            value = slice_value(case, field)
            if value is not None:
                groups.setdefault(value, []).append(r)
        out[field] = dict(sorted(groups.items()))
    return out
