"""Response verdicts on hand-written LLM-style summaries of news and report-style articles.

The judge will be measured on held-out human-labelled summarisation data (LLM-written summaries
of news articles and similar documents, some with hallucinations), and the project has no
development data of that kind. The cases (``bench/judge_summary_cases.json``) stand in for it:
each is a summarisation request (``task``), an article of 250-450 words in several paragraphs
(``document``), a faithful summary written the way chat models summarise (plain prose, "The
article discusses ...", "In summary, ...", bullet points, several sentences compressed into one,
paraphrase and nominalisation), and a hallucinated version of the same summary with one change
of a kind seen in real LLM summaries (``kind``: a number or date changed, an entity or role
swapped, a quote given to the wrong person, a cause or detail the article does not give, a hedge
removed, an outcome inverted); ``changed`` is the part that differs. Written for this project by
its developers, not copied from any dataset.

Judges each case's faithful and hallucinated summary with the local judge (and the default tiered
policy with ``--minilm``, which needs ``make minilm``), with the summarisation request as the
query, in two chunkings of the article: the whole article as one chunk (how a summarisation
trace arrives) and one chunk per paragraph (how a RAG trace would carry it). A summary draws on
the whole article, so the two show how much of a miss comes from support spread over chunks.
Per chunking it prints how the response verdicts fall, response-level precision, recall, F1
and balanced accuracy with "hallucinated" as the positive call (and with "unsure" counted as
positive too), and, with ``-v``, every claim of the summaries judged wrongly: a faithful summary
called hallucinated or unsure, a hallucinated one called faithful.

The cases are few (30 pairs) and written by the project's developers: a magnifier for what long
sources and summary-style answers do to claim extraction and support, not a measure of the judge.

Usage: python bench/judge_summaries.py [--minilm] [-v]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ragpulse.collector.judge import get_judge

sys.path.insert(0, str(Path(__file__).resolve().parent))

from judge_metrics import print_claims, print_verdicts  # noqa: E402

CASES: list[dict[str, Any]] = json.loads(Path(__file__).with_name("judge_summary_cases.json").read_text())[
    "cases"
]

__all__ = ["CASES", "CHUNKINGS", "main", "record"]

# How the article reaches the judge: as one chunk, or split at its blank lines into paragraphs.
CHUNKINGS: dict[str, Callable[[str], list[str]]] = {
    "whole document": lambda document: [document],
    "one chunk per paragraph": lambda document: [p for p in document.split("\n\n") if p.strip()],
}


def record(case: dict[str, Any], summary: str, i: int, chunks: list[str]) -> dict[str, Any]:
    """The judge's input for one summary of case ``i``: the request is the query."""
    return {
        "trace_id": f"summary-{i}",
        "query": case["task"],
        "answer": summary,
        "chunks": [{"id": f"C{j + 1}", "content": text} for j, text in enumerate(chunks)],
    }


def _judge_all(judge: Any, chunking: Callable[[str], list[str]], verbose: bool) -> dict[str, Counter]:
    """Response verdicts of every faithful and hallucinated summary, counted by gold label."""
    counts: dict[str, Counter] = {"faithful": Counter(), "hallucinated": Counter()}
    for i, case in enumerate(CASES):
        chunks = chunking(case["document"])
        for gold in counts:
            summary = case["summary"] if gold == "faithful" else case["hallucinated"]
            out = judge.judge(record(case, summary, i, chunks))
            verdict = out["response_verdict"]
            counts[gold][verdict] += 1
            wrong = verdict != "faithful" if gold == "faithful" else verdict == "faithful"
            if verbose and wrong:
                print_claims(i, gold, "summary", case, out)
    return counts


def _report(name: str, judge: Any, verbose: bool) -> None:
    """One block per chunking for the judge ``name``."""
    for chunking, split in CHUNKINGS.items():
        counts = _judge_all(judge, split, verbose)
        print(f"{name} [{chunking}]: {len(CASES)} faithful and {len(CASES)} hallucinated summaries")
        print_verdicts(counts, "summaries", len(CASES))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minilm", action="store_true", help="also the default tiered policy (make minilm)")
    ap.add_argument(
        "-v", "--verbose", action="store_true", help="print the claims of wrongly judged summaries"
    )
    args = ap.parse_args(argv)
    local = get_judge("local")
    _report(local.judge_id, local, args.verbose)
    if args.minilm:
        tiered = get_judge("tiered", minilm={})
        _report(tiered.judge_id, tiered, args.verbose)
    return 0


if __name__ == "__main__":
    sys.exit(main())
