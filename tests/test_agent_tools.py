"""``@tool`` and ``@agent_step``: OTel GenAI ``execute_tool`` / ``invoke_agent`` spans that are also
OpenInference ``TOOL`` / ``AGENT`` spans, with the same contract as the other decorators (issue 43).

Every callable kind (function, method, coroutine, generator, async generator) and the
with-statement forms; exceptions recorded and re-raised unchanged; arguments and results
under the limits and redaction; nothing odd in them reaches the application.
"""

from __future__ import annotations

import asyncio
import inspect
import json

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from ragpulse.agent import (
    agent_step,
    configure,
    flush,
    generation,
    retrieval,
    shutdown,
    stats,
    tool,
    trace_rag,
)

from tests.agent_memory import spans_by_name


@tool
def balance(account: str, currency: str = "USD", tool_call_id: str | None = None) -> dict:
    """Look up an account's balance.

    The second paragraph is not part of the description.
    """
    return {"account": account, "balance": 1234.5, "currency": currency}


def check_tool(span, name: str) -> dict:
    a = span.attributes
    assert span.name == f"execute_tool {name}"
    assert a["gen_ai.operation.name"] == "execute_tool" and a["openinference.span.kind"] == "TOOL"
    assert a["gen_ai.tool.name"] == a["tool.name"] == name
    assert a["input.value"] == a["gen_ai.tool.call.arguments"] and a["input.mime_type"] == "application/json"
    return a


def test_a_tool_call_span_in_both_conventions(mem):
    assert balance("A-1", tool_call_id="call_7") == {"account": "A-1", "balance": 1234.5, "currency": "USD"}
    assert inspect.signature(balance).parameters["currency"].default == "USD"
    assert balance.__doc__.startswith("Look up") and balance.__name__ == "balance"
    (span,) = spans_by_name(mem)["execute_tool balance"]
    a = check_tool(span, "balance")
    assert a["gen_ai.tool.call.id"] == "call_7"
    assert json.loads(a["gen_ai.tool.call.arguments"]) == {"account": "A-1"}  # the call id is not an argument
    assert json.loads(a["gen_ai.tool.call.result"]) == {
        "account": "A-1",
        "balance": 1234.5,
        "currency": "USD",
    }
    assert a["output.value"] == a["gen_ai.tool.call.result"] and a["output.mime_type"] == "application/json"
    assert a["gen_ai.tool.description"] == "Look up an account's balance."


def test_every_callable_kind_and_the_with_form(mem):
    class Bank:
        @tool(name="rate", description="FX rate", call_id_arg="cid")
        def rate(self, base: str, *others: str, cid: str = "", **options: object) -> str:
            return "0.92"

    @tool
    async def weather(city: str) -> str:
        await asyncio.sleep(0)
        return "rainy"

    @tool
    def pages(url: str):
        yield "<html>"
        yield "</html>"

    @tool
    async def rows(sql: str):
        yield {"id": 1}
        yield {"id": 2}

    async def consume() -> list:
        return [row async for row in rows("SELECT 1")]

    assert Bank().rate("USD", "EUR", "GBP", cid="c-9", precision=4) == "0.92"
    assert asyncio.run(weather("Paris")) == "rainy"
    assert list(pages("https://example.org")) == ["<html>", "</html>"]
    assert asyncio.run(consume()) == [{"id": 1}, {"id": 2}]
    with tool("lookup", arguments={"key": "k"}, call_id="c-1") as t:
        t.set_result("found")
    with tool("late") as t:
        t.set_arguments('{"q": 1}')
        t.set_call_id("c-2")
        t.set_result(["a", "b"])
    spans = spans_by_name(mem)
    rate = check_tool(spans["execute_tool rate"][0], "rate")
    assert json.loads(rate["input.value"]) == {"base": "USD", "others": ["EUR", "GBP"], "precision": 4}
    assert (
        rate["gen_ai.tool.call.id"] == "c-9"
        and rate["output.value"] == "0.92"
        and "output.mime_type" not in rate
    )
    assert rate["gen_ai.tool.description"] == "FX rate"
    assert check_tool(spans["execute_tool weather"][0], "weather")["output.value"] == "rainy"
    assert check_tool(spans["execute_tool pages"][0], "pages")["output.value"] == "<html></html>"
    assert json.loads(check_tool(spans["execute_tool rows"][0], "rows")["output.value"]) == [
        {"id": 1},
        {"id": 2},
    ]
    lookup = check_tool(spans["execute_tool lookup"][0], "lookup")
    assert json.loads(lookup["input.value"]) == {"key": "k"} and lookup["gen_ai.tool.call.id"] == "c-1"
    late = check_tool(spans["execute_tool late"][0], "late")
    assert late["input.value"] == '{"q": 1}' and late["gen_ai.tool.call.id"] == "c-2"
    assert json.loads(late["output.value"]) == ["a", "b"]


def test_a_failing_tool_records_the_error_and_raises_it_unchanged(mem):
    error = LookupError("no such account")

    @tool
    def broken(account: str) -> str:
        raise error

    @tool
    async def abroken(account: str) -> str:
        raise error

    for call in (lambda: broken("A-0"), lambda: asyncio.run(abroken("A-0"))):
        with pytest.raises(LookupError) as caught:
            call()
        assert caught.value is error
    spans = spans_by_name(mem)
    for name in ("broken", "abroken"):
        (span,) = spans[f"execute_tool {name}"]
        assert span.status.status_code == StatusCode.ERROR and span.status.description == "LookupError"
        assert "gen_ai.tool.call.result" not in span.attributes
        assert json.loads(span.attributes["input.value"]) == {"account": "A-0"}


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no")

    __repr__ = __str__


def test_odd_arguments_and_results_never_reach_the_application(mem):
    cyclic: dict = {}
    cyclic["self"] = cyclic

    @tool
    def odd(a, b=None):
        return b

    before = stats()
    for args in (
        (Unprintable(), Unprintable()),
        (cyclic, cyclic),
        ({1: "x", "k": 2}, object()),
        (b"\x00", 10**40),
    ):
        assert odd(*args) is args[1]
    assert odd.__wrapped__(1, 2) == 2
    spans = spans_by_name(mem)["execute_tool odd"]
    after = stats()
    assert len(spans) == 4 and after["internal_errors"] == before["internal_errors"]
    assert after["dropped"]["internal_error"] == before["dropped"]["internal_error"]
    first = spans[0].attributes
    assert json.loads(first["input.value"]) == {"a": "<Unprintable>", "b": "<Unprintable>"}
    assert first["output.value"] == '"<Unprintable>"'


def test_tool_texts_are_redacted_and_cut():
    exporter = InMemorySpanExporter()
    configure(exporter=exporter, schedule_delay_ms=50, redact=True, max_query_chars=200, max_answer_chars=300)
    try:

        @tool
        def send_mail(to: str, body: str) -> str:
            return "sent to " + to + " " + "x" * 1000

        send_mail("alice@example.com", "key sk-abcdefghijklmnopqrstuvwx " + "y" * 1000)
        flush()
        (span,) = exporter.get_finished_spans()
        a = span.attributes
        text = json.dumps(dict(a))
        assert "alice@example.com" not in text and "sk-abcdefghij" not in text
        assert len(a["input.value"]) == 200 and len(a["output.value"]) == 300
        assert a["output.value"].startswith("sent to [REDACTED:EMAIL] ")
        assert set(a["rag.truncated.fields"]) == {"tool.arguments", "tool.result"}
    finally:
        shutdown()


def test_an_agent_step_is_the_parent_of_the_steps_it_takes(mem):
    @retrieval
    def search(query: str) -> list[dict]:
        return [{"id": "C1", "content": "Balances are shown in USD."}]

    @generation(model="m")
    def llm(prompt: str, chunks: list) -> str:
        return "Your balance is 1,234.50 USD [1]."

    @agent_step(agent_id="agent-7", description="answers account questions")
    def support_agent(task: str) -> str:
        chunks = search(task)
        balance("A-1", tool_call_id="call_1")
        return llm(task, chunks)

    @agent_step(name="planner")
    async def plan(question: str) -> dict:
        return {"answer": "look up the balance", "steps": 2}

    @trace_rag
    def chat(question: str) -> str:
        asyncio.run(plan(question))
        return support_agent(question)

    assert chat("What is my balance?") == "Your balance is 1,234.50 USD [1]."
    with agent_step("manual", task="do it") as a:
        a.set_output("done")
    spans = spans_by_name(mem)
    (root,) = spans["chat"]
    (agent,) = spans["invoke_agent support_agent"]
    a = agent.attributes
    assert a["openinference.span.kind"] == "AGENT" and a["gen_ai.operation.name"] == "invoke_agent"
    assert a["gen_ai.agent.name"] == a["agent.name"] == "support_agent" and a["gen_ai.agent.id"] == "agent-7"
    assert (
        a["input.value"] == "What is my balance?" and a["output.value"] == "Your balance is 1,234.50 USD [1]."
    )
    assert agent.parent.span_id == root.context.span_id
    for child in ("search", "execute_tool balance", "llm"):
        assert spans[child][0].parent.span_id == agent.context.span_id
    (planner,) = spans["invoke_agent planner"]
    assert planner.attributes["output.value"] == "look up the balance"
    assert planner.parent.span_id == root.context.span_id
    assert root.events[0].attributes["rag.citation.document.id"] == "C1"
    (manual,) = spans["invoke_agent manual"]
    assert manual.attributes["input.value"] == "do it" and manual.attributes["output.value"] == "done"


def test_disabled_and_sampled_out_calls_run_the_tools_untraced():
    exporter = InMemorySpanExporter()
    configure(exporter=exporter, sample_rate=0.0, schedule_delay_ms=50)
    try:

        @trace_rag
        def chat(question: str) -> str:
            return str(balance("A-2")["balance"])

        assert chat("q") == "1234.5"
        with tool("lookup") as t:  # outside a RAG call a tool is still traced...
            t.set_result("x")
        flush()
        assert [s.name for s in exporter.get_finished_spans()] == ["execute_tool lookup"]
    finally:
        shutdown()
    configure(enabled=False, exporter=InMemorySpanExporter())
    try:
        assert balance("A-3")["account"] == "A-3"
        with tool("lookup") as t:
            t.set_result("ignored")
            assert t.recording is False
    finally:
        shutdown()


def test_streamed_agent_steps_and_odd_chunk_lists_given_to_a_generation(mem):
    @agent_step
    def narrator(task: str):
        yield "first part, "
        yield "second part"

    @agent_step(input_arg="plan")
    async def astream(plan: dict, other: str = ""):
        yield {"step": 1}
        yield "done"

    @generation(model="m")
    def odd_llm(prompt: str, chunks: list) -> str:
        return "Odd [1][2][3][4][5]."

    @trace_rag
    def odd_call(question: str) -> str:
        cyclic: list = []
        cyclic.append(cyclic)
        return odd_llm(question, [Unprintable(), None, 5, cyclic, {"id": Unprintable()}])

    async def consume() -> list:
        return [part async for part in astream({"goal": "x"})]

    before = stats()
    assert "".join(narrator("tell")) == "first part, second part"
    assert asyncio.run(consume()) == [{"step": 1}, "done"]
    assert odd_call("q") == "Odd [1][2][3][4][5]."
    spans = spans_by_name(mem)
    after = stats()
    assert after["internal_errors"] == before["internal_errors"]
    assert after["dropped"]["internal_error"] == before["dropped"]["internal_error"]
    (narrated,) = spans["invoke_agent narrator"]
    assert narrated.attributes["output.value"] == "first part, second part"
    (streamed,) = spans["invoke_agent astream"]
    assert json.loads(streamed.attributes["input.value"]) == {"goal": "x"}
    assert streamed.attributes["output.value"] == "done"  # the text parts of the stream
    (root,) = spans["odd_call"]
    assert [e.attributes["rag.citation.document.id"] for e in root.events] == [
        "1",
        "2",
        "3",
        "4",
        "<Unprintable>",
    ]
