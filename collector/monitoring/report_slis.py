"""The quality objectives as the demo report checks them: the alerts' SLIs, computed from ClickHouse.

Each objective's SLI is the same bad/all ratio the alert rules compute from the
collector's counters, here counted over the stored judgments and claims, and
its limit is the objective's error budget from the one objectives config. The
judge error ratio uses the pipeline's ``judge_errors.max_ratio``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .config import error_budget, load_objectives

__all__ = ["objective_limits", "objective_values", "JUDGE_ERROR_RATE"]

JUDGE_ERROR_RATE = "judge_error_rate"

#: objective -> (table: "claims" or "judgments", bad-event condition, all-events condition).
_SQL: dict[str, tuple[str, str, str]] = {
    "faithfulness": ("claims", "verdict IN ('unsupported', 'contradicted')", "1"),
    "citation_correctness": ("claims", "citation_valid = 0", "citation_valid IS NOT NULL"),
    "citation_completeness": ("claims", "citation_valid IS NULL OR citation_valid = 0", "1"),
    "false_refusal": ("judgments", "abstention_kind = 'false_refusal'", "1"),
    "hallucination": ("claims", "verdict != 'supported' AND unsupported_source = 'hallucination'", "1"),
    "retrieval_failure": ("judgments", "failure_mode IN ('retrieval', 'both')", "1"),
    "generation_failure": ("judgments", "failure_mode IN ('generation', 'both')", "1"),
}


def objective_limits(config: Mapping[str, Any] | None = None) -> list[tuple[str, str, str, float]]:
    """(name, description, op, limit) of every report threshold, from the objectives config."""
    config = config or load_objectives()
    out = [
        (name, f"{obj['title']}: {obj['description']}", "<=", error_budget(obj))
        for name, obj in config["objectives"].items()
    ]
    out.append(
        (
            JUDGE_ERROR_RATE,
            "share of judgments that are judge errors",
            "<=",
            float(config["pipeline"]["judge_errors"]["max_ratio"]),
        )
    )
    return out


def objective_values(
    query: Callable[[str], Sequence[Sequence[Any]]], judgments: str, claims: str, ok: str, judge_filter: str
) -> dict[str, float | None]:
    """Each objective's bad/all ratio over the stored data (None where nothing was counted).

    ``ok`` selects the successful judgments of the reported judge, ``judge_filter`` its claims.
    """
    out: dict[str, float | None] = {}
    for name, (table, bad, total) in _SQL.items():
        src = f"{claims} FINAL WHERE {judge_filter}" if table == "claims" else f"{judgments} FINAL WHERE {ok}"
        n_bad, n_all = query(f"SELECT countIf({bad}), countIf({total}) FROM {src}")[0]
        out[name] = round(int(n_bad) / int(n_all), 6) if int(n_all) else None
    return out
