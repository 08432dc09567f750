"""The issue's conversational, agentic call traced by ragpulse's decorators, stored and judged (issue 43).

A ``@trace_rag`` function rewrites the follow-up "And can we delete them sooner?" with a
``@generation``, calls a ``@retrieval`` twice (one chunk each) and answers from the two chunks
it passes to its final ``@generation``: once with the agent's ``exporter="otlp"`` into ``ragpulse
collect --no-kafka`` (the OTLP/HTTP intake, the local judge in that process), once with
``exporter="none"`` under the application's own provider feeding an embedded collector. Either
way the stored trace shows the user's turn, the conversation and each retrieval's query beside
its chunk; the answer's ``[1]`` and ``[2]`` are the two chunks; the judgment has both claims
supported, citation correctness and completeness 1.0 and a healthy failure mode. A ``@tool``
that returns an account balance is the evidence of an answer stating it; the same answer
without the tool call is unsupported.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ragpulse import agent

from tests.chdb_rows import stored_rows
from tests.interop import Pipeline

RETENTION = {"id": "RET-5Y", "content": "Transaction logs are kept for five years after the account closes."}
HOLD = {
    "id": "HOLD-1",
    "content": "Deleting transaction logs early requires releasing any legal hold on them.",
}
HISTORY = [
    {"role": "user", "content": "How long are transaction logs kept?"},
    {"role": "assistant", "content": "Five years after the account closes."},
]
FOLLOW_UP = "And can we delete them sooner?"
REWRITTEN = "Can transaction logs be deleted before the five years are over?"
FIRST_QUERY = "transaction log retention period"
ANSWER = (
    "Transaction logs are kept for five years [1]. Deleting them early requires releasing any legal hold [2]."
)
BALANCE_ANSWER = "The balance of account ACC-7 is 1,520.33 EUR."


@agent.generation(model="scripted")
def rewrite(question: str, history: list) -> str:
    return REWRITTEN


@agent.retrieval
def search(query: str) -> list[dict]:
    return [dict(HOLD)] if "deleted" in query else [dict(RETENTION)]


@agent.generation(model="scripted")
def write_answer(question: str, chunks: list) -> str:
    return ANSWER


@agent.trace_rag
def chat(question: str, history: list) -> str:
    rewrite(question, history)
    first = search(FIRST_QUERY)
    second = search(REWRITTEN)
    return write_answer(question, first + second)


@agent.tool
def get_balance(account_id: str) -> dict:
    return {"account_id": account_id, "balance": 1520.33, "currency": "EUR"}


@agent.generation(model="scripted")
def say(question: str, facts: Any) -> str:
    return BALANCE_ANSWER


@agent.trace_rag
def banker(question: str, use_tool: bool) -> str:
    facts = (
        get_balance("ACC-7") if use_tool else {"account_id": "ACC-7", "balance": 1520.33, "currency": "EUR"}
    )
    return say(question, facts)


_COLUMNS = (
    "query, chunk_ids, chunk_queries, chunk_source_types, chunk_tools, conversation_roles, conversation_contents, "
    "citation_doc_ids, citation_markers, complete"
)
_JUDGED = "faithfulness, citation_correctness, citation_completeness, answer_relevance, failure_mode, extra"


def _rows(query: Any, sql: str, names: str) -> list[dict[str, Any]]:
    return [dict(zip([n.strip() for n in names.split(",")], r, strict=True)) for r in query(sql)]


def _check_issue_case(trace: dict[str, Any], judgment: dict[str, Any]) -> None:
    assert trace["query"] == FOLLOW_UP and trace["complete"] == 1
    assert trace["chunk_ids"] == ["RET-5Y", "HOLD-1"] and trace["chunk_queries"] == [FIRST_QUERY, REWRITTEN]
    assert trace["chunk_source_types"] == ["retrieval", "retrieval"]
    assert [{"role": r, "content": c} for r, c in zip(trace["conversation_roles"], trace["conversation_contents"],
                                                     strict=True)] == HISTORY  # fmt: skip
    assert trace["citation_doc_ids"] == ["RET-5Y", "HOLD-1"] and trace["citation_markers"] == ["[1]", "[2]"]
    assert (
        judgment["faithfulness"],
        judgment["citation_correctness"],
        judgment["citation_completeness"],
    ) == (
        1.0,
        1.0,
        1.0,
    )
    assert judgment["answer_relevance"] == 1.0 and judgment["failure_mode"] == "healthy"


def test_the_issue_case_over_otlp_http_into_collect_no_kafka(tmp_path: Path) -> None:
    from tests.services import collect_no_kafka, free_port

    port = free_port()
    db = tmp_path / "db"
    cfg = {
        "storage": {"dsn": f"chdb://{db}"}, "metrics": {"port": 0}, "receiver": {"port": port},
        "judge": {"enabled": True, "judge": "local"}, "sampling": {"rate": 1.0},
    }  # fmt: skip
    with collect_no_kafka(cfg, tmp_path / "c.yaml", stop_s=60):
        agent.configure(exporter="otlp", otlp_endpoint=f"http://127.0.0.1:{port}", service_name="chat-app",
                        schedule_delay_ms=50)  # fmt: skip
        try:
            assert chat(FOLLOW_UP, HISTORY) == ANSWER
            assert agent.flush()
        finally:
            agent.shutdown()
    (trace,) = _rows(
        lambda sql: stored_rows(db, sql),
        f"SELECT {_COLUMNS} FROM ragpulse.rag_traces FINAL",
        _COLUMNS,
    )
    (judgment,) = _rows(
        lambda sql: stored_rows(db, sql),
        f"SELECT {_JUDGED} FROM ragpulse.rag_judgments FINAL",
        _JUDGED,
    )
    _check_issue_case(trace, judgment)


@pytest.fixture(scope="module")
def pipe(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pipeline]:
    with Pipeline(Path(tmp_path_factory.mktemp("conversations")) / "db", service="chat-app") as pipeline:
        agent.configure(exporter="none", tracer_provider=pipeline.provider)
        yield pipeline
        agent.shutdown()


def _last(pipe: Pipeline) -> tuple[dict[str, Any], dict[str, Any]]:
    assert agent.flush()
    pipe.flush()
    tid = pipe.root_trace_ids()[-1]
    query = pipe.collector.storage.query
    (trace,) = _rows(
        lambda sql: query(sql, {"t": tid}), f"SELECT {_COLUMNS} FROM {{db}}.rag_traces FINAL WHERE trace_id = %(t)s",
        _COLUMNS,
    )  # fmt: skip
    (judgment,) = _rows(
        lambda sql: query(sql, {"t": tid}),
        f"SELECT {_JUDGED} FROM {{db}}.rag_judgments FINAL WHERE trace_id = %(t)s",
        _JUDGED,
    )
    return trace, judgment


def test_the_issue_case_under_the_application_s_provider(pipe: Pipeline) -> None:
    assert chat(FOLLOW_UP, HISTORY) == ANSWER
    _check_issue_case(*_last(pipe))


def _claims(pipe: Pipeline, trace_id: str) -> list[tuple[str, list[str]]]:
    return [
        (verdict, list(ids))
        for verdict, ids in pipe.collector.storage.query(
            "SELECT verdict, supporting_chunk_ids FROM {db}.rag_claims FINAL WHERE trace_id = %(t)s "
            "ORDER BY claim_index",
            {"t": trace_id},
        )
    ]


def test_a_tool_result_is_the_evidence_of_the_answer_that_states_it(pipe: Pipeline) -> None:
    assert banker("What is the balance of account ACC-7?", True) == BALANCE_ANSWER
    trace, judgment = _last(pipe)
    assert trace["chunk_source_types"] == ["tool"] and trace["chunk_tools"] == ["get_balance"]
    assert json.loads(trace["chunk_queries"][0]) == {"account_id": "ACC-7"}
    (tool_id,) = trace["chunk_ids"]
    assert _claims(pipe, pipe.root_trace_ids()[-1]) == [("supported", [tool_id])]
    assert judgment["faithfulness"] == 1.0 and judgment["failure_mode"] == "healthy"
    # The same answer when the application looked the balance up outside any tool call.
    assert banker("What is the balance of account ACC-7?", False) == BALANCE_ANSWER
    trace, judgment = _last(pipe)
    assert trace["chunk_ids"] == []
    assert _claims(pipe, pipe.root_trace_ids()[-1]) == [("unsupported", [])]
    assert (
        judgment["faithfulness"] == 0.0
        and json.loads(judgment["extra"])["response_verdict"] == "hallucinated"
    )


FEE_POLICY = {
    "id": "FEE-1",
    "content": "Customers may request a refund of one overdraft fee per calendar year.",
}


@agent.retrieval
def fee_search(query: str) -> list[dict]:
    return [dict(FEE_POLICY)]


@agent.generation(model="scripted")
def fee_answer(question: str, chunks: list) -> str:
    return "You were charged a $35 overdraft fee yesterday. Overdraft fees are refunded once per year on request [1]."


@agent.trace_rag
def support_chat(question: str, history: list) -> str:
    return fee_answer(question, fee_search(question))


def test_a_claim_restating_the_user_is_stored_as_such(pipe: Pipeline) -> None:
    history = [{"role": "user", "content": "I was charged a $35 overdraft fee yesterday."},
               {"role": "assistant", "content": "I am sorry to hear that."}]  # fmt: skip
    support_chat("Can you refund it?", history)
    _, judgment = _last(pipe)
    rows = pipe.collector.storage.query(
        "SELECT verdict, supporting_chunk_ids, restates_user FROM {db}.rag_claims FINAL WHERE trace_id = %(t)s "
        "ORDER BY claim_index",
        {"t": pipe.root_trace_ids()[-1]},
    )
    assert [tuple(r) for r in rows] == [("supported", [], 1), ("supported", ["FEE-1"], 0)]
    assert judgment["faithfulness"] == 1.0 and judgment["citation_completeness"] == 1.0
