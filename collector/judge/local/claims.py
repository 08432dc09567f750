"""Claim extraction: split an answer into atomic, verifiable claims.

An answer is cut into sentences, sentences into clauses (semicolons, a
citation marker followed by a conjunction, ``, and``/``, but`` before an
independent clause). A clause that lost its subject ("... [C2] and documented
authorization from the records officer") borrows the head of the first clause
("Earlier deletion requires"), so each claim can be checked on its own.
Citation markers are attached to the claim they follow; greetings, closers,
meta sentences and questions are dropped, hedge prefixes stripped, and sentences that say the sources do not answer are
recognised as abstention statements.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..text.dates import ends_with_month_abbreviation
from ..text.formatting import formatting_spans
from ..text.markers import Marker, find_markers, read_markers
from ..text.tokens import has_content, strip_markers
from .clauses import (
    PREPOSITIONS,
    complete,
    has_verb,
    independent_clause,
    joins_clauses,
    main_verb_index,
    split_head,
    starts_with_verb,
)

__all__ = [
    "EXTRACTION_VERSION",
    "Claim",
    "Marker",
    "ExtractedAnswer",
    "extract_claims",
    "find_markers",
    "is_abstention",
    "is_non_claim",
    "normalise_claim",
    "has_verb",
    "split_head",
    "independent_clause",
    "starts_with_verb",
    "PREPOSITIONS",
]

# The version of what this module calls a claim: both judges pin it in their ids, since a change
# here changes their verdicts on the same answer.
EXTRACTION_VERSION = "15"

_SPACE_PUNCT_RE = re.compile(r"\s+([.,;:!?])")
_CUT_AFTER_MARKER_RE = re.compile(r"\s*(?:,\s*)?(?:;|and\b|or\b|but\b|while\b|whereas\b)")
_LEADING_CONJ_RE = re.compile(r"^\s*(?:,\s*)?(?:and|or|but|while|whereas|so|yet)\s+", re.I)
_SENT_END_RE = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\n+")
# A list number on its own ("1.", "iv)"): the item's text follows it, it ends no sentence.
_BARE_ENUM_RE = re.compile(r"\(?(?:\d{1,2}|[ivx]{1,4})[.)]", re.I)
_ABBREV = frozenset(
    "e.g i.e etc vs mr mrs ms dr prof st no fig al approx inc ltd co corp jr sr u.s u.k cf sec art para".split()
)
_CONJ_SPLIT_RE = re.compile(
    r"(?:,\s*|;\s*)(?:and|but|while|whereas|so|yet)\s+|;\s+|\s+(?:and|but|whereas)\s+"
)
_GREETING_RE = re.compile(
    r"^\s*(?:hi|hello|hey|greetings|thanks|thank you|sure|certainly|of course|absolutely|great question|"
    r"good question|happy to help|glad to help|i hope (?:this|that) helps|hope (?:this|that) helps|let me know|"
    r"feel free|please let me know|please note that this is not|this is not (?:legal|medical|financial) advice|"
    r"i(?:'m| am) (?:happy|glad) to (?:help|assist)|i(?:'d| would) be (?:happy|glad) to|"
    r"if you have any (?:further |other |more |additional )?questions)\b",
    re.I,
)
# Sentences about the answer itself rather than the world: they assert nothing to verify.
_META_RE = re.compile(
    r"^\s*(?:here (?:is|are)|here's|below (?:is|are)|the following (?:is|are)|let me|let's|i will|i'll|"
    r"i can help|i'd be (?:happy|glad)|i would be (?:happy|glad)|as an ai|"
    r"you (?:asked|want to know|are asking)|your question (?:is|was|asks)|i found the following|"
    r"the (?:question|user|query) (?:is )?(?:asks?|asking|wants?|wanting|seeks|seeking)|"
    r"in this (?:answer|response)|this (?:answer|response) (?:is|explains|covers|summari[sz]es))\b",
    re.I,
)
# What a RAG answer calls its evidence: "the passages provided", "passage 2", "the given context".
_SOURCE = (
    r"(?:the |these |this |those |your )?(?:(?:first|second|third|fourth|fifth|last) )?"
    r"(?:provided |available |given |retrieved |above |supplied |cited |structured )?"
    r"(?:(?:news )?(?:context|sources?|documents?|information|passages?|texts?|excerpts?|articles?|"
    r"search results|references?|stor(?:y|ies)|reports?|pieces?|data|json(?: data| object)?|reviews?)|"
    r"news|author|writer)(?: \d{1,2}(?:(?:, ?| and | ?- ?)\d{1,2})*| [a-z]\d{1,2})?"
    r"(?: (?:provided|given|above|supplied|retrieved|you (?:have )?(?:provided|shared|given)))?"
)
# What a source is said to do with what follows it: "The article states that X", "The
# passage describes how X", "The story focuses on X" (a summary's framing, not its claim).
_REPORTING = (
    r"(?:states?|stated|says?|said|mentions?|mentioned|indicates?|indicated|suggests?|suggested|notes?|"
    r"noted|explains?|explained|shows?|showed|reports?|reported|describes?|described|highlights?|"
    r"highlighted|discusses|discussed|details|detailed|outlines?|outlined|emphasi[sz]es|emphasi[sz]ed|"
    r"stresses|stressed|reveals?|revealed|adds|added|confirms?|confirmed|points out|pointed out|"
    r"concludes|concluded|clarifies|clarified|(?:talks|talked|is|was) about(?!\s+(?:to\b|\d))|"
    r"(?:focuses|focused) on|(?:deals|dealt) with|covers|covered|agrees?|agreed)(?: that| how)?"
)
_HEDGE_PREFIX_RE = re.compile(
    r"^\s*(?:(?:i think|i believe|in my opinion|it seems(?: that)?|it appears(?: that)?|basically|"
    # "No, X" answers the question, it does not negate X; "Sure, X" and "Certainly! X" say X.
    r"(?:yes|no|yeah|nope|correct|indeed)\s*[,.!;:\u2014-]|"
    r"(?:hi|hello|hey|sure(?: thing)?|certainly|of course|absolutely|great question|good question|thanks for asking|"
    r"happy to help)\s*[,.!:]|"
    r"in summary|in short|in conclusion|to conclude|to summari[sz]e|overall|"
    r"(?:(?:short|final|direct|brief) )?answer:|a:|note:|summary:|tl;?dr:?|"
    r"(?:it is|it's) (?:important|worth|interesting) (?:to note|noting|mentioning|pointing out) that|"
    r"(?:please )?note that|keep in mind that|it should be noted that|"
    r"the answer (?:to (?:your|the|this) question )?is that|to answer (?:your|this|the) question[,:]|"
    r"the (?:short |simple |direct )?answer (?:to (?:your|the|this) question(?: \"[^\"]*\"| '[^']*')? )?is:?|"
    rf"it (?:can be|could be|is|was) (?:inferred|stated|mentioned|noted|said|reported|explained|suggested|"
    rf"seen|concluded|gathered|understood)(?: (?:in|by|from) {_SOURCE})? that|"
    rf"we can (?:infer|see|conclude|tell|say|gather)(?: (?:from|in) {_SOURCE})? that|"
    rf"(?:based (?:solely |only |entirely )?on|according to|as per) (?:my (?:analysis|reading|review) of )?{_SOURCE}"
    rf"(?: (?:provided|given|contained|found) (?:in|by) {_SOURCE})?|"
    rf"(?:from|in|as (?:stated|mentioned|described|noted|explained|indicated) in) {_SOURCE}(?=\s*,)|"
    rf"(?:both |all (?:of )?)?{_SOURCE}(?: and {_SOURCE})? (?:also |further |additionally |mainly |mostly |"
    rf"primarily |both |all )?{_REPORTING}|"
    r"i would say(?: that)?|(?:from what|as far as) i can (?:tell|see)|"
    r"i (?:should|must|want to|would like to) (?:note|mention|point out|add)(?: that)?|(?:therefore|thus|hence|finally|lastly|firstly|secondly|additionally|furthermore|"
    r"moreover|in addition|also|however)\s*,)"
    r"\s*,?\s*)+",
    re.I,
)
# A line that only names sources ("Source: passage 2", "References: [1], [2]", "- Passage 1"):
# where the claims come from, not a claim.
_SOURCE_LINE_RE = re.compile(
    r"^\W*(?:(?:sources?|references?|citations?)\W*)?"
    r"(?:(?:passages?|documents?|docs?|sources?|chunks?)\s*\d{1,2}(?:\s*(?:,|and|&|-)\s*\d{1,2})*\W*)*$",
    re.I,
)
_ABSTAIN_RE = re.compile(
    r"(?:\b(?:do|does|did)\s*(?:not|n't)\s+(?:establish|contain|provide|mention|specify|say|state|include|"
    r"answer|address|cover|give|describe|indicate|list|define|explain|have)\b"
    r"|\b(?:can ?not|can't|could not|couldn't|unable to|am not able to|are not able to)\s+"
    r"(?:find|answer|determine|tell|establish|confirm|say|locate|provide|verify)\b"
    r"|\b(?:no|insufficient|not enough|limited)\s+(?:relevant\s+)?(?:information|evidence|data|details|context|"
    r"mention|answer)\b"
    r"|\bi (?:do not|don't) (?:know|have)\b"
    r"|\bnot (?:mentioned|specified|stated|provided|covered|addressed|available|included|established|found)"
    r"\s+(?:in|by|within)\b"
    r"|\b(?:is|are) (?:unclear|unknown)\b)",
    re.I,
)


@dataclass(slots=True)
class Claim:
    """One atomic claim: its text (markers removed), span in the answer and the
    chunk ids it cites (one entry per citation, duplicates kept)."""

    text: str
    start: int
    end: int
    citations: list[str] = field(default_factory=list)


@dataclass(slots=True)
class ExtractedAnswer:
    """The answer split into claims, plus abstention statements found in it."""

    claims: list[Claim]
    abstention_sentences: list[str]
    markers: list[Marker]

    @property
    def abstained(self) -> bool:
        """True when the answer only says the sources do not answer."""
        return bool(self.abstention_sentences) and not self.claims


# Every alternative of _ABSTAIN_RE contains one of these words (case-insensitively), so ASCII
# text without any of them cannot match: a few C-level substring tests instead of the regex scan.
_ABSTAIN_WORDS = (
    "not",
    "n't",
    "unable",
    "information",
    "evidence",
    "data",
    "details",
    "context",
    "mention",
    "answer",
    "unclear",
    "unknown",
)


def is_abstention(sentence: str) -> bool:
    """Whether a sentence says the sources (or the model) cannot answer."""
    if sentence.isascii() and not any(map(sentence.lower().__contains__, _ABSTAIN_WORDS)):
        return False
    return bool(_ABSTAIN_RE.search(sentence))


def _sentence_spans(answer: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    start = 0
    for m in _SENT_END_RE.finditer(answer):
        end = m.start()
        before = answer[start:end].rstrip(".!?\"')] ").split()
        last = before[-1].lower().rstrip(".") if before else ""
        if m.group(0).strip() == "" and "\n" not in m.group(0):
            nxt = answer[m.end() : m.end() + 1]
            if last in _ABBREV or (len(last) == 1 and last.isalpha()) or (nxt and nxt.islower()):
                continue
            if nxt.isdigit() and ends_with_month_abbreviation(answer[start:end]):
                continue  # "Jan. 15"
        if _BARE_ENUM_RE.fullmatch(answer[start:end].strip()):
            continue
        spans.append((start, end))
        start = m.end()
    spans.append((start, len(answer)))
    return [(s, e) for s, e in spans if answer[s:e].strip()]


_ENUM_RE = re.compile(r"^\s*(?:[-*\u2022\u00b7]|\(?\d{1,2}[.)]|\(?[a-z][.)])\s+")


def is_non_claim(text: str) -> bool:
    """Greetings and closers, meta sentences about the answer ("Here is what I found"),
    questions (a restated or rhetorical question asserts nothing) and lines that only name
    sources ("Source: passage 2"): not claims."""
    return _non_claim(text, _HEDGE_PREFIX_RE.sub("", text))


def _non_claim(text: str, bare: str) -> bool:
    """:func:`is_non_claim` given ``bare``, the text without its hedge prefixes."""
    # "Based on the passages, here are the causes:" is a meta sentence behind a hedge, and
    # "Sure, logs are kept five years" a claim behind a greeting.
    if _GREETING_RE.match(bare) or text.rstrip(" \"')]").endswith("?") or _SOURCE_LINE_RE.match(text):
        return True
    # "Here is the rule: logs are kept five years" states a fact after its colon.
    return bool(_META_RE.match(bare)) and not (":" in bare and has_content(bare.split(":", 1)[1]))


def _claim_body(text: str) -> str | None:
    """``text`` read as a claim: None when it is none (:func:`is_non_claim`, or nothing but a
    hedge), the fact after a meta opening's colon ("Here is the answer: X" -> "X"), else
    ``text``. The hedge prefixes are stripped once, for every test."""
    bare = _HEDGE_PREFIX_RE.sub("", text)
    # The space lets a list number standing alone ("2." on its own line) match as a marker.
    if _non_claim(text, bare) or not has_content(_ENUM_RE.sub("", bare + " ")):
        return None
    if ":" in bare and _META_RE.match(bare):
        return bare.split(":", 1)[1].strip()
    return text


def normalise_claim(text: str) -> str:
    """A claim without citation markers and without a leading list bullet or number
    ("1. Choose a location" -> "Choose a location")."""
    return _ENUM_RE.sub("", strip_markers(text)).strip()


_SPACE_BEFORE_PUNCT = (" .", " ,", " ;", " :", " !", " ?")


def _clean(text: str) -> str:
    text = _ENUM_RE.sub("", text)
    # Whitespace runs become single spaces (the runs at the ends go in the strip below); only
    # then can a space precede punctuation, and only then is the regex needed.
    text = " ".join(text.split())
    if any(map(text.__contains__, _SPACE_BEFORE_PUNCT)):
        text = _SPACE_PUNCT_RE.sub(r"\1", text)
    text = text.strip(" ,;:-–—\t\n")
    text = _HEDGE_PREFIX_RE.sub("", text).strip(" ,;:")
    if text and text[0].islower():
        text = text[0].upper() + text[1:]
    if text and text[-1] not in ".!?":
        text += "."
    return text


def extract_claims(answer: str, chunk_ids: list[str]) -> ExtractedAnswer:
    """Split ``answer`` into claims with the chunk ids their markers cite."""
    answer, markers = read_markers(answer, chunk_ids)
    masked = list(answer)
    for span in (*((m.start, m.end) for m in markers), *formatting_spans(answer)):
        masked[span[0] : span[1]] = " " * (span[1] - span[0])
    plain = "".join(masked)
    claims: list[Claim] = []
    abstentions: list[str] = []
    # A sentence ending in a colon ("Common triggers include:") introduces the list items after
    # it: it frames them and is no claim of its own, and an item that is a fragment (no subject
    # of its own, no full stop: "eating a large meal") is read with it.
    intro: _Intro | None = None
    for s_start, s_end in _sentence_spans(answer):
        if intro is not None and not _ENUM_RE.match(plain[s_start:s_end]):
            intro = None
        # Markers that open a sentence belong to the previous one ("... end. [2] Next").
        sent_markers = [m for m in markers if s_start <= m.start < s_end]
        lead = s_start
        while True:
            ws = len(answer[lead:s_end]) - len(answer[lead:s_end].lstrip())
            opening = [m for m in sent_markers if m.start == lead + ws]
            if not opening or not claims:
                break
            claims[-1].citations.extend(opening[0].doc_ids)
            sent_markers.remove(opening[0])
            lead = opening[0].end
        # Cut points: after a marker followed by a conjunction/semicolon, and at ;/", and" clause joins.
        pieces: list[tuple[int, int, list[Marker]]] = []
        cut_start = lead
        for m in sent_markers:
            rest = answer[m.end : s_end]
            if _CUT_AFTER_MARKER_RE.match(rest) and len(rest.split()) >= 3:
                pieces.append((cut_start, m.end, []))
                cut_start = m.end
        pieces.append((cut_start, s_end, []))
        fine: list[tuple[int, int]] = []
        for p_start, p_end, _ in pieces:
            seg = plain[p_start:p_end]
            pos = 0
            for cm in _CONJ_SPLIT_RE.finditer(seg):
                if joins_clauses(cm.group(0), seg[pos : cm.start()], seg[cm.end() :]):
                    fine.append((p_start + pos, p_start + cm.start()))
                    pos = cm.end()
            fine.append((p_start + pos, p_end))
        head_words: list[str] = []
        verb_at = -1
        for f_start, f_end in fine:
            own = [m for m in sent_markers if f_start <= m.start < f_end]
            text = " ".join(plain[f_start:f_end].split())  # whitespace runs squeezed, ends stripped
            text = _LEADING_CONJ_RE.sub("", text)
            if not text.strip(" .,;:"):
                if own and claims:
                    claims[-1].citations.extend(d for m in own for d in m.doc_ids)
                continue
            if is_abstention(text):
                abstentions.append(_clean(text))
                continue
            body = _claim_body(text)
            if body is None:
                continue
            text = body
            if intro is not None:
                intro.used(claims)
                body = _ENUM_RE.sub("", text)
                if body[-1:] not in ".!?" and not independent_clause(body):
                    text = f"{intro.text}: {body}"
            if head_words:
                cleaned = _clean(complete(text, head_words, verb_at))
            else:
                cleaned = _clean(text)
                head_words = cleaned.rstrip(".").split()
                verb_at = main_verb_index(head_words)
            claims.append(Claim(cleaned, f_start, f_end, [d for m in own for d in m.doc_ids]))
        if plain[s_start:s_end].rstrip().endswith(":") and claims and claims[-1].start >= s_start:
            intro = _Intro(claims[-1])
    return ExtractedAnswer(claims, abstentions, markers)


class _Intro:
    """A list's introduction (a claim whose sentence ends in a colon) while its items follow."""

    __slots__ = ("claim", "text")

    def __init__(self, claim: Claim) -> None:
        self.claim = claim
        self.text = claim.text.rstrip(".")

    def used(self, claims: list[Claim]) -> None:
        """An item follows: the introduction leaves the claims (unless it cites a chunk, which
        the items do not inherit)."""
        if not self.claim.citations and self.claim in claims:
            claims.remove(self.claim)
