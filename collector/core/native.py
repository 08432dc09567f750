"""The one place that loads ``ragpulse_native``, the optional Rust module built from native/.

The module is used when it imports, its ``ABI`` matches :data:`NATIVE_ABI` and
``RAGPULSE_NATIVE=0`` is not set; otherwise every caller takes its Python reference, which
gives the same results, slower. :func:`native_module` is the module or None;
:func:`native_why` says which and why, for the start-up log.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["NATIVE_ABI", "native_module", "native_why", "implementation", "load_native"]

NATIVE_ABI = 8  # the ``ragpulse_native.ABI`` the callers are written for


def load_native() -> tuple[Any, str]:
    """The native module (or None) and why it is or is not used."""
    if os.environ.get("RAGPULSE_NATIVE", "").strip() == "0":
        return None, "python (RAGPULSE_NATIVE=0)"
    try:
        import ragpulse_native
    except ImportError:
        return None, "python (ragpulse_native is not installed)"
    abi = getattr(ragpulse_native, "ABI", None)
    if abi != NATIVE_ABI:
        return None, f"python (ragpulse_native ABI {abi} does not match the expected {NATIVE_ABI})"
    return ragpulse_native, f"native (ragpulse_native {ragpulse_native.__version__})"


_native, _why = load_native()


def native_module() -> Any:
    """The ``ragpulse_native`` module when it is in use, else None (:func:`native_why` says why)."""
    return _native


def native_why() -> str:
    """Which implementation is active and why, e.g. ``native (ragpulse_native 0.1.0)``."""
    return _why


def implementation() -> str:
    """``native`` when the module is in use, else ``python``."""
    return "native" if _native is not None else "python"
