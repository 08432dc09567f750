"""The local judge's calibrated claim support probability.

``p = calibrate(sigmoid(b + w . x))`` over the claim features of
:mod:`.claim_features`: a logistic model fit on the pooled development data
(every data set weighted equally), then an isotonic map (piecewise-linear
between fitted knots) fit on the logistic model's cross-validated outputs, so
that a probability of 0.7 means about 70% of such claims are supported.

The weights file (``weights/claim-v4.json``) also carries the thresholds the
judge uses, all fit on the development data by ``bench/judge_quality.py
--write-weights`` with grouped cross-validation:

- ``threshold``: the claim verdict (``supported`` when ``p >= threshold``), chosen to
  maximise the mean balanced accuracy over the data sets;
- ``number_cap``: the ceiling on the probability of a claim whose best chunk lacks one of
  its numbers (and of a claim that contradicts its evidence);
- ``joint_number_cap``: the ceiling instead when another chunk has each such number next to
  the words the claim has next to it (the claim may rest on two chunks: on the dev data such
  claims are supported about three times as often); a weights file without it caps both
  alike at ``number_cap``;
- ``ordinal_number_cap``: the ceiling instead when every such number is an ordinal ("its
  first voyage" against "her maiden voyage"; supported about twice as often as a missing
  cardinal); ``number_cap`` where the file lacks it;
- ``weak``: the weak band of the response rule up to local-4.8 (one claim in ``[weak,
  threshold)`` among supported ones made the answer ``unsure``); the response verdict is now
  :mod:`.response`'s, and ``bench/judge_quality.py`` keeps the band to show that rule beside it.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from pathlib import Path

from .claim_features import CLAIM_FEATURES
from .support import read_weights

_NUM_MISS = CLAIM_FEATURES.index("num_miss")

__all__ = ["ClaimModel", "load_claim_model"]


@dataclass(frozen=True, slots=True)
class ClaimModel:
    """Logistic model plus isotonic calibration over :data:`CLAIM_FEATURES`."""

    version: str
    coef: tuple[float, ...]
    intercept: float
    knots_x: tuple[float, ...]  # raw logistic probabilities, increasing
    knots_y: tuple[float, ...]  # calibrated probabilities, non-decreasing
    threshold: float
    weak: float
    number_cap: float  # the probability ceiling of a claim whose number the best chunk lacks
    joint_number_cap: float  # ... when another chunk has it next to the claim's words
    ordinal_number_cap: float  # ... when every number it lacks is an ordinal
    digest: str

    def raw(self, feats: list[float]) -> float:
        """The uncalibrated logistic probability."""
        s = self.intercept
        for w, x in zip(self.coef, feats, strict=True):
            s += w * x
        if s < -30:
            return 0.0
        if s > 30:
            return 1.0
        return 1.0 / (1.0 + math.exp(-s))

    def calibrate(self, raw: float) -> float:
        """The isotonic map, linear between knots, flat outside them."""
        xs, ys = self.knots_x, self.knots_y
        if not xs:
            return raw
        if raw <= xs[0]:
            return ys[0]
        if raw >= xs[-1]:
            return ys[-1]
        i = bisect.bisect_right(xs, raw)
        x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
        return y0 if x1 == x0 else y0 + (y1 - y0) * (raw - x0) / (x1 - x0)

    def probability(
        self, feats: list[float], numbers_elsewhere: bool = False, ordinals: bool = False
    ) -> float:
        """Calibrated probability that the chunks support the claim. A number of the claim
        that its best chunk lacks caps the probability at the supported rate of such claims
        on the dev data: a changed number is the classic hallucination, and lexical overlap
        elsewhere in the claim cannot outweigh it. The cap is ``joint_number_cap`` when
        another chunk has every number of the claim next to the claim's words
        (``numbers_elsewhere``, :attr:`.claim_features.ClaimEvidence.numbers_elsewhere`: the
        claim may rest on two chunks), ``ordinal_number_cap`` when every number the chunk
        lacks is an ordinal (``ordinals``, :attr:`.claim_features.ClaimEvidence.ordinals_missing`),
        ``number_cap`` otherwise."""
        p = self.calibrate(self.raw(feats))
        if feats[_NUM_MISS] <= 0:
            return p
        if numbers_elsewhere:
            return min(p, self.joint_number_cap)
        return min(p, self.ordinal_number_cap if ordinals else self.number_cap)


def load_claim_model(
    path: str | Path | None = None,
    *,
    packaged: str = "claim-v4.json",
    features: tuple[str, ...] = CLAIM_FEATURES,
) -> ClaimModel:
    """Load a claim model's weights file: ``path``, or the packaged ``weights/<packaged>``
    (tier 1's ``claim-v4.json`` by default), whose feature list must be ``features``."""
    data, digest = read_weights(packaged, path, features)
    kx, ky = data.get("calibration", {}).get("x", []), data.get("calibration", {}).get("y", [])
    if len(kx) != len(ky) or any(b < a for a, b in zip(kx, kx[1:], strict=False)):
        raise ValueError(f"{packaged}: calibration knots must be paired and increasing")
    return ClaimModel(
        version=str(data["version"]),
        coef=tuple(float(c) for c in data["coef"]),
        intercept=float(data["intercept"]),
        knots_x=tuple(float(v) for v in kx),
        knots_y=tuple(float(v) for v in ky),
        threshold=float(data["threshold"]),
        weak=float(data["weak"]),
        number_cap=float(data["number_cap"]),
        joint_number_cap=float(data.get("joint_number_cap", data["number_cap"])),
        ordinal_number_cap=float(data.get("ordinal_number_cap", data["number_cap"])),
        digest=digest,
    )
