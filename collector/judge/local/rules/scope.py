"""Quantifier scope: a claim that widens what the sentence it rests on restricts.

Word overlap counts "All employees receive 20 days of paid leave" as supported by "All
full-time employees receive 20 days of paid leave": every claim word is there. Three patterns
are cheap to check against the chunk sentence the claim rests on (the one sharing most of
its content stems, at least 60% of them; :func:`.conflicts.scope_conflicts` picks it):

- **widened**, the claim quantifies a noun universally ("all", "every", "each", "any") that
  the sentence names only with a restricting modifier the claim lacks ("full-time",
  "new", "eligible", "registered") or with a partial quantifier ("some", "most", "many").
  A restricted noun is ``"unsupported"`` (the sentence says nothing about the rest), and so
  is one under "many"; any other partial quantifier is ``"contradicted"`` ("most" says "not all");
- **joined to an exclusive**, the sentence limits a word with "only" ("adults only", "only
  for members") and the claim joins that word with another the sentence lacks ("adults and
  children"): ``"contradicted"``;
- **a superlative narrowed**, the claim drops a modifier from the sentence's superlative
  ("Australia's largest city" against "Australia's largest *inland* city", "the most
  popular attraction" against "the most popular *tourist* attraction"): ``"unsupported"``;
  any modifier counts here, a noun too ("the largest company" is not "the largest steel
  company"). Only "-est" forms, "most" and "least" after "the" or a possessive are read
  ("first", "best" name titles and firsts, "Best Actress", "his first film", that the dev
  labels accept against a longer sentence);
- **an exclusive claim**, the claim limits a word with "alone", "solely" or "exclusively" ("designed by
  Griffin alone") and the sentence joins that word to one the claim lacks ("Walter Burley
  Griffin and Marion Mahony Griffin"): ``"contradicted"``;
- **singled out**, the sentence names one of a group ("one of the largest banks", "among
  the longest", "one of the founders") and the claim makes it the only one ("the largest
  bank", "the founder"): ``"unsupported"`` (it may be the largest; the sentence does not
  say so).

A modifier counts as restricting when it is in :data:`RESTRICTING` or is an ``-ed``/``-ing``
participle ("registered", "participating"): a noun before a noun ("hospital staff") names the
domain more often than it restricts, so it is left alone.
"""

from __future__ import annotations

from ...text.tokens import STOPWORDS, TextProfile, case_forms, skip_past, stem

__all__ = ["RESTRICTING", "may_widen", "scope_conflict"]

UNIVERSAL = frozenset("all every each any".split())
PARTIAL = frozenset("some most many several certain few".split())
# The partial quantifiers that say "not all" ("most employees"); "many colours" leaves room for all.
NOT_ALL = PARTIAL - {"many"}
EXCLUSIVE = frozenset("only exclusively solely".split())
# What limits a word in a claim: "alone", "solely", "exclusively" ("Griffin alone"). Not
# "only": "their only son" limits within sons, and a sentence's "a son and a daughter" agrees.
# In a sentence "alone" is as often "by oneself" ("she lived alone").
CLAIM_EXCLUSIVE = frozenset("alone solely exclusively".split())
# Superlatives read by the narrowing pattern: "most", "least" and the "-est" forms. "first",
# "last", "best" and "worst" name titles and firsts ("Best Actress", "his first film") that
# the dev labels accept against a longer sentence.
SUPERLATIVES = frozenset(("most", "least"))
_POSSESSIVES = frozenset("his her its their our my your".split())
# What must come before a claim's superlative for the pattern: "the" or a possessive
# ("the largest city", "Australia's largest city"); "for most goals" is left alone.
_SUPERLATIVE_DETERMINERS = _POSSESSIVES | {"the"}
# Words of six letters or more that end in "est" and are no superlatives.
_NOT_SUPERLATIVES = frozenset(
    """interest honest modest forest request protest contest suggest harvest digest manifest
    conquest inquest southwest northwest midwest priest attest detest infest ingest arrest invest
    divest earnest behest unrest tempest bequest incest""".split()
)
_COORDINATORS = frozenset(("and", "or"))
# Words after a universal quantifier that make an idiom, not a quantified noun ("of all time",
# "at all times", "all kinds of").
_IDIOMS = frozenset("time times kinds sorts types along".split())
# Words between a universal quantifier and its noun ("all of the new members").
_DETERMINERS = _POSSESSIVES | {"the", "of", "these", "those"}
# Between "only" and the word it limits ("only for members", "open only to adults").
_ONLY_LINKS = frozenset("for to by with the a an".split())
RESTRICTING = frozenset(
    """new existing current former eligible full part time senior junior permanent temporary
    active qualified paid premium enterprise select adult minor domestic international first
    returning younger older female male resident local""".split()
)
# Raw tokens that can start each pattern, in the cases a text writes them: most claims and
# chunks hold none and are ruled out by set operations.
_UNIVERSAL_TRIGGERS = case_forms(UNIVERSAL)
_COORDINATOR_TRIGGERS = case_forms(_COORDINATORS)
_EXCLUSIVE_TRIGGERS = case_forms(EXCLUSIVE)
_GROUP_TRIGGERS = case_forms(("one", "among"))
_THE_TRIGGERS = case_forms(("the",))
_CLAIM_EXCLUSIVE_TRIGGERS = case_forms(CLAIM_EXCLUSIVE)
_PARTIAL_TRIGGERS = case_forms(PARTIAL)


def _is_word(t: str) -> bool:
    return t.isalpha() and t not in STOPWORDS


def _restricts(modifier: str, claim_stems: frozenset[str]) -> bool:
    """Whether ``modifier`` (lower-cased), before a noun of the sentence, limits which ones it
    means, and the claim does not say it too."""
    if not _is_word(modifier) or stem(modifier) in claim_stems:
        return False
    return modifier in RESTRICTING or (len(modifier) > 4 and modifier.endswith(("ed", "ing")))


def _universal_nouns(toks: list[str]) -> list[str]:
    """The nouns the claim quantifies universally: the first content word after "all",
    "every", "each" or "any", past any determiners."""
    out = []
    for i, t in enumerate(toks):
        if t not in UNIVERSAL:
            continue
        j = skip_past(toks, i + 1, _DETERMINERS)
        if j < len(toks) and _is_word(toks[j]) and toks[j] not in _IDIOMS:
            out.append(toks[j])
    return out


def _widened(claim: list[str], claim_stems: frozenset[str], sentence: list[str]) -> str | None:
    verdict = None
    for noun in _universal_nouns(claim):
        key = stem(noun)
        before = [sentence[k - 1] if k else "" for k, t in enumerate(sentence) if stem(t) == key]
        if not before:
            continue
        if all(b in NOT_ALL for b in before):
            return "contradicted"
        if all(b in PARTIAL or _restricts(b, claim_stems) for b in before):
            verdict = "unsupported"
    return verdict


def _is_superlative(t: str) -> bool:
    return t in SUPERLATIVES or (len(t) >= 6 and t.endswith("est") and t not in _NOT_SUPERLATIVES)


def _narrowed_superlative(claim: list[str], claim_stems: frozenset[str], sentence: list[str]) -> bool:
    """The claim has a superlative of the sentence followed by the sentence's words less a
    modifier: at the first difference after it, the sentence has a content word the claim
    lacks, and the claim's word comes within the next two."""
    for i, t in enumerate(claim):
        if not i or not _is_superlative(t):
            continue
        if claim[i - 1] not in _SUPERLATIVE_DETERMINERS and not claim[i - 1].endswith("'s"):
            continue
        for k, u in enumerate(sentence):
            if u != t:
                continue
            a, b = i + 1, k + 1
            while a < len(claim) and b < len(sentence) and claim[a] == sentence[b]:
                a, b = a + 1, b + 1
            if a == len(claim) or b == len(sentence) or b - k > 4 or not _is_word(claim[a]):
                continue
            extra = sentence[b]
            if _is_word(extra) and stem(extra) not in claim_stems and claim[a] in sentence[b + 1 : b + 3]:
                return True
    return False


def _limited(sentence: list[str], exclusive: frozenset[str] = EXCLUSIVE) -> set[str]:
    """The stems of the words the text limits with "only" (or another ``exclusive`` word):
    the content word before it ("adults only") and the first one after it past a
    preposition ("only for members")."""
    out = set()
    for k, t in enumerate(sentence):
        if t not in exclusive:
            continue
        if k and _is_word(sentence[k - 1]):
            out.add(stem(sentence[k - 1]))
        j = skip_past(sentence, k + 1, _ONLY_LINKS)
        if j < len(sentence) and _is_word(sentence[j]):
            out.add(stem(sentence[j]))
    return out


def _joined_to_limited(text: list[str], limited: set[str], other_stems: frozenset[str]) -> bool:
    """``text`` (lower-cased tokens) coordinates a ``limited`` word with a content word whose
    stem is not in ``other_stems``: the claim with one the sentence lacks, or the sentence
    with one the claim lacks. A text that says "only" itself is not read."""
    if "only" in text:
        return False
    for i, t in enumerate(text):
        if t not in _COORDINATORS or i == 0 or i + 1 == len(text):
            continue
        a, b = text[i - 1], text[i + 1]
        for word, other in ((a, b), (b, a)):
            if stem(word) in limited and _is_word(other) and stem(other) not in other_stems:
                return True
    return False


def _group_members(sentence: list[str]) -> set[str]:
    """The stems the sentence names only as one of a group: the word after "one of the" or
    "among the", unless the sentence also has it after a plain "the"."""
    picked, plain = set(), set()
    for k, t in enumerate(sentence[:-1]):
        if t != "the":
            continue
        key = stem(sentence[k + 1])
        if sentence[k - 2 : k] == ["one", "of"] or (k and sentence[k - 1] == "among"):
            picked.add(key)
        else:
            plain.add(key)
    return picked - plain


def _singled_out(claim: list[str], members: set[str]) -> bool:
    """The claim has one of ``members`` after a plain "the" ("the largest bank")."""
    for k, t in enumerate(claim[:-1]):
        if t == "the" and stem(claim[k + 1]) in members:
            if claim[k - 2 : k] != ["one", "of"] and not (k and claim[k - 1] == "among"):
                return True
    return False


def may_widen(claim_tokens: list[str], chunk_tokens: list[str], contradiction: bool = False) -> bool:
    """Whether a claim and a chunk (their raw tokens) have the words a pattern needs: a
    universal quantifier in the claim (and, for a ``contradiction``, a partial one in the
    chunk), a coordinator in the claim and an exclusive word in the chunk, or (not for a
    ``contradiction``) "the" in the claim and "one" or "among" in the chunk. Set operations
    rule most pairs out before a sentence is looked at."""
    if not _UNIVERSAL_TRIGGERS.isdisjoint(claim_tokens) and (
        not contradiction or not _PARTIAL_TRIGGERS.isdisjoint(chunk_tokens)
    ):
        return True
    if not _CLAIM_EXCLUSIVE_TRIGGERS.isdisjoint(claim_tokens) and not _COORDINATOR_TRIGGERS.isdisjoint(
        chunk_tokens
    ):
        return True
    if not _COORDINATOR_TRIGGERS.isdisjoint(claim_tokens) and not _EXCLUSIVE_TRIGGERS.isdisjoint(
        chunk_tokens
    ):
        return True
    if contradiction:
        return False
    if not _THE_TRIGGERS.isdisjoint(claim_tokens) and not _GROUP_TRIGGERS.isdisjoint(chunk_tokens):
        return True
    return any(t.endswith("est") for t in claim_tokens) or not SUPERLATIVES.isdisjoint(claim_tokens)


def scope_conflict(cp: TextProfile, sp: TextProfile) -> str | None:
    """``"contradicted"`` or ``"unsupported"`` when the claim widens what sentence ``sp``
    restricts (see the module docstring), None when no pattern applies."""
    claim = [t.lower() for t in cp.tokens]
    sentence = [t.lower() for t in sp.tokens]
    verdict = _widened(claim, cp.stem_set, sentence)
    if verdict == "contradicted":
        return verdict
    if not _EXCLUSIVE_TRIGGERS.isdisjoint(sp.tokens):
        limited = _limited(sentence)
        if limited and _joined_to_limited(claim, limited, sp.stem_set):
            return "contradicted"
    if not _CLAIM_EXCLUSIVE_TRIGGERS.isdisjoint(cp.tokens):
        limited = _limited(claim, CLAIM_EXCLUSIVE)
        if limited and _joined_to_limited(sentence, limited, cp.stem_set):
            return "contradicted"
    if verdict is None and not _GROUP_TRIGGERS.isdisjoint(sp.tokens):
        members = _group_members(sentence)
        if members and _singled_out(claim, members):
            return "unsupported"
    if verdict is None and _narrowed_superlative(claim, cp.stem_set, sentence):
        return "unsupported"
    return verdict
