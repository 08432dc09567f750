"""Claim-level evidence features for the local judge's support probability.

:mod:`.support` scores a claim against one chunk at a time; this module looks at
the claim against *all* the retrieved chunks at once, which is what a verdict
is about:

- the best chunk's pair features and its pair-model logit (the strongest single source);
- sentence alignment: the best coverage by one chunk sentence and that sentence's
  bigram coverage (a claim copied from one sentence beats words scattered over a page);
- joint support: coverage by the union of the two best chunks and by all chunks
  (a claim supported by two chunks together is not unsupported);
- numbers missing from the best chunk or from the chunk that covers most of the claim
  (a changed number must not hide behind another chunk that happens to hold it), and
  from every chunk; names missing from the best chunk and from every chunk;
- a negation that the best-aligned sentence does not share (or the reverse);
- the claim's length and the number of chunks (more chunks make a high maximum
  cheaper, so the same coverage means less).

Every feature is in [0, 1]; :mod:`.claim_model` turns them into a calibrated
probability. The names in :data:`CLAIM_FEATURES` are the weights file's contract.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .evidence import ChunkEvidence
from .support import ClaimView, SupportModel, view_features
from .text import TextProfile

__all__ = ["CLAIM_FEATURES", "ChunkIndex", "ClaimEvidence", "claim_evidence"]

CLAIM_FEATURES: tuple[str, ...] = (
    "pair_logit",
    "cov",
    "novel_cov",
    "bigram_cov",
    "best_window",
    "tail_cov",
    "sent_cov",
    "sent_bigram",
    "two_chunk_cov",
    "all_chunk_cov",
    "num_miss",
    "num_miss_all",
    "ent_miss",
    "ent_miss_all",
    "neg_mismatch",
    "short",
    "length",
    "n_chunks",
    "cov_x_window",
    "window_sq",
    "sent_sq",
    "sent_num_miss",
    "sent_ent_miss",
    "rare_cov",
    "window_bigram",
)

_LOG_LEN = math.log(31.0)
_LOG_CHUNKS = math.log(101.0)


@dataclass(frozen=True, slots=True)
class ClaimEvidence:
    """A claim against all chunks: its feature vector and what the verdict needs."""

    features: list[float]
    pair_probs: list[float]  # the pair model's probability per chunk (numbers veto), in chunk order
    pair_covs: list[float]  # ``cov`` per chunk, in chunk order
    ranked: list[int]  # chunk indices, best first (by pair logit)
    best_sentence: tuple[int, int] | None  # (chunk index, sentence index) of the best-aligned sentence


def _pair_logit(model: SupportModel, feats: list[float]) -> float:
    s = model.intercept
    for w, x in zip(model.coef, feats, strict=True):
        s += w * x
    return s


def _coverage(keys: frozenset[str], n: int, have: frozenset[str] | set[str]) -> float:
    return len(keys & have) / n if n else 0.0


def _best_sentence(
    cv: ClaimView, chunks: list[ChunkEvidence], order: list[int]
) -> tuple[float, tuple[int, int] | None]:
    """Best single-sentence coverage of the claim's keys, over the best chunks (at most 4)."""
    n = len(cv.keys)
    best, where = 0.0, None
    if not n:
        return best, where
    for ci in order[:4]:
        for si, sk in enumerate(chunks[ci].sentence_keys):
            c = len(cv.keys & sk)
            if c > best * n:
                best, where = c / n, (ci, si)
    return best, where


class ChunkIndex:
    """What every claim of a trace needs from the chunk set, built once per trace:
    the union of the chunks' match keys, stems and numbers, and each key's chunk count."""

    __slots__ = ("chunks", "all_keys", "all_stems", "all_numbers", "key_df")

    def __init__(self, chunks: list[ChunkEvidence]) -> None:
        self.chunks = chunks
        self.all_keys: frozenset[str] = frozenset().union(*(c.whole.keys for c in chunks))
        self.all_stems: frozenset[str] = frozenset().union(*(c.whole.stem_set for c in chunks))
        self.all_numbers: frozenset[str] = frozenset().union(*(c.whole.numbers for c in chunks))
        df: dict[str, int] = {}
        for c in chunks:
            for k in c.whole.keys:
                df[k] = df.get(k, 0) + 1
        self.key_df = df


def _empty_features(cv: ClaimView) -> list[float]:
    nk = len(cv.keys)
    has_num, has_ent = (1.0 if cv.numbers else 0.0), (1.0 if cv.entities else 0.0)
    return [-1.0, *([0.0] * 9), has_num, has_num, has_ent, has_ent, 0.0, 1.0 if nk <= 2 else 0.0] + [
        math.log1p(nk) / _LOG_LEN,
        0.0,
        0.0,
        0.0,
        0.0,
        has_num,
        has_ent,
        0.0,
        0.0,
    ]


def claim_evidence(cv: ClaimView, cp: TextProfile, index: ChunkIndex, model: SupportModel) -> ClaimEvidence:
    """Score a prepared claim (:func:`.support.claim_view`) against every chunk of ``index``."""
    chunks = index.chunks
    if not chunks:
        return ClaimEvidence(_empty_features(cv), [], [], [], None)
    scored = model.support_all(cv, chunks)
    probs = [p for p, _ in scored]
    covs = [c for _, c in scored]
    n_chunks = len(chunks)
    # Best first by pair probability (a missing number vetoes it), then by coverage.
    order = sorted(range(n_chunks), key=lambda i: (-probs[i], -covs[i]))
    b = order[0]
    bf = view_features(cv, chunks[b])
    nk = len(cv.keys)
    c1 = max(range(n_chunks), key=covs.__getitem__)
    two = chunks[c1].whole.keys
    if n_chunks > 1:
        c2 = max((i for i in range(n_chunks) if i != c1), key=covs.__getitem__)
        two = two | chunks[c2].whole.keys
    sent_cov, where = _best_sentence(cv, chunks, order)
    sent_bigram = neg_mismatch = 0.0
    sent_num_miss = 1.0 if cv.numbers else 0.0
    sent_ent_miss = 1.0 if cv.entities else 0.0
    if where is not None:
        sp = chunks[where[0]].sentence_profile(where[1])
        sent_bigram = len(cv.bigrams & sp.bigrams) / len(cv.bigrams) if cv.bigrams else sent_cov
        if sent_cov >= 0.5 and sp.negated != cp.negated:
            neg_mismatch = 1.0
        if cv.numbers:
            sent_num_miss = len(cv.numbers - sp.numbers) / len(cv.numbers)
        if cv.entities:
            sent_ent_miss = len(cv.entities - sp.stem_set) / len(cv.entities)
    num_miss_all = len(cv.numbers - index.all_numbers) / len(cv.numbers) if cv.numbers else 0.0
    ent_miss_all = len(cv.entities - index.all_stems) / len(cv.entities) if cv.entities else 0.0
    feats = [
        max(-1.0, min(1.0, _pair_logit(model, bf) / 8.0)),
        bf[0],
        bf[1],
        bf[2],
        bf[3],
        bf[10],
        sent_cov,
        sent_bigram,
        _coverage(cv.keys, nk, two),
        _coverage(cv.keys, nk, index.all_keys),
        max(bf[4], _number_miss(cv, chunks[c1])),
        num_miss_all,
        bf[5],
        ent_miss_all,
        neg_mismatch,
        bf[6],
        math.log1p(nk) / _LOG_LEN,
        math.log1p(n_chunks) / _LOG_CHUNKS,
        bf[0] * bf[3],
        bf[3] * bf[3],
        sent_cov * sent_cov,
        sent_num_miss,
        sent_ent_miss,
        _rare_coverage(cv, index, b),
        _window_bigram(cv, chunks, where),
    ]
    return ClaimEvidence(feats, probs, covs, order, where)


def _number_miss(cv: ClaimView, chunk: ChunkEvidence) -> float:
    """Share of the claim's numbers that ``chunk`` lacks."""
    return len(cv.numbers - chunk.whole.numbers) / len(cv.numbers) if cv.numbers else 0.0


def _rare_coverage(cv: ClaimView, index: ChunkIndex, b: int) -> float:
    """Coverage of the claim's keys by chunk ``b``, each key weighted by its rarity among
    the chunks (``log((N + 1) / (df + 0.5))``): a name found in one chunk of many says more
    than a word found in all of them."""
    n = len(index.chunks)
    df = index.key_df
    have = index.chunks[b].whole.keys
    total = hit = 0.0
    for k in cv.keys:
        w = math.log((n + 1) / (df.get(k, 0) + 0.5))
        total += w
        if k in have:
            hit += w
    return hit / total if total > 0 else 0.0


def _window_bigram(cv: ClaimView, chunks: list[ChunkEvidence], where: tuple[int, int] | None) -> float:
    """Bigram coverage of the claim by the best-aligned sentence and its two neighbours."""
    if not cv.bigrams or where is None:
        return 0.0
    lists = chunks[where[0]].sentence_stem_lists
    i = where[1]
    seq = [t for j in range(max(0, i - 1), min(len(lists), i + 2)) for t in lists[j]]
    return len(cv.bigrams & frozenset(zip(seq, seq[1:], strict=False))) / len(cv.bigrams)
