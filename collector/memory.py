"""How the collector's process holds heap memory between batches.

The collector allocates and frees a batch's worth of memory over and over
(fetched and decompressed records, decoded traces, encoded rows: tens of MB).
Two opposite costs:

* Memory returned to the operating system must be faulted back in on the
  next batch, page by page. A minor page fault costs about 5.6 us on the VMs
  we measure on (a first touch of a fresh page; 0.26 us to touch a resident
  one), and a bench drain of 20,000 traces took about 140,000 of them when
  every batch ended with ``malloc_trim(0)``: some 0.8 CPU-seconds.
* Memory kept is resident: glibc keeps freed blocks in its arenas.

So while busy the collector keeps what it freed (:func:`keep_freed_memory`:
large blocks come from the heap rather than fresh mappings, and the heap top
is not trimmed below 64 MiB of slack), and it returns free memory
(:func:`release_free_memory`) only once it has caught up with its input. On
other C libraries both are no-ops.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable
from typing import Any

__all__ = ["keep_freed_memory", "release_free_memory"]


def _libc_function(name: str, argtypes: list[Any]) -> Callable[..., int] | None:
    """A C library function returning int, or None where the C library has none (not glibc)."""
    try:
        function = getattr(ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6"), name)
    except (OSError, AttributeError):
        return None
    function.argtypes = argtypes
    function.restype = ctypes.c_int
    return function


_malloc_trim = _libc_function("malloc_trim", [ctypes.c_size_t])
_mallopt = _libc_function("mallopt", [ctypes.c_int, ctypes.c_int])


_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_MMAP_THRESHOLD = 32 << 20  # glibc's ceiling for this setting on 64-bit
_TRIM_THRESHOLD = 64 << 20


def keep_freed_memory() -> bool:
    """Make glibc reuse freed memory instead of unmapping or trimming it straight away:
    blocks under 32 MiB come from the heap, and up to 64 MiB free at a heap's top stays.
    For the collector's own process only (never inside an application that embeds it).
    True when the C library took both settings."""
    if _mallopt is None:
        return False
    return bool(_mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)) and bool(
        _mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD)
    )


def release_free_memory() -> bool:
    """Return free heap memory to the OS; True when the C library could do it."""
    if _malloc_trim is None:
        return False
    _malloc_trim(0)
    return True
