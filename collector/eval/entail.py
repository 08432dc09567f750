"""The entailment facts of one case, decided by a ragpulse judge.

Every metric of the eval is a count over entailment relations between four
sets of texts: the gold claims G, the answer's claims Y, the retrieved chunks
R and the forbidden claims F. This module asks the judge for those relations
through its public interface only (``judge_many`` over judge input records),
so the local judge and the LLM judge decide them the same way:

- ``R |= y`` (faithfulness, citations, abstention): the ordinary judgment of
  the run record; the judge also extracts the answer claims Y;
- ``r |= g`` for each chunk r and gold claim g: gold claim g as the "answer",
  the retrieved chunks as the chunks;
- ``G |= y``: answer claim y as the "answer", the gold claims as the chunks;
- ``Y |= g``: gold claim g as the "answer", the answer claims as the chunks;
- ``y |= f``: forbidden claim f as the "answer", the answer claims as the chunks.

A hypothesis is entailed by a premise when the judge finds every claim it
extracts from the hypothesis ``supported`` by that premise; the case's query
goes with every question, as the judge uses it to discount restated question
words. A failed judgment makes the whole case an error, never a zero.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..judge.record import normalise_input
from .replay import case_conversation

__all__ = ["AnswerClaim", "CaseFacts", "gather_facts", "gold_ids", "forbidden_ids", "run_record"]


def gold_ids(case: dict[str, Any]) -> list[str]:
    """Stable ids of a case's gold claims: G1, G2, ... in file order."""
    return [f"G{i}" for i in range(1, len(case.get("gold_claims") or []) + 1)]


def forbidden_ids(case: dict[str, Any]) -> list[str]:
    """Stable ids of a case's forbidden or outdated claims: F1, F2, ..."""
    return [f"F{i}" for i in range(1, len(case.get("forbidden_or_outdated_claims") or []) + 1)]


@dataclass
class AnswerClaim:
    """One claim of the answer with every relation the metrics need."""

    text: str
    chunk_ids: list[str]  # retrieved chunks that entail it (R |= y, per chunk)
    cited_chunk_ids: list[str] = field(default_factory=list)
    citation_valid: bool | None = None  # None: the claim cites nothing
    gold_ids: list[str] = field(default_factory=list)  # gold claims that entail it (G |= y)
    forbidden_ids: list[str] = field(default_factory=list)  # forbidden claims it entails (y |= f)


@dataclass
class CaseFacts:
    """Entailment facts of one (case, run record) pair."""

    chunk_ids: list[str]
    claims: list[AnswerClaim]
    abstained: bool
    gold_chunks: dict[str, list[str]]  # gold id -> retrieved chunks entailing it (r |= g)
    gold_answer: dict[str, list[int]]  # gold id -> indexes of answer claims entailing it (Y |= g)
    citation_correctness: float | None = None
    citation_completeness: float | None = None
    error: str | None = None
    chunks: list[dict[str, Any]] = field(default_factory=list)  # as the judge saw them (ids normalised)


def _entailed_by(judgment: dict[str, Any]) -> set[str] | None:
    """Premise ids that entail the whole hypothesis (each of its extracted claims), None on error."""
    if judgment.get("error"):
        return None
    claims = judgment.get("claims") or []
    if not claims:
        return set()
    sets = [
        set(c.get("supporting_chunk_ids") or []) if c.get("verdict") == "supported" else set() for c in claims
    ]
    return set.intersection(*sets)


def _question(trace_id: str, query: str, hypothesis: str, premises: list[tuple[str, str]]) -> dict[str, Any]:
    return {
        "trace_id": trace_id,
        "query": query,
        "answer": hypothesis,
        "chunks": [{"id": pid, "content": text} for pid, text in premises],
    }


def run_record(case: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
    """The judge input record of a run line (the case's query when the run has none, the case's
    conversation before its turn), with chunk ids normalised the way the judge names them."""
    return normalise_input(
        {
            "trace_id": str(run.get("trace_id") or case["id"]),
            "query": run.get("query") or case["query"],
            "answer": run["answer"],
            "chunks": run.get("chunks") or [],
            "citations": run.get("citations") or [],
            "conversation": case_conversation(case),
        }
    )


def _main_facts(record: dict[str, Any], judgment: dict[str, Any]) -> CaseFacts:
    chunk_ids = [c["id"] for c in record["chunks"]]
    facts = CaseFacts(
        chunk_ids=chunk_ids,
        claims=[],
        abstained=bool(judgment.get("abstained")),
        gold_chunks={},
        gold_answer={},
        chunks=record["chunks"],
    )
    if judgment.get("error"):
        facts.error = f"judge: {judgment['error']}"
        return facts
    facts.citation_correctness = judgment.get("citation_correctness")
    facts.citation_completeness = judgment.get("citation_completeness")
    for c in judgment.get("claims") or []:
        supported = c.get("verdict") == "supported"
        facts.claims.append(
            AnswerClaim(
                text=c["text"],
                chunk_ids=list(c.get("supporting_chunk_ids") or []) if supported else [],
                cited_chunk_ids=list(c.get("cited_chunk_ids") or []),
                citation_valid=c.get("citation_valid"),
            )
        )
    return facts


def _questions(
    case: dict[str, Any], record: dict[str, Any], facts: CaseFacts
) -> list[tuple[str, Any, dict[str, Any]]]:
    """(relation, key, judge record) for every secondary question of one case."""
    cid, query = case["id"], case["query"]
    gold = list(zip(gold_ids(case), case.get("gold_claims") or [], strict=True))
    forbidden = list(zip(forbidden_ids(case), case.get("forbidden_or_outdated_claims") or [], strict=True))
    chunks = [(c["id"], c["content"]) for c in record["chunks"]]
    answer = [(f"Y{i}", c.text) for i, c in enumerate(facts.claims)]
    out: list[tuple[str, Any, dict[str, Any]]] = []
    for gid, text in gold:
        if chunks:
            out.append(("gold_chunks", gid, _question(f"{cid}:{gid}|R", query, text, chunks)))
        if answer:
            out.append(("gold_answer", gid, _question(f"{cid}:{gid}|Y", query, text, answer)))
    if gold:
        for yid, text in answer:
            out.append(("answer_gold", int(yid[1:]), _question(f"{cid}:{yid}|G", query, text, gold)))
    if answer:
        for fid, text in forbidden:
            out.append(("forbidden", fid, _question(f"{cid}:{fid}|Y", query, text, answer)))
    return out


def _apply(facts: CaseFacts, relation: str, key: Any, premises: set[str]) -> None:
    if relation == "gold_chunks":
        facts.gold_chunks[key] = [p for p in facts.chunk_ids if p in premises]
    elif relation == "gold_answer":
        facts.gold_answer[key] = sorted(int(p[1:]) for p in premises)
    elif relation == "answer_gold":
        facts.claims[key].gold_ids = sorted(premises, key=lambda g: int(g[1:]))
    else:
        for p in premises:
            facts.claims[int(p[1:])].forbidden_ids.append(key)


def gather_facts(judge: Any, pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> list[CaseFacts]:
    """Facts for each (case, run record) pair: one batch of main judgments, then one batch of
    every secondary question (so an LLM judge runs them concurrently)."""
    records = [run_record(case, run) for case, run in pairs]
    judged = judge.judge_many(records)
    facts = [_main_facts(rec, j) for rec, j in zip(records, judged, strict=True)]
    asked: list[tuple[int, str, Any, dict[str, Any]]] = []
    for i, ((case, _), rec) in enumerate(zip(pairs, records, strict=True)):
        if facts[i].error is None:
            asked.extend((i, rel, key, q) for rel, key, q in _questions(case, rec, facts[i]))
    answers = judge.judge_many([q for *_, q in asked]) if asked else []
    for (i, rel, key, _), judgment in zip(asked, answers, strict=True):
        premises = _entailed_by(judgment)
        if premises is None:
            facts[i].error = facts[i].error or f"judge: {judgment.get('error')}"
            continue
        _apply(facts[i], rel, key, premises)
    for f in facts:
        for c in f.claims:
            c.forbidden_ids.sort(key=lambda x: int(x[1:]))
    return facts
