"""The local judge: deterministic, no network, no GPU.

Per trace it tokenises the chunks once (:mod:`.evidence`), extracts claims
(:mod:`.claims`), scores every claim against every chunk with the small
feature model in :mod:`.support`, and derives contradictions (a number, a
negation or an antonym that disagrees with an otherwise matching sentence), the source of
unsupported claims, omitted conditions, answerability and utilization.
:func:`.scoring.assemble` turns that into the output record.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..record import InvalidRecord, error_record, normalise_input
from ..scoring import ClaimJudgment, TraceFacts, assemble
from ..text.lexicon import lexicon_digest
from ..text.tokens import TextProfile, profile
from .claim_features import ChunkIndex
from .claim_model import ClaimModel, load_claim_model
from .claims import (
    EXTRACTION_VERSION,
    PREPOSITIONS,
    Claim,
    ExtractedAnswer,
    extract_claims,
    independent_clause,
    split_head,
    starts_with_verb,
)
from .conversation import evidence_records, restates_user, topic_stems, user_evidence
from .evidence import ChunkEvidence, build_evidence
from .question_type import misses_question_type
from .reading import ClaimReading, read_claim, settle
from .response import ResponseRule, load_response_rule
from .rules.approximate import claim_profile
from .rules.conflicts import best_sentence, negation_conflicts
from .rules.conflicts import contradicting as find_contradicting
from .support import SupportModel, load_model

if TYPE_CHECKING:
    from ..tiers.entailment import EntailmentTier
    from ..tiers.second_tier import MiniLMTier

__all__ = [
    "LocalJudge",
    "LOCAL_VERSION",
    "QUESTION_WORDS",
    "TraceReading",
    "read_trace",
    "negation_conflicts",
    "attach_citations",
    "lexical_utilization",
]

LOCAL_VERSION = "5.0"

QUESTION_WORDS = frozenset(
    "what which who whom whose when where why how whether current currently tell explain describe "
    "please give list kind type mean".split()
)
_CONJUNCT_RE = re.compile(r",?\s+(?:and|as well as|plus|along with)\s+|,\s+|;\s+")


@dataclass(frozen=True, slots=True)
class TraceReading:
    """A trace as the judge reads it: its chunks, claims (citations attached) and each claim's
    reading (:mod:`.reading`), what the verdicts are decided from; ``topic``: what the query
    asks, its follow-up resolved by the conversation (:mod:`.conversation`)."""

    chunks: list[ChunkEvidence]
    index: ChunkIndex
    qstems: frozenset[str]
    extracted: ExtractedAnswer
    claims: list[ClaimReading]
    topic: frozenset[str] = frozenset()


def read_trace(rec: dict[str, Any], model: SupportModel) -> TraceReading:
    """Read a normalised input record (:func:`..record.normalise_input`) with the pair model
    ``model``: the judge's reading, which a refit (:mod:`.refit.data`) reads its labels with."""
    chunks = build_evidence(evidence_records(rec["chunks"]))
    ids = [c.id for c in chunks]
    extracted = extract_claims(rec["answer"], ids)
    if rec["citations"]:
        attach_citations(extracted.claims, rec["citations"], rec["answer"], ids)
    qstems = frozenset(s for s in profile(rec["query"]).stem_set if s not in QUESTION_WORDS)
    index = ChunkIndex(chunks)
    readings = [read_claim(c.text, chunks, index, qstems, model) for c in extracted.claims]
    topic = topic_stems(rec["query"], rec.get("conversation") or [], QUESTION_WORDS)
    return TraceReading(chunks, index, qstems, extracted, readings, topic)


@dataclass(frozen=True, slots=True)
class _TraceContext:
    """What every claim of one trace is judged against."""

    chunks: list[ChunkEvidence]
    ids: list[str]
    by_id: dict[str, ChunkEvidence]
    pos: dict[str, int]
    index: ChunkIndex
    qstems: frozenset[str]
    answer_all: frozenset[str]


class LocalJudge:
    """Claim-level judge built from lexical, numeric, entity and negation evidence.

    Settings (all pinned in :attr:`judge_id`): ``threshold`` (support
    probability, default from the weights file), ``answerable_coverage``
    (query coverage by one usable chunk that makes a query answerable, 0.34),
    ``require_citations`` (score citation completeness 0 for uncited answers), the weights
    files (``weights``: pair model, ``claim_weights``: claim model, ``response_weights``:
    the response rule of :mod:`.response`; the packaged ones by default),
    ``entailment`` (the entailment tier, :class:`.tiers.entailment.EntailmentTier`, which
    re-scores the claims tier 1 is unsure of with the entailment model the package ships:
    ``True`` or a dict of its settings; off by default), ``minilm`` (settings of the MiniLM
    similarity tier, :class:`.tiers.second_tier.MiniLMTier`; off by default). One second tier
    at most.
    """

    kind = "local"

    def __init__(
        self,
        *,
        weights: str | None = None,
        claim_weights: str | None = None,
        response_weights: str | None = None,
        threshold: float | None = None,
        answerable_coverage: float = 0.34,
        require_citations: bool = False,
        minilm: dict[str, Any] | None = None,
        entailment: dict[str, Any] | bool | None = None,
    ) -> None:
        self.model: SupportModel = load_model(weights)
        self.claim_model: ClaimModel = load_claim_model(claim_weights)
        self.response_rule: ResponseRule = load_response_rule(response_weights, claim_weights=claim_weights)
        self.threshold = self.claim_model.threshold if threshold is None else float(threshold)
        self.answerable_coverage = float(answerable_coverage)
        self.require_citations = bool(require_citations)
        settings = {
            "threshold": self.threshold,
            "answerable_coverage": self.answerable_coverage,
            "require_citations": self.require_citations,
            "weights": self.model.digest,
            "claim_weights": self.claim_model.digest,
            "response_weights": self.response_rule.digest,
            "lexicon": lexicon_digest(),
            "claims": EXTRACTION_VERSION,
        }
        digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:8]
        self.judge_id = f"local-{LOCAL_VERSION}:{digest}"
        self.second_tier: MiniLMTier | EntailmentTier | None = None
        if minilm is not None:  # raises TierUnavailable when its weights are not installed
            if entailment not in (None, False):
                raise ValueError("one second tier at most: minilm or entailment, not both")
            from ..tiers.second_tier import MiniLMTier

            self.second_tier = MiniLMTier(**minilm)
        elif entailment not in (None, False):
            from ..tiers.entailment import EntailmentTier

            self.second_tier = EntailmentTier(**(entailment if isinstance(entailment, dict) else {}))
        if self.second_tier is not None:
            self.judge_id += f"+{self.second_tier.tier_id}"

    # -- public API ---------------------------------------------------------------------------
    def judge(self, record: dict[str, Any]) -> dict[str, Any]:
        """Judge one input record; never raises for a bad record (returns an error record)."""
        t0 = time.perf_counter()
        trace_id = str(record.get("trace_id", "")) if isinstance(record, dict) else ""
        try:
            rec = normalise_input(record)
            out = self._judge(rec)
        except InvalidRecord as exc:
            return error_record(trace_id, self.judge_id, f"invalid record: {exc}", judge_tier="local")
        except Exception as exc:  # a judge bug must not lose the trace: record it
            return error_record(trace_id, self.judge_id, f"{type(exc).__name__}: {exc}", judge_tier="local")
        out["judge_tier"] = "local"
        out["judge_latency_ms"] = round((time.perf_counter() - t0) * 1000, 3)
        out["judge_cost_usd"] = 0.0
        return out

    # -- internals ----------------------------------------------------------------------------
    def _judge(self, rec: dict[str, Any]) -> dict[str, Any]:
        trace = read_trace(rec, self.model)
        chunks, extracted, qstems = trace.chunks, trace.extracted, trace.qstems
        ids = [c.id for c in chunks]
        by_id = {c.id: c for c in chunks}
        usable = {c.id: c.usable for c in chunks}
        claims = extracted.claims

        judged: list[ClaimJudgment] = []
        evidence_stems: set[str] = set()
        answer_stems: set[str] = set()
        claim_profiles = [r.profile for r in trace.claims]
        ctx = _TraceContext(
            chunks=chunks,
            ids=ids,
            by_id=by_id,
            pos={cid: i for i, cid in enumerate(ids)},
            index=trace.index,
            qstems=trace.topic,
            answer_all=frozenset().union(*(p.stem_set for p in claim_profiles)) if claims else frozenset(),
        )
        views = [r.view for r in trace.claims]
        evs = [r.evidence for r in trace.claims]
        probs = [
            self.claim_model.probability(ce.features, ce.numbers_elsewhere, ce.ordinals_missing) for ce in evs
        ]
        escalated = 0
        contradicted_by: list[str | None] = [None] * len(claims)
        if self.second_tier is not None:
            texts = [c.text for c in claims]
            probs, escalated, contradicted_by = self.second_tier.rescore(
                texts,
                views,
                [ce.features for ce in evs],
                probs,
                chunks,
                [ce.one_chunk_supports for ce in evs],
                [ce.numbers_elsewhere for ce in evs],
                [ce.ordinals_missing for ce in evs],
            )
        for claim, reading, p, against in zip(claims, trace.claims, probs, contradicted_by, strict=True):
            answer_stems |= reading.profile.stem_set
            judgment, used = self._judge_claim(ctx, claim, reading, round(p, 4), against)
            judged.append(judgment)
            evidence_stems |= used
        self._restated(judged, rec, qstems)
        continue_topic(judged)
        if judged and misses_question_type(rec["query"], claim_profiles):
            for j in judged:  # asked how long / how many / when, and no claim says
                j.on_topic = False
        answerable = self._answerable(chunks, trace.topic, judged)
        utilization = len(evidence_stems & answer_stems) / len(evidence_stems) if evidence_stems else None
        facts = TraceFacts(
            chunk_ids=ids,
            usable=usable,
            abstained=extracted.abstained,
            answerable=answerable,
            utilization=utilization,
            citations_required=self.require_citations,
        )
        extra = {
            "response_verdict": None
            if extracted.abstained and not judged
            else self.response_rule.verdict(
                [j.verdict for j in judged], [j.support_probability or 0.0 for j in judged], self.threshold
            ),
            "abstention_statements": extracted.abstention_sentences,
            "unusable_chunk_ids": [c.id for c in chunks if not c.usable],
        }
        if self.second_tier is not None:
            extra["tier2_claims"] = escalated
        return assemble(rec["trace_id"], self.judge_id, judged, facts, extra=extra)

    def _restated(self, judged: list[ClaimJudgment], rec: dict[str, Any], qstems: frozenset[str]) -> None:
        """Unsupported claims the user's own statements support: supported, ``restates_user``."""
        user = user_evidence(rec["query"], rec.get("conversation") or [])
        open_ = [j for j in judged if j.verdict == "unsupported"] if user else []
        flags = restates_user(
            [j.text for j in open_], user, qstems, self.model, self.claim_model, self.threshold
        )
        for j, restated in zip(open_, flags, strict=True):
            if restated:
                j.verdict, j.supporting, j.source, j.restates_user = "supported", [], None, True

    def _answerable(
        self, chunks: list[ChunkEvidence], qstems: frozenset[str], judged: list[ClaimJudgment]
    ) -> bool:
        """Whether the usable chunks can answer the query: one covers ``answerable_coverage`` of
        its words, all together cover half, or an on-topic claim rests on a usable chunk."""
        usable_chunks = [c for c in chunks if c.usable]
        if qstems and any(
            len(qstems & c.whole.stem_set) / len(qstems) >= self.answerable_coverage for c in usable_chunks
        ):
            return True
        union = (
            frozenset().union(*(c.whole.stem_set for c in usable_chunks)) if usable_chunks else frozenset()
        )
        if qstems and len(qstems & union) / len(qstems) >= 0.5:
            return True
        usable = {c.id for c in usable_chunks}
        return any(j.on_topic and any(s in usable for s in j.supporting) for j in judged)

    def _judge_claim(
        self,
        ctx: _TraceContext,
        claim: Claim,
        reading: ClaimReading,
        p: float,
        contradicted_by: str | None = None,
    ) -> tuple[ClaimJudgment, frozenset[str]]:
        """One claim's judgment from its reading and support probability ``p``, and the
        content stems of the usable evidence sentence it rests on (for context utilization).
        ``contradicted_by``: the chunk the second tier reads as contradicting the claim, which
        makes an unsupported claim contradicted."""
        by_id = ctx.by_id
        cp, ce = reading.profile, reading.evidence
        # The verdict rule (:func:`.reading.settle`): the probability reaches the threshold or
        # one chunk supports the claim on its own, and not every chunk it rests on conflicts.
        supporting, p = settle(reading, ctx.chunks, p, self.threshold, self.claim_model.number_cap)
        verdict = "supported" if supporting else "unsupported"
        source = None
        contradicting: list[str] = []
        omitted = None
        used: frozenset[str] = frozenset()
        if supporting:
            rel = [s for s in supporting if by_id[s].usable] or supporting
            best = max(rel, key=lambda s: ce.pair_probs[ctx.pos[s]])
            sent_i, _ = best_sentence(cp, by_id[best])
            if by_id[best].usable:
                used = by_id[best].sentence_stems[sent_i]
                omitted = _omitted_condition(by_id[best].sentence_texts[sent_i], ctx.answer_all)
        else:
            contradicting = find_contradicting(cp, ctx.chunks)
            if not contradicting and contradicted_by is not None:
                contradicting = [contradicted_by]
            if contradicting:
                verdict = "contradicted"
            best_cov = max(ce.pair_covs, default=0.0)
            source = "noise" if best_cov >= 0.5 or contradicting else "hallucination"
        judgment = ClaimJudgment(
            text=claim.text,
            verdict=verdict,
            supporting=supporting,
            citations=list(claim.citations),
            citation_ok=[cid in supporting for cid in claim.citations],
            on_topic=_on_topic(cp, ctx.qstems, supporting, by_id),
            source=source,
            contradicting=contradicting,
            omitted=omitted,
            confidence=p,
            support_probability=p,
        )
        return judgment, used


# Words that open a claim by referring back to the one before it ("It had hit an iceberg" after
# "The Titanic sank ..."): the claim is about what that one is about.
_BACK_REFERENCES = frozenset("it its they their them he his him she her this these those such".split())


def continue_topic(judged: list[ClaimJudgment]) -> None:
    """A claim that opens with a word referring back to the claim before it ("It", "Their",
    "These") is on the query's topic when that claim is: its subject is the pronoun's
    antecedent, which the word test of :func:`_on_topic` cannot see."""
    for prev, j in zip(judged, judged[1:]):  # noqa: B905 (one shorter by design)
        if not j.on_topic and prev.on_topic and j.text.split(" ", 1)[0].lower() in _BACK_REFERENCES:
            j.on_topic = True


def _on_topic(
    cp: TextProfile, qstems: frozenset[str], supporting: list[str], by_id: dict[str, ChunkEvidence]
) -> bool:
    """Whether a claim addresses the query's subject: it shares a content word with the
    query, or the chunk sentence it rests on does. Resting on a chunk that mentions the
    query somewhere else is not enough: a faithful answer about another part of an
    on-topic page is off topic."""
    if not qstems or cp.stem_set & qstems:
        return True
    for cid in supporting:
        chunk = by_id[cid]
        i, _ = best_sentence(cp, chunk)
        if chunk.sentence_stems[i] & qstems:
            return True
    return False


def lexical_utilization(
    claim_texts: list[str], supporting: list[list[str]], chunks: list[ChunkEvidence]
) -> float | None:
    """Context utilization from verdicts: of the content words of the evidence
    sentences the supported claims rest on (first usable supporting chunk, best
    sentence), the share the answer uses. None when no claim rests on usable evidence."""
    by_id = {c.id: c for c in chunks}
    evidence: set[str] = set()
    answer: set[str] = set()
    for text, sup in zip(claim_texts, supporting, strict=True):
        cp = claim_profile(text, chunks)
        answer |= cp.stem_set
        usable = [s for s in sup if s in by_id and by_id[s].usable]
        if usable:
            i, _ = best_sentence(cp, by_id[usable[0]])
            evidence |= by_id[usable[0]].sentence_stems[i]
    return len(evidence & answer) / len(evidence) if evidence else None


def _omitted_condition(sentence: str, answer_stems: frozenset[str]) -> str | None:
    """A coordinated requirement of ``sentence`` that the answer leaves out.

    The sentence is cut at ``and``/commas/semicolons (and the first part after
    its verb and last preposition). A part without a subject of its own
    ("documented authorization from the records officer", "the security
    team", "may not repeat the last 12 passwords") that has at least two content words found
    nowhere else in the sentence, under a third of which the answer mentions, while the
    answer does use most of the rest of the sentence, is an omitted condition.
    Independent clauses ("..., and the office is in Paris") are separate facts,
    not conditions, and are never flagged.
    """
    parts = [p.strip() for p in _CONJUNCT_RE.split(sentence.strip().rstrip(".")) if p and p.strip()]
    if len(parts) < 2:
        return None
    # "rotated every 180 days and immediately after ..." shares "rotated"; "protected against
    # modification and kept online ..." coordinates two verb phrases, so each keeps its participle.
    head, first = split_head(parts[0], absorb_participle=not any(starts_with_verb(p) for p in parts[1:]))
    rest_stems = [profile(p).stem_set for p in parts[1:]]
    others_stems = frozenset().union(*rest_stems)
    head_stems = profile(head).stem_set
    words = first.split()
    # "... within 30 days of joining and ...": the left conjunct starts after a preposition;
    # walk back from the last one until it holds two words of its own.
    for k in sorted((k for k, w in enumerate(words) if w.lower() in PREPOSITIONS), reverse=True):
        tail = " ".join(words[k + 1 :])
        if k < len(words) - 1 and len(profile(tail).stem_set - others_stems - head_stems) >= 2:
            head = f"{head} {' '.join(words[: k + 1])}"
            head_stems = profile(head).stem_set
            first = tail
            break
    parts[0] = first
    stems = [profile(first).stem_set, *rest_stems]
    for i, part in enumerate(parts):
        if not part or independent_clause(part):
            continue
        others = head_stems.union(*(stems[j] for j in range(len(parts)) if j != i))
        own = stems[i] - others
        if len(own) < 2 or len(own & answer_stems) * 3 >= len(own):
            continue
        if others and len(others & answer_stems) / len(others) >= 0.5:
            return part
    return None


def attach_citations(
    claims: list[Claim], citations: list[dict[str, Any]], answer: str, ids: list[str]
) -> None:
    """Replace marker-derived citations with the record's explicit ``citations``:
    by character offsets when given, else by the k-th occurrence of the marker in
    the answer, else to the claim whose words the cited chunk's id best fits (last claim)."""
    if not claims:
        return
    for c in claims:
        c.citations = []
    seen: dict[str, int] = {}
    for cit in citations:
        doc = cit.get("doc_id", cit.get("document_id", cit.get("id")))
        if doc is None:
            continue
        doc = str(doc)
        pos: int | None = None
        start, end = cit.get("start"), cit.get("end")
        if isinstance(end, int) or isinstance(start, int):
            pos = end if isinstance(end, int) else start
            target = _claim_at(claims, pos, prefer_overlap=(start, end))
        else:
            marker = cit.get("marker")
            target = None
            if isinstance(marker, str) and marker:
                occ = [m.start() for m in re.finditer(re.escape(marker), answer)]
                if occ:
                    k = seen.get(marker, 0)
                    seen[marker] = k + 1
                    target = _claim_at(claims, occ[min(k, len(occ) - 1)])
            if target is None:
                target = claims[-1]
        target.citations.append(doc)


def _claim_at(claims: list[Claim], pos: int, prefer_overlap: tuple[Any, Any] | None = None) -> Claim:
    if prefer_overlap and isinstance(prefer_overlap[0], int) and isinstance(prefer_overlap[1], int):
        s, e = prefer_overlap
        best = max(claims, key=lambda c: min(e, c.end) - max(s, c.start))
        if min(e, best.end) - max(s, best.start) > 0:
            return best
    for c in claims:
        if c.start <= pos < c.end:
            return c
    before = [c for c in claims if c.end <= pos]
    return before[-1] if before else claims[0]
