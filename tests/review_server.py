"""A demo-filled database with an exported eval set, and ``ragpulse review`` serving it, for the
review tests.

:func:`demo_store` runs a small unpaced ``ragpulse demo`` and ``ragpulse export`` (the real
loop: the week's failing cases arrive ``proposed``). :class:`ReviewServer` starts ``ragpulse
review`` as a subprocess on a free port, reads the URL it prints, and stops it with SIGINT
(Ctrl-C) by PID, checking that it stopped cleanly.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

RAGPULSE = [sys.executable, "-m", "ragpulse.collector.cli"]
ENV = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONUNBUFFERED": "1"}

__all__ = ["RAGPULSE", "ENV", "ReviewServer", "demo_store", "ragpulse"]


def ragpulse(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*RAGPULSE, *args], capture_output=True, text=True, timeout=timeout, env=ENV)


def demo_store(base: Path, queries: int = 120) -> tuple[Path, Path]:
    """(database, eval set) after a demo run of ``queries`` questions, every one judged (the same
    judged questions in every run: the sampler's base rate draws by trace id, which is random),
    and an export of its failures."""
    db, evalset = base / "chdb", base / "evalset.jsonl"
    res = ragpulse("demo", "--queries", str(queries), "--rate", "0", "--db", str(db), "--metrics-port", "0",
                   "--no-eval", "--sample-rate", "1", "--report", str(base / "report.html"))  # fmt: skip
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    res = ragpulse("export", "--db", str(db), "--since", "1d", "-o", str(evalset))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return db, evalset


class ReviewServer:
    """``ragpulse review`` on a free port; a context manager that stops it with SIGINT."""

    def __init__(self, *args: str) -> None:
        self.args = args
        self.url = ""
        self.proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> ReviewServer:
        self.proc = subprocess.Popen(
            [*RAGPULSE, "review", "--port", "0", *self.args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
        )  # fmt: skip
        assert self.proc.stdout is not None
        deadline = time.monotonic() + 120
        line = ""
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            m = re.search(r"(http://\S+)", line)
            if m:
                self.url = m.group(1)
                return self
            if not line and self.proc.poll() is not None:
                break
        err = self.proc.stderr.read() if self.proc.stderr else ""
        self.__exit__(None, None, None)
        raise RuntimeError(f"ragpulse review did not start: {line!r} {err[-2000:]}")

    def base(self, path: str = "") -> str:
        """The server's address (without the token the printed URL may carry) plus ``path``."""
        return self.url.split("?", 1)[0].rstrip("/") + path

    def stop(self) -> tuple[int, str]:
        """SIGINT (Ctrl-C), then the exit status and stderr."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            _, err = self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate(timeout=10)
        return self.proc.returncode, err

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.stop()
