"""Reading JSON Lines input: one JSON object per line, each problem named by its line."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["parse_object"]


def parse_object(line: str, lineno: int) -> dict[str, Any]:
    """The JSON object on line ``lineno``; ValueError ("line N: ...") when it is not one."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"line {lineno}: invalid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(obj, dict):
        raise ValueError(f"line {lineno}: expected a JSON object")
    return obj
