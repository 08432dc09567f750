"""Hostile input through the OTLP/HTTP intake of a real ``ragpulse collect --no-kafka`` process.

Each test sends what an attacker would (a gzip bomb, JSON nested 100,000 deep,
a million attributes, invalid UTF-8, a body shorter than its Content-Length, an
oversized body) and checks three things: the answer is a 4xx saying why, the
process's memory (``/proc/PID/status``: the high-water mark ``VmHWM`` against
``VmRSS`` before the request, in bytes) grows by less than ``RSS_BOUND``, and a
normal request right after it is stored. The process is started once for the
module and stopped by PID; at the end every normal trace sent must be stored.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import Span as PbSpan
from ragpulse.collector.demo.synthetic import make_trace, traces_data
from ragpulse.collector.storage.clickhouse import Storage

from tests.services import collect_no_kafka, free_port, post_otlp

RSS_BOUND = 100 << 20  # bytes a hostile request may add to the process's peak memory
READ_TIMEOUT_S = 2.0  # receiver.read_timeout_s, short so that the truncated-body test is quick
PB = "application/x-protobuf"
INFLIGHT_CAP = 16 << 20  # receiver.max_inflight_bytes: above every single hostile request here


class Intake:
    """The running collector: its PID, port, and the trace ids of the normal requests sent."""

    def __init__(self, proc: subprocess.Popen[str], port: int, db: Path) -> None:
        self.proc = proc
        self.port = port
        self.db = db
        self.sent: set[str] = set()
        self.metrics_url = ""
        self._n = 0

    def status_kb(self, field: str) -> int:
        text = Path(f"/proc/{self.proc.pid}/status").read_text()
        m = re.search(rf"^{field}:\s+(\d+) kB", text, re.M)
        assert m, field
        return int(m.group(1))

    def reset_peak(self) -> int:
        """Reset the high-water mark to the current RSS (Linux ``clear_refs`` 5); return RSS in bytes."""
        Path(f"/proc/{self.proc.pid}/clear_refs").write_text("5")
        return self.status_kb("VmRSS") << 10

    def peak_growth(self, rss_before: int) -> int:
        return (self.status_kb("VmHWM") << 10) - rss_before

    def post(self, body: bytes, ctype: str = PB, encoding: str | None = None) -> tuple[int, bytes]:
        return post_otlp(f"http://127.0.0.1:{self.port}/v1/traces", body, ctype, encoding, timeout=60)

    def assert_serving(self) -> None:
        """A normal request after a hostile one is accepted (and must be stored at the end)."""
        assert self.proc.poll() is None, "the collector exited"
        t = make_trace(self._n, seed="hostile-intake")
        self._n += 1
        code, body = self.post(traces_data([(t.service, t.spans)]))
        assert code == 200, body
        self.sent.add(t.hex)


@pytest.fixture(scope="module")
def intake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Intake]:
    tmp = tmp_path_factory.mktemp("intake")
    port = free_port()
    cfg = {
        "storage": {"dsn": f"chdb://{tmp / 'db'}"}, "metrics": {"port": 0},
        "receiver": {"port": port, "read_timeout_s": READ_TIMEOUT_S, "max_inflight_bytes": INFLIGHT_CAP},
        "judge": {"enabled": False}, "sampling": {"rate": 0.0, "rules": []},
    }  # fmt: skip
    with collect_no_kafka(cfg, tmp / "c.yaml") as (proc, line):
        it = Intake(proc, port, tmp / "db")
        assert "collecting on" in line, line
        it.metrics_url = line.split("metrics on ", 1)[1].strip().removesuffix("/metrics")
        it.assert_serving()
        yield it
    st = Storage(f"chdb://{it.db}")
    try:
        stored = {r[0] for r in st.query("SELECT trace_id FROM {db}.rag_traces FINAL")}
    finally:
        st.close()
    assert stored == it.sent


def _field(number: int, payload: bytes) -> bytes:
    """One length-delimited protobuf field (wire type 2)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _one_span(name: bytes = b"rag", extra: bytes = b"") -> bytes:
    """A ``TracesData`` holding one span; ``extra`` is appended raw to the span's bytes."""
    span = PbSpan(
        trace_id=os.urandom(16), span_id=os.urandom(8), start_time_unix_nano=1, end_time_unix_nano=2
    )
    span_bytes = _field(5, name) + span.SerializeToString() + extra
    return _field(1, _field(2, _field(2, span_bytes)))


def _json_doc(attributes: Any) -> dict[str, Any]:
    span = {"traceId": os.urandom(16).hex(), "spanId": os.urandom(8).hex(), "name": "rag",
            "startTimeUnixNano": "1", "endTimeUnixNano": "2", "attributes": attributes}  # fmt: skip
    return {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}


def test_gzip_bomb_stops_at_the_record_limit_with_bounded_memory(intake: Intake) -> None:
    gib = 1 << 30
    # 1,024 gzip members of 1 MiB of zeros each (a valid gzip stream: members concatenate), built at once.
    bomb = gzip.compress(bytes(1 << 20), 9) * (gib >> 20)
    assert len(bomb) < 2 << 20  # about 1 MB on the wire, 1 GiB inflated
    before = intake.reset_peak()
    code, body = intake.post(bomb, PB, "gzip")
    growth = intake.peak_growth(before)
    print(f"gzip bomb {len(bomb)} -> {gib} bytes: RSS {before >> 20} MiB, peak +{growth >> 20} MiB")
    assert code == 413 and b"inflates past max_record_bytes" in body
    assert growth < RSS_BOUND
    intake.assert_serving()


def test_json_nested_100000_deep_is_a_400_not_a_dropped_connection(intake: Intake) -> None:
    deep = b'{"resourceSpans":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    code, body = intake.post(deep, "application/json")
    assert code == 400 and b"nested too deeply" in json.loads(body)["message"].encode()
    intake.assert_serving()
    # Deep enough to parse, too deep for an attribute value: the decoder's own bound refuses it.
    value: dict[str, Any] = {"stringValue": "x"}
    for _ in range(200):
        value = {"arrayValue": {"values": [value]}}
    code, body = intake.post(
        json.dumps(_json_doc([{"key": "k", "value": value}])).encode(), "application/json"
    )
    assert code == 400 and b"nested deeper than" in body
    intake.assert_serving()


def test_a_million_attributes_are_refused_with_bounded_memory(intake: Intake) -> None:
    million = _field(9, _field(1, b"a")) * 1_000_000  # 5 MB: within max_record_bytes
    before = intake.reset_peak()
    code, body = intake.post(_one_span(extra=million))
    growth = intake.peak_growth(before)
    print(f"protobuf span with 1e6 attributes: RSS {before >> 20} MiB, peak +{growth >> 20} MiB")
    assert code == 400 and b"exceed max_attributes 1024" in body
    assert growth < RSS_BOUND
    intake.assert_serving()
    attrs = b",".join(b'{"key":"k%d","value":{"intValue":"1"}}' % i for i in range(1_000_000))
    doc = gzip.compress(json.dumps(_json_doc("ATTRS")).encode().replace(b'"ATTRS"', b"[" + attrs + b"]"), 1)
    code, body = intake.post(doc, "application/json", "gzip")
    assert code == 413
    intake.assert_serving()


def test_invalid_utf8_in_json_and_in_protobuf_strings_is_a_400(intake: Intake) -> None:
    doc = json.dumps(_json_doc([{"key": "k", "value": {"stringValue": "PLACEHOLDER"}}])).encode()
    code, body = intake.post(doc.replace(b"PLACEHOLDER", b"\xff\xfe bad"), "application/json")
    assert code == 400 and b"invalid JSON" in body
    intake.assert_serving()
    code, body = intake.post(_one_span(name=b"\xff\xfe bad"))
    assert code == 400, body
    intake.assert_serving()
    code, body = intake.post(_one_span(extra=_field(9, _field(1, b"\xc3\x28"))))  # invalid key
    assert code == 400, body
    intake.assert_serving()


def _raw_request(port: int, headers: str, body: bytes, half_close: bool) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        s.sendall(f"POST /v1/traces HTTP/1.1\r\nHost: x\r\n{headers}\r\n".encode() + body)
        if half_close:
            s.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_a_body_shorter_than_its_content_length_is_answered(intake: Intake) -> None:
    head = f"Content-Type: {PB}\r\nContent-Length: 1000\r\n"
    # The client keeps the connection open and never sends the rest: 408 after the read timeout.
    assert _raw_request(intake.port, head, b"0123456789", half_close=False).startswith(b"HTTP/1.1 408")
    intake.assert_serving()
    # The client closes its side early: 400 at once.
    resp = _raw_request(intake.port, head, b"0123456789", half_close=True)
    assert resp.startswith(b"HTTP/1.1 400") and b"body ended after 10 of 1000" in resp
    intake.assert_serving()
    for bad in ("Content-Length: -5\r\n", "Content-Length: lots\r\n"):
        assert _raw_request(intake.port, bad, b"", half_close=True).startswith(b"HTTP/1.1 400")
    assert _raw_request(
        intake.port, "Transfer-Encoding: chunked\r\n", b"5\r\nhello\r\n0\r\n\r\n", half_close=True
    ).startswith(b"HTTP/1.1 411")
    intake.assert_serving()


def test_an_oversized_body_is_a_413_without_being_buffered(intake: Intake) -> None:
    big = bytes(9 << 20)  # past max_record_bytes (8 MiB)
    before = intake.reset_peak()
    code, body = intake.post(big)
    growth = intake.peak_growth(before)
    print(f"9 MiB body: RSS {before >> 20} MiB, peak +{growth >> 20} MiB")
    assert code == 413 and b"exceeds max_record_bytes" in body
    assert growth < 8 << 20  # refused on its Content-Length: never held in memory
    intake.assert_serving()


def test_concurrent_bodies_past_the_in_flight_cap_get_503_with_retry_after(intake: Intake) -> None:
    from tests.soak_run import scrape

    head = f"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: {PB}\r\nContent-Length: {6 << 20}\r\n\r\n"
    held = [socket.create_connection(("127.0.0.1", intake.port), timeout=60) for _ in range(2)]
    try:
        for s in held:  # two slow clients, each with a 6 MiB body on its way: 12 of the 16 MiB held
            s.sendall(head.encode() + b"x")
        deadline = time.monotonic() + 30
        while scrape(intake.metrics_url).get("ragpulse_intake_inflight_bytes", 0) < 12 << 20:
            assert time.monotonic() < deadline, "the intake never held the two bodies"
            time.sleep(0.05)
        req = urllib.request.Request(f"http://127.0.0.1:{intake.port}/v1/traces", data=bytes(5 << 20),
                                     method="POST", headers={"Content-Type": PB})  # fmt: skip
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(req, timeout=60)
        assert refused.value.code == 503 and refused.value.headers["Retry-After"] == "1"
        assert b"max_inflight_bytes" in refused.value.read()
        for s in held:  # the held requests are answered (their garbage bodies are a 400, or 408 if slow)
            s.sendall(bytes((6 << 20) - 1))
            s.shutdown(socket.SHUT_WR)
            assert s.recv(64).split(b" ")[1] in (b"400", b"408")
    finally:
        for s in held:
            s.close()
    # A handler releases its bytes when it returns, just after its answer is written.
    deadline = time.monotonic() + 10
    while scrape(intake.metrics_url)["ragpulse_intake_inflight_bytes"] != 0:
        assert time.monotonic() < deadline, "the answered requests never released their bytes"
        time.sleep(0.05)
    intake.assert_serving()
