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

from .dates import ends_with_month_abbreviation
from .formatting import formatting_spans
from .markers import Marker, find_markers, read_markers
from .morphology import IRREGULAR
from .text import has_content, strip_markers

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
_AUX = frozenset(
    "is are was were be been being am has have had do does did must shall should will would can could may "
    "might requires require required permits permit permitted allows allow allowed means mean".split()
)
_DET_PREP = frozenset(
    "the a an of from to for in on at by with and or this that these those all any each every some no "
    "many few several its their his her our your my".split()
)
PREPOSITIONS = frozenset(
    "after before within from of with by upon to for unless if until that during under over without via "
    "in on at than once when where into onto through against".split()
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


def _verb_index(words: list[str]) -> int:
    """Index of the first verb-like word (after the first word), or -1."""
    lw = [w.lower().strip(",.;:") for w in words]
    for i in range(1, len(lw)):
        if lw[i] in _AUX:
            return i
    for i in range(1, len(lw)):
        w = lw[i]
        if lw[i - 1] in PREPOSITIONS:
            break  # past a preposition we are inside a phrase, not at the clause's verb
        if len(w) > 3 and (w.endswith("s") or w.endswith("ed")) and not w.endswith("ss"):
            if lw[i - 1] not in _DET_PREP and not lw[i - 1][:1].isdigit() and not w.endswith("ous"):
                return i
    return -1


_RELATIVES = frozenset(("which", "who", "whose", "whom", "where"))


def _main_verb_index(words: list[str]) -> int:
    """:func:`_verb_index` of the words outside a relative clause set off by commas ("The
    deal, which the family has agreed to support, still requires ..."), as an index into
    ``words``: the head a subject-less clause borrows ends before the main verb, not the
    relative clause's."""
    kept: list[int] = []
    skipping = False
    for i, w in enumerate(words):
        if not skipping and i and words[i - 1].endswith(",") and w.lower() in _RELATIVES:
            skipping = True
        if not skipping:
            kept.append(i)
        elif w.endswith(","):
            skipping = False
    vi = _verb_index([words[i] for i in kept])
    return kept[vi] if vi >= 0 else -1


_PIECE_END_RE = re.compile(r"[,:;]")
# A word before the verb that leaves the subject unfinished: the verb is a later
# coordination's, and the "and" before the tail joins nouns.
_COORDINATORS = frozenset(("and", "or", "but", "nor"))
# Words whose phrase a bare "and" completes ("between X and Y", "both X and Y").
_PAIRED = frozenset(("between", "both"))


def _joins_clauses(conjunction: str, head: str, tail: str) -> bool:
    """Whether ``conjunction`` (a :data:`_CONJ_SPLIT_RE` match) joins two clauses, so the
    sentence is cut there. A semicolon always does; otherwise both sides need a verb. A bare
    "and" (no comma before it) more often joins nouns or verbs of one clause ("green and red
    light", "softens and bends", "vet visits, good nutrition and exercise"), so there the tail
    must read as a clause before its first comma, with words after its verb, and the head's
    last piece (after its last comma or colon: "works offline: maps and timetables can be
    downloaded") must have a verb of its own (an auxiliary, or a verb-like word
    in a piece longer than a list item's three words)."""
    conjunction = conjunction.strip()
    if conjunction.startswith(";"):
        return True
    tail_words, head_words = tail.split(), head.split()
    vt = _verb_index(tail_words)
    if vt < 1 or _verb_index(head_words) < 1:
        return False
    if tail_words[vt - 1].lower() in _COORDINATORS:
        return False  # "shareholder and regulatory approval and is expected to": no subject
    if conjunction.startswith(","):
        return True
    if vt == len(tail_words) - 1 or any(w.endswith(",") for w in tail_words[:vt]):
        return False
    piece = _PIECE_END_RE.split(head)[-1].split()
    if any(w.lower() in _PAIRED for w in piece[-3:]):
        return False  # "between Galway and Athenry", "both adults and children"
    if any(w.lower() in _AUX for w in piece[1:]):
        return True
    return len(piece) > 3 and _verb_index(piece) >= 1


def split_head(text: str, absorb_participle: bool = True) -> tuple[str, str]:
    """Split a clause after its first verb: ("Earlier deletion requires", "release of ...").
    With ``absorb_participle`` a following participle joins the head ("are rotated")."""
    words = text.split()
    vi = _verb_index(words)
    if vi < 1:
        return "", text
    end = vi + 1
    while (
        absorb_participle
        and end < len(words)
        and (words[end].lower() in ("not", "be", "been") or words[end].lower().endswith(("ed", "en")))
    ):
        end += 1  # "are rotated", "must not be disclosed"
    return " ".join(words[:end]), " ".join(words[end:])


_IRREGULAR_PARTICIPLES = frozenset(
    "kept held made sent set put built paid told sold found done read left run bought brought caught taught "
    "thought sought lost met spent understood stood won withheld upheld shut cut let led fed hung struck".split()
)
_NOT_PARTICIPLES = frozenset("when then often even open seven eleven children women men garden token".split())
_SUBORDINATORS = frozenset("that which who whom whose whether where when if because".split())
_PRONOUNS = frozenset("it they he she this that these those which who we you i there".split())


def independent_clause(text: str) -> bool:
    """Whether ``text`` has a subject of its own: it opens with a pronoun, or an
    auxiliary/verb follows words before it ("the office is in Paris"). A verb
    phrase that shares the sentence's subject ("may not repeat ...") is not."""
    words = [w.lower().strip(",.;:") for w in text.split()]
    if not words:
        return False
    if words[0] in _PRONOUNS:
        return True
    if words[0] in _AUX:
        return False
    for w in words[1:]:
        if w in _SUBORDINATORS:
            return False  # "confirmation that the matter is closed": the verb belongs to a nested clause
        if w in _AUX:
            return True
    return False


def starts_with_verb(text: str) -> bool:
    """Whether ``text`` opens with an auxiliary or a participle ("kept online ...")."""
    words = text.split()
    if not words:
        return False
    w = words[0].lower().strip(",.;:")
    return (
        w in _AUX
        or w in _IRREGULAR_PARTICIPLES
        or (len(w) > 3 and w.endswith(("ed", "en")) and w not in _NOT_PARTICIPLES)
    )


def has_verb(text: str) -> bool:
    """Whether ``text`` reads as a clause (a verb after a subject, or an auxiliary)."""
    words = text.split()
    return _verb_index(words) >= 1 or any(w.lower().strip(",.;:") in _AUX for w in words)


def _complete(fragment: str, head_words: list[str], verb_at: int) -> str:
    """Give a subject-less fragment the head of the clause it was split from."""
    words = fragment.split()
    if not words or verb_at < 0:
        return fragment
    first = words[0].lower().strip(",")
    if first in _PRONOUNS:
        return fragment  # "they pass": a subject of its own
    verb = head_words[verb_at].lower()
    same_form = (first.endswith("s") and verb.endswith("s")) or (first.endswith("ed") and verb.endswith("ed"))
    own_verb = len(words) > 1 and words[1].lower().strip(",.;:") in _AUX  # "crocodiles have ..."
    # An irregular simple past ("and said there are no plans", "and grew 3%"); not a participle
    # in -en/-wn, which opens a noun phrase as often ("and written confirmation").
    past = (
        first in IRREGULAR and first not in _NOT_VERBS and not first.endswith(("en", "wn")) and not own_verb
    )
    if first in _AUX or past or (len(first) > 3 and same_form and not first.endswith("ss") and not own_verb):
        return " ".join(head_words[:verb_at] + words)
    if _verb_index(words) < 0 and not any(w.lower() in _AUX for w in words):
        return " ".join(head_words[: verb_at + 1] + words)
    return fragment


# Forms the irregular table relates to a verb that are no verbs themselves.
_NOT_VERBS = frozenset(("dead", "death"))
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
                if _joins_clauses(cm.group(0), seg[pos : cm.start()], seg[cm.end() :]):
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
                cleaned = _clean(_complete(text, head_words, verb_at))
            else:
                cleaned = _clean(text)
                head_words = cleaned.rstrip(".").split()
                verb_at = _main_verb_index(head_words)
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
