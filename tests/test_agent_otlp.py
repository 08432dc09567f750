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
