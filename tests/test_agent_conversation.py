"""The conversation before the current turn, on the root span in both conventions (issue 43).

``gen_ai.input.messages`` (OTel GenAI JSON: role + parts) and ``llm.input_messages.<i>.message.*``
(OpenInference) carry the earlier turns, oldest first; ``input.value`` stays the current turn.
Histories come as arguments (``history``/``messages``/``chat_history``/``conversation``), as
``conversation=`` on the decorator, or through ``set_conversation()``; messages as OpenAI-style
dicts, real LangChain and LlamaIndex message objects, ``(role, text)`` pairs. The same limits
and redaction as every other text apply, and nothing the history holds reaches the application
as an error.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from llama_index.core.llms import ChatMessage, MessageRole
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from ragpulse.agent import (
    configure,
    current_rag,
    flush,
    set_conversation,
    shutdown,
    stats,
    trace_rag,
)
from ragpulse.agent.conventions import (
    GEN_AI_INPUT_MESSAGES,
    INPUT_VALUE,
    LLM_INPUT_MESSAGES,
    MESSAGE_CONTENT,
    MESSAGE_ROLE,
    MESSAGE_TOOL_CALL_ID,
    OUTPUT_VALUE,
    RAG_CONVERSATION_COUNT,
    RAG_TRUNCATED_FIELDS,
    TOOL_CALL_FUNCTION_ARGUMENTS,
    TOOL_CALL_FUNCTION_NAME,
    TOOL_CALL_ID,
    message_key,
    tool_call_key,
)

from tests.agent_memory import under_app_provider

TURNS = [
    {"role": "user", "content": "How long do we keep transaction logs?"},
    {"role": "assistant", "content": "Five years [1]."},
]
FOLLOW_UP = "And can we delete them sooner?"


def text_of(message: dict) -> str:
    return "".join(p.get("content", "") for p in message["parts"] if p["type"] == "text")


def conversation(root) -> list[tuple[str, str]]:
    """(role, text) of each message of gen_ai.input.messages, checked against the flattened form."""
    messages = json.loads(root.attributes[GEN_AI_INPUT_MESSAGES])
    for i, m in enumerate(messages):
        assert root.attributes[message_key(LLM_INPUT_MESSAGES, i, MESSAGE_ROLE)] == m["role"]
    assert message_key(LLM_INPUT_MESSAGES, len(messages), MESSAGE_ROLE) not in root.attributes
    return [(m["role"], text_of(m)) for m in messages]


def roots(exporter: InMemorySpanExporter) -> dict[str, object]:
    flush()
    return {s.name: s for s in exporter.get_finished_spans() if s.attributes.get("rag.root")}


@pytest.mark.parametrize("arg", ["history", "messages", "chat_history", "conversation"])
def test_a_history_argument_is_the_conversation_and_the_query_the_current_turn(mem, arg):
    ns: dict = {}
    exec(f"def answer(question, {arg}):\n    return 'Only after the hold is released.'", ns)
    traced = trace_rag(name=f"by_{arg}")(ns["answer"])
    assert traced(FOLLOW_UP, TURNS) == "Only after the hold is released."
    root = roots(mem)[f"by_{arg}"]
    assert root.attributes[INPUT_VALUE] == FOLLOW_UP
    assert conversation(root) == [("user", TURNS[0]["content"]), ("assistant", TURNS[1]["content"])]
    assert root.attributes[RAG_CONVERSATION_COUNT] == 2
    assert root.attributes[message_key(LLM_INPUT_MESSAGES, 1, MESSAGE_CONTENT)] == "Five years [1]."


def test_a_message_list_as_the_only_argument_has_its_last_user_message_as_the_turn(mem):
    @trace_rag
    def chat(messages: list) -> str:
        messages.append({"role": "assistant", "content": "appended after the call returned"})
        return "Only after the hold is released."

    chat(
        [
            {"role": "system", "content": "Answer from the policy."},
            *TURNS,
            {"role": "user", "content": FOLLOW_UP},
        ]
    )
    root = roots(mem)["chat"]
    assert root.attributes[INPUT_VALUE] == FOLLOW_UP
    assert conversation(root) == [
        ("system", "Answer from the policy."),
        ("user", TURNS[0]["content"]),
        ("assistant", TURNS[1]["content"]),
    ]
    assert root.attributes[RAG_CONVERSATION_COUNT] == 3


def test_a_history_that_ends_with_the_current_question_leaves_it_out(mem):
    @trace_rag
    def answer(question: str, chat_history: list) -> str:
        return "Only after the hold is released."

    answer(FOLLOW_UP, [*TURNS, {"role": "user", "content": FOLLOW_UP + " "}])
    root = roots(mem)["answer"]
    assert [r for r, _ in conversation(root)] == ["user", "assistant"]
    assert root.attributes[RAG_CONVERSATION_COUNT] == 2


def test_explicit_conversation_on_the_decorator_the_block_and_set_conversation(mem):
    @trace_rag(name="fixed", conversation=TURNS)
    def fixed(question: str) -> str:
        return "a"

    @trace_rag(name="named", conversation_arg="turns")
    def named(question: str, turns: list, history: list) -> str:
        return "b"

    @trace_rag(name="inside")
    def inside(question: str) -> str:
        set_conversation([("human", "first question"), ("ai", "first answer")])
        return "c"

    fixed(FOLLOW_UP)
    named(FOLLOW_UP, TURNS[:1], TURNS)
    inside(FOLLOW_UP)
    with trace_rag("block", query=FOLLOW_UP, conversation=TURNS) as rag:
        rag.set_answer("d")
    with trace_rag("handle", query=FOLLOW_UP):
        current_rag().set_conversation(TURNS[1:])
    found = roots(mem)
    assert (
        conversation(found["fixed"])
        == conversation(found["block"])
        == [
            ("user", TURNS[0]["content"]),
            ("assistant", TURNS[1]["content"]),
        ]
    )
    assert conversation(found["named"]) == [("user", TURNS[0]["content"])]
    assert conversation(found["inside"]) == [("user", "first question"), ("assistant", "first answer")]
    assert conversation(found["handle"]) == [("assistant", TURNS[1]["content"])]
    set_conversation(TURNS)  # outside a RAG call: nothing happens


def test_langchain_and_llamaindex_messages_with_tool_calls(mem):
    @trace_rag
    def agentic(question: str, history: list) -> str:
        return "Your balance is 1,234.50."

    history = [
        SystemMessage(content="You are a bank assistant."),
        HumanMessage(content="What's my balance?"),
        AIMessage(content="", tool_calls=[{"name": "balance", "args": {"account": "A-1"}, "id": "call_1"}]),
        ToolMessage(content='{"balance": 1234.5}', tool_call_id="call_1"),
        AIMessage(content=[{"type": "text", "text": "It is 1,234.50."}]),
        ChatMessage(role=MessageRole.USER, content="And in euros?"),
        ChatMessage(role=MessageRole.ASSISTANT, content="About 1,140 euros."),
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_2", "type": "function", "function": {"name": "fx", "arguments": '{"to": "EUR"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_2", "content": "0.92"},
    ]
    agentic("Thanks, and my balance again?", history)
    root = roots(mem)["agentic"]
    messages = json.loads(root.attributes[GEN_AI_INPUT_MESSAGES])
    assert [m["role"] for m in messages] == [
        "system", "user", "assistant", "tool", "assistant", "user", "assistant", "assistant", "tool",
    ]  # fmt: skip
    assert messages[2]["parts"] == [
        {"type": "tool_call", "id": "call_1", "name": "balance", "arguments": {"account": "A-1"}}
    ]
    assert messages[3]["parts"] == [
        {"type": "tool_call_response", "id": "call_1", "response": '{"balance": 1234.5}'}
    ]
    assert text_of(messages[4]) == "It is 1,234.50." and text_of(messages[5]) == "And in euros?"
    assert messages[7]["parts"] == [
        {"type": "tool_call", "id": "call_2", "name": "fx", "arguments": {"to": "EUR"}}
    ]
    a = root.attributes
    assert a[tool_call_key(LLM_INPUT_MESSAGES, 2, 0, TOOL_CALL_FUNCTION_NAME)] == "balance"
    assert a[tool_call_key(LLM_INPUT_MESSAGES, 2, 0, TOOL_CALL_ID)] == "call_1"
    assert json.loads(a[tool_call_key(LLM_INPUT_MESSAGES, 2, 0, TOOL_CALL_FUNCTION_ARGUMENTS)]) == {
        "account": "A-1"
    }
    assert a[message_key(LLM_INPUT_MESSAGES, 3, MESSAGE_TOOL_CALL_ID)] == "call_1"
    assert a[message_key(LLM_INPUT_MESSAGES, 8, MESSAGE_CONTENT)] == "0.92"


def test_async_and_streamed_roots_record_the_conversation(mem):
    @trace_rag
    async def achat(question: str, history: list) -> str:
        await asyncio.sleep(0)
        return "async answer"

    @trace_rag
    def streamed(question: str, history: list):
        yield "streamed "
        yield "answer"

    @trace_rag
    async def astreamed(question: str, history: list):
        yield "async streamed"

    async def consume() -> str:
        return "".join([part async for part in astreamed(FOLLOW_UP, TURNS)])

    assert asyncio.run(achat(FOLLOW_UP, TURNS)) == "async answer"
    assert "".join(streamed(FOLLOW_UP, TURNS)) == "streamed answer"
    assert asyncio.run(consume()) == "async streamed"
    found = roots(mem)
    for name, answer in (
        ("achat", "async answer"),
        ("streamed", "streamed answer"),
        ("astreamed", "async streamed"),
    ):
        assert conversation(found[name]) == [
            ("user", TURNS[0]["content"]),
            ("assistant", TURNS[1]["content"]),
        ]
        assert found[name].attributes[OUTPUT_VALUE] == answer


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no text for you")

    __repr__ = __str__


def test_hostile_histories_never_reach_the_application(mem):
    cyclic: list = [{"role": "user", "content": "loop"}]
    cyclic.append(cyclic)
    cyclic_content: dict = {"k": 1}
    cyclic_content["self"] = cyclic_content

    @trace_rag
    def answer(question: str, history) -> str:
        return "fine"

    hostile = [
        [Unprintable(), {"role": Unprintable(), "content": "x"}, {"role": "user", "content": Unprintable()}],
        cyclic,
        [
            {"role": "user", "content": cyclic_content},
            {"role": "assistant", "content": [Unprintable(), {"type": "image_url"}]},
        ],
        [
            {
                "role": "assistant",
                "tool_calls": [{"function": {"name": Unprintable(), "arguments": "{not json"}}, 7, None],
            }
        ],
        iter([{"role": "user", "content": "an iterator is never consumed"}]),
        "a bare string history",
        {"role": "user", "content": "one message as a mapping"},
        None,
        42,
    ]
    before = stats()
    for history in hostile:
        assert answer(FOLLOW_UP, history) == "fine"
    flush()
    spans = [s for s in mem.get_finished_spans() if s.name == "answer"]
    assert len(spans) == len(hostile)  # every root span made it out
    after = stats()
    assert after["internal_errors"] == before["internal_errors"]
    assert after["dropped"]["internal_error"] == before["dropped"]["internal_error"]
    # what is not a message (no readable role, not a list) is left out and not counted
    assert [s.attributes.get(RAG_CONVERSATION_COUNT) for s in spans] == [
        1,
        1,
        2,
        1,
        None,
        None,
        1,
        None,
        None,
    ]
    first = json.loads(spans[0].attributes[GEN_AI_INPUT_MESSAGES])
    assert first == [{"role": "user", "parts": [{"type": "text", "content": "<Unprintable>"}]}]
    third = json.loads(spans[2].attributes[GEN_AI_INPUT_MESSAGES])
    assert "'k': 1, 'self': {...}" in text_of(third[0])  # a cycle: its str
    assert third[1]["parts"] == [{"type": "image_url"}]
    fourth = json.loads(spans[3].attributes[GEN_AI_INPUT_MESSAGES])
    assert fourth[0]["parts"] == [{"type": "tool_call", "name": "<Unprintable>", "arguments": "{not json"}]


def test_a_huge_history_is_cut_to_the_newest_messages_and_flagged():
    exporter = InMemorySpanExporter()
    configure(
        exporter=exporter,
        schedule_delay_ms=50,
        max_messages=6,
        max_conversation_chars=700,
        max_query_chars=300,
    )
    try:

        @trace_rag
        def answer(question: str, history: list) -> str:
            return "ok"

        many = [{"role": ("user", "assistant")[i % 2], "content": f"turn {i}"} for i in range(10_000)]
        answer(FOLLOW_UP, many)
        long = [{"role": "user", "content": f"{i} " + "x" * 5000} for i in range(3)]
        answer(FOLLOW_UP, long)
        flush()
        cut, wide = [s for s in exporter.get_finished_spans() if s.name == "answer"]
        assert cut.attributes[RAG_CONVERSATION_COUNT] == 10_000
        assert [text_of(m) for m in json.loads(cut.attributes[GEN_AI_INPUT_MESSAGES])] == [
            f"turn {i}" for i in range(9994, 10_000)
        ]
        assert "conversation" in cut.attributes[RAG_TRUNCATED_FIELDS]
        kept = json.loads(wide.attributes[GEN_AI_INPUT_MESSAGES])
        assert [text_of(m)[:2] for m in kept] == ["1 ", "2 "]  # 300 + 300 fit 700; three do not
        assert all(len(text_of(m)) == 300 for m in kept)
        assert set(wide.attributes[RAG_TRUNCATED_FIELDS]) == {"conversation", "conversation.content"}
    finally:
        shutdown()


def test_redaction_and_capture_content_apply_to_the_history():
    exporter = InMemorySpanExporter()
    configure(
        exporter=exporter, schedule_delay_ms=50, redact=True, redactor=lambda t: t.replace("Alice", "[NAME]")
    )
    try:

        @trace_rag
        def answer(question: str, history: list) -> str:
            return "ok"

        answer(
            FOLLOW_UP,
            [
                {"role": "user", "content": "I am Alice, mail me at alice@example.com"},
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": "c", "function": {"name": "mail", "arguments": '{"to": "alice@example.com"}'}}
                    ],
                },
                {"role": "tool", "tool_call_id": "c", "content": "sent with key sk-abcdefghijklmnopqrstuvwx"},
            ],
        )
        flush()
        (root,) = exporter.get_finished_spans()
        text = json.dumps(dict(root.attributes))
        assert "alice@example.com" not in text and "Alice" not in text and "sk-abcdefghij" not in text
        messages = json.loads(root.attributes[GEN_AI_INPUT_MESSAGES])
        assert text_of(messages[0]) == "I am [NAME], mail me at [REDACTED:EMAIL]"
        assert messages[1]["parts"][0]["arguments"] == {"to": "[REDACTED:EMAIL]"}
        assert messages[2]["parts"][0]["response"] == "sent with key [REDACTED:API_KEY]"
    finally:
        shutdown()
    exporter = InMemorySpanExporter()
    configure(exporter=exporter, schedule_delay_ms=50, capture_content=False)
    try:
        answer(FOLLOW_UP, TURNS)
        flush()
        (root,) = exporter.get_finished_spans()
        assert root.attributes[RAG_CONVERSATION_COUNT] == 2
        assert GEN_AI_INPUT_MESSAGES not in root.attributes and INPUT_VALUE not in root.attributes
        assert not any(k.startswith(LLM_INPUT_MESSAGES) for k in root.attributes)
    finally:
        shutdown()


def test_under_a_provider_with_few_attributes_the_json_form_is_kept(monkeypatch):
    monkeypatch.setenv("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", "20")
    monkeypatch.setenv("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "700")
    with under_app_provider(TracerProvider(span_limits=SpanLimits())) as (_provider, exporter):

        @trace_rag
        def answer(question: str, history: list) -> str:
            return "ok"

        history = [
            {"role": ("user", "assistant")[i % 2], "content": f"message number {i}"} for i in range(30)
        ]
        answer(FOLLOW_UP, history)
        flush()
        (root,) = exporter.get_finished_spans()
        assert root.attributes[INPUT_VALUE] == FOLLOW_UP and root.attributes["rag.root"] is True
        messages = json.loads(root.attributes[GEN_AI_INPUT_MESSAGES])  # whole messages, valid JSON
        assert 0 < len(messages) < 30 and text_of(messages[-1]) == "message number 29"
        assert not any(k.startswith(LLM_INPUT_MESSAGES) for k in root.attributes)
        assert root.dropped_attributes == 0
