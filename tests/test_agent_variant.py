"""The agent's variant API: ``configure(variant=, config=)``, ``@trace_rag(variant=, config=)`` and
``RagHandle.set_variant`` write ``rag.variant`` and ``rag.config.*`` on the root span only, the
call's own value winning over the configured default, with the agent's own provider and with
``exporter="none"``."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from ragpulse.agent import configure, current_rag, flush, retrieval, shutdown, trace_rag
from ragpulse.agent.conventions import RAG_CORPUS_VERSION, RAG_REQUEST_ID, RAG_VARIANT, config_key

from tests.agent_memory import under_app_provider


@retrieval
def search(query: str) -> list[dict]:
    return [{"id": "C1", "content": "Logs are kept for five years.", "score": 0.9}]


@trace_rag
def plain(query: str) -> str:
    search(query)
    return "Five years [1]."


@trace_rag(variant="reranker-b", config={"reranker": "bge-v2", "prompt": "v7"}, corpus_version="c-9")
def pinned(query: str) -> str:
    search(query)
    return "Five years [1]."


@trace_rag
def split(query: str, arm: str) -> str:
    current_rag().set_variant(arm, generator="gpt-4o-mini")
    current_rag().set_request_id("req-1")
    search(query)
    return "Five years [1]."


def _roots(exporter: InMemorySpanExporter) -> list:
    flush()
    return [s for s in exporter.get_finished_spans() if s.attributes.get("rag.root")]


@pytest.fixture()
def mem():
    exporter = InMemorySpanExporter()
    configure(
        exporter=exporter, service_name="svc", schedule_delay_ms=50, variant="baseline",
        config={"chunker": "semantic-512", "index": "hnsw-2"}, corpus_version="c-1",
    )  # fmt: skip
    yield exporter
    shutdown()


def test_configured_defaults_land_on_every_root_span_and_nowhere_else(mem) -> None:
    plain("how long?")
    flush()
    spans = {s.name: s for s in mem.get_finished_spans()}
    root = spans["plain"].attributes
    assert root[RAG_VARIANT] == "baseline" and root[RAG_CORPUS_VERSION] == "c-1"
    assert root[config_key("chunker")] == "semantic-512" and root[config_key("index")] == "hnsw-2"
    assert RAG_VARIANT not in spans["search"].attributes


def test_the_decorator_and_the_handle_win_over_the_defaults(mem) -> None:
    pinned("q")
    split("q", "prompt-v8")
    by_name = {s.name: s.attributes for s in _roots(mem)}
    p, s = by_name["pinned"], by_name["split"]
    assert p[RAG_VARIANT] == "reranker-b" and p[RAG_CORPUS_VERSION] == "c-9"
    assert p[config_key("reranker")] == "bge-v2" and p[config_key("prompt")] == "v7"
    assert p[config_key("chunker")] == "semantic-512"  # parts the call does not name keep the default
    assert s[RAG_VARIANT] == "prompt-v8" and s[config_key("generator")] == "gpt-4o-mini"
    assert s[RAG_REQUEST_ID] == "req-1"


def test_exporter_none_writes_the_same_attributes_on_the_application_provider() -> None:
    with under_app_provider(variant="baseline") as (_provider, app):
        plain("q")
        pinned("q")
        assert flush()  # the spans are completed and ended off the request path
        roots = {s.name: s.attributes for s in app.get_finished_spans() if s.attributes.get("rag.root")}
        assert roots["plain"][RAG_VARIANT] == "baseline"
        assert roots["pinned"][RAG_VARIANT] == "reranker-b"


def test_variant_from_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("RAGPULSE_VARIANT", "canary")
    exporter = InMemorySpanExporter()
    settings = configure(exporter=exporter, schedule_delay_ms=50)
    try:
        assert settings.variant == "canary"
        plain("q")
        assert _roots(exporter)[0].attributes[RAG_VARIANT] == "canary"
    finally:
        shutdown()
