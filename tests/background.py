"""A loop on a daemon thread until told to stop: traffic generators and pollers of the tests and benches."""

from __future__ import annotations

import threading
from typing import TypeVar

__all__ = ["Background"]

_B = TypeVar("_B", bound="Background")


class Background:
    """``start()`` runs ``_run`` on a daemon thread; ``_run`` returns once ``self._stop`` is set,
    which ``stop()`` does before it joins the thread (for at most ``join_s``)."""

    join_s = 30.0

    def __init__(self, name: str) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def _run(self) -> None:
        raise NotImplementedError

    def start(self: _B) -> _B:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(self.join_s)
