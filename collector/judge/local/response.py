"""The local judge's response verdict: is the answer as a whole hallucinated?

Calling an answer hallucinated when any one of its claims is not supported flags clean answers
too often: real RAG answers hold five to seven claims, and one weakly supported claim among
them is more often a miss of the claim judge than a hallucination (on MTRAG's human-rated
answers that rule's precision is 0.41). The rule here reads the answer's claims together:

- ``faithful``: every claim is supported;
- ``hallucinated``: a claim is not supported, and a claim is contradicted or the mean claim
  score (:func:`claim_score`) is below ``mean_below``;
- ``unsure``: a claim is not supported, but the answer as a whole holds (no contradiction,
  mean score at or above ``mean_below``): not a flag, a pointer to the claim to read;
- None: no claims.

``mean_below`` is fit, never hand-set: ``bench/judge_quality.py --write-weights`` fits it on
every development set with real answers (MTRAG, the FActScore and Factcheck-GPT responses,
the hand-written RAG and summary cases; each set weighted equally) from the probabilities the
packaged judge produces, and writes ``weights/response-v1.json``; the rule was chosen among
others (the weakest claim, the share or count of unsupported claims, the mean probability,
their combinations) by grouped cross-validation across those sets (docs/judging.md).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["RESPONSE_VERDICTS", "ResponseRule", "claim_score", "load_response_rule"]

RESPONSE_VERDICTS: tuple[str, ...] = ("faithful", "unsure", "hallucinated")
_PACKAGED = "response-v1.json"


def claim_score(verdict: str, probability: float, threshold: float) -> float:
    """A claim's support probability held to its verdict: a supported claim counts at least
    ``threshold``, a contradicted one 0, an unsupported one its probability when below
    ``threshold`` and 0 otherwise (its support was withdrawn by a conflict rule)."""
    if verdict == "supported":
        return max(probability, threshold)
    if verdict == "contradicted" or probability >= threshold:
        return 0.0
    return probability


@dataclass(frozen=True, slots=True)
class ResponseRule:
    """The fitted response rule (see the module docstring)."""

    version: str
    mean_below: float
    digest: str

    def hallucinated(self, verdicts: Sequence[str], probabilities: Sequence[float], threshold: float) -> bool:
        """Whether an answer whose claims have these verdicts and support probabilities (the
        judge's claim ``threshold``) is hallucinated as a whole."""
        if all(v == "supported" for v in verdicts):
            return False
        if "contradicted" in verdicts:
            return True
        scores = [claim_score(v, p, threshold) for v, p in zip(verdicts, probabilities, strict=True)]
        return sum(scores) / len(scores) < self.mean_below

    def verdict(
        self, verdicts: Sequence[str], probabilities: Sequence[float], threshold: float
    ) -> str | None:
        """``faithful``, ``unsure`` or ``hallucinated``; None for an answer without claims."""
        if not verdicts:
            return None
        if self.hallucinated(verdicts, probabilities, threshold):
            return "hallucinated"
        return "faithful" if all(v == "supported" for v in verdicts) else "unsure"


def load_response_rule(
    path: str | Path | None = None, *, claim_weights: str | Path | None = None
) -> ResponseRule:
    """The rule of the weights file ``path``; else the ``response`` object of the claim weights
    file ``claim_weights`` when it has one (a refit, :mod:`.refit`, writes the whole decision
    into one file); else the packaged ``weights/response-v1.json``."""
    if path is None and claim_weights is not None:
        claim_data = json.loads(Path(claim_weights).read_bytes())
        if isinstance(claim_data.get("response"), dict):
            raw = json.dumps(claim_data["response"], sort_keys=True).encode()
            return _rule(claim_data["response"], raw, f"{claim_weights}: response")
    if path is None:
        raw = resources.files("ragpulse.collector.judge.local").joinpath(f"weights/{_PACKAGED}").read_bytes()
    else:
        raw = Path(path).read_bytes()
    return _rule(json.loads(raw), raw, str(path or _PACKAGED))


def _rule(data: dict[str, Any], raw: bytes, where: str) -> ResponseRule:
    mean_below = float(data["mean_below"])
    if not 0.0 <= mean_below <= 1.0:
        raise ValueError(f"{where}: mean_below must lie in [0, 1], got {mean_below}")
    return ResponseRule(
        version=str(data["version"]), mean_below=mean_below, digest=hashlib.sha256(raw).hexdigest()[:8]
    )
