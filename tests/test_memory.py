"""collector/memory.py: freed heap memory is kept while busy and returned when asked.

Run in a fresh interpreter so the anonymous-memory figures are the script's
alone. Only meaningful on glibc (the functions are no-ops elsewhere).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from ragpulse.collector.memory import release_free_memory

SCRIPT = textwrap.dedent(
    """
    from ragpulse.collector.memory import keep_freed_memory, release_free_memory

    def anon_mb():
        for line in open("/proc/self/status"):
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) // 1024

    assert keep_freed_memory()
    base = anon_mb()
    blocks = [bytes(2048) + bytes([i % 256]) for i in range(100_000)]  # ~200 MB of malloc blocks
    held = anon_mb()
    del blocks[1:]  # freed, but the heap keeps the pages (the last block pins its top)
    freed = anon_mb()
    release_free_memory()
    print(base, held, freed, anon_mb())
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc and /proc are Linux")
def test_freed_heap_memory_is_kept_until_released() -> None:
    if not release_free_memory():
        pytest.skip("not glibc: nothing to keep or release")
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True)
    base, held, freed, released = (int(x) for x in out.stdout.split()[-4:])
    assert held > base + 150, out.stdout  # the blocks are resident
    assert freed > base + 150, out.stdout  # freeing them keeps the pages for reuse
    assert released < base + 50, out.stdout  # released: back to the operating system
