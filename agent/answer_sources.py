"""Which chunks an answer's citation markers refer to (export thread).

``[2]`` means the second chunk *the generation that wrote the answer was given*: the
chunks argument of that ``@generation`` (or ``GenerationHandle.set_chunks``), in the order
it got them. The writer is the latest generation given chunks whose output the answer is
(equal to, inside, or around it); failing a match, the latest generation given chunks.
Without any, markers refer to all chunks of the call in retrieval order: every retrieval's
chunks in the order the retrievals started, where a reranker's output takes the place of the
chunks retrieved before it.

A chunk given to a generation keeps the id its retrieval span wrote: the given item is matched
to a retrieved one by identity (the same dict or document object, or the document of a
``(document, score)`` pair), else by equal content (a list of the chunks' texts), else it is
read on its own (:func:`ragpulse.agent.chunks.normalize_chunks`).
"""

from __future__ import annotations

from .chunks import Chunk, normalize_chunks
from .outputs import joined_text, output_text
from .records import GenerationRecord, RagRecord, RetrievalRecord

__all__ = ["retrieved_chunks", "given_ids", "answer_chunk_ids"]


def retrieved_chunks(record: RetrievalRecord) -> list[Chunk]:
    """A retrieval's chunks, normalised once (the retrieval span and the answer's markers share them)."""
    chunks = record.normalized
    if chunks is None:
        raw = record.chunks
        if raw is None and record.parts is not None:
            raw = record.parts
        chunks = record.normalized = normalize_chunks(raw)
    return chunks


class _Index:
    """The retrieved chunks of one call: object identity and content to chunk id."""

    __slots__ = ("size", "by_object", "by_content")

    def __init__(self, retrievals: list[RetrievalRecord]):
        self.size = len(retrievals)
        self.by_object: dict[int, str] = {}
        self.by_content: dict[str, str] = {}
        for rec in retrievals:
            chunks = retrieved_chunks(rec)
            raw = rec.chunks if isinstance(rec.chunks, list) else rec.parts
            if isinstance(raw, list) and len(raw) == len(chunks):
                for item, chunk in zip(raw, chunks, strict=True):
                    self.by_object.setdefault(id(item), chunk.id)
                    if isinstance(item, tuple) and len(item) == 2:  # (document, score)
                        self.by_object.setdefault(id(item[0]), chunk.id)
            for chunk in chunks:
                if chunk.content:
                    self.by_content.setdefault(chunk.content, chunk.id)


def _index(root: RagRecord) -> _Index:
    """The call's index, rebuilt when a retrieval was added since it was made (the raw lists it
    keys by identity stay referenced by their records, so no id is reused while it lives)."""
    retrievals = root.retrievals or []
    index = root.sources_cache
    if not isinstance(index, _Index) or index.size != len(retrievals):
        index = root.sources_cache = _Index(list(retrievals))
    return index


def given_ids(record: GenerationRecord) -> list[str]:
    """The ids of the chunks ``record`` was given, in its order (see the module docstring)."""
    docs = record.documents
    if not docs:
        return []
    own = normalize_chunks(docs)
    if record.root is None or not record.root.retrievals:
        return [c.id for c in own]
    index = _index(record.root)
    ids = []
    for item, chunk in zip(docs, own, strict=True):
        cid = index.by_object.get(id(item))
        if cid is None and isinstance(item, tuple) and len(item) == 2:
            cid = index.by_object.get(id(item[0]))
        if cid is None and chunk.content:
            cid = index.by_content.get(chunk.content)
        ids.append(cid if cid is not None else chunk.id)
    return ids


def _output(record: GenerationRecord) -> str:
    if record.parts is not None:
        return joined_text(record.parts)
    return output_text(record.output) or ""


def _writer(generations: list[GenerationRecord], answer: str | None) -> GenerationRecord:
    target = (answer or "").strip()
    if target:
        for record in reversed(generations):
            text = _output(record).strip()
            if text and (text == target or text in target or target in text):
                return record
    return generations[-1]


def _call_ids(root: RagRecord) -> list[str] | None:
    ids: list[str] | None = None
    for rec in root.retrievals or ():
        if rec.chunks is None and rec.parts is None:
            continue  # no chunks recorded (it raised, or returned an iterator)
        chunk_ids = [c.id for c in retrieved_chunks(rec)]
        ids = chunk_ids if rec.reranker or ids is None else ids + chunk_ids
    return ids


def answer_chunk_ids(root: RagRecord, answer: str | None) -> list[str] | None:
    """The chunk ids the markers of ``answer`` refer to by position; None when no chunk is known."""
    if root.generations:
        return given_ids(_writer(root.generations, answer))
    return _call_ids(root)
