"""Eval-set records (DESIGN.md "The eval set") from groups of near-duplicate candidates.

A case is one question of one service. Its gold fields are *proposed* from the
judge's verdicts on the case's representative trace (the earliest), for a
person to review: supported claims become proposed gold claims, unsupported and
contradicted ones proposed forbidden claims, the chunk sentence that best
matches each supported claim a proposed evidence span, and the status of the
supporting chunks the temporal scope. The full retrieval snapshot (ids,
contents, scores, metadata, each chunk's query or tool, corpus version) goes
into the provenance so the case can be replayed offline against a frozen
corpus, and so does the conversation before the turn (``conversation``, only
for a turn that had one), so a follow-up is replayed meaning what it meant.
Near-duplicate questions merge into one case whatever their conversations; the
case keeps its representative's.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from ..core.text import normalize_query
from .criteria import reason_rank
from .select import Candidate

__all__ = ["case_id", "best_sentence", "build_case", "split_for", "sorted_reasons"]

_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
_WORD = re.compile(r"\w+")


def case_id(service: str, normalized_query: str) -> str:
    """A stable id: the same question of the same service always gets the same case id."""
    digest = hashlib.blake2b(f"{service}\n{normalized_query}".encode(), digest_size=10).hexdigest()
    return f"case-{digest}"


def split_for(cid: str, holdout: float) -> str:
    """``holdout`` for a deterministic ``holdout`` fraction of case ids (by hash), else ``dev``."""
    h = int.from_bytes(hashlib.blake2b(f"split:{cid}".encode(), digest_size=8).digest(), "big")
    return "holdout" if h / 2**64 < holdout else "dev"


def sorted_reasons(reasons: set[str]) -> list[str]:
    return sorted(reasons, key=lambda r: (reason_rank(r), r))


def _iso(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def best_sentence(claim: str, content: str) -> tuple[int, int, str] | None:
    """(start, end, text) of the sentence of ``content`` sharing the most words with ``claim``."""
    want = {w.lower() for w in _WORD.findall(claim)}
    best, best_overlap = None, 0
    for m in _SENTENCE.finditer(content):
        text = m.group(0).strip()
        overlap = len(want & {w.lower() for w in _WORD.findall(text)})
        if text and overlap > best_overlap:
            start = m.start() + m.group(0).index(text)
            best, best_overlap = (start, start + len(text), text), overlap
    return best


def _evidence(rep: Candidate, supported: list[dict[str, Any]]) -> tuple[list[dict], list[str]]:
    contents = {str(c["id"]): c["content"] for c in rep.chunks}
    spans: list[dict[str, Any]] = []
    seen: set[tuple[str, int, int]] = set()
    alternatives: list[str] = []
    for claim in supported:
        ids = [i for i in claim["supporting_chunk_ids"] if i in contents]
        for k, doc in enumerate(ids):
            if k > 0:
                if doc not in alternatives:
                    alternatives.append(doc)
                continue
            found = best_sentence(claim["text"], contents[doc])
            if found and (doc, found[0], found[1]) not in seen:
                seen.add((doc, found[0], found[1]))
                spans.append({"doc_id": doc, "start": found[0], "end": found[1], "text": found[2]})
    return spans, alternatives


def _temporal_scope(rep: Candidate, supported: list[dict[str, Any]]) -> str | None:
    ids = {i for c in supported for i in c["supporting_chunk_ids"]}
    chunks = [c for c in rep.chunks if str(c["id"]) in ids] or rep.chunks
    statuses = {str(c["metadata"].get("status")) for c in chunks if c["metadata"].get("status")}
    if not statuses:
        return None
    if statuses == {"current"}:
        return "current"
    return "mixed" if "current" in statuses else "outdated"


def _answerability(rep: Candidate, supported: list[dict[str, Any]]) -> str:
    kind = (rep.judgment or {}).get("abstention_kind") or ""
    if kind == "appropriate":
        return "unanswerable"
    if kind == "false_refusal" or supported:
        return "answerable"
    return "unknown"


def build_case(cid: str, group: Sequence[Candidate], holdout: float) -> dict[str, Any]:
    """The eval-set record of one case (``group``: its candidates, any order)."""
    members = sorted(group, key=lambda c: (c.time_ns, c.trace_id))
    rep = members[0]
    supported = [c for c in rep.claims if c["verdict"] == "supported"]
    rejected = [c["text"] for c in rep.claims if c["verdict"] in ("unsupported", "contradicted")]
    spans, alternatives = _evidence(rep, supported)
    j = rep.judgment or {}
    reasons: set[str] = set().union(*(c.reasons for c in members))
    return {
        "id": cid,
        "query": rep.query,
        "corpus_snapshot_id": rep.corpus_version or None,
        "answerability": _answerability(rep, supported),
        "gold_claims": [c["text"] for c in supported],
        "supporting_evidence_spans": spans,
        "acceptable_alternative_sources": alternatives,
        "forbidden_or_outdated_claims": rejected,
        "query_type": rep.query_type or None,
        "difficulty": None,
        "temporal_scope": _temporal_scope(rep, supported),
        "risk_level": rep.risk_level or None,
        "split": split_for(cid, holdout),
        "review": {"status": "proposed", "reviewer": None, "reviewed_at": None},
        "provenance": {
            "trace_ids": [c.trace_id for c in members],
            "service": rep.service,
            "first_seen": _iso(members[0].time_ns),
            "last_seen": _iso(members[-1].time_ns),
            "occurrences": len(members),
            "reasons": sorted_reasons(reasons),
            "judge_id": j.get("judge_id"),
            "scores": dict(j.get("scores") or {}),
            "failure_mode": j.get("failure_mode"),
            "answer": rep.answer,
            "chunks": rep.chunks,
            "citations": rep.citations,
            "proposed": {"supported_claims": [c["text"] for c in supported], "unsupported_claims": rejected},
            "normalized_query": normalize_query(rep.query),
            **({"conversation": rep.conversation} if rep.conversation else {}),
        },
    }
