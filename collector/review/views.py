"""What a review page shows, as plain data for the templates.

A trace panel is the query, the chunks (with status and authority from their
metadata) and the answer, each claim with the judge's verdict and support
probability, and the sentence of its first supporting chunk that the claim
rests on highlighted in that chunk (the sentence sharing most words with the
claim, as the export proposes evidence spans). An eval case's panel takes the
frozen chunks of its provenance and highlights its supporting evidence spans.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..export.cases import best_sentence

__all__ = ["Segment", "ChunkView", "chunk_views", "claim_spans", "evidence_spans"]


@dataclass
class Segment:
    text: str
    claims: tuple[int, ...] = ()  # 1-based claim numbers that rest on this text (empty: plain text)
    evidence: bool = False  # a supporting evidence span of an eval case


@dataclass
class ChunkView:
    position: int
    id: str
    score: float | None
    status: str
    authoritative: bool | None
    segments: list[Segment] = field(default_factory=list)


def _segments(content: str, spans: Sequence[tuple[int, int, tuple[int, ...], bool]]) -> list[Segment]:
    """``content`` cut at the spans (sorted; an overlapping later span is folded into the earlier)."""
    merged: list[list[Any]] = []
    for start, end, claims, ev in sorted(spans):
        start, end = max(0, start), min(len(content), end)
        if end <= start:
            continue
        if merged and start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
            merged[-1][2] = tuple(sorted(set(merged[-1][2]) | set(claims)))
            merged[-1][3] = merged[-1][3] or ev
            continue
        merged.append([start, end, claims, ev])
    out, pos = [], 0
    for start, end, claims, ev in merged:
        if start > pos:
            out.append(Segment(content[pos:start]))
        out.append(Segment(content[start:end], claims, ev))
        pos = end
    if pos < len(content):
        out.append(Segment(content[pos:]))
    return out


def claim_spans(
    claims: Sequence[dict[str, Any]], chunks: Sequence[dict[str, Any]]
) -> dict[str, list[tuple[int, int, tuple[int, ...], bool]]]:
    """chunk id -> (start, end, (claim number,), False) of the sentence each supported claim rests on."""
    contents = {str(c.get("id")): str(c.get("content") or "") for c in chunks}
    out: dict[str, list[tuple[int, int, tuple[int, ...], bool]]] = {}
    for n, claim in enumerate(claims, 1):
        doc = next((str(i) for i in claim.get("supporting_chunk_ids") or [] if str(i) in contents), None)
        if doc is None:
            continue
        found = best_sentence(str(claim.get("text") or ""), contents[doc])
        if found:
            out.setdefault(doc, []).append((found[0], found[1], (n,), False))
    return out


def evidence_spans(
    spans: Sequence[dict[str, Any]],
) -> dict[str, list[tuple[int, int, tuple[int, ...], bool]]]:
    """chunk id -> spans of an eval case's ``supporting_evidence_spans``."""
    out: dict[str, list[tuple[int, int, tuple[int, ...], bool]]] = {}
    for s in spans:
        if "start" in s and "end" in s:
            out.setdefault(str(s["doc_id"]), []).append((int(s["start"]), int(s["end"]), (), True))
    return out


def chunk_views(
    chunks: Sequence[dict[str, Any]], spans: dict[str, list[tuple[int, int, tuple[int, ...], bool]]]
) -> list[ChunkView]:
    """The chunks in retrieval order with their highlighted spans."""
    views = []
    for k, c in enumerate(chunks, 1):
        meta = c.get("metadata") if isinstance(c.get("metadata"), dict) else {}
        auth = meta.get("authoritative")
        cid = str(c.get("id", k))
        views.append(
            ChunkView(
                position=k,
                id=cid,
                score=c.get("score"),
                status=str(meta.get("status") or ""),
                authoritative=None if auth is None else bool(auth),
                segments=_segments(str(c.get("content") or ""), spans.get(cid, [])),
            )
        )
    return views
