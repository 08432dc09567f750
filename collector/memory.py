"""Give freed heap memory back to the operating system between batches.

The collector allocates and frees a batch's worth of memory over and over
(decoded spans, encoded rows: tens of MB). glibc's allocator keeps freed
blocks in its arenas for reuse, so the process's resident size stays near
the highest it ever reached, and with a writer thread there is more than one
arena to keep memory. ``malloc_trim(0)`` returns the free parts of every arena
(measured: it costs well under a millisecond per batch). On other C libraries
it is absent and this is a no-op.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable

__all__ = ["release_free_memory"]


def _load_malloc_trim() -> Callable[[int], int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


_malloc_trim = _load_malloc_trim()


def release_free_memory() -> bool:
    """Return free heap memory to the OS; True when the C library could do it."""
    if _malloc_trim is None:
        return False
    _malloc_trim(0)
    return True
