"""The bench scripts' modules, imported by the tests of their machinery.

The bench scripts import their siblings by bare name (``import judge_metrics as jm``), so
``bench/`` has to be on ``sys.path`` while they are imported; it is there only meanwhile.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

__all__ = ["BENCH", "bench_modules"]

BENCH = Path(__file__).resolve().parents[1] / "bench"


@contextmanager
def bench_modules(*names: str) -> Iterator[tuple[ModuleType, ...]]:
    """The bench modules ``names``, imported with ``bench/`` on ``sys.path``."""
    sys.path.insert(0, str(BENCH))
    try:
        yield tuple(importlib.import_module(name) for name in names)
    finally:
        sys.path.remove(str(BENCH))
