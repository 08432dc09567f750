"""Cheap text normalisation shared by the judges: tokens, stems, numbers, entities.

Everything here is pure Python and deterministic. The local judge calls these
once per chunk and once per claim, so they are written for speed (one regex
pass, set lookups) rather than linguistic completeness.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "STOPWORDS",
    "NEGATIONS",
    "TextProfile",
    "profile",
    "profile_sentences",
    "stem",
    "content_tokens",
    "normalise_numbers",
    "strip_markers",
]

STOPWORDS: frozenset[str] = frozenset(
    """a about above after again against all also am an and any are as at be because been before being
    below between both but by can could did do does doing down during each either etc few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself just
    let me more most my myself neither nor of off on once only or other our ours ourselves out over own
    per same she should so some such than that the their theirs them themselves then there these they every
    this those through thus to too under until up upon us very via was we were what when where which
    while who whom whose why will with within would you your yours yourself yourselves may might must
    shall one ones another many much often also however therefore moreover furthermore additionally
    overall generally typically usually including include includes included e g ie eg i.e e.g s t
    according based provided source sources text title section""".split()
)

NEGATIONS: frozenset[str] = frozenset(
    "no not never none nobody nothing neither nor cannot cant without lack lacks lacking absent "
    "n't isn't aren't wasn't weren't don't doesn't didn't won't wouldn't shouldn't couldn't "
    "can't hasn't haven't hadn't unable fails failed".split()
)

_WORD_RE = re.compile(r"[A-Za-z][A-Za-z']*[A-Za-z]|[A-Za-z]|\d+(?:[.,]\d+)*%?")
_MARKER_RE = re.compile(r"\s*\[(?:[^\[\]]{1,40})\]")

_NUMBER_WORDS: dict[str, str] = {
    "zero": "0",
    "one": "1",
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
    "ten": "10",
    "eleven": "11",
    "twelve": "12",
    "thirteen": "13",
    "fourteen": "14",
    "fifteen": "15",
    "sixteen": "16",
    "seventeen": "17",
    "eighteen": "18",
    "nineteen": "19",
    "twenty": "20",
    "thirty": "30",
    "forty": "40",
    "fifty": "50",
    "sixty": "60",
    "seventy": "70",
    "eighty": "80",
    "ninety": "90",
    "hundred": "100",
    "thousand": "1000",
    "million": "1000000",
    "billion": "1000000000",
    "dozen": "12",
    "first": "1st",
    "second": "2nd",
    "third": "3rd",
    "fourth": "4th",
    "fifth": "5th",
}

_SUFFIXES: tuple[str, ...] = (
    "ational",
    "ization",
    "fulness",
    "ousness",
    "iveness",
    "ations",
    "ation",
    "ments",
    "ment",
    "ness",
    "ions",
    "ion",
    "ings",
    "ing",
    "ies",
    "ied",
    "ives",
    "ive",
    "edly",
    "ers",
    "ed",
    "er",
    "ly",
    "es",
    "s",
)

_stem_cache: dict[str, str] = {}
STEM_LEN = 6


def stem(word: str) -> str:
    """A crude suffix stripper (deterministic, cached) good enough to match
    ``deleted``/``deletion``/``delete`` and ``logs``/``log``; truncated to 6
    characters so that derivations share a key."""
    cached = _stem_cache.get(word)
    if cached is not None:
        return cached
    w = word
    if len(w) > 3:
        for suf in _SUFFIXES:
            if w.endswith(suf) and len(w) - len(suf) >= (3 if suf == "s" else 4):
                if suf == "s" and w.endswith(("ss", "us", "is")):
                    break
                w = w[: -len(suf)]
                break
        if w.endswith("e") and len(w) > 4:
            w = w[:-1]
        elif w.endswith("y") and len(w) > 3:
            w = w[:-1] + "i"
    out = w[:STEM_LEN]
    if len(_stem_cache) < 200_000:
        _stem_cache[word] = out
    return out


def strip_markers(text: str) -> str:
    """Remove citation markers such as ``[1]``, ``[C2]`` or ``[1, 3]``."""
    return _MARKER_RE.sub("", text)


def normalise_numbers(tokens: list[str]) -> set[str]:
    """Numbers mentioned in ``tokens`` as canonical strings (``five`` -> ``5``, ``1,000`` -> ``1000``)."""
    out: set[str] = set()
    for t in tokens:
        if t[0].isdigit():
            v = t.rstrip("%").replace(",", "")
            if v.endswith(".0"):
                v = v[:-2]
            out.add(v)
        else:
            w = _NUMBER_WORDS.get(t)
            if w is not None and t not in ("one", "second"):
                out.add(w)
    return out


def content_tokens(text: str) -> list[str]:
    """Lower-cased stems of the non-stopword tokens of ``text``, in order."""
    return [stem(t) for t in (m.lower() for m in _WORD_RE.findall(text)) if t not in STOPWORDS]


@dataclass(slots=True)
class TextProfile:
    """Precomputed views of one text (a claim, a chunk sentence, a chunk), built
    once and reused for every pairwise comparison."""

    stems: list[str]
    stem_set: frozenset[str]
    keys: frozenset[str]  # match keys of the stems: first four characters (the whole stem if shorter)
    bigrams: frozenset[tuple[str, str]]
    numbers: frozenset[str]
    entities: frozenset[str]
    negated: bool


# token -> (stem or None for stopwords, canonical number or None, is negation, is capitalised)
_TOKEN_INFO: dict[str, tuple[str | None, str | None, bool, bool]] = {}


def _token_info(tok: str) -> tuple[str | None, str | None, bool, bool]:
    low = tok.lower()
    nums = normalise_numbers([low])
    info = (
        None if low in STOPWORDS else stem(low),
        next(iter(nums)) if nums else None,
        low in NEGATIONS or low.endswith("n't"),
        tok[0].isupper() and len(tok) > 1,
    )
    if len(_TOKEN_INFO) < 500_000:
        _TOKEN_INFO[tok] = info
    return info


def profile(text: str) -> TextProfile:
    """Tokenise ``text`` once: content stems, stem bigrams, numbers, capitalised
    entities (not text-initial), and whether it contains a negation."""
    get = _TOKEN_INFO.get
    infos = [get(tok) or _token_info(tok) for tok in _WORD_RE.findall(text)]
    stems = [i[0] for i in infos if i[0] is not None]
    stem_set = frozenset(stems)
    return TextProfile(
        stems=stems,
        stem_set=stem_set,
        keys=frozenset([t[:4] for t in stem_set]),
        bigrams=frozenset(zip(stems, stems[1:], strict=False)),
        numbers=frozenset([i[1] for i in infos if i[1] is not None]),
        entities=frozenset([i[0] for i in infos[1:] if i[3] and i[0] is not None]),
        negated=any([i[2] for i in infos]),
    )


def profile_sentences(texts: list[str]) -> tuple[list[frozenset[str]], list[frozenset[str]], TextProfile]:
    """For consecutive sentences: each one's stem set and match keys, and the full
    profile of their concatenation, tokenising each sentence once."""
    get = _TOKEN_INFO.get
    all_infos: list[tuple[str | None, str | None, bool, bool]] = []
    stem_sets: list[frozenset[str]] = []
    key_sets: list[frozenset[str]] = []
    for text in texts:
        infos = [get(tok) or _token_info(tok) for tok in _WORD_RE.findall(text)]
        all_infos += infos
        st = frozenset([i[0] for i in infos if i[0] is not None])
        stem_sets.append(st)
        key_sets.append(frozenset([t[:4] for t in st]))
    stems = [i[0] for i in all_infos if i[0] is not None]
    whole = TextProfile(
        stems=stems,
        stem_set=frozenset(stems),
        keys=frozenset().union(*key_sets),
        bigrams=frozenset(zip(stems, stems[1:], strict=False)),
        numbers=frozenset([i[1] for i in all_infos if i[1] is not None]),
        entities=frozenset([i[0] for i in all_infos[1:] if i[3] and i[0] is not None]),
        negated=any([i[2] for i in all_infos]),
    )
    return stem_sets, key_sets, whole
