"""``trace_rag``, ``retrieval``, ``generation`` and ``cite``: the request-path half of the agent.

Each traced call opens an OTel span, makes it current (so spans of other
instrumentation nest under it), keeps references to the raw objects in a side
record (:mod:`ragpulse.agent.records`) and ends the span. Nothing else runs
while the application waits: attribute flattening, marker parsing, truncation
and redaction happen in the export thread. With ``exporter="none"`` the spans
belong to the application's provider, whose processors see the span at
``end()``, so there the record is expanded just before ``end()``.

Every form keeps the decorated callable's signature, return value, exceptions
and docstring; ragpulse errors are caught and counted, never raised into the
application. Works for sync and async functions, methods, and sync/async
generators (the span then ends when the stream ends or is closed).
"""

from __future__ import annotations

import functools
import logging
import random
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from opentelemetry.context import Context, attach, create_key, detach, get_current
from opentelemetry.trace import format_trace_id
from opentelemetry.trace.propagation import _SPAN_KEY
from opentelemetry.trace.status import Status, StatusCode

from .records import GenerationRecord, RagRecord, Record, RetrievalRecord
from .runtime import STATE, Runtime, get_runtime

__all__ = [
    "trace_rag",
    "retrieval",
    "generation",
    "cite",
    "current_rag",
    "current_trace_id",
    "RagHandle",
    "RetrievalHandle",
    "GenerationHandle",
]

F = TypeVar("F", bound=Callable[..., Any])
_log = logging.getLogger("ragpulse.agent")

# Context key holding the current RAG call's record (or _UNSAMPLED when head sampling said no).
_RAG_KEY = create_key("ragpulse-rag")
_UNSAMPLED = object()
# Context key of the innermost with-statement block.
_CM_KEY = create_key("ragpulse-block")
_QUERY_NAMES = ("query", "question", "q", "user_query", "prompt", "input", "text", "message")
_TOPK_NAMES = ("top_k", "k", "n_results", "limit", "similarity_top_k")
_PROMPT_NAMES = ("messages", "prompt", "input", "query", "question")
_logged: set[str] = set()


def _internal_error(where: str) -> None:
    """Count (and log once per place) an error inside ragpulse; the application goes on."""
    STATE.stats.add("internal_errors")
    if where not in _logged:
        _logged.add(where)
        _log.exception("ragpulse internal error in %s (the application is unaffected)", where)


# ---------------------------------------------------------------------------------------------
# Opening and closing spans
# ---------------------------------------------------------------------------------------------
class _Call:
    """A live span on the request path."""

    __slots__ = ("span", "record", "ctx", "rt", "token")

    def __init__(self, span: Any, record: Record | None, ctx: Context | None, rt: Runtime | None):
        self.span = span
        self.record = record
        self.ctx = ctx
        self.rt = rt
        self.token: Any = None  # set by the with-statement form


def _open(spec: _Spec, args: tuple, kwargs: dict, record: Record | None = None) -> _Call | None:
    """Start ``spec``'s span as a child of the current context; None when not traced."""
    rt = STATE.rt or get_runtime()
    if rt is None or not rt.enabled:
        return None
    try:
        parent = get_current()
        root = parent.get(_RAG_KEY)
        if root is _UNSAMPLED:
            return None
        values = parent.copy()
        if spec.root:
            if rt.sample_rate < 1.0 and random.random() >= rt.sample_rate:
                values[_RAG_KEY] = _UNSAMPLED
                return _Call(None, None, Context(values), rt)
            if record is None:
                record = spec.make_record(args, kwargs, None)
            values[_RAG_KEY] = record
        elif record is None:
            record = spec.make_record(args, kwargs, root)
        span = rt.tracer.start_span(spec.name, context=parent)
        if rt.records is not None:
            rt.records[span.get_span_context().span_id] = record
        values[_SPAN_KEY] = span
        return _Call(span, record, Context(values), rt)
    except Exception:  # noqa: BLE001
        _internal_error("span start")
        return None


def _close(call: _Call, exc: BaseException | None) -> None:
    """End the call's span, recording ``exc``; never raises."""
    span = call.span
    if span is None:
        return
    try:
        rt = call.rt
        if exc is not None:
            redactor = rt.materializer.redactor
            extra = {"exception.message": redactor(str(exc))} if redactor is not None and not rt.own else None
            span.record_exception(exc, attributes=extra)
            span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
        if not rt.own and call.record is not None and span.is_recording():
            attrs, events = rt.materializer.expand(call.record, None, None)
            span.set_attributes(attrs)
            for event in events:
                span.add_event(event.name, event.attributes)
        span.end()
    except Exception:  # noqa: BLE001
        _internal_error("span end")


# ---------------------------------------------------------------------------------------------
# Argument locators (resolved once, at decoration time)
# ---------------------------------------------------------------------------------------------
def _locate(fn: Callable[..., Any] | None, names: Iterable[str], explicit: str | None, fallback_first: bool):
    """(positional index or None, keyword name) of the argument to capture, or None."""
    if fn is None:
        return None
    import inspect  # decoration time only: keeps `import ragpulse.agent` light

    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    positional = [
        p
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name not in ("self", "cls")
    ]
    offset = 1 if params and params[0].name in ("self", "cls") else 0
    wanted = [explicit] if explicit else list(names)
    for name in wanted:
        for p in params:
            if p.name == name and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                idx = positional.index(p) + offset if p in positional else None
                if p.kind == p.KEYWORD_ONLY:
                    idx = None
                return (idx, p.name)
    if explicit or not fallback_first or not positional:
        return None
    return (offset, positional[0].name if positional[0].kind != positional[0].POSITIONAL_ONLY else "")


def _arg(loc: tuple[int | None, str] | None, args: tuple, kwargs: dict) -> Any:
    if loc is None:
        return None
    idx, name = loc
    if idx is not None and idx < len(args):
        return args[idx]
    return kwargs.get(name) if name else None


# ---------------------------------------------------------------------------------------------
# Specs: one per decorator / with-statement; they make records and wrap functions
# ---------------------------------------------------------------------------------------------
class _Spec:
    """A configured span kind; usable as a decorator and as a (async) context manager."""

    root = False
    handle_cls: type = object
    default_name = "rag"

    def __init__(self, name: str | None, attrs: Mapping[str, Any] | None):
        self.name = name or ""
        self.attrs = dict(attrs) if attrs else None

    # -- records ---------------------------------------------------------------------------
    def bind(self, fn: Callable[..., Any]) -> None:
        """Resolve argument locations for ``fn`` (decoration time)."""

    def make_record(self, args: tuple, kwargs: dict, root: Any) -> Record:
        raise NotImplementedError

    def set_result(self, record: Record, result: Any) -> None:
        raise NotImplementedError

    def _static(self, record: Record) -> Record:
        if self.attrs:
            record.attrs = dict(self.attrs)
        return record

    # -- decorator ---------------------------------------------------------------------------
    def __call__(self, fn: F) -> F:
        if not callable(fn):
            raise TypeError(f"ragpulse decorators wrap callables, got {type(fn).__name__}")
        import copy
        import inspect

        spec = copy.copy(self)  # one spec per decorated function: names and argument locations differ
        if not spec.name:
            qualname = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", "call")
            spec.name = qualname.rsplit("<locals>.", 1)[-1]  # "Class.method" or "function"
        spec.bind(fn)
        if inspect.isasyncgenfunction(fn):
            return _wrap_async_gen(fn, spec)  # type: ignore[return-value]
        if inspect.isgeneratorfunction(fn):
            return _wrap_gen(fn, spec)  # type: ignore[return-value]
        if inspect.iscoroutinefunction(fn):
            return _wrap_async(fn, spec)  # type: ignore[return-value]
        return _wrap_sync(fn, spec)  # type: ignore[return-value]

    # -- context manager -----------------------------------------------------------------------
    def _enter(self) -> Any:
        if not self.name:
            self.name = self.default_name
        call = _open(self, (), {}, self.initial_record())
        if call is None:
            call = _Call(None, None, get_current(), None)  # untraced block: still marks its scope
        # The live block is kept in the context itself, so one spec object used by several
        # threads or tasks at once (or nested) always closes the block of the current context.
        values = call.ctx.copy()
        values[_CM_KEY] = call
        call.ctx = Context(values)
        call.token = attach(call.ctx)
        return self.handle_cls(call.record, call.span)

    def _exit(self, exc: BaseException | None) -> None:
        call = get_current().get(_CM_KEY)
        if not isinstance(call, _Call):
            return
        detach(call.token)
        _close(call, exc)

    def initial_record(self) -> Record | None:
        return None

    def __enter__(self) -> Any:
        return self._enter()

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        self._exit(exc)
        return False

    async def __aenter__(self) -> Any:
        return self._enter()

    async def __aexit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        self._exit(exc)
        return False


class _RagSpec(_Spec):
    root = True

    def __init__(self, name, attrs, query: Any, query_arg: str | None, has_query: bool):
        super().__init__(name, attrs)
        self.query = query
        self.has_query = has_query
        self.query_arg = query_arg
        self.q_loc = self.session_loc = self.user_loc = None

    def bind(self, fn):
        self.q_loc = _locate(fn, _QUERY_NAMES, self.query_arg, True)
        self.session_loc = _locate(fn, ("session_id",), None, False)
        self.user_loc = _locate(fn, ("user_id",), None, False)

    def make_record(self, args, kwargs, root):
        record = RagRecord(self.query if self.has_query else _arg(self.q_loc, args, kwargs))
        self._static(record)
        if self.session_loc is not None:
            session = _arg(self.session_loc, args, kwargs)
            if session is not None:
                record.set_attr("session.id", str(session))
        if self.user_loc is not None:
            user = _arg(self.user_loc, args, kwargs)
            if user is not None:
                record.set_attr("user.id", str(user))
        return record

    def initial_record(self):
        return self._static(RagRecord(self.query))

    def set_result(self, record, result):
        record.answer = result


class _RetrievalSpec(_Spec):
    default_name = "retrieval"

    def __init__(self, name, attrs, query: Any, query_arg, top_k: Any, reranker: bool):
        super().__init__(name, attrs)
        self.query = query
        self.query_arg = query_arg
        self.top_k = top_k
        self.reranker = reranker
        self.q_loc = self.k_loc = None

    def bind(self, fn):
        self.q_loc = _locate(fn, _QUERY_NAMES, self.query_arg, True)
        if self.top_k is None:
            self.k_loc = _locate(fn, _TOPK_NAMES, None, False)

    def make_record(self, args, kwargs, root):
        query = self.query if self.query is not None else _arg(self.q_loc, args, kwargs)
        top_k = self.top_k if self.top_k is not None else _arg(self.k_loc, args, kwargs)
        record = RetrievalRecord(query, top_k, root if isinstance(root, RagRecord) else None)
        record.reranker = self.reranker
        return self._static(record)

    def initial_record(self):
        root = get_current().get(_RAG_KEY)
        return self.make_record((), {}, root)

    def set_result(self, record, result):
        _set_chunks(record, result)


class _GenerationSpec(_Spec):
    default_name = "generation"

    def __init__(self, name, attrs, model, provider, prompt_arg):
        super().__init__(name, attrs)
        self.model = model
        self.provider = provider
        self.prompt_arg = prompt_arg
        self.p_loc = None

    def bind(self, fn):
        self.p_loc = _locate(fn, _PROMPT_NAMES, self.prompt_arg, False)

    def make_record(self, args, kwargs, root):
        model = self.model
        if model is None and "model" in kwargs and isinstance(kwargs["model"], str):
            model = kwargs["model"]
        return self._static(GenerationRecord(model, self.provider, _arg(self.p_loc, args, kwargs)))

    def initial_record(self):
        return self.make_record((), {}, None)

    def set_result(self, record, result):
        record.output = result


def _set_chunks(record: RetrievalRecord, chunks: Any) -> None:
    """Keep a shallow copy of a returned chunk list (never consume an iterator the app will use)."""
    if isinstance(chunks, (list, tuple)):
        chunks = list(chunks)
    elif not isinstance(chunks, Mapping):
        return
    record.chunks = chunks
    root = record.root
    if root is not None:
        root.chunks = chunks


# ---------------------------------------------------------------------------------------------
# Wrappers per callable kind
# ---------------------------------------------------------------------------------------------
def _wrap_sync(fn: Callable[..., Any], spec: _Spec) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        call = _open(spec, args, kwargs)
        if call is None:
            return fn(*args, **kwargs)
        token = attach(call.ctx)
        try:
            result = fn(*args, **kwargs)
        except BaseException as exc:
            detach(token)
            _close(call, exc)
            raise
        detach(token)
        if call.record is not None:
            spec.set_result(call.record, result)
        _close(call, None)
        return result

    return wrapper


def _wrap_async(fn: Callable[..., Any], spec: _Spec) -> Callable[..., Any]:
    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        call = _open(spec, args, kwargs)
        if call is None:
            return await fn(*args, **kwargs)
        token = attach(call.ctx)
        try:
            result = await fn(*args, **kwargs)
        except BaseException as exc:
            detach(token)
            _close(call, exc)
            raise
        detach(token)
        if call.record is not None:
            spec.set_result(call.record, result)
        _close(call, None)
        return result

    return wrapper


def _max_parts(call: _Call) -> int:
    return call.rt.settings.limits.max_stream_parts


def _wrap_gen(fn: Callable[..., Any], spec: _Spec) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        call = _open(spec, args, kwargs)
        if call is None:
            return (yield from fn(*args, **kwargs))
        record = call.record
        parts: list[Any] = []
        limit = _max_parts(call)
        if record is not None:
            record.parts = parts
        token = attach(call.ctx)
        try:
            gen = fn(*args, **kwargs)
        except BaseException as exc:
            detach(token)
            _close(call, exc)
            raise
        detach(token)
        value: Any = None
        pending: BaseException | None = None
        while True:
            token = attach(call.ctx)
            try:
                if pending is not None:
                    exc_in, pending = pending, None
                    item = gen.throw(exc_in)
                else:
                    item = gen.send(value)
            except StopIteration as stop:
                detach(token)
                _close(call, None)
                return stop.value
            except BaseException as exc:
                detach(token)
                _close(call, exc)
                raise
            detach(token)
            if len(parts) < limit:
                parts.append(item)
            try:
                value = yield item
            except GeneratorExit:
                if record is not None:
                    record.stream_closed = True
                token = attach(call.ctx)
                try:
                    gen.close()
                finally:
                    detach(token)
                    _close(call, None)
                raise
            except BaseException as exc:  # thrown into the stream by the consumer
                pending = exc

    return wrapper


def _wrap_async_gen(fn: Callable[..., Any], spec: _Spec) -> Callable[..., Any]:
    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        call = _open(spec, args, kwargs)
        if call is None:
            agen = fn(*args, **kwargs)
            value: Any = None
            pending: BaseException | None = None
            while True:  # untraced: a transparent pass-through, asend/athrow/aclose included
                try:
                    if pending is not None:
                        exc_in, pending = pending, None
                        item = await agen.athrow(exc_in)
                    else:
                        item = await agen.asend(value)
                except StopAsyncIteration:
                    return
                try:
                    value = yield item
                except GeneratorExit:
                    await agen.aclose()
                    raise
                except BaseException as exc:  # noqa: BLE001 - thrown in by the consumer: pass it on
                    pending = exc
        record = call.record
        parts: list[Any] = []
        limit = _max_parts(call)
        if record is not None:
            record.parts = parts
        token = attach(call.ctx)
        try:
            agen = fn(*args, **kwargs)
        except BaseException as exc:
            detach(token)
            _close(call, exc)
            raise
        detach(token)
        value: Any = None
        pending: BaseException | None = None
        while True:
            token = attach(call.ctx)
            try:
                if pending is not None:
                    exc_in, pending = pending, None
                    item = await agen.athrow(exc_in)
                else:
                    item = await agen.asend(value)
            except StopAsyncIteration:
                detach(token)
                _close(call, None)
                return
            except BaseException as exc:
                detach(token)
                _close(call, exc)
                raise
            detach(token)
            if len(parts) < limit:
                parts.append(item)
            try:
                value = yield item
            except GeneratorExit:
                if record is not None:
                    record.stream_closed = True
                token = attach(call.ctx)
                try:
                    await agen.aclose()
                finally:
                    detach(token)
                    _close(call, None)
                raise
            except BaseException as exc:
                pending = exc

    return wrapper


# ---------------------------------------------------------------------------------------------
# Handles returned by the with-statement forms and by current_rag()
# ---------------------------------------------------------------------------------------------
class _Handle:
    __slots__ = ("_record", "_span")

    def __init__(self, record: Record | None, span: Any):
        self._record = record
        self._span = span

    @property
    def recording(self) -> bool:
        """False when this call is not traced (sampled out, disabled)."""
        return self._record is not None

    @property
    def trace_id(self) -> str | None:
        """The 32-hex trace id of this call (what Kafka records are keyed by), or None."""
        if self._span is None:
            return None
        return format_trace_id(self._span.get_span_context().trace_id)

    def feedback(self, value: float | None = None, **options: Any) -> bool:
        """Feedback on this call (see :func:`ragpulse.agent.feedback`); the span's parent is this one."""
        if self._span is None:
            return False
        from .feedback import feedback

        ctx = self._span.get_span_context()
        return feedback(format_trace_id(ctx.trace_id), value, span_id=ctx.span_id, **options)

    def set_attribute(self, key: str, value: Any) -> None:
        """Add an attribute to this span (expanded and redacted in the export thread)."""
        if self._record is not None:
            self._record.set_attr(key, value)

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        for key, value in attributes.items():
            self.set_attribute(key, value)


class RagHandle(_Handle):
    """The root of a RAG call: set the query, chunks, answer, citations."""

    __slots__ = ()

    def set_query(self, query: Any) -> None:
        if self._record is not None:
            self._record.input = query

    def set_answer(self, answer: Any) -> None:
        """The answer: a string, or a structured object/dict with ``answer`` and ``citations``."""
        if self._record is not None:
            self._record.answer = answer

    def set_chunks(self, chunks: Any, *, name: str = "retrieval", top_k: int | None = None) -> None:
        """Record retrieved chunks as a RETRIEVER child span (for code without a ``@retrieval``)."""
        record = self._record
        if not isinstance(record, RagRecord):
            return
        spec = _RetrievalSpec(name, None, record.input, None, top_k, False)
        child = RetrievalRecord(record.input, top_k, record)
        _set_chunks(child, chunks)
        call = _open(spec, (), {}, child)
        if call is not None:
            _close(call, None)

    def cite(
        self, doc_id: Any, start: int | None = None, end: int | None = None, marker: str | None = None
    ) -> None:
        """An explicit citation: ``doc_id`` (a chunk id, or an int 1-based position) supports answer[start:end]."""
        record = self._record
        if isinstance(record, RagRecord):
            if record.citations is None:
                record.citations = []
            record.citations.append((doc_id, start, end, marker))


class RetrievalHandle(_Handle):
    """A retrieval span opened with ``with retrieval(...) as r``."""

    __slots__ = ()

    def set_chunks(self, chunks: Any) -> None:
        if isinstance(self._record, RetrievalRecord):
            _set_chunks(self._record, chunks)

    def set_query(self, query: Any) -> None:
        if self._record is not None:
            self._record.input = query

    def set_top_k(self, top_k: int) -> None:
        if isinstance(self._record, RetrievalRecord):
            self._record.top_k = top_k


class GenerationHandle(_Handle):
    """An LLM span opened with ``with generation(model=...) as g``."""

    __slots__ = ()

    def set_output(self, output: Any) -> None:
        """The model's output: text, or a response object (its usage is read too)."""
        if isinstance(self._record, GenerationRecord):
            self._record.output = output

    def set_usage(self, input_tokens: int | None = None, output_tokens: int | None = None) -> None:
        if isinstance(self._record, GenerationRecord):
            self._record.usage = {"input_tokens": input_tokens, "output_tokens": output_tokens}

    def set_model(self, model: str) -> None:
        if isinstance(self._record, GenerationRecord):
            self._record.model = model

    def set_prompt(self, prompt: Any) -> None:
        if self._record is not None:
            self._record.input = prompt


_RagSpec.handle_cls = RagHandle
_RetrievalSpec.handle_cls = RetrievalHandle
_GenerationSpec.handle_cls = GenerationHandle


# ---------------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------------
_NO_QUERY = object()


def _rag_attrs(
    attributes: Mapping[str, Any] | None,
    corpus_version: str | None,
    risk_level: str | None,
    query_type: str | None,
) -> dict[str, Any] | None:
    attrs = dict(attributes or {})
    for key, value in (
        ("rag.corpus.version", corpus_version),
        ("rag.risk_level", risk_level),
        ("rag.query_type", query_type),
    ):
        if value is not None:
            attrs[key] = value
    return attrs or None


def trace_rag(
    fn_or_name: Any = None,
    /,
    *,
    name: str | None = None,
    query: Any = _NO_QUERY,
    query_arg: str | None = None,
    corpus_version: str | None = None,
    risk_level: str | None = None,
    query_type: str | None = None,
    attributes: Mapping[str, Any] | None = None,
) -> Any:
    """Mark a RAG call: the root span (query from the arguments, answer from the return value).

    ``@trace_rag``, ``@trace_rag("name", risk_level="high")`` or, for code that
    cannot be decorated, ``with trace_rag("answer", query=q) as rag: ...``.
    The query is the argument named ``query_arg``, else the first of
    query/question/q/prompt/input/..., else the first positional argument.
    Arguments named ``session_id``/``user_id`` become ``session.id``/``user.id``.
    """
    attrs = _rag_attrs(attributes, corpus_version, risk_level, query_type)
    if callable(fn_or_name) and not isinstance(fn_or_name, str):
        return _RagSpec(name, attrs, None, query_arg, False)(fn_or_name)
    spec_name = fn_or_name if isinstance(fn_or_name, str) else name
    has_query = query is not _NO_QUERY
    return _RagSpec(spec_name, attrs, query if has_query else None, query_arg, has_query)


def retrieval(
    fn_or_name: Any = None,
    /,
    *,
    name: str | None = None,
    query: Any = None,
    query_arg: str | None = None,
    top_k: int | None = None,
    reranker: bool = False,
    attributes: Mapping[str, Any] | None = None,
) -> Any:
    """Mark a retriever (or, with ``reranker=True``, a reranker): its return value is the chunks.

    Chunks may be dicts, objects with id/content/score/metadata, LangChain
    ``Document`` (or ``(Document, score)`` pairs) or LlamaIndex ``NodeWithScore``.
    ``with retrieval("search") as r: r.set_chunks(...)`` for undecoratable code.
    """
    if callable(fn_or_name) and not isinstance(fn_or_name, str):
        return _RetrievalSpec(name or None, attributes, query, query_arg, top_k, reranker)(fn_or_name)
    spec_name = fn_or_name if isinstance(fn_or_name, str) else name
    spec = _RetrievalSpec(spec_name, attributes, query, query_arg, top_k, reranker)
    if reranker:
        spec.default_name = "rerank"
    return spec


def generation(
    fn_or_name: Any = None,
    /,
    *,
    name: str | None = None,
    model: str | None = None,
    provider: str | None = None,
    prompt_arg: str | None = None,
    attributes: Mapping[str, Any] | None = None,
) -> Any:
    """Mark an LLM call: model, tokens (from a returned usage object) and output.

    ``@generation(model="gpt-4o", provider="openai")``; a ``model=`` keyword
    argument of the call is used when ``model`` is not given here.
    ``with generation(model=...) as g: g.set_output(...)`` for undecoratable code.
    """
    if callable(fn_or_name) and not isinstance(fn_or_name, str):
        return _GenerationSpec(name, attributes, model, provider, prompt_arg)(fn_or_name)
    spec_name = fn_or_name if isinstance(fn_or_name, str) else name
    return _GenerationSpec(spec_name, attributes, model, provider, prompt_arg)


def current_rag() -> RagHandle:
    """The handle of the RAG call running in this context (a no-op handle outside one)."""
    try:
        ctx = get_current()
        record = ctx.get(_RAG_KEY)
        if isinstance(record, RagRecord):
            return RagHandle(record, ctx.get(_SPAN_KEY))
    except Exception:  # noqa: BLE001
        _internal_error("current_rag")
    return RagHandle(None, None)


def current_trace_id() -> str | None:
    """The 32-hex trace id of the RAG call running in this context (keep it for later feedback)."""
    return current_rag().trace_id


def cite(doc_id: Any, start: int | None = None, end: int | None = None, *, marker: str | None = None) -> None:
    """Record that chunk ``doc_id`` supports ``answer[start:end]`` in the current RAG call.

    ``doc_id`` is a chunk id, or an int 1-based position in the retrieved chunks.
    Outside a traced RAG call this does nothing.
    """
    try:
        record = get_current().get(_RAG_KEY)
        if isinstance(record, RagRecord):
            if record.citations is None:
                record.citations = []
            record.citations.append((doc_id, start, end, marker))
    except Exception:  # noqa: BLE001
        _internal_error("cite")
