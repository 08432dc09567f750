"""Near-duplicate questions become one case: MinHash LSH (datasketch) proposes, exact Jaccard decides.

Questions are normalised (collector/core/text.py) and cut into character
trigrams; datasketch's MinHash LSH finds the pairs that may be similar, and the
exact Jaccard similarity of their trigram sets decides against the threshold,
so the grouping does not depend on hash luck at the boundary. Groups are the
connected components of the similar pairs; everything is ordered, so the same
questions always give the same groups.
"""

from __future__ import annotations

from collections.abc import Sequence

from datasketch import MinHash, MinHashLSH

from ..core.text import jaccard, shingles

__all__ = ["group_near_duplicates", "match_existing"]

_PERMUTATIONS = 128
_SEED = 1


def _minhash(grams: set[str]) -> MinHash:
    m = MinHash(num_perm=_PERMUTATIONS, seed=_SEED)
    m.update_batch(sorted(g.encode() for g in grams))
    return m


class _Index:
    """Distinct normalised texts with their trigram sets and an LSH index over them."""

    def __init__(self, texts: Sequence[str], threshold: float) -> None:
        self.texts = sorted(set(texts))
        self.grams = [shingles(t) for t in self.texts]
        self.threshold = threshold
        self.lsh = MinHashLSH(threshold=max(0.05, threshold - 0.15), num_perm=_PERMUTATIONS)
        self.hashes = []
        for i, g in enumerate(self.grams):
            h = _minhash(g)
            self.hashes.append(h)
            self.lsh.insert(str(i), h)

    def similar(self, grams: set[str], h: MinHash) -> list[int]:
        """Indexes of texts whose exact Jaccard with ``grams`` reaches the threshold, ascending."""
        hits = (int(k) for k in self.lsh.query(h))
        return sorted(i for i in hits if jaccard(grams, self.grams[i]) >= self.threshold)


def group_near_duplicates(texts: Sequence[str], threshold: float) -> list[list[int]]:
    """Positions of ``texts`` (normalised questions) grouped by near-duplication; each group and
    the list of groups ordered by first position."""
    index = _Index(texts, threshold)
    parent = list(range(len(index.texts)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, (g, h) in enumerate(zip(index.grams, index.hashes, strict=True)):
        for j in index.similar(g, h):
            a, b = find(i), find(j)
            if a != b:
                parent[max(a, b)] = min(a, b)
    text_group = {t: find(i) for i, t in enumerate(index.texts)}
    groups: dict[int, list[int]] = {}
    for pos, t in enumerate(texts):
        groups.setdefault(text_group[t], []).append(pos)
    return sorted(groups.values(), key=lambda g: g[0])


def match_existing(texts: Sequence[str], existing: Sequence[str], threshold: float) -> list[int | None]:
    """For each of ``texts``, the position in ``existing`` of its most similar near-duplicate
    (ties: the lowest position), or None."""
    if not existing:
        return [None] * len(texts)
    index = _Index(existing, threshold)
    first = {}
    for pos, t in enumerate(existing):
        first.setdefault(t, pos)
    out: list[int | None] = []
    for t in texts:
        g = shingles(t)
        hits = index.similar(g, _minhash(g))
        if not hits:
            out.append(None)
            continue
        best = max(hits, key=lambda i: (jaccard(g, index.grams[i]), -first[index.texts[i]]))
        out.append(first[index.texts[best]])
    return out
