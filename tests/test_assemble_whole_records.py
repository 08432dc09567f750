"""A record that is a whole trace is emitted at once, exactly as buffering it would emit it.

``Assembler.add`` takes a shortcut for the common record (every span of one new trace, its
root and a RAG step among them). The buffered path stays the reading: an assembler with the
shortcut switched off is fed the same random streams (whole traces in any span order, traces
split over records, records holding several traces, replayed records, feedback spans, traces
without a root or without a RAG step, a small buffer that evicts) and everything either one
shows (what it emits and in which order, spans by identity, completeness, RAG-ness, positions,
late and evicted counts, feedback, what it still holds) must be equal after every step.
"""

from __future__ import annotations

import random
from typing import Any

from ragpulse.agent import conventions as sc
from ragpulse.collector.core.model import Span
from ragpulse.collector.ingest.assemble import Assembled, Assembler


class _Buffered(Assembler):
    """The reading: every record through the buffer."""

    def _add_whole(self, spans: list[Span], position: tuple[Any, int] | None) -> bool:
        return False


_ROLES: dict[str, dict[str, Any]] = {
    "retriever": {sc.SPAN_KIND: sc.KIND_RETRIEVER},
    "llm": {sc.SPAN_KIND: sc.KIND_LLM},
    "reranker": {sc.SPAN_KIND: sc.KIND_RERANKER},
    "tool": {sc.SPAN_KIND: sc.KIND_TOOL},
    "chain": {sc.SPAN_KIND: sc.KIND_CHAIN},
    "plain": {"http.route": "/x"},
}


def _trace(rng: random.Random, k: int) -> list[Span]:
    tid = f"{k:032x}"
    root_attrs: dict[str, Any] = {sc.SPAN_KIND: sc.KIND_CHAIN}
    if rng.random() < 0.7:
        root_attrs[sc.RAG_ROOT] = True
    spans = []
    if rng.random() < 0.9:
        spans.append(Span(tid, f"{k:08x}00000001", "", "root", 1, 9, 0, "svc", root_attrs, []))
    for j in range(rng.randrange(0, 5)):
        role = rng.choice(list(_ROLES))
        attrs = dict(_ROLES[role])
        if role == "plain" and rng.random() < 0.3:
            attrs[sc.RAG_ROOT] = True
        spans.append(Span(tid, f"{k:08x}{j + 2:08x}", f"{k:08x}00000001", role, 2, 8, 0, "svc", attrs, []))
    if rng.random() < 0.1:
        fb = {sc.FEEDBACK_KIND: "thumbs"} if rng.random() < 0.5 else {}
        name = sc.FEEDBACK_SPAN if not fb else "other"
        spans.append(Span(tid, f"{k:08x}000000ff", f"{k:08x}00000001", name, 3, 4, 0, "svc", fb, []))
    if len(spans) > 1 and rng.random() < 0.3:
        rng.shuffle(spans)
    return spans


def _records(rng: random.Random, n: int) -> list[list[Span]]:
    """Records of random traces: whole, split in two, two traces together, some replayed."""
    records: list[list[Span]] = []
    k = 0
    while len(records) < n:
        k += 1
        spans = _trace(rng, k)
        r = rng.random()
        if r < 0.6 or len(spans) < 2:
            records.append(spans)
        elif r < 0.8:
            cut = rng.randrange(1, len(spans))
            records += [spans[:cut], spans[cut:]]
        else:
            k += 1
            records.append(spans + _trace(rng, k))
        if records and rng.random() < 0.05:
            records.append(list(rng.choice(records)))  # a replayed record: late spans
    return records


def _shown(a: Assembled) -> tuple:
    return (a.trace_id, [id(s) for s in a.spans], a.complete, a.is_rag, dict(a.positions), a.last)


def _state(asm: Assembler) -> tuple:
    return (len(asm), asm.late_spans, asm.evicted, [id(s) for s in asm.feedback], asm.min_positions())


def test_whole_records_are_emitted_as_the_buffer_emits_them() -> None:
    for seed in range(40):
        rng = random.Random(seed)
        max_traces = rng.choice([2, 5, 1000])
        fast, slow = Assembler(1.0, max_traces), _Buffered(1.0, max_traces)
        now = 0.0
        emitted = 0
        for offset, record in enumerate(_records(rng, 120)):
            position = None if rng.random() < 0.1 else (rng.randrange(2), offset)
            fast.add(record, position, now)
            slow.add(record, position, now)
            assert _state(fast) == _state(slow), (seed, offset)
            if rng.random() < 0.3:
                now += rng.choice([0.1, 0.6, 2.0])
                got, want = fast.pop_ready(now), slow.pop_ready(now)
                assert [_shown(a) for a in got] == [_shown(a) for a in want], (seed, offset)
                emitted += len(got)
            assert fast.take_feedback() == slow.take_feedback()
        assert [_shown(a) for a in fast.drain()] == [_shown(a) for a in slow.drain()]
        assert emitted > 0


def test_a_whole_trace_takes_the_shortcut() -> None:
    rng = random.Random(1)
    spans = [
        Span("a" * 32, "0" * 15 + "2", "0" * 15 + "1", "r", 2, 3, 0, "svc", dict(_ROLES["retriever"]), []),
        Span("a" * 32, "0" * 15 + "1", "", "root", 1, 9, 0, "svc", {sc.RAG_ROOT: True}, []),
    ]
    rng.shuffle(spans)
    asm = Assembler()
    asm.add(spans, (0, 7), 0.0)
    assert len(asm) == 0  # never buffered
    (a,) = asm.pop_ready(0.0)
    assert (a.complete, a.is_rag, a.positions, a.last, a.spans) == (True, True, {0: 7}, (0, 7), spans)
    asm.add([spans[0]], (0, 8), 0.0)
    assert asm.late_spans == 1
