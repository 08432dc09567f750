"""Numbers in text: number words, canonical values, and numbers written with a scale word.

One definition of what a number is, shared by the stems (a number's stem is its value, so
"four" matches "4") and by the number sets the judges compare ("1.5 million" is 1500000).
"""

from __future__ import annotations

import re

from .dates import MONTH_ABBREVIATIONS, MONTH_NAMES

__all__ = [
    "CARDINALS",
    "JOINING_FORMS",
    "NUMBER_WORDS",
    "ORDINALS",
    "ORDINAL_SUFFIXES",
    "is_ordinal",
    "SCALES",
    "SCALE_ABBREVIATIONS",
    "SCALE_FORMS",
    "join_digit_groups",
    "may_group_digits",
    "joined_numbers",
    "normalise_numbers",
    "scale_of",
]

NUMBER_WORDS: dict[str, str] = {
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
    "sixth": "6th",
    "seventh": "7th",
    "eighth": "8th",
    "ninth": "9th",
    "tenth": "10th",
}
# A digit ordinal is tokenised as the digits and a suffix ("21st": "21", "st"); the two are
# one number, "21st", the value of "twenty-first" and of "first" for "1st".
ORDINAL_SUFFIXES = frozenset(("st", "nd", "rd", "th"))


def is_ordinal(value: str) -> bool:
    """Whether a canonical number (a number's stem: "1st", "21st", "4") is an ordinal."""
    return value[-2:] in ORDINAL_SUFFIXES and value[:-2].isdigit()


# Ordinal words: their stem is their value ("first" matches "1st"), but not "second", which is
# also the unit of time.
ORDINALS = frozenset(w for w, v in NUMBER_WORDS.items() if is_ordinal(v) and w != "second")

# Cardinal number words: their stem is their value ("four" matches "4"); ordinals and scale
# words alone keep their own stems.
CARDINALS = frozenset(
    w for w, v in NUMBER_WORDS.items() if v.isdigit() and int(v) < 100 and w not in ("one", "dozen")
)


# Thousands grouped by a space, a no-break space, a narrow no-break space or a thin space
# ("5 000", "1 250 000"; SI and European style): groups of exactly three digits after a
# first group of one to three, not inside a longer number or a decimal.
_DIGIT_GROUPS_RE = re.compile(r"(?<![\d.,])\d{1,3}(?:[ \u00a0\u202f\u2009]\d{3})+(?![\d-]|[.,]\d)")
_GROUP_SEPARATORS_RE = re.compile(r"[ \u00a0\u202f\u2009]")


def may_group_digits(classes: bytes | None) -> bool:
    """Whether a text with class string ``classes`` (:func:`.tokens.char_classes`, None for a
    non-ASCII text) may hold space-grouped thousands: an ASCII text needs a digit, a space
    and a digit in a row (one substring search; nearly every text has none)."""
    return classes is None or b"0 0" in classes


def join_digit_groups(text: str, classes: bytes | None) -> str:
    """``text`` with space-grouped thousands written with commas ("5 000" as "5,000", which
    the tokens read as the number 5000). ``classes`` is the text's class string
    (:func:`.tokens.char_classes`): a text :func:`may_group_digits` rules out is returned
    as it is."""
    if not may_group_digits(classes):
        return text
    return _DIGIT_GROUPS_RE.sub(lambda m: _GROUP_SEPARATORS_RE.sub(",", m[0]), text)


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
            w = NUMBER_WORDS.get(t)
            if w is not None and t not in ("one", "second"):
                out.add(w)
    return out


SCALES: dict[str, float] = {
    "hundred": 1e2,
    "thousand": 1e3,
    "million": 1e6,
    "billion": 1e9,
    "trillion": 1e12,
}
# Abbreviated scale words, case-sensitive: "$1.2bn", "1.5M downloads", "30k users" (a lower
# "m" after a number is metres, so only "M" is million).
SCALE_ABBREVIATIONS: dict[str, float] = {
    **dict.fromkeys(("bn", "Bn", "BN", "B"), 1e9),
    **dict.fromkeys(("mn", "mln", "M"), 1e6),
    **dict.fromkeys(("k", "K"), 1e3),
    **dict.fromkeys(("tn", "trn"), 1e12),
}
SCALE_FORMS = frozenset(f(w) for w in SCALES for f in (str.lower, str.capitalize, str.upper)) | frozenset(
    SCALE_ABBREVIATIONS
)


def scale_of(token: str, number: str = "") -> float | None:
    """The factor of a scale word or its abbreviation ("million", "bn", "M") after the token
    ``number``, else None. A one-letter abbreviation does not scale a year ("2020 B")."""
    scale = SCALES.get(token.lower())
    if scale is not None:
        return scale
    if len(token) == 1 and number.isdigit() and len(number) == 4 and 1000 <= int(number) <= 2100:
        return None
    return SCALE_ABBREVIATIONS.get(token)


_TENS = {w: int(NUMBER_WORDS[w]) for w in "twenty thirty forty fifty sixty seventy eighty ninety".split()}
_UNITS = {w: n for n, w in enumerate("one two three four five six seven eight nine".split(), 1)}
_ORDINAL_UNITS = {
    w: n for n, w in enumerate("first second third fourth fifth sixth seventh eighth ninth".split(), 1)
}
# The tokens that join the number before them into one (scale words and ordinal suffixes),
# and the tens that start a compound ("twenty-five": the tokens "twenty", "five").
JOINING_FORMS = (
    SCALE_FORMS | ORDINAL_SUFFIXES | frozenset(f(w) for w in _TENS for f in (str.lower, str.capitalize))
)


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


# Month names and abbreviations, lower case (a date's day sits next to one).
_MONTHS = frozenset(w.lower() for w in (*MONTH_NAMES, *MONTH_ABBREVIATIONS))


def _day_of_month(tokens: list[str], suffix: int) -> bool:
    """Whether the digit ordinal ending at ``tokens[suffix]`` is a date's day ("June 12th",
    "12th June", "the 12th of June"): it is the day 12, which "12 June" writes as a cardinal."""
    before = tokens[suffix - 2].lower() if suffix >= 2 else ""
    after = [t.lower() for t in tokens[suffix + 1 : suffix + 3]]
    following = after[0] if after else ""
    return (
        before in _MONTHS
        or following in _MONTHS
        or (following == "of" and after[1:2] != [] and after[1] in _MONTHS)
    )


def joined_numbers(tokens: list[str]) -> list[tuple[int, str]]:
    """A number written as two tokens, with a scale word ("1.5 million", "two thousand"), as
    a digit ordinal ("21st") or as a compound of words ("twenty-five", "twenty-first"): the
    index of the second token and the value (``1500000``, ``21st``, ``25``, ``21st``)."""
    out = []
    for i in range(1, len(tokens)):
        if tokens[i] in ORDINAL_SUFFIXES:
            if tokens[i - 1].isdigit() and not _day_of_month(tokens, i):
                out.append((i, tokens[i - 1] + tokens[i]))
            continue
        tens = _TENS.get(tokens[i - 1].lower())
        if tens is not None:
            word = tokens[i].lower()
            if word in _UNITS:
                out.append((i, str(tens + _UNITS[word])))
                continue
            if word in _ORDINAL_UNITS:
                out.append((i, _ordinal(tens + _ORDINAL_UNITS[word])))
                continue
        scale = scale_of(tokens[i], tokens[i - 1])
        if scale is not None:
            base = normalise_numbers([tokens[i - 1].lower()])
            if base and len(base) == 1:
                try:
                    value = float(next(iter(base))) * scale
                except ValueError:
                    continue
                out.append((i, str(int(value)) if value.is_integer() else str(value)))
    return out


# "second" is also the unit of time: it is that after a number or one of these ("30 second
# ads", "a split second", "per second"), and the discourse marker opening a sentence
# ("Second, ..."); elsewhere it is the ordinal, as "third" is ("the second quarter").
_SECOND_AS_UNIT_AFTER = frozenset("a per one each every split fraction few milli micro nano".split())
_QUARTERS = {"1": "1st", "2": "2nd", "3": "3rd", "4": "4th"}


# "all three", "all five": a count of the names or things just listed, not a number the
# evidence states ("Fleming, Florey and Chain shared the prize" for "All three shared it").
_GROUP_WORDS = frozenset(("all", "All"))
_GROUP_COUNTS = frozenset("two three four five six seven eight nine ten eleven twelve".split())


def read_number_words(tokens: list[str]) -> list[str]:
    """``tokens`` with the number words read as the numbers they are: the ordinal "second" as
    ``2nd`` (it matches "2nd", as "third" matches "3rd"), a quarter written "Q2" as ``2nd
    quarter``, and a count after "all" ("all three") left out; the list itself when none of
    these can occur (C-level membership tests: "all" is common, a count after it is not)."""
    if (
        "second" not in tokens
        and "Second" not in tokens
        and "Q" not in tokens
        and (_GROUP_WORDS.isdisjoint(tokens) or _GROUP_COUNTS.isdisjoint(tokens))
    ):
        return tokens
    out: list[str] = []
    i, n = 0, len(tokens)
    while i < n:
        tok = tokens[i]
        if tok == "Q" and i + 1 < n and tokens[i + 1] in _QUARTERS:
            out += [_QUARTERS[tokens[i + 1]], "quarter"]
            i += 2
            continue
        before = tokens[i - 1] if i else ""
        if tok in _GROUP_COUNTS and before in _GROUP_WORDS:
            pass
        elif (
            tok in ("second", "Second")
            and before
            and not (before[0].isdigit() or before.lower() in _SECOND_AS_UNIT_AFTER)
        ):
            out.append("2nd")
        else:
            out.append(tok)
        i += 1
    return out
