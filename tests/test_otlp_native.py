"""The native OTLP protobuf decoder (native/, ``ragpulse_native``) against the Python reference.

Differential: every input goes through ``decode_otlp_proto_py`` (upb) and the
native ``decode_otlp_proto_native``; either both raise :class:`MalformedRecord` with
the same reason, or both return the same spans (every field, attribute values
compared by type and bit pattern, dict order included) and the same error
list. Inputs: the synthetic generator's records, hand-built records with every
AnyValue kind and protobuf corner (merges, oneof switches, unknown fields,
wrong wire types, groups), malformed records (every truncation, invalid UTF-8
in each string field, bad ids, limits, nesting at upb's depth limits) and a
seeded mutation fuzz of valid records.

When ``RAGPULSE_REQUIRE_NATIVE=1`` (``make test`` sets it where cargo exists)
a missing native module fails these tests instead of skipping them.
"""

from __future__ import annotations

import os
import random
import struct
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
from opentelemetry.proto.common.v1.common_pb2 import (
    AnyValue,
    ArrayValue,
    EntityRef,
    InstrumentationScope,
    KeyValue,
    KeyValueList,
)
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status, TracesData
from ragpulse.collector.core.native import NATIVE_ABI, load_native
from ragpulse.collector.demo.synthetic import make_trace, traces_data
from ragpulse.collector.ingest import otlp
from ragpulse.collector.ingest.otlp import (
    Limits,
    MalformedRecord,
    decode_otlp_proto_native,
    decode_otlp_proto_py,
)

from tests.native_module import require_native
from tests.otlp_parity import outcome, span_tuple

ragpulse_native = require_native("pure-Python decoder only")

# The active decoder: native unless RAGPULSE_NATIVE=0 (the parity tests call the native one directly).
needs_active = pytest.mark.skipif(
    os.environ.get("RAGPULSE_NATIVE", "").strip() == "0",
    reason="RAGPULSE_NATIVE=0 selects the Python decoder",
)

TID = bytes(range(1, 17))
SID = bytes(range(1, 9))
PID = bytes(range(9, 17))
T0 = 1_700_000_000_000_000_000


# ---------------------------------------------------------------- comparison


def same(data: bytes, limits: Limits | None = None) -> Any:
    """Decodes with both decoders, asserts identical outcomes, returns the Python one."""
    limits = limits or Limits()
    ref = outcome(decode_otlp_proto_py, data, limits)
    got = outcome(decode_otlp_proto_native, data, limits)
    assert got == ref, f"native differs on {data[:200]!r}...:\n native {got}\n python {ref}"
    return ref


# ---------------------------------------------------------------- building records


def vint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def tag(field: int, wt: int) -> bytes:
    return vint(field << 3 | wt)


def ld(field: int, payload: bytes) -> bytes:
    return tag(field, 2) + vint(len(payload)) + payload


def kv(key: str, value: Any) -> KeyValue:
    """A KeyValue; value may be an AnyValue, a plain value, or None (value field unset)."""
    if value is None:
        return KeyValue(key=key)
    if isinstance(value, AnyValue):
        return KeyValue(key=key, value=value)
    return KeyValue(key=key, value=av(value))


def av(v: Any) -> AnyValue:
    if isinstance(v, bool):
        return AnyValue(bool_value=v)
    if isinstance(v, int):
        return AnyValue(int_value=v)
    if isinstance(v, float):
        return AnyValue(double_value=v)
    if isinstance(v, bytes):
        return AnyValue(bytes_value=v)
    if isinstance(v, list):
        return AnyValue(array_value=ArrayValue(values=[av(x) for x in v]))
    if isinstance(v, dict):
        return AnyValue(kvlist_value=KeyValueList(values=[kv(k, x) for k, x in v.items()]))
    return AnyValue(string_value=v)


def span(name: str = "s", attrs: list[KeyValue] | None = None, **kw: Any) -> Span:
    s = Span(
        trace_id=kw.pop("trace_id", TID),
        span_id=kw.pop("span_id", SID),
        parent_span_id=kw.pop("parent_span_id", PID),
        name=name,
        start_time_unix_nano=kw.pop("start", T0),
        end_time_unix_nano=kw.pop("end", T0 + 1000),
        **kw,
    )
    s.attributes.extend(attrs or [])
    return s


def record(*spans: Span, service: Any = "svc", resource_attrs: list[KeyValue] | None = None) -> bytes:
    td = TracesData()
    rs = td.resource_spans.add()
    if resource_attrs is not None:
        rs.resource.attributes.extend(resource_attrs)
    elif service is not None:
        rs.resource.attributes.append(kv("service.name", service))
    rs.scope_spans.add(scope=InstrumentationScope(name="scope", version="1")).spans.extend(spans)
    return td.SerializeToString()


def wrap_span(span_bytes: bytes) -> bytes:
    """A TracesData holding one span given as raw bytes (ResourceSpans > ScopeSpans > Span)."""
    service = ld(1, ld(1, b"service.name") + ld(2, ld(1, b"svc")))
    return ld(1, ld(1, service) + ld(2, ld(2, span_bytes)))


def base_span_bytes() -> bytes:
    return span("raw").SerializeToString()


def synthetic_records() -> list[bytes]:
    out = []
    for i in range(12):
        t = make_trace(
            i,
            n_chunks=1 + i % 6,
            chunk_chars=40 + 37 * i,
            rerank=i % 3 == 0,
            error=i % 4 == 1,
            refusal=i % 5 == 2,
            risk="high" if i % 2 else "low",
            feedback="thumbs_down" if i % 3 == 2 else "",
            rng=random.Random(i),
        )
        out.append(traces_data([(t.service, t.spans)]))
    groups = []
    for i in range(9):
        t = make_trace(100 + i, service=f"svc-{i % 3}", rerank=i % 2 == 0, rng=random.Random(i))
        groups.append((t.service, t.spans))
    out.append(traces_data(groups, shared_resource=False))
    out.append(traces_data(groups, shared_resource=True))
    return out


EVERY_KIND = [
    kv("s", "plain"),
    kv("uni", "h\u00e9llo \u4e16\u754c \U0001f600 e\u0301 \u200b"),
    kv("empty", ""),
    kv("unset", None),
    kv("novalue", AnyValue()),
    kv("int", 42),
    kv("neg", -7),
    kv("big", 2**63 - 1),
    kv("small", -(2**63)),
    kv("zero", 0),
    kv("dbl", 0.1),
    kv("nan", float("nan")),
    kv("inf", float("inf")),
    kv("ninf", float("-inf")),
    kv("negzero", -0.0),
    kv("t", True),
    kv("f", False),
    kv("bytes", b"\x00\xff\x10 binary"),
    kv("bytes1", b"a"),
    kv("bytes2", b"ab"),
    kv("bytes0", b""),
    kv("arr", [1, "two", 3.5, True, b"\x01", [], ["nested", [None and 0, -1]], {"k": "v"}]),
    kv("arr_empty", []),
    kv("kvl", {"a": 1, "b": [1, 2], "c": {"d": "e", "d2": float("nan")}, "a2": "x"}),
    kv("kvl_dup", AnyValue(kvlist_value=KeyValueList(values=[kv("x", 1), kv("x", 2), kv("y", None)]))),
    kv("arr_unset", AnyValue(array_value=ArrayValue(values=[AnyValue(), AnyValue(string_value="")]))),
    kv("strindex", AnyValue(string_value_strindex=5)),
    kv("dup", "first"),
    kv("dup", "last"),
    kv("", "empty key"),
    kv("\u00fcnic\u00f8de key", 1),
]


# ---------------------------------------------------------------- (a) valid shapes


def test_synthetic_records_match() -> None:
    for data in synthetic_records():
        ref = same(data)
        assert ref[0] == "ok" and ref[1] and not ref[2]


def test_every_anyvalue_kind_and_events_match() -> None:
    s = span("all kinds \u00e9", EVERY_KIND, status=Status(code=Status.STATUS_CODE_ERROR, message="m"))
    for i in range(3):
        ev = s.events.add(name=f"ev{i} \u2603", time_unix_nano=T0 + i)
        ev.attributes.extend(EVERY_KIND[: 5 + i * 7])
    s.events.add()  # an event with nothing set
    s.links.add(trace_id=TID, span_id=SID, trace_state="ts", attributes=[kv("l", [1, {"a": b"x"}])])
    ref = same(record(s, span("second", parent_span_id=b"", span_id=PID), service="\u00e9-svc"))
    assert ref[0] == "ok" and len(ref[1]) == 2


def test_service_name_forms() -> None:
    for attrs in (
        [kv("service.name", 5)],  # not a string: ""
        [kv("service.name", None)],
        [kv("other", "x"), kv("service.name", "first"), kv("service.name", "second")],
        [],
        [kv("service.name", "")],
    ):
        same(record(span(), resource_attrs=attrs))
    # several resources, several scopes, spans of many traces
    td = TracesData()
    for r in range(3):
        rs = td.resource_spans.add()
        rs.resource.attributes.append(kv("service.name", f"svc{r}"))
        for sc in range(2):
            ss = rs.scope_spans.add(scope=InstrumentationScope(name=f"s{sc}", attributes=[kv("a", 1)]))
            for k in range(3):
                ss.spans.append(span(f"r{r}s{sc}k{k}", [kv("k", k)], trace_id=bytes([r + 1] * 16)))
    td.resource_spans.add()  # an empty ResourceSpans
    same(td.SerializeToString())


def test_protobuf_merge_and_oneof_semantics() -> None:
    base = base_span_bytes()
    cases = [
        # status twice: merged (code of the second, message of the first stays)
        base + ld(15, tag(3, 0) + vint(2) + ld(2, b"a")) + ld(15, ld(2, b"b")),
        base + ld(15, tag(3, 0) + vint(1)) + ld(15, tag(3, 0) + vint(2)),
        # enum out of range, negative, and a 10-byte varint truncated to 32 bits
        base + ld(15, tag(3, 0) + vint(77)),
        base + ld(15, tag(3, 0) + vint((1 << 64) - 1)),
        base + ld(15, tag(3, 0) + vint(0x1_0000_0005)),
        # ids and name given twice: last wins
        base + ld(1, bytes([9] * 16)) + ld(5, b"renamed"),
        base + ld(4, b""),  # parent cleared
        base + ld(4, b"\x00" * 8),  # all-zero parent means no parent
        # attribute value fields merged: array + array appends, string + int switches, array + string + array
        base + ld(9, ld(1, b"k") + ld(2, ld(5, ld(1, ld(1, b"a")))) + ld(2, ld(5, ld(1, ld(1, b"b"))))),
        base + ld(9, ld(1, b"k") + ld(2, ld(1, b"str")) + ld(2, tag(3, 0) + vint(5))),
        base
        + ld(
            9,
            ld(1, b"k") + ld(2, ld(5, ld(1, ld(1, b"a"))) + ld(1, b"s") + ld(5, ld(1, tag(2, 0) + b"\x01"))),
        ),
        base + ld(9, ld(1, b"k") + ld(2, ld(6, ld(1, ld(1, b"x")))) + ld(2, ld(6, ld(1, ld(1, b"y"))))),
        base + ld(9, ld(1, b"k") + ld(2, ld(1, b"s") + ld(1, b""))),  # string then empty string: ""
        base + ld(9, ld(1, b"k") + ld(2, ld(1, b"") + tag(8, 0) + vint(3))),  # string then strindex
        base + ld(9, ld(2, ld(1, b"v")) + ld(1, b"late key")),  # key after value
        base + ld(9, ld(1, b"a") + ld(1, b"b") + ld(2, tag(2, 0) + vint(300))),  # key twice, bool from 300
        base + ld(9, ld(1, b"k") + ld(2, tag(4, 1) + struct.pack("<Q", 0x7FF0000000000001))),  # NaN payload
        base + ld(9, ld(1, b"k") + ld(2, tag(3, 0) + b"\xff" * 9 + b"\x7f")),  # 10-byte varint int
        base + ld(9, ld(1, b"k") + tag(3, 0) + vint(4)),  # key_strindex ignored
    ]
    for data in cases:
        same(wrap_span(data))
    # resource given twice: attributes appended, the first service.name wins
    rs = ld(1, ld(1, ld(1, b"other") + ld(2, ld(1, b"x")))) + ld(
        1, ld(1, ld(1, b"service.name") + ld(2, ld(1, b"A")))
    )
    rs += ld(2, ld(2, base)) + ld(1, ld(1, ld(1, b"service.name") + ld(2, ld(1, b"B"))))
    same(ld(1, rs))
    # ExportTraceServiceRequest and TracesData are the same bytes; scope and entity refs are parsed
    ent = EntityRef(schema_url="u", type="t", id_keys=["a", "b"], description_keys=["c"])
    res = Resource(attributes=[kv("service.name", "svc")], entity_refs=[ent], dropped_attributes_count=3)
    ss = ScopeSpans(scope=InstrumentationScope(name="n", version="v"), spans=[span()], schema_url="x")
    same(
        TracesData(
            resource_spans=[ResourceSpans(resource=res, scope_spans=[ss], schema_url="y")]
        ).SerializeToString()
    )


def test_unknown_fields_wrong_wire_types_and_groups() -> None:
    base = base_span_bytes()
    extras = [
        tag(99, 0) + vint(1),
        tag(99, 1) + b"\x00" * 8,
        tag(99, 5) + b"\x00" * 4,
        ld(99, b"\xff\xfe anything"),
        tag(99, 3) + tag(1, 0) + vint(5) + tag(2, 3) + tag(2, 4) + tag(0, 0) + vint(1) + tag(99, 4),
        tag(536870911, 0) + vint(1),
    ]
    # every known Span field with each wire type it does not have: skipped as unknown
    payload = {0: vint(1), 1: b"\x01" * 8, 2: vint(2) + b"\xff\xfe", 5: b"\x01" * 4}
    for field in range(1, 17):
        for wt, body in payload.items():
            extras.append(tag(field, wt) + body)
        extras.append(tag(field, 3) + tag(field, 4))
    for extra in extras:
        same(wrap_span(base + extra))
        same(wrap_span(extra + base))
        same(ld(1, extra + ld(2, ld(2, base))))  # in ResourceSpans
        same(extra + wrap_span(base))  # at top level
        kvb = ld(1, b"k") + ld(2, extra + ld(1, b"v"))  # inside an AnyValue
        same(wrap_span(base + ld(9, kvb)))
    # wrong wire types for known fields of the other messages
    for field in (1, 2, 3):
        same(ld(1, tag(field, 0) + vint(1) + ld(2, ld(2, base))))
        same(ld(1, ld(2, tag(field, 5) + b"abcd" + ld(2, base))))
    for field in range(1, 9):
        same(wrap_span(base + ld(9, ld(1, b"k") + ld(2, tag(field, 1) + b"\x00" * 8))))
        same(wrap_span(base + ld(9, ld(1, b"k") + ld(2, tag(field, 5) + b"\x00" * 4))))
    # every field of Event, Status, KeyValue, Link, InstrumentationScope, Resource, EntityRef, with each
    # wire type: the expected one parses, the others are skipped (a string given as varint is not checked)
    bodies = [
        (0, vint(3)),
        (1, b"\x02" * 8),
        (2, vint(3) + b"\xc3\xa9a"),
        (2, vint(2) + b"\xffa"),
        (5, b"\x02" * 4),
        (3, b""),
    ]
    for f in range(1, 8):
        for wt, body in bodies:
            x = tag(f, wt) + body + (tag(f, 4) if wt == 3 else b"")
            same(wrap_span(base + ld(11, ld(2, b"ev") + x)))  # Event
            same(wrap_span(base + ld(15, x + tag(3, 0) + vint(2))))  # Status
            same(wrap_span(base + ld(9, x + ld(1, b"k"))))  # KeyValue
            same(wrap_span(base + ld(13, x)))  # Link
            same(ld(1, ld(2, ld(1, x) + ld(2, base))))  # InstrumentationScope
            same(ld(1, ld(1, x) + ld(2, ld(2, base))))  # Resource
            same(ld(1, ld(1, ld(3, x)) + ld(2, ld(2, base))))  # EntityRef


# ---------------------------------------------------------------- (b) malformed input


def test_garbage_and_structural_errors() -> None:
    cases = [
        b"",
        b"\x00",
        b"\xff",
        b"\x0a",
        b"\x0a\x00",  # one empty ResourceSpans: no spans
        b"\x0a\x02\x12\x00",  # an empty ScopeSpans
        tag(1, 6),
        tag(1, 7),
        tag(1, 4),  # end group at message level
        tag(0, 0) + vint(1),
        tag(0, 2) + vint(0),
        tag(5, 3),  # unterminated group
        tag(5, 3) + tag(6, 4),  # mismatched end group
        tag(5, 3) + tag(5, 3) + tag(5, 4),
        tag(5, 3) + tag(1, 6) + tag(5, 4),
        b"\x88\x80\x80\x80\x80\x00",  # 6-byte tag
        b"\xf8\xff\xff\xff\x1f\x00",  # tag beyond 32 bits
        b"\xf8\xff\xff\xff\x0f\x00",  # largest field number
        tag(2, 0) + b"\xff" * 10 + b"\x01",  # 11-byte varint
        tag(2, 0) + b"\xff" * 9 + b"\x7f",
        tag(2, 0) + b"\xff" * 9,  # truncated varint
        b"\x0a" + vint(2**31),
        b"\x0a" + b"\xff\xff\xff\xff\x0f",
        b"\x0a\x80\x80\x80\x80\x80\x00",  # 6-byte length
        tag(3, 1) + b"\x00" * 7,
        tag(3, 5) + b"\x00" * 3,
        ld(1, tag(5, 3)) + tag(5, 4),  # group crossing its message's end
        ld(1, b"\x08"),  # varint cut by the message end
        ld(1, ld(2, b"")[:-1]),
        b"{not protobuf}",
        b'\n{"resourceSpans": []}',
    ]
    for data in cases:
        same(data)


def test_string_running_past_its_message() -> None:
    """upb bounds a string by the record, checks its UTF-8, and only then sees the overrun."""
    seen = set()

    def string_in_scope(extra: int, inner: bytes, after: bytes) -> bytes:
        scope = tag(1, 2) + vint(len(inner) + extra) + inner  # InstrumentationScope.name
        return ld(1, ld(2, ld(1, scope))) + after

    for extra in range(0, 40):
        for after in (b"\xff" * 30, b"Z" * 30, "\u00e9".encode() * 15, b"", b"\xc3", tag(9, 2)):
            r = same(string_in_scope(extra, b"a" * 20, after))
            seen.add(r[1].rsplit(": ", 1)[-1] if r[0] == "malformed" else "ok")
    # a tag that runs past its message's end, naming a string field
    for tail in (b"\x01\xff", b"\x01a", b"\x02\xc3\xa9", b"\x05" + b"\xff" * 5):
        same(ld(1, ld(2, ld(1, b"\x8a"))) + tail)
        same(ld(1, ld(3 | 0, b"")[:-1] + b"\x9a") + tail)
    assert {"String field had bad UTF-8", "Wire format was corrupt"} <= seen


def test_truncation_at_every_byte() -> None:
    s = span("trunc \u00e9", EVERY_KIND[:12], status=Status(code=2, message="x"))
    s.events.add(name="e", time_unix_nano=T0, attributes=[kv("a", [1, "b"])])
    data = record(s) + record(span("two"))  # two ResourceSpans: cut at the boundary, the first parses
    outcomes = set()
    for n in range(len(data)):
        outcomes.add(same(data[:n])[0])
    assert outcomes == {"malformed", "ok"}
    for data in synthetic_records()[:2]:
        for n in range(0, len(data), 3):
            same(data[:n])


def test_invalid_utf8_in_every_string_field() -> None:
    mark = "QZQZ"
    bad = [b"\xff\xfe\xfd\xfc", b"\xed\xa0\x80a", b"\xc0\xafab", b"\xf4\x90\x80\x80", b"a\xe2\x82"[:3] + b"b"]
    ok = [b"\xc3\xa9ab", b"\xf0\x9f\x98\x80"]
    spots: list[Callable[[str], bytes]] = [
        lambda m: record(span(m)),
        lambda m: record(span(trace_state=m)),
        lambda m: record(span(attrs=[kv(m, "v")])),
        lambda m: record(span(attrs=[kv("k", m)])),
        lambda m: record(span(attrs=[kv("k", [1, [m]])])),
        lambda m: record(span(attrs=[kv("k", {m: 1})])),
        lambda m: record(span(attrs=[kv("k", {"x": m})])),
        lambda m: record(span(status=Status(message=m))),
        lambda m: record(span(events=[Span.Event(name=m, time_unix_nano=1)])),
        lambda m: record(span(events=[Span.Event(attributes=[kv(m, 1)])])),
        lambda m: record(span(links=[Span.Link(trace_state=m)])),
        lambda m: record(span(links=[Span.Link(attributes=[kv("k", m)])])),
        lambda m: record(span(), resource_attrs=[kv("service.name", m)]),
        lambda m: record(span(), resource_attrs=[kv(m, "x")]),
        lambda m: TracesData(
            resource_spans=[ResourceSpans(schema_url=m, scope_spans=[ScopeSpans(spans=[span()])])]
        ).SerializeToString(),
        lambda m: TracesData(
            resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(schema_url=m, spans=[span()])])]
        ).SerializeToString(),
        lambda m: TracesData(
            resource_spans=[
                ResourceSpans(scope_spans=[ScopeSpans(scope=InstrumentationScope(name=m), spans=[span()])])
            ]
        ).SerializeToString(),
        lambda m: TracesData(
            resource_spans=[
                ResourceSpans(scope_spans=[ScopeSpans(scope=InstrumentationScope(version=m), spans=[span()])])
            ]
        ).SerializeToString(),
        lambda m: TracesData(
            resource_spans=[
                ResourceSpans(
                    scope_spans=[
                        ScopeSpans(scope=InstrumentationScope(attributes=[kv(m, 1)]), spans=[span()])
                    ]
                )
            ]
        ).SerializeToString(),
    ]
    for field in ("schema_url", "type", "id_keys", "description_keys"):
        value = [mark] if field.endswith("keys") else mark
        spots.append(
            lambda m, f=field, v=value: TracesData(
                resource_spans=[
                    ResourceSpans(
                        resource=Resource(entity_refs=[EntityRef(**{f: v if m == mark else m})]),
                        scope_spans=[ScopeSpans(spans=[span()])],
                    )
                ]
            ).SerializeToString()
        )
    # bytes fields take any bytes
    spots.append(lambda m: record(span(attrs=[kv("b", m.encode("utf-8", "surrogateescape"))])))
    for build in spots:
        data = build(mark)
        assert data.count(mark.encode()) == 1
        assert same(data)[0] == "ok"
        for b in bad + ok:
            result = same(data.replace(mark.encode(), b))
            if b in bad and build is not spots[-1]:
                assert result[0] == "malformed" and "UTF-8" in result[1]


def test_bad_ids_and_times() -> None:
    cases = [
        span(trace_id=b""),
        span(trace_id=bytes(15)),
        span(trace_id=bytes(16)),
        span(trace_id=TID + b"x"),
        span(span_id=b""),
        span(span_id=bytes(8)),
        span(span_id=SID[:7]),
        span(parent_span_id=PID[:7]),
        span(parent_span_id=PID + b"\x00"),
        span(parent_span_id=bytes(8)),
        span(start=0),
        span(end=0),
        span(start=T0 + 1, end=T0),
        span(start=2**64 - 1, end=2**64 - 1),
        span("x" * 100, trace_id=b"short"),
        span("\u00e9\n'\"\x00\\" * 20, span_id=b""),
        span("\U0001f600" * 70, parent_span_id=b"\x01"),
    ]
    for s in cases:
        same(record(s))
        same(record(s, span("good")))
    same(record(*cases))


def test_attribute_limits() -> None:
    s = span(
        "lim",
        [kv("a" * 100, "\u00e9" * 10), kv("b", "x" * 10), kv("arr", ["x" * 4]), kv("by", b"\x00" * 6)],
    )
    s.events.add(name="e", attributes=[kv("c", "y" * 11)])
    data = record(s, span("other", [kv("k", "v")]))
    for cap in (-1, 0, 3, 4, 9, 10, 11, 12, 20, 10**6):
        for nmax in (-1, 0, 1, 3, 4, 5, 100):
            same(data, Limits(max_attribute_chars=cap, max_attributes=nmax))
    many = record(span("many", [kv(f"k{i}", i) for i in range(1025)]))
    assert "1025 attributes exceed" in same(many)[2][0]
    long_key = record(span("\u00e9" * 80, [kv("\U0001f600" * 100, "z" * 300)]))
    same(long_key, Limits(max_attribute_chars=299))
    nested = record(span(attrs=[kv("k", {"a": [1.5, float("nan"), "\u00e9" * 3, None, True]})]))
    for cap in range(0, 60):
        same(nested, Limits(max_attribute_chars=cap))
    # limits the native decoder cannot take fall back to the Python path, with the same result
    same(data, Limits(max_attribute_chars=2**70, max_attributes=2**70))
    same(data, Limits(max_attribute_chars=10.5, max_attributes=3))  # type: ignore[arg-type]


def _deep_value(levels: int, kind: str) -> bytes:
    inner = b""
    for _ in range(levels):
        if kind == "array":
            inner = ld(5, ld(1, inner))  # AnyValue{array_value{values=[inner]}}: 2 messages a level
        else:
            inner = ld(6, ld(1, ld(1, b"k") + ld(2, inner)))  # 3 messages a level
    return inner


def test_nesting_at_upb_depth_limits() -> None:
    base = base_span_bytes()
    seen = set()
    for kind, levels in (("array", range(44, 50)), ("kvlist", range(28, 34))):
        for n in levels:
            r = same(wrap_span(base + ld(9, ld(1, b"k") + ld(2, _deep_value(n, kind)))))
            seen.add(r[0] if r[0] == "ok" else r[1].rsplit(": ", 1)[1])
    assert seen == {"ok", "Exceeded upb_DecodeOptions_MaxDepth"}
    # unknown groups: their own budget, what message depth is left
    for n in range(95, 103):
        groups = tag(7, 3) * n + tag(7, 4) * n
        same(groups)
        same(ld(1, groups))
        same(ld(1, ld(2, groups)))
        same(wrap_span(base + groups))
        same(wrap_span(base + ld(9, ld(1, b"k") + ld(2, groups))))
    # a group at the deepest message level
    for n in (45, 46, 47):
        same(
            wrap_span(base + ld(9, ld(1, b"k") + ld(2, _deep_value(n, "array")[:-2] + tag(9, 3) + tag(9, 4))))
        )


def test_hostile_sizes_stay_linear() -> None:
    """Large hostile records decode (or fail) the same way, without blowing up: many attributes,
    many merged occurrences of one value, many alternating oneof members, long group chains."""
    base = base_span_bytes()
    many_attrs = wrap_span(base + ld(9, b"") * 200_000)
    assert "200000 attributes exceed" in same(many_attrs)[2][0]
    merged = ld(1, b"k") + ld(2, ld(5, ld(1, ld(1, b"x")))) * 50_000  # one array of 50,000 values
    same(wrap_span(base + ld(9, merged)), Limits(max_attribute_chars=10**7))
    flip = ld(1, b"k") + (ld(2, ld(5, ld(1, ld(1, b"x")))) + ld(2, ld(1, b"s"))) * 30_000
    same(wrap_span(base + ld(9, flip)))
    wide_groups = (tag(7, 3) * 90 + tag(7, 4) * 90) * 2_000
    same(wrap_span(base + wide_groups))
    many_spans = ld(1, ld(2, ld(2, base) * 20_000))
    assert len(same(many_spans)[1]) == 20_000


def test_concurrent_threads_agree() -> None:
    """Decoding from several threads at once gives every thread the same results."""
    import threading

    records = synthetic_records()
    expected = [outcome(decode_otlp_proto_py, r, Limits()) for r in records]
    failures: list[str] = []

    def work() -> None:
        for _ in range(20):
            for r, want in zip(records, expected, strict=True):
                if outcome(decode_otlp_proto_native, r, Limits()) != want:
                    failures.append("mismatch")

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures


# ---------------------------------------------------------------- (c) mutation fuzz


def mutate(rng: random.Random, data: bytes, pool: list[bytes]) -> bytes:
    b = bytearray(data)
    for _ in range(rng.choice((1, 1, 1, 2, 3, 8))):
        op = rng.randrange(7)
        pos = rng.randrange(len(b) + 1)
        if op == 0 and b:  # bit flip
            i = min(pos, len(b) - 1)
            b[i] ^= 1 << rng.randrange(8)
        elif op == 1:  # insert random bytes
            b[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.choice((1, 1, 2, 5))))
        elif op == 2 and b:  # delete
            del b[pos : pos + rng.choice((1, 1, 2, 7, 40))]
        elif op == 3:  # splice a slice of another record
            other = rng.choice(pool)
            i = rng.randrange(len(other))
            b[pos:pos] = other[i : i + rng.randrange(1, 60)]
        elif op == 4 and b:  # overwrite a byte with an interesting value
            b[min(pos, len(b) - 1)] = rng.choice(
                (0x00, 0x7F, 0x80, 0xFF, 0x0A, 0x12, 0x22, 0x2A, 0x4A, 0x0B, 0x0C)
            )
        elif op == 5 and b:  # duplicate a chunk
            i = rng.randrange(len(b))
            b[pos:pos] = b[i : i + rng.randrange(1, 80)]
        elif op == 6:  # truncate
            del b[pos:]
    return bytes(b)


def random_value(rng: random.Random, depth: int = 0) -> AnyValue:
    k = rng.randrange(10 if depth < 3 else 7)
    if k == 0:
        return AnyValue(
            string_value="".join(rng.choice("ab\u00e9\u4e16\U0001f600 ") for _ in range(rng.randrange(12)))
        )
    if k == 1:
        return AnyValue(
            int_value=rng.choice((0, 1, -1, 2**63 - 1, -(2**63), rng.randrange(-(10**12), 10**12)))
        )
    if k == 2:
        return AnyValue(double_value=rng.choice((0.0, -0.0, 1.5, float("nan"), float("inf"), rng.random())))
    if k == 3:
        return AnyValue(bool_value=rng.random() < 0.5)
    if k == 4:
        return AnyValue(bytes_value=bytes(rng.randrange(256) for _ in range(rng.randrange(9))))
    if k == 5:
        return AnyValue()
    if k == 6:
        return AnyValue(string_value_strindex=rng.randrange(5))
    if k in (7, 8):
        return AnyValue(
            array_value=ArrayValue(values=[random_value(rng, depth + 1) for _ in range(rng.randrange(4))])
        )
    kvs = [
        KeyValue(key=rng.choice("abc"), value=random_value(rng, depth + 1)) for _ in range(rng.randrange(4))
    ]
    return AnyValue(kvlist_value=KeyValueList(values=kvs))


def random_record(rng: random.Random) -> bytes:
    """A valid TracesData with random structure: resources, scopes, spans, attributes of every kind."""
    td = TracesData()
    for _ in range(rng.randrange(1, 4)):
        rs = td.resource_spans.add()
        for _ in range(rng.randrange(3)):
            rs.resource.attributes.add(
                key=rng.choice(("service.name", "host", "service.name")), value=random_value(rng)
            )
        for _ in range(rng.randrange(1, 3)):
            ss = rs.scope_spans.add()
            for _ in range(rng.randrange(4)):
                s = ss.spans.add(
                    trace_id=rng.choice((TID, bytes(16), TID[:15], bytes([rng.randrange(1, 256)]) * 16)),
                    span_id=rng.choice((SID, PID, bytes(8), SID[:7])),
                    parent_span_id=rng.choice((b"", PID, bytes(8), PID[:3])),
                    name=rng.choice(("n", "", "\u00e9" * 70, "x'\"\n")),
                    start_time_unix_nano=rng.choice((0, T0, 2**64 - 1)),
                    end_time_unix_nano=rng.choice((0, T0, T0 + 5, 2**64 - 1)),
                )
                for _ in range(rng.randrange(6)):
                    s.attributes.add(key=rng.choice(("k", "kk", "k\u00e9", "")), value=random_value(rng))
                for _ in range(rng.randrange(3)):
                    ev = s.events.add(name=rng.choice(("e", "")), time_unix_nano=rng.randrange(3))
                    for _ in range(rng.randrange(3)):
                        ev.attributes.add(key="a", value=random_value(rng))
                if rng.random() < 0.3:
                    s.status.code = rng.choice((0, 1, 2, 7))
    return td.SerializeToString()


def test_random_structure_fuzz() -> None:
    rng = random.Random(4)
    pool = [random_record(rng) for _ in range(50)]
    for i in range(1500):
        data = random_record(rng) if i % 2 else mutate(rng, rng.choice(pool), pool)
        limits = Limits(max_attribute_chars=rng.choice((3, 16, 1000)), max_attributes=rng.choice((2, 5, 100)))
        same(data, limits)


def test_mutation_fuzz() -> None:
    small = [
        record(span("f", EVERY_KIND[:20], status=Status(code=2, message="m"), events=[Span.Event(name="e")])),
        record(span("g", [kv("k", [1, {"a": [b"x", 2.5]}])]), span("h")),
    ]
    pool = small + synthetic_records()[:4]
    rng = random.Random(20261129)
    tight = Limits(max_attribute_chars=40, max_attributes=12)
    kinds: dict[str, int] = {}
    for i in range(6000):
        data = mutate(rng, rng.choice(pool), pool)
        r = same(data, tight if i % 4 == 0 else Limits())
        key = r[0] if r[0] == "malformed" else ("ok+errors" if r[2] else "ok")
        kinds[key] = kinds.get(key, 0) + 1
    # the fuzz reaches both accepting and rejecting paths in quantity
    assert (
        kinds.get("malformed", 0) > 1000 and kinds.get("ok", 0) > 300 and kinds.get("ok+errors", 0) > 100
    ), kinds


# ---------------------------------------------------------------- integration


def test_decoder_selection() -> None:
    code = "from ragpulse.collector.ingest import otlp; print(otlp.DECODER, '|', otlp.decoder_description())"
    env = dict(os.environ, RAGPULSE_NATIVE="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.startswith("python |") and "RAGPULSE_NATIVE=0" in out.stdout
    env.pop("RAGPULSE_NATIVE")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.startswith("native |") and ragpulse_native.__version__ in out.stdout
    assert ragpulse_native.ABI == NATIVE_ABI


def test_abi_mismatch_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    class Other:
        ABI = NATIVE_ABI + 1
        __version__ = "9"

    monkeypatch.setitem(sys.modules, "ragpulse_native", Other)
    monkeypatch.delenv("RAGPULSE_NATIVE", raising=False)
    fn, why = load_native()
    assert fn is None and "does not match" in why


@needs_active
def test_record_level_entry_point_uses_native() -> None:
    assert otlp.DECODER == "native", otlp.decoder_description()
    data = synthetic_records()[0]
    r = otlp.decode_record(data, Limits())
    assert r.spans and all(type(s).__name__ == "Span" for s in r.spans)
    with pytest.raises(MalformedRecord, match="^not an OTLP TracesData protobuf: Error parsing message"):
        otlp.decode_record(b"\xff\xff", Limits())
    with pytest.raises(MalformedRecord, match="^no spans in record$"):
        otlp.decode_record(b"\x0a\x00", Limits())
    assert otlp.decode_record(bytearray(data), Limits()).spans  # not only bytes
    assert otlp.decode_otlp_proto(memoryview(data), Limits()).spans  # type: ignore[arg-type]
    ref = otlp.decode_otlp_proto_py(data, Limits()).spans
    got = otlp.decode_otlp_proto(data, Limits()).spans
    assert [span_tuple(s) for s in got] == [span_tuple(s) for s in ref]
