"""Ground truth for the demo: which failure the app injected into each trace, and the confusion table.

The demo's scripted generator knows what it did to every answer (faithful,
answered from superseded text, dropped a condition, ...). The demo stores
that in its own table, ``demo_injections``, next to ragpulse's tables, keyed
by trace id, so the agreement between the judge and the truth is a join in
the database and survives later runs against the same database.

Labels compared: the judge's ``failure_mode``, with abstentions split by
``abstention_kind`` (``abstain:appropriate`` vs ``abstain:false_refusal``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .report import QueryFn

__all__ = [
    "TRUTH_TABLE",
    "TRUTH_COLUMNS",
    "truth_ddl",
    "label",
    "Confusion",
    "confusion",
    "render_confusion",
    "truth_rows",
]

TRUTH_TABLE = "demo_injections"
TRUTH_COLUMNS = (
    "trace_id",
    "time",
    "run_id",
    "seq",
    "template_id",
    "wording",
    "injected_mode",
    "expected_failure_mode",
    "expected_abstention_kind",
    "detail",
)


def truth_ddl(database: str) -> str:
    """The idempotent DDL of the ground-truth table."""
    return (
        f"CREATE TABLE IF NOT EXISTS {database}.{TRUTH_TABLE} ("
        "trace_id String, time DateTime64(3, 'UTC'), run_id String, seq UInt32, "
        "template_id LowCardinality(String), wording LowCardinality(String), "
        "injected_mode LowCardinality(String), expected_failure_mode LowCardinality(String), "
        "expected_abstention_kind LowCardinality(String), detail String"
        ") ENGINE = ReplacingMergeTree ORDER BY trace_id"
    )


def label(failure_mode: str, abstention_kind: str | None) -> str:
    """The compared label: the failure mode, abstentions qualified by their kind."""
    if failure_mode == "abstain":
        return f"abstain:{abstention_kind or 'unknown'}"
    return failure_mode


@dataclass
class Confusion:
    """Injected mode (rows) against the judge's label (columns), over judged traces with truth."""

    judge_id: str | None
    rows: dict[str, dict[str, int]]  # injected mode -> judged label -> count
    expected: dict[str, str]  # injected mode -> expected label
    matched: int
    total: int

    @property
    def agreement(self) -> float | None:
        return self.matched / self.total if self.total else None

    @property
    def columns(self) -> list[str]:
        seen: dict[str, None] = {}
        for v in self.expected.values():
            seen.setdefault(v, None)
        for counts in self.rows.values():
            for k in counts:
                seen.setdefault(k, None)
        return list(seen)


def confusion(query: QueryFn, *, database: str = "ragpulse", judge_id: str | None) -> Confusion:
    """The confusion table from the database (latest judgment per trace for ``judge_id``)."""
    if judge_id is None:
        return Confusion(None, {}, {}, 0, 0)
    jid = judge_id.replace("\\", "\\\\").replace("'", "\\'")
    rows = query(
        f"SELECT t.injected_mode, t.expected_failure_mode, t.expected_abstention_kind, "
        f"j.failure_mode, j.abstention_kind, count() "
        f"FROM (SELECT * FROM {database}.{TRUTH_TABLE} FINAL) AS t "
        f"INNER JOIN (SELECT trace_id, failure_mode, abstention_kind FROM {database}.rag_judgments FINAL "
        f"WHERE judge_id = '{jid}' AND error = '') AS j ON j.trace_id = t.trace_id "
        "GROUP BY t.injected_mode, t.expected_failure_mode, t.expected_abstention_kind, j.failure_mode, j.abstention_kind "
        "ORDER BY t.injected_mode"
    )
    table: dict[str, dict[str, int]] = {}
    expected: dict[str, str] = {}
    matched = total = 0
    for mode, exp_fm, exp_kind, fm, kind, n in rows:
        n = int(n)
        exp = label(str(exp_fm), str(exp_kind) or None)
        got = label(str(fm), str(kind) or None)
        expected[str(mode)] = exp
        cell = table.setdefault(str(mode), {})
        cell[got] = cell.get(got, 0) + n
        total += n
        matched += n if got == exp else 0
    return Confusion(judge_id, table, expected, matched, total)


def render_confusion(c: Confusion) -> str:
    """The confusion table as text, with per-mode and overall agreement."""
    if not c.total:
        return "Judge vs injected failure modes: no judged traces with ground truth yet."
    cols = c.columns
    width = max(len("injected \\ judged"), *(len(m) for m in c.rows)) + 2
    colw = [max(6, len(col) + 2) for col in cols]
    expw = max(len("expected"), *(len(v) for v in c.expected.values())) + 2
    lines = [f"Judge vs injected failure modes (judge {c.judge_id})"]
    lines.append(
        "injected \\ judged".ljust(width)
        + "".join(col.rjust(w) for col, w in zip(cols, colw, strict=True))
        + "  "
        + "expected".ljust(expw)
        + "match"
    )
    for mode in sorted(c.rows, key=lambda m: (-sum(c.rows[m].values()), m)):
        counts = c.rows[mode]
        n = sum(counts.values())
        hit = counts.get(c.expected[mode], 0)
        lines.append(
            mode.ljust(width)
            + "".join(str(counts.get(col, 0)).rjust(w) for col, w in zip(cols, colw, strict=True))
            + "  "
            + c.expected[mode].ljust(expw)
            + f"{hit}/{n}"
        )
    lines.append(f"agreement: {c.matched}/{c.total} = {100.0 * (c.agreement or 0):.1f}% of judged traces")
    return "\n".join(lines)


def truth_rows(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows for :data:`TRUTH_COLUMNS` (missing values default to empty)."""
    return [{c: r.get(c, 0 if c == "seq" else "") for c in TRUTH_COLUMNS} for r in records]
