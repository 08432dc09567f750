"""Replay: call a RAG function on every case of an eval set and record what it returns as a run.

``--app module:function`` names a Python callable ``fn(query)`` (or
``fn(query, chunks=...)``). It may return:

- a mapping with ``answer`` and optionally ``chunks``, ``citations``,
  ``latency_ms``, ``input_tokens``, ``output_tokens``, ``cost_usd``;
- an ``(answer, chunks)`` pair;
- an object with ``answer`` / ``chunks`` attributes;
- just the answer text, when the function is instrumented with ragpulse's
  agent: the chunks, citations, tokens and latencies then come from the
  spans the call emitted, assembled the way the collector assembles them.

With ``corpus_from_snapshot`` every case's frozen chunks
(``provenance.chunks``) are passed as ``chunks=``, so the app generates from
the context the case was recorded with and retrieval drift cannot leak into a
generation comparison; the function must accept a ``chunks`` argument.

A case exported from a conversation (``provenance.conversation``: the messages
before its turn, oldest first) is replayed with them: the app is called with
that list under the first of its parameters named ``history``, ``messages``,
``chat_history`` or ``conversation`` (the names the agent reads a conversation
from; a ``**kwargs`` app gets ``history=``), so a follow-up ("and can we delete
them sooner?") means what it meant. An app without such a parameter is called
with the turn alone, and the run says how many cases lost their conversation.
"""

from __future__ import annotations

import importlib
import inspect
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .files import EvalInputError

__all__ = [
    "load_app", "accepts_chunks", "conversation_param", "snapshot_chunks", "case_conversation", "SpanCapture",
    "Replayer",
]  # fmt: skip

_USAGE_KEYS = ("latency_ms", "input_tokens", "output_tokens", "cost_usd")
#: Where an app takes the conversation before the turn (the agent's names, docs/agent.md).
HISTORY_NAMES = ("history", "messages", "chat_history", "conversation")


def load_app(spec: str) -> Callable[..., Any]:
    """The callable named by ``module:function`` (``function`` may be dotted: ``module:obj.method``)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise EvalInputError(f"--app must be module:function, got {spec!r}")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise EvalInputError(f"--app: cannot import {module_name}: {exc}") from exc
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise EvalInputError(f"--app: {module_name} has no attribute {attr}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise EvalInputError(f"--app: {spec} is not callable")
    return obj


def accepts_chunks(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` takes a ``chunks`` keyword (or any keyword)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "chunks" or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def conversation_param(fn: Callable[..., Any]) -> str | None:
    """The parameter ``fn`` takes the conversation in (:data:`HISTORY_NAMES`; ``history`` for
    ``**kwargs``), or None."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return None
    named = next((n for n in HISTORY_NAMES if n in params), None)
    if named is not None:
        return named
    return "history" if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()) else None


def case_conversation(case: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages before the case's turn (``provenance.conversation``), oldest first."""
    return [dict(m) for m in (case.get("provenance") or {}).get("conversation") or []]


def snapshot_chunks(case: dict[str, Any]) -> list[dict[str, Any]]:
    """The case's frozen context: ``provenance.chunks`` in recorded order."""
    return [dict(c) for c in (case.get("provenance") or {}).get("chunks") or []]


class SpanCapture:
    """An OTel span exporter that keeps finished spans in memory, for instrumented apps."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._spans: list[Any] = []

    def export(self, spans: Sequence[Any]) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        with self._lock:
            self._spans.extend(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True

    def take(self) -> list[Any]:
        with self._lock:
            out, self._spans = self._spans, []
        return out


def _traced_record(spans: list[Any]) -> dict[str, Any] | None:
    """The judge input record of the one RAG trace among ``spans`` (the last, if several)."""
    from ..ingest.build import build_trace
    from ..ingest.readable import spans_from_readable

    decoded = spans_from_readable(spans)
    by_trace: dict[str, list[Any]] = {}
    for s in decoded:
        by_trace.setdefault(s.trace_id, []).append(s)
    if not by_trace:
        return None
    trace_id, trace_spans = list(by_trace.items())[-1]
    trace = build_trace(trace_id, trace_spans)
    msg = trace.judge_message()
    rec = {k: msg[k] for k in ("trace_id", "answer", "chunks", "citations")}
    rec["input_tokens"] = trace.input_tokens or None
    rec["output_tokens"] = trace.output_tokens or None
    rec["latency_ms"] = trace.latency_ms or None
    return rec


def _as_record(result: Any) -> dict[str, Any] | None:
    """A run record from the function's return value, or None for a bare answer text."""
    if isinstance(result, str):
        return None
    if isinstance(result, Mapping):
        if not isinstance(result.get("answer"), str):
            raise EvalInputError("--app returned a mapping without a string 'answer'")
        return {k: result[k] for k in ("answer", "chunks", "citations", *_USAGE_KEYS) if k in result}
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], str):
        return {"answer": result[0], "chunks": result[1]}
    if isinstance(getattr(result, "answer", None), str):
        return {"answer": result.answer, "chunks": getattr(result, "chunks", None) or []}
    raise EvalInputError(
        f"--app returned {type(result).__name__}; expected a mapping, (answer, chunks) or text"
    )


def _chunk_dicts(chunks: Any) -> list[dict[str, Any]]:
    """Chunks as plain dicts (apps may return dataclasses with id/content/score/metadata)."""
    out = []
    for i, ch in enumerate(chunks or []):
        if isinstance(ch, Mapping):
            out.append(dict(ch))
        else:
            out.append(
                {
                    "id": getattr(ch, "id", str(i + 1)),
                    "content": getattr(ch, "content", str(ch)),
                    "score": getattr(ch, "score", None),
                    "metadata": dict(getattr(ch, "metadata", None) or {}),
                }
            )
    return out


class Replayer:
    """Calls one app on cases, capturing spans when the app is instrumented."""

    def __init__(self, fn: Callable[..., Any], *, corpus_from_snapshot: bool = False) -> None:
        self.fn = fn
        self.snapshot = corpus_from_snapshot
        if corpus_from_snapshot and not accepts_chunks(fn):
            raise EvalInputError("--corpus-from-snapshot: the app does not accept a 'chunks' argument")
        self.history_param = conversation_param(fn)
        self.without_conversation = 0  # cases with a conversation the app could not take
        self.capture = SpanCapture()
        from ...agent import configure

        configure(service_name="ragpulse-eval-replay", exporter=self.capture, sample_rate=1.0)

    def call(self, case: dict[str, Any], chunks: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """One run record for ``case`` (``chunks`` overrides the snapshot, for position sweeps)."""
        from ...agent import flush

        context = chunks if chunks is not None else (snapshot_chunks(case) if self.snapshot else None)
        kwargs: dict[str, Any] = {} if context is None else {"chunks": context}
        conversation = case_conversation(case)
        if conversation and self.history_param:
            kwargs[self.history_param] = conversation
        elif conversation:
            self.without_conversation += 1
        self.capture.take()
        t0 = time.perf_counter()
        result = self.fn(case["query"], **kwargs)
        elapsed = (time.perf_counter() - t0) * 1000
        rec = _as_record(result)
        if rec is None or "chunks" not in rec:
            flush()
            traced = _traced_record(self.capture.take())
            if traced is None:
                raise EvalInputError(
                    "--app returned only text and emitted no ragpulse spans (is it instrumented?)"
                )
            rec = {**traced, **(rec or {})} if rec else traced
            if isinstance(result, str):
                rec["answer"] = result
        rec["chunks"] = _chunk_dicts(rec.get("chunks"))
        if rec.get("latency_ms") is None:  # the app did not measure itself: the call's wall time
            rec["latency_ms"] = round(elapsed, 3)
        rec["case_id"] = case["id"]
        rec["query"] = case["query"]
        return rec

    def run(
        self, cases: list[dict[str, Any]], progress: Callable[[str], None] | None = None
    ) -> dict[str, dict[str, Any]]:
        """A run (records by case id) of every case."""
        out: dict[str, dict[str, Any]] = {}
        last = time.monotonic()
        for i, case in enumerate(cases, 1):
            out[case["id"]] = self.call(case)
            if progress and time.monotonic() - last > 5:
                progress(f"replayed {i}/{len(cases)} cases")
                last = time.monotonic()
        if progress and self.without_conversation:
            progress(
                f"{self.without_conversation} case(s) replayed without their conversation: the app takes "
                f"none of {', '.join(HISTORY_NAMES)}"
            )
        return out

    def close(self) -> None:
        from ...agent import shutdown

        shutdown()
