"""Assemble RAG traces from spans that arrive in any order and in separate records.

Spans are buffered per trace id. A trace is complete when the record that brings
its root (the span without a parent) leaves it with a RAG step (a retrieval, a
generation, a reranker or a tool call), however many steps it took: a process ends a trace's root last and exports its spans in the order they
ended, so the root's record comes with or after every other span of the trace.
A root that came first (spans from several processes) completes the trace once a
retrieval and a generation are in too. Otherwise a trace is emitted when
``timeout_s`` has passed since its first span (a trace without any RAG span is
then dropped and counted as non-RAG).
The buffer is bounded: when it holds ``max_traces`` traces the oldest is
emitted early. Spans arriving for a trace that was already emitted are
counted as late. Feedback spans (``rag.feedback``, written after the call,
often long after) are never buffered or counted as late: :meth:`Assembler.add`
sets them aside for the feedback sink (:meth:`Assembler.take_feedback`).

For at-least-once delivery the assembler remembers, per trace, the earliest
source position (Kafka partition, offset) that contributed a span, so the
consumer never commits past a record whose spans are still buffered.

Which spans count (a retrieval, a generation) is :func:`.build.span_role`;
turning a trace's spans into a :class:`RagTrace` is :func:`.build.build_trace`.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ...agent.conventions import RAG_ROOT
from ..core.feedback_spans import is_feedback_span
from ..core.model import RagTrace, Span
from .build import span_role

__all__ = ["Assembler", "Assembled"]


class _Pending:
    __slots__ = (
        "spans", "first_seen", "positions", "last", "has_root", "root_now", "has_step", "has_retrieval", "has_llm",
        "is_rag",
    )  # fmt: skip

    def __init__(self, now: float) -> None:
        self.spans: list[Span] = []
        self.first_seen = now
        self.positions: dict[Any, int] = {}
        self.last: tuple[Any, int] | None = None
        self.has_root = False
        self.root_now = False  # the root came in the record being added
        self.has_step = False  # a retrieval, generation, reranker or tool call
        self.has_retrieval = False
        self.has_llm = False
        self.is_rag = False


@dataclass(slots=True, eq=False)
class Assembled:
    """A trace leaving the assembler: its spans, whether the completion rule fired, and its positions."""

    trace_id: str
    spans: list[Span]
    complete: bool
    is_rag: bool
    positions: dict[Any, int]
    last: tuple[Any, int] | None = None  # (partition, offset) of the last record that fed this trace
    trace: RagTrace | None = field(default=None, init=False)  # built early (Ingestor.build) to free the spans


class Assembler:
    """A bounded buffer of partial traces (see the module docstring)."""

    def __init__(self, timeout_s: float = 5.0, max_traces: int = 50_000, recent: int = 200_000) -> None:
        self.timeout_s = timeout_s
        self.max_traces = max_traces
        self._pending: OrderedDict[str, _Pending] = OrderedDict()
        self._ready: list[Assembled] = []
        self._recent: OrderedDict[str, None] = OrderedDict()
        self._recent_max = recent
        self.late_spans = 0
        self.evicted = 0
        self.feedback: list[Span] = []

    def __len__(self) -> int:
        return len(self._pending)

    def add(self, spans: list[Span], position: tuple[Any, int] | None, now: float) -> None:
        """Buffer ``spans`` that came from one record at ``position`` ((partition, offset) or None)."""
        if spans and self._add_whole(spans, position):
            return
        pending = self._pending
        touched: dict[str, _Pending] = {}
        for span in spans:
            if is_feedback_span(span):
                self.feedback.append(span)
                continue
            tid = span.trace_id
            p = pending.get(tid)
            if p is None:
                if tid in self._recent:
                    self.late_spans += 1
                    continue
                p = _Pending(now)
                pending[tid] = p
            p.spans.append(span)
            if not span.parent_id:
                p.has_root = p.root_now = True
            role = span_role(span)
            if role == "retriever":
                p.has_retrieval = p.has_step = p.is_rag = True
            elif role == "llm":
                p.has_llm = p.has_step = p.is_rag = True
            elif role == "reranker" or role == "tool":
                p.has_step = p.is_rag = True
            elif span.attrs.get(RAG_ROOT):
                p.is_rag = True
            touched[tid] = p
        for tid, p in touched.items():
            if position is not None:
                part, off = position
                old = p.positions.get(part)
                if old is None or off < old:
                    p.positions[part] = off
                if p.last is None or off > p.last[1]:
                    p.last = position
            if (p.root_now and p.has_step) or (p.has_root and p.has_retrieval and p.has_llm):
                self._emit(tid, complete=True)
            else:
                p.root_now = False
        while len(pending) > self.max_traces:
            tid = next(iter(pending))
            self.evicted += 1
            self._emit(tid, complete=False)

    def _add_whole(self, spans: list[Span], position: tuple[Any, int] | None) -> bool:
        """The common record, a whole trace: every span of one trace not seen before, the root
        among them and a RAG step (a process exports a trace's spans together, its root last).
        Emitted as complete at once, as :meth:`add` would after buffering it; False, having
        done nothing, for any other record (feedback spans included)."""
        tid = spans[0].trace_id
        if tid in self._pending or tid in self._recent:
            return False
        root = step = False
        for span in spans:
            if span.trace_id != tid or is_feedback_span(span):
                return False
            if not span.parent_id:
                root = True
            role = span.role
            if role is None:
                role = span_role(span)
            if role == "retriever" or role == "llm" or role == "reranker" or role == "tool":
                step = True
        if not (root and step):  # (a retrieval and a generation are steps too)
            return False
        positions: dict[Any, int] = {} if position is None else {position[0]: position[1]}
        # A trace with a RAG step is a RAG trace.
        self._ready.append(Assembled(tid, list(spans), True, True, positions, position))
        self._remember(tid)
        return True

    def take_feedback(self) -> list[Span]:
        """The feedback spans set aside since the last call (for the feedback sink)."""
        out, self.feedback = self.feedback, []
        return out

    def _emit(self, tid: str, complete: bool) -> None:
        p = self._pending.pop(tid)
        self._ready.append(Assembled(tid, p.spans, complete, p.is_rag, p.positions, p.last))
        self._remember(tid)

    def _remember(self, tid: str) -> None:
        """Mark an emitted trace, so spans arriving for it later are counted as late."""
        recent = self._recent
        recent[tid] = None
        if len(recent) > self._recent_max:
            recent.popitem(last=False)

    def pop_ready(self, now: float) -> list[Assembled]:
        """Complete traces plus those whose timeout expired, in emission order."""
        deadline = now - self.timeout_s
        pending = self._pending
        while pending:
            tid, p = next(iter(pending.items()))
            if p.first_seen > deadline:
                break
            self._emit(tid, complete=False)
        out, self._ready = self._ready, []
        return out

    def drain(self) -> list[Assembled]:
        """Emit everything buffered (used by an explicit flush and at shutdown in embedded mode)."""
        for tid in list(self._pending):
            self._emit(tid, complete=False)
        out, self._ready = self._ready, []
        return out

    def min_positions(self) -> dict[Any, int]:
        """Per partition, the smallest offset that still has buffered (unemitted) spans."""
        low: dict[Any, int] = {}
        for p in self._pending.values():
            for part, off in p.positions.items():
                cur = low.get(part)
                if cur is None or off < cur:
                    low[part] = off
        for a in self._ready:
            for part, off in a.positions.items():
                cur = low.get(part)
                if cur is None or off < cur:
                    low[part] = off
        return low

    def drop_partitions(self, partitions: set[Any]) -> int:
        """Forget buffered traces fed by revoked partitions (their new owner re-reads them)."""
        drop = [tid for tid, p in self._pending.items() if partitions & p.positions.keys()]
        for tid in drop:
            del self._pending[tid]
        return len(drop)

    def forget(self, trace_ids: Iterable[str]) -> None:
        """Stop treating these emitted traces as done, so their spans are assembled again
        when re-read (the caller discarded them unstored, e.g. on partition revocation)."""
        recent = self._recent
        for tid in trace_ids:
            recent.pop(tid, None)
