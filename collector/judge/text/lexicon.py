"""Word relations from WordNet 3.0 for the local judge: synonyms, derived forms, antonyms.

Lexical coverage counts a claim word as supported only when the evidence has the same
stem; a paraphrase ("purchased" for "bought") or a derivation the suffix stripper cannot
relate ("decision" for "decide") goes unseen, and a sentence that swaps one word for its
opposite ("revenue decreased" for "revenue increased") looks like support. The table
``wordnet/relations.tsv`` (built by scripts/build_lexicon.py from the WordNet database files;
licence in ``wordnet/LICENSE``) lists synonym sets over the words' common senses,
derivation pairs and direct antonym pairs. It is read on first use and expressed in the
judge's own terms: stems (:func:`.tokens.stem`) and match keys (their first four characters).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass
from functools import cache
from importlib import resources

from .morphology import base_form
from .tokens import stem

__all__ = ["Lexicon", "load_lexicon", "parse_lexicon", "lemmas_of", "lexicon_digest", "superlative"]

_KEY_LEN = 4
RELATED = frozenset({"syn", "der"})
_VOWELS = "aeiou"


@dataclass(frozen=True, slots=True)
class Lexicon:
    """The relations.

    - ``related_keys``: stem -> match keys of its synonyms and derived forms (its own key left out);
    - ``antonyms``: lemma -> its antonyms (lemmas);
    - ``antonym_lemmas``: stem -> the lemmas with antonyms that have that stem, so that a text's
      word is looked up by its stem and then checked against the lemma's spelling (stems are
      truncated: ``improved`` and ``improvident`` share one);
    - ``superlatives``: superlative spellings of those lemmas (``earliest``, ``biggest``) -> the
      lemma, since the suffix stripper keeps ``-est``;
    - ``antonym_stems``: the stems of the lemmas and of their superlatives (a text without any
      of them has no antonym to swap);
    - ``stem_antonyms``: each of those stems -> the stems of its lemmas' antonyms and their
      superlatives (a cheap superset of the lemma relation, checked before any spelling).
    """

    related_keys: dict[str, frozenset[str]]
    antonyms: dict[str, frozenset[str]]
    antonym_lemmas: dict[str, tuple[str, ...]]
    superlatives: dict[str, str]
    antonym_stems: frozenset[str]
    stem_antonyms: dict[str, frozenset[str]]


def parse_lexicon(text: str, relations: frozenset[str] = RELATED) -> Lexicon:
    """The table's lines (``relation<TAB>word word ...``; ``#`` starts a comment) as a
    :class:`Lexicon`; ``relations`` chooses which of ``syn``/``der`` count as related forms
    (none: only the antonyms are read)."""
    related: dict[str, set[str]] = defaultdict(set)
    antonyms: dict[str, set[str]] = defaultdict(set)
    for line in text.splitlines():
        rel, _, words = line.partition("\t")
        if rel == "ant":
            a, b = words.split()
            antonyms[a].add(b)
            antonyms[b].add(a)
        elif rel in relations:
            stems = {stem(w) for w in words.split()}
            keys = {s[:_KEY_LEN] for s in stems}
            for s in stems:
                own = s[:_KEY_LEN]
                related[s].update(k for k in keys if k != own)
    by_stem: dict[str, list[str]] = defaultdict(list)
    superlatives: dict[str, str] = {}
    stem_antonyms: dict[str, set[str]] = defaultdict(set)
    for lemma in sorted(antonyms):
        by_stem[stem(lemma)].append(lemma)
        superlatives.setdefault(superlative(lemma), lemma)
        opposite = {stem(f) for b in antonyms[lemma] for f in (b, superlative(b))}
        for form in (lemma, superlative(lemma)):
            stem_antonyms[stem(form)].update(opposite)
    return Lexicon(
        related_keys={s: frozenset(k) for s, k in related.items() if k},
        antonyms={w: frozenset(a) for w, a in antonyms.items()},
        antonym_lemmas={s: tuple(ls) for s, ls in by_stem.items()},
        superlatives=superlatives,
        antonym_stems=frozenset(by_stem) | frozenset(map(stem, superlatives)),
        stem_antonyms={s: frozenset(a) for s, a in stem_antonyms.items()},
    )


def superlative(word: str) -> str:
    """The regular superlative spelling of ``word`` (``small`` -> ``smallest``, ``late`` ->
    ``latest``, ``early`` -> ``earliest``, ``big`` -> ``biggest``)."""
    if word.endswith("e"):
        return word + "st"
    if word.endswith("y") and len(word) > 2 and word[-2] not in _VOWELS:
        return word[:-1] + "iest"
    if len(word) == 3 and word[1] in _VOWELS and word[0] not in _VOWELS and word[2] not in _VOWELS + "wxy":
        return word + word[-1] + "est"
    return word + "est"


@cache
def _table() -> bytes:
    return resources.files("ragpulse.collector.judge.text").joinpath("wordnet/relations.tsv").read_bytes()


def lexicon_digest() -> str:
    """The first 8 hex digits of the packaged table's SHA-256 (the judge id pins it)."""
    return hashlib.sha256(_table()).hexdigest()[:8]


@cache
def load_lexicon(relations: frozenset[str] = RELATED) -> Lexicon:
    """The packaged table, parsed once per choice of ``relations``."""
    return parse_lexicon(_table().decode("utf-8"), relations)


def _spelled_as(word: str, lemma: str) -> bool:
    """Whether ``word`` is an inflection of ``lemma`` by spelling: it keeps all of the lemma but a
    final letter (``larger``/``large``, ``decreasing``/``decrease``, ``earlier``/``early``)."""
    n = len(lemma) - 1
    return word[:n] == lemma[:n] and len(word) >= n


def lemmas_of(words: set[str], lex: Lexicon) -> set[str]:
    """The antonym-table lemmas that the lower-case ``words`` are forms of (irregular forms through
    :func:`.morphology.base_form`: ``won`` -> ``win``, ``died`` -> ``dead``, both ``die``;
    superlatives: ``earliest`` -> ``early``)."""
    out: set[str] = set()
    table = lex.antonym_lemmas
    for w in words:
        base = base_form(w)
        out.update(
            lemma
            for lemma in table.get(stem(w), ())
            if _spelled_as(base, lemma) or base_form(lemma) == base  # died, dead -> die
        )
        sup = lex.superlatives.get(w)
        if sup is not None:
            out.add(sup)
    return out
