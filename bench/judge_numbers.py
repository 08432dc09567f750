"""Does writing a number another way change the verdict? Supported claims, their numbers rewritten.

LLM answers restate the numbers of their sources in other forms: "four to six weeks" as
"4-6 weeks", "1,500,000" as "1.5 million", "2,000" as "2000". From the development data
(``../shared/data``), per set up to ``--claims`` claims labelled supported that hold a number,
each is judged against its record's chunks as written and with its first number rewritten
(:func:`rewrite`), by the local judge, whole (claim extraction included). Printed: the share
whose verdict is kept, turned from supported to not supported, and turned contradicted.

They also round and qualify them: 1,523,400 as "about 1.5 million", 312 as "more than 310",
48.7% as "nearly 49%" or plain "49%". Per style of :data:`ROUNDINGS`, the supported claims
with a number of three or more significant digits (not a year, BC or AD
included, not part of a name such as
"Boeing 747") are judged as written and
with that number rounded to two (:func:`rounded`); a control writes "about" a number 30%
off, which should not keep a supported verdict. And they name the period a year falls in:
"in 1994" as "in the 1990s", "in the mid-1990s", "in the 20th century" (:func:`periodised`;
the control names a decade 20 years off, or 30 where that
would be a century's first decade). And they convert units: "10 years" as "120 months"
(:func:`converted`; the control keeps the number, "10 months"). And they write ordinals
either way, "third" or "3rd" (:func:`ordinal`).

Usage: python bench/judge_numbers.py [--claims 150]
"""

from __future__ import annotations

import argparse
import math
import random
import re
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import judge_dev_data as dev  # noqa: E402
from ragpulse.collector.judge import get_judge  # noqa: E402
from ragpulse.collector.judge.local.claims import normalise_claim  # noqa: E402
from ragpulse.collector.judge.local.rules.approximate import QUALIFIERS  # noqa: E402

__all__ = ["main", "rewrite"]

_WORDS = "zero one two three four five six seven eight nine ten eleven twelve".split()
_DIGITS_RE = re.compile(r"\b(\d{1,3}(?:,\d{3})+|\d+)\b")
_WORD_RE = re.compile(r"\b(" + "|".join(_WORDS[2:]) + r")\b", re.I)
_RANGE_RE = re.compile(r"\b(\d+) to (\d+)\b")


def rewrite(text: str) -> str | None:
    """``text`` with its first number in another usual form (None when it has none this can
    rewrite): 2-12 as a word, a word as digits, round millions as "1.5 million", round
    thousands as "40 thousand", other thousands without separators, "4 to 6" as "4-6"."""
    m = _DIGITS_RE.search(text)
    if m:
        raw = m.group(1)
        n = int(raw.replace(",", ""))
        if 2 <= n <= 12 and "," not in raw:
            new = _WORDS[n]
        elif n >= 1_000_000 and n % 100_000 == 0:
            new = f"{n / 1e6:g} million"
        elif 10_000 <= n < 1_000_000 and n % 1000 == 0:
            new = f"{n // 1000} thousand"
        elif "," in raw:
            new = raw.replace(",", "")
        else:
            return None
        return text[: m.start()] + new + text[m.end() :]
    w = _WORD_RE.search(text)
    if w:
        return text[: w.start()] + str(_WORDS.index(w.group(1).lower())) + text[w.end() :]
    r = _RANGE_RE.search(text)
    if r:
        return text[: r.start()] + f"{r.group(1)}-{r.group(2)}" + text[r.end() :]
    return None


_PRECISE_RE = re.compile(r"(?<![\d.,])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?![\d,]*\d)")
ROUNDINGS: dict[str, tuple[str, str, float]] = {
    # style: (qualifier, rounding, factor)
    "about": ("about ", "nearest", 1.0),
    "more than": ("more than ", "down", 1.0),
    "nearly": ("nearly ", "up", 1.0),
    "plain, rounded": ("", "nearest", 1.0),
    "control: about, 30% off": ("about ", "nearest", 1.3),
}


def _two_figures(x: float, how: str) -> float:
    """``x`` to two significant figures, rounded to nearest, down or up."""
    step = 10.0 ** (math.floor(math.log10(abs(x))) - 1)
    q = x / step
    return {"nearest": round(q), "down": math.floor(q), "up": math.ceil(q)}[how] * step


def _spell(x: float) -> str:
    """A rounded value as an answer writes it: "1.5 million", "1,200", "49", "0.35"."""
    if x >= 1e6:
        return f"{x / 1e6:g} million"
    if x >= 1 and float(x).is_integer():
        return f"{int(x):,}"
    return f"{x:.4g}"


def _qualified(before: str) -> bool:
    """Whether ``before`` ends in a qualifier ("about", "more than"): the number is already approximate."""
    words = tuple(before.lower().split()[-3:])
    return any(words[-n:] in QUALIFIERS for n in range(1, len(words) + 1))


def rounded(text: str, style: str) -> str | None:
    """``text`` with its first number of three or more significant digits (not a year)
    rounded to two and qualified as ``style`` (:data:`ROUNDINGS`); None when it has none."""
    qualifier, how, factor = ROUNDINGS[style]
    for m in _PRECISE_RE.finditer(text):
        whole, frac = m.group(1), m.group(2) or ""
        if "," not in whole and len(whole) == 4 and not frac and 1000 <= int(whole) <= 2100:
            continue  # a year
        digits = (whole.replace(",", "") + frac).lstrip("0")
        before = text[: m.start()].split()
        if (len(digits) if frac else len(digits.rstrip("0"))) < 3 or _qualified(text[: m.start()]):
            continue
        if len(before) > 1 and before[-1][:1].isupper():
            continue  # part of a name: "Produce 101", "Boeing 747"
        if re.match(r"\s*(?:BCE?|AD|CE)\b", text[m.end() :]):
            continue  # a year: "540 BC"
        x = float(whole.replace(",", "") + (f".{frac}" if frac else ""))
        new = _spell(_two_figures(x * factor, how))
        return text[: m.start()] + qualifier + new + text[m.end() :]
    return None


_YEAR_RE = re.compile(r"\bin (1[0-9]{3}|20[0-9]{2})\b(?!\s*(?:BCE?|AD|CE)\b)")
PERIODS: tuple[str, ...] = ("decade", "part of the decade", "century", "control: decade 20-30 years off")


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def periodised(text: str, style: str) -> str | None:
    """``text`` with its first "in <year>" written as the period it falls in, as ``style``
    (:data:`PERIODS`): "in the 1990s", "in the mid-1990s", "in the 20th century", or a decade
    20 years off; None when it has no such year."""
    m = _YEAR_RE.search(text)
    if m is None:
        return None
    year = int(m.group(1))
    decade = year - year % 10
    if style == "decade":
        new = f"in the {decade}s"
    elif style == "part of the decade":
        part = "early" if year % 10 <= 3 else "mid" if year % 10 <= 6 else "late"
        new = f"in the {part}{'-' if part == 'mid' else ' '}{decade}s"
    elif style == "century":
        new = f"in the {_ordinal(year // 100 + 1)} century"
    else:  # 20 years off, 30 where that is a century's first decade ("the 1900s" is the century too)
        off = decade - 20 if (decade - 20) % 100 else decade - 30
        new = f"in the {off}s"
    return text[: m.start()] + new + text[m.end() :]


_YEARS_RE = re.compile(r"\b(\d+|" + "|".join(_WORDS[1:]) + r") years?\b", re.I)
CONVERSIONS: tuple[str, ...] = ("years as months", "control: years as months, number kept")


def converted(text: str, style: str) -> str | None:
    """``text`` with its first "N years" written in months (:data:`CONVERSIONS`): "10 years"
    as "120 months", or, the control, as "10 months"; None when it has none."""
    m = _YEARS_RE.search(text)
    if m is None:
        return None
    raw = m.group(1).lower()
    n = int(raw) if raw.isdigit() else _WORDS.index(raw)
    new = f"{n * 12} months" if style == "years as months" else f"{raw} months"
    return text[: m.start()] + new + text[m.end() :]


_ORDINAL_WORDS = "first second third fourth fifth sixth seventh eighth ninth tenth".split()
_ORDINAL_RE = re.compile(
    r"\b(" + "|".join(w for w in _ORDINAL_WORDS if w != "second") + r"|(?:[1-9]|10)(?:st|nd|rd|th))\b", re.I
)


_MONTH_NEAR_RE = re.compile(r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b", re.I)


def ordinal(text: str) -> str | None:
    """``text`` with its first ordinal written the other way ("third" as "3rd", "3rd" as
    "third"; not "second", also the unit of time, and not a date's day, "June 12th", which
    answers write in digits); None when it has none."""
    m = next(
        (
            m
            for m in _ORDINAL_RE.finditer(text)
            if not _MONTH_NEAR_RE.search(text[max(0, m.start() - 10) : m.end() + 10])
        ),
        None,
    )
    if m is None:
        return None
    word = m.group(1).lower()
    if word[0].isdigit():
        new = _ORDINAL_WORDS[int(word[:-2]) - 1]
    else:
        n = _ORDINAL_WORDS.index(word) + 1
        new = f"{n}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(n, 'th') }"
    return text[: m.start()] + new + text[m.end() :]


def _verdict(judge, rec: dict, answer: str) -> str:
    chunks = [{"id": f"P{i + 1}", "content": c["content"]} for i, c in enumerate(rec["chunks"])]
    out = judge.judge({"trace_id": "0" * 32, "query": rec["query"], "answer": answer, "chunks": chunks})
    verdicts = {c["verdict"] for c in out["claims"]}
    return next((v for v in ("contradicted", "unsupported") if v in verdicts), "supported")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--claims", type=int, default=150, help="per set, at most")
    args = ap.parse_args(argv)
    if not dev.DATA.is_dir():
        print(f"dev data not found under {dev.DATA}: nothing measured")
        return 0
    judge = get_judge("local")
    moves = _moves(judge, rewrite, args.claims)
    print(
        f"{sum(moves.values())} supported dev claims holding a number, judged as written and rewritten, by {judge.judge_id}"
    )
    _report(moves)
    print("rounded and qualified (three or more significant digits rounded to two):")
    for style in ROUNDINGS:
        moves = _moves(judge, lambda claim, style=style: rounded(claim, style), args.claims)
        print(f"  {style} ({sum(moves.values())} claims)")
        _report(moves, indent="    ")
    moves = _moves(judge, ordinal, args.claims)
    print(f'an ordinal written the other way ("third" as "3rd"; {sum(moves.values())} claims):')
    _report(moves, indent="    ")
    print('a duration in another unit ("10 years"):')
    for style in CONVERSIONS:
        moves = _moves(judge, lambda claim, style=style: converted(claim, style), args.claims)
        print(f"  {style} ({sum(moves.values())} claims)")
        _report(moves, indent="    ")
    print('a year ("in 1994") written as its period:')
    for style in PERIODS:
        moves = _moves(judge, lambda claim, style=style: periodised(claim, style), args.claims)
        print(f"  {style} ({sum(moves.values())} claims)")
        _report(moves, indent="    ")
    return 0


def _moves(judge, change, per_set: int) -> Counter[tuple[str, str]]:
    """(verdict as written, verdict changed) over up to ``per_set`` supported claims per set."""
    rng = random.Random(0)
    moves: Counter[tuple[str, str]] = Counter()
    for source in dev.SOURCES:
        records = list(dev.iter_records(dev.DATA, source))
        rng.shuffle(records)
        taken = 0
        for rec in records:
            for text, label in rec["claims"]:
                claim = normalise_claim(text)
                other = change(claim) if label == 1 and taken < per_set else None
                if other is not None:
                    moves[(_verdict(judge, rec, claim), _verdict(judge, rec, other))] += 1
                    taken += 1
    return moves


def _report(moves: Counter[tuple[str, str]], indent: str = "  ") -> None:
    n = sum(moves.values())
    kept = sum(c for (a, b), c in moves.items() if a == b) / n
    lost = sum(c for (a, b), c in moves.items() if a == "supported" and b != "supported") / n
    contradicted = sum(c for (a, b), c in moves.items() if b == "contradicted" and a != "contradicted") / n
    print(f"{indent}verdict kept            {kept:.3f}")
    print(f"{indent}supported -> not        {lost:.3f}")
    print(f"{indent}turned contradicted     {contradicted:.3f}")


if __name__ == "__main__":
    sys.exit(main())
