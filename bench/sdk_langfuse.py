"""The Langfuse peer of ``bench/sdk_overhead.py``: Langfuse's ``@observe`` on the same RAG call.

Langfuse is installed only for the benchmark, into ``.cache/bench-langfuse`` (a separate venv),
and runs in a subprocess (:func:`worker`) driven round by round from the benchmark.
Its span exporter encodes each batch with the OTel SDK's OTLP protobuf encoder, what Langfuse's
own OTLP/HTTP exporter sends, and writes the bytes nowhere; its queue holds a whole round, so the
round's export happens at its flush, measured apart from the calls.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import sdk_calls as calls

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
LANGFUSE_VENV = ROOT / ".cache" / "bench-langfuse"
LANGFUSE_SPEC = "langfuse==5.0.4"
_WORKER = "import sys; sys.path.insert(0, {bench!r}); import sdk_langfuse; sdk_langfuse.worker({calls})"


def worker(calls_per_round: int) -> None:
    """Serve 'run N' / 'quit' on stdin; reply with the round's figures per call as JSON."""
    from langfuse import Langfuse, observe

    sink = calls.ByteCount()
    client = Langfuse(
        public_key="pk-lf-bench",
        secret_key="sk-lf-bench",
        base_url="http://127.0.0.1:9",
        span_exporter=calls.otlp_exporter(sink),
        flush_at=10 * calls_per_round * 3,
        flush_interval=3600,
    )

    @observe(as_type="retriever")
    def search(query: str) -> list[dict]:
        return calls.CHUNKS

    @observe(as_type="generation")
    def complete(prompt: str) -> str:
        return calls.ANSWER

    @observe()
    def rag(query: str) -> str:
        search(query)
        return complete(query)

    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        cmd = line.split()
        if not cmd or cmd[0] == "quit":
            break
        n = int(cmd[1])
        gc.collect()
        cpu0, thread0, wall0 = time.process_time(), time.thread_time(), time.perf_counter()
        for _ in range(n):
            rag(calls.QUERY)
        wall, thread = time.perf_counter() - wall0, time.thread_time() - thread0
        client.flush()
        cpu = time.process_time() - cpu0
        reply = {
            "request": wall / n,
            "request_cpu": thread / n,
            "export_cpu": (cpu - thread) / n,
            "total_cpu": cpu / n,
            "bytes": sink.take() / n,
        }
        print(json.dumps(reply), flush=True)
    client.shutdown()


def ensure_venv() -> tuple[Path | None, str]:
    """The Langfuse venv's python (created on first use), or None and the reason."""
    python = LANGFUSE_VENV / "bin" / "python"
    check = [str(python), "-c", "import langfuse"]
    if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return python, ""
    print(f"installing {LANGFUSE_SPEC} into {LANGFUSE_VENV} (benchmark only) ...", flush=True)
    steps = [
        [sys.executable, "-m", "venv", str(LANGFUSE_VENV)],
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", LANGFUSE_SPEC],
    ]
    for step in steps:
        result = subprocess.run(step, capture_output=True, text=True)
        if result.returncode != 0:
            lines = (result.stderr or result.stdout or "install failed").strip().splitlines()
            return None, lines[-1] if lines else "install failed"
    return python, ""


class LangfusePeer:
    """A persistent subprocess in the Langfuse venv, asked for one round at a time."""

    def __init__(self, python: Path, calls_per_round: int):
        env = {k: v for k, v in os.environ.items() if not k.startswith("LANGFUSE_")}
        env["OTEL_SDK_DISABLED"] = "false"
        # Langfuse's BatchSpanProcessor takes its queue size from the standard variable.
        env["OTEL_BSP_MAX_QUEUE_SIZE"] = str(10 * calls_per_round * 3)
        self.proc = subprocess.Popen(
            [str(python), "-c", _WORKER.format(bench=str(BENCH), calls=calls_per_round)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=str(ROOT),
        )
        ready = self.proc.stdout.readline()
        if not ready:
            raise RuntimeError(f"langfuse worker failed: {self.proc.stderr.read()[-2000:]}")

    def round(self, n: int) -> dict[str, float]:
        """Run ``n`` calls and flush; the figures per call (seconds, bytes)."""
        self.proc.stdin.write(f"run {n}\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.flush()
            self.proc.wait(timeout=30)
        except Exception:  # noqa: BLE001
            self.proc.kill()
            self.proc.wait()
