"""Value coercion shared by the agent and the collector (the collector imports the agent's
contract modules, never the other way round, so the one definition lives here)."""

from __future__ import annotations

from typing import Any

__all__ = ["optional_float", "safe_str"]


def optional_float(value: Any) -> float | None:
    """``value`` as a float, or None when it is missing, a bool or not a number: a retriever's
    score or a judge's output field may be anything, and a bad one must not fail the trace."""
    if value is None or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def safe_str(value: Any) -> str:
    """``str(value)``, or ``<TypeName>`` when its ``__str__`` raises: an application object (a chunk
    id, a message's content) may do anything, and a bad one must not cost the span."""
    try:
        return str(value)
    except Exception:  # noqa: BLE001
        return f"<{type(value).__name__}>"
