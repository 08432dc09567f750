"""``ragpulse feedback import FILE.jsonl``: signals recorded outside the app (support tickets, outcomes).

One JSON object per line::

    {"trace_id": "4bf92f3577b34da6a3ce929d0e0e4736", "value": -1, "label": "negative",
     "kind": "ticket", "comment": "...", "source": "business",
     "time": "2026-11-30T10:00:00Z", "service": "support-bot", "id": "TICKET-1234"}

``trace_id`` and one of ``value``/``label`` are required; ``kind`` defaults to
``import``, ``source`` to ``business``, ``time`` to now, ``service`` to the
traced call's service (when stored). The arguments are checked exactly as the
agent's ``feedback()`` checks them, and comments go through the agent's built-in
redaction (e-mail addresses, phone and card numbers, tokens). ``id`` (or, without it, a hash of the
line) keys the row, so importing a file twice stores it once. Any invalid line
stops the import before anything is stored, with every problem listed by line.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from ...agent.feedback import (
    FEEDBACK_COMMENT,
    FEEDBACK_KIND,
    FEEDBACK_LABEL,
    FEEDBACK_SOURCE,
    FEEDBACK_VALUE,
    feedback_attributes,
    parse_trace_ref,
)
from ...agent.redaction import redact_builtin

__all__ = ["ImportError_", "parse_lines"]

_KNOWN = {"trace_id", "value", "label", "kind", "comment", "source", "time", "service", "id", "attributes"}


class ImportError_(ValueError):  # noqa: N801 - not the builtin ImportError
    """Invalid lines; ``problems`` lists ``(line number, reason)``."""

    def __init__(self, problems: list[tuple[int, str]]) -> None:
        self.problems = problems
        super().__init__("; ".join(f"line {n}: {why}" for n, why in problems[:5]))


def _time_ns(raw: Any, now_ns: int) -> int:
    if raw is None:
        return now_ns
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        return int(raw * 1e9) if raw < 1e12 else int(raw)  # seconds, or nanoseconds
    if isinstance(raw, str):
        dt = datetime.fromisoformat(raw.replace("Z", "+00:00"))
        if dt.tzinfo is None:
            raise ValueError("time needs a time zone (e.g. Z)")
        return int(dt.timestamp() * 1_000_000) * 1000
    raise ValueError("time must be an ISO 8601 string or a Unix timestamp")


def _row(obj: Any, raw: bytes, now_ns: int) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise ValueError("not a JSON object")
    unknown = sorted(set(obj) - _KNOWN)
    if unknown:
        raise ValueError(f"unknown field(s) {', '.join(unknown)}")
    tid, _ = parse_trace_ref(obj.get("trace_id"))
    attrs = feedback_attributes(
        obj.get("value"),
        label=obj.get("label"),
        kind=obj.get("kind", "import"),
        comment=obj.get("comment"),
        source=obj.get("source", "business"),
        attributes=obj.get("attributes"),
    )
    extra = {k: v for k, v in attrs.items() if not k.startswith("rag.feedback.")}
    ident = obj.get("id")
    if ident is not None and (not isinstance(ident, str) or not ident):
        raise ValueError("id must be a non-empty string")
    return {
        "trace_id": f"{tid:032x}",
        "feedback_id": f"import:{ident}"
        if ident
        else "import:" + hashlib.blake2b(raw.strip(), digest_size=12).hexdigest(),
        "time": _time_ns(obj.get("time"), now_ns),
        "service": str(obj.get("service") or ""),
        "kind": attrs[FEEDBACK_KIND],
        "value": attrs.get(FEEDBACK_VALUE),
        "label": attrs[FEEDBACK_LABEL],
        "comment": redact_builtin(attrs.get(FEEDBACK_COMMENT, "")),
        "source": attrs[FEEDBACK_SOURCE],
        "attributes": json.dumps(extra, sort_keys=True),
    }


def parse_lines(lines: Iterable[bytes], now_ns: int) -> list[dict[str, Any]]:
    """``rag_feedback`` rows of the lines (blank lines skipped); raises ImportError_ on any bad one."""
    rows, problems = [], []
    for n, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            rows.append(_row(json.loads(raw), raw, now_ns))
        except ValueError as exc:
            problems.append((n, str(exc).splitlines()[0]))
    if problems:
        raise ImportError_(problems)
    return rows
