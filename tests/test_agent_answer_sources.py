"""Citation markers resolve against the chunks the answering generation was given (issue 43).

The agent runs with its own provider and OTel's in-memory exporter, as in
tests/test_agent_spans.py; the last tests run under the application's provider
(``exporter="none"``). The first test is the issue's case: a follow-up rewritten
by a ``@generation``, two ``@retrieval`` calls with one chunk each, the final
``@generation`` given both chunks, the answer citing ``[1]`` and ``[2]``.
"""

from __future__ import annotations

import asyncio

from ragpulse.agent import (
    cite,
    current_rag,
    flush,
    generation,
    retrieval,
    trace_rag,
)
from ragpulse.agent.conventions import (
    CITATION_DOCUMENT_ID,
    CITATION_EVENT,
    CITATION_MARKER,
    GEN_AI_RETRIEVAL_QUERY,
    GENERATION_DOCUMENTS,
    INPUT_VALUE,
    document_key,
)

from tests.agent_memory import spans_by_name, under_app_provider

RETENTION = {"id": "RET-5Y", "content": "Covered institutions keep transaction logs for five years."}
HOLD = {"id": "HOLD-1", "content": "Deleting logs before then requires releasing any legal hold."}
FOLLOW_UP = "And can we delete them sooner?"
REWRITTEN = "Can transaction logs be deleted before the five-year retention period ends?"
ANSWER = (
    "Transaction logs are kept for five years [1]. Deleting them early requires releasing any legal hold [2]."
)
HISTORY = [
    {"role": "user", "content": "How long do we keep transaction logs?"},
    {"role": "assistant", "content": "Five years."},
]


def cited(root) -> list[tuple[str, str]]:
    return [
        (e.attributes[CITATION_DOCUMENT_ID], e.attributes.get(CITATION_MARKER, ""))
        for e in root.events
        if e.name == CITATION_EVENT
    ]


def given(span) -> list[str]:
    out, i = [], 0
    while (key := document_key(GENERATION_DOCUMENTS, i, "id")) in span.attributes:
        out.append(span.attributes[key])
        i += 1
    return out


@generation(model="m")
def rewrite(question: str, history: list) -> str:
    return REWRITTEN


@retrieval
def search(query: str) -> list[dict]:
    return [dict(HOLD)] if "delet" in query or "hold" in query else [dict(RETENTION)]


@generation(model="m")
def write_answer(question: str, chunks: list) -> str:
    return ANSWER


@trace_rag
def chat(question: str, history: list, session_id: str | None = None) -> str:
    rewrite(question, history)
    first = search("how long are transaction logs kept (retention)")
    second = search(REWRITTEN)
    return write_answer(question, first + second)


def test_the_issue_case_cites_each_chunk_by_its_position_in_the_generations_chunks(mem):
    assert chat(FOLLOW_UP, HISTORY, session_id="s-1") == ANSWER
    spans = spans_by_name(mem)
    (root,) = spans["chat"]
    assert cited(root) == [("RET-5Y", "[1]"), ("HOLD-1", "[2]")]
    assert root.attributes[INPUT_VALUE] == FOLLOW_UP
    # each retrieval keeps its own query beside the chunk it fetched
    queries = {s.attributes["retrieval.documents.0.document.id"]: s.attributes for s in spans["search"]}
    assert queries["RET-5Y"][INPUT_VALUE] == queries["RET-5Y"][GEN_AI_RETRIEVAL_QUERY]
    assert "retention" in queries["RET-5Y"][GEN_AI_RETRIEVAL_QUERY]
    assert queries["HOLD-1"][INPUT_VALUE] == queries["HOLD-1"][GEN_AI_RETRIEVAL_QUERY] == REWRITTEN
    # the answering generation records which chunks it was given, the rewriting one none
    (answering,) = spans["write_answer"]
    assert given(answering) == ["RET-5Y", "HOLD-1"]
    (rewriting,) = spans["rewrite"]
    assert given(rewriting) == [] and rewriting.attributes["output.value"] == REWRITTEN


def test_the_issue_case_async(mem):
    @retrieval
    async def asearch(query: str) -> list[dict]:
        await asyncio.sleep(0)
        return [dict(HOLD)] if "delet" in query else [dict(RETENTION)]

    @generation(model="m")
    async def awrite(question: str, documents: list) -> str:
        await asyncio.sleep(0)
        return ANSWER

    @trace_rag(name="achat")
    async def achat(question: str, history: list) -> str:
        first, second = await asyncio.gather(asearch("kept"), asearch("early deletion"))
        return await awrite(question, first + second)

    assert asyncio.run(achat(FOLLOW_UP, HISTORY)) == ANSWER
    (root,) = spans_by_name(mem)["achat"]
    assert cited(root) == [("RET-5Y", "[1]"), ("HOLD-1", "[2]")]


def test_given_chunks_match_the_retrieved_ones_by_identity_content_or_their_own_id(mem):
    """Chunks without ids take their position in their retrieval as id; the generation's list
    refers to the same objects (or their texts), so the ids the retrieval spans wrote come back."""

    @retrieval
    def by_text(query: str) -> list[dict]:
        return [{"content": f"{query} one"}, {"content": f"{query} two"}]

    @generation(model="m")
    def from_objects(question: str, chunks: list) -> str:
        return "One [2]. Two [3]."

    @generation(model="m", chunks_arg="texts")
    def from_texts(question: str, texts: list) -> str:
        return "Alpha [1]. Beta [3]."

    @trace_rag(name="by_objects")
    def by_objects(question: str) -> str:
        a, b = by_text("alpha"), by_text("beta")
        return from_objects(question, [b[1], a[0], a[1]])

    @trace_rag(name="by_texts")
    def by_texts(question: str) -> str:
        a, b = by_text("alpha"), by_text("beta")
        return from_texts(question, [c["content"] for c in a + b])

    by_objects("q")
    by_texts("q")
    spans = spans_by_name(mem)
    # positions of their own retrievals: b[1] is "2", a[0] is "1", a[1] is "2"
    assert cited(spans["by_objects"][0]) == [("1", "[2]"), ("2", "[3]")]
    assert given(spans["from_objects"][0]) == ["2", "1", "2"]
    assert cited(spans["by_texts"][0]) == [("1", "[1]"), ("1", "[3]")]


def test_without_a_generation_given_chunks_markers_count_every_retrieval_in_start_order(mem):
    @generation(model="m")
    def plain(prompt: str) -> str:
        return "Kept five years [1]. Holds first [2]. Unknown [3]."

    @trace_rag(name="no_given")
    def no_given(question: str) -> str:
        search("kept")
        search("holds")
        return plain(question)

    no_given("q")
    (root,) = spans_by_name(mem)["no_given"]
    assert cited(root) == [("RET-5Y", "[1]"), ("HOLD-1", "[2]"), ("3", "[3]")]


def test_a_reranker_takes_the_place_of_the_chunks_retrieved_before_it(mem):
    @retrieval(name="rerank", reranker=True)
    def rerank(query: str, chunks: list) -> list[dict]:
        return list(reversed(chunks))

    @trace_rag(name="reranked")
    def reranked(question: str) -> str:
        both = search("kept") + search("holds")
        rerank(question, both)
        search("more: kept")
        return "Holds [1]. Kept [2]. Again [3]."

    reranked("q")
    (root,) = spans_by_name(mem)["reranked"]
    assert cited(root) == [("HOLD-1", "[1]"), ("RET-5Y", "[2]"), ("RET-5Y", "[3]")]


def test_the_generation_whose_output_is_the_answer_wins_over_a_later_one(mem):
    @generation(model="m")
    def draft(question: str, chunks: list) -> str:
        return "Holds must be released first [1]."

    @generation(model="m")
    def check(answer: str, chunks: list) -> str:
        return "looks supported"

    @trace_rag(name="drafted")
    def drafted(question: str) -> str:
        kept, holds = search("kept"), search("holds")
        text = draft(question, holds)
        check(text, kept)
        return text

    drafted("q")
    (root,) = spans_by_name(mem)["drafted"]
    assert cited(root) == [("HOLD-1", "[1]")]


def test_cite_and_structured_positions_use_the_same_chunks(mem):
    @generation(model="m")
    def answer_with(question: str, docs: list) -> dict:
        return {"answer": "Kept. Held.", "citations": [2, {"doc_id": "RET-5Y", "start": 0, "end": 5}]}

    @trace_rag(name="structured")
    def structured(question: str) -> dict:
        out = answer_with(question, search("holds") + search("kept"))
        cite(2, 6, 11)
        current_rag().cite(1)
        return out

    structured("q")
    (root,) = spans_by_name(mem)["structured"]
    assert [d for d, _ in cited(root)] == ["RET-5Y", "RET-5Y", "RET-5Y", "HOLD-1"]


def test_the_with_statement_forms_record_the_given_chunks(mem):
    with trace_rag("blocks", query=FOLLOW_UP) as rag:
        rag.set_chunks([dict(RETENTION)])
        rag.set_chunks([dict(HOLD)], name="second")
        with generation("llm", model="m") as g:
            g.set_chunks([dict(HOLD), dict(RETENTION)])
            g.set_output("Holds first [1]. Five years [2].")
        rag.set_answer("Holds first [1]. Five years [2].")
    spans = spans_by_name(mem)
    assert cited(spans["blocks"][0]) == [("HOLD-1", "[1]"), ("RET-5Y", "[2]")]
    assert given(spans["llm"][0]) == ["HOLD-1", "RET-5Y"]


def test_the_issue_case_under_the_applications_provider():
    with under_app_provider() as (_provider, exporter):
        assert chat(FOLLOW_UP, HISTORY) == ANSWER
        flush()
        spans = {s.name: s for s in exporter.get_finished_spans()}
        assert cited(spans["chat"]) == [("RET-5Y", "[1]"), ("HOLD-1", "[2]")]
        assert given(spans["write_answer"]) == ["RET-5Y", "HOLD-1"]
