"""Reading JSON Lines input: one JSON object per line, each problem named by its line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .errors import CliError

__all__ = ["parse_object", "read_objects"]


def parse_object(line: str, lineno: int) -> dict[str, Any]:
    """The JSON object on line ``lineno``; ValueError ("line N: ...") when it is not one."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"line {lineno}: invalid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(obj, dict):
        raise ValueError(f"line {lineno}: expected a JSON object")
    return obj


def read_objects(path: str) -> list[dict[str, Any]]:
    """The objects of the JSON Lines file ``path`` (blank lines skipped); CliError naming the
    file, and the line, when it is missing or a line is not a JSON object."""
    p = Path(path)
    if not p.is_file():
        raise CliError(f"no such file: {path}")
    rows = []
    with p.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rows.append(parse_object(line, n))
            except ValueError as exc:
                raise CliError(f"{path}: {exc}") from None
    return rows
