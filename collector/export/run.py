"""One export run: select, merge near-duplicates, skip what earlier runs exported, cap, write, record.

:func:`run_export` is what ``ragpulse export`` and the schedule call. Given
the same database contents and options it produces the same file bytes (the
manifest adds the wall-clock time of the run; the file does not). A dry run
does everything but record the cases in ``rag_exports``.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..core.text import normalize_query
from ..storage.clickhouse import Storage
from .cases import build_case, case_id, sorted_reasons
from .criteria import Criteria, reason_rank
from .dedup import group_near_duplicates, match_existing
from .ledger import ExportedCase, exported_cases, previous_run, record_cases
from .select import Candidate, alert_windows, select_candidates
from .writer import read_existing, write_evalset, write_manifest

__all__ = ["ExportOptions", "ExportSummary", "run_export"]


@dataclass
class ExportOptions:
    output: Path
    since_ns: int
    until_ns: int
    criteria: Criteria = field(default_factory=Criteria)
    holdout: float = 0.0
    max_per_reason: int | None = None
    dry_run: bool = False


@dataclass
class ExportSummary:
    """What a run did; ``lines()`` is what the CLI prints."""

    run_id: str = ""
    candidates: int = 0
    new_cases: int = 0
    by_reason: Counter = field(default_factory=Counter)
    merged_duplicates: int = 0  # traces folded into another trace's case (this run or an earlier one)
    merged_into_earlier: int = 0  # of which into a case an earlier run exported
    skipped_exported: int = 0  # traces an earlier run already exported
    skipped_in_file: int = 0  # new cases whose id the file already holds
    capped: int = 0  # cases left for a later run by --max-per-reason
    manifest: Path | None = None

    def lines(self) -> list[str]:
        out = [
            f"export {self.run_id}: {self.new_cases} new case(s) from {self.candidates} candidate trace(s)"
        ]
        if not self.new_cases:
            out.append("nothing new to export: every candidate was already exported")
        for reason, n in sorted(self.by_reason.items(), key=lambda kv: (reason_rank(kv[0]), kv[0])):
            out.append(f"  {reason}: {n}")
        out.append(
            f"merged near-duplicates: {self.merged_duplicates} trace(s) "
            f"({self.merged_into_earlier} into earlier cases); skipped as already exported: "
            f"{self.skipped_exported} trace(s)"
        )
        if self.capped:
            out.append(f"left for a later run by --max-per-reason: {self.capped} case(s)")
        if self.skipped_in_file:
            out.append(f"already in the file (not rewritten): {self.skipped_in_file} case(s)")
        return out


def _order_key(record: dict[str, Any]) -> tuple[int, str, str]:
    reasons = record["provenance"]["reasons"]
    return (min(reason_rank(r) for r in reasons), record["provenance"]["first_seen"], record["id"])


def _groups(cands: list[Candidate], threshold: float) -> list[list[Candidate]]:
    """Near-duplicate groups per service, each with a deterministic order."""
    out: list[list[Candidate]] = []
    for service in sorted({c.service for c in cands}):
        mine = sorted((c for c in cands if c.service == service), key=lambda c: (c.time_ns, c.trace_id))
        for g in group_near_duplicates([normalize_query(c.query) for c in mine], threshold):
            out.append([mine[i] for i in g])
    return out


def _cap(records: list[dict[str, Any]], limit: int | None) -> tuple[list[dict[str, Any]], int]:
    """Take cases in order while one of their reasons is under ``limit`` (stratified by reason)."""
    if limit is None:
        return records, 0
    counts: Counter = Counter()
    kept = []
    for r in records:
        reasons = r["provenance"]["reasons"]
        if any(counts[x] < limit for x in reasons):
            kept.append(r)
            counts.update(reasons)
    return kept, len(records) - len(kept)


def _merge_earlier(
    groups: list[list[Candidate]], earlier: list[ExportedCase], threshold: float, s: ExportSummary
) -> tuple[list[list[Candidate]], list[ExportedCase]]:
    """Fold groups that repeat an earlier case's question into its ledger row; return the rest."""
    by_id = {e.case_id: e for e in earlier}
    fresh, touched = [], {}
    for g in groups:
        service, text = g[0].service, normalize_query(g[0].query)
        same = [e for e in earlier if e.service == service]
        hit = by_id.get(case_id(service, text))
        if hit is None:
            pos = match_existing([text], [e.query for e in same], threshold)[0]
            hit = same[pos] if pos is not None else None
        if hit is None:
            fresh.append(g)
            continue
        hit.trace_ids = sorted(set(hit.trace_ids) | {c.trace_id for c in g})
        hit.reasons = sorted_reasons(set(hit.reasons).union(*(c.reasons for c in g)))
        touched[hit.case_id] = hit
        s.merged_duplicates += len(g)
        s.merged_into_earlier += len(g)
    return fresh, [touched[k] for k in sorted(touched)]


def run_export(storage: Storage, opts: ExportOptions) -> ExportSummary:
    """Run one export (see the module docstring); raises ValueError for an unusable output file."""
    s = ExportSummary()
    c = opts.criteria
    existing_lines, existing_ids = read_existing(opts.output)
    alerts = alert_windows(storage, opts.since_ns, opts.until_ns) if c.alerts else []
    cands = select_candidates(storage, opts.since_ns, opts.until_ns, c, alerts)
    s.candidates = len(cands)
    earlier = exported_cases(storage)
    done = {t for e in earlier for t in e.trace_ids}
    s.skipped_exported = sum(1 for x in cands if x.trace_id in done)
    groups, updated = _merge_earlier(
        _groups([x for x in cands if x.trace_id not in done], c.near_duplicate_threshold),
        earlier, c.near_duplicate_threshold, s,
    )  # fmt: skip
    records = []
    for g in groups:
        s.merged_duplicates += len(g) - 1
        records.append(build_case(case_id(g[0].service, normalize_query(g[0].query)), g, opts.holdout))
    records.sort(key=_order_key)
    records, s.capped = _cap(records, opts.max_per_reason)
    s.skipped_in_file = sum(1 for r in records if r["id"] in existing_ids)
    records = [r for r in records if r["id"] not in existing_ids]
    s.run_id = _run_id(opts, records)
    for r in records:
        s.by_reason.update(r["provenance"]["reasons"])
    s.new_cases = write_evalset(opts.output, records)
    prev = previous_run(storage)
    if not opts.dry_run:
        record_cases(storage, updated + [_ledger_row(r, s.run_id, opts) for r in records])
    s.manifest = write_manifest(opts.output, _manifest(opts, s, records, prev, len(existing_lines)))
    return s


def _ledger_row(r: dict[str, Any], run_id: str, opts: ExportOptions) -> ExportedCase:
    p = r["provenance"]
    return ExportedCase(
        r["id"], p["trace_ids"], p["reasons"], p["service"], p["normalized_query"], run_id,
        opts.since_ns, opts.until_ns,
    )  # fmt: skip


def _run_id(opts: ExportOptions, records: list[dict[str, Any]]) -> str:
    text = json.dumps([opts.since_ns, opts.until_ns, opts.criteria.as_dict(), [r["id"] for r in records]])
    return "run-" + hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


def _iso(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, tz=timezone.utc).isoformat()


def _manifest(
    opts: ExportOptions, s: ExportSummary, records: list[dict[str, Any]], prev: Any, kept: int
) -> dict[str, Any]:
    return {
        "export_run": s.run_id,
        "created_at": datetime.now(timezone.utc).isoformat(),
        "dry_run": opts.dry_run,
        "window": {"since": _iso(opts.since_ns), "until": _iso(opts.until_ns)},
        "criteria": opts.criteria.as_dict(),
        "criteria_source": opts.criteria.source,
        "holdout": opts.holdout,
        "max_per_reason": opts.max_per_reason,
        "counts": {
            "candidates": s.candidates,
            "new_cases": s.new_cases,
            "cases_in_file": kept + s.new_cases,
            "by_reason": dict(sorted(s.by_reason.items())),
            "merged_duplicates": s.merged_duplicates,
            "merged_into_earlier_cases": s.merged_into_earlier,
            "skipped_already_exported": s.skipped_exported,
            "left_by_max_per_reason": s.capped,
            "holdout": sum(1 for r in records if r["split"] == "holdout"),
        },
        "previous_run": prev,
        "judge_ids": sorted({r["provenance"]["judge_id"] for r in records if r["provenance"]["judge_id"]}),
        "output": str(opts.output),
    }
