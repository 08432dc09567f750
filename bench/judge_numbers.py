"""Does writing a number another way change the verdict? Supported claims, their numbers rewritten.

LLM answers restate the numbers of their sources in other forms: "four to six weeks" as
"4-6 weeks", "1,500,000" as "1.5 million", "2,000" as "2000". From the development data
(``../shared/data``), per set up to ``--claims`` claims labelled supported that hold a number,
each is judged against its record's chunks as written and with its first number rewritten
(:func:`rewrite`), by the local judge, whole (claim extraction included). Printed: the share
whose verdict is kept, turned from supported to not supported, and turned contradicted.

Usage: python bench/judge_numbers.py [--claims 150]
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import judge_dev_data as dev  # noqa: E402
from ragpulse.collector.judge import get_judge  # noqa: E402
from ragpulse.collector.judge.claims import normalise_claim  # noqa: E402

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
    rng = random.Random(0)
    moves: Counter[tuple[str, str]] = Counter()
    for source in dev.SOURCES:
        records = list(dev.iter_records(dev.DATA, source))
        rng.shuffle(records)
        taken = 0
        for rec in records:
            for text, label in rec["claims"]:
                claim = normalise_claim(text)
                other = rewrite(claim) if label == 1 and taken < args.claims else None
                if other is not None:
                    moves[(_verdict(judge, rec, claim), _verdict(judge, rec, other))] += 1
                    taken += 1
    n = sum(moves.values())
    kept = sum(c for (a, b), c in moves.items() if a == b) / n
    lost = sum(c for (a, b), c in moves.items() if a == "supported" and b != "supported") / n
    contradicted = sum(c for (a, b), c in moves.items() if b == "contradicted" and a != "contradicted") / n
    print(f"{n} supported dev claims holding a number, judged as written and rewritten, by {judge.judge_id}")
    print(f"  verdict kept            {kept:.3f}")
    print(f"  supported -> not        {lost:.3f}")
    print(f"  turned contradicted     {contradicted:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
