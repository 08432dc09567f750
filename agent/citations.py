"""Citations: parsed from answer markers, given explicitly, or read from a structured answer.

Marker grammar (DESIGN.md, same as the judge's): ``[1]`` is the 1-based
position in the retrieved chunks, ``[C1]`` / ``[doc-7]`` a chunk id,
``[1, 3]`` several at once, ``[1][3]`` adjacent markers. The cited text of a
marker is the sentence (or clause) that ends at it: its character offsets in
the answer are ``start``/``end``. Runs in the export thread.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

__all__ = ["Citation", "parse_citations", "citations_from_structured", "answer_text"]

_TOKEN = r"[A-Za-z][\w.:-]{0,63}|\d{1,4}"
_MARKER = re.compile(rf"\[\s*((?:{_TOKEN})(?:\s*[,;]\s*(?:{_TOKEN}))*)\s*\](?!\()")
_ID_LIKE = re.compile(r"[A-Za-z]+[-_.:]?\d+[\w.:-]*")
_SENTENCE_END = re.compile(r"[.!?](?=\s)|\n")


class Citation(NamedTuple):
    """One citation: which chunk, which marker, which part of the answer it supports."""

    doc_id: str
    marker: str
    start: int
    end: int


def _claim_span(answer: str, marker_start: int, known: set[str]) -> tuple[int, int]:
    """Offsets of the text a marker at ``marker_start`` attaches to."""
    end = marker_start
    # Skip whitespace and sentence punctuation between the claim and the marker ("claim. [1]").
    while end > 0 and (answer[end - 1].isspace() or answer[end - 1] in ".!?;:,"):
        end -= 1
    # Skip earlier adjacent markers: "claim [1][3]" -> both cite "claim".
    while end > 0 and answer[end - 1] == "]":
        prev = answer.rfind("[", 0, end - 1)
        adjacent = _MARKER.fullmatch(answer, prev, end) if prev >= 0 else None
        if adjacent is None or not _is_citation(adjacent.group(1), known):
            break
        end = prev
        while end > 0 and answer[end - 1].isspace():
            end -= 1
    start = 0
    for match in _SENTENCE_END.finditer(answer, 0, end):
        start = match.end()
    while start < end and answer[start].isspace():
        start += 1
    return start, end


def _tokens(group: str) -> list[str]:
    return re.split(r"\s*[,;]\s*", group)


def _is_citation_token(token: str, known: set[str]) -> bool:
    return token.isdigit() or token in known or (not known and _ID_LIKE.fullmatch(token) is not None)


def _is_citation(group: str, known: set[str]) -> bool:
    return any(_is_citation_token(t, known) for t in _tokens(group))


def parse_citations(answer: str, chunk_ids: Sequence[str] | None) -> list[Citation]:
    """Citations from the markers in ``answer``; ``chunk_ids`` resolves positions and ids.

    A numeric marker outside the chunk list is still reported (its doc id is the
    number as written) so that the collector can score it as an invalid
    citation; a word-like marker counts only when it is a known chunk id or
    looks like one (``C1``, ``doc-7``), so ``[sic]`` or ``[link](url)`` are not citations.
    """
    if not answer or "[" not in answer:
        return []
    known = set(chunk_ids or ())
    out: list[Citation] = []
    for match in _MARKER.finditer(answer):
        if not _is_citation(match.group(1), known):
            continue
        start, end = _claim_span(answer, match.start(), known)
        for token in _tokens(match.group(1)):
            if not _is_citation_token(token, known):
                continue
            doc_id = token
            if token.isdigit():
                pos = int(token)
                doc_id = chunk_ids[pos - 1] if chunk_ids and 1 <= pos <= len(chunk_ids) else token
            out.append(Citation(doc_id, match.group(0), start, end))
    return out


def _get(obj: Any, *names: str) -> Any:
    for name in names:
        value = obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)
        if value is not None:
            return value
    return None


def answer_text(result: Any) -> str | None:
    """The answer text of a return value: a string, or a structured answer object/dict."""
    if result is None:
        return None
    if isinstance(result, str):
        return result
    text = _get(result, "answer", "text", "output", "content", "response")
    if isinstance(text, str):
        return text
    return None


def citations_from_structured(result: Any, chunk_ids: Sequence[str] | None) -> list[Citation] | None:
    """Citations carried by a structured answer (``.citations`` / ``["citations"]``), or None."""
    if result is None or isinstance(result, str):
        return None
    items = _get(result, "citations", "sources", "references")
    if not isinstance(items, (list, tuple)):
        return None
    out: list[Citation] = []
    for item in items:
        if isinstance(item, (str, int)):
            token = str(item)
            doc_id = token
            if token.isdigit() and chunk_ids and 1 <= int(token) <= len(chunk_ids):
                doc_id = chunk_ids[int(token) - 1]
            out.append(Citation(doc_id, "", -1, -1))
            continue
        doc_id = _get(item, "doc_id", "document_id", "chunk_id", "id", "source_id")
        if doc_id is None:
            continue
        start, end = _get(item, "start"), _get(item, "end")
        marker = _get(item, "marker")
        out.append(
            Citation(
                str(doc_id),
                str(marker) if marker is not None else "",
                int(start) if isinstance(start, int) else -1,
                int(end) if isinstance(end, int) else -1,
            )
        )
    return out
