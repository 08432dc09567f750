"""Whether an answer gives the kind of thing its question asks for.

A faithful answer on the query's subject can still miss the question: "Where are backups
kept?" answered "Backups are kept for seven years". Answer relevance (``LocalJudge``) counts
no claim as on topic when the query asks for a quantity or a time and no claim gives one.
Only question types whose answers have a reliable surface form are read: a quantity or a
duration (a number, "nightly", "twice") and a time ("When ...?": a date, a number, a month
or weekday, "after", "during", "at the end of"). "Who" and "where" are not: a role ("the
security team") or a place ("the primary archive") has no such form, and reading them would
call right answers irrelevant.
"""

from __future__ import annotations

import re

from ..text.dates import MONTH_NAMES
from ..text.tokens import TextProfile

__all__ = ["asks_quantity", "answers_quantity", "asks_time", "answers_time", "misses_question_type"]

_QUANTITY_Q_RE = re.compile(
    r"\bhow (?:many|much|long|often|old|far|big|large|soon)\b|\bwhat (?:year|percentage|share|proportion)\b"
    r"|\bin what year\b|\bhow frequently\b",
    re.I,
)
_QUANTITY_WORDS = frozenset(
    "daily weekly monthly quarterly annually yearly hourly nightly biweekly immediately never always "
    "indefinitely permanently once twice few several some none all half one single dozen dozens "
    "hundreds thousands millions".split()
)
# "When is ...?", "When did ...?" ask for a time; "When I reset it, do I ...?" sets a condition.
_TIME_Q_RE = re.compile(
    r"^\W*(?:and |so |but )?when (?:is|are|was|were|do|does|did|will|would|should|can|could|must|"
    r"has|have|had|may|might)\b|\bwhat (?:date|time|day|month|season)\b|\bat what (?:time|point|age)\b"
    r"|\bby when\b|\buntil when\b|\bsince when\b|\bwhat (?:hour|week)\b",
    re.I,
)
_TIME_WORDS = (
    _QUANTITY_WORDS
    | frozenset(
        "before after during until till since upon within while whenever when once ago later earlier soon "
        "today tomorrow yesterday tonight now currently recently formerly previously then "
        "morning afternoon evening night noon midnight dawn weekend weekends weekday weekdays "
        "year years month months week weeks day days hour hours minute minutes second seconds "
        "decade decades century centuries quarter season spring summer autumn fall winter "
        "end start beginning middle onset close deadline "
        "monday tuesday wednesday thursday friday saturday sunday "
        "first last next every each annual periodic periodically regularly".split()
    )
    | frozenset(m.lower() for m in MONTH_NAMES)
)


def asks_quantity(query: str) -> bool:
    """The query asks for a quantity, a duration or a frequency ("How long ...", "How many ...")."""
    return bool(_QUANTITY_Q_RE.search(query))


def answers_quantity(cp: TextProfile) -> bool:
    """A claim gives a number or a frequency/duration word."""
    return bool(cp.numbers) or not _QUANTITY_WORDS.isdisjoint(w.lower() for w in cp.tokens)


def asks_time(query: str) -> bool:
    """The query asks when ("When are keys rotated?", "What date ...", "At what time ...")."""
    return bool(_TIME_Q_RE.search(query))


def answers_time(cp: TextProfile) -> bool:
    """A claim gives a time: a number (a date, a year, a duration) or a time word."""
    return bool(cp.numbers) or not _TIME_WORDS.isdisjoint(w.lower() for w in cp.tokens)


def misses_question_type(query: str, claims: list[TextProfile]) -> bool:
    """The query asks for a quantity or a time and no claim gives one."""
    if asks_quantity(query) and not any(map(answers_quantity, claims)):
        return True
    return asks_time(query) and not any(map(answers_time, claims))
