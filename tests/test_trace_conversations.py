"""Conversations, tools and agents in the trace model (issue 43): spans -> RagTrace -> rag_traces -> judge.

The spans are made with the OpenTelemetry SDK and the attributes of the conventions
(``agent/conventions.py``), as other instrumentation writes them: OpenInference (CHAIN/AGENT
roots, RETRIEVER, LLM, TOOL spans, ``llm.input_messages``) and the OTel GenAI conventions
(``invoke_agent``, ``retrieval``, ``execute_tool``, ``gen_ai.input.messages``, the deprecated
``gen_ai.prompt.<i>``). The issue's case goes through OTLP/HTTP into ``ragpulse collect
--no-kafka`` and is judged there; the mapping cases are read by ``build_trace`` and judged by
the local judge.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from ragpulse.agent import conventions as cv
from ragpulse.collector.core.model import RagTrace, Span
from ragpulse.collector.ingest.assemble import Assembler
from ragpulse.collector.ingest.build import build_trace
from ragpulse.collector.ingest.readable import spans_from_readable
from ragpulse.collector.judge import get_judge
from ragpulse.collector.storage.clickhouse import Storage, schema_statements

FOLLOW_UP = "And can we delete them sooner?"
HISTORY = [("user", "How long are transaction logs kept?"), ("assistant", "They are kept for five years.")]
REWRITTEN = "Can transaction logs be deleted before the five years are over?"
C1 = ("C1", "Transaction logs are kept for five years.")
C2 = (
    "C2",
    "Deleting transaction logs before the retention period ends requires releasing any legal hold on them.",
)
ANSWER = (
    "Transaction logs are kept for five years [1]. Deleting them early requires releasing any legal hold [2]."
)
QUERIES = ("transaction log retention period", "delete transaction logs early")


def _documents(prefix: str, docs: list[tuple[str, str]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, (cid, content) in enumerate(docs):
        out[cv.document_key(prefix, i, "id")] = cid
        out[cv.document_key(prefix, i, "content")] = content
    return out


def _flat_messages(messages: list[tuple[str, str]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, (role, content) in enumerate(messages):
        out[cv.message_key(cv.LLM_INPUT_MESSAGES, i, cv.MESSAGE_ROLE)] = role
        out[cv.message_key(cv.LLM_INPUT_MESSAGES, i, cv.MESSAGE_CONTENT)] = content
    return out


def _genai_messages(messages: list[tuple[str, str]]) -> str:
    return json.dumps(
        [
            {cv.GEN_AI_ROLE: role, cv.GEN_AI_PARTS: [{cv.PART_TYPE: cv.PART_TEXT, cv.GEN_AI_CONTENT: text}]}
            for role, text in messages
        ]
    )


def issue_trace(tracer: Any, given: list[str] | None = None) -> None:
    """The issue's agentic follow-up as OpenInference instrumentation writes it: a CHAIN root
    (the user's turn as input, the history and the turn as its input messages), a generation
    rewriting the follow-up, two retrievals of one chunk each, and the answering generation
    (``given``: the chunk ids it was given, as ``rag.generation.documents``)."""
    root_attrs = {cv.SPAN_KIND: cv.KIND_CHAIN, cv.INPUT_VALUE: FOLLOW_UP, cv.OUTPUT_VALUE: ANSWER}
    root_attrs.update(_flat_messages([*HISTORY, ("user", FOLLOW_UP)]))
    with tracer.start_as_current_span("chat", attributes=root_attrs):
        rewrite = {cv.SPAN_KIND: cv.KIND_LLM, cv.LLM_MODEL_NAME: "m", cv.OUTPUT_VALUE: REWRITTEN}
        with tracer.start_as_current_span("rewrite", attributes=rewrite):
            pass
        for query, doc in zip(QUERIES, (C1, C2), strict=True):
            attrs = {cv.SPAN_KIND: cv.KIND_RETRIEVER, cv.INPUT_VALUE: query}
            attrs.update(_documents(cv.RETRIEVAL_DOCUMENTS, [doc]))
            with tracer.start_as_current_span("retrieve", attributes=attrs):
                pass
        answer = {cv.SPAN_KIND: cv.KIND_LLM, cv.LLM_MODEL_NAME: "m", cv.OUTPUT_VALUE: ANSWER}
        for i, cid in enumerate(given or []):
            answer[cv.document_key(cv.GENERATION_DOCUMENTS, i, "id")] = cid
        with tracer.start_as_current_span("answer", attributes=answer):
            pass


@contextmanager
def sdk_spans() -> Iterator[tuple[Any, InMemorySpanExporter]]:
    """A tracer whose finished spans an in-memory exporter keeps."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "app"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    try:
        yield provider.get_tracer("test"), memory
    finally:
        provider.shutdown()


def built(make: Any) -> RagTrace:
    """The trace ``make(tracer)`` writes, built as the collector builds it."""
    with sdk_spans() as (tracer, memory):
        make(tracer)
        spans = spans_from_readable(memory.get_finished_spans())
    return build_trace(spans[0].trace_id, spans)


# -- the issue's case through OTLP/HTTP -------------------------------------------------------

_STORED = (
    "query, chunk_ids, chunk_queries, chunk_source_types, conversation_roles, conversation_contents, "
    "citation_doc_ids, citation_markers, complete"
)


def test_the_issue_case_through_otlp_http_is_stored_with_its_conversation_and_judged_healthy(
    tmp_path: Path,
) -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    from tests.services import collect_no_kafka, free_port

    port = free_port()
    cfg = {
        "storage": {"dsn": f"chdb://{tmp_path / 'db'}"}, "metrics": {"port": 0},
        "receiver": {"port": port}, "judge": {"enabled": True, "judge": "local"}, "sampling": {"rate": 1.0},
    }  # fmt: skip
    with collect_no_kafka(cfg, tmp_path / "c.yaml", stop_s=30):
        provider = TracerProvider(resource=Resource.create({"service.name": "chat-app"}))
        # One request per finished span: the root's comes last, as a process ends it last.
        provider.add_span_processor(
            SimpleSpanProcessor(OTLPSpanExporter(f"http://127.0.0.1:{port}/v1/traces"))
        )
        issue_trace(provider.get_tracer("app"))
        provider.shutdown()  # every span posted and accepted; stopping the collector stores and judges
    st = Storage(f"chdb://{tmp_path / 'db'}")
    try:
        (row,) = st.query(f"SELECT {_STORED} FROM {{db}}.rag_traces FINAL")
        stored = dict(zip([c.strip() for c in _STORED.split(",")], row, strict=True))
        (judged,) = st.query(
            "SELECT faithfulness, citation_correctness, citation_completeness, answer_relevance, failure_mode, "
            "claims_total, claims_supported FROM {db}.rag_judgments FINAL"
        )
    finally:
        st.close()
    assert stored["query"] == FOLLOW_UP and stored["complete"] == 1
    assert stored["chunk_ids"] == ["C1", "C2"] and stored["chunk_queries"] == list(QUERIES)
    assert stored["chunk_source_types"] == ["retrieval", "retrieval"]
    assert list(zip(stored["conversation_roles"], stored["conversation_contents"], strict=True)) == HISTORY
    assert stored["citation_doc_ids"] == ["C1", "C2"] and stored["citation_markers"] == ["[1]", "[2]"]
    faith, correct, complete, relevance, mode, total, supported = judged
    assert (faith, correct, complete, relevance) == (1.0, 1.0, 1.0, 1.0)
    assert mode == "healthy" and total == supported == 2


def test_markers_resolve_against_the_chunks_the_writing_generation_was_given_in_its_order() -> None:
    t = built(lambda tracer: issue_trace(tracer, given=["C2", "C1"]))
    assert [(c.doc_id, c.marker) for c in t.citations] == [("C2", "[1]"), ("C1", "[2]")]
    t = built(issue_trace)  # not recorded: all chunks of the trace in retrieval order
    assert [(c.doc_id, c.marker) for c in t.citations] == [("C1", "[1]"), ("C2", "[2]")]


def test_the_judge_reads_the_follow_up_through_its_conversation() -> None:
    message = built(issue_trace).judge_message()
    assert message["conversation"] == [{"role": r, "content": c} for r, c in HISTORY]
    assert [(c["id"], c["source_type"], c["query"]) for c in message["chunks"]] == [
        ("C1", "retrieval", QUERIES[0]),
        ("C2", "retrieval", QUERIES[1]),
    ]
    judge = get_judge("local")
    with_history = judge.judge(message)
    alone = judge.judge({**message, "conversation": []})
    assert with_history["answer_relevance"] == 1.0 and with_history["failure_mode"] == "healthy"
    # Without the conversation "delete them sooner" says nothing about how long logs are kept.
    assert alone["answer_relevance"] == 0.5 and alone["failure_mode"] == "generation"
    for out in (with_history, alone):
        assert [c["verdict"] for c in out["claims"]] == ["supported", "supported"]
        assert out["citation_correctness"] == out["citation_completeness"] == 1.0


# -- third-party agent spans -------------------------------------------------------------------

BALANCE = {"account_id": "ACC-7", "balance": 1520.33, "currency": "EUR"}
BALANCE_QUESTION = "What is the balance of account ACC-7?"
BALANCE_ANSWER = "The balance of account ACC-7 is 1,520.33 EUR."


def genai_agent(tracer: Any, with_tool: bool = True) -> None:
    """An agent as the OTel GenAI conventions write it: ``invoke_agent`` around a chat call that
    asks for a tool, the ``execute_tool`` call, and the chat call that answers (its input
    messages: the earlier turns, the user's turn, the tool call and its result)."""
    history = [("user", "Hi, I need help with my accounts."), ("assistant", "Sure, which account?")]
    agent = {cv.GEN_AI_OPERATION: cv.OP_INVOKE_AGENT, cv.GEN_AI_AGENT_NAME: "banker"}
    with tracer.start_as_current_span(f"{cv.OP_INVOKE_AGENT} banker", attributes=agent):
        first = {cv.GEN_AI_OPERATION: cv.OP_CHAT, cv.GEN_AI_REQUEST_MODEL: "m",
                 cv.GEN_AI_INPUT_MESSAGES: _genai_messages([*history, ("user", BALANCE_QUESTION)])}  # fmt: skip
        with tracer.start_as_current_span("chat m", attributes=first):
            pass
        if with_tool:
            call = {cv.GEN_AI_OPERATION: cv.OP_EXECUTE_TOOL, cv.GEN_AI_TOOL_NAME: "get_balance",
                    cv.GEN_AI_TOOL_CALL_ID: "call_1", cv.GEN_AI_TOOL_CALL_ARGUMENTS: json.dumps({"account_id": "ACC-7"}),
                    cv.GEN_AI_TOOL_CALL_RESULT: json.dumps(BALANCE)}  # fmt: skip
            with tracer.start_as_current_span(f"{cv.OP_EXECUTE_TOOL} get_balance", attributes=call):
                pass
        messages = json.loads(_genai_messages([*history, ("user", BALANCE_QUESTION)]))
        messages.append({cv.GEN_AI_ROLE: cv.ROLE_TOOL, cv.GEN_AI_PARTS: [
            {cv.PART_TYPE: cv.PART_TOOL_CALL_RESPONSE, cv.PART_ID: "call_1", cv.PART_RESPONSE: BALANCE}]})  # fmt: skip
        final = {
            cv.GEN_AI_OPERATION: cv.OP_CHAT,
            cv.GEN_AI_REQUEST_MODEL: "m",
            cv.GEN_AI_INPUT_MESSAGES: json.dumps(messages),
            cv.GEN_AI_OUTPUT_MESSAGES: _genai_messages([("assistant", BALANCE_ANSWER)]),
        }
        with tracer.start_as_current_span("chat m", attributes=final):
            pass


def test_a_genai_agent_s_tool_result_is_evidence_and_its_history_the_conversation() -> None:
    t = built(genai_agent)
    assert t.source == "gen_ai" and t.query == BALANCE_QUESTION and t.answer == BALANCE_ANSWER
    (tool,) = t.chunks
    assert (tool.id, tool.source_type, tool.tool) == ("call_1", "tool", "get_balance")
    assert json.loads(tool.content) == BALANCE and json.loads(tool.query) == {"account_id": "ACC-7"}
    assert [(m.role, m.content) for m in t.conversation] == [
        ("user", "Hi, I need help with my accounts."),
        ("assistant", "Sure, which account?"),
    ]
    out = get_judge("local").judge(t.judge_message())
    (claim,) = out["claims"]
    assert claim["verdict"] == "supported" and claim["supporting_chunk_ids"] == ["call_1"]
    assert out["failure_mode"] == "healthy"


def test_the_same_answer_without_the_tool_span_is_unsupported() -> None:
    t = built(lambda tracer: genai_agent(tracer, with_tool=False))
    assert t.chunks == []
    out = get_judge("local").judge(t.judge_message())
    (claim,) = out["claims"]
    assert claim["verdict"] == "unsupported" and out["response_verdict"] == "hallucinated"


def openinference_agent(tracer: Any) -> None:
    """An agent as OpenInference writes it: an AGENT root, a TOOL span wrapping a RETRIEVER (a
    retriever exposed as a tool), a TOOL span of its own, and the LLM span."""
    root = {cv.SPAN_KIND: cv.KIND_AGENT, cv.INPUT_VALUE: FOLLOW_UP, cv.OUTPUT_VALUE: ANSWER}
    with tracer.start_as_current_span("agent", attributes=root):
        wrapper = {cv.SPAN_KIND: cv.KIND_TOOL, cv.TOOL_NAME: "search_policies", cv.INPUT_VALUE: QUERIES[0],
                   cv.OUTPUT_VALUE: C1[1]}  # fmt: skip
        with tracer.start_as_current_span("search_policies", attributes=wrapper):
            attrs = {cv.SPAN_KIND: cv.KIND_RETRIEVER, cv.INPUT_VALUE: QUERIES[0]}
            attrs.update(_documents(cv.RETRIEVAL_DOCUMENTS, [C1]))
            with tracer.start_as_current_span("retrieve", attributes=attrs):
                pass
        tool = {cv.SPAN_KIND: cv.KIND_TOOL, cv.TOOL_NAME: "holds_for", cv.INPUT_VALUE: '{"log": "transactions"}',
                cv.OUTPUT_VALUE: "No legal hold is active on transaction logs."}  # fmt: skip
        with tracer.start_as_current_span("holds_for", attributes=tool):
            pass
        llm = {cv.SPAN_KIND: cv.KIND_LLM, cv.LLM_MODEL_NAME: "m", cv.OUTPUT_VALUE: ANSWER}
        llm.update(_flat_messages([("system", "Answer from the context."), *HISTORY, ("user", FOLLOW_UP)]))
        with tracer.start_as_current_span("llm", attributes=llm):
            pass


def test_openinference_agent_tool_and_messages_map() -> None:
    t = built(openinference_agent)
    assert t.source == "openinference" and t.query == FOLLOW_UP
    assert [(c.id, c.source_type, c.tool, c.query) for c in t.chunks] == [
        ("C1", "retrieval", "", QUERIES[0]),  # the wrapping tool adds no copy of its retrieval
        ("holds_for#1", "tool", "holds_for", '{"log": "transactions"}'),
    ]
    # The LLM's messages before the user's turn, the system prompt left out.
    assert [(m.role, m.content) for m in t.conversation] == HISTORY
    # Markers count through the retrieved chunks only: [2] names no retrieved chunk.
    assert [(c.doc_id, c.marker) for c in t.citations] == [("C1", "[1]"), ("2", "[2]")]


def test_deprecated_genai_prompts_give_the_conversation_and_retrieval_queries_their_chunks() -> None:
    def make(tracer: Any) -> None:
        root = {cv.GEN_AI_OPERATION: cv.OP_INVOKE_AGENT}
        with tracer.start_as_current_span("workflow", attributes=root):
            docs = json.dumps([{"id": "C1", "content": C1[1], "score": 0.9}])
            retrieval = {cv.GEN_AI_OPERATION: cv.OP_RETRIEVAL, cv.GEN_AI_RETRIEVAL_QUERY: REWRITTEN,
                         cv.GEN_AI_RETRIEVAL_DOCUMENTS: docs}  # fmt: skip
            with tracer.start_as_current_span("retrieval", attributes=retrieval):
                pass
            llm = {cv.GEN_AI_SYSTEM: "openai", cv.GEN_AI_COMPLETION_CONTENT: ANSWER}
            for i, (role, text) in enumerate([*HISTORY, ("user", FOLLOW_UP)]):
                llm[f"{cv.GEN_AI_PROMPT}{i}.{cv.GEN_AI_ROLE}"] = role
                llm[f"{cv.GEN_AI_PROMPT}{i}.{cv.GEN_AI_CONTENT}"] = text
            with tracer.start_as_current_span("openai.chat", attributes=llm):
                pass

    t = built(make)
    assert t.query == REWRITTEN  # no root input: the first retrieval's query, as before
    assert [(c.id, c.query) for c in t.chunks] == [("C1", REWRITTEN)]
    assert [(m.role, m.content) for m in t.conversation] == HISTORY


def test_a_reranked_chunk_keeps_the_query_of_the_retrieval_that_fetched_it() -> None:
    def make(tracer: Any) -> None:
        with tracer.start_as_current_span(
            "rag", attributes={cv.SPAN_KIND: cv.KIND_CHAIN, cv.INPUT_VALUE: "q"}
        ):
            for query, doc in zip(QUERIES, (C1, C2), strict=True):
                attrs = {cv.SPAN_KIND: cv.KIND_RETRIEVER, cv.INPUT_VALUE: query}
                attrs.update(_documents(cv.RETRIEVAL_DOCUMENTS, [doc]))
                with tracer.start_as_current_span("retrieve", attributes=attrs):
                    pass
            rerank = {cv.SPAN_KIND: cv.KIND_RERANKER, cv.INPUT_VALUE: "reranked by"}
            rerank.update(_documents(cv.RERANKER_OUTPUT_DOCUMENTS, [C2, C1]))
            with tracer.start_as_current_span("rerank", attributes=rerank):
                pass
            attrs = {cv.SPAN_KIND: cv.KIND_RETRIEVER, cv.INPUT_VALUE: "after the reranker"}
            attrs.update(_documents(cv.RETRIEVAL_DOCUMENTS, [("C9", "Backups are encrypted.")]))
            with tracer.start_as_current_span("retrieve", attributes=attrs):
                pass

    t = built(make)
    assert [(c.id, c.query) for c in t.chunks] == [
        ("C2", QUERIES[1]),
        ("C1", QUERIES[0]),
        ("C9", "after the reranker"),
    ]

    def retrieve_then_rerank(tracer: Any) -> None:
        with tracer.start_as_current_span(
            "rag", attributes={cv.SPAN_KIND: cv.KIND_CHAIN, cv.INPUT_VALUE: "q"}
        ):
            attrs = {cv.SPAN_KIND: cv.KIND_RETRIEVER, cv.GEN_AI_RETRIEVAL_QUERY: REWRITTEN}
            attrs.update(_documents(cv.RETRIEVAL_DOCUMENTS, [C1, C2, ("C3", "Backups are encrypted.")]))
            with tracer.start_as_current_span("retrieve", attributes=attrs):
                pass
            rerank = {cv.SPAN_KIND: cv.KIND_RERANKER}
            rerank.update(_documents(cv.RERANKER_OUTPUT_DOCUMENTS, [C2, C1]))
            with tracer.start_as_current_span("rerank", attributes=rerank):
                pass

    t = built(retrieve_then_rerank)
    assert [(c.id, c.query) for c in t.chunks] == [("C2", REWRITTEN), ("C1", REWRITTEN)]


# -- assembly and storage -----------------------------------------------------------------------


def test_an_agent_trace_is_complete_when_its_root_arrives_however_many_steps_it_took() -> None:
    with sdk_spans() as (tracer, memory):
        genai_agent(tracer)  # no retrieval at all: two generations and a tool call
        spans = spans_from_readable(memory.get_finished_spans())
    asm = Assembler(timeout_s=60)
    *steps, root = spans  # in the order they ended: the root last
    for i, span in enumerate(steps):
        asm.add([span], (0, i), now=1.0)
        assert asm.pop_ready(now=1.0) == []
    asm.add([root], (0, len(steps)), now=1.0)
    (ready,) = asm.pop_ready(now=1.0)
    assert ready.complete and len(ready.spans) == len(spans)


def test_a_root_alone_does_not_complete_its_trace(tmp_path: Path) -> None:
    root = Span("ab" * 16, "01" * 8, "", "chat", 1, 9, 0, "svc", {cv.SPAN_KIND: cv.KIND_CHAIN}, [])
    asm = Assembler(timeout_s=60)
    asm.add([root], (0, 0), now=1.0)
    assert asm.pop_ready(now=1.0) == [] and len(asm) == 1


def test_schema_migration_adds_the_new_columns_to_an_older_table_idempotently(tmp_path: Path) -> None:
    new_columns = (
        "conversation_roles",
        "conversation_contents",
        "chunk_source_types",
        "chunk_tools",
        "chunk_queries",
    )
    statements = schema_statements("ragpulse", 0)
    table = next(
        s for s in statements if ".rag_traces" in s.split("(", 1)[0] and s.startswith("CREATE TABLE")
    )
    old = "\n".join(line for line in table.splitlines() if line.strip().split(" ")[0] not in new_columns)
    st = Storage(f"chdb://{tmp_path / 'db'}")
    try:
        st.command("CREATE DATABASE IF NOT EXISTS ragpulse")
        st.command(old)
        have = {r[0] for r in st.query("SELECT name FROM system.columns WHERE table = 'rag_traces'")}
        assert not have & set(new_columns)
        st.apply_schema()
        st.apply_schema()  # idempotent
        t = built(openinference_agent)
        st.insert_traces([t], "spans")
        (row,) = st.query(f"SELECT {', '.join(new_columns)} FROM {{db}}.rag_traces FINAL")
    finally:
        st.close()
    assert row == (["user", "assistant"], [c for _, c in HISTORY], ["retrieval", "tool"], ["", "holds_for"],
                   [QUERIES[0], '{"log": "transactions"}'])  # fmt: skip
