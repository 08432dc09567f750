"""An eval set for the policy assistant, built from the corpus's query templates.

Each phrasing of each template becomes one case in the eval-set format of
docs/evalset.schema.json: the template's gold facts are the gold claims, the
chunks that hold them are the evidence spans, the superseded versions of the
same policies are the outdated (forbidden) claims, and the retriever's top-k
at build time is the frozen context (``provenance.chunks``) that
``ragpulse eval --corpus-from-snapshot`` replays. It stands in for the cases
``ragpulse export`` writes from production failures, with reviewed gold.

``python -m ragpulse.policy_rag.evalset OUT.jsonl`` writes it.
"""

from __future__ import annotations

import hashlib
import json
import sys
from typing import Any

from .corpus import Corpus, QueryTemplate, load_corpus
from .retriever import PolicyRetriever

__all__ = ["SNAPSHOT_ID", "build_evalset"]

SNAPSHOT_ID = "policy-corpus-v1"


def _case_id(template: QueryTemplate, wording: str, i: int) -> str:
    return f"policy-{template.id}-{wording}-{i}"


def _split(case_id: str, holdout_share: float) -> str:
    """A stable split from the case id's hash, so a case never changes split between builds."""
    h = int(hashlib.sha256(case_id.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return "holdout" if h < holdout_share else "dev"


def _case(
    corpus: Corpus,
    retriever: PolicyRetriever,
    t: QueryTemplate,
    query: str,
    cid: str,
    legacy: bool,
    holdout_share: float,
) -> dict[str, Any]:
    chunks = [rc.as_dict() for rc in retriever.search(query)]
    evidence = list(dict.fromkeys(g.chunk for g in t.gold))
    outdated = [c for c in corpus.chunks if c.topic in t.topics and c.status == "superseded"]
    docs = {corpus.by_id[c].doc for c in evidence}
    if not t.answerable:
        query_type = "unanswerable"
    else:
        query_type = "lookup" if len(t.topics) == 1 else "synthesis"
    return {
        "id": cid,
        "query": query,
        "corpus_snapshot_id": SNAPSHOT_ID,
        "answerability": "answerable" if t.answerable else "unanswerable",
        "gold_claims": [g.text for g in t.gold],
        "supporting_evidence_spans": [
            {"doc_id": c, "start": 0, "end": len(corpus.by_id[c].content), "text": corpus.by_id[c].content}
            for c in evidence
        ],
        "acceptable_alternative_sources": [],
        "forbidden_or_outdated_claims": [c.content for c in outdated],
        "query_type": query_type,
        "difficulty": "hard" if legacy else "medium",
        "temporal_scope": "current",
        # A policy with a superseded version is where a stale answer is a compliance failure.
        "risk_level": "high" if any(c.doc in docs for c in outdated) else "medium",
        "split": _split(cid, holdout_share),
        "review": {"status": "reviewed", "reviewer": "policy_rag corpus", "reviewed_at": None},
        "provenance": {"service": "policy-assistant", "reasons": [f"template:{t.id}"], "chunks": chunks},
    }


def build_evalset(
    corpus: Corpus | None = None, *, top_k: int = 5, holdout_share: float = 0.2
) -> list[dict[str, Any]]:
    """Every phrasing (current and legacy wording) of every template as an eval-set case."""
    corpus = corpus or load_corpus()
    retriever = PolicyRetriever(corpus, top_k=top_k)
    cases = []
    for t in corpus.templates:
        for legacy, phrasings in ((False, t.phrasings), (True, t.legacy_phrasings)):
            for i, query in enumerate(phrasings, 1):
                cid = _case_id(t, "legacy" if legacy else "current", i)
                cases.append(_case(corpus, retriever, t, query, cid, legacy, holdout_share))
    return cases


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    out = open(args[0], "w", encoding="utf-8") if args else sys.stdout  # noqa: SIM115
    for case in build_evalset():
        out.write(json.dumps(case, ensure_ascii=False) + "\n")
    if out is not sys.stdout:
        out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
