"""The eval-case queue: reading the eval set, applying a reviewer's decision, writing it back.

The queue is the cases whose review status is ``proposed``, in file order
(``ragpulse export`` writes alert cases first). A decision (accept, edit,
reject) becomes the case with ``review: {status, reviewer, reviewed_at}``
(and ``reason`` when rejected), checked against ``docs/evalset.schema.json``
before anything is written; problems come back per form field.

Writing back holds the eval set's lock (the one ``ragpulse export`` takes),
re-reads the file, and replaces only that case's line, so an export appending
meanwhile loses nothing. Every page carries the digest of the case line it
showed; when the line changed since (another reviewer saved it), the save is
refused as a :class:`Conflict` instead of overwriting.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from ..eval.files import load_evalset, load_schema
from ..export.writer import atomic_write, evalset_lock, record_line

__all__ = [
    "ACTIONS",
    "EDITABLE_LISTS",
    "SLICE_FIELDS",
    "Conflict",
    "Invalid",
    "apply_decision",
    "case_digest",
    "read_cases",
    "save_case",
]

ACTIONS: tuple[str, ...] = ("accept", "edit", "reject")
#: Claim lists the form edits, one claim per line.
EDITABLE_LISTS: tuple[str, ...] = ("gold_claims", "forbidden_or_outdated_claims")
#: Slice fields the form edits as text (empty = null; ``split`` has the schema's two values).
SLICE_FIELDS: tuple[str, ...] = ("query_type", "difficulty", "temporal_scope", "risk_level", "split")


class Conflict(Exception):
    """The case changed in the file since the page showed it."""

    def __init__(self, current: dict[str, Any] | None) -> None:
        review = (current or {}).get("review") or {}
        who = review.get("reviewer") or "someone else"
        status = review.get("status") or "changed"
        super().__init__(
            "this case was removed from the eval set"
            if current is None
            else f"this case was {status} by {who} at {review.get('reviewed_at') or 'an unknown time'} "
            "after you opened it; nothing was written"
        )
        self.current = current


class Invalid(Exception):
    """The decision fails the schema; ``errors`` maps a form field to its message."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors


def case_digest(case: dict[str, Any]) -> str:
    """Digest of the case as the file holds it (its serialised line)."""
    return hashlib.sha256(record_line(case)).hexdigest()[:16]


def read_cases(path: Path) -> list[dict[str, Any]]:
    """Every case of the eval set, validated (EvalInputError names the file and line)."""
    return load_evalset(path)


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def apply_decision(
    case: dict[str, Any], action: str, form: dict[str, str], reviewer: str, now: datetime | None = None
) -> dict[str, Any]:
    """The case after ``action`` with the form's fields; Invalid when it would break the schema."""
    if action not in ACTIONS:
        raise Invalid({"action": f"unknown action {action!r}"})
    if not reviewer.strip():
        raise Invalid({"reviewer": "a reviewer name is required"})
    new = json.loads(json.dumps(case))
    errors: dict[str, str] = {}
    if action == "edit":
        for key in EDITABLE_LISTS:
            if key in form:
                new[key] = _lines(form[key])
        if "answerability" in form:
            new["answerability"] = form["answerability"].strip()
        for key in SLICE_FIELDS:
            if key in form:
                new[key] = form[key].strip() or (None if key != "split" else "")
    reason = form.get("reason", "").strip()
    if action == "reject" and not reason:
        errors["reason"] = "a rejection needs a reason"
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ")
    review = {"status": "rejected" if action == "reject" else "reviewed", "reviewer": reviewer.strip()}
    review["reviewed_at"] = stamp
    if action == "reject":
        review["reason"] = reason
    new["review"] = review
    for err in sorted(Draft202012Validator(load_schema()).iter_errors(new), key=lambda e: list(e.path)):
        field = str(err.path[0]) if err.path else "case"
        if field == "review" and len(err.path) > 1:
            field = str(err.path[1])
        where = f" (line {int(err.path[1]) + 1})" if field in EDITABLE_LISTS and len(err.path) > 1 else ""
        errors.setdefault(field, err.message + where)
    if errors:
        raise Invalid(errors)
    return new


def save_case(path: Path, new: dict[str, Any], base_digest: str) -> None:
    """Replace the case with ``new``'s id by ``new``, if the file's line still has ``base_digest``."""
    with evalset_lock(path):
        cases = load_evalset(path)
        current = next((c for c in cases if c["id"] == new["id"]), None)
        if current is None or case_digest(current) != base_digest:
            raise Conflict(current)
        lines = []
        with path.open("rb") as fh:
            for raw in fh:
                if not raw.strip():
                    continue
                rec = json.loads(raw)
                if rec.get("id") == new["id"]:
                    lines.append(record_line(new))
                else:
                    lines.append(raw if raw.endswith(b"\n") else raw + b"\n")
        atomic_write(path, b"".join(lines))
