"""``ragpulse eval --app`` functions the eval tests replay (importable as ``tests.eval_apps:NAME``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragpulse.policy_rag import replay


def without_history(question: str, chunks: Sequence[Any] | None = None) -> dict[str, Any]:
    """The demo's careful generator behind an app that takes no conversation argument."""
    return replay.careful(question, chunks)
