"""Turning whatever a retriever returned into (id, content, score, metadata) chunks.

Recognised by duck typing, with no dependency on the frameworks: plain dicts,
objects with id/content/score/metadata attributes, LangChain ``Document``
(``page_content`` + ``metadata``, optionally paired with a score in a tuple),
LlamaIndex ``NodeWithScore`` (``.node`` with ``node_id``/``text``/``metadata``
and ``.score``), and bare strings. Runs in the export thread.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from .values import optional_float

__all__ = ["Chunk", "normalize_chunk", "normalize_chunks"]

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
    return Chunk(
        id=str(ident) if ident is not None else str(position),
        content="" if content is None else (content if isinstance(content, str) else str(content)),
        score=optional_float(score),
        metadata=meta,
    )


def normalize_chunks(items: Any) -> list[Chunk]:
    """Normalise a retriever's result (any iterable; a single mapping counts as one chunk)."""
    if items is None:
        return []
    if isinstance(items, (str, Mapping)):
        items = [items]
    return [normalize_chunk(item, i + 1) for i, item in enumerate(items)]
