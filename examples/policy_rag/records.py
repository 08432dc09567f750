"""The HR system the demo app's agent looks records up in: each employee's training record.

A stand-in for a real system of record (an API, a SQL row): deterministic per employee id,
so a replayed conversation gets the same record. The policy says staff repeat security
awareness training every 12 months, so a record is next due a year after it was last completed.
"""

from __future__ import annotations

import hashlib
from datetime import date, timedelta
from typing import Any

__all__ = ["training_record", "training_sentence"]

_FIRST = date(2025, 9, 1)


def training_record(employee_id: str) -> dict[str, Any]:
    """The security awareness training record of ``employee_id``."""
    days = int(hashlib.sha256(employee_id.encode()).hexdigest()[:8], 16) % 300
    last = _FIRST + timedelta(days=days)
    due = (
        last.replace(year=last.year + 1) if (last.month, last.day) != (2, 29) else last + timedelta(days=365)
    )
    return {
        "employee_id": employee_id,
        "course": "security awareness training",
        "last_completed": last.isoformat(),
        "next_due": due.isoformat(),
    }


def training_sentence(record: dict[str, Any]) -> str:
    """What the agent states from the record (the claim the judge checks against the tool's result)."""
    return f"Your security awareness training is next due on {record['next_due']}."
