"""Response verdicts on hand-written RAG answers that paraphrase their passages.

The cases (``bench/judge_rag_cases.json``): each is a web-search-style query, three retrieved
passages of the kind a RAG system gets back (about 60-100 words, MS MARCO-like), a faithful
answer written the way chat models answer from passages (paraphrase, synthesis across
passages, mild hedges, lists, "According to passage 1", an opening that restates the
question), and a hallucinated version of the same answer with one change of a kind seen in
real LLM answers (``kind``: a number or date changed, an entity swapped, a claim stated more
strongly than the passage, a detail no passage gives); ``changed`` is the part that differs.
Written for this project by its developers, not copied from any dataset.

Judges each case twice, its faithful answer and its hallucinated
version, with the local judge (and the default tiered policy with ``--minilm``, which needs
``make minilm``), and prints how the response verdicts fall, response-level precision,
recall and F1 with "hallucinated" as the positive call (and with "unsure" counted as
positive too), and, with ``-v``, every claim of the answers judged wrongly: a faithful answer
called hallucinated or unsure, a hallucinated one called faithful.

Two sets of that file, reported apart: ``dev`` (32 pairs, the one the judge's rules were
developed on) and ``check`` (40 pairs written later and separately, in the styles of several chat models: concise, "Sure! Based on
the passages provided" with lists and a closing offer of help, "According to passage 2",
synthesis of two passages in one sentence, heavy paraphrase, "The passages do not mention"),
so that a change tuned on the first can be seen to generalise, or not, on the second.

The cases are few and written by the project's developers: a magnifier for what real LLM
answers do to claim extraction and support, not a measure of the judge.

Usage: python bench/judge_rag_answers.py [--minilm] [-v] [--set dev|check]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from ragpulse.collector.judge import get_judge

sys.path.insert(0, str(Path(__file__).resolve().parent))

from judge_metrics import print_claims, print_verdicts  # noqa: E402

SETS: tuple[str, ...] = ("dev", "check")


def load_cases(name: str) -> list[dict[str, Any]]:
    """The cases of set ``name`` (one of :data:`SETS`)."""
    return json.loads(Path(__file__).with_name("judge_rag_cases.json").read_text())["sets"][name]["cases"]


CASES: dict[str, list[dict[str, Any]]] = {name: load_cases(name) for name in SETS}

__all__ = ["CASES", "SETS", "load_cases", "main", "record"]


def record(case: dict[str, Any], answer: str, i: int) -> dict[str, Any]:
    """The judge's input for ``answer`` (the faithful one or the hallucinated one) of case ``i``."""
    return {
        "trace_id": f"rag-{i}",
        "query": case["query"],
        "answer": answer,
        "chunks": [{"id": f"C{j + 1}", "content": text} for j, text in enumerate(case["chunks"])],
    }


def _report(name: str, judge: Any, cases: list[dict[str, Any]], verbose: bool) -> None:
    counts: dict[str, Counter] = {"faithful": Counter(), "hallucinated": Counter()}
    for i, case in enumerate(cases):
        for gold, answer in (("faithful", case["answer"]), ("hallucinated", case["hallucinated"])):
            out = judge.judge(record(case, answer, i))
            verdict = out["response_verdict"]
            counts[gold][verdict] += 1
            wrong = verdict != "faithful" if gold == "faithful" else verdict == "faithful"
            if verbose and wrong:
                print_claims(i, gold, "answer", case, out)
    print(f"{name}: {len(cases)} faithful and {len(cases)} hallucinated answers")
    print_verdicts(counts, "answers", len(cases))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minilm", action="store_true", help="also the default tiered policy (make minilm)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print the claims of wrongly judged answers")
    ap.add_argument("--set", choices=sorted(SETS), action="append", help="only these sets (default: all)")
    args = ap.parse_args(argv)
    judges = [get_judge("local")]
    if args.minilm:
        judges.append(get_judge("tiered", minilm={}))
    for name in args.set or list(SETS):
        for judge in judges:
            _report(f"[{name}] {judge.judge_id}", judge, CASES[name], args.verbose)
    return 0


if __name__ == "__main__":
    sys.exit(main())
