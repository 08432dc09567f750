"""Value coercion shared by the agent and the collector (the collector imports the agent's
contract modules, never the other way round, so the one definition lives here)."""

from __future__ import annotations

from typing import Any

__all__ = ["optional_float"]


def optional_float(value: Any) -> float | None:
    """``value`` as a float, or None when it is missing, a bool or not a number: a retriever's
    score or a judge's output field may be anything, and a bad one must not fail the trace."""
    if value is None or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None
