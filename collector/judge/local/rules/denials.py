"""A claim that asserts what its sentence denies in one of its clauses.

"It has been shown to extend lifespan in humans" against "Some animal studies suggest it
could extend lifespan, but this has not been shown in humans": the sentence's words cover
the claim, and the sentence as a whole is about something else as well, so the whole-sentence
negation rule (:func:`.conflicts.negation_conflicts`, which needs 75% of the claim's stems
and a sentence not much longer than the claim) does not see it. What gives it away is the
denied phrase: the words after the sentence's "not" (or "never", "n't") up to the end of
its clause, "been shown in humans", are all in the claim, which negates nothing.

The phrase must hold at least two content stems, one of them lower-case (a predicate: "John
Hanson, not Barack Obama, as the first president" contrasts names), so "but not in the US" is
left to the other rules; a negation that bounds rather than denies ("not until 1990", "not more
than", "not only", "not always") is skipped, and so is a claim that negates in any words of its
own ("without", "resistant to"). The caller reads the chunk sentence the claim rests on (60%
of its content stems).
"""

from __future__ import annotations

from ...text.tokens import NEGATIONS, STOPWORDS, TextProfile, case_forms, stem

__all__ = ["asserts_denied", "may_deny", "negates_in_own_words", "negated_stems"]

# The negations read here: the verbal ones. "no", "without" and "lack" name an absence, which
# a claim restates with other words often enough ("has no side effects").
_DENIALS = frozenset(("not", "never", "cannot"))
# A negation followed by one of these bounds, hedges or contrasts instead of denying.
_NOT_DENIALS = frozenset(
    "only just merely simply even until till necessarily always all every more less fewer later earlier "
    "sooner before after least far much quite very too so as yet".split()
)
# Words that end the denied phrase: the start of the next clause.
_CLAUSE_ENDS = frozenset(
    "and but or while whereas because although though since so which who that when where if unless "
    "as than however instead rather".split()
)
# A claim with any of these negates in its own words: what the sentence denies may be what it
# says ("resistant to chemical reactions" against "is not a chemical reaction").
_CLAIM_NEGATIONS = NEGATIONS | frozenset(
    "resistant immune free avoid avoids avoided prevent prevents prevented absent refuse refuses refused "
    "deny denies denied reject rejects rejected impossible neither "
    "cut cuts cutting lose loses losing lost".split()
)
_CLAIM_NEGATION_FORMS = case_forms(_CLAIM_NEGATIONS)
_UNTIL = frozenset(("until", "till"))
# At most this many tokens after the negation are read.
_SPAN = 6


def _is_denial(token: str) -> bool:
    low = token.lower()
    return low in _DENIALS or low.endswith("n't")


def may_deny(cp: TextProfile, chunk: TextProfile) -> bool:
    """Whether the chunk (its whole profile) negates something and the claim nothing, not
    even in other words ("without a solid surface", "resistant to reactions"): the chunk's
    cached :attr:`.tokens.TextProfile.negated` and one set operation on the claim's tokens."""
    return chunk.negated and not negates_in_own_words(cp)


def negates_in_own_words(cp: TextProfile) -> bool:
    """Whether the claim negates, in a negation word or in words that say an absence or a
    loss ("free of charge", "cutting power to 120,000 homes" for "leaving 120,000 homes
    without power")."""
    return cp.negated or not _CLAIM_NEGATION_FORMS.isdisjoint(cp.tokens)


def negated_stems(tokens: list[str]) -> frozenset[str]:
    """The content stems that a negation among ``tokens`` (any of :data:`.tokens.NEGATIONS`:
    "not", "no", "without", ...) has in its scope: the words after it up to the next clause
    word or :data:`_SPAN` tokens. "... approved on Tuesday, despite objections from residents
    who say the roads cannot cope" negates "cope", not the approval."""
    out: set[str] = set()
    for k, tok in enumerate(tokens):
        low = tok.lower()
        if low not in NEGATIONS and not low.endswith("n't"):
            continue
        for raw in tokens[k + 1 : k + 1 + _SPAN]:
            t = raw.lower()
            if t in _CLAUSE_ENDS or t in NEGATIONS:
                break
            if t not in STOPWORDS and t.isalpha():
                out.add(stem(t))
    return frozenset(out)


def _denied_phrases(tokens: list[str]) -> list[frozenset[str]]:
    """The content stems of each phrase the text denies: after each verbal negation, up to the
    next clause word or :data:`_SPAN` tokens."""
    out = []
    for k, tok in enumerate(tokens):
        if not _is_denial(tok):
            continue
        if k + 1 < len(tokens) and tokens[k + 1].lower() in _NOT_DENIALS:
            continue
        phrase, predicate = [], False
        for raw in tokens[k + 1 : k + 1 + _SPAN]:
            t = raw.lower()
            if t in _UNTIL:  # "did not open until 1990" says when it opened
                phrase = []
                break
            if t in _CLAUSE_ENDS or _is_denial(t):
                break
            if t not in STOPWORDS:
                phrase.append(stem(t))
                predicate = predicate or raw[:1].islower()
        # "John Hanson, not Barack Obama, as the first president" contrasts names: no predicate
        if len(phrase) >= 2 and predicate:
            out.append(frozenset(phrase))
    return out


def asserts_denied(cp: TextProfile, sp: TextProfile) -> bool:
    """The claim (no verbal negation of its own) has every content stem of a phrase sentence
    ``sp`` denies."""
    return any(phrase <= cp.stem_set for phrase in _denied_phrases(sp.tokens))
