"""The offline evaluation of a run against an eval set: per-case metrics, aggregates, slices,
the holdout apart, and the paired comparison with a baseline run.

:func:`evaluate` returns the ``--json`` document of DESIGN.md ("The eval set"):
``{"judge_id", "cases": [{"case_id", "metrics", ...}], "overall", "holdout",
"slices", "comparison"}``, plus the settings that make it reproducible.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .aggregate import DEFAULT_SLICES, aggregate, slice_cases, slice_value, split_of
from .bootstrap import compare
from .entail import gather_facts
from .metrics import case_details, case_metrics, null_metrics

__all__ = ["score_run", "evaluate", "Progress"]

Progress = Callable[[str], None]
MISSING = "no record for this case in the run"


def score_run(
    judge: Any, cases: list[dict[str, Any]], run: dict[str, dict[str, Any]], fields: list[str]
) -> list[dict[str, Any]]:
    """Per-case results of one run (cases without a run record get null metrics and an error)."""
    present = [c for c in cases if c["id"] in run]
    facts = gather_facts(judge, [(c, run[c["id"]]) for c in present])
    by_id = dict(zip((c["id"] for c in present), facts, strict=True))
    out: list[dict[str, Any]] = []
    for case in cases:
        f = by_id.get(case["id"])
        rec = run.get(case["id"], {})
        if f is None:
            metrics = null_metrics()
            details: dict[str, Any] = {"error": MISSING}
        else:
            metrics, details = case_metrics(case, rec, f), case_details(case, f)
        out.append(
            {
                "case_id": case["id"],
                "split": split_of(case),
                "slices": {k: slice_value(case, k) for k in fields},
                "answer": rec.get("answer"),
                "metrics": metrics,
                "details": details,
            }
        )
    return out


def _aggregates(
    cases: dict[str, dict[str, Any]],
    results: list[dict[str, Any]],
    fields: list[str],
    settings: dict[str, Any],
) -> dict[str, Any]:
    dev = [r for r in results if r["split"] == "dev"]
    hold = [r for r in results if r["split"] == "holdout"]
    groups = slice_cases(cases, results, fields)
    return {
        "overall": aggregate(dev, **settings),
        "holdout": aggregate(hold, **settings),
        "slices": {f: {v: aggregate(rs, **settings) for v, rs in vals.items()} for f, vals in groups.items()},
    }


def _comparison(
    cases: dict[str, dict[str, Any]],
    results: list[dict[str, Any]],
    base: list[dict[str, Any]],
    fields: list[str],
    settings: dict[str, Any],
) -> dict[str, Any]:
    by_case = {r["case_id"]: r for r in base}
    dev = [r for r in results if r["split"] == "dev"]
    hold = [r for r in results if r["split"] == "holdout"]
    groups = slice_cases(cases, results, fields)
    return {
        "overall": compare(dev, by_case, **settings),
        "holdout": compare(hold, by_case, **settings),
        "slices": {
            f: {v: compare(rs, by_case, **settings) for v, rs in vals.items()} for f, vals in groups.items()
        },
        "baseline": {"overall": aggregate([r for r in base if r["split"] == "dev"], **settings)},
    }


def evaluate(
    judge: Any,
    cases: list[dict[str, Any]],
    run: dict[str, dict[str, Any]],
    *,
    baseline: dict[str, dict[str, Any]] | None = None,
    slices: list[str] | None = None,
    seed: int = 0,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Evaluate ``run`` (records by case id) on ``cases``; with ``baseline``, compare paired."""
    fields = list(dict.fromkeys([*DEFAULT_SLICES, *(slices or [])]))
    say = progress or (lambda _msg: None)
    say(f"judging {len(run)} run records against {len(cases)} cases")
    results = score_run(judge, cases, run, fields)
    by_id = {c["id"]: c for c in cases}
    settings = {"seed": seed, "n_resamples": n_resamples, "confidence": confidence}
    doc: dict[str, Any] = {
        "judge_id": judge.judge_id,
        "settings": {**settings, "slices": fields},
        "cases": results,
        **_aggregates(by_id, results, fields, settings),
        "comparison": None,
    }
    if baseline is not None:
        say(f"judging {len(baseline)} baseline records")
        base = score_run(judge, cases, baseline, fields)
        doc["comparison"] = _comparison(by_id, results, base, fields, settings)
    doc["missing_cases"] = [r["case_id"] for r in results if r["details"].get("error") == MISSING]
    return doc
