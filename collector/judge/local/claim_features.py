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
- the claim's length and the number of chunks (more chunks make a high maximum
  cheaper, so the same coverage means less), with their squares and product: the
  supported rate at a given coverage follows the input's shape (a short atomic fact
  against a long article, a long sentence against a few snippets) non-linearly, and one
  calibration map serves every shape only when the model sees it.

Every feature is in [0, 1]; :mod:`.claim_model` turns them into a calibrated
probability. The names in :data:`CLAIM_FEATURES` are the weights file's contract.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..text.numbers import is_ordinal
from .evidence import ChunkEvidence
from .rules.segments import unmatched_segment
from .support import ClaimView, SupportModel, attested_numbers, view_features

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
    "short",
    "length",
    "n_chunks",
    "cov_x_window",
    "window_sq",
    "sent_sq",
    "sent_num_miss",
    "sent_ent_miss",
    "window_bigram",
    "length_sq",
    "n_chunks_sq",
    "length_x_chunks",
)

_LOG_LEN = math.log(31.0)
_LOG_CHUNKS = math.log(101.0)


@dataclass(frozen=True, slots=True)
class ClaimEvidence:
    """A claim against all chunks: its feature vector and what the verdict needs."""

    features: list[float]
    pair_probs: list[float]  # the pair model's probability per chunk (numbers veto), in chunk order
    pair_covs: list[float]  # ``cov`` per chunk, in chunk order
    best: int  # index of the best chunk (pair probability, then coverage); -1 without chunks
    best_sentence: tuple[int, int] | None  # (chunk index, sentence index) of the best-aligned sentence
    # A number of the claim is missing from its best chunk (``num_miss``), yet each number
    # that chunk lacks is in another chunk next to the same words (:func:`numbers_in_context`):
    # the claim may rest on two chunks. False when no number is missing.
    numbers_elsewhere: bool = False
    # Every number of the claim that its best chunk (or the chunk covering most of it) lacks
    # is an ordinal ("its first voyage" against "her maiden voyage", "the fifth pillar"
    # against an unnumbered list): on the dev data such claims are supported about twice as
    # often as those missing a cardinal (43 claims, cross-validated caps).
    ordinals_missing: bool = False
    # A capitalised name of the claim is in no chunk at all ("Creme Puff from Florida" where
    # the chunks say Texas): no single chunk can vouch for the whole claim.
    name_missing: bool = False
    # A segment of the claim has none of its words in any chunk (:mod:`.segments`).
    segment_missing: bool = False

    @property
    def one_chunk_supports(self) -> bool:
        """One chunk supports the claim on its own by the pair model (its number veto
        included), every name of the claim is in some chunk and no segment of it is missing
        from all of them: the verdict is ``supported`` whatever the claim probability (unless
        the chunk's sentence conflicts with the claim). Otherwise the calibrated probability
        decides: on the dev data about half of the claims with a name no chunk has are
        supported (131 of 245)."""
        if self.name_missing or self.segment_missing:
            return False
        return max(self.pair_probs, default=0.0) >= 0.5


def _pair_logit(model: SupportModel, feats: list[float]) -> float:
    s = model.intercept
    for w, x in zip(model.coef, feats, strict=True):
        s += w * x
    return s


def _coverage(keys: frozenset[str], n: int, have: frozenset[str] | set[str]) -> float:
    return len(keys & have) / n if n else 0.0


def _best_sentence(
    cv: ClaimView, chunks: list[ChunkEvidence], candidates: list[int]
) -> tuple[float, tuple[int, int] | None]:
    """Best single-sentence coverage of the claim's keys over the candidate chunks, and where."""
    n = len(cv.keys)
    best, where = 0, None
    if not n:
        return 0.0, where
    inter = cv.keys.intersection
    for ci in candidates:
        counts = list(map(len, map(inter, chunks[ci].sentence_keys)))
        m = max(counts, default=0)
        if m > best:
            best, where = m, (ci, counts.index(m))
    return best / n, where


class ChunkIndex:
    """What every claim of a trace needs from the chunk set, built once per trace and each
    part on first use: the union of the chunks' match keys, stems and numbers."""

    __slots__ = ("chunks", "_all_keys", "_all_stems", "_all_numbers")

    def __init__(self, chunks: list[ChunkEvidence]) -> None:
        self.chunks = chunks
        self._all_keys: frozenset[str] | None = None
        self._all_stems: frozenset[str] | None = None
        self._all_numbers: frozenset[str] | None = None

    @property
    def all_keys(self) -> frozenset[str]:
        if self._all_keys is None:
            self._all_keys = frozenset().union(*(c.whole.keys for c in self.chunks))
        return self._all_keys

    @property
    def all_stems(self) -> frozenset[str]:
        if self._all_stems is None:
            self._all_stems = frozenset().union(*(c.whole.stem_set for c in self.chunks))
        return self._all_stems

    @property
    def all_numbers(self) -> frozenset[str]:
        if self._all_numbers is None:
            self._all_numbers = frozenset().union(*(c.whole.numbers for c in self.chunks))
        return self._all_numbers


def _empty_features(cv: ClaimView) -> list[float]:
    """The features of a claim when there are no chunks: nothing covered, everything missing."""
    has_num, has_ent = (1.0 if cv.numbers else 0.0), (1.0 if cv.entities else 0.0)
    values = dict.fromkeys(CLAIM_FEATURES, 0.0)
    values["pair_logit"] = -1.0
    for name in ("num_miss", "num_miss_all", "sent_num_miss"):
        values[name] = has_num
    for name in ("ent_miss", "ent_miss_all", "sent_ent_miss"):
        values[name] = has_ent
    values["short"] = 1.0 if len(cv.keys) <= 2 else 0.0
    values["length"] = math.log1p(len(cv.keys)) / _LOG_LEN
    values["length_sq"] = values["length"] ** 2
    return [values[name] for name in CLAIM_FEATURES]


def claim_evidence(
    cv: ClaimView, index: ChunkIndex, model: SupportModel, text: str | None = None
) -> ClaimEvidence:
    """Score a prepared claim (:func:`.support.claim_view`) against every chunk of ``index``;
    with the claim's ``text``, also read its segments (:mod:`.segments`) where one chunk would
    otherwise support it on its own."""
    chunks = index.chunks
    if not chunks:
        return ClaimEvidence(_empty_features(cv), [], [], -1, None)
    scored = model.support_all(cv, chunks)
    probs = [p for p, _ in scored]
    covs = [c for _, c in scored]
    n_chunks = len(chunks)
    # The best chunk by pair probability (a missing number vetoes it), then by coverage; and
    # the two chunks that cover most of the claim.
    top = max(probs)
    tied = [i for i, p in enumerate(probs) if p == top]
    b = tied[0] if len(tied) == 1 else max(tied, key=covs.__getitem__)
    bf = view_features(cv, chunks[b])
    nk = len(cv.keys)
    c1 = max(range(n_chunks), key=covs.__getitem__)
    two = chunks[c1].whole.keys
    cands = [b] if b == c1 else [b, c1]
    if n_chunks > 1:
        c2 = max((i for i in range(n_chunks) if i != c1), key=covs.__getitem__)
        two = two | chunks[c2].whole.keys
        if c2 != b:
            cands.append(c2)
    sent_cov, where = _best_sentence(cv, chunks, cands)
    sent_bigram = 0.0
    sent_num_miss = 1.0 if cv.numbers else 0.0
    sent_ent_miss = 1.0 if cv.entities else 0.0
    if where is not None:
        chunk, si = chunks[where[0]], where[1]
        seq = chunk.sentence_stem_lists[si]
        if cv.bigrams:
            sent_bigram = len(cv.bigrams.intersection(zip(seq, seq[1:]))) / len(cv.bigrams)  # noqa: B905
        else:
            sent_bigram = sent_cov
        if cv.numbers:
            sent_num_miss = len(cv.numbers - chunk.sentence_profile(si).numbers) / len(cv.numbers)
        if cv.entities:
            sent_ent_miss = len(cv.entities - chunk.sentence_stems[si]) / len(cv.entities)
    length = math.log1p(nk) / _LOG_LEN
    chunk_count = math.log1p(n_chunks) / _LOG_CHUNKS
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
        bf[6],
        length,
        chunk_count,
        bf[0] * bf[3],
        bf[3] * bf[3],
        sent_cov * sent_cov,
        sent_num_miss,
        sent_ent_miss,
        _window_bigram(cv, chunks, where),
        length * length,
        chunk_count * chunk_count,
        length * chunk_count,
    ]
    in_context = feats[10] > 0 and num_miss_all == 0 and numbers_in_context(cv, chunks, (b, c1))
    ordinals = feats[10] > 0 and _only_ordinals_missing(cv, chunks[b], chunks[c1])
    segment = text is not None and top >= 0.5 and unmatched_segment(text, cv.keys, index.all_keys)
    return ClaimEvidence(feats, probs, covs, b, where, in_context, ordinals, ent_miss_all > 0, segment)


def _only_ordinals_missing(cv: ClaimView, best: ChunkEvidence, widest: ChunkEvidence) -> bool:
    """Every number of the claim that its best chunk or its best-covering chunk lacks is an
    ordinal (:attr:`ClaimEvidence.ordinals_missing`)."""
    missing = (cv.numbers - best.whole.numbers) | (cv.numbers - widest.whole.numbers)
    return all(map(is_ordinal, missing))


def numbers_in_context(cv: ClaimView, chunks: list[ChunkEvidence], best: tuple[int, ...]) -> bool:
    """Whether every number of the claim that its ``best`` chunks (indices) lack is in some
    chunk sentence next to one of the words it has next to it in the claim
    (:func:`.support.attested_numbers`): "backups are kept for 7 years in the archive" against
    another chunk's "billing backups are kept for 7 years" is, against "the archive has 7
    floors" or "credentials are rotated every 4 days" against "laptops are reported within 4
    hours" is not. The numbers the best chunks have need no context test: they come with the
    rest of the claim, often reordered ("in 1901, Dunant shared the prize" for "Dunant shared
    the prize in 1901")."""
    lacking = frozenset().union(*(cv.numbers - chunks[i].whole.numbers for i in best))
    near_of = dict(cv.number_neighbours)
    return lacking <= attested_numbers({n: near_of[n] for n in lacking if n in near_of}, chunks)


def _number_miss(cv: ClaimView, chunk: ChunkEvidence) -> float:
    """Share of the claim's numbers that ``chunk`` lacks."""
    return len(cv.numbers - chunk.whole.numbers) / len(cv.numbers) if cv.numbers else 0.0


def _window_bigram(cv: ClaimView, chunks: list[ChunkEvidence], where: tuple[int, int] | None) -> float:
    """Bigram coverage of the claim by the best-aligned sentence and its two neighbours."""
    if not cv.bigrams or where is None:
        return 0.0
    lists = chunks[where[0]].sentence_stem_lists
    i = where[1]
    seq = [t for j in range(max(0, i - 1), min(len(lists), i + 2)) for t in lists[j]]
    return len(cv.bigrams.intersection(zip(seq, seq[1:]))) / len(cv.bigrams)  # noqa: B905
