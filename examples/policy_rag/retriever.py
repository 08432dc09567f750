"""The policy assistant's retriever: BM25 over every chunk, one passage per document.

The index holds every version of every policy (old versions stay indexed for
audit questions) and the unofficial notes. Results are diversified to at most
one passage per document, keeping the best-scoring one. That is a common and
reasonable-looking choice with a real flaw: when a question is worded like an
old version, the old version outscores the current one and the current one is
the passage that gets dropped. The demo relies on this to produce the
article's retrieval failure (answers from superseded text) honestly.
"""

from __future__ import annotations

from dataclasses import dataclass

from .bm25 import BM25Index
from .corpus import Chunk, Corpus

__all__ = ["RetrievedChunk", "PolicyRetriever"]


@dataclass(frozen=True)
class RetrievedChunk:
    """A chunk with its retrieval score, shaped as the agent SDK reads it (id/content/score/metadata)."""

    chunk: Chunk
    score: float

    @property
    def id(self) -> str:
        return self.chunk.id

    @property
    def content(self) -> str:
        return self.chunk.content

    @property
    def metadata(self) -> dict:
        return self.chunk.metadata()

    def as_dict(self) -> dict:
        return {"id": self.id, "content": self.content, "score": self.score, "metadata": self.metadata}


class PolicyRetriever:
    """Top-k BM25 retrieval with one passage per document."""

    def __init__(self, corpus: Corpus, *, top_k: int = 3) -> None:
        self.corpus = corpus
        self.top_k = top_k
        self._index = BM25Index([(c.id, c.content) for c in corpus.chunks])

    def search(self, query: str, k: int | None = None) -> list[RetrievedChunk]:
        """The best ``k`` passages for ``query``, at most one per document, best first."""
        k = self.top_k if k is None else k
        seen_docs: set[str] = set()
        out: list[RetrievedChunk] = []
        for chunk_id, score in self._index.score(query):
            if score <= 0.0 or len(out) >= k:
                break
            chunk = self.corpus.by_id[chunk_id]
            if chunk.doc in seen_docs:
                continue
            seen_docs.add(chunk.doc)
            out.append(RetrievedChunk(chunk, round(score, 4)))
        return out
