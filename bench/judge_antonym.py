"""The local judge's antonym rule on dev claims with one word swapped for its antonym.

No dev set holds antonym swaps (the rule fires on none of their 16,733 claims:
bench/judge_lexicon.py), so this makes them from real text. Every supported claim of the
claim-level dev sets (bench/judge_dev_data.py) that has a content word spelled as a lemma
of the judge's antonym table (:mod:`ragpulse.collector.judge.text.lexicon`) gets that word (the
first such) replaced by its antonym (the first in alphabetical order): "He won the award"
-> "He lost the award". The swapped claim, now saying the opposite of its evidence, is
judged against the claim's own chunks by the local judge with the antonym rule and, in the
same process, without it (the rule switched off). Reported per set: the share of swapped
claims the judge calls supported, unsupported and contradicted, each way, and how many
verdicts of the original claims the rule changes (none, if it is precise).

Usage: python bench/judge_antonym.py [--data DIR] [--limit 300]
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import judge_dev_data as dev  # noqa: E402
from ragpulse.collector.judge import get_judge
from ragpulse.collector.judge.local.rules import conflicts  # noqa: E402
from ragpulse.collector.judge.text.lexicon import Lexicon, load_lexicon  # noqa: E402
from ragpulse.collector.judge.text.tokens import STOPWORDS  # noqa: E402

__all__ = ["main", "swap_antonym"]

_WORD = re.compile(r"[A-Za-z]+")
VERDICTS = ("supported", "unsupported", "contradicted")


def swap_antonym(text: str, lex: Lexicon) -> str | None:
    """``text`` with its first content word that is an antonym-table lemma replaced by the
    lemma's first antonym (capitalised like the word), or None when it has no such word."""
    for m in _WORD.finditer(text):
        word = m.group().lower()
        if word in STOPWORDS or word not in lex.antonyms:
            continue
        other = sorted(lex.antonyms[word])[0]
        if m.group()[0].isupper():
            other = other.capitalize()
        return text[: m.start()] + other + text[m.end() :]
    return None


@contextmanager
def rule_off() -> Iterator[None]:
    """The judge without the antonym rule (the conflict checks read ``antonym_conflicts`` from
    their module at call time)."""
    saved = conflicts.antonym_conflicts
    conflicts.antonym_conflicts = lambda cp, chunk: False
    try:
        yield
    finally:
        conflicts.antonym_conflicts = saved


def _verdict(judge: Any, query: str, answer: str, chunks: list[dict[str, Any]]) -> str:
    """The answer's verdict: contradicted if any of its claims is, supported if all are."""
    out = judge.judge({"trace_id": "t", "query": query, "answer": answer, "chunks": chunks})
    got = {c["verdict"] for c in out["claims"]}
    if "contradicted" in got:
        return "contradicted"
    return "supported" if got == {"supported"} else "unsupported"


def measure(data: Path, limit: int) -> dict[str, dict[str, Counter]]:
    """Per set: verdict counts of the swapped claims with and without the rule, and of the
    original claims whose verdict the rule changes."""
    judge = get_judge("local")
    lex = load_lexicon(frozenset())
    out: dict[str, dict[str, Counter]] = {}
    for source in dev.SOURCES:
        counts = {"with": Counter(), "without": Counter(), "changed": Counter()}
        n = 0
        for rec in dev.iter_records(data, source):
            for text, label in rec["claims"]:
                swapped = swap_antonym(text, lex) if label == 1 and n < limit else None
                if swapped is None:
                    continue
                n += 1
                counts["with"][_verdict(judge, rec["query"], swapped, rec["chunks"])] += 1
                original = _verdict(judge, rec["query"], text, rec["chunks"])
                with rule_off():
                    counts["without"][_verdict(judge, rec["query"], swapped, rec["chunks"])] += 1
                    counts["changed"][original != _verdict(judge, rec["query"], text, rec["chunks"])] += 1
        out[source] = counts
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=dev.DATA)
    ap.add_argument("--limit", type=int, default=300, help="swapped claims per set")
    args = ap.parse_args(argv)
    if not (args.data / "judge-dev").is_dir():
        print(f"dev data not found under {args.data}: nothing to measure", file=sys.stderr)
        return 2
    print("supported dev claims with one word swapped for its antonym, judged against their own chunks")
    print(f"  {'set':<18}{'swapped':>8}  {'rule':<8}" + "".join(f"{v:>14}" for v in VERDICTS))
    for source, counts in measure(args.data, args.limit).items():
        total = sum(counts["with"].values())
        for way in ("without", "with"):
            cells = "".join(f"{counts[way][v] / max(1, total):>14.3f}" for v in VERDICTS)
            print(f"  {source:<18}{total:>8}  {way:<8}{cells}")
        print(
            f"  {source:<18}original claims whose verdict the rule changes: {counts['changed'][True]}/{total}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
