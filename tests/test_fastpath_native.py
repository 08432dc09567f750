"""The native fast path (native/src/fast.rs) against the general path.

``otlp.decode_complete_traces`` either declines a record (None) or returns
exactly what the general path makes of it: decode, assemble (every trace
complete at once), :func:`build_trace` and ``storage._row_head``. Every record
here goes through both; when the fast path takes it, the traces must agree on
every slot (floats by bit pattern, dict order included) and the encoded row
heads must be byte-identical. Inputs: the synthetic generator's records,
OpenInference and gen_ai shaped traces, records the fast path must decline,
a seeded fuzz that injects attribute values of every kind under the keys
``build_trace`` reads, and the decoder's structural fuzz. orjson's float and
string formatting, which the row heads reproduce, is checked on its own.
"""

from __future__ import annotations

import random
import struct
from typing import Any

import orjson
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status, TracesData
from ragpulse.collector.demo.synthetic import make_trace, traces_data
from ragpulse.collector.ingest import otlp
from ragpulse.collector.ingest.assemble import Assembler, build_trace
from ragpulse.collector.ingest.model import RagTrace
from ragpulse.collector.ingest.otlp import Limits, MalformedRecord, decode_record
from ragpulse.collector.storage import clickhouse as storage

from tests.native_module import require_native
from tests.test_otlp_native import canon, kv, mutate, random_record, random_value, synthetic_records

ragpulse_native = require_native("general path only", disabled="RAGPULSE_NATIVE=0 turns the fast path off")


# ---------------------------------------------------------------- comparison


def trace_tuple(t: RagTrace) -> Any:
    """Every field but row_head (chunks and citations by their slots), exact types and bits.
    The chunk count and top score are read first: the fast path defers the chunk objects
    and answers those two without making them."""
    out = [("chunk_count", canon(t.chunk_count)), ("top_score", canon(t.top_score))]
    for slot in RagTrace.__slots__:
        if slot in ("row_head", "_deferred"):
            continue
        name = slot.lstrip("_")  # _chunks, _citations: through their properties
        v = getattr(t, name)
        if name in ("chunks", "citations"):
            v = [[getattr(x, s) for s in type(x).__slots__] for x in v]
        out.append((name, canon(v)))
    return out


def check(data: bytes, limits: Limits | None = None) -> bool:
    """Assert the fast path agrees with the general path; True when it took the record."""
    limits = limits or Limits()
    fast = otlp.decode_complete_traces(data, limits)
    if fast is None:
        return False
    try:
        result = decode_record(data, limits)
    except MalformedRecord as exc:  # pragma: no cover - a failure message
        raise AssertionError(f"fast path took a record the decoder rejects: {exc}") from None
    assert not result.errors, result.errors
    asm = Assembler()
    asm.add(result.spans, (0, 7), now=0.0)
    ready = asm.pop_ready(0.0)
    assert len(asm) == 0, "fast path took a record with an incomplete trace"
    assert [a.trace_id for a in ready] == [t.trace_id for t in fast]
    for a, t in zip(ready, fast, strict=True):
        assert a.complete and a.is_rag
        slow = build_trace(a.trace_id, a.spans)
        assert trace_tuple(t) == trace_tuple(slow)
        assert t.row_head == storage._row_head(slow), (t.row_head, storage._row_head(slow))
    return True


# ---------------------------------------------------------------- orjson's formatting


def test_float_text_matches_orjson() -> None:
    rng = random.Random(7)
    values = [
        0.0,
        -0.0,
        1.0,
        340.0,
        1e16,
        1e15,
        1e-5,
        1e-6,
        1e-7,
        2.5e-5,
        0.1,
        5e-324,
        1.7976931348623157e308,
    ]
    for _ in range(60_000):
        values.append(struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0])
        values.append(rng.random() * 10 ** rng.randint(-25, 25))
        values.append(float(rng.randint(-(10**17), 10**17)))
    for v in values + [float("nan"), float("inf"), float("-inf")]:
        assert ragpulse_native.json_float(v) == orjson.dumps(v).decode(), repr(v)


def test_string_text_matches_orjson() -> None:
    rng = random.Random(8)
    alphabet = [chr(c) for c in range(0x20)] + list('ab "\\/\x7f\u00e9\u2028\u4e16\U0001f600')
    cases = ["", "plain", "x" * 64]
    for _ in range(20_000):
        cases.append("".join(rng.choice(alphabet) for _ in range(rng.randrange(40))))
        # one escapable character at every offset around the 8-byte scan
        n = rng.randrange(1, 40)
        i = rng.randrange(n)
        cases.append("a" * i + rng.choice('"\\\n\x00\x1f') + "b" * (n - i))
    for s in cases:
        assert ragpulse_native.json_string(s) == orjson.dumps(s).decode(), repr(s)


# ---------------------------------------------------------------- records it takes


def test_synthetic_records_take_the_fast_path() -> None:
    records = synthetic_records()
    for i in range(40):
        t = make_trace(1000 + i, n_chunks=1 + i % 6, rerank=i % 2 == 0, error=i % 5 == 0, refusal=i % 6 == 1,
                       rng=random.Random(i))  # fmt: skip
        records.append(traces_data([(t.service, t.spans)]))
    for data in records:
        assert check(data), "a synthetic record left the fast path"


def _span(tid: bytes, sid: bytes, parent: bytes, start: int, end: int, attrs: list[KeyValue]) -> Span:
    s = Span(trace_id=tid, span_id=sid, parent_span_id=parent, name="s",
             start_time_unix_nano=start, end_time_unix_nano=end)  # fmt: skip
    s.attributes.extend(attrs)
    return s


def _retrieval_span(attrs: list[KeyValue]) -> Span:
    """The second span of the test traces: a child of the root, 10-50 ns after it starts."""
    return _span(TID, IDS[1], IDS[0], T0 + 10, T0 + 50, attrs)


def _record(spans: list[Span], service: str = "svc") -> bytes:
    return traces_data([(service, spans)])


T0 = 1_700_000_000_000_000_000
TID = bytes(range(1, 17))
IDS = [bytes([k]) * 8 for k in range(1, 12)]


def openinference_trace(messages: bool = False) -> list[Span]:
    llm_attrs = [kv("openinference.span.kind", "LLM"), kv("llm.model_name", "m"), kv("llm.provider", "p"),
                 kv("llm.token_count.prompt", 12), kv("llm.token_count.completion", 3.9),
                 kv("llm.output_messages.0.message.content", "answer text")]  # fmt: skip
    if messages:
        llm_attrs += [kv("llm.input_messages.0.message.role", "user"),
                      kv("llm.input_messages.0.message.content", "what?")]  # fmt: skip
    return [
        _span(
            TID, IDS[0], b"", T0, T0 + 900, [kv("openinference.span.kind", "CHAIN"), kv("http.route", "/q")]
        ),
        _retrieval_span(
            [
                kv("openinference.span.kind", "retriever"),
                kv("input.value", "the question"),
                kv("retrieval.documents.0.document.id", 17),
                kv("retrieval.documents.0.document.content", "c0"),
                kv("retrieval.documents.0.document.score", 3),
                kv("retrieval.documents.1.document.content", "c1"),
                kv("retrieval.documents.1.document.metadata", True),
            ],
        ),  # fmt: skip
        _span(TID, IDS[2], IDS[0], T0 + 60, T0 + 800, llm_attrs),
    ]


def gen_ai_trace() -> list[Span]:
    return [
        _span(TID, IDS[0], bytes(8), T0, T0 + 900, [kv("http.route", "/ask"), kv("user.id", 5)]),
        _retrieval_span(
            [kv("gen_ai.operation.name", "search"), kv("retrieval.documents.0.document.id", "d")]
        ),
        _span(
            TID,
            IDS[2],
            IDS[0],
            T0 + 60,
            T0 + 800,
            [
                kv("gen_ai.system", "openai"),
                kv("gen_ai.usage.input_tokens", 2**40),
                kv("gen_ai.completion.0.content", "ok"),
            ],
        ),  # fmt: skip
        _span(
            TID,
            IDS[3],
            IDS[0],
            T0 + 60,
            T0 + 800,
            [kv("gen_ai.operation.name", "chat"), kv("gen_ai.usage.input_tokens", -5)],
        ),  # fmt: skip
    ]


def test_openinference_and_gen_ai_traces() -> None:
    assert check(_record(openinference_trace()))
    assert check(_record(gen_ai_trace()))
    # The query would come from chat messages: left to build_trace.
    assert otlp.decode_complete_traces(_record(openinference_trace(messages=True)), Limits()) is None


def test_records_it_declines() -> None:
    good = openinference_trace()
    assert check(_record(good))
    declined = [
        _record(good[:2]),  # no LLM span: the trace is not complete
        _record(good[1:]),  # no root
        _record([*good, _span(bytes(range(2, 18)), IDS[5], IDS[6], T0, T0 + 1, [])]),  # one trace incomplete
        _record([*good, _span(TID, IDS[5], IDS[0], T0 + 5, T0, [])]),  # a span the decoder rejects
        _record([*good[:2], _span(TID, IDS[2], IDS[0], T0, T0 + 1, [kv("openinference.span.kind", "LLM"),
                                                                    kv("gen_ai.usage.input_tokens", "12")])]),
        orjson.dumps({"resourceSpans": []}),
        b"\xff\xff\xff",
    ]  # fmt: skip
    for data in declined:
        assert otlp.decode_complete_traces(data, Limits()) is None
    data = _record(good)
    assert otlp.decode_complete_traces(data, Limits(max_record_bytes=len(data) - 1)) is None
    assert otlp.decode_complete_traces(data, Limits(max_attributes=3)) is None
    assert otlp.decode_complete_traces(data, Limits(max_attribute_chars=1)) is None
    assert otlp.decode_complete_traces(data, Limits(max_attributes=7.0)) is None  # type: ignore[arg-type]


# ---------------------------------------------------------------- fuzz


KEYS = (
    "rag.root", "openinference.span.kind", "gen_ai.operation.name", "gen_ai.system", "gen_ai.request.model",
    "llm.model_name", "input.value", "output.value", "llm.output_messages.0.message.content",
    "gen_ai.completion.0.content", "gen_ai.response.model", "gen_ai.provider.name", "llm.provider",
    "gen_ai.usage.input_tokens", "llm.token_count.prompt", "gen_ai.usage.output_tokens",
    "llm.token_count.completion", "rag.corpus.version", "rag.risk_level", "rag.query_type", "session.id",
    "user.id", "http.route", "rag.feedback", "retrieval.documents.0.document.id",
    "retrieval.documents.0.document.content", "retrieval.documents.0.document.score",
    "retrieval.documents.0.document.metadata", "retrieval.documents.1.document.score",
    "retrieval.documents.2.document.id", "retrieval.documents.9.document.content",
    "reranker.output_documents.0.document.content", "reranker.output_documents.0.document.score",
    "reranker.output_documents.1.document.id", "reranker.output_documents.0.document.metadata",
    "llm.input_messages.0.message.content", "gen_ai.prompt.0.role",
    # not document keys, though close: f"{i}" never has a sign or a leading zero
    "retrieval.documents.01.document.id", "retrieval.documents.00.document.content",
    "retrieval.documents.+1.document.content", "retrieval.documents.1.document.id.x",
    "retrieval.documents.1.document.content.document.id", "retrieval.documents.999999999.document.id",
    "retrieval.documents.1.x.document.id", "retrieval.documents.1..document.id",
    "retrieval.documents..document.content", "retrieval.documents.2.document.", "retrieval.documents.2document.id",
    "retrieval.documents.2.documentid", "retrieval.documents.0.document.document.id",
)  # fmt: skip
CITATION_KEYS = ("rag.citation.document.id", "rag.citation.marker", "rag.citation.answer.start",
                 "rag.citation.answer.end")  # fmt: skip
SPECIAL = ("RETRIEVER", "retriever", "Llm", "CHAIN", "agent", "RERANKER", "retrieval", "search", "chat",
           "rerank", "completion", "", "0", "12", " 7 ", "1_0", "\u0130", "\u017f", "x\x00\"\\", 0, 1, -1,
           2**63 - 1, -(2**63), 0.0, -0.0, 2.5, -3.7, 1e300, float("nan"), float("inf"), True, False,
           b"reranker", b"", [], ["a", 1], {}, {"k": "v"})  # fmt: skip


def special_value(rng: random.Random) -> AnyValue:
    from tests.test_otlp_native import av

    if rng.random() < 0.5:
        return random_value(rng)
    return av(rng.choice(SPECIAL))


def mutated_trace(rng: random.Random) -> bytes:
    base = make_trace(rng.randrange(10**6), n_chunks=1 + rng.randrange(4), rerank=rng.random() < 0.4,
                      refusal=rng.random() < 0.2, rng=random.Random(rng.random()))  # fmt: skip
    spans = [Span.FromString(s.SerializeToString()) for s in base.spans]
    if rng.random() < 0.3:  # other instrumentations: no rag.root, maybe no kinds
        for s in spans:
            keep = [
                a for a in s.attributes if a.key != "rag.root" and (rng.random() < 0.6 or "kind" not in a.key)
            ]
            del s.attributes[:]
            s.attributes.extend(keep)
    for _ in range(rng.choice((1, 1, 2, 3, 6))):
        s = rng.choice(spans)
        op = rng.randrange(10)
        if op < 6:
            s.attributes.add(key=rng.choice(KEYS), value=special_value(rng))
        elif op == 6 and s.attributes:  # change an existing value's type
            s.attributes[rng.randrange(len(s.attributes))].value.CopyFrom(special_value(rng))
        elif op == 7:
            ev = s.events.add(name=rng.choice(("rag.citation", "other")), time_unix_nano=T0)
            for _ in range(rng.randrange(4)):
                ev.attributes.add(key=rng.choice(CITATION_KEYS), value=special_value(rng))
        elif op == 8:  # times that tie or reorder spans
            t = rng.choice(
                (s.start_time_unix_nano, spans[0].start_time_unix_nano, spans[0].end_time_unix_nano)
            )
            s.start_time_unix_nano = min(t, s.end_time_unix_nano)
            s.end_time_unix_nano = max(s.end_time_unix_nano, rng.choice((t, spans[-1].end_time_unix_nano)))
        else:  # an extra span of some role, or a status
            if rng.random() < 0.5:
                s.status.CopyFrom(Status(code=rng.choice((0, 1, 2))))
            else:
                extra = Span.FromString(rng.choice(spans).SerializeToString())
                extra.span_id = bytes([rng.randrange(1, 256)]) * 8
                extra.parent_span_id = rng.choice((b"", bytes(8), spans[-1].span_id))
                spans.insert(rng.randrange(len(spans) + 1), extra)
    rng.shuffle(spans)
    return traces_data([(base.service, spans)])


def test_attribute_fuzz() -> None:
    rng = random.Random(20261129)
    taken = declined = 0
    tight = Limits(max_attribute_chars=60, max_attributes=14)
    for i in range(2500):
        if check(mutated_trace(rng), tight if i % 10 == 0 else None):
            taken += 1
        else:
            declined += 1
    # the fuzz exercises both the fast path and its refusals in quantity
    print("attribute fuzz", taken, declined)
    assert taken > 800 and declined > 300, (taken, declined)


def test_multi_trace_records_fuzz() -> None:
    rng = random.Random(5)
    taken = 0
    for _ in range(300):
        groups = []
        for _ in range(rng.randrange(1, 5)):
            t = make_trace(
                rng.randrange(10**6), service=rng.choice(("a", "b")), rng=random.Random(rng.random())
            )
            spans = list(t.spans)
            if rng.random() < 0.15:
                spans = spans[1:]  # an incomplete trace: the whole record is declined
            groups.append((t.service, spans))
        taken += check(traces_data(groups, shared_resource=rng.random() < 0.5))
    assert taken > 100


def test_structure_fuzz_never_disagrees() -> None:
    rng = random.Random(11)
    pool = [random_record(rng) for _ in range(30)] + synthetic_records()[:4]
    for i in range(3000):
        data = random_record(rng) if i % 3 == 0 else mutate(rng, rng.choice(pool), pool)
        check(
            data,
            Limits(max_attribute_chars=rng.choice((3, 40, 262144)), max_attributes=rng.choice((2, 1024))),
        )


# ---------------------------------------------------------------- how the collector uses it


def test_assembler_takes_built_traces_only_when_new() -> None:
    t = make_trace(1)
    fast = otlp.decode_complete_traces(traces_data([(t.service, t.spans)]), Limits())
    assert fast is not None
    asm = Assembler()
    # a trace already buffered: its spans must join the buffered ones
    partial = decode_record(traces_data([(t.service, t.spans[:1])]), Limits()).spans
    asm.add(partial, (0, 1), now=0.0)
    assert not asm.add_built(fast, (0, 2))
    asm = Assembler()
    assert asm.add_built(fast, (1, 5))
    (a,) = asm.pop_ready(0.0)
    assert a.complete and a.is_rag and a.trace is fast[0] and a.positions == {1: 5} and a.last == (1, 5)
    assert not asm.add_built(fast, (1, 6))  # emitted already: late spans, counted by add()


def test_row_columns_are_the_table_columns() -> None:
    ddl = next(s for s in storage.schema_statements() if ".rag_traces" in s.split("(", 1)[0])
    lines = [line.strip() for line in ddl.splitlines()]
    body = lines[lines.index("(") + 1 : lines.index(")")]  # the column list, one per line
    columns = [line.split()[0] for line in body if line and not line.startswith("INDEX")]
    assert len(set(storage.ROW_COLUMNS)) == len(storage.ROW_COLUMNS)
    assert set(storage.ROW_COLUMNS) == set(columns) - {"ingested_at"}  # ingested_at defaults to now


def test_decline_on_python_objects_it_cannot_reproduce() -> None:
    # A TracesData that is not bytes (memoryview from a caller) takes the general path.
    t = make_trace(3)
    data = traces_data([(t.service, t.spans)])
    assert otlp.decode_complete_traces(memoryview(data), Limits()) is None  # type: ignore[arg-type]
    assert TracesData.FromString(data)  # sanity: the record itself is fine


def test_chunk_and_citation_objects_are_made_when_first_read() -> None:
    t = make_trace(4, n_chunks=3)
    data = traces_data([(t.service, t.spans)])
    (fast,) = otlp.decode_complete_traces(data, Limits()) or []
    slow = build_trace(t.hex, decode_record(data, Limits()).spans)
    assert fast._chunks is None and fast._citations is None  # deferred
    assert fast.chunk_count == 3 and fast.top_score == slow.top_score
    assert fast._chunks is None  # answering those made nothing
    assert fast.judge_message() == slow.judge_message()  # the judge message makes them
    assert fast._chunks is not None and fast._deferred is None
    assert trace_tuple(fast) == trace_tuple(slow)
