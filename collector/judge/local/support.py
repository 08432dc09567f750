"""Claim-support scoring for the local judge: a handful of interpretable
lexical, numeric, entity and negation features combined by a tiny logistic
model whose weights live in a versioned JSON file (``weights/support-v1.json``).

Features of a (claim, chunk) pair, all in [0, 1]. A claim stem is *covered*
when the chunk has the same stem or one sharing its first four characters
(``authorization``/``authorized``, ``victories``/``victory``):

- ``cov``: share of the claim's content stems covered by the chunk;
- ``novel_cov``: the same, over stems the query did not already contain
  (restating the question proves nothing);
- ``bigram_cov``: share of the claim's stem bigrams found in the chunk (word order);
- ``best_window``: best coverage by two consecutive chunk sentences (locality);
- ``num_miss``: share of the claim's numbers absent from the chunk;
- ``ent_miss``: share of the claim's capitalised names absent from the chunk;
- ``short``: the claim has at most two content stems (fragments are weak evidence);
- ``cov_x_window``, ``bigram_x_window``, ``window_sq``: products that let the
  model demand *both* overall and local coverage (a curved decision boundary);
- ``tail_cov``: coverage of the second half of the claim, where the new
  information (the predicate, the value) usually sits.

Negation is deliberately not a model feature (on the dev data it is noise);
it is used as a contradiction rule in :mod:`.judge`.

The weights are fit once on the dev data (see bench/judge_quality.py, which
reports the k-fold cross-validated figure); the model is small enough to read.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ..text.tokens import TextProfile, stem
from .evidence import ChunkEvidence

__all__ = [
    "FEATURES",
    "NUM_MISS",
    "SupportModel",
    "pair_features",
    "view_coverage",
    "load_model",
    "read_weights",
    "fit_logistic",
    "attested_numbers",
    "number_neighbours",
    "number_next_to",
]

FEATURES: tuple[str, ...] = (
    "cov",
    "novel_cov",
    "bigram_cov",
    "best_window",
    "num_miss",
    "ent_miss",
    "short",
    "cov_x_window",
    "bigram_x_window",
    "window_sq",
    "tail_cov",
)

NUM_MISS = FEATURES.index("num_miss")


_GENERIC_WORDS = """use used using make made get give given take help provide need way thing people person important
different various several many much also well good better best new like just even able ensure include example such
known call often usually typically generally however although though can could work part lot kind type case form
result level process specific certain overall""".split()
GENERIC_STEMS: frozenset[str] = frozenset(stem(w) for w in _GENERIC_WORDS)


@dataclass(frozen=True, slots=True)
class ClaimView:
    """What the features need from one claim, computed once per claim (not per chunk)."""

    stems: frozenset[str]  # content stems less generic words
    novel: frozenset[str]  # of those, the ones the query does not contain
    tail: frozenset[str]  # stems of the claim's second half
    bigrams: frozenset[tuple[str, str]]
    numbers: frozenset[str]
    entities: frozenset[str]
    # Match keys (first four characters) of ``stems``, ``novel`` and ``tail``. When no two of
    # the claim's stems share a key (``unique_keys``, the usual case), a stem is covered exactly
    # when its key is in the chunk, so every coverage count is one C-level set intersection.
    keys: frozenset[str]
    novel_keys: frozenset[str]
    tail_keys: frozenset[str]
    unique_keys: bool
    # Each number of the claim with the words around it (:func:`number_neighbours`).
    number_neighbours: tuple[tuple[str, frozenset[str]], ...] = ()


# How many content stems either side of a number are its neighbours: what the number counts
# or dates ("kept for 7 years", "born in 1961"). Three reach too far ("7 years in the
# Frankfurt archive" meets "the archive has 7 floors"); docs/judge-internals.md has the figures.
NEIGHBOUR_WINDOW = 2


def number_neighbours(stems: list[str] | tuple[str, ...], numbers: frozenset[str]) -> dict[str, set[str]]:
    """The content stems within :data:`NEIGHBOUR_WINDOW` positions of each of ``numbers`` in
    the stem sequence ``stems`` (numbers left out; a number absent from it has none)."""
    out: dict[str, set[str]] = {}
    for i, s in enumerate(stems):
        if s in numbers:
            near = stems[max(0, i - NEIGHBOUR_WINDOW) : i + NEIGHBOUR_WINDOW + 1]
            out.setdefault(s, set()).update(t for t in near if not t[:1].isdigit())
    return out


def number_next_to(number: str, near: AbstractSet[str], chunk: ChunkEvidence) -> bool:
    """Whether a sentence of ``chunk`` has ``number`` next to one of the stems ``near`` (the
    claim's words around it, :func:`number_neighbours`): the chunk states that number of the
    same thing."""
    one = frozenset((number,))
    return any(
        near & number_neighbours(seq, one).get(number, set())
        for seq in chunk.sentence_stem_lists
        if number in seq
    )


def attested_numbers(
    neighbours: Mapping[str, AbstractSet[str]], chunks: list[ChunkEvidence]
) -> frozenset[str]:
    """The numbers of ``neighbours`` (a claim's number -> its words around it) that some chunk
    states next to one of those words (:func:`number_next_to`)."""
    return frozenset(
        n
        for n, near in neighbours.items()
        if near and any(number_next_to(n, near, c) for c in chunks if n in c.whole.numbers)
    )


def claim_view(claim: TextProfile, query_stems: frozenset[str]) -> ClaimView:
    """Prepare a claim for :func:`view_features`."""
    cs = claim.stem_set - GENERIC_STEMS or claim.stem_set
    novel = cs - query_stems
    tail = frozenset(claim.stems[len(claim.stems) // 2 :]) - GENERIC_STEMS
    keys = frozenset([t[:4] for t in cs])
    return ClaimView(
        stems=cs,
        novel=novel,
        tail=tail,
        bigrams=claim.bigrams,
        numbers=claim.numbers,
        entities=claim.entities,
        keys=keys,
        novel_keys=frozenset([t[:4] for t in novel]),
        tail_keys=frozenset([t[:4] for t in tail]),
        unique_keys=len(keys) == len(cs),
        number_neighbours=tuple(
            (n, frozenset(near)) for n, near in number_neighbours(claim.stems, claim.numbers).items()
        )
        if claim.numbers
        else (),
    )


def pair_features(claim: TextProfile, query_stems: frozenset[str], chunk: ChunkEvidence) -> list[float]:
    """The feature vector (order of :data:`FEATURES`) for one claim against one chunk."""
    return view_features(claim_view(claim, query_stems), chunk)


def view_features(cv: ClaimView, chunk: ChunkEvidence) -> list[float]:
    """:func:`pair_features` for a prepared claim."""
    cs = cv.stems
    n = len(cs)
    whole = chunk.whole
    num_miss = len(cv.numbers - whole.numbers) / len(cv.numbers) if cv.numbers else 0.0
    ent_miss = len(cv.entities - whole.stem_set) / len(cv.entities) if cv.entities else 0.0
    short = 1.0 if n <= 2 else 0.0
    if n == 0:
        return [0.0, 0.0, 0.0, 0.0, num_miss, ent_miss, 1.0, 0.0, 0.0, 0.0, 0.0]
    kk = whole.keys
    if cv.unique_keys:
        # Key i is covered exactly when stem i is: count keys.
        mkeys = cv.keys & kk
        if not mkeys:
            return [0.0, 0.0, 0.0, 0.0, num_miss, ent_miss, short, 0.0, 0.0, 0.0, 0.0]
        nm = len(mkeys)
        novel_hit = len(mkeys & cv.novel_keys)
        tail_hit = len(mkeys & cv.tail_keys)
        best = max(map(len, map(mkeys.intersection, chunk.window_keys)))
    else:
        # Claim stems the chunk covers: same stem, or the same first four characters.
        matched = {t for t in cs if t[:4] in kk}
        if not matched:
            return [0.0, 0.0, 0.0, 0.0, num_miss, ent_miss, short, 0.0, 0.0, 0.0, 0.0]
        nm = len(matched)
        novel_hit = len(matched & cv.novel)
        tail_hit = len(cv.tail & matched)
        best = 0
        for wk in chunk.window_keys:
            c = sum([1 for t in matched if t[:4] in wk])
            if c > best:
                best = c
    cov = nm / n
    novel_cov = novel_hit / len(cv.novel) if cv.novel else cov
    bigram_cov = len(cv.bigrams & whole.bigrams) / len(cv.bigrams) if cv.bigrams else cov
    best_window = best / n
    tail_cov = tail_hit / len(cv.tail) if cv.tail else cov
    return [
        cov,
        novel_cov,
        bigram_cov,
        best_window,
        num_miss,
        ent_miss,
        short,
        cov * best_window,
        bigram_cov * best_window,
        best_window * best_window,
        tail_cov,
    ]


def view_coverage(cv: ClaimView, chunk: ChunkEvidence) -> float:
    """The ``cov`` feature alone (what :func:`view_features` puts first)."""
    n = len(cv.stems)
    if n == 0:
        return 0.0
    kk = chunk.whole.keys
    if cv.unique_keys:
        return len(cv.keys & kk) / n
    return len({t for t in cv.stems if t[:4] in kk}) / n


@dataclass(frozen=True, slots=True)
class SupportModel:
    """Logistic model over :data:`FEATURES`: ``p = sigmoid(b + sum w_i * x_i)``."""

    version: str
    coef: tuple[float, ...]
    intercept: float
    threshold: float
    digest: str

    def probability(self, feats: list[float]) -> float:
        """Probability that the chunk supports the claim. A number in the claim that
        the chunk does not contain vetoes support outright (numbers are exact facts:
        "within 2 hours" is not entailed by "within 24 hours")."""
        if feats[NUM_MISS] > 0:
            return 0.0
        w = self.coef
        # Unrolled, left to right: the same sums as adding w_i * x_i in order to the intercept.
        s = (
            self.intercept
            + w[0] * feats[0]
            + w[1] * feats[1]
            + w[2] * feats[2]
            + w[3] * feats[3]
            + w[4] * feats[4]
            + w[5] * feats[5]
            + w[6] * feats[6]
            + w[7] * feats[7]
            + w[8] * feats[8]
            + w[9] * feats[9]
            + w[10] * feats[10]
        )
        if s < -30:
            return 0.0
        return 1.0 / (1.0 + math.exp(-s))

    def support_all(self, cv: ClaimView, chunks: list[ChunkEvidence]) -> list[tuple[float, float]]:
        """:meth:`support` of a prepared claim against each chunk, in order.

        The same computation as :func:`view_features` followed by :meth:`probability`,
        written out in one loop (no per-pair calls or feature lists): every feature and
        the weighted sum are computed by the same expressions in the same order, so the
        probabilities are bit-identical.
        """
        w0, w1, w2, w3, w4, w5, w6, w7, w8, w9, w10 = self.coef
        b = self.intercept
        exp = math.exp
        numbers, entities = cv.numbers, cv.entities
        n_ent = len(entities)
        n = len(cv.stems)
        short = 1.0 if n <= 2 else 0.0
        keys, novel_keys, tail_keys = cv.keys, cv.novel_keys, cv.tail_keys
        n_novel, n_tail, n_bigrams = len(cv.novel), len(cv.tail), len(cv.bigrams)
        out: list[tuple[float, float]] = []
        append = out.append
        for chunk in chunks:
            whole = chunk.whole
            if numbers and not numbers <= whole.numbers:
                append((0.0, view_coverage(cv, chunk)))  # a missing number vetoes support
                continue
            num_miss = 0.0  # every claim number is in the chunk (else vetoed above)
            ent_miss = len(entities - whole.stem_set) / n_ent if n_ent else 0.0
            cov = novel_cov = bigram_cov = best_window = tail_cov = 0.0
            if n == 0:
                f6 = 1.0
            else:
                f6 = short
                if cv.unique_keys:
                    mkeys = keys & whole.keys
                    nm = len(mkeys)
                    if nm:
                        novel_hit = len(mkeys & novel_keys)
                        tail_hit = len(mkeys & tail_keys)
                        # One matched key lies in some sentence, hence in some window: best is 1.
                        best = max(map(len, map(mkeys.intersection, chunk.window_keys))) if nm > 1 else 1
                else:
                    kk = whole.keys
                    matched = {t for t in cv.stems if t[:4] in kk}
                    nm = len(matched)
                    if nm:
                        novel_hit = len(matched & cv.novel)
                        tail_hit = len(cv.tail & matched)
                        best = 0 if nm > 1 else 1
                        for wk in chunk.window_keys if nm > 1 else ():
                            c = sum([1 for t in matched if t[:4] in wk])
                            if c > best:
                                best = c
                if nm:
                    cov = nm / n
                    novel_cov = novel_hit / n_novel if n_novel else cov
                    bigram_cov = len(cv.bigrams & whole.bigrams) / n_bigrams if n_bigrams else cov
                    best_window = best / n
                    tail_cov = tail_hit / n_tail if n_tail else cov
            s = (
                b
                + w0 * cov
                + w1 * novel_cov
                + w2 * bigram_cov
                + w3 * best_window
                + w4 * num_miss
                + w5 * ent_miss
                + w6 * f6
                + w7 * (cov * best_window)
                + w8 * (bigram_cov * best_window)
                + w9 * (best_window * best_window)
                + w10 * tail_cov
            )
            append((0.0 if s < -30 else 1.0 / (1.0 + exp(-s)), cov))
        return out

    def support(self, cv: ClaimView, chunk: ChunkEvidence) -> tuple[float, float]:
        """(:meth:`probability`, ``cov`` feature) of a prepared claim against a chunk. A claim
        number missing from the chunk vetoes support before the other features are computed."""
        if cv.numbers and not cv.numbers <= chunk.whole.numbers:
            return 0.0, view_coverage(cv, chunk)
        feats = view_features(cv, chunk)
        return self.probability(feats), feats[0]


def read_weights(
    packaged: str, path: str | Path | None, features: tuple[str, ...]
) -> tuple[dict[str, Any], str]:
    """A weights file (``path``, else the packaged ``weights/<packaged>``) parsed, and the
    first 8 hex digits of its SHA-256 (the judge id pins it). Raises ValueError when its
    features or coefficients do not match ``features``, the code's contract."""
    if path is None:
        raw = resources.files("ragpulse.collector.judge.local").joinpath(f"weights/{packaged}").read_bytes()
    else:
        raw = Path(path).read_bytes()
    data = json.loads(raw)
    if tuple(data["features"]) != features or len(data["coef"]) != len(features):
        raise ValueError(f"weights file features {data['features']} do not match {features}")
    return data, hashlib.sha256(raw).hexdigest()[:8]


def load_model(path: str | Path | None = None) -> SupportModel:
    """Load the weights file (the packaged ``weights/support-v1.json`` by default)."""
    data, digest = read_weights("support-v1.json", path, FEATURES)
    return SupportModel(
        version=str(data["version"]),
        coef=tuple(float(c) for c in data["coef"]),
        intercept=float(data["intercept"]),
        threshold=float(data.get("threshold", 0.5)),
        digest=digest,
    )


def fit_logistic(
    rows: list[list[float]], labels: list[int], l2: float = 1e-3, iterations: int = 400, rate: float = 1.0
) -> tuple[list[float], float]:
    """Plain batch gradient descent for L2-regularised logistic regression
    (pure Python, a few thousand rows at most). Returns (coefficients, intercept)."""
    d = len(rows[0])
    w = [0.0] * d
    b = 0.0
    m = len(rows)
    for _ in range(iterations):
        gw = [0.0] * d
        gb = 0.0
        for x, y in zip(rows, labels, strict=True):
            s = b + sum(wi * xi for wi, xi in zip(w, x, strict=True))
            p = 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, s))))
            e = p - y
            for i in range(d):
                gw[i] += e * x[i]
            gb += e
        for i in range(d):
            w[i] -= rate * (gw[i] / m + l2 * w[i])
        b -= rate * gb / m
    return w, b
