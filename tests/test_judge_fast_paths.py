"""The local judge's fast paths agree exactly with the regex code they stand in for.

Tokenising, sentence splitting, clause cleaning and the abstention check take
C-level string shortcuts (str.translate/split, substring pre-checks) when the
text allows, and fall back to the regexes otherwise. The golden-hash test pins
whole outputs on four data sets; these tests compare each shortcut with its
reference on many random strings drawn from an alphabet that hits every edge
the shortcuts decide on (apostrophes inside and around words, digits touching
letters, decimal and thousands separators, percent signs, ``!``/``?``, tabs,
line breaks, runs of spaces, non-ASCII letters and spaces), and on real texts.
"""

from __future__ import annotations

import random
import re

import pytest
from ragpulse.collector.judge.local import claims, evidence
from ragpulse.collector.judge.text import dates, numbers
from ragpulse.collector.judge.text import tokens as text

from tests.carried_data import attribution_cases

# Characters that decide between the fast path and the fallback, plus filler.
_EDGY = "aZkx09 '.,%!?\t\n\u00e9\u00a0-_([\"]:;"
_SENTENCEY = "aZ0 .(\"'[x"


def _random_strings(alphabet: str, count: int, max_len: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, max_len))) for _ in range(count)]


def _words_text(rng: random.Random) -> str:
    """Word-shaped text: words, numbers in all spellings, and sentence punctuation."""
    pieces = [
        "Logs", "are", "kept", "for", "5", "years", "don't", "students'", "'quoted'", "1,000", "3.5",
        "50%", "A1", "x2y", "e.g.", "U.S.", "Dr.", "(see", "[C2]", "no", "not", "data", "cannot", "find",
        "2020-01-15", "1/15/2020", "3/4/2020", "3 pm", "3:30 p.m.", "15:00", "Jan.", "Sept", "25:00", "1:12",
        "second", "Second", "Q", "Q2", "30",
    ]  # fmt: skip
    seps = [" ", " ", " ", "  ", ". ", ".  ", "! ", "? ", ", ", "; ", "\n", ".\n", '. "', ". ("]
    out = []
    for _ in range(rng.randint(1, 25)):
        out.append(rng.choice(pieces))
        out.append(rng.choice(seps))
    return "".join(out)


def _real_texts() -> list[str]:
    texts: list[str] = []
    for case in attribution_cases():
        texts.append(case["claim"])
        texts.extend(case["references"])
    from ragpulse.policy_rag import load_corpus

    corpus = load_corpus()
    texts.extend(c.content for c in corpus.chunks)
    texts.extend(p for t in corpus.templates for p in t.phrasings)
    return texts


def _reference_tokens(s: str) -> list[str]:
    """The tokens by the regexes alone: space-grouped thousands joined with commas, then the
    token regex, each date or time it reads, and the ordinal words (numbers.read_number_words)."""
    s = numbers._DIGIT_GROUPS_RE.sub(lambda m: re.sub(r"[ \u00a0\u202f\u2009]", ",", m[0]), s)
    out: list[str] = []
    pos = 0
    for m in dates.DATE_TIME_RE.finditer(s):
        words = dates.date_time_words(m)
        if words is not None:
            out += text._WORD_RE.findall(s[pos : m.start()]) + words
            pos = m.end()
    return numbers.read_number_words(out + text._WORD_RE.findall(s[pos:]))


def test_tokenise_equals_the_token_regex_on_random_strings() -> None:
    strings = _random_strings(_EDGY, 40_000, 16, seed=1)
    strings += [_words_text(random.Random(i)) for i in range(3_000)]
    plain = dated = 0
    for s in strings:
        assert text.tokenise(s) == _reference_tokens(s), repr(s)
        plain += text.is_plain(s)
        dated += text.tokenise(s) != text._WORD_RE.findall(s)
    assert 0.2 * len(strings) < plain < 0.9 * len(strings)  # both paths were exercised
    assert dated > 100  # and dates and times were read


def test_the_date_hint_misses_no_date_or_time() -> None:
    strings = _random_strings(_EDGY + "0123456789apmAPM/:.-", 40_000, 16, seed=2)
    strings += [_words_text(random.Random(i)) for i in range(3_000)]
    strings += ["On 2020-01-15", "at 3pm", "at 3 P. M.", "Sept 5", "Jan. 2020", "2020/01/15", "at 15:00"]
    for s in strings:
        read = any(dates.date_time_words(m) for m in dates.DATE_TIME_RE.finditer(s))
        assert not read or dates.may_hold_date_time(s, text._WORD_RE.findall(s)), repr(s)
        if text.is_plain(s):  # the tokens of the fast path
            assert not read or dates.may_hold_date_time(s, text.spaced(s).split()), repr(s)


def test_plain_text_tokens_are_letter_and_digit_runs_of_every_substring() -> None:
    rng = random.Random(3)
    for _ in range(3_000):
        s = _words_text(rng)
        if not text.is_plain(s):
            continue
        a = rng.randrange(len(s) + 1)
        b = rng.randrange(a, len(s) + 1)
        assert text.spaced(s)[a:b].split() == text._WORD_RE.findall(s[a:b]), repr(s[a:b])


def test_split_sentences_equals_the_boundary_regex() -> None:
    strings = _random_strings(_SENTENCEY, 40_000, 16, seed=2)
    strings += _random_strings(_EDGY, 20_000, 16, seed=4)
    strings += [_words_text(random.Random(i)) for i in range(3_000)]
    plainly = 0
    for s in strings:
        assert evidence.split_sentences(s) == evidence._split_regex(s), repr(s)
        texts, tokens = evidence._sentences_and_tokens(s)
        assert texts == evidence._split_regex(s), repr(s)
        assert tokens == [_reference_tokens(t) for t in texts], repr(s)
        plainly += evidence._splits_plainly(s)
    assert 0.2 * len(strings) < plainly < 0.9 * len(strings)


def test_fast_paths_on_real_texts() -> None:
    texts = _real_texts()
    assert len(texts) > 100
    for s in texts:
        assert text.tokenise(s) == _reference_tokens(s)
        assert evidence.split_sentences(s) == evidence._split_regex(s)
        assert claims.is_abstention(s) == bool(claims._ABSTAIN_RE.search(s))


_ABSTAIN_SAMPLES = [
    "The sources do not establish the rule.",
    "I cannot find this in the documents.",
    "There is no relevant information about it.",
    "I don't know.",
    "This is not mentioned in the context.",
    "The deadline is unclear.",
    "The CONTEXT DOES NOT SAY.",
    "Unable to determine the answer.",
    "We were unable to verify it.",
    "Logs are kept for five years.",
    "Data retention is not defined here.",
    "It isn't covered; details are limited information.",
]


@pytest.mark.parametrize("sentence", _ABSTAIN_SAMPLES)
def test_abstention_pre_check_agrees_with_the_regex(sentence: str) -> None:
    assert claims.is_abstention(sentence) == bool(claims._ABSTAIN_RE.search(sentence))


def test_abstention_pre_check_on_random_sentences() -> None:
    rng = random.Random(5)
    words = "the sources do not does n't can cannot find no insufficient information data unclear is are " \
        "i don't know mentioned in by answer context KNOW Not DATA unknown evidence details mention can't unable to determine \u00e9t\u00e9 limited relevant".split()  # fmt: skip
    hits = 0
    for _ in range(20_000):
        s = " ".join(rng.choice(words) for _ in range(rng.randint(1, 8)))
        expected = bool(claims._ABSTAIN_RE.search(s))
        assert claims.is_abstention(s) == expected, s
        hits += expected
    assert hits > 500


_SPACES_RE = re.compile(r"\s+")


def _reference_clean(t: str) -> str:
    """claims._clean as it was written with regexes only."""
    t = claims._ENUM_RE.sub("", t)
    t = claims._SPACE_PUNCT_RE.sub(r"\1", _SPACES_RE.sub(" ", t)).strip(" ,;:-–—\t\n")
    t = claims._HEDGE_PREFIX_RE.sub("", t).strip(" ,;:")
    if t and t[0].islower():
        t = t[0].upper() + t[1:]
    if t and t[-1] not in ".!?":
        t += "."
    return t


def test_clause_cleaning_equals_the_regex_version() -> None:
    strings = _random_strings(" \t\n\u00a0a.,;:!?-\u2013I1)", 30_000, 12, seed=6)
    strings += [_words_text(random.Random(i)) for i in range(2_000)]
    strings += ["  1. based on the context, logs are kept .", "- hello , world ;", " \u00a0 ", ""]
    for s in strings:
        assert claims._clean(s) == _reference_clean(s), repr(s)
        assert " ".join(s.split()) == _SPACES_RE.sub(" ", s).strip(), repr(s)


def test_has_content_equals_content_tokens() -> None:
    strings = _random_strings("ab e.g the of I 5 and ", 5_000, 14, seed=7)
    strings += ["", "the of and", "Logs", "e.g.", "five", "It is"]
    for s in strings:
        assert text.has_content(s) == bool(text.content_tokens(s)), repr(s)
