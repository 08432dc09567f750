"""Hostile input through the OTLP/gRPC intake of a real ``ragpulse collect --no-kafka`` process.

The gRPC equivalents of tests/test_intake_hostile.py: a message over the size limit, bytes that
are no protobuf, a gzip bomb (about 1 MB on the wire inflating to 1 GiB, sent as a compressed
gRPC message over a hand-driven HTTP/2 connection, since a gRPC client compresses only what it
holds), and an attribute value nested 100,000 deep. Each gets a gRPC status saying why, the
process's peak memory (VmHWM after resetting it to VmRSS) grows by less than ``RSS_BOUND``, and
a normal request right after it is accepted; at the end every normal trace sent is stored.
A flood of unauthenticated calls is refused from their metadata, before their messages are
read, with a tighter bound (``UNAUTHENTICATED_BOUND``).
"""

from __future__ import annotations

import re
import socket
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from ragpulse.collector.demo.synthetic import make_trace, traces_data

from tests.grpc_intake import EXPORT, Collect, Stored, collect, grpc_call
from tests.test_intake_hostile import _field, _one_span, _varint

h2 = pytest.importorskip("h2.connection")

RSS_BOUND = 150 << 20  # bytes a hostile request may add to the process's peak memory
UNAUTHENTICATED_BOUND = 50_000_000  # bytes 32 refused 8 MiB calls together may add to it
TOKEN = "hostile-grpc"


class Hostile:
    def __init__(self, c: Collect) -> None:
        self.c = c
        self.sent: set[str] = set()

    def kb(self, field: str) -> int:
        text = Path(f"/proc/{self.c.proc.pid}/status").read_text()
        m = re.search(rf"^{field}:\s+(\d+) kB", text, re.M)
        assert m, field
        return int(m.group(1)) << 10

    def reset_peak(self) -> int:
        Path(f"/proc/{self.c.proc.pid}/clear_refs").write_text("5")
        return self.kb("VmRSS")

    def assert_serving(self) -> None:
        t = make_trace(len(self.sent), seed="hostile-grpc")
        code, out = grpc_call(self.c, traces_data([(t.service, t.spans)]), token=TOKEN)
        assert code == grpc.StatusCode.OK, out
        self.sent.add(t.hex)


@pytest.fixture(scope="module")
def intake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hostile]:
    tmp = tmp_path_factory.mktemp("grpc-hostile")
    with collect(tmp, token=TOKEN, judge=False) as c:
        h = Hostile(c)
        h.assert_serving()
        yield h
    stored = Stored(c.db)
    try:
        assert set(stored.trace_ids()) == h.sent
    finally:
        stored.close()


def test_a_message_over_the_size_limit_is_resource_exhausted(intake: Hostile) -> None:
    before = intake.reset_peak()
    code, details = grpc_call(intake.c, b"\x0a" * (9 << 20), token=TOKEN)  # max_record_bytes is 8 MiB
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "larger than max" in details, details
    assert intake.kb("VmHWM") - before < RSS_BOUND
    intake.assert_serving()


def test_unauthenticated_calls_are_refused_before_their_message_is_read(intake: Hostile) -> None:
    """32 concurrent 8 MiB calls (the most the intake admits at once with its 8 workers), without
    the token or with a wrong one: each is UNAUTHENTICATED and the collector's peak memory grows by
    less than 50 MB, where receiving the messages would take 8 MiB each."""
    message = bytes(range(256)) * ((8 << 20) // 256)  # exactly max_record_bytes
    assert len(message) == 8 << 20
    denied = intake.c.metric("ragpulse_intake_requests_total", protocol="grpc", result="unauthenticated")
    before = intake.reset_peak()
    options = [("grpc.max_send_message_length", -1)]
    with grpc.insecure_channel(intake.c.grpc, options=options) as channel:
        export = channel.unary_unary(EXPORT)
        metadata = [(), (("authorization", "Bearer wrong"),)]
        calls = [export.future(message, metadata=metadata[i % 2], timeout=60) for i in range(32)]
        codes = [call.exception().code() for call in calls]  # type: ignore[union-attr]
    growth = intake.kb("VmHWM") - before
    print(f"32 unauthenticated 8 MiB calls: RSS {before >> 20} MiB, peak +{growth / 1e6:.1f} MB")
    assert codes == [grpc.StatusCode.UNAUTHENTICATED] * 32
    assert growth < UNAUTHENTICATED_BOUND
    after = intake.c.metric("ragpulse_intake_requests_total", protocol="grpc", result="unauthenticated")
    assert after - denied == 32
    intake.assert_serving()


def test_garbage_bytes_are_invalid_argument(intake: Hostile) -> None:
    for garbage in (b"\xff" * 64, bytes(range(256)) * 8, b"\x0a\xff\xff\xff\xff\x0f"):
        code, details = grpc_call(intake.c, garbage, token=TOKEN)
        assert code == grpc.StatusCode.INVALID_ARGUMENT, (garbage[:8], code, details)
    intake.assert_serving()


def _gzip_bomb(inflated: int) -> bytes:
    """One gzip member of ``inflated`` zero bytes, compressed a MiB at a time."""
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zero = bytes(1 << 20)
    return b"".join([*(z.compress(zero) for _ in range(inflated >> 20)), z.flush()])


def _h2_export(port: int, message: bytes, compressed: bool) -> dict[bytes, bytes]:
    """One gRPC ``Export`` call with ``message`` as its (already compressed) body: the response
    headers and trailers."""
    from h2.config import H2Configuration
    from h2.events import ResponseReceived, StreamEnded, StreamReset, TrailersReceived

    conn = h2.H2Connection(H2Configuration(client_side=True))
    headers = [(":method", "POST"), (":scheme", "http"), (":path", EXPORT), (":authority", "127.0.0.1"),
               ("content-type", "application/grpc"), ("te", "trailers"), ("authorization", f"Bearer {TOKEN}")]  # fmt: skip
    if compressed:
        headers.append(("grpc-encoding", "gzip"))
    frame = struct.pack(">BI", 1 if compressed else 0, len(message)) + message
    got: dict[bytes, bytes] = {}
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        conn.initiate_connection()
        stream = conn.get_next_available_stream_id()
        conn.send_headers(stream, headers)
        sent, ended, finished = 0, False, False
        while not ended:
            while sent < len(frame):
                n = min(
                    conn.local_flow_control_window(stream), conn.max_outbound_frame_size, len(frame) - sent
                )
                if n <= 0:
                    break
                conn.send_data(stream, frame[sent : sent + n])
                sent += n
            if sent == len(frame) and not finished:
                conn.end_stream(stream)
                finished = True
            sock.sendall(conn.data_to_send())
            data = sock.recv(1 << 16)
            if not data:
                break
            for event in conn.receive_data(data):
                if isinstance(event, ResponseReceived | TrailersReceived):
                    got.update(dict(event.headers))
                ended = ended or isinstance(event, StreamEnded | StreamReset)
            sock.sendall(conn.data_to_send())
    return got


def test_gzip_bomb_is_refused_with_bounded_memory(intake: Hostile) -> None:
    gib = 1 << 30
    bomb = _gzip_bomb(gib)
    assert len(bomb) < 2 << 20
    before = intake.reset_peak()
    answer = _h2_export(int(intake.c.grpc.rsplit(":", 1)[1]), bomb, compressed=True)
    growth = intake.kb("VmHWM") - before
    print(f"gzip bomb {len(bomb)} -> {gib} bytes: RSS {before >> 20} MiB, peak +{growth >> 20} MiB, {answer}")
    assert answer.get(b"grpc-status") == str(grpc.StatusCode.RESOURCE_EXHAUSTED.value[0]).encode(), answer
    assert growth < RSS_BOUND
    intake.assert_serving()


def _deep_value(depth: int) -> bytes:
    """An ``AnyValue`` holding an array holding an array ... ``depth`` deep (built outside in, in
    linear time: each level's prefix only needs the length of what it wraps)."""
    inner = _field(1, b"x")  # string_value
    size = len(inner)
    prefixes: list[bytes] = []
    for _ in range(depth):
        values = _varint(1 << 3 | 2) + _varint(size)  # ArrayValue.values
        size += len(values)
        array = _varint(5 << 3 | 2) + _varint(size)  # AnyValue.array_value
        size += len(array)
        prefixes.append(array + values)
    return b"".join(reversed(prefixes)) + inner


def test_an_attribute_nested_100000_deep_is_invalid_argument(intake: Hostile) -> None:
    value = _deep_value(100_000)
    body = _one_span(extra=_field(9, _field(1, b"k") + _field(2, value)))
    assert len(body) < 8 << 20
    before = intake.reset_peak()
    code, details = grpc_call(intake.c, body, token=TOKEN)
    # the native decoder's own depth bound, or protobuf's (upb) when the pure-Python decoder runs
    assert code == grpc.StatusCode.INVALID_ARGUMENT, (code, details)
    assert re.search("nested deeper than|MaxDepth", details), details
    assert intake.kb("VmHWM") - before < RSS_BOUND
    intake.assert_serving()
