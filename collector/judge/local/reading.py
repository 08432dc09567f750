"""How the local judge reads a claim against a trace's chunks, and what a claim rests on.

The judge (:mod:`.judge`) and the domain refit (:mod:`.refit.data`) both read claims through
these functions, so the features and flags a refit is fit on are exactly the ones the judge
applies its weights to:

- :func:`read_claim`: a claim's profile, its view and its evidence against every chunk (the
  claim features of :mod:`.claim_features`);
- :func:`support_of`: the chunks a claim whose probability clears the verdict threshold
  rests on, with the ones that conflict with it (:func:`.rules.conflicts.conflicts`: a
  negation, a condition read as sufficient) removed, and whether every one of them did;
- :func:`settle`: the judge's verdict rule. A claim clears when one chunk supports it on its
  own (the pair model) or its probability reaches the threshold; a cleared claim is
  supported unless every chunk it would rest on conflicts with it, and then its probability
  is capped as a conflicting number is.

A refit evaluates :func:`settle` for many thresholds at once, so it keeps the two flags
:func:`support_of` gives (rests on a chunk, conflicted) per claim and applies the same rule
to arrays; a test holds its verdicts equal to the judge's.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..text.tokens import TextProfile
from .claim_features import ChunkIndex, ClaimEvidence, claim_evidence
from .evidence import ChunkEvidence
from .rules.approximate import claim_profile
from .rules.conflicts import conflicts
from .support import ClaimView, SupportModel, claim_view

__all__ = ["ClaimReading", "NO_SUPPORT", "Support", "read_claim", "settle", "support_of"]


@dataclass(frozen=True, slots=True)
class ClaimReading:
    """One claim read against one trace's chunks."""

    profile: TextProfile
    view: ClaimView
    evidence: ClaimEvidence


def read_claim(
    text: str, chunks: list[ChunkEvidence], index: ChunkIndex, qstems: frozenset[str], model: SupportModel
) -> ClaimReading:
    """``text`` (a claim as extraction writes it) against ``chunks`` (``index`` over them), with
    the query's content stems ``qstems`` and the pair model ``model``."""
    cp = claim_profile(text, chunks, index.all_numbers)
    view = claim_view(cp, qstems)
    return ClaimReading(cp, view, claim_evidence(view, index, model, text))


@dataclass(frozen=True, slots=True)
class Support:
    """What a cleared claim rests on: chunk ids in chunk order, conflicting ones removed, and
    whether it would rest on chunks every one of which conflicts with it."""

    chunks: tuple[str, ...]
    conflicted: bool


NO_SUPPORT = Support((), False)


def _candidates(ce: ClaimEvidence, cv: ClaimView, chunks: list[ChunkEvidence]) -> list[int]:
    """The chunks a supported claim rests on, in chunk order: every chunk whose pair
    probability reaches 0.5, else the best-ranked chunk; joined by the chunk that best covers
    the claim words those lack, when it covers at least half of them (joint support: "kept
    for five years [1] in the Frankfurt archive [2]")."""
    chosen = {i for i, p in enumerate(ce.pair_probs) if p >= 0.5} or {ce.best}
    have = frozenset().union(*(chunks[i].whole.keys for i in chosen))
    missing = cv.keys - have
    if missing:
        gain = [len(missing & c.whole.keys) if i not in chosen else 0 for i, c in enumerate(chunks)]
        extra = max(range(len(chunks)), key=gain.__getitem__)
        if gain[extra] and 2 * gain[extra] >= len(missing):
            chosen.add(extra)
    return sorted(chosen)


def support_of(reading: ClaimReading, chunks: list[ChunkEvidence]) -> Support:
    """What the claim of ``reading`` rests on when it clears the threshold (module docstring)."""
    if not chunks:
        return NO_SUPPORT
    candidates = _candidates(reading.evidence, reading.view, chunks)
    kept = tuple(chunks[i].id for i in candidates if not conflicts(reading.profile, chunks[i]))
    return Support(kept, not kept)


def settle(
    reading: ClaimReading, chunks: list[ChunkEvidence], p: float, threshold: float, number_cap: float
) -> tuple[list[str], float]:
    """The chunks the claim rests on (empty: not supported) and its probability after the
    conflict cap, for a claim of probability ``p`` at the verdict ``threshold``."""
    if not (reading.evidence.one_chunk_supports or p >= threshold):
        return [], p
    support = support_of(reading, chunks)
    return list(support.chunks), min(p, number_cap) if support.conflicted else p
