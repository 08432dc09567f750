"""Per-case metrics of the offline eval, exactly as docs/eval.md writes them.

Notation (the reference note's): G the case's gold claims, Y the answer's
claims, R the k retrieved chunks, F the forbidden or outdated claims; ``|=``
is entailment as decided by the judge (:mod:`.entail`). A chunk is *relevant*
when it entails a gold claim; an answer claim is *correct* when G entails it.

:data:`METRICS` is the one list of metric names, with the direction that
counts as better (used by aggregation, the paired comparison, gates and the
reports).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .entail import CaseFacts, forbidden_ids, gold_ids
from .ranking import RANK_METRICS, rank_metrics

__all__ = [
    "MetricSpec",
    "METRICS",
    "METRIC_BY_NAME",
    "case_metrics",
    "case_details",
    "answerable",
    "null_metrics",
]


@dataclass(frozen=True)
class MetricSpec:
    """A per-case metric: ``kind`` ratio | bool | rank | amount | category; ``better`` higher | lower | None."""

    name: str
    group: str
    kind: str
    better: str | None


def _specs() -> tuple[MetricSpec, ...]:
    rows = [
        ("retrieval_claim_recall", "retrieval", "ratio", "higher"),
        ("context_precision", "retrieval", "ratio", "higher"),
        ("evidence_recall_at_k", "retrieval", "ratio", "higher"),
        ("evidence_precision_at_k", "retrieval", "ratio", "higher"),
        ("evidence_mrr", "retrieval", "ratio", "higher"),
        ("evidence_ndcg_at_k", "retrieval", "ratio", "higher"),
        ("first_evidence_rank", "retrieval", "rank", "lower"),
        ("evidence_span_containment", "retrieval", "ratio", "higher"),
        ("claim_precision", "generation", "ratio", "higher"),
        ("claim_recall", "generation", "ratio", "higher"),
        ("claim_f1", "generation", "ratio", "higher"),
        ("faithfulness", "generation", "ratio", "higher"),
        ("context_utilization", "generation", "ratio", "higher"),
        ("self_knowledge_reliance", "generation", "ratio", "lower"),
        ("relevant_noise_sensitivity", "generation", "ratio", "lower"),
        ("irrelevant_noise_sensitivity", "generation", "ratio", "lower"),
        ("hallucination", "generation", "ratio", "lower"),
        ("forbidden_hit", "safety", "bool", "lower"),
        ("citation_correctness", "citation", "ratio", "higher"),
        ("citation_completeness", "citation", "ratio", "higher"),
        ("citations_valid", "citation", "bool", "higher"),
        ("abstention", "abstention", "category", None),
        ("abstained", "abstention", "bool", None),
        ("correct_abstention", "abstention", "bool", "higher"),
        ("false_refusal", "abstention", "bool", "lower"),
        ("selective_correct", "abstention", "bool", "higher"),
        ("strict_pass", "system", "bool", "higher"),
        ("latency_ms", "cost", "amount", "lower"),
        ("input_tokens", "cost", "amount", "lower"),
        ("output_tokens", "cost", "amount", "lower"),
        ("cost_usd", "cost", "amount", "lower"),
    ]
    return tuple(MetricSpec(*r) for r in rows)


METRICS: tuple[MetricSpec, ...] = _specs()
METRIC_BY_NAME: dict[str, MetricSpec] = {m.name: m for m in METRICS}
assert set(RANK_METRICS) <= set(METRIC_BY_NAME)


def null_metrics() -> dict[str, Any]:
    """Every metric None: a case the judge could not decide or the run did not answer."""
    return {m.name: None for m in METRICS}


def answerable(case: dict[str, Any]) -> bool | None:
    """True / False from ``answerability``; an ``unknown`` case is answerable when it has gold claims."""
    a = case.get("answerability", "unknown")
    if a == "answerable":
        return True
    if a == "unanswerable":
        return False
    return True if case.get("gold_claims") else None


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def _generation(facts: CaseFacts, gold: list[str], has_gold: bool) -> dict[str, Any]:
    ys = facts.claims
    relevant = {r for ids in facts.gold_chunks.values() for r in ids}
    correct = [bool(y.gold_ids) for y in ys]
    in_context = [bool(y.chunk_ids) for y in ys]
    out: dict[str, Any] = {}
    precision = _ratio(sum(correct), len(ys)) if has_gold else None
    recall = _ratio(sum(1 for g in gold if facts.gold_answer.get(g)), len(gold)) if has_gold else None
    out["claim_precision"] = precision
    out["claim_recall"] = recall
    if precision is None or recall is None:
        out["claim_f1"] = None
    else:
        out["claim_f1"] = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    if ys:
        out["faithfulness"] = sum(in_context) / len(ys)
    else:  # nothing asserted: an abstention is faithful to what it was given (the article's run D)
        out["faithfulness"] = 1.0 if facts.abstained else None
    available = [g for g in gold if facts.gold_chunks.get(g)] if has_gold else []
    out["context_utilization"] = _ratio(sum(1 for g in available if facts.gold_answer.get(g)), len(available))
    if has_gold and ys:
        n = len(ys)
        wrong = [not c for c in correct]
        rel_noise = [w and bool(set(y.chunk_ids) & relevant) for w, y in zip(wrong, ys, strict=True)]
        irr_noise = [w and not r and bool(y.chunk_ids) for w, r, y in zip(wrong, rel_noise, ys, strict=True)]
        out["self_knowledge_reliance"] = (
            sum(c and not i for c, i in zip(correct, in_context, strict=True)) / n
        )
        out["relevant_noise_sensitivity"] = sum(rel_noise) / n
        out["irrelevant_noise_sensitivity"] = sum(irr_noise) / n
        out["hallucination"] = sum(w and not i for w, i in zip(wrong, in_context, strict=True)) / n
    else:
        for k in ("self_knowledge_reliance", "relevant_noise_sensitivity", "irrelevant_noise_sensitivity"):
            out[k] = None
        out["hallucination"] = None
    return out


def _abstention(facts: CaseFacts, can_answer: bool | None, passed: bool | None) -> dict[str, Any]:
    out: dict[str, Any] = {"abstained": facts.abstained}
    if facts.abstained and can_answer is not None:
        out["abstention"] = "false_refusal" if can_answer else "appropriate"
    else:
        out["abstention"] = None
    out["correct_abstention"] = facts.abstained if can_answer is False else None
    out["false_refusal"] = facts.abstained if can_answer is True else None
    out["selective_correct"] = passed if (can_answer is True and not facts.abstained) else None
    return out


def _usage(run: dict[str, Any]) -> dict[str, Any]:
    return {k: run.get(k) for k in ("latency_ms", "input_tokens", "output_tokens", "cost_usd")}


def case_metrics(case: dict[str, Any], run: dict[str, Any], facts: CaseFacts) -> dict[str, Any]:
    """Every metric of :data:`METRICS` for one case (None where it does not apply or the judge failed)."""
    if facts.error is not None:
        return null_metrics() | _usage(run)
    can_answer = answerable(case)
    gold = gold_ids(case)
    has_gold = bool(gold) and can_answer is not False
    k = len(facts.chunk_ids)
    out: dict[str, Any] = {}
    covered = [g for g in gold if facts.gold_chunks.get(g)]
    relevant = {r for g in gold for r in facts.gold_chunks.get(g, [])}
    out["retrieval_claim_recall"] = _ratio(len(covered), len(gold)) if has_gold else None
    out["context_precision"] = _ratio(len(relevant), k) if has_gold else None
    out.update(rank_metrics(case, facts.chunks) if can_answer is not False else dict.fromkeys(RANK_METRICS))
    out.update(_generation(facts, gold, has_gold))
    out["forbidden_hit"] = any(y.forbidden_ids for y in facts.claims)
    out["citation_correctness"] = facts.citation_correctness
    out["citation_completeness"] = facts.citation_completeness
    out["citations_valid"] = all(y.citation_valid is not False for y in facts.claims)
    if can_answer is True and has_gold:
        passed: bool | None = (
            all(facts.gold_answer.get(g) for g in gold)
            and not out["forbidden_hit"]
            and out["citations_valid"]
        )
    elif can_answer is False:
        passed = facts.abstained and all(y.chunk_ids for y in facts.claims) and not out["forbidden_hit"]
    else:
        passed = None
    out.update(_abstention(facts, can_answer, passed))
    out["strict_pass"] = passed
    out.update(_usage(run))
    return {m.name: out.get(m.name) for m in METRICS}


def case_details(case: dict[str, Any], facts: CaseFacts) -> dict[str, Any]:
    """What a reader needs to see why a case failed: missing gold claims, forbidden hits,
    invalid citations and unsupported claims, as texts."""
    gold_text = dict(zip(gold_ids(case), case.get("gold_claims") or [], strict=True))
    forb_text = dict(zip(forbidden_ids(case), case.get("forbidden_or_outdated_claims") or [], strict=True))
    return {
        "answer_claims": [c.text for c in facts.claims],
        "missing_gold_claims": [t for g, t in gold_text.items() if not facts.gold_answer.get(g)]
        if answerable(case) is not False
        else [],
        "forbidden_hits": [
            {"claim": c.text, "forbidden": forb_text[f]} for c in facts.claims for f in c.forbidden_ids
        ],
        "invalid_citations": [
            {"claim": c.text, "cited": c.cited_chunk_ids} for c in facts.claims if c.citation_valid is False
        ],
        "unsupported_claims": [c.text for c in facts.claims if not c.chunk_ids],
        "error": facts.error,
    }
