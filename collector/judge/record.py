"""Judge input validation and the shared shape of output records.

The input record is DESIGN.md's (``trace_id``, ``query``, ``answer``,
``chunks``, optional ``citations`` and ``conversation``); the collector's
``ragpulse.judge`` messages are a superset and pass as is. A chunk may say where
it came from: ``source_type`` ``retrieval`` (the default) or ``tool`` (a tool
call's result), ``tool`` (the tool's name) and ``query`` (the retrieval's own
query, a tool call's arguments). The conversation is the turns before the
current one, oldest first, ``[{"role": "user"|"assistant", "content": ...}]``:
context for what the query means, never evidence. Output records always carry every
score key, so a stored row never misses a column; a failed judgment has
``error`` set and every score null (never 0).
"""

from __future__ import annotations

from typing import Any

from ..contract import SCORE_NAMES, SOURCE_RETRIEVAL, SOURCE_TOOL
from ..core.model import JUDGE_ROLES

__all__ = [
    "InvalidRecord",
    "SCORE_KEYS",
    "SOURCE_TYPES",
    "CONVERSATION_ROLES",
    "normalise_input",
    "error_record",
]

SCORE_KEYS = SCORE_NAMES  # the judge output's score keys: the contract's names
SOURCE_TYPES = (SOURCE_RETRIEVAL, SOURCE_TOOL)
CONVERSATION_ROLES = JUDGE_ROLES


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
                **_provenance(ch, i),
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
        "conversation": _conversation(record.get("conversation")),
    }


def _provenance(chunk: dict[str, Any], i: int) -> dict[str, str]:
    """Where chunk ``i`` came from: ``source_type`` (``retrieval`` when absent), ``tool`` and ``query``."""
    source_type = chunk.get("source_type") or SOURCE_RETRIEVAL
    if source_type not in SOURCE_TYPES:
        raise InvalidRecord(f"chunk {i + 1}: 'source_type' must be one of {', '.join(SOURCE_TYPES)}")
    out = {"source_type": source_type}
    for key in ("tool", "query"):
        value = chunk.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            raise InvalidRecord(f"chunk {i + 1}: '{key}' must be a string")
        out[key] = value
    return out


def _conversation(raw: Any) -> list[dict[str, str]]:
    """The turns before the current one: ``[{"role", "content"}]`` with role ``user`` or
    ``assistant``; a message of another role (a system prompt, a tool message) is left out,
    being no turn of the conversation, and so is an empty one."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise InvalidRecord("'conversation' must be a list of messages")
    out = []
    for i, m in enumerate(raw):
        if (
            not isinstance(m, dict)
            or not isinstance(m.get("role"), str)
            or not isinstance(m.get("content"), str)
        ):
            raise InvalidRecord(
                f"conversation message {i + 1} must be an object with string 'role' and 'content'"
            )
        if m["role"] in CONVERSATION_ROLES and m["content"].strip():
            out.append({"role": m["role"], "content": m["content"]})
    return out


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
