"""collector/memory.py: giving memory back without losing anything.

``release_library_pages`` unmaps chDB's unmodified library pages; the engine
must keep working afterwards (the pages come back from the page cache when
used) and the process's RSS must really drop. Run in a fresh interpreter so
the measurement is the engine's alone.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from ragpulse.collector.memory import release_free_memory, release_library_pages

SCRIPT = textwrap.dedent(
    """
    import sys
    import time
    from ragpulse.collector.storage.clickhouse import Storage
    from ragpulse.collector.ingest.model import RagTrace

    def rss_mb():
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024

    st = Storage("chdb://" + sys.argv[1])
    st.apply_schema()
    before = rss_mb()
    released = st.release_engine_pages()
    after = rss_mb()
    traces = []
    for i in range(50):
        t = RagTrace(f"{i:032x}")
        now = time.time_ns()  # recent: rows older than the TTL may be dropped at once
        t.query, t.answer, t.time, t.end_time, t.span_count = "q", "a", now + i, now + i + 5, 3
        traces.append(t)
    st.insert_traces(traces, "topic")
    count = st.query("SELECT count() FROM {db}.rag_traces FINAL")[0][0]
    print(before, after, released >> 20, count)
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="madvise and /proc are Linux")
def test_releasing_chdb_library_pages_keeps_the_engine_working(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "chdb")], capture_output=True, text=True, check=True
    )
    before, after, released, count = (int(x) for x in out.stdout.split()[-4:])
    assert count == 50  # inserts and queries work on pages that were released
    assert released > 50, out.stdout  # chDB's start-up touches well over 100 MB of its library
    assert after < before - 50, (before, after)


def test_nothing_to_release_elsewhere(tmp_path: Path) -> None:
    assert release_library_pages(str(tmp_path / "not-mapped.so")) == 0
    assert release_free_memory() in (True, False)
