"""The native module for the test modules that compare it with the Python code.

``require_native`` imports ``ragpulse_native`` or skips the calling module;
with ``RAGPULSE_REQUIRE_NATIVE=1`` (``make test`` sets it where cargo exists)
a missing module is an error instead, so a broken native build cannot pass
as skipped tests.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

__all__ = ["require_native"]


def require_native(without: str, disabled: str | None = None) -> Any:
    """``ragpulse_native``; else skip the calling test module, saying ``without`` (what runs
    instead). With ``disabled``, also skip it (saying so) when ``RAGPULSE_NATIVE=0``."""
    try:
        import ragpulse_native
    except ImportError as exc:  # pragma: no cover - depends on the installation
        if os.environ.get("RAGPULSE_REQUIRE_NATIVE") == "1":
            raise RuntimeError(
                "RAGPULSE_REQUIRE_NATIVE=1 but ragpulse_native does not import "
                f"({exc}); build it with `.venv/bin/python -m pip install ./native`"
            ) from None
        pytest.skip(f"ragpulse_native is not installed ({without})", allow_module_level=True)
    if disabled is not None and os.environ.get("RAGPULSE_NATIVE", "").strip() == "0":
        pytest.skip(disabled, allow_module_level=True)
    return ragpulse_native
