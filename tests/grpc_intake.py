"""What the OTLP/gRPC intake tests share: a ``ragpulse collect --no-kafka`` process with both intakes,
the real OpenTelemetry exporters that send to it, and reading its metrics and storage."""

from __future__ import annotations

import contextlib
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ragpulse.collector.storage.clickhouse import Storage

from tests.interop import judgment_row, stored_row
from tests.services import collect_no_kafka, free_port

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


class Collect:
    """A running ``ragpulse collect --no-kafka`` with OTLP/HTTP and OTLP/gRPC intakes."""

    def __init__(self, proc: subprocess.Popen[str], line: str, http_port: int, grpc_port: int, db: Path):
        self.proc = proc
        self.http = f"http://127.0.0.1:{http_port}"
        self.grpc = f"127.0.0.1:{grpc_port}"
        self.db = db
        assert f"grpc://127.0.0.1:{grpc_port}" in line, line
        self.metrics_url = line.split("metrics on ", 1)[1].strip().removesuffix("/metrics")

    def metric(self, name: str, **labels: str) -> float:
        """The sum of ``name``'s samples whose labels include ``labels``."""
        from prometheus_client.parser import text_string_to_metric_families

        with urllib.request.urlopen(self.metrics_url + "/metrics", timeout=5) as resp:
            text = resp.read().decode()
        return sum(
            s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
        )

    def until(self, what: str, check: Callable[[], Any], timeout: float = 60.0) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, "the collector exited"
            if result := check():
                return result
            time.sleep(0.2)
        raise AssertionError(f"{what}: not reached within {timeout:.0f}s")


@contextlib.contextmanager
def collect(
    tmp: Path, token: str = "", judge: bool = True, dsn_options: str = "", **receiver: Any
) -> Iterator[Collect]:
    """The collector on free ports (stopped by PID, exit status checked), gRPC enabled."""
    http_port, grpc_port = free_port(), free_port()
    cfg = {
        "storage": {"dsn": f"chdb://{tmp / 'db'}{dsn_options}", "batch_max_seconds": 0.2,
                    "retry_initial_s": 0.2, "retry_max_s": 1.0},
        "metrics": {"port": 0},
        "receiver": {"port": http_port, "grpc_enabled": True, "grpc_port": grpc_port, "auth_token": token,
                     **receiver},
        "judge": {"enabled": judge, "judge": "local"},
        "sampling": {"rate": 1.0, "rules": [], "budget_per_minute": None},
    }  # fmt: skip
    with collect_no_kafka(cfg, tmp / "collect.yaml", stop_s=60) as (proc, line):
        yield Collect(proc, line, http_port, grpc_port, tmp / "db")


def grpc_exporter(c: Collect, token: str = "", gzip: bool = False, timeout: float = 30) -> Any:
    """The real OpenTelemetry OTLP/gRPC span exporter, plaintext (``insecure=True``)."""
    from grpc import Compression
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

    headers = {"authorization": f"Bearer {token}"} if token else None
    return OTLPSpanExporter(endpoint=c.grpc, insecure=True, headers=headers, timeout=timeout,
                            compression=Compression.Gzip if gzip else None)  # fmt: skip


def grpc_call(
    c: Collect, body: bytes, token: str = "", gzip: bool = False, scheme: str = "Bearer"
) -> tuple[Any, bytes | str]:
    """One raw ``Export`` call: (status code, response bytes or error details); the token, when
    given, as ``authorization: <scheme> <token>``."""
    import grpc

    with grpc.insecure_channel(c.grpc, options=[("grpc.max_send_message_length", -1)]) as channel:
        call = channel.unary_unary(EXPORT)
        metadata = (("authorization", f"{scheme} {token}"),) if token else ()
        try:
            out = call(body, metadata=metadata, timeout=60,
                       compression=grpc.Compression.Gzip if gzip else None)  # fmt: skip
        except grpc.RpcError as exc:
            return exc.code(), exc.details() or ""
        return grpc.StatusCode.OK, out


class Stored:
    """The stopped collector's database, read like tests.interop.Pipeline reads its own."""

    def __init__(self, db: Path) -> None:
        self.st = Storage(f"chdb://{db}")

    def stored(self, trace_id: str) -> dict[str, Any]:
        return stored_row(self.st, trace_id)

    def judgment(self, trace_id: str) -> dict[str, Any]:
        return judgment_row(self.st, trace_id)

    def trace_ids(self) -> list[str]:
        return [r[0] for r in self.st.query("SELECT trace_id FROM {db}.rag_traces FINAL")]

    def close(self) -> None:
        self.st.close()
