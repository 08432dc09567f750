"""The demo app's chat mode: follow-ups rewritten from the conversation, chat traffic in sessions,
the agentic route with its tool, and the replay functions given a case's history.

The app runs through the public agent API into an in-memory span exporter; its spans are assembled
by the collector's own ``build_trace`` and judged by the local judge, so what is checked is what
the demo stores and judges.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from ragpulse.agent import configure, flush, shutdown
from ragpulse.collector.ingest.build import build_trace
from ragpulse.collector.ingest.readable import spans_from_readable
from ragpulse.collector.judge import get_judge
from ragpulse.policy_rag import (
    GenerationRates,
    PolicyAssistant,
    PolicyRetriever,
    ScriptedGenerator,
    TrafficModel,
    replay,
)
from ragpulse.policy_rag import load_corpus as _load
from ragpulse.policy_rag.conversation import FollowUpRewriter
from ragpulse.policy_rag.generator import REFUSALS
from ragpulse.policy_rag.records import training_record, training_sentence

CAREFUL = GenerationRates(0, 0, 0, 0)


@pytest.fixture(scope="module")
def corpus():
    return _load()


def _turn(question: str, answer: str = "ok") -> list[dict]:
    return [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]


def test_follow_ups_are_rewritten_to_the_question_they_stand_for(corpus) -> None:
    rewriter = FollowUpRewriter(corpus)
    retriever = PolicyRetriever(corpus)
    for f in corpus.follow_ups:
        before = corpus.template(f.after)
        means = (
            corpus.tool_question(f.means) if f.means.startswith("T") else corpus.template(f.means)
        ).phrasings[0]
        for earlier in (*before.phrasings, *before.legacy_phrasings):
            for q in f.phrasings:
                assert rewriter.resolve(q, _turn(earlier)) == (f.means, means), (earlier, q)
                # a retyped follow-up (the user asking again) reads the same after the same turns
                assert rewriter.resolve(q.rstrip("?").lower(), [*_turn(earlier), *_turn(q)]) == (
                    f.means,
                    means,
                )
        if not f.means.startswith("T"):
            topics = corpus.template(f.means).topics
            assert all(
                any(c.chunk.topic == t and c.chunk.trustworthy for c in retriever.search(means))
                for t in topics
            )
    q02 = corpus.template("Q02")
    assert rewriter.resolve(q02.phrasings[0], None) == ("Q02", q02.phrasings[0])
    assert rewriter.resolve(q02.phrasings[0].lower().rstrip("?"), None) == ("Q02", q02.phrasings[0])
    assert rewriter.resolve("And transaction logs?", None) == (None, "And transaction logs?")  # no history
    assert rewriter.resolve("And transaction logs?", _turn(q02.phrasings[0])) == (
        None,
        "And transaction logs?",
    )
    assert rewriter.resolve("Who won the match?", _turn(q02.phrasings[0])) == (None, "Who won the match?")


def _scripted_answer(corpus):
    """The app's answer without spans: rewrite, retrieve, generate (the tool route as the app does)."""
    rewriter, retriever = FollowUpRewriter(corpus), PolicyRetriever(corpus)
    generator = ScriptedGenerator(corpus, seed=3)

    def answer(req, history):
        meaning, standalone = rewriter.resolve(req.question, history)
        lead = ""
        if meaning and meaning.startswith("T"):
            lead = training_sentence(training_record(req.user_id))
            standalone = corpus.template(corpus.tool_question(meaning).means).phrasings[0]
        text = generator.generate(standalone, retriever.search(standalone)).text
        return f"{lead} {text}" if lead and text not in REFUSALS else text

    return answer


def test_chat_traffic_runs_sessions_as_documented(corpus) -> None:
    seen: list[tuple] = []
    answer = _scripted_answer(corpus)

    def recording(req, history):
        text = answer(req, history)
        seen.append((req, list(history), text))
        return text

    turns = list(TrafficModel(corpus, seed=5).conversations(600, recording))
    assert len(turns) == len(seen) == 600 and [r.seq for r, _ in turns] == list(range(600))
    sessions: dict[str, list] = {}
    for req, history, text in seen:
        sessions.setdefault(req.session_id, []).append((req, history, text))
    for sid, items in sessions.items():
        assert [r.turn for r, _, _ in items] == list(range(1, len(items) + 1)) and len(items) <= 6
        assert len({r.user_id for r, _, _ in items}) == 1
        for k, (req, history, _) in enumerate(items):
            expected = [m for r, _, t in items[:k] for m in _turn(r.question, t)]
            assert history == expected, sid  # the conversation before the turn, as the user had it
            if req.wording == "reask":
                last, _, said = items[k - 1]
                assert said in REFUSALS and req.question == last.question.rstrip("?").lower()
            if (
                req.wording in ("follow_up", "own_record")
                and req.turn > 1
                and req.template_id.startswith(("Q", "T"))
            ):
                last = items[k - 1][0]
                assert (
                    any(
                        f.after == last.template_id
                        and f.means == req.template_id
                        and req.question in f.phrasings
                        for f in corpus.follow_ups
                    )
                    or req.template_id == "T01"
                )
    wordings = Counter(r.wording for r, _ in turns)
    assert {"current", "legacy", "out_of_scope", "follow_up", "reask", "own_record"} <= set(wordings)
    assert sum(1 for items in sessions.values() if len(items) > 1) > 50
    again = [(r, t) for r, t in TrafficModel(corpus, seed=5).conversations(600, _scripted_answer(corpus))]
    assert again == turns  # deterministic for the seed
    other = [r.question for r, _ in TrafficModel(corpus, seed=6).conversations(600, _scripted_answer(corpus))]
    assert other != [r.question for r, _ in turns]


@pytest.fixture()
def spans():
    exporter = InMemorySpanExporter()
    configure(exporter=exporter, service_name="policy-chat", schedule_delay_ms=20)
    yield exporter
    shutdown()


def _stored(exporter: InMemorySpanExporter):
    """The last trace the app emitted, assembled as the collector assembles it."""
    flush()
    decoded = spans_from_readable(exporter.get_finished_spans())
    trace_id = decoded[-1].trace_id
    exporter.clear()
    return build_trace(trace_id, [s for s in decoded if s.trace_id == trace_id])


def test_the_agentic_route_answers_from_its_tool_and_the_judge_reads_the_tool_as_evidence(
    spans, corpus
) -> None:
    app = PolicyAssistant(corpus, rates=CAREFUL)
    record = training_record("E-1042")
    text = app.answer("When is my next security awareness training due?", session_id="s-1", user_id="E-1042")
    assert text.startswith(training_sentence(record))
    trace = _stored(spans)
    assert trace.session_id == "s-1" and trace.query == "When is my next security awareness training due?"
    tool = [c for c in trace.chunks if c.source_type == "tool"]
    assert [(c.tool, json.loads(c.content)) for c in tool] == [("training_record", record)]
    assert json.loads(tool[0].query) == {"employee_id": "E-1042"}
    policy = corpus.template("Q26").phrasings[0]
    assert {c.query for c in trace.chunks if c.source_type == "retrieval"} == {policy}
    judged = get_judge("local").judge(trace.judge_message())
    assert judged["failure_mode"] == "healthy"
    due = next(c for c in judged["claims"] if record["next_due"] in c["text"])
    assert due["verdict"] == "supported" and due["supporting_chunk_ids"] == [tool[0].id]
    # the same answer without the tool's result is not supported
    message = trace.judge_message()
    message["chunks"] = [c for c in message["chunks"] if c.get("source_type") != "tool"]
    claims = get_judge("local").judge(message)["claims"]
    assert next(c for c in claims if record["next_due"] in c["text"])["verdict"] != "supported"


def test_a_follow_up_keeps_its_conversation_and_retrieves_with_the_rewritten_question(spans, corpus) -> None:
    app = PolicyAssistant(corpus, rates=CAREFUL)
    first = corpus.template("Q02").phrasings[0]
    said = app.answer(first, session_id="s-2")
    _stored(spans)
    history = _turn(first, said)
    answer = app.answer("What does earlier deletion require then?", history=history, session_id="s-2")
    trace = _stored(spans)
    assert trace.query == "What does earlier deletion require then?" and trace.answer == answer
    assert [(m.role, m.content) for m in trace.conversation] == [("user", first), ("assistant", said)]
    assert {c.query for c in trace.chunks} == {corpus.template("Q03").phrasings[0]}
    assert any(c.id == "C2" for c in trace.chunks) and "[1]" in answer
    judged = get_judge("local").judge(trace.judge_message())
    assert judged["failure_mode"] == "healthy" and judged["answer_relevance"] == 1.0


def test_the_replay_functions_take_a_cases_history_and_its_frozen_tool_result(corpus) -> None:
    standalone = corpus.template("Q03").phrasings[0]
    history = _turn(corpus.template("Q02").phrasings[0])
    assert replay.careful("What does earlier deletion require then?", history=history) == replay.careful(
        standalone
    )
    record = training_record("E-2001")
    frozen = [c.as_dict() for c in PolicyRetriever(corpus).search(corpus.template("Q26").phrasings[0])]
    frozen.append({"id": "training_record#1", "content": json.dumps(record), "source_type": "tool",
                   "tool": "training_record", "query": json.dumps({"employee_id": "E-2001"})})  # fmt: skip
    out = replay.careful(
        "And when is mine due next?", chunks=frozen, history=_turn(corpus.template("Q26").phrasings[0])
    )
    assert out["answer"].startswith(training_sentence(record))
    assert out["chunks"][-1] == frozen[-1] and [c["id"] for c in out["chunks"]] == [c["id"] for c in frozen]
    alone = replay.careful("And when is mine due next?", chunks=frozen)  # without its conversation
    assert not alone["answer"].startswith("Your security awareness training")
