"""A retrieval (or reranker) span's documents -> :class:`~.model.Chunk` objects.

Three forms, read in this order (the first one present wins):

* OpenInference's flattened ``retrieval.documents.<i>.document.{id,content,score,metadata}``
  (ragpulse's agent, the LangChain and LlamaIndex instrumentors), plus ragpulse's
  ``document.source`` when the agent made a repeated id unique;
* the OTel GenAI ``gen_ai.retrieval.documents`` JSON array of ``{"id", "score", ...}``
  (ragpulse adds ``content`` and ``metadata`` when the application's span attribute
  limit leaves no room for the flattened form);
* OpenLLMetry's ``traceloop.entity.output`` of a retrieval, ``{"documents": [...]}`` with
  LangChain's ``page_content`` / ``metadata``.

A document without an id gets its 1-based position in the span (as the agent
does), and ids that repeat within the span are made unique
(:func:`ragpulse.agent.chunks.unique_ids`), the given id kept as the source.
"""

from __future__ import annotations

import json
from typing import Any

from ...agent.chunks import unique_ids
from ...agent.conventions import (
    DOCUMENT_FIELDS,
    DOCUMENT_SOURCE,
    GEN_AI_RETRIEVAL_DOCUMENTS,
    RETRIEVAL_DOCUMENTS,
    TRACELOOP_ENTITY_OUTPUT,
    document_key,
)
from ...agent.values import optional_float
from ..core.json_depth import json_value
from ..core.model import Chunk
from ..core.native import native_function, with_fallback

__all__ = ["span_documents"]

_ID_KEYS = ("id", "doc_id", "document_id", "chunk_id", "node_id", "id_")
_CONTENT_KEYS = ("content", "page_content", "text")
# Per prefix, the keys of document 0, 1, ... (built once: formatting them costs more than reading them).
_DOC_KEYS: dict[str, list[tuple[str, ...]]] = {}
_CACHED_DOCUMENTS = 1_000  # per prefix; documents beyond are rare and get their keys formatted


def _key_cache(prefix: str) -> list[tuple[str, ...]]:
    """The cached keys of ``prefix``'s documents 0, 1, ... (the prefixes are the conventions'
    constants, so the cache stays small)."""
    cached = _DOC_KEYS.get(prefix)
    if cached is None:
        cached = _DOC_KEYS[prefix] = []
    return cached


def _doc_keys(prefix: str, i: int) -> tuple[str, ...]:
    """The id/content/score/metadata/source attribute keys of document ``i``."""
    cached = _key_cache(prefix)
    if i < len(cached):
        return cached[i]
    keys = tuple(document_key(prefix, i, field) for field in (*DOCUMENT_FIELDS, DOCUMENT_SOURCE))
    if i == len(cached) and i < _CACHED_DOCUMENTS:
        cached.append(keys)
    return keys


def _meta_text(meta: Any) -> str:
    if meta is None or meta == "":
        return ""
    return meta if isinstance(meta, str) else json.dumps(meta, default=str)


_native_flattened = native_function("flattened_documents")
_READERS = (Chunk, optional_float, _meta_text)


def _flattened_native(attrs: dict[str, Any], prefix: str) -> list[Chunk]:
    """``ragpulse_native.flattened_documents``: the chunks :func:`_flattened_py` reads, about a
    third of the CPU (a plain dict of attributes; the reference reads any other mapping)."""
    if type(attrs) is not dict:
        return _flattened_py(attrs, prefix)
    return _native_flattened(attrs, prefix, (_key_cache(prefix), _doc_keys), _READERS)


def _flattened_py(attrs: dict[str, Any], prefix: str) -> list[Chunk]:
    """The Python reading of :func:`_flattened`."""
    chunks = []
    i = 0
    get = attrs.get
    while True:
        k_id, k_content, k_score, k_meta, k_source = _doc_keys(prefix, i)
        cid = get(k_id)
        content = get(k_content)
        if cid is None and content is None:
            break
        i += 1
        score = get(k_score)
        if score is not None and type(score) is not float:  # the common case skips the call
            score = optional_float(score)
        meta = get(k_meta, "")
        if type(meta) is not str:
            meta = _meta_text(meta)
        source = get(k_source)
        chunks.append(
            Chunk(
                str(i) if cid is None else cid if type(cid) is str else str(cid),
                "" if content is None else content if type(content) is str else str(content),
                score,
                meta,
                None if source is None else str(source),
            )
        )
    return chunks


# Chunks from the flattened documents under a prefix for i = 0, 1, ... until one is missing:
# native when the module is in use (a failure answered by the reference, core/native.py).
_flattened = with_fallback(
    "flattened_documents", _flattened_native if _native_flattened is not None else None, _flattened_py
)


def _from_objects(items: Any) -> list[Chunk]:
    """Chunks from a list of document objects (gen_ai JSON, OpenLLMetry's LangChain documents)."""
    if not isinstance(items, list):
        return []
    chunks = []
    for position, item in enumerate(items, 1):
        if not isinstance(item, dict):
            continue
        cid = next((item[k] for k in _ID_KEYS if item.get(k) is not None), None)
        content = next((item[k] for k in _CONTENT_KEYS if item.get(k) is not None), "")
        source = item.get(DOCUMENT_SOURCE) if isinstance(item.get(DOCUMENT_SOURCE), str) else None
        chunks.append(
            Chunk(
                str(position) if cid is None else str(cid),
                content if isinstance(content, str) else json.dumps(content, default=str),
                optional_float(item.get("score")),
                _meta_text(item.get("metadata")),
                source,
            )
        )
    return chunks


def span_documents(attrs: dict[str, Any], prefix: str = RETRIEVAL_DOCUMENTS) -> list[Chunk]:
    """The documents of one retrieval (``prefix``) or reranker span, ids unique within it."""
    chunks = _flattened(attrs, prefix)
    if not chunks:
        docs = attrs.get(GEN_AI_RETRIEVAL_DOCUMENTS)
        if docs is not None:
            chunks = _from_objects(json_value(docs))
        if not chunks and prefix == RETRIEVAL_DOCUMENTS:
            output = json_value(attrs.get(TRACELOOP_ENTITY_OUTPUT))
            if isinstance(output, dict):
                chunks = _from_objects(output.get("documents"))
    if len(chunks) > 1:
        ids = [c.id for c in chunks]
        if len(set(ids)) < len(ids):
            for chunk, cid in zip(chunks, unique_ids(ids, [c.content for c in chunks]) or ids, strict=True):
                chunk.id = cid
    return chunks
