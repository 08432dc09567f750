"""Real agent-framework instrumentation -> OTLP/HTTP -> the collector: every piece of evidence in place.

A LangGraph agent (a model node, a ToolNode holding a retriever exposed as a tool and an
account-balance tool, a checkpointer keeping the conversation in the graph's messages state)
traced by OpenInference's and by OpenLLMetry's LangChain instrumentor, and an OpenAI Agents SDK
agent with the same two tools traced by OpenInference's Agents instrumentor (the versions pinned
in pyproject.toml's ``dev`` extra). The models are scripted: langchain_core's
FakeMessagesListChatModel, and for the Agents SDK a ``Model`` answering scripted chat-completions
messages, traced as the SDK's own chat-completions model traces a call. Nothing leaves the machine.

One conversation of three turns: a policy question the model searches for under its own query
(answer citing [1]), a follow-up the balance tool answers, and a follow-up the model answers with
no tool at all. Each trace goes through the OTel SDK's OTLP/HTTP exporter into the embedded
collector's receiver. Stored must be the user's turn, the answer, every retrieved chunk with the
query the model searched for, each tool result as evidence (``source_type`` tool, its name, call
id and arguments), the conversation before the turn as the application held it, and the session;
the local judge must find the first two answers supported by that evidence (the citation by the
chunk it names, the balance by the tool's result) and the third's claim by nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .interop import CORPUS, RIGHT, SCORES, Pipeline, openllmetry_langchain

pytest.importorskip("langgraph")

QUESTIONS = [
    "How long are transaction logs kept?",
    "And what is the balance of my account ACC-7?",
    "Can I withdraw all of it in cash today?",
]
SEARCH = "transaction log retention"  # the model's own query, not the user's words
BALANCE = {"account_id": "ACC-7", "balance": 1520.33, "currency": "EUR"}
ANSWERS = [
    RIGHT,  # "Transaction logs are kept for five years after the account closes [1]."
    "Your account ACC-7 has a balance of 1520.33 EUR.",
    "Yes, every branch pays out cash withdrawals of up to 10,000 EUR on the same day.",
]
SESSION = "chat-7"
_STORED = (
    "query, answer, chunk_ids, chunk_contents, chunk_scores, chunk_source_types, chunk_tools, chunk_queries, "
    "conversation_roles, conversation_contents, citation_doc_ids, citation_markers, session_id, source, complete"
)
_JUDGED = "failure_mode, claims_total, claims_supported, citation_correctness, error"


@pytest.fixture(scope="module")
def pipe(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pipeline]:
    with Pipeline(Path(tmp_path_factory.mktemp("interop-agents")) / "db", otlp=True) as pipeline:
        yield pipeline


def _claims(pipe: Pipeline, trace_id: str) -> list[tuple[str, list[str]]]:
    """(verdict, supporting chunk ids) of each judged claim of ``trace_id``, in claim order."""
    rows = pipe.collector.storage.query(
        "SELECT verdict, supporting_chunk_ids FROM {db}.rag_claims FINAL WHERE trace_id = %(t)s "
        "ORDER BY claim_index",
        {"t": trace_id},
    )
    return [(verdict, list(ids)) for verdict, ids in rows]


def _check_turns(
    pipe: Pipeline,
    source: str,
    retrieved: dict[str, list[Any]],
    conversations: list[list[tuple[str, str]]],
    balance_call: tuple[str, str],
) -> None:
    """The last three traces are the three turns, stored and judged as the module docstring says.
    ``retrieved``: ids, contents and scores of the chunks the search returned (app side);
    ``conversations``: each turn's messages before it, as the application held them;
    ``balance_call``: (chunk id, the arguments as the instrumentation recorded them)."""
    pipe.flush()
    traces = pipe.root_trace_ids()[-3:]
    rows = [pipe.stored(t, _STORED) for t in traces]
    for row, question, answer, before in zip(rows, QUESTIONS, ANSWERS, conversations, strict=True):
        assert (row["source"], row["complete"], row["session_id"]) == (source, 1, SESSION)
        assert (row["query"], row["answer"]) == (question, answer)
        assert list(zip(row["conversation_roles"], row["conversation_contents"], strict=True)) == before
    first, second, third = rows
    n = len(retrieved["ids"])
    assert first["chunk_ids"] == retrieved["ids"] and first["chunk_contents"] == retrieved["contents"]
    assert first["chunk_scores"] == retrieved["scores"]
    assert first["chunk_source_types"] == ["retrieval"] * n and first["chunk_queries"] == [SEARCH] * n
    assert list(zip(first["citation_doc_ids"], first["citation_markers"], strict=True)) == [
        (retrieved["ids"][0], "[1]")
    ]
    call_id, arguments = balance_call
    assert second["chunk_ids"] == [call_id] and json.loads(second["chunk_contents"][0]) == BALANCE
    assert (second["chunk_source_types"], second["chunk_tools"]) == (["tool"], ["get_balance"])
    assert second["chunk_queries"] == [arguments]
    assert third["chunk_ids"] == []

    judged = [pipe.judgment(t, _JUDGED) for t in traces]
    assert all(j["error"] == "" for j in judged), judged
    assert judged[0]["failure_mode"] == "healthy" and judged[0]["citation_correctness"] == 1.0
    assert _claims(pipe, traces[0]) == [("supported", [retrieved["ids"][0]])]
    assert judged[1]["failure_mode"] == "healthy"
    assert _claims(pipe, traces[1]) == [("supported", [call_id])]
    assert judged[2]["claims_total"] > 0 and judged[2]["claims_supported"] == 0, judged[2]
    assert judged[2]["failure_mode"] != "healthy"


# -- LangGraph ---------------------------------------------------------------------------------
def _langgraph_agent(checkpointer: bool = True) -> Any:
    """A LangGraph agent over CORPUS (LangChain Documents: no ids, no scores) with a balance tool
    and (``checkpointer``) a checkpointer, its model scripted to answer the three turns."""
    from langchain_core.documents import Document
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.tools import create_retriever_tool, tool
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    class PolicyRetriever(BaseRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager: Any = None) -> list[Document]:
            return [Document(page_content=text, metadata=dict(meta)) for text, meta in CORPUS]

    @tool
    def get_balance(account_id: str) -> str:
        """The current balance of a bank account."""
        return json.dumps({**BALANCE, "account_id": account_id})

    search = create_retriever_tool(PolicyRetriever(), "search_policies", "Search the bank's policies.")
    model = FakeMessagesListChatModel(
        responses=[
            AIMessage(
                "", tool_calls=[{"name": "search_policies", "args": {"query": SEARCH}, "id": "call_1"}]
            ),
            AIMessage(ANSWERS[0]),
            AIMessage(
                "", tool_calls=[{"name": "get_balance", "args": {"account_id": "ACC-7"}, "id": "call_2"}]
            ),
            AIMessage(ANSWERS[1]),
            AIMessage(ANSWERS[2]),
        ]
    )

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode([search, get_balance]))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=InMemorySaver() if checkpointer else None)


_LANGCHAIN_ROLES = {"human": "user", "ai": "assistant", "tool": "tool"}


def _run_langgraph() -> list[list[tuple[str, str]]]:
    """The three turns through one thread; returns each turn's messages before it (app side)."""
    from langchain_core.messages import HumanMessage

    app = _langgraph_agent()
    config = {"configurable": {"thread_id": SESSION}}
    conversations: list[list[tuple[str, str]]] = []
    held: list[Any] = []
    for question, answer in zip(QUESTIONS, ANSWERS, strict=True):
        conversations.append([(_LANGCHAIN_ROLES[m.type], m.content) for m in held])
        held = app.invoke({"messages": [HumanMessage(question)]}, config)["messages"]
        assert held[-1].content == answer
    return conversations


# LangChain Documents carry no id or score: the chunks are their 1-based positions.
_LANGCHAIN_RETRIEVED = {"ids": ["1", "2", "3"], "contents": [c for c, _ in CORPUS], "scores": [None] * 3}


def test_langgraph_openinference(pipe: Pipeline) -> None:
    """OpenInference: a CHAIN root whose input is the graph's state, AGENT nodes, a TOOL span
    around the RETRIEVER, the balance tool's result as a serialized ToolMessage."""
    from openinference.instrumentation.langchain import LangChainInstrumentor

    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=pipe.provider)
    try:
        conversations = _run_langgraph()
    finally:
        instrumentor.uninstrument()
    # OpenInference records a single-argument tool's input as the argument's value.
    _check_turns(pipe, "openinference", _LANGCHAIN_RETRIEVED, conversations, ("call_2", "ACC-7"))


def test_langgraph_openllmetry(pipe: Pipeline) -> None:
    """OpenLLMetry: an invoke_agent root without input around the workflow span that has it,
    execute_tool spans, vector_db_retrieve, gen_ai.input.messages on the chat spans."""
    with openllmetry_langchain(pipe.provider):
        conversations = _run_langgraph()
    # OpenLLMetry records LangChain's input_str: the arguments as Python writes a dict.
    _check_turns(
        pipe, "openllmetry", _LANGCHAIN_RETRIEVED, conversations, ("call_2", "{'account_id': 'ACC-7'}")
    )


def test_langgraph_openinference_with_the_history_the_application_passes(pipe: Pipeline) -> None:
    """No checkpointer: the application passes the conversation in each call (OpenAI-style dicts,
    then (role, text) pairs), as many chat backends do. OpenInference writes the root's input
    messages from the first message only (a dict's without its content), so the conversation is
    the one the generation was given, and the query the input's last user message."""
    from openinference.instrumentation.langchain import LangChainInstrumentor

    app = _langgraph_agent(checkpointer=False)
    config = {"configurable": {"thread_id": SESSION}}
    inputs = [
        [{"role": "user", "content": QUESTIONS[0]}],
        [("user", QUESTIONS[0]), ("assistant", ANSWERS[0]), ("user", QUESTIONS[1])],
    ]
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=pipe.provider)
    try:
        for messages, answer in zip(inputs, ANSWERS, strict=False):
            assert app.invoke({"messages": messages}, config)["messages"][-1].content == answer
    finally:
        instrumentor.uninstrument()
    pipe.flush()
    first, second = (pipe.stored(t, _STORED) for t in pipe.root_trace_ids()[-2:])
    assert (first["query"], first["answer"], first["conversation_roles"]) == (QUESTIONS[0], ANSWERS[0], [])
    assert first["chunk_ids"] == _LANGCHAIN_RETRIEVED["ids"] and first["chunk_queries"] == [SEARCH] * 3
    assert (second["query"], second["answer"]) == (QUESTIONS[1], ANSWERS[1])
    conversation = list(zip(second["conversation_roles"], second["conversation_contents"], strict=True))
    assert conversation == [("user", QUESTIONS[0]), ("assistant", ANSWERS[0])]
    assert (second["chunk_ids"], second["chunk_source_types"]) == (["call_2"], ["tool"])
    for trace_id in pipe.root_trace_ids()[-2:]:
        assert pipe.judgment(trace_id, _JUDGED)["failure_mode"] == "healthy"


# -- OpenAI Agents SDK -------------------------------------------------------------------------
def _scripted_model(replies: list[dict[str, Any]]) -> Any:
    """An Agents SDK ``Model`` whose API call is replaced by ``replies`` (chat-completions
    assistant messages, one per call). Each call is traced as the SDK's chat-completions model
    traces it: a generation span with the messages sent as input and the reply as output."""
    from agents import ModelResponse, Usage, generation_span
    from agents.models.chatcmpl_converter import Converter
    from agents.models.interface import Model
    from openai.types.chat import ChatCompletionMessage

    class ScriptedChatCompletions(Model):
        def __init__(self) -> None:
            self.sent: list[list[dict[str, Any]]] = []  # the messages of each call

        async def get_response(
            self, system_instructions: str | None, input: Any, model_settings: Any, tools: Any,
            output_schema: Any, handoffs: Any, tracing: Any, **kwargs: Any,
        ) -> Any:  # fmt: skip
            messages = [
                {"role": "system", "content": system_instructions},
                *Converter.items_to_messages(input),
            ]
            self.sent.append(messages)
            with generation_span(model="scripted", disabled=tracing.is_disabled()) as span:
                reply = ChatCompletionMessage.model_validate(replies.pop(0))
                if tracing.include_data():
                    span.span_data.input = messages
                    span.span_data.output = [reply.model_dump()]
                return ModelResponse(
                    output=Converter.message_to_output_items(reply), usage=Usage(), response_id=None
                )

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("the test agent does not stream")

    return ScriptedChatCompletions()


def _tool_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def test_openai_agents_openinference(pipe: Pipeline) -> None:
    """OpenInference's Agents instrumentor: an AGENT root with no input or output, the search
    tool recorded as a RETRIEVER (its ``tool_span_kinds``), the balance tool as a TOOL span,
    the session through OpenInference's ``using_session``, the SDK's session keeping the turns."""
    pytest.importorskip("agents")
    from agents import Agent, Runner, SQLiteSession, function_tool
    from openinference.instrumentation import using_session
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    documents = [
        {"id": f"{meta['source']}#p{meta['page']}", "content": text, "score": score, **meta}
        for (text, meta), score in zip(CORPUS, SCORES, strict=True)
    ]

    @function_tool
    def search_policies(query: str) -> list[dict[str, Any]]:
        """Search the bank's policies."""
        return documents

    @function_tool
    def get_balance(account_id: str) -> dict[str, Any]:
        """The current balance of a bank account."""
        return {**BALANCE, "account_id": account_id}

    model = _scripted_model(
        [
            _tool_call("call_1", "search_policies", {"query": SEARCH}),
            {"role": "assistant", "content": ANSWERS[0]},
            _tool_call("call_2", "get_balance", {"account_id": "ACC-7"}),
            {"role": "assistant", "content": ANSWERS[1]},
            {"role": "assistant", "content": ANSWERS[2]},
        ]
    )
    agent = Agent(
        name="banker",
        instructions="Answer from the tools.",
        model=model,
        tools=[search_policies, get_balance],
    )
    instrumentor = OpenAIAgentsInstrumentor()
    instrumentor.instrument(tracer_provider=pipe.provider, tool_span_kinds={"search_policies": "RETRIEVER"})
    session = SQLiteSession(SESSION)
    conversations = []
    try:
        with using_session(SESSION):
            for question, answer in zip(QUESTIONS, ANSWERS, strict=True):
                calls = len(model.sent)
                assert Runner.run_sync(agent, question, session=session).final_output == answer
                # What the model was sent first this turn, less the instructions and the turn itself.
                *before, turn = model.sent[calls][1:]
                assert turn == {"role": "user", "content": question}
                conversations.append([(m["role"], m.get("content") or "") for m in before])
    finally:
        instrumentor.uninstrument()
    retrieved = {
        "ids": [d["id"] for d in documents],
        "contents": [d["content"] for d in documents],
        "scores": list(SCORES),
    }
    # OpenInference records no call id on a function span: the chunk is the tool's first call.
    _check_turns(
        pipe, "openinference", retrieved, conversations, ("get_balance#1", '{"account_id": "ACC-7"}')
    )
