"""OTLP record encoding: one trace per record, records always under the size limit."""

from __future__ import annotations

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from ragpulse.agent import configure, flush, retrieval, shutdown, trace_rag
from ragpulse.agent.otlp import encode_records


def make_spans(n_calls: int, chunk_chars: int, n_chunks: int = 10):
    exporter = InMemorySpanExporter()
    configure(exporter=exporter, max_chunk_chars=200_000, max_chunks=500, max_attribute_chars=10**6)
    try:

        @retrieval(name="search")
        def search(query):
            return [{"id": f"C{i}", "content": f"{i}" * chunk_chars} for i in range(n_chunks)]

        @trace_rag(name="answer")
        def rag(query):
            search(query)
            return "A [1]."

        for i in range(n_calls):
            rag(f"q{i}")
        flush()
        return list(exporter.get_finished_spans())
    finally:
        shutdown()


def decode(value: bytes) -> TracesData:
    data = TracesData()
    data.ParseFromString(value)
    return data


def test_one_record_per_trace_keyed_by_trace_id_and_identical_to_export_request():
    spans = make_spans(5, 100)
    records = encode_records(spans, 900_000)
    assert len(records) == 5
    for rec in records:
        data = decode(rec.value)
        ids = {s.trace_id.hex() for rs in data.resource_spans for ss in rs.scope_spans for s in ss.spans}
        assert ids == {rec.key}
        assert rec.span_count == 2
        # TracesData and ExportTraceServiceRequest share the wire format.
        req = ExportTraceServiceRequest()
        req.ParseFromString(rec.value)
        assert req.SerializeToString() == rec.value


def test_big_traces_are_split_and_huge_spans_shrunk_under_the_limit():
    # 3 calls; each retrieval span carries 20 chunks x 60 kB = 1.2 MB of content.
    spans = make_spans(3, 60_000, n_chunks=20)
    dropped = []
    records = encode_records(spans, 900_000, dropped)
    assert dropped == []
    assert all(len(r.value) <= 900_000 for r in records)
    seen = {}
    for rec in records:
        for rs in decode(rec.value).resource_spans:
            for ss in rs.scope_spans:
                for s in ss.spans:
                    assert s.trace_id.hex() == rec.key
                    seen[s.span_id] = {kv.key: kv.value for kv in s.attributes}
    assert len(seen) == 6  # nothing lost
    shrunk = [a for a in seen.values() if "rag.truncated" in a]
    assert len(shrunk) == 3
    assert all(
        "record_size" in [v.string_value for v in a["rag.truncated.fields"].array_value.values]
        for a in shrunk
    )


def varied_spans():
    """Spans of every shape the OTLP encoder must handle."""
    from opentelemetry import trace as trace_api
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import Event, ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags, TraceState

    exporter = InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource({"service.name": "svc", "n": 3, "f": 0.5, "b": True}, "https://s/1")
    )
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer(
        "scope-a", "1.2.3", schema_url="https://schema/a", attributes={"scope.attr": "x"}
    )
    other = provider.get_tracer("scope-b")
    remote = SpanContext(
        0xABC, 0xDEF, is_remote=True, trace_flags=TraceFlags(1), trace_state=TraceState([("k", "v")])
    )
    with tracer.start_as_current_span(
        "root",
        context=trace_api.set_span_in_context(trace_api.NonRecordingSpan(remote)),
        kind=SpanKind.SERVER,
        links=[Link(remote, {"link.attr": 1}), Link(SpanContext(1, 2, False), None)],
    ) as root:
        root.set_attributes(
            {
                "s": "ünïcode ✓",
                "empty": "",
                "t": True,
                "f": False,
                "zero": 0,
                "neg": -5,
                "big": 2**62,
                "min": -(2**63),
                "dbl": -1.5,
                "dzero": 0.0,
                "strs": ("a", "", "c"),
                "ints": [1, -2, 3],
                "bools": [True, False],
                "floats": (0.25,),
                "long": "x" * 300,
            }
        )
        root.add_event("ev", {"a": "b", "n": 7})
        root.add_event("bare")
        with other.start_as_current_span("child", kind=SpanKind.CLIENT) as child:
            child.set_status(Status(StatusCode.ERROR, "it broke"))
            child.record_exception(ValueError("bad value"))
        with tracer.start_as_current_span("") as nameless:
            nameless.set_status(Status(StatusCode.OK))
    for kind in (SpanKind.PRODUCER, SpanKind.CONSUMER, SpanKind.INTERNAL):
        with tracer.start_as_current_span(f"k{kind.value}", kind=kind):
            pass
    spans = list(exporter.get_finished_spans())
    # A hand-built span as the materializer makes them (plain dicts, a mapping value, no scope).
    base = spans[0]
    spans.append(
        ReadableSpan(
            name="hand",
            context=base.context,
            parent=None,
            resource=Resource({"service.name": "other"}),
            attributes={"m": {"x": 1, "y": ["z"]}, "none": None, "by": b"\x00\x01"},
            events=[Event("e", {"k": "v"}, timestamp=123)],
            start_time=1,
            end_time=2,
        )
    )
    return spans


def test_fast_encoder_matches_the_reference_encoder():
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from ragpulse.agent.otlp_wire import encode_traces_data_fast

    spans = varied_spans()
    reference = encode_spans(spans).SerializeToString()
    fast = encode_traces_data_fast(spans)
    assert decode(fast) == decode(reference)
    assert fast == reference  # same field order and presence rules: byte for byte
    for span in spans:  # and span by span
        assert encode_traces_data_fast([span]) == encode_spans([span]).SerializeToString()


def test_fast_encoder_on_real_rag_spans_and_fallback():
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import ReadableSpan
    from ragpulse.agent.otlp import encode_traces_data

    spans = make_spans(3, 500)
    assert encode_traces_data(spans) == encode_spans(spans).SerializeToString()
    # An int outside int64 is not encodable by the fast path: the reference encoder takes over
    # (it logs and skips that attribute) instead of writing a wrong value.
    odd = ReadableSpan(name="odd", context=spans[0].context, attributes={"huge": 2**70, "ok": 1})
    assert encode_traces_data([odd]) == encode_spans([odd]).SerializeToString()


def _span(attributes, resource=None, events=(), name="s"):
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.trace import SpanContext

    return ReadableSpan(
        name=name,
        context=SpanContext(0x1234, 0x99, False),
        resource=resource if resource is not None else Resource({"service.name": "svc"}),
        attributes=attributes,
        events=events,
        start_time=5,
        end_time=9,
    )


def test_cached_attribute_fields_never_mix_equal_values_of_other_types():
    """1, True and 1.0 are equal (and hash alike) in Python, 0.0 and -0.0 too: each must still
    be written as its own type, whichever was encoded (and cached) first."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from ragpulse.agent.otlp_wire import encode_traces_data_fast

    class Text(str):
        pass

    values = [1, True, 1.0, 0, False, 0.0, -0.0, "1", Text("1"), "", 2**63 - 1, -1, 1.5, float("nan")]
    for order in (values, values[::-1]):
        for value in order:
            span = _span({"k": value, "other": value})
            assert encode_traces_data_fast([span]) == encode_spans([span]).SerializeToString(), value


def test_a_full_field_cache_is_emptied_and_refilled(monkeypatch):
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from ragpulse.agent import otlp_wire

    monkeypatch.setattr(otlp_wire, "_KV_CACHE_MAX", 4)
    for i in range(20):
        span = _span({f"k{i % 7}": f"v{i}", "n": i, "f": i + 0.5})
        assert otlp_wire.encode_traces_data_fast([span]) == encode_spans([span]).SerializeToString()
    assert 0 < len(otlp_wire._FIELD_CACHES[b"\x4a"]) <= 4  # the span attributes' cache


def test_lengths_past_the_varint_table_and_equal_resources_grouped_as_the_reference_does():
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import Event
    from ragpulse.agent.otlp_wire import encode_traces_data_fast

    # Two distinct but equal resources share one ResourceSpans in the reference encoder.
    first, second = Resource({"service.name": "a"}), Resource({"service.name": "a"})
    spans = [
        _span({"long": "x" * 5000, "longer": "é" * 20_000}, first, name="one"),
        _span({"k": "v"}, Resource({"service.name": "b"}), name="two"),
        _span({"k": "v"}, second, [Event("e", {"text": "y" * 3000}, 7)], name="three"),
    ]
    reference = encode_spans(spans).SerializeToString()
    assert encode_traces_data_fast(spans) == reference
    assert len(decode(reference).resource_spans) == 2


def test_a_span_the_direct_writer_refuses_is_encoded_by_the_reference_within_its_record():
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    good = _span({"ok": 1}, name="good")
    odd = _span({"huge": 2**70, "ok": 1}, good.resource, name="odd")
    records = encode_records([good, odd], 900_000)
    assert len(records) == 1 and records[0].span_count == 2
    assert records[0].value == encode_spans([good, odd]).SerializeToString()


def test_finished_spans_are_encoded_with_their_final_attributes_and_events():
    """The export thread encodes (span, attributes, events) as each span is materialised, without
    copying the span: the records are those of the copies, split and shrunk the same way."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import Event
    from ragpulse.agent.materialize import copy_span
    from ragpulse.agent.otlp import encoded, records_of

    ended = _span({"set.on.span": "before"}, name="ended")
    items = [
        (ended, {"input.value": "q", "n": 3}, [Event("rag.citation", {"rag.citation.document.id": "C1"}, 8)]),
        (_span({}, ended.resource, name="big"), {"content": "z" * 50_000}, []),
    ]
    copies = [copy_span(*item) for item in items]
    limit = 20_000
    spans = [encoded(item, limit // 2) for item in items]
    assert [s.source is not None for s in spans] == [False, True]  # kept only where it may not fit
    assert [r.value for r in records_of(spans, 900_000)] == [encode_spans(copies).SerializeToString()]
    dropped = []
    small = records_of(spans, limit, dropped)
    assert dropped == [] and [r.span_count for r in small] == [1, 1]
    assert small[0].value == encode_spans(copies[:1]).SerializeToString()
    shrunk = decode(small[1].value).resource_spans[0].scope_spans[0].spans[0]
    attrs = {kv.key: kv.value for kv in shrunk.attributes}
    assert len(attrs["content"].string_value) < limit and attrs["rag.truncated"].bool_value
    # Without its source a span that cannot fit is dropped, never sent over the limit.
    spans[1].source = None
    assert [r.span_count for r in records_of(spans, limit, dropped)] == [1] and dropped == [spans[1]]


def test_the_kafka_exporter_keeps_the_source_of_spans_over_half_its_record_limit():
    from ragpulse.agent.kafka_exporter import KafkaSpanExporter

    exporter = KafkaSpanExporter("unused:9092", max_record_bytes=20_000)
    small = exporter.encode_finished(_span({}), {"k": "v"}, [])
    big = exporter.encode_finished(_span({}), {"content": "z" * 12_000}, [])
    assert small.source is None and big.source is not None
