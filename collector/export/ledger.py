"""``rag_exports``: the export's watermark and the alert receiver's queue.

``exported`` rows, one per case (key: case id), hold the case's trace ids,
reasons, service and normalised question: a trace id in any of them is never
exported again, and a new near-duplicate of an exported question is merged into
that case's row (its file record is not rewritten). ``queued`` rows, one per
firing alert (key: alert fingerprint and start), hold the window whose failing
traces the next export takes first; a repeat of the same alert replaces its
row, so Alertmanager's re-sends change nothing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ..storage.clickhouse import Storage

__all__ = ["ExportedCase", "LEDGER_COLUMNS", "exported_cases", "record_cases", "queue_alert", "previous_run"]

LEDGER_COLUMNS = (
    "kind", "case_id", "trace_ids", "reasons", "service", "query", "export_run",
    "window_start", "window_end", "time", "version",
)  # fmt: skip


@dataclass
class ExportedCase:
    """A case an earlier run exported (from its ``exported`` ledger row)."""

    case_id: str
    trace_ids: list[str]
    reasons: list[str]
    service: str
    query: str  # normalised
    export_run: str
    window_start: int
    window_end: int


def exported_cases(storage: Storage) -> list[ExportedCase]:
    rows = storage.query(
        "SELECT case_id, trace_ids, reasons, service, query, export_run, toUnixTimestamp64Nano(window_start), "
        "toUnixTimestamp64Nano(window_end) FROM {db}.rag_exports FINAL WHERE kind = 'exported' ORDER BY case_id"
    )
    return [ExportedCase(r[0], list(r[1]), list(r[2]), r[3], r[4], r[5], int(r[6]), int(r[7])) for r in rows]


def previous_run(storage: Storage) -> dict[str, Any] | None:
    """The latest export run recorded in the ledger (id and time), or None."""
    rows = storage.query(
        "SELECT export_run, max(time) AS t FROM {db}.rag_exports FINAL WHERE kind = 'exported' "
        "GROUP BY export_run ORDER BY t DESC, export_run LIMIT 1"
    )
    if not rows:
        return None
    return {"export_run": rows[0][0], "time": rows[0][1].isoformat()}


def _version() -> int:
    return time.time_ns()


def record_cases(storage: Storage, cases: list[ExportedCase]) -> int:
    """Write (or replace) the ``exported`` rows of these cases."""
    now_ms, version = int(time.time() * 1000), _version()
    rows = [
        {"kind": "exported", "case_id": c.case_id, "trace_ids": c.trace_ids, "reasons": c.reasons,
         "service": c.service, "query": c.query, "export_run": c.export_run, "window_start": c.window_start,
         "window_end": c.window_end, "time": now_ms, "version": version + i}
        for i, c in enumerate(cases)
    ]  # fmt: skip
    return storage.insert_rows("rag_exports", LEDGER_COLUMNS, rows)


def queue_alert(storage: Storage, key: str, name: str, service: str, start_ns: int, end_ns: int) -> None:
    """Queue (or extend) a firing alert's window for the next export."""
    storage.insert_rows(
        "rag_exports",
        LEDGER_COLUMNS,
        [{"kind": "queued", "case_id": key, "trace_ids": [], "reasons": [f"alert:{name}"], "service": service,
          "query": "", "export_run": "", "window_start": start_ns, "window_end": end_ns,
          "time": int(time.time() * 1000), "version": _version()}],
    )  # fmt: skip
