"""The one boundary to ``ragpulse_native``, the optional Rust module built from native/.

Loading: the module is used when it imports, its ``ABI`` matches :data:`NATIVE_ABI` and
``RAGPULSE_NATIVE=0`` is not set; otherwise every entry point is its Python reference,
which gives the same results, slower. :func:`native_module` is the module or None;
:func:`native_why` says which and why, for the start-up log.

Entry points (:data:`ENTRY_POINTS`): each stage wraps the module's function and its own
Python reference with :func:`with_fallback`, which holds the one policy for errors:

* the native function answers;
* a rejection that is part of its contract passes through (``passes``: the OTLP
  decoder's malformed record, whose reason is the reference's);
* anything else it raises is a failure, and the reference answers the same arguments:
  a value it has no native reading for (``TypeError``, ``ValueError``, ``OverflowError``
  from a row without a binary form, an event that is not a tuple) and a contained panic,
  ``ragpulse_native.NativePanic`` (an ordinary ``RuntimeError``: native/src/boundary.rs
  catches every panic where it happens). Each panic is counted and the first of each
  entry point is logged at WARNING: it is a bug, and the collector keeps running on the
  reference.

Tests inject panics with ``RAGPULSE_NATIVE_TEST_PANIC=<entry point>[,...]`` (read by the
module when it is imported; ``ragpulse_native.TEST_PANICS`` lists what it selected).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = [
    "NATIVE_ABI",
    "ENTRY_POINTS",
    "native_module",
    "native_why",
    "implementation",
    "load_native",
    "installed_module",
    "native_function",
    "with_fallback",
    "panics",
]

NATIVE_ABI = 9  # the ``ragpulse_native.ABI`` the callers are written for

# The native entry points, each with a Python reference: the OTLP protobuf decoder
# (ingest/otlp.py), the rag_traces rows (storage/rows.py), a span's flattened documents
# (ingest/documents.py), the root's citation events (ingest/build.py) and the re-ask index
# (feedback/reask.py, both of its methods).
ENTRY_POINTS = ("decode_traces", "encode_rows", "flattened_documents", "citation_events", "ReaskIndex")

log = logging.getLogger("ragpulse.native")
T = TypeVar("T")


def load_native() -> tuple[Any, str]:
    """The native module (or None) and why it is or is not used."""
    if os.environ.get("RAGPULSE_NATIVE", "").strip() == "0":
        return None, "python (RAGPULSE_NATIVE=0)"
    return installed_module()


def installed_module() -> tuple[Any, str]:
    """The installed native module when its ABI matches, in use or not (RAGPULSE_NATIVE=0
    leaves it installed: the parity tests still compare it), and why it is or is not there."""
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


def native_function(name: str) -> Any:
    """The module's entry point ``name`` (one of :data:`ENTRY_POINTS`) when the module is in
    use, else None."""
    if name not in ENTRY_POINTS:
        raise ValueError(f"{name!r} is not a native entry point {ENTRY_POINTS}")
    return getattr(_native, name) if _native is not None else None


_panics: dict[str, int] = {}
_panics_lock = threading.Lock()


def panics() -> dict[str, int]:
    """Per entry point, the native panics the reference has answered since start-up."""
    with _panics_lock:
        return dict(_panics)


def _failed(name: str, exc: Exception) -> None:
    """Count and log a native failure that is a panic (other failures are inputs the native
    code leaves to the reference by design)."""
    panic_type = getattr(_native, "NativePanic", None)
    if panic_type is None or not isinstance(exc, panic_type):
        return
    with _panics_lock:
        first = name not in _panics
        _panics[name] = _panics.get(name, 0) + 1
    if first:
        log.warning("%s; the Python reference answers (only the first panic is logged)", exc)


def with_fallback(
    name: str,
    native: Callable[..., T] | None,
    reference: Callable[..., T],
    passes: tuple[type[Exception], ...] = (),
) -> Callable[..., T]:
    """Entry point ``name``: ``native`` answering, and ``reference`` on the same arguments when
    it fails (the module docstring's policy; ``passes`` are its contract's rejections); just
    ``reference`` when ``native`` is None. Otherwise the function returned carries both, as
    ``native`` and ``reference`` (the parity tests compare them)."""
    if name not in ENTRY_POINTS:
        raise ValueError(f"{name!r} is not a native entry point {ENTRY_POINTS}")
    if native is None:
        return reference

    def call(*args: Any) -> T:
        try:
            return native(*args)
        except passes:
            raise
        except Exception as exc:
            _failed(name, exc)
            return reference(*args)

    call.native = native  # type: ignore[attr-defined]
    call.reference = reference  # type: ignore[attr-defined]
    return call
