"""What the local judge's second tiers share: the band of tier-1 probabilities they
re-score, the settings that name them, and the re-scoring of a claim by a second claim model.

A second tier (:class:`.second_tier.MiniLMTier`, :class:`.entailment.EntailmentTier`) is a
:class:`BandTier` that reads each escalated claim against the chunks in its own way
(:meth:`BandTier.read`: extra features, and maybe a contradicting chunk); the escalation rule
(``lo <= p < hi``, the claims one chunk supports on their own left alone unless
``rescore_settled``), the second claim model's probability over tier 1's features plus the
tier's, and the tier id pinning every setting live here once.
"""

from __future__ import annotations

import hashlib
import json
from importlib import metadata
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..local.claim_model import ClaimModel
    from ..local.evidence import ChunkEvidence
    from ..local.support import ClaimView

__all__ = ["DEFAULT_BAND", "BandTier", "library_pin"]

#: The tier-1 probabilities re-scored by default: the claims tier 1 gets right least often.
DEFAULT_BAND: tuple[float, float] = (0.35, 0.65)


def library_pin(dist: str) -> str:
    """``dist==version`` of an installed distribution (``dist==?`` when it is not installed)."""
    try:
        return f"{dist}=={metadata.version(dist)}"
    except metadata.PackageNotFoundError:
        return f"{dist}==?"


class BandTier:
    """Re-scores the claims whose tier-1 probability lies in ``band`` (``lo <= p < hi``) with
    :attr:`head`, a claim model over tier 1's claim features followed by the tier's own.

    The settings every second tier takes: ``band`` (:data:`DEFAULT_BAND`), ``sentences`` (how
    many aligned chunk sentences the tier reads per claim, 3), ``weights`` (the head's weights
    file, the packaged one by default), ``cache_size`` (what the tier's model keeps across
    traces, 4096; it changes only speed) and ``rescore_settled`` (False leaves the claims one
    chunk supports on their own, supported whatever their probability, at tier 1's
    probability; True escalates them too, which changes only their stored probability, never
    a verdict). A subclass implements :meth:`load_head` and :meth:`read`, and calls
    :meth:`_pin` with the settings of its own that change its scores.
    """

    kind = "band"

    def __init__(
        self,
        *,
        band: tuple[float, float] = DEFAULT_BAND,
        sentences: int = 3,
        weights: str | None = None,
        cache_size: int = 4096,
        rescore_settled: bool = False,
    ) -> None:
        lo, hi = float(band[0]), float(band[1])
        if not 0.0 <= lo <= hi <= 1.0:
            raise ValueError(f"{self.kind} band must satisfy 0 <= lo <= hi <= 1, got {band}")
        self.band = (lo, hi)
        self.sentences = int(sentences)
        self.cache_size = int(cache_size)
        self.rescore_settled = bool(rescore_settled)
        self.head = self.load_head(weights)
        self.claims_escalated = 0

    def load_head(self, weights: str | None) -> ClaimModel:
        """The tier's claim model, from the ``weights`` file (None: the packaged one)."""
        raise NotImplementedError

    def _pin(self, prefix: str, settings: dict[str, Any]) -> None:
        """Set :attr:`pinned` (the band settings and ``settings``) and :attr:`tier_id`
        (``prefix-<head version>:<digest of pinned>``), which joins the judge id."""
        self.pinned = {
            "band": self.band,
            "sentences": self.sentences,
            "rescore_settled": self.rescore_settled,
            **settings,
        }
        digest = hashlib.sha256(json.dumps(self.pinned, sort_keys=True).encode()).hexdigest()[:8]
        self.tier_id = f"{prefix}-{self.head.version}:{digest}"

    def in_band(self, p: float) -> bool:
        """Whether a tier-1 probability is escalated to this tier."""
        return self.band[0] <= p < self.band[1]

    def read(
        self, texts: list[str], views: list[ClaimView], chunks: list[ChunkEvidence]
    ) -> list[tuple[list[float] | None, str | None]]:
        """Per escalated claim, the tier's features (None: it has nothing to read the claim
        against, so the claim keeps tier 1's probability) and the id of a chunk it reads as
        contradicting the claim (None)."""
        raise NotImplementedError

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
        claim the chunk the tier reads as contradicting it (None for the rest).

        ``settled`` marks the claims whose verdict tier 1 has decided whatever their
        probability (one chunk supports them on their own): they keep tier 1's probability
        unless ``rescore_settled``. ``numbers_elsewhere`` and ``ordinals_missing`` pick each
        claim's number cap (:meth:`.claim_model.ClaimModel.probability`)."""
        skip = settled if settled is not None and not self.rescore_settled else [False] * len(probs)
        idx = [i for i, p in enumerate(probs) if self.in_band(p) and not skip[i]]
        contra: list[str | None] = [None] * len(probs)
        if not idx or not chunks:
            return probs, 0, contra
        read = self.read([texts[i] for i in idx], [views[i] for i in idx], chunks)
        out = list(probs)
        scored = 0
        for i, (extra, against) in zip(idx, read, strict=True):
            if extra is None:
                continue
            elsewhere = bool(numbers_elsewhere and numbers_elsewhere[i])
            ordinals = bool(ordinals_missing and ordinals_missing[i])
            out[i] = self.head.probability(list(features[i]) + extra, elsewhere, ordinals)
            contra[i] = against
            scored += 1
        self.claims_escalated += scored
        return out, scored, contra
