"""The judgments queue's two slices: a random one for unbiased estimates, an informative one.

``ragpulse calibrate``'s prediction-powered interval for mean faithfulness is valid only when
the labelled traces are a random sample of the judged ones; a refit learns most from the
traces near its decisions. So the queue serves both, disjoint by construction:

- **random**: a judged trace belongs to it when its random key (a hash of its id, uniform
  in [0, 1) and independent of anything the judge or a reviewer sees) is below ``pool``; the
  slice serves its traces in key order, so the traces labelled from it are a simple random
  sample of the judged traces whichever point a reviewer stops at (skipping one is the only
  way to bias it). Labels saved on these traces are recorded as ``random``.
- **informative**: every other judged trace, most valuable first (:data:`PRIORITIES`):
  an answer near the response decision's boundary (its mean claim score within ``margin`` of
  the response rule's ``mean_below``), a claim near the claim verdict threshold, user feedback
  the judge disagrees with (negative feedback on an answer judged healthy and faithful,
  positive feedback on one judged failing or hallucinated), two judges (or the two tiers of a
  tiered judge) disagreeing, a firing alert's window, then the rest.

The queue interleaves the two, one trace of each in turn, so a reviewer working through it
labels both at the same pace.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..judge.local.response import claim_score
from .labels import INFORMATIVE, RANDOM

__all__ = [
    "DEFAULT_POOL",
    "PRIORITIES",
    "QueueItem",
    "in_random_slice",
    "interleave",
    "random_item",
    "random_key",
    "response_distance",
    "feedback_disagrees",
]

#: Share of the judged traces the random slice holds (the informative slice has the rest).
DEFAULT_POOL = 0.3
_SALT = b"ragpulse-review-random-slice:"

#: The informative slice's classes, most valuable first, then the random slice's.
PRIORITIES: tuple[str, ...] = (
    "near the response boundary",
    "near the claim threshold",
    "feedback disagrees",
    "judges disagree",
    "alert window",
    "other",
    "random sample",
)


@dataclass(frozen=True)
class QueueItem:
    trace_id: str
    service: str
    priority: str
    nearest: float | None  # how close to the deciding boundary (its class's), None when not measured
    slice: str = INFORMATIVE


def random_key(trace_id: str) -> float:
    """The trace's random key in [0, 1): the first 8 bytes of a BLAKE2b hash of its id."""
    digest = hashlib.blake2b(_SALT + trace_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def in_random_slice(trace_id: str, pool: float) -> bool:
    """Whether the trace belongs to the random slice of a queue whose random share is ``pool``."""
    return random_key(trace_id) < pool


def response_distance(
    claims: Sequence[tuple[str, float | None]], threshold: float, mean_below: float | None
) -> float | None:
    """|mean claim score - mean_below| of an answer the response rule decides by its mean
    (a claim not supported, none contradicted: :class:`~..judge.local.response.ResponseRule`);
    None for any other answer, or without a rule or probabilities."""
    verdicts = [v for v, _ in claims]
    if (
        mean_below is None
        or not claims
        or all(v == "supported" for v in verdicts)
        or "contradicted" in verdicts
    ):
        return None
    if any(p is None for _, p in claims):
        return None
    scores = [claim_score(v, float(p), threshold) for v, p in claims]  # type: ignore[arg-type]
    return abs(sum(scores) / len(scores) - mean_below)


def feedback_disagrees(negative: int, positive: int, record: dict[str, Any]) -> bool:
    """Users' feedback on a trace against the judge's verdict: mostly negative on an answer the
    judge found healthy and not hallucinated, or mostly positive on one it found failing or
    hallucinated."""
    flagged = (
        record.get("failure_mode") not in ("healthy", "", None)
        or record.get("response_verdict") == "hallucinated"
    )
    return (negative > positive and not flagged) or (positive > negative and flagged)


def interleave(random: list[QueueItem], informative: list[QueueItem]) -> list[QueueItem]:
    """One of each in turn (random first); the longer list's remainder after."""
    out: list[QueueItem] = []
    for i in range(max(len(random), len(informative))):
        out += random[i : i + 1] + informative[i : i + 1]
    return out


def random_item(trace_id: str, service: str) -> QueueItem:
    """A trace of the random slice."""
    return QueueItem(trace_id, service, PRIORITIES[-1], None, RANDOM)
