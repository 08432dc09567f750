"""The tallies of the hand-written benches that pair a faithful text with a hallucinated version
(bench/judge_rag_answers.py, bench/judge_summaries.py): how the response verdicts fall, and the
precision, recall, F1 and balanced accuracy of each choice of positive call."""

from __future__ import annotations

from collections import Counter
from typing import Any

__all__ = ["VERDICTS", "print_claims", "print_verdicts", "rates"]

VERDICTS = ("faithful", "unsure", "hallucinated")


def rates(tp: int, fp: int, fn: int, tn: int) -> tuple[float, float, float, float]:
    """Precision, recall, F1 and balanced accuracy (mean of recall and specificity)."""
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    specificity = tn / (tn + fp) if tn + fp else 0.0
    return p, r, f, (r + specificity) / 2


def print_claims(i: int, gold: str, noun: str, case: dict[str, Any], out: dict[str, Any]) -> None:
    """Every claim of a wrongly judged text of case ``i`` (a ``noun``: answer, summary), the
    unsupported ones marked with ``**``."""
    print(f"  case {i} {gold} {noun} judged {out['response_verdict']} ({case['kind']}: {case['changed']!r})")
    for c in out["claims"]:
        mark = "  " if c["verdict"] == "supported" else "**"
        print(f"    {mark} {c['verdict']:<12} p={c['support_probability']:.2f}  {c['text']}")


def print_verdicts(counts: dict[str, Counter], noun: str, pairs: int) -> None:
    """How the verdicts of ``pairs`` faithful texts and their hallucinated versions fall
    (``counts``: gold -> verdict counts), then the scores with "hallucinated" as the positive
    call and with "unsure" counted positive too."""
    for gold in counts:
        row = "  ".join(f"{v} {counts[gold][v]:>2}" for v in VERDICTS)
        print(f"  {gold:<13} {noun} judged: {row}")
    for label, positive in (("hallucinated", ("hallucinated",)), ("hallucinated or unsure", VERDICTS[1:])):
        tp = sum(counts["hallucinated"][v] for v in positive)
        fp = sum(counts["faithful"][v] for v in positive)
        p, r, f, bacc = rates(tp, fp, pairs - tp, pairs - fp)
        print(
            f"  positive = {label:<22}: precision {p:.2f}  recall {r:.2f}  F1 {f:.2f}  balanced accuracy {bacc:.2f}"
        )
