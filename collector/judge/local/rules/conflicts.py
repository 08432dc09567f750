"""Rules that turn lexical support into a contradiction for the local judge.

Word overlap cannot see that a sentence says the opposite of a claim built from
its words. Patterns it can check cheaply, each against the chunk sentence
the claim rests on (the one sharing most of its content stems):

- a number that differs ("retained for three years" against "five years");
- a negation on one side only ("logs are not retained" against "logs are retained"), or
  in one clause of a longer sentence whose denied phrase the claim asserts (:mod:`.denials`:
  "shown to extend lifespan in humans" against "..., but this has not been shown in humans");
- a word swapped for its antonym, WordNet's direct antonyms (:mod:`.lexicon`):
  "revenue increased in 2020" against "revenue decreased in 2020";
- a condition stated as sufficient where the sentence makes it only necessary:
  "legal-hold release alone is sufficient for deletion" against "deletion requires
  release of all legal holds and the officer's authorization". A requirement is not a
  sufficient condition, and a requirement listed beside others contradicts "alone".
  A claim that merely says the condition *permits* the outcome ("legal-hold release
  permits deletion") is not flagged: that reading leaves the other requirement out,
  which is an omitted condition, not a contradiction;
- a claim that widens what the sentence restricts (:mod:`.scope`): "all employees" against
  "all full-time employees", "adults and children" against "adults only";
- a comparison flipped (:mod:`.comparisons`): "less than 10%" against "more than 10%",
  "before the storm" against "after the storm";
- two numbers or names swapped (:mod:`.swaps`): "opens at 5 and closes at 9" against "opens
  at 9 and closes at 5", "France defeated Germany" against "Germany defeated France".
"""

from __future__ import annotations

from ...text.lexicon import Lexicon, lemmas_of, load_lexicon
from ...text.numbers import is_ordinal
from ...text.tokens import TextProfile, case_forms, stem
from ..evidence import ChunkEvidence
from ..support import attested_numbers, number_neighbours
from .comparisons import comparison_flip, may_flip
from .denials import asserts_denied, may_deny, negated_stems, negates_in_own_words
from .scope import may_widen, scope_conflict
from .swaps import numbers_swapped, roles_swapped

__all__ = [
    "best_sentence",
    "negation_conflicts",
    "antonym_conflicts",
    "antonym_swap",
    "asserts_sufficiency",
    "sufficiency_conflict",
    "scope_conflicts",
    "comparison_conflicts",
    "swap_conflicts",
    "denial_conflicts",
    "conflicts",
    "contradicting",
]

# Words that state a condition as enough by itself ("X alone is sufficient", "X suffices").
_SUFFICIENCY = frozenset("alone sufficient sufficiently suffice suffices sufficed enough".split())
_SUFFICIENCY_PHRASES = (("by", "itself"), ("on", "its", "own"), ("in", "itself"))
# Words that make a condition necessary ("Y requires X", "X must be obtained", "only after X").
_NECESSITY = frozenset(
    "require requires required requiring requirement requirements must need needs needed necessary "
    "mandatory prerequisite conditional contingent".split()
)
_ONLY_BEFORE = frozenset("if after when with once upon".split())
# Words that make the sentence itself grant sufficiency or permission ("X permits Y").
_GRANTS = _SUFFICIENCY | frozenset("permits permit permitted allows allow allowed enables enable".split())
_COORDINATION = frozenset("and plus as well".split())
# Raw tokens that can start a sufficiency statement, in the cases a text writes them: a claim
# without any of them is ruled out by one set operation (most claims, most chunks).
_TRIGGERS = case_forms((*_SUFFICIENCY, "itself", "own"))


def best_sentence(
    cp: TextProfile, chunk: ChunkEvidence, skip: frozenset[str] = frozenset()
) -> tuple[int, float]:
    """The chunk sentence sharing most of the claim's content stems (less ``skip``) and the
    share it covers."""
    cs = cp.stem_set - skip if skip else cp.stem_set
    best_i, best = 0, -1
    for i, ss in enumerate(chunk.sentence_stems):
        c = len(cs & ss)
        if c > best:
            best_i, best = i, c
    return best_i, best / max(1, len(cs))


def negation_conflicts(cp: TextProfile, chunk: ChunkEvidence) -> bool:
    """The chunk sentence the claim rests on says the same words with the opposite polarity
    ("logs are not retained" against "logs are retained"): a contradiction, not support.
    A negated sentence much longer than the claim usually negates something else ("... not
    only ...", a second clause), so it counts only when it has at most half again as many
    content words as the claim."""
    if not (cp.negated or chunk.whole.negated):
        return False
    i, shared = best_sentence(cp, chunk)
    if shared < 0.75:
        return False
    sp = chunk.sentence_profile(i)
    if cp.negated == sp.negated or not _polarity_differs(cp, sp):
        return False
    return cp.negated or len(chunk.sentence_stems[i]) <= 1.5 * len(cp.stem_set)


# An antonym swap: the sentence has at least this share of the claim's other content stems and
# at most this many times its content stems.
_SWAP_SHARED = 0.75
_SWAP_LENGTH = 3.0


def _neighbours(stems: list[str], s: str) -> set[str]:
    """The stems next to ``s`` in ``stems``."""
    out: set[str] = set()
    for i, t in enumerate(stems):
        if t == s:
            out.update(stems[max(0, i - 1) : i + 2])
    out.discard(s)
    return out


def _antonyms() -> Lexicon:
    return load_lexicon(frozenset())


def _words_with(tokens: list[str], stems: frozenset[str]) -> set[str]:
    """The lower-cased ``tokens`` whose stem is in ``stems``."""
    return {w for w in map(str.lower, tokens) if stem(w) in stems}


def _could_swap(cs: frozenset[str], ss: frozenset[str], table: frozenset[str]) -> bool:
    """What :func:`antonym_swap` needs of the stems alone: the sentence is at most
    ``_SWAP_LENGTH`` times as long as the claim, and each side has a stem with antonyms that
    the other lacks."""
    return (
        len(ss) <= _SWAP_LENGTH * len(cs) and not table.isdisjoint(cs - ss) and not table.isdisjoint(ss - cs)
    )


def antonym_swap(cp: TextProfile, sp: TextProfile) -> bool:
    """Sentence ``sp`` says the claim with one of its words replaced by an antonym ("revenue
    decreased in 2020" against "revenue increased in 2020"): the claim has a word whose WordNet
    antonym the sentence has instead, in its place (the two share a neighbouring content stem:
    "revenue"), the sentence has at least 75% of the claim's other content stems and at most
    three times as many content stems as the claim (a long sentence usually says the antonym of
    something else), and both have the same polarity ("not large" against "small" agrees)."""
    lex = _antonyms()
    table = lex.antonym_stems
    cs, ss = cp.stem_set, sp.stem_set
    if not _could_swap(cs, ss, table) or cp.negated != sp.negated:
        return False
    theirs = {v: lemmas_of({v}, lex) for v in _words_with(sp.tokens, table.intersection(ss - cs))}
    near = {v: _neighbours(sp.stems, stem(v)) for v in theirs}
    swapped = set()
    for w in _words_with(cp.tokens, table.intersection(cs - ss)):
        w_stem = stem(w)
        opposite = frozenset().union(*(lex.antonyms[a] for a in lemmas_of({w}, lex)))
        w_near = _neighbours(cp.stems, w_stem)
        if any(
            not opposite.isdisjoint(lemmas) and not w_near.isdisjoint(near[v]) for v, lemmas in theirs.items()
        ):
            swapped.add(w_stem)
    if not swapped:
        return False
    others = cs - swapped
    return bool(others) and len(others & ss) >= _SWAP_SHARED * len(others)


def _stem_swap(claim: list[str], sentence: list[str], lex: Lexicon) -> bool:
    """What :func:`antonym_swap` needs of the stem sequences alone: a claim stem the sentence
    lacks and a stem of one of its antonyms in the sentence, in its place (a shared neighbour)."""
    cs, ss = frozenset(claim), frozenset(sentence)
    added = ss - cs
    for g in lex.antonym_stems.intersection(cs - ss):
        for a in lex.stem_antonyms[g] & added:
            if not _neighbours(claim, g).isdisjoint(_neighbours(sentence, a)):
                return True
    return False


def antonym_conflicts(cp: TextProfile, chunk: ChunkEvidence) -> bool:
    """The chunk sentence the claim rests on swaps one of its words for an antonym
    (:func:`antonym_swap`). Most claims and chunks are ruled out by operations on their stems
    before a sentence is profiled."""
    lex = _antonyms()
    table = lex.antonym_stems
    cs = cp.stem_set
    if table.isdisjoint(cs) or table.isdisjoint(chunk.whole.stem_set - cs):
        return False
    i, _ = best_sentence(cp, chunk)
    if not _could_swap(cs, chunk.sentence_stems[i], table):
        return False
    if not _stem_swap(cp.stems, chunk.sentence_stem_lists[i], lex):
        return False
    return antonym_swap(cp, chunk.sentence_profile(i))


def _lower(tokens: list[str]) -> list[str]:
    return [t.lower() for t in tokens]


def asserts_sufficiency(cp: TextProfile) -> bool:
    """The claim states a condition as enough by itself ("alone", "sufficient", "suffices",
    "by itself", "on its own")."""
    if _TRIGGERS.isdisjoint(cp.tokens):
        return False
    toks = _lower(cp.tokens)
    if not _SUFFICIENCY.isdisjoint(toks):
        return True
    return any(
        tuple(toks[i : i + len(p)]) == p for p in _SUFFICIENCY_PHRASES for i in range(len(toks) - len(p) + 1)
    )


def _states_necessity(toks: list[str]) -> bool:
    if not _NECESSITY.isdisjoint(toks):
        return True
    return any(a == "only" and b in _ONLY_BEFORE for a, b in zip(toks, toks[1:], strict=False))


def sufficiency_conflict(cp: TextProfile, chunk: ChunkEvidence) -> str | None:
    """``"contradicted"`` when the claim calls a condition sufficient and the sentence it rests on
    makes it one requirement among others; ``"unsupported"`` when that sentence makes it only a
    requirement; None when the rule does not apply (no sufficiency in the claim, the sentence
    shares under 60% of the claim's other words, or the sentence itself grants sufficiency or
    permission)."""
    if not asserts_sufficiency(cp):
        return None
    skip = frozenset(s for t, s in zip(cp.tokens, cp.stems, strict=False) if t.lower() in _SUFFICIENCY)
    i, shared = best_sentence(cp, chunk, skip)
    if shared < 0.6:
        return None
    toks = _lower(chunk.sentence_profile(i).tokens)
    if not _states_necessity(toks) or not _GRANTS.isdisjoint(toks):
        return None
    # Another requirement: a coordinated part with content words the claim does not have.
    extra = chunk.sentence_stems[i] - cp.stem_set
    others = sum(1 for t in toks if t in _NECESSITY)
    if not _COORDINATION.isdisjoint(toks) and len(extra) - others >= 2:
        return "contradicted"
    return "unsupported"


def scope_conflicts(cp: TextProfile, chunk: ChunkEvidence, contradiction: bool = False) -> str | None:
    """:func:`.scope.scope_conflict` against the chunk sentence the claim rests on, when that
    sentence shares at least 60% of the claim's content stems (with ``contradiction``, only
    where the result could be ``"contradicted"``)."""
    if not may_widen(cp.tokens, chunk.whole.tokens, contradiction):
        return None
    i, shared = best_sentence(cp, chunk)
    if shared < 0.6:
        return None
    return scope_conflict(cp, chunk.sentence_profile(i))


def comparison_conflicts(cp: TextProfile, chunk: ChunkEvidence) -> bool:
    """:func:`.comparisons.comparison_flip` against the chunk sentence the claim rests on, when
    that sentence shares at least 60% of the claim's content stems."""
    if not may_flip(cp.tokens, chunk.whole.tokens):
        return False
    i, shared = best_sentence(cp, chunk)
    return shared >= 0.6 and comparison_flip(cp, chunk.sentence_profile(i))


def denial_conflicts(cp: TextProfile, chunk: ChunkEvidence) -> bool:
    """:func:`.denials.asserts_denied` against the chunk sentence the claim rests on, when that
    sentence shares at least 60% of the claim's content stems: the claim asserts what one of
    the sentence's clauses denies."""
    if not may_deny(cp, chunk.whole):
        return False
    i, shared = best_sentence(cp, chunk)
    return shared >= 0.6 and asserts_denied(cp, chunk.sentence_profile(i))


def swap_conflicts(cp: TextProfile, chunk: ChunkEvidence) -> bool:
    """:func:`.swaps.numbers_swapped` (when the sentence shares at least 60% of the claim's
    content stems) or :func:`.swaps.roles_swapped` (75%) against the chunk sentence the claim
    rests on."""
    numbers = len(cp.numbers) >= 2 and cp.numbers <= chunk.whole.numbers
    if not numbers and not cp.entities:
        return False  # no two numbers to swap, and no name past the first word
    i, shared = best_sentence(cp, chunk)
    if shared < (0.6 if numbers else 0.75):
        return False
    sp = chunk.sentence_profile(i)
    return (numbers and numbers_swapped(cp, sp)) or roles_swapped(cp, sp)


def conflicts(cp: TextProfile, chunk: ChunkEvidence) -> bool:
    """The chunk's words support the claim but its sentence says otherwise (negation, an antonym,
    a necessary condition read as sufficient, a restriction the claim drops, a comparison
    flipped, or two numbers or names swapped): the chunk cannot support the claim."""
    return (
        negation_conflicts(cp, chunk)
        or denial_conflicts(cp, chunk)
        or antonym_conflicts(cp, chunk)
        or sufficiency_conflict(cp, chunk) is not None
        or scope_conflicts(cp, chunk) is not None
        or comparison_conflicts(cp, chunk)
        or swap_conflicts(cp, chunk)
    )


def contradicting(cp: TextProfile, chunks: list[ChunkEvidence]) -> list[str]:
    """Ids of the chunks with a sentence that matches the claim's words but disagrees on a
    number or a negation, swaps one of them for an antonym, lists the condition the claim
    calls sufficient beside others, limits what the claim widens ("most" against "all",
    "adults only" against "adults and children"), compares the other way ("more than"
    against "less than"), or swaps two of the claim's numbers or names."""
    words = cp.stem_set - cp.numbers - {n for n in cp.stem_set if n[:1].isdigit()}
    if not words:
        return []
    checked = cp.numbers - numbers_attested(cp, chunks)
    return [
        c.id
        for c in chunks
        if _contradicts(cp, words, c, checked)
        or antonym_conflicts(cp, c)
        or sufficiency_conflict(cp, c) == "contradicted"
        or scope_conflicts(cp, c, contradiction=True) == "contradicted"
        or comparison_conflicts(cp, c)
        or swap_conflicts(cp, c)
        or denial_conflicts(cp, c)
    ]


def _numbers_disagree(claim: frozenset[str], sentence: frozenset[str]) -> bool:
    """The claim has a cardinal the sentence lacks while the sentence has cardinals, or an
    ordinal it lacks while it has ordinals: "its first voyage" against "her maiden voyage, four
    days in" disagrees on nothing, since the sentence words the rank without a number."""
    for ordinal in (False, True):
        c = {n for n in claim if is_ordinal(n) == ordinal}
        if c and not c <= sentence and any(is_ordinal(n) == ordinal for n in sentence):
            return True
    return False


def numbers_attested(cp: TextProfile, chunks: list[ChunkEvidence]) -> frozenset[str]:
    """The claim's numbers that some chunk sentence states next to one of the words the claim
    has next to them (:func:`.support.number_next_to`). A sentence that lacks such a number
    does not disagree with it: a claim that joins two sentences ("gusts of up to 94 mph,
    cutting power to 120,000 homes") takes each number from its own sentence."""
    if not cp.numbers:
        return frozenset()
    return attested_numbers(number_neighbours(cp.stems, cp.numbers), chunks)


def _contradicts(
    cp: TextProfile, words: frozenset[str], chunk: ChunkEvidence, numbers: frozenset[str]
) -> bool:
    """A sentence that matches the claim's ``words`` (its stems less numbers) but disagrees
    on one of the claim's ``numbers`` (those no chunk attests, :func:`numbers_attested`) or a
    negation."""
    if len(words & chunk.whole.stem_set) < 0.6 * len(words):
        return False  # no sentence can share enough words with the claim
    for i, ss in enumerate(chunk.sentence_stems):
        shared = len(words & ss) / len(words)
        if shared < 0.6:
            continue  # both rules need this much; skip profiling the sentence
        sp = chunk.sentence_profile(i)
        if numbers and sp.numbers and _numbers_disagree(numbers, sp.numbers):
            return True
        if shared >= 0.75 and sp.negated != cp.negated and _polarity_differs(cp, sp):
            return True
    return False


def _polarity_differs(cp: TextProfile, sp: TextProfile) -> bool:
    """Of a claim and a sentence that share most words and differ in :attr:`.tokens.TextProfile.negated`:
    whether they do say opposite things. A negated claim does; a plain claim does only when
    it says no absence in its own words ("free", "cutting power") and the sentence negates
    one of the claim's words: "... approved on Tuesday, despite objections from residents who
    say the roads cannot cope" negates nothing the claim "the commission voted to approve
    the plan" says."""
    if cp.negated:
        return True
    return not negates_in_own_words(cp) and not negated_stems(sp.tokens).isdisjoint(cp.stem_set)
