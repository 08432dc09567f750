"""Turning whatever a retriever returned into (id, content, score, metadata) chunks.

Recognised by duck typing, with no dependency on the frameworks: plain dicts,
objects with id/content/score/metadata attributes, LangChain ``Document``
(``page_content`` + ``metadata``, optionally paired with a score in a tuple),
LlamaIndex ``NodeWithScore`` (``.node`` with ``node_id``/``text``/``metadata``
and ``.score``), and bare strings. Runs in the export thread.

Chunk ids must be unique within one retrieval, or a citation cannot say which
chunk it means: documents split from one file often share its ``source`` as
their only id. :func:`unique_ids` (used here and by the collector for other
instrumentation's spans) keeps such an id as the chunk's source and makes the
id unique and stable.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from .values import optional_float, safe_str

__all__ = ["Chunk", "normalize_chunk", "normalize_chunks", "unique_ids"]

_ID_KEYS = ("id", "doc_id", "document_id", "chunk_id", "node_id", "id_", "_id")
_CONTENT_KEYS = ("content", "text", "page_content", "chunk", "document", "body")
_SCORE_KEYS = ("score", "similarity", "relevance_score", "rerank_score")
_META_ID_KEYS = ("id", "doc_id", "document_id", "chunk_id", "source_id", "source")
_NOT_METADATA = frozenset(_ID_KEYS + _CONTENT_KEYS + _SCORE_KEYS + ("metadata",))


class Chunk(NamedTuple):
    """One retrieved chunk in the shape the span conventions need."""

    id: str
    content: str
    score: float | None
    metadata: dict[str, Any]
    source: str | None = None  # the id the retriever gave, when it repeated and ``id`` was made unique


def _first_attr(obj: Any, names: Iterable[str]) -> Any:
    for name in names:
        value = getattr(obj, name, None)
        if value is not None and not callable(value):
            return value
    return None


def _from_mapping(item: Mapping[str, Any]) -> tuple[Any, Any, Any, Any]:
    get = item.get
    ident = content = score = None
    for k in _ID_KEYS:
        if (ident := get(k)) is not None:
            break
    for k in _CONTENT_KEYS:
        if (content := get(k)) is not None:
            break
    for k in _SCORE_KEYS:
        if (score := get(k)) is not None:
            break
    metadata = get("metadata")
    if not isinstance(metadata, (dict, Mapping)):
        metadata = {k: v for k, v in item.items() if k not in _NOT_METADATA}
    return ident, content, score, metadata


def _from_object(item: Any) -> tuple[Any, Any, Any, Any]:
    node = getattr(item, "node", None)
    score = _first_attr(item, _SCORE_KEYS)
    if node is not None and not isinstance(node, (str, bytes)):  # LlamaIndex NodeWithScore
        item = node
    ident = _first_attr(item, _ID_KEYS)
    content = _first_attr(item, _CONTENT_KEYS)
    if content is None:
        get_content = getattr(item, "get_content", None)
        if callable(get_content):
            content = get_content()
    if score is None:
        score = _first_attr(item, _SCORE_KEYS)
    metadata = getattr(item, "metadata", None)
    return ident, content, score, metadata


def normalize_chunk(item: Any, position: int) -> Chunk:
    """Normalise one retrieved item; ``position`` (1-based) is the fallback id."""
    score: Any = None
    if item.__class__ is dict:  # the common case, first
        ident, content, score, metadata = _from_mapping(item)
    else:
        if isinstance(item, tuple) and len(item) == 2 and not isinstance(item[1], (str, bytes)):
            item, score = item  # (Document, score) as from similarity_search_with_score
        if isinstance(item, str):
            ident, content, inner_score, metadata = None, item, None, None
        elif isinstance(item, (dict, Mapping)):  # dict first: the ABC check is slow
            ident, content, inner_score, metadata = _from_mapping(item)
        else:
            ident, content, inner_score, metadata = _from_object(item)
        if score is None:
            score = inner_score
    meta: dict[str, Any] = dict(metadata) if isinstance(metadata, (dict, Mapping)) else {}
    if ident is None:
        ident = next((meta[k] for k in _META_ID_KEYS if meta.get(k) is not None), None)
    # Positional, and plain str ids and float scores as they are (str() and float() of them
    # return them unchanged): this runs once per chunk on the export thread.
    return Chunk(
        ident if ident.__class__ is str else safe_str(ident) if ident is not None else str(position),
        "" if content is None else (content if isinstance(content, str) else safe_str(content)),
        score if score.__class__ is float else optional_float(score),
        meta,
    )


def normalize_chunks(items: Any) -> list[Chunk]:
    """Normalise a retriever's result (any iterable; a single mapping counts as one chunk)."""
    if items is None:
        return []
    if isinstance(items, (str, Mapping)):
        items = [items]
    chunks = [normalize_chunk(item, i + 1) for i, item in enumerate(items)]
    if len(chunks) > 1:
        ids = unique_ids([c.id for c in chunks], [c.content for c in chunks])
        if ids is not None:
            chunks = [
                c if c.id == cid else c._replace(id=cid, source=c.id)
                for c, cid in zip(chunks, ids, strict=True)
            ]
    return chunks


def unique_ids(ids: Sequence[str], contents: Sequence[str]) -> list[str] | None:
    """Unique, stable ids for one retrieval's chunks, or None when ``ids`` are unique already.

    Every chunk whose id repeats gets ``"<id>#<12 hex digits of the SHA-1 of its content>"``,
    so the same chunk keeps the same id in every trace whatever its position; chunks that
    repeat both id and content also get ``"-<1-based position>"``.
    """
    if len(set(ids)) == len(ids):
        return None
    counts: dict[str, int] = {}
    for cid in ids:
        counts[cid] = counts.get(cid, 0) + 1
    out: list[str] = []
    seen: set[str] = set()
    for position, (cid, content) in enumerate(zip(ids, contents, strict=True), 1):
        if counts[cid] > 1:
            cid = f"{cid}#{hashlib.sha1(content.encode('utf-8', 'replace')).hexdigest()[:12]}"
        if cid in seen:
            cid = f"{cid}-{position}"
        seen.add(cid)
        out.append(cid)
    return out
