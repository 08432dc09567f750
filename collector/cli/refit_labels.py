"""The labels ``ragpulse judge refit`` fits on, from the review store or from files.

Both ways give the same rows, the labels-file format ``ragpulse review export-labels`` writes
(docs/review.md), one JSON object per trace:

- ``trace_id``;
- ``human``: optional; its ``faithful`` (true/false) is the answer's label (a reviewer's
  trace label, or every claim labelled and all supported);
- ``claim_labels``: optional; ``[{"text", "label"}]``, label ``supported``, ``unsupported``
  or ``contradicted``;
- ``group``: optional; the session or source the trace belongs to, which cross-validation
  keeps in one fold (default: the trace itself);
- ``judge``: the judge's record of the trace (``export-labels`` writes it; a refit ignores it).

The traces are judge input records (``ragpulse judge`` input, with ``trace_id``): from the
store with ``--from-reviews``, from ``--traces FILE`` otherwise (``review export-labels
--traces FILE`` writes the labelled ones). Rows of the store and of the files become the same
:class:`~ragpulse.collector.judge.local.refit.data.TraceLabels`, in the same order.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from ..contract import CLAIM_VERDICTS
from ..judge.local.refit.data import TraceLabels
from ..judge.record import InvalidRecord, normalise_input
from .errors import CliError, storage_errors
from .export import open_storage
from .jsonl import read_objects

__all__ = ["from_files", "store_traces", "trace_labels", "write_traces"]


def _one(row: dict[str, Any]) -> TraceLabels | None:
    """A row's labels; None when it holds none; ValueError naming the field that is wrong."""
    tid = row.get("trace_id")
    if not isinstance(tid, str) or not tid:
        raise ValueError("'trace_id' must be a non-empty string")
    human = row.get("human") or {}
    if not isinstance(human, dict):
        raise ValueError("'human' must be an object")
    faithful = human.get("faithful")
    if faithful is not None and not isinstance(faithful, bool):
        raise ValueError("'human.faithful' must be true or false")
    claims = row.get("claim_labels") or []
    if not isinstance(claims, list):
        raise ValueError("'claim_labels' must be a list")
    pairs = []
    for c in claims:
        if not isinstance(c, dict) or not isinstance(c.get("text"), str) or not c["text"].strip():
            raise ValueError("each of 'claim_labels' needs a non-empty 'text'")
        if c.get("label") not in CLAIM_VERDICTS:
            raise ValueError(f"claim label {c.get('label')!r} is not one of {', '.join(CLAIM_VERDICTS)}")
        pairs.append((c["text"], 1 if c["label"] == "supported" else 0))
    group = row.get("group", tid)
    if not isinstance(group, str) or not group:
        raise ValueError("'group' must be a non-empty string")
    if faithful is None and not pairs:
        return None
    return TraceLabels(tid, tuple(pairs), faithful, group)


def trace_labels(rows: list[dict[str, Any]], where: str) -> tuple[list[TraceLabels], str]:
    """The labelled traces of ``rows`` and the judge most of their records name ("" if none)."""
    out = []
    for n, row in enumerate(rows, 1):
        try:
            lab = _one(row)
        except ValueError as exc:
            raise CliError(f"{where}: line {n}: {exc}") from None
        if lab is not None:
            out.append(lab)
    judges = Counter(str(r["judge"].get("judge_id", "")) for r in rows if isinstance(r.get("judge"), dict))
    return out, (judges.most_common(1)[0][0] if judges else "")


def _traces(path: str) -> dict[str, dict[str, Any]]:
    traces = {}
    for n, row in enumerate(read_objects(path), 1):
        try:
            rec = normalise_input(row)
        except InvalidRecord as exc:
            raise CliError(f"{path}: line {n}: {exc}") from None
        if not rec["trace_id"]:
            raise CliError(f"{path}: line {n}: a trace needs its 'trace_id'")
        traces[rec["trace_id"]] = row
    return traces


def from_files(labels: str, traces: str) -> tuple[list[TraceLabels], dict[str, dict[str, Any]], str]:
    """The labels of ``labels`` (the labels-file format), the traces of ``traces``, the judge."""
    labs, judge = trace_labels(read_objects(labels), labels)
    return labs, _traces(traces), judge


def store_traces(store: Any, ids: list[str], judge_id: str) -> dict[str, dict[str, Any]]:
    """The judge input record of each of ``ids`` the store still holds (TTL drops traces)."""
    out = {}
    for tid in ids:
        t = store.trace(tid, judge_id)
        if t is not None:
            out[tid] = {k: v for k, v in t.items() if k not in ("judgment", "service", "time_ns")}
    return out


def write_traces(args: argparse.Namespace, rows: list[dict[str, Any]], judge_id: str, path: str) -> int:
    """Write the judge input records of the labelled ``rows`` to ``path``; how many."""
    from ..review.store import ReviewStore

    ids = [lab.trace_id for lab in trace_labels(rows, "export")[0]]
    storage = open_storage(args)
    with storage_errors(storage):
        traces = store_traces(ReviewStore(storage), ids, judge_id)
    with Path(path).open("w", encoding="utf-8") as fh:
        for tid, rec in traces.items():
            fh.write(json.dumps({"trace_id": tid, **rec}, ensure_ascii=False) + "\n")
    return len(traces)
