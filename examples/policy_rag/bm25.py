"""Okapi BM25 retrieval over the policy corpus.

A small, real lexical retriever: documents are tokenised (lower-cased words,
stop words removed, a light suffix stemmer that keeps stems of at least four letters, so
"retains"/"retained"/"retain" meet), and ranked by BM25 (Robertson et al.) with the usual
``k1``/``b`` parameters. It is deliberately lexical: a user who phrases a
question in the vocabulary of an old policy version gets the old version
ranked first, which is exactly the retrieval failure the demo needs to show.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["BM25Index", "tokenize"]

_WORD = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_STOP = frozenset(
    "a an and are as at be by can do does for from has have how i if in is it its of on or our "
    "the their them there this to under was we what when where which who whom why will with".split()
)


def _stem(word: str) -> str:
    """Strip a few English suffixes; enough to conflate inflections in policy prose."""
    for suffix in ("ations", "ation", "ings", "ing", "ies", "ed", "es", "s"):
        if len(word) - len(suffix) >= 4 and word.endswith(suffix):
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def tokenize(text: str) -> list[str]:
    """Lower-case words of ``text`` without stop words, stemmed; hyphenated words also split."""
    tokens: list[str] = []
    for word in _WORD.findall(text.lower()):
        parts = [word, *word.split("-")] if "-" in word else [word]
        tokens.extend(_stem(p) for p in parts if p not in _STOP)
    return tokens


@dataclass(frozen=True)
class _Doc:
    key: str
    length: int
    tf: Counter[str]


class BM25Index:
    """An in-memory BM25 index of (key, text) pairs."""

    def __init__(self, items: Sequence[tuple[str, str]], *, k1: float = 1.5, b: float = 0.75) -> None:
        if not items:
            raise ValueError("BM25Index needs at least one document")
        self.k1, self.b = k1, b
        self._docs = [
            _Doc(key, len(toks), Counter(toks)) for key, toks in ((k, tokenize(t)) for k, t in items)
        ]
        self._avg_len = sum(d.length for d in self._docs) / len(self._docs)
        df: Counter[str] = Counter()
        for doc in self._docs:
            df.update(doc.tf.keys())
        n = len(self._docs)
        # BM25+ style floor keeps idf positive for terms in most documents.
        self._idf = {term: math.log(1.0 + (n - f + 0.5) / (f + 0.5)) for term, f in df.items()}

    def __len__(self) -> int:
        return len(self._docs)

    def score(self, query: str) -> list[tuple[str, float]]:
        """Every document's BM25 score for ``query``, best first (ties keep corpus order)."""
        terms = tokenize(query)
        scored: list[tuple[str, float]] = []
        for doc in self._docs:
            norm = self.k1 * (1.0 - self.b + self.b * doc.length / self._avg_len)
            total = 0.0
            for term in terms:
                f = doc.tf.get(term, 0)
                if f:
                    total += self._idf[term] * f * (self.k1 + 1.0) / (f + norm)
            scored.append((doc.key, total))
        return sorted(scored, key=lambda kv: -kv[1])

    def search(self, query: str, k: int = 3) -> list[tuple[str, float]]:
        """The ``k`` best (key, score) pairs with a positive score."""
        return [(key, s) for key, s in self.score(query)[:k] if s > 0.0]
