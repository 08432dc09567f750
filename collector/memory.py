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
import logging
from collections.abc import Callable
from typing import Any

__all__ = ["keep_freed_memory", "release_free_memory", "release_library_pages"]


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


_MADV_DONTNEED = 4

log = logging.getLogger("ragpulse.memory")


def _clean_mappings(path: str) -> list[tuple[int, int, int]]:
    """(start, end, resident bytes) of the read-only mappings of ``path`` that hold no private
    (modified) pages, from /proc/self/smaps: their resident pages are unmodified file pages."""
    out: list[tuple[int, int, int]] = []
    current: tuple[int, int] | None = None
    resident = 0
    with open("/proc/self/smaps") as fh:
        for line in fh:
            if line[:1] in "0123456789abcdef" and "-" in line.split(None, 1)[0]:
                fields = line.split(None, 5)
                current = None
                if len(fields) == 6 and fields[5].rstrip("\n") == path and "w" not in fields[1]:
                    low, high = (int(x, 16) for x in fields[0].split("-"))
                    current = (low, high)
            elif current is not None and line.startswith("Rss:"):
                resident = int(line.split()[1]) << 10
            elif current is not None and line.startswith("Anonymous:"):
                if int(line.split()[1]) == 0:
                    out.append((*current, resident))
                current = None
    return out


def release_library_pages(path: str) -> int:
    """Drop this process's resident pages of the shared library at ``path`` that are plain,
    unmodified file pages; returns the resident bytes released (0 where it cannot be done).

    The embedded ClickHouse engine (chDB) is one ~500 MB library. Opening it touches about
    170 MB of its code and read-only data once (static initialisation of every subsystem);
    those pages stay mapped, and counted in the process's RSS, although ingest then uses
    about a third of them. ``MADV_DONTNEED`` unmaps them from this process: the ones still
    used are mapped again on their next access from the page cache (a minor fault), the
    rest stay out. Only read-only mappings without a single modified (private) page are
    touched, so nothing is lost: relocated data (RELRO) and everything writable are left
    alone. Measured: RSS after opening chDB 338 -> 167 MB; after six 1,000-row inserts and
    the collector's queries 364 -> 255 MB.
    """
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        madvise = libc.madvise
        mappings = _clean_mappings(path)
    except (OSError, AttributeError, ValueError):
        return 0
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    madvise.restype = ctypes.c_int
    released = 0
    for low, high, resident in mappings:
        if madvise(low, high - low, _MADV_DONTNEED) != 0:
            log.debug("madvise(MADV_DONTNEED) on %s failed: errno %d", path, ctypes.get_errno())
            return released
        released += resident
    return released
