"""Citation markers in an answer: which chunks each part of it cites.

``[1]`` is the first chunk (1-based position), ``[C1]``/``[doc-7]`` a chunk id, ``[1, 3]``
two citations; chunks named by position (``[Passage 2]``, ``(passages 1 and 3)``,
``(Source: document 4)``, ", as mentioned in passage 1" after a clause) are markers too.
Brackets holding prose are not markers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Marker", "find_markers"]

_MARKER_RE = re.compile(r"\[([^\[\]\n]{1,60})\]")
_NUMBERS = r"\d{1,2}(?:\s*(?:,|\band\b|&|-|\u2013)\s*\d{1,2})*"
# "[Passage 2]", "(passages 1 and 3)", "(Source: document 4)": chunks named by position.
_CHUNK_NOUN = r"(?:passages?|docs?\.?|documents?|sources?|refs?\.?|references?|chunks?|contexts?)"
_NAMED_MARKER_RE = re.compile(
    rf"[\[(](?:sources?:\s*)?{_CHUNK_NOUN}\s*({_NUMBERS})[\])]"
    # after a clause: ", as mentioned in passage 1", ", according to passages 2 and 3"
    rf"|,?\s*(?:as (?:stated|mentioned|described|noted|explained|indicated|shown|reported) in|according to|per)"
    rf"\s+(?:the\s+)?{_CHUNK_NOUN}\s*({_NUMBERS})(?=\s*[.;,!?]|\s*$)",
    re.I,
)
_ITEM_SEP_RE = re.compile(r"[,;]")
_ITEM_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_\-.:#/]*$")


@dataclass(slots=True)
class Marker:
    """One citation marker in the answer: its span and the chunk ids it names."""

    start: int
    end: int
    text: str
    doc_ids: list[str]


def _resolve_item(item: str, chunk_ids: list[str], lower_ids: dict[str, str]) -> str:
    if item.isdigit():
        n = int(item)
        if 1 <= n <= len(chunk_ids):
            return chunk_ids[n - 1]
    if item in lower_ids.values():
        return item
    return lower_ids.get(item.lower(), item)


def _numbered(numbers: str) -> list[str]:
    """The numbers of "1, 2 and 4" or "1-3", in order, ranges spelled out."""
    out: list[str] = []
    for part in re.split(r"\s*(?:,|\band\b|&)\s*", numbers.strip()):
        lo, _, hi = part.partition("-") if "-" in part else part.partition("\u2013")
        if hi and lo.strip().isdigit() and hi.strip().isdigit() and 0 <= int(hi) - int(lo) < 10:
            out.extend(str(n) for n in range(int(lo), int(hi) + 1))
        elif part.strip():
            out.append(part.strip())
    return out


def find_markers(answer: str, chunk_ids: list[str]) -> list[Marker]:
    """Citation markers in ``answer``: ``[1]`` is the first chunk, ``[C1]``/``[doc-7]``
    a chunk id, ``[1, 3]`` two citations; ``[Passage 2]``, ``(passages 1 and 3)``,
    ``(Source: document 4)`` name chunks by position. Brackets holding prose are not markers."""
    lower_ids = {cid.lower(): cid for cid in chunk_ids}
    out: list[Marker] = []
    for m in _NAMED_MARKER_RE.finditer(answer):
        out.append(
            Marker(
                m.start(),
                m.end(),
                m.group(0),
                [_resolve_item(i, chunk_ids, lower_ids) for i in _numbered(m.group(1) or m.group(2))],
            )
        )
    taken = [(m.start, m.end) for m in out]
    for m in _MARKER_RE.finditer(answer):
        if any(a <= m.start() < b for a, b in taken):
            continue
        items = [i.strip() for i in _ITEM_SEP_RE.split(m.group(1))]
        if not items or not all(_ITEM_RE.match(i) for i in items):
            continue
        if not all(i.isdigit() or i.lower() in lower_ids or any(c.isdigit() for c in i) for i in items):
            continue
        out.append(
            Marker(m.start(), m.end(), m.group(0), [_resolve_item(i, chunk_ids, lower_ids) for i in items])
        )
    return sorted(out, key=lambda m: m.start)
