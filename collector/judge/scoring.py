"""Turn per-claim verdicts into the DESIGN.md output record.

Both judges (local and LLM) produce :class:`ClaimJudgment` objects and a few
trace-level facts; this module alone computes the scores, so the two judges
cannot drift apart in their formulas (see docs/judging.md):

- faithfulness = supported claims / claims
- citation correctness = citations whose chunk supports their claim / citations
- citation completeness = claims with at least one supporting citation / claims
  that rest on evidence (a claim that only restates the user's words rests on none;
  null when the answer cites nothing, unless ``require_citations``)
- answer relevance = claims on the query's topic / claims
- context precision = usable chunks supporting at least one claim / chunks
- context utilization = share of the content of the evidence sentences the
  answer relies on that the answer actually uses
- failure mode from evidence usability, answerability and generation faults.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ClaimJudgment", "TraceFacts", "assemble"]


@dataclass(slots=True)
class ClaimJudgment:
    """The verdict on one claim."""

    text: str
    verdict: str  # supported | unsupported | contradicted
    supporting: list[str]
    citations: list[str]  # cited chunk ids, one per citation
    citation_ok: list[bool]  # per citation: does that chunk support the claim
    on_topic: bool = True
    source: str | None = None  # hallucination | noise (unsupported claims only)
    contradicting: list[str] = field(default_factory=list)
    omitted: str | None = None  # a condition of the relied-on evidence the answer leaves out
    confidence: float | None = None
    support_probability: float | None = None  # calibrated P(supported); None when the judge has none
    restates_user: bool = False  # supported by what the user said, not by any chunk (docs/judging.md)


@dataclass(slots=True)
class TraceFacts:
    """Trace-level facts a judge established."""

    chunk_ids: list[str]
    usable: dict[str, bool]
    abstained: bool
    answerable: bool
    utilization: float | None = None
    # The judge's ``require_citations`` setting: an uncited answer's completeness is 0, not null.
    citations_required: bool = False


def _ratio(num: int, den: int) -> float | None:
    return None if den == 0 else round(num / den, 4)


def _response_verdict(claims: list[ClaimJudgment], facts: TraceFacts) -> str | None:
    """From verdicts alone: ``hallucinated`` when a claim is not supported, else ``faithful``;
    None for an abstention or an answer without claims. A judge with calibrated support
    probabilities (the local judge) refines this with an ``unsure`` band."""
    if facts.abstained or not claims:
        return None
    return "hallucinated" if any(c.verdict != "supported" for c in claims) else "faithful"


_ABSTAINED_SCORES: dict[str, Any] = {
    "faithfulness": None,
    "citation_correctness": None,
    "citation_completeness": None,
    "answer_relevance": None,
    "context_precision": None,
    "context_utilization": None,
    "abstained": True,
}


def _failure_mode(claims: list[ClaimJudgment], facts: TraceFacts, valid_cits: int, total_cits: int) -> str:
    """Where an answered trace failed: ``retrieval`` (a supported claim rests only on unusable
    chunks, or the query is not answerable from them), ``generation`` (no claim, an unsupported
    or off-topic claim, an omitted condition, an invalid citation), ``both``, or ``healthy``."""
    rests_on_bad = any(
        c.supporting and not any(facts.usable.get(cid, True) for cid in c.supporting)
        for c in claims
        if c.verdict == "supported"
    )
    retrieval_fail = rests_on_bad or not facts.answerable
    generation_fail = (
        not claims
        or any(c.verdict != "supported" for c in claims)
        or any(c.omitted for c in claims)
        or valid_cits < total_cits
        or any(not c.on_topic for c in claims)
    )
    if retrieval_fail and generation_fail:
        return "both"
    if retrieval_fail:
        return "retrieval"
    return "generation" if generation_fail else "healthy"


def _answered_scores(claims: list[ClaimJudgment], facts: TraceFacts) -> dict[str, Any]:
    """The scores of a trace that was answered (not an abstention)."""
    n = len(claims)
    supported = [c for c in claims if c.verdict == "supported"]
    total_cits = sum(len(c.citations) for c in claims)
    valid_cits = sum(sum(1 for ok in c.citation_ok if ok) for c in claims)
    supporting_usable = {cid for c in supported for cid in c.supporting if facts.usable.get(cid, True)}
    completeness = None
    if n and (total_cits > 0 or facts.citations_required):
        verifiable = [c for c in claims if not c.restates_user]
        completeness = _ratio(sum(1 for c in verifiable if any(c.citation_ok)), len(verifiable))
    return {
        "faithfulness": _ratio(len(supported), n),
        "citation_correctness": _ratio(valid_cits, total_cits),
        "citation_completeness": completeness,
        "answer_relevance": _ratio(sum(1 for c in claims if c.on_topic), n),
        "context_precision": _ratio(len(supporting_usable), len(facts.chunk_ids)) if n else None,
        "context_utilization": None if facts.utilization is None else round(facts.utilization, 4),
        "abstained": False,
        "abstention_kind": None,
        "failure_mode": _failure_mode(claims, facts, valid_cits, total_cits),
    }


def _claim_row(c: ClaimJudgment) -> dict[str, Any]:
    """One claim as the output record lists it."""
    return {
        "text": c.text,
        "verdict": c.verdict,
        "supporting_chunk_ids": c.supporting,
        "cited_chunk_ids": list(dict.fromkeys(c.citations)),
        "citation_valid": (all(c.citation_ok) if c.citations else None),
        "source": c.source,
        "omitted_condition": c.omitted,
        "on_topic": c.on_topic,
        "contradicting_chunk_ids": c.contradicting,
        "confidence": c.confidence,
        "support_probability": c.support_probability,
        "restates_user": c.restates_user,
    }


def assemble(
    trace_id: str,
    judge_id: str,
    claims: list[ClaimJudgment],
    facts: TraceFacts,
    *,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The output record for one trace."""
    out: dict[str, Any] = {"trace_id": trace_id, "judge_id": judge_id}
    if facts.abstained:
        out.update(_ABSTAINED_SCORES)
        out["abstention_kind"] = "false_refusal" if facts.answerable else "appropriate"
        out["failure_mode"] = "abstain"
    else:
        out.update(_answered_scores(claims, facts))
    out["unsupported_claims"] = sum(1 for c in claims if c.verdict != "supported")
    out["contradicted_claims"] = sum(1 for c in claims if c.verdict == "contradicted")
    out["claims"] = [_claim_row(c) for c in claims]
    out["response_verdict"] = _response_verdict(claims, facts)
    out["error"] = None
    if extra:
        out.update(extra)
    return out
