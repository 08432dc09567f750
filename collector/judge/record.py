"""Judge input validation and the shared shape of output records.

The input record is DESIGN.md's (``trace_id``, ``query``, ``answer``,
``chunks``, optional ``citations``); the collector's ``ragpulse.judge``
messages are a superset and pass as is. Output records always carry every
score key, so a stored row never misses a column; a failed judgment has
``error`` set and every score null (never 0).
"""

from __future__ import annotations

from typing import Any

from ..contract import SCORE_NAMES

__all__ = ["InvalidRecord", "SCORE_KEYS", "normalise_input", "error_record"]

SCORE_KEYS = SCORE_NAMES  # the judge output's score keys: the contract's names


class InvalidRecord(ValueError):
    """The input record cannot be judged (missing or mistyped fields)."""


def normalise_input(record: Any) -> dict[str, Any]:
    """Validate a judge input record and return a normalised copy: chunk ids as
    strings (position when missing), metadata dicts, citations as a list."""
    if not isinstance(record, dict):
        raise InvalidRecord("record is not a JSON object")
    answer = record.get("answer")
    if not isinstance(answer, str):
        raise InvalidRecord("'answer' must be a string")
    query = record.get("query", "")
    if query is None:
        query = ""
    if not isinstance(query, str):
        raise InvalidRecord("'query' must be a string")
    raw_chunks = record.get("chunks") or []
    if not isinstance(raw_chunks, list):
        raise InvalidRecord("'chunks' must be a list")
    chunks: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, ch in enumerate(raw_chunks):
        if isinstance(ch, str):
            ch = {"content": ch}
        if not isinstance(ch, dict) or not isinstance(ch.get("content", ""), str):
            raise InvalidRecord(f"chunk {i + 1} must be an object with string 'content'")
        cid = ch.get("id")
        cid = str(i + 1) if cid is None or cid == "" else str(cid)
        if cid in seen:
            cid = f"{cid}#{i + 1}"
        seen.add(cid)
        meta = ch.get("metadata")
        if isinstance(meta, str):
            import json

            try:
                meta = json.loads(meta)
            except ValueError:
                meta = None
        chunks.append(
            {
                "id": cid,
                "content": ch.get("content") or "",
                "score": ch.get("score"),
                "metadata": meta if isinstance(meta, dict) else {},
            }
        )
    cits = record.get("citations") or []
    if not isinstance(cits, list) or not all(isinstance(c, dict) for c in cits):
        raise InvalidRecord("'citations' must be a list of objects")
    return {
        "trace_id": str(record.get("trace_id", "")),
        "query": query,
        "answer": answer,
        "chunks": chunks,
        "citations": cits,
    }


def error_record(trace_id: str, judge_id: str, error: str, **extra: Any) -> dict[str, Any]:
    """An output record for a failed judgment: every score null, ``error`` set."""
    out: dict[str, Any] = {"trace_id": trace_id, "judge_id": judge_id}
    for k in SCORE_KEYS:
        out[k] = None
    out.update(
        {
            "abstained": None,
            "abstention_kind": None,
            "failure_mode": None,
            "unsupported_claims": None,
            "contradicted_claims": None,
            "claims": [],
            "error": error,
        }
    )
    out.update(extra)
    return out
