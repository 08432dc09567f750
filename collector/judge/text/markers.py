"""Citation markers in an answer: which chunks each part of it cites.

``[1]`` is the first chunk (1-based position), ``[C1]``/``[doc-7]`` a chunk id, ``[1, 3]``
two citations, ``[[1]]`` the first chunk; chunks named by position (``[Passage 2]``,
``(passages 1 and 3)``, ``(Source: document 4)``, ``[source: 1]``, ``(source 1, source 3)``,
``(see passage 2)``, ", as mentioned in passage
1" after a clause) are markers too, and so are the footnote forms of markdown and chat
products: ``[^1]``, ``<sup>1</sup>``, superscript digits, ``【1†source】`` and
``【4:0†report.pdf】`` (file search: result 0 is the first chunk). Brackets holding prose are
not markers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Marker", "find_markers", "read_markers"]

# "[1]", "[C1, C3]", and doubled, "[[1]]" (wiki-style).
_MARKER_RE = re.compile(r"\[(\[)?([^\[\]\n]{1,60})\](?(1)\])")
# Formats of chat products and markdown, each citing chunks by position: a footnote "[^1]",
# "<sup>1</sup>" or "<sup>[1]</sup>", superscript digits "¹²", and the file-search
# annotation "【1†source】" or "【4:0†report.pdf】" (message 4, search result 0: the first chunk).
_FOOTNOTE_RE = re.compile(
    r"\[\^(\d{1,2})\]|<sup>\s*\[?(\d{1,2}(?:\s*,\s*\d{1,2})*)\]?\s*</sup>|(?<=[\w.,;:!?)\]])([\u00b9\u00b2\u00b3\u2070-\u2079]+)"
    r"|\u3010(\d{1,2})(?::(\d{1,2}))?\u2020[^\u3011\n]{0,80}\u3011",
    re.I,
)
_SUPERSCRIPT = str.maketrans("\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079", "0123456789")
_NUMBERS = r"\d{1,2}(?:\s*(?:,|\band\b|&|-|\u2013)\s*\d{1,2})*"
# "[Passage 2]", "(passages 1 and 3)", "(Source: document 4)": chunks named by position.
_CHUNK_NOUN = r"(?:passages?|docs?\.?|documents?|sources?|refs?\.?|references?|chunks?|contexts?)"
# Inside brackets the noun may repeat and a "see" may lead: "(source 1, source 2)", "(see
# context 3)", "[see passages 1 and 2]".
_NAMED_NUMBERS = rf"\d{{1,2}}(?:\s*(?:,|;|\band\b|&|-|\u2013)\s*(?:{_CHUNK_NOUN}\s*[:#]?\s*)?\d{{1,2}})*"
_NAMED_MARKER_RE = re.compile(
    rf"[\[(](?:see\s+(?:also\s+)?)?(?:sources?:\s*)?{_CHUNK_NOUN}\s*[:#]?\s*({_NAMED_NUMBERS})[\])]"
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


_NOUN_RE = re.compile(rf"{_CHUNK_NOUN}\s*[:#]?", re.I)


def _numbered(numbers: str) -> list[str]:
    """The numbers of "1, 2 and 4", "1-3" or "1, source 2", in order, ranges spelled out."""
    out: list[str] = []
    for part in re.split(r"\s*(?:,|;|\band\b|&)\s*", _NOUN_RE.sub("", numbers).strip()):
        lo, _, hi = part.partition("-") if "-" in part else part.partition("\u2013")
        if hi and lo.strip().isdigit() and hi.strip().isdigit() and 0 <= int(hi) - int(lo) < 10:
            out.extend(str(n) for n in range(int(lo), int(hi) + 1))
        elif part.strip():
            out.append(part.strip())
    return out


def _footnote_ids(m: re.Match[str], chunk_ids: list[str], lower_ids: dict[str, str]) -> list[str]:
    """The chunk ids a footnote-style marker (:data:`_FOOTNOTE_RE`) cites."""
    footnote, sup, superscript, _, result = m.groups()
    if superscript:
        numbers = (
            list(superscript.translate(_SUPERSCRIPT))
            if len(chunk_ids) < 10
            else [superscript.translate(_SUPERSCRIPT)]
        )
    elif result is not None:
        numbers = [str(int(result) + 1)]  # the file-search result index counts from 0
    else:
        numbers = _numbered(footnote or sup or m.group(4))
    return [_resolve_item(n, chunk_ids, lower_ids) for n in numbers]


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
    for m in _FOOTNOTE_RE.finditer(answer):
        out.append(Marker(m.start(), m.end(), m.group(0), _footnote_ids(m, chunk_ids, lower_ids)))
    taken = [(m.start, m.end) for m in out]
    for m in _MARKER_RE.finditer(answer):
        if any(a <= m.start() < b for a, b in taken):
            continue
        items = [i.strip() for i in _ITEM_SEP_RE.split(m.group(2))]
        if not items or not all(_ITEM_RE.match(i) for i in items):
            continue
        if not all(i.isdigit() or i.lower() in lower_ids or any(c.isdigit() for c in i) for i in items):
            continue
        out.append(
            Marker(m.start(), m.end(), m.group(0), [_resolve_item(i, chunk_ids, lower_ids) for i in items])
        )
    return sorted(out, key=lambda m: m.start)


def _stops_after_markers(answer: str, markers: list[Marker]) -> str:
    """``answer`` with each sentence's end mark moved after the markers right behind it
    ("weeks.[1] The" -> "weeks[1]. The", "weeks.[1][2]" -> "weeks[1][2].", the way Wikipedia
    and answer engines cite): the sentence then ends after its markers, and, the length
    being the same, every offset into the answer holds."""
    chars = list(answer)
    i = 0
    while i < len(markers):
        j = i
        while j + 1 < len(markers) and markers[j + 1].start == markers[j].end:
            j += 1
        stop, end = markers[i].start - 1, markers[j].end
        if stop >= 0 and answer[stop] in ".!?" and (end == len(answer) or answer[end].isspace()):
            chars[stop:end] = [*answer[stop + 1 : end], answer[stop]]
        i = j + 1
    return "".join(chars)


def read_markers(answer: str, chunk_ids: list[str]) -> tuple[str, list[Marker]]:
    """``answer`` with its end marks moved after the markers behind them
    (:func:`_stops_after_markers`), and its markers (:func:`find_markers`)."""
    markers = find_markers(answer, chunk_ids)
    moved = _stops_after_markers(answer, markers)
    return (answer, markers) if moved == answer else (moved, find_markers(moved, chunk_ids))
