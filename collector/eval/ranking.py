"""Rank metrics over the gold evidence: Recall@k, Precision@k, reciprocal rank, NDCG@k and
evidence-span containment.

The relevant set of a case is the documents of its ``supporting_evidence_spans``
(G_q) plus its ``acceptable_alternative_sources`` (A_q). A retrieved chunk is
relevant when its id, or its metadata ``doc`` / ``doc_id``, is in that set.
Alternatives are relevant but not required: Recall@k is the share of the |G_q|
needed sources that retrieval matched, min(|R_k ∩ (G_q ∪ A_q)|, |G_q|) / |G_q|,
and NDCG@k's ideal ranking puts min(k, |G_q|) relevant chunks first (capped at
1 when alternatives rank above that ideal). All are None when the case has no
evidence spans or retrieval returned nothing.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["RANK_METRICS", "rank_metrics", "doc_keys"]

RANK_METRICS: tuple[str, ...] = (
    "evidence_recall_at_k",
    "evidence_precision_at_k",
    "evidence_mrr",
    "evidence_ndcg_at_k",
    "first_evidence_rank",
    "evidence_span_containment",
)


def doc_keys(chunk: dict[str, Any]) -> set[str]:
    meta = chunk.get("metadata") or {}
    keys = {str(chunk.get("id"))}
    for name in ("doc", "doc_id", "document_id"):
        if meta.get(name) not in (None, ""):
            keys.add(str(meta[name]))
    return keys


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _contained(span: dict[str, Any], chunks: list[dict[str, Any]]) -> bool:
    """The span's text lies whole inside one retrieved chunk of its document."""
    text = _norm(span.get("text") or "")
    for ch in chunks:
        if span["doc_id"] in doc_keys(ch) and (not text or text in _norm(ch.get("content") or "")):
            return True
    return False


def rank_metrics(case: dict[str, Any], chunks: list[dict[str, Any]]) -> dict[str, float | int | None]:
    """The rank metrics of one case's retrieved ``chunks`` (in retrieval order)."""
    spans = case.get("supporting_evidence_spans") or []
    out: dict[str, float | int | None] = dict.fromkeys(RANK_METRICS)
    if not spans or not chunks:
        return out
    gold = {str(s["doc_id"]) for s in spans}
    relevant = gold | {str(a) for a in case.get("acceptable_alternative_sources") or []}
    rel = [1 if doc_keys(ch) & relevant else 0 for ch in chunks]
    k = len(chunks)
    hits = sum(rel)
    out["evidence_recall_at_k"] = min(hits, len(gold)) / len(gold)
    out["evidence_precision_at_k"] = hits / k
    first = next((i for i, r in enumerate(rel, 1) if r), None)
    out["first_evidence_rank"] = first
    out["evidence_mrr"] = 1.0 / first if first else 0.0
    dcg = sum(r / math.log2(i + 1) for i, r in enumerate(rel, 1))
    idcg = sum(1.0 / math.log2(i + 1) for i in range(1, min(k, len(gold)) + 1))
    out["evidence_ndcg_at_k"] = min(1.0, dcg / idcg)
    out["evidence_span_containment"] = sum(_contained(s, chunks) for s in spans) / len(spans)
    return out
