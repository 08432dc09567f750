"""Claim-support scoring for the local judge: a handful of interpretable
lexical, numeric, entity and negation features combined by a tiny logistic
model whose weights live in a versioned JSON file (``weights/support-v1.json``).

Features of a (claim, chunk) pair, all in [0, 1] or small counts:

- ``cov``: share of the claim's content stems found in the chunk;
- ``novel_cov``: the same, over stems the query did not already contain
  (restating the question proves nothing);
- ``bigram_cov``: share of the claim's stem bigrams found in the chunk (word order);
- ``best_window``: best coverage by two consecutive chunk sentences (locality);
- ``num_miss``: share of the claim's numbers absent from the chunk;
- ``ent_miss``: share of the claim's capitalised names absent from the chunk;
- ``neg_mismatch``: negation in exactly one of claim and best-matching sentence;
- ``short``: the claim has at most two content stems (fragments are weak evidence).

The weights are fit once on the dev data (see bench/judge_quality.py, which
reports the k-fold cross-validated figure); the model is small enough to read.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from .evidence import ChunkEvidence
from .text import TextProfile

__all__ = ["FEATURES", "SupportModel", "pair_features", "best_sentence", "load_model", "fit_logistic"]

FEATURES: tuple[str, ...] = (
    "cov",
    "novel_cov",
    "bigram_cov",
    "best_window",
    "num_miss",
    "ent_miss",
    "neg_mismatch",
    "short",
)


def best_sentence(claim: TextProfile, chunk: ChunkEvidence) -> tuple[int, float]:
    """Index and claim coverage of the chunk sentence that covers the claim best."""
    cs = claim.stem_set
    best_i, best = 0, -1.0
    n = max(1, len(cs))
    for i, sp in enumerate(chunk.sentences):
        c = len(cs & sp.stem_set) / n
        if c > best:
            best_i, best = i, c
    return best_i, max(best, 0.0)


def pair_features(claim: TextProfile, query_stems: frozenset[str], chunk: ChunkEvidence) -> list[float]:
    """The feature vector (order of :data:`FEATURES`) for one claim against one chunk."""
    cs = claim.stem_set
    ks = chunk.whole.stem_set
    n = len(cs)
    if n == 0:
        return [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]
    cov = len(cs & ks) / n
    novel = cs - query_stems
    novel_cov = len(novel & ks) / len(novel) if novel else cov
    bigram_cov = len(claim.bigrams & chunk.whole.bigrams) / len(claim.bigrams) if claim.bigrams else cov
    sents = chunk.sentences
    best_window = 0.0
    best_i, best_c = 0, -1
    for i, sp in enumerate(sents):
        c1 = len(cs & sp.stem_set)
        if c1 > best_c:
            best_i, best_c = i, c1
        if i + 1 < len(sents):
            w = len(cs & (sp.stem_set | sents[i + 1].stem_set))
        else:
            w = c1
        if w > best_window:
            best_window = w
    best_window /= n
    num_miss = len(claim.numbers - chunk.whole.numbers) / len(claim.numbers) if claim.numbers else 0.0
    ent_miss = len(claim.entities - ks) / len(claim.entities) if claim.entities else 0.0
    neg_mismatch = 1.0 if sents and sents[best_i].negated != claim.negated else 0.0
    short = 1.0 if n <= 2 else 0.0
    return [cov, novel_cov, bigram_cov, best_window, num_miss, ent_miss, neg_mismatch, short]


@dataclass(frozen=True, slots=True)
class SupportModel:
    """Logistic model over :data:`FEATURES`: ``p = sigmoid(b + sum w_i * x_i)``."""

    version: str
    coef: tuple[float, ...]
    intercept: float
    threshold: float
    digest: str

    def probability(self, feats: list[float]) -> float:
        """Probability that the chunk supports the claim."""
        s = self.intercept
        for w, x in zip(self.coef, feats, strict=True):
            s += w * x
        if s < -30:
            return 0.0
        return 1.0 / (1.0 + math.exp(-s))


def load_model(path: str | Path | None = None) -> SupportModel:
    """Load the weights file (the packaged ``weights/support-v1.json`` by default)."""
    if path is None:
        raw = resources.files("ragpulse.collector.judge").joinpath("weights/support-v1.json").read_bytes()
    else:
        raw = Path(path).read_bytes()
    data = json.loads(raw)
    if tuple(data["features"]) != FEATURES:
        raise ValueError(f"weights file features {data['features']} do not match {FEATURES}")
    return SupportModel(
        version=str(data["version"]),
        coef=tuple(float(c) for c in data["coef"]),
        intercept=float(data["intercept"]),
        threshold=float(data.get("threshold", 0.5)),
        digest=hashlib.sha256(raw).hexdigest()[:8],
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
