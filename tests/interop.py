"""What the interop tests share: an application's own OTel provider feeding an embedded collector
(chDB, local judge), the corpus and answers the applications use, the decorated application, and
the app-side expectations.

The application's provider hands finished spans to the collector through the agent's embedded
exporter (an ordinary OTel ``SpanExporter``), as an OTLP exporter would hand them to the intake,
or (``otlp=True``) through the OTel SDK's OTLP/HTTP exporter to the collector's OTLP/HTTP
receiver; an in-memory exporter beside it keeps the trace ids the application produced.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from ragpulse import agent
from ragpulse.agent.embedded import EmbeddedSpanExporter
from ragpulse.collector.embedded.collector import EmbeddedCollector

QUESTION = "How long are transaction logs kept?"
# (content, metadata) of the three chunks every application retrieves, in this order.
CORPUS = [
    ("Transaction logs are kept for five years after the account closes.", {"source": "retention.md", "page": 1}),
    ("Early deletion of logs requires that all legal holds are released.", {"source": "retention.md", "page": 2}),
    ("Backups are encrypted with AES-256 and rotated weekly.", {"source": "backup.md", "page": 1}),
]  # fmt: skip
SCORES = [0.91, 0.62, 0.18]
RIGHT = "Transaction logs are kept for five years after the account closes [1]."
WRONG = "Transaction logs are kept for five years after the account closes [2]."  # cites the holds chunk


def scripted_app(chunks: list[Any]) -> Callable[[str], str]:
    """The application traced with ragpulse's decorators (tests/test_interop_app_provider.py and
    tests/grpc_apps.py): a retriever returning ``chunks``, a generator answering RIGHT, then WRONG."""
    script = [RIGHT, WRONG]

    @agent.retrieval
    def search(query: str) -> list[Any]:
        return list(chunks)

    @agent.generation(model="scripted", provider="local")
    def complete(prompt: str) -> str:
        return script.pop(0)

    @agent.trace_rag
    def answer(query: str) -> str:
        search(query)
        return complete(query)

    return answer


_TRACE_COLUMNS = (
    "query, answer, chunk_ids, chunk_contents, chunk_scores, chunk_metadata, chunk_sources, "
    "citation_doc_ids, citation_markers, source, complete"
)
_JUDGMENT_COLUMNS = "failure_mode, faithfulness, citation_correctness, error"


@dataclass
class Expected:
    """What the application produced for one call (computed on the application's side)."""

    query: str
    answer: str
    ids: list[str]
    contents: list[str]
    scores: list[float | None]
    sources: list[str] | None = None  # the ids the retriever gave, when they repeated

    def citations(self) -> list[tuple[str, str]]:
        """(chunk id, marker) of each ``[n]`` marker in the answer: the n-th chunk the app retrieved."""
        return [(self.ids[int(n) - 1], f"[{n}]") for n in re.findall(r"\[(\d+)\]", self.answer)]


class Pipeline:
    """An application tracer provider -> embedded collector (chDB) -> local judge."""

    def __init__(self, db: Path, service: str = "interop-app", otlp: bool = False) -> None:
        self.collector = EmbeddedCollector(
            db, config={"sampling": {"rate": 1.0}}, metrics_port=None, receiver_port=0 if otlp else None,
            judge="local", install_sink=not otlp,
        ).start()  # fmt: skip
        self.memory = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        if otlp:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            exporter: Any = OTLPSpanExporter(endpoint=f"{self.collector.receiver_url}/v1/traces")
        else:
            exporter = EmbeddedSpanExporter()
        self.provider.add_span_processor(SimpleSpanProcessor(exporter))
        self.provider.add_span_processor(SimpleSpanProcessor(self.memory))

    def root_trace_ids(self) -> list[str]:
        """Trace ids of the application's calls so far, in call order (one per parentless span)."""
        roots = sorted(
            (s for s in self.memory.get_finished_spans() if s.parent is None), key=lambda s: s.start_time
        )
        return [format(s.context.trace_id, "032x") for s in roots]

    def flush(self) -> None:
        self.provider.force_flush()
        assert self.collector.flush(60)

    def stored(self, trace_id: str, columns: str = _TRACE_COLUMNS) -> dict[str, Any]:
        return stored_row(self.collector.storage, trace_id, columns)

    def judgment(self, trace_id: str, columns: str = _JUDGMENT_COLUMNS) -> dict[str, Any]:
        return judgment_row(self.collector.storage, trace_id, columns)

    def close(self) -> None:
        self.provider.shutdown()
        self.collector.stop()

    def __enter__(self) -> Pipeline:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def stored_row(storage: Any, trace_id: str, columns: str = _TRACE_COLUMNS) -> dict[str, Any]:
    """The one stored row of ``trace_id`` (``columns``: by default those the interop checks read)."""
    rows = storage.query(
        f"SELECT {columns} FROM {{db}}.rag_traces FINAL WHERE trace_id = %(t)s", {"t": trace_id}
    )
    assert len(rows) == 1, f"trace {trace_id} stored {len(rows)} times"
    return dict(zip([c.strip() for c in columns.split(",")], rows[0], strict=True))


def judgment_row(storage: Any, trace_id: str, columns: str = _JUDGMENT_COLUMNS) -> dict[str, Any]:
    """The one judgment of ``trace_id``."""
    rows = storage.query(
        f"SELECT {columns} FROM {{db}}.rag_judgments FINAL WHERE trace_id = %(t)s", {"t": trace_id}
    )
    assert len(rows) == 1, f"trace {trace_id} judged {len(rows)} times"
    return dict(zip([c.strip() for c in columns.split(",")], rows[0], strict=True))


def check_stored(pipe: Any, trace_id: str, want: Expected, source: str, failure_mode: str) -> dict[str, Any]:
    """The stored row equals what the application produced, and the judge's verdict is ``failure_mode``
    (``pipe``: anything with ``stored(trace_id)`` and ``judgment(trace_id)``, as :class:`Pipeline`)."""
    row = pipe.stored(trace_id)
    assert row["source"] == source and row["complete"] == 1
    assert row["query"] == want.query
    assert row["answer"] == want.answer
    assert row["chunk_ids"] == want.ids
    assert row["chunk_contents"] == want.contents
    assert row["chunk_scores"] == want.scores
    assert row["chunk_sources"] == (want.sources or want.ids)
    assert list(zip(row["citation_doc_ids"], row["citation_markers"], strict=True)) == want.citations()
    verdict = pipe.judgment(trace_id)
    assert verdict["error"] == "" and verdict["failure_mode"] == failure_mode, verdict
    if failure_mode == "generation":
        assert verdict["citation_correctness"] == 0.0, verdict
    else:
        assert verdict["citation_correctness"] == 1.0 and verdict["faithfulness"] == 1.0, verdict
    return row


def check_right_and_wrong(
    pipe: Pipeline, answers: list[str], expected: Callable[[str], Expected], source: str
) -> dict[str, Any]:
    """The application's last two calls, once flushed: the first stored as produced and judged
    healthy, the second a generation failure (it cites the wrong chunk). Returns the first's row."""
    pipe.flush()
    right, wrong = pipe.root_trace_ids()[-2:]
    row = check_stored(pipe, right, expected(answers[0]), source, "healthy")
    check_stored(pipe, wrong, expected(answers[1]), source, "generation")
    return row


@contextmanager
def openllmetry_langchain(provider: TracerProvider) -> Iterator[None]:
    """OpenLLMetry's LangChain instrumentor on ``provider`` for the block, wholly undone after it.

    Its ``uninstrument()`` (0.62.4) hands opentelemetry's ``unwrap`` a module path with
    ``"Class.method"``, which ``unwrap`` reads as an attribute of the module one level up, so
    nothing is unwrapped: its callback handler (bound to the first provider it was given) and its
    LangGraph wrappers stay, and a later test's LangChain traces, under any instrumentor, hang
    under its spans. The same public ``unwrap`` on the classes themselves removes what it left."""
    from langchain_core.callbacks import BaseCallbackManager
    from opentelemetry.instrumentation.langchain import LangchainInstrumentor
    from opentelemetry.instrumentation.utils import unwrap
    from wrapt import BaseObjectProxy

    instrumentor = LangchainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        yield
    finally:
        instrumentor.uninstrument()
        left: list[tuple[Any, str]] = [(BaseCallbackManager, "__init__")]
        try:
            from langgraph.pregel import Pregel
            from langgraph.types import Command

            left += [(Pregel, "stream"), (Pregel, "astream"), (Command, "__init__")]
        except ImportError:
            pass
        for owner, name in left:
            while isinstance(getattr(owner, name), BaseObjectProxy):
                unwrap(owner, name)


def metadata_of(row: dict[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(m) if m else {} for m in row["chunk_metadata"]]
