"""Settings for a process that is only the Kafka collector (``ragpulse collect``).

Never applied when the collector runs inside another application (tests, an
embedding program): they change process-wide state.
"""

from __future__ import annotations

import gc
import signal
from collections.abc import Callable

from ..memory import keep_freed_memory

__all__ = ["tune_for_ingest", "handle_stop_signals"]


def tune_for_ingest() -> None:
    """Garbage collection and malloc settings for a loop that makes ~10^5 objects a batch.

    The default cyclic-GC thresholds rescan a batch's objects many times over:
    start-up objects are frozen and young ones collected less often. Freed heap
    memory is kept while busy (see :mod:`..memory`).
    """
    gc.freeze()
    gc.set_threshold(20_000, 20, 100)
    keep_freed_memory()


def handle_stop_signals(stop: Callable[[], None]) -> None:
    """Call ``stop`` on SIGTERM and SIGINT (again after chDB opens: it installs its own)."""
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop())
