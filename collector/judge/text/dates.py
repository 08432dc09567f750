"""Numeric dates, clock times and abbreviated months, read as words.

Answers and sources write the same date and time in different forms: "2020-01-15",
"1/15/2020" and "15 January 2020"; "3 p.m.", "3:00 PM" and "15:00"; "Jan. 2020" and
"January 2020". Read as written, the month of a numeric date was a number that the other
form lacks, so a faithful claim contradicted its source. :func:`.tokens.tokenise` reads each
form as one token sequence:

- a numeric date as day, month name and year (``15 January 2020``): ISO ``yyyy-mm-dd``
  (also with ``/``) always; ``d/m/yyyy`` and ``m/d/yyyy`` only when one part is over 12,
  since "3/4/2020" may be either (dotted dates, "15.01.2020", are read as written: a dot
  between digits is too common to look behind at every decimal);
- a clock time as one ``HH:MM`` token, 24-hour ("3 pm", "3:00 p.m.", "15:00" ->
  ``15:00``; "12 am" -> ``00:00``);
- a capitalised month abbreviation before a number ("Jan. 15", "Sept 2020") as the month's
  name ("Jan" alone is also a name).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = [
    "DATE_TIME_RE",
    "MONTH_ABBREVIATIONS",
    "MONTH_NAMES",
    "date_time_words",
    "ends_with_month_abbreviation",
    "may_hold_date_time",
]

MONTH_NAMES = "January February March April May June July August September October November December".split()
# Capitalised month abbreviations and the names they stand for ("May" is no abbreviation).
MONTH_ABBREVIATIONS = {name[:3]: name for name in MONTH_NAMES if name != "May"} | {"Sept": "September"}

DATE_TIME_RE = re.compile(
    r"\b(?P<y>\d{4})(?P<s1>[-/])(?P<m>\d{1,2})(?P=s1)(?P<d>\d{1,2})\b"
    r"|\b(?P<a>\d{1,2})/(?P<b>\d{1,2})/(?P<y2>\d{4})\b"
    r"|\b(?P<mon>(?-i:" + "|".join(sorted(MONTH_ABBREVIATIONS, key=len, reverse=True)) + r"))\.?(?=\s+\d)"
    r"|\b(?P<h>\d{1,2})(?::(?P<mi>\d{2}))?\s?(?P<ap>[ap])\.?\s?m\b(?!')\.?"
    r"|\b(?P<h24>\d{1,2}):(?P<mi24>\d{2})\b(?!:)",
    re.I,
)
# What the forms leave among the tokens of the tokeniser's fast path: a month abbreviation,
# "am"/"pm" or the "m" of "a.m."; and, for numeric dates and clock times, a digit, a
# separator and a digit (checked only where the text has a separator at all).
_HINT_TOKENS = (
    frozenset(MONTH_ABBREVIATIONS) | frozenset(a + m for a in "aApP" for m in "mM") | frozenset("mM")
)
_SEPARATED_DIGITS_RE = re.compile(r"\d[-/:]\d")


def may_hold_date_time(text: str, tokens: Iterable[str]) -> bool:
    """A cheap test that ``text``, whose word tokens are ``tokens``, may hold a form
    :data:`DATE_TIME_RE` reads (most texts do not): C-level set and substring checks first."""
    if not _HINT_TOKENS.isdisjoint(tokens):
        return True
    return ("/" in text or ":" in text or "-" in text) and _SEPARATED_DIGITS_RE.search(text) is not None


def _date(day: int, month: int, year: str) -> list[str] | None:
    if 1 <= month <= 12 and 1 <= day <= 31:
        return [str(day), MONTH_NAMES[month - 1], year]
    return None


def _clock(hour: int, minute: int) -> list[str] | None:
    return [f"{hour:02d}:{minute:02d}"] if 0 <= hour < 24 and 0 <= minute < 60 else None


def date_time_words(m: re.Match[str]) -> list[str] | None:
    """The tokens a :data:`DATE_TIME_RE` match reads as, None for a match that is no date
    or time (month 13, an ambiguous "3/4/2020", "25:00"): it is tokenised as written."""
    if m["y"]:
        return _date(int(m["d"]), int(m["m"]), m["y"])
    if m["y2"]:
        a, b = int(m["a"]), int(m["b"])
        if a > 12 >= b:
            return _date(a, b, m["y2"])
        if b > 12 >= a:
            return _date(b, a, m["y2"])
        return None
    if m["mon"]:
        return [MONTH_ABBREVIATIONS[m["mon"]]]
    if m["ap"]:
        hour, minute = int(m["h"]), int(m["mi"] or 0)
        if not 1 <= hour <= 12:
            return None
        return _clock(hour % 12 + (12 if m["ap"].lower() == "p" else 0), minute)
    return _clock(int(m["h24"]), int(m["mi24"]))


def ends_with_month_abbreviation(text: str) -> bool:
    """Whether ``text`` ends with a capitalised month abbreviation and its dot ("... on Jan."):
    the dot of "Jan. 15" ends no sentence."""
    return text.endswith(".") and text[:-1].rsplit(None, 1)[-1:] in ([a] for a in MONTH_ABBREVIATIONS)
