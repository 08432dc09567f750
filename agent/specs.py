"""Span kinds (RAG root, retrieval, generation): what each records, as decorator and as with-block.

A spec is what ``trace_rag(...)``, ``retrieval(...)`` and ``generation(...)``
return: called on a function it wraps it (:mod:`.wrappers`); used in a
``with``/``async with`` statement it opens a span for the block and returns a
handle (:mod:`.handles`). Where the query, top-k or prompt sit in a function's
arguments is resolved once, at decoration time; what the call returns goes to its record
(``Record.set_result``), as what a block's handle is given does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from opentelemetry.context import get_current, set_value

from .conventions import SESSION_ID, USER_ID
from .handles import GenerationHandle, RagHandle, RetrievalHandle
from .records import GenerationRecord, RagRecord, Record, RetrievalRecord, listed
from .spans import BLOCK_KEY, RAG_KEY, Call, open_call
from .wrappers import wrap

__all__ = ["Spec", "RagSpec", "RetrievalSpec", "GenerationSpec", "QUERY_NAMES", "locate", "arg_value"]

F = TypeVar("F", bound=Callable[..., Any])
QUERY_NAMES = ("query", "question", "q", "user_query", "prompt", "input", "text", "message")
_TOPK_NAMES = ("top_k", "k", "n_results", "limit", "similarity_top_k")
_PROMPT_NAMES = ("messages", "prompt", "input", "query", "question")
_CONVERSATION_NAMES = ("history", "messages", "chat_history", "conversation")
# A generation's argument holding the chunks it is given (a list; a formatted context string is not).
_CHUNK_NAMES = (
    "chunks",
    "documents",
    "docs",
    "context",
    "contexts",
    "passages",
    "sources",
    "nodes",
    "evidence",
)
_Loc = tuple[int | None, str] | None


def locate(
    fn: Callable[..., Any] | None, names: Iterable[str], explicit: str | None, fallback_first: bool
) -> _Loc:
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


def arg_value(loc: _Loc, args: tuple, kwargs: dict) -> Any:
    if loc is None:
        return None
    idx, name = loc
    if idx is not None and idx < len(args):
        return args[idx]
    return kwargs.get(name) if name else None


@dataclass(eq=False)
class Spec:
    """A configured span kind; usable as a decorator and as a (async) context manager.

    Its fields are the options the kind was given (``name`` and ``attrs`` first, then a subclass's
    own, in the order its decorator passes them); what :meth:`bind` resolves from a decorated
    function's signature is kept in fields that are not options (``init=False``).
    """

    root = False
    handle_cls: ClassVar[type] = object
    default_name = "rag"

    name: str | None = None
    attrs: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        self.name = self.name or ""
        self.attrs = dict(self.attrs) if self.attrs else None

    # -- records ---------------------------------------------------------------------------
    def bind(self, fn: Callable[..., Any]) -> None:
        """Resolve argument locations for ``fn`` (decoration time)."""

    def make_record(self, args: tuple, kwargs: dict, root: Any) -> Record:
        raise NotImplementedError

    def initial_record(self) -> Record | None:
        """The record of a with-statement block (no arguments to read)."""
        return None

    def _static(self, record: Record) -> Record:
        if self.attrs:
            record.attrs = dict(self.attrs)
        return record

    # -- decorator ---------------------------------------------------------------------------
    def __call__(self, fn: F) -> F:
        if not callable(fn):
            raise TypeError(f"ragpulse decorators wrap callables, got {type(fn).__name__}")
        import copy

        spec = copy.copy(self)  # one spec per decorated function: names and argument locations differ
        if not spec.name:
            qualname = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", "call")
            spec.name = qualname.rsplit("<locals>.", 1)[-1]  # "Class.method" or "function"
        spec.bind(fn)
        return wrap(fn, spec)  # type: ignore[return-value]

    # -- context manager -----------------------------------------------------------------------
    def _enter(self) -> Any:
        if not self.name:
            self.name = self.default_name
        call = open_call(self, (), {}, self.initial_record())
        if call is None:
            call = Call(None, None, get_current(), None)  # untraced block: still marks its scope
        # The live block is kept in the context itself, so one spec object used by several
        # threads or tasks at once (or nested) always closes the block of the current context.
        call.ctx = set_value(BLOCK_KEY, call, call.ctx)
        call.__enter__()
        return self.handle_cls(call.record, call.span)

    def _exit(self, exc: BaseException | None) -> None:
        call = get_current().get(BLOCK_KEY)
        if isinstance(call, Call):
            call.leave(exc)

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


@dataclass(eq=False)
class RagSpec(Spec):
    """The root span of a RAG call: query (and session/user ids) in, answer out."""

    root = True
    handle_cls = RagHandle

    query: Any = None
    query_arg: str | None = None
    has_query: bool = False
    conversation: Any = None
    conversation_arg: str | None = None
    q_loc: _Loc = field(default=None, init=False)
    session_loc: _Loc = field(default=None, init=False)
    user_loc: _Loc = field(default=None, init=False)
    history_loc: _Loc = field(default=None, init=False)

    def bind(self, fn: Callable[..., Any]) -> None:
        self.q_loc = locate(fn, QUERY_NAMES, self.query_arg, True)
        self.session_loc = locate(fn, ("session_id",), None, False)
        self.user_loc = locate(fn, ("user_id",), None, False)
        if self.conversation is None:
            self.history_loc = locate(fn, _CONVERSATION_NAMES, self.conversation_arg, False)
            if self.history_loc == self.q_loc:  # def chat(messages): the query is the last user message
                self.history_loc = None

    def make_record(self, args: tuple, kwargs: dict, root: Any) -> Record:
        query = self.query if self.has_query else arg_value(self.q_loc, args, kwargs)
        record = RagRecord(listed(query) if isinstance(query, list) else query)
        if self.conversation is not None:
            record.conversation = listed(self.conversation)
        elif self.history_loc is not None:
            record.conversation = listed(arg_value(self.history_loc, args, kwargs))
        self._static(record)
        if self.session_loc is not None:
            session = arg_value(self.session_loc, args, kwargs)
            if session is not None:
                record.set_attr(SESSION_ID, str(session))
        if self.user_loc is not None:
            user = arg_value(self.user_loc, args, kwargs)
            if user is not None:
                record.set_attr(USER_ID, str(user))
        return record

    def initial_record(self) -> Record | None:
        record = RagRecord(self.query)
        if self.conversation is not None:
            record.conversation = listed(self.conversation)
        return self._static(record)


@dataclass(eq=False)
class RetrievalSpec(Spec):
    """A retriever (or reranker) span: query and top-k in, chunks out."""

    default_name = "retrieval"
    handle_cls = RetrievalHandle

    query: Any = None
    query_arg: str | None = None
    top_k: Any = None
    reranker: bool = False
    q_loc: _Loc = field(default=None, init=False)
    k_loc: _Loc = field(default=None, init=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.reranker:
            self.default_name = "rerank"

    def bind(self, fn: Callable[..., Any]) -> None:
        self.q_loc = locate(fn, QUERY_NAMES, self.query_arg, True)
        if self.top_k is None:
            self.k_loc = locate(fn, _TOPK_NAMES, None, False)

    def make_record(self, args: tuple, kwargs: dict, root: Any) -> Record:
        query = self.query if self.query is not None else arg_value(self.q_loc, args, kwargs)
        top_k = self.top_k if self.top_k is not None else arg_value(self.k_loc, args, kwargs)
        record = RetrievalRecord(query, top_k, root if isinstance(root, RagRecord) else None)
        record.reranker = self.reranker
        return self._static(record)

    def initial_record(self) -> Record | None:
        return self.make_record((), {}, get_current().get(RAG_KEY))


@dataclass(eq=False)
class GenerationSpec(Spec):
    """An LLM span: model, provider and prompt in, output (and usage) out."""

    default_name = "generation"
    handle_cls = GenerationHandle

    model: Any = None
    provider: Any = None
    prompt_arg: str | None = None
    chunks_arg: str | None = None
    p_loc: _Loc = field(default=None, init=False)
    c_loc: _Loc = field(default=None, init=False)

    def bind(self, fn: Callable[..., Any]) -> None:
        self.p_loc = locate(fn, _PROMPT_NAMES, self.prompt_arg, False)
        self.c_loc = locate(fn, _CHUNK_NAMES, self.chunks_arg, False)

    def make_record(self, args: tuple, kwargs: dict, root: Any) -> Record:
        model = self.model
        if model is None and "model" in kwargs and isinstance(kwargs["model"], str):
            model = kwargs["model"]
        prompt = arg_value(self.p_loc, args, kwargs)
        record = GenerationRecord(model, self.provider, prompt, root if isinstance(root, RagRecord) else None)
        if self.c_loc is not None:
            record.set_documents(arg_value(self.c_loc, args, kwargs))
        return self._static(record)

    def initial_record(self) -> Record | None:
        return self.make_record((), {}, get_current().get(RAG_KEY))
