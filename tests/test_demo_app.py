"""The demo's policy RAG application: corpus, BM25 retriever, scripted generator, traffic.

No services needed; these pin the properties the demo's acceptance rests on:
the worked example's documents are in the corpus verbatim, the real retriever
finds the current text for current wording and the outdated text for legacy
wording, and the generator's injected modes are what it says they are.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest
from ragpulse.policy_rag import (
    EXPECTED_JUDGMENT,
    GenerationRates,
    InjectedMode,
    PolicyRetriever,
    ScriptedGenerator,
    TrafficModel,
    load_corpus,
)
from ragpulse.policy_rag.bm25 import BM25Index, tokenize
from ragpulse.policy_rag.generator import REFUSALS

from tests.carried_data import worked_example


@pytest.fixture(scope="module")
def corpus():
    return load_corpus()


def test_corpus_holds_the_worked_example_verbatim(corpus) -> None:
    worked = {c["id"]: (c["status"], c["authoritative"], c["content"]) for c in worked_example()["corpus"]}
    assert sorted(worked) == ["C1", "C2", "C3", "C4", "C5"]
    for cid, (status, authoritative, content) in worked.items():
        chunk = corpus.by_id[cid]
        assert (chunk.status, chunk.authoritative, chunk.content) == (status, authoritative, content)
    # C1 and C3 are two versions of one document
    assert corpus.by_id["C1"].doc == corpus.by_id["C3"].doc
    assert corpus.by_id["C1"].version > corpus.by_id["C3"].version


def test_corpus_shape(corpus) -> None:
    assert len(corpus.documents) >= 30
    ids = [c.id for c in corpus.chunks]
    assert len(ids) == len(set(ids))
    statuses = Counter(c.status for c in corpus.chunks)
    assert statuses["current"] >= 30 and statuses["superseded"] >= 8 and statuses["commentary"] >= 6
    for c in corpus.chunks:
        md = c.metadata()
        assert {"status", "authoritative", "doc", "version"} <= md.keys()
        assert md["authoritative"] is (c.status != "commentary")
        if c.conditions:  # the generator drops one of two adjacent conditions
            assert f"{c.conditions[0]} and {c.conditions[1]}" in c.content, c.id
    # every superseded version has a current version of the same document
    current_docs = {c.doc for c in corpus.chunks if c.status == "current"}
    assert all(c.doc in current_docs for c in corpus.chunks if c.status == "superseded")
    templates = corpus.templates
    assert len(templates) >= 36
    for t in templates:
        for fact in t.gold:
            assert corpus.by_id[fact.chunk].trustworthy and corpus.by_id[fact.chunk].topic in t.topics


def test_bm25_ranks_by_term_weight() -> None:
    idx = BM25Index(
        [("a", "transaction logs are kept"), ("b", "email is kept"), ("c", "logs logs logs of transactions")]
    )
    scores = dict(idx.score("transaction logs"))
    assert scores["b"] == 0.0 and scores["a"] > 0 and scores["c"] > 0
    assert idx.search("email") == [("b", pytest.approx(scores_for(idx, "email")["b"]))]
    assert tokenize("Retained the Logs, re-opened") == ["retain", "logs", "re-open", "re", "open"]


def scores_for(idx: BM25Index, q: str) -> dict[str, float]:
    return dict(idx.score(q))


def test_retriever_current_wording_finds_current_text(corpus) -> None:
    retriever = PolicyRetriever(corpus)
    for t in corpus.templates:
        for q in t.phrasings:
            got = retriever.search(q)
            assert len({c.chunk.doc for c in got}) == len(got)  # one passage per document
            for topic in t.topics:
                assert any(c.chunk.topic == topic and c.chunk.trustworthy for c in got), (t.id, q)


def test_retriever_legacy_wording_finds_outdated_text(corpus) -> None:
    retriever = PolicyRetriever(corpus)
    legacy = [(t, q) for t in corpus.templates for q in t.legacy_phrasings]
    assert len(legacy) >= 12
    for t, q in legacy:
        got = retriever.search(q)
        stale = [c for c in got if c.chunk.topic in t.topics and not c.chunk.trustworthy]
        assert stale, (t.id, q)
        # the current text of at least one needed topic was pushed out
        assert any(not any(c.chunk.topic == topic and c.chunk.trustworthy for c in got) for topic in t.topics)


def test_worked_example_run_a_from_legacy_wording(corpus) -> None:
    q01 = next(t for t in corpus.templates if t.id == "Q01")
    got = PolicyRetriever(corpus).search(q01.legacy_phrasings[0])
    assert {"C3", "C5"} <= {c.id for c in got}
    answer = ScriptedGenerator(corpus).generate(q01.legacy_phrasings[0], got)
    assert answer.mode is InjectedMode.SUPERSEDED
    assert "three years" in answer.text and "manager approval" in answer.text


def _markers(text: str) -> list[int]:
    return [int(m) for m in re.findall(r"\[(\d+)\]", text)]


def test_generator_modes_do_what_they_say(corpus) -> None:
    retriever = PolicyRetriever(corpus)
    gen = ScriptedGenerator(corpus, seed=3)
    seen: Counter[InjectedMode] = Counter()
    for req in TrafficModel(corpus, seed=5).requests(600):
        chunks = retriever.search(req.question)
        a = gen.generate(req.question, chunks)
        seen[a.mode] += 1
        assert (a.expected_failure_mode, a.expected_abstention_kind) == EXPECTED_JUDGMENT[a.mode]
        used = [corpus.by_id[i] for i in a.used_chunk_ids]
        if a.mode in (InjectedMode.APPROPRIATE_REFUSAL, InjectedMode.FALSE_REFUSAL):
            assert a.text in REFUSALS and not _markers(a.text)
            on_topic = [c for c in chunks if req.template_id != "" and c.chunk.topic in _topics(corpus, req)]
            assert bool(on_topic) is (a.mode is InjectedMode.FALSE_REFUSAL)
            continue
        assert all(1 <= m <= len(chunks) for m in _markers(a.text))
        if a.mode is InjectedMode.SUPERSEDED:
            assert any(not c.trustworthy for c in used)
        else:
            assert all(c.trustworthy for c in used)
        if a.mode is InjectedMode.FAITHFUL:
            for c in used:
                assert c.content.rstrip(".") in a.text
        elif a.mode is InjectedMode.MISSING_CONDITION:
            assert any(c.conditions and c.content.rstrip(".") not in a.text for c in used)
            assert any(
                (c.conditions[0] in a.text) != (c.conditions[1] in a.text) for c in used if c.conditions
            )
        elif a.mode is InjectedMode.HALLUCINATED_NUMBER:
            assert any(c.content.rstrip(".") not in a.text for c in used)
        elif a.mode is InjectedMode.WRONG_CITATION:
            cited = {chunks[m - 1].id for m in _markers(a.text)}
            assert cited - set(a.used_chunk_ids)
    # every failure mode of the article appears, the healthy majority first
    assert set(seen) == set(InjectedMode)
    total = sum(seen.values())
    assert seen[InjectedMode.FAITHFUL] / total > 0.5
    for mode in InjectedMode:
        assert seen[mode] / total >= 0.02, (mode, seen)


def _topics(corpus, req) -> tuple[str, ...]:
    return next(t.topics for t in corpus.templates if t.id == req.template_id)


def test_generator_and_traffic_are_deterministic(corpus) -> None:
    def run(seed: int) -> list[tuple[str, str]]:
        r, g = PolicyRetriever(corpus), ScriptedGenerator(corpus, seed=seed)
        return [
            (q.question, g.generate(q.question, r.search(q.question)).text)
            for q in TrafficModel(corpus, seed=seed).requests(80)
        ]

    assert run(1) == run(1)
    assert run(1) != run(2)


def test_rates_validated_and_zero_rates_are_faithful(corpus) -> None:
    with pytest.raises(ValueError):
        GenerationRates(missing_condition=0.6, wrong_citation=0.6)
    none = GenerationRates(0, 0, 0, 0)
    r, g = PolicyRetriever(corpus), ScriptedGenerator(corpus, rates=none)
    for t in corpus.templates:
        if t.answerable:
            a = g.generate(t.phrasings[0], r.search(t.phrasings[0]))
            assert a.mode is InjectedMode.FAITHFUL, t.id
