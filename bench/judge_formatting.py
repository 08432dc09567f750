"""Does an answer's formatting change the judge's verdict? Real claims in the shapes LLMs write.

LLM answers come as numbered lists with bold labels, bullets under an introduction, a
"Based on the passages provided, ..." opening, headings and closers; none of that is a claim,
so none of it should move a verdict. From the development data (``../shared/data``), per
FActScore biography, four facts labelled supported, against the biography's article chunks,
are written as plain prose and in fourteen other formats (:data:`FORMATS`), and every version is
judged whole by the local judge (claim extraction included). Per format: the share of these
faithful answers judged ``hallucinated``, the share whose response verdict differs from the
plain version's, and the claims per answer (plain prose: four).

Usage: python bench/judge_formatting.py [--answers 200]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import judge_dev_data as dev  # noqa: E402
from ragpulse.collector.judge import get_judge  # noqa: E402

__all__ = ["FORMATS", "faithful_answers", "main"]


def _label(fact: str) -> str:
    """A bold label from the fact's first two words, as list answers head their items."""
    return " ".join(fact.split()[:2]).strip(",.")


def _lower_first(fact: str) -> str:
    """The fact continuing a sentence ("The film" -> "the film"; names keep their capital)."""
    first = fact.split(" ", 1)[0]
    return (
        fact[0].lower() + fact[1:]
        if first in ("The", "A", "An", "He", "She", "It", "They", "His", "Her")
        else fact
    )


def _framed(facts: list[str], frames: tuple[str, ...]) -> str:
    """Each fact behind its frame ("It is important to note that the film ...")."""
    return " ".join(f"{frame}{_lower_first(f)}" for frame, f in zip(frames, facts, strict=True))


FORMATS: dict[str, Callable[[str, list[str]], str]] = {
    "plain prose": lambda topic, facts: " ".join(facts),
    "numbered list": lambda topic, facts: "\n".join(f"{i}. {f}" for i, f in enumerate(facts, 1)),
    "bold labels": lambda topic, facts: "\n".join(
        f"{i}. **{_label(f)}**: {f.rstrip('.')}" for i, f in enumerate(facts, 1)
    ),
    "source opening, bullets": lambda topic, facts: (
        f"Based on the passages provided, here are the key facts about {topic}:\n\n"
        + "\n".join(f"- {f}" for f in facts)
    ),
    "heading, closer": lambda topic, facts: (
        f"## {topic}\n\n" + " ".join(facts) + "\n\nI hope this helps! Let me know if you have more questions."
    ),
    "introduced fragments": lambda topic, facts: (
        f"Here is what the sources say about {topic}:\n\n" + "\n".join(f"* {f.rstrip('.')}" for f in facts)
    ),
    "passage citations": lambda topic, facts: " ".join(
        f"{f.rstrip('.')} {'[Passage 1]' if i % 2 else '(passages 1 and 2)'}." for i, f in enumerate(facts)
    ),
    "greeting opening": lambda topic, facts: (
        f"Sure, {_lower_first(facts[0])} " + " ".join(facts[1:]) + " I hope this helps!"
    ),
    "framing phrases": lambda topic, facts: _framed(
        facts,
        (
            "According to the passages provided, ",
            "It is important to note that ",
            "Passage 2 also mentions that ",
            "In conclusion, ",
        ),
    ),
    "summary framing": lambda topic, facts: _framed(
        facts,
        (
            "The article reports that ",
            "The author also explains that ",
            "The text describes how ",
            "Finally, the passage highlights that ",
        ),
    ),
    "footnote markers": lambda topic, facts: " ".join(
        f"{f.rstrip('.')}[^{i % 2 + 1}]." for i, f in enumerate(facts)
    ),
    "markers after the stop": lambda topic, facts: " ".join(f"{f}[{i % 2 + 1}]" for i, f in enumerate(facts)),
    "file-search annotations": lambda topic, facts: " ".join(
        f"{f.rstrip('.')}\u3010{i % 2 + 1}\u2020source\u3011." for i, f in enumerate(facts)
    ),
    "sources section": lambda topic, facts: (
        " ".join(f"{f.rstrip('.')} [{i % 2 + 1}]." for i, f in enumerate(facts))
        + f"\n\nSources:\n[1] {topic} - Wikipedia, https://en.wikipedia.org/wiki/{topic.replace(' ', '_')}"
        + f"\n[2] [{topic}: a biography](https://example.org/{len(topic)})"
    ),
    "courtesy closer": lambda topic, facts: (
        "I'm happy to help! " + " ".join(facts) + " If you have any further questions, please let me know."
    ),
}


def faithful_answers(n: int) -> list[tuple[str, str, list[dict]]]:
    """Up to ``n`` (topic, query, chunks, four supported facts) from FActScore biographies."""
    out = []
    for rec in dev.iter_records(dev.DATA, "factscore"):
        facts = [text.strip() for text, label in rec["claims"] if label == 1]
        if len(facts) < 4 or not rec["chunks"]:
            continue
        topic = rec["query"].removeprefix("Tell me a bio of ").rstrip(".")
        chunks = [{"id": f"P{i + 1}", "content": c["content"]} for i, c in enumerate(rec["chunks"])]
        out.append((topic, rec["query"], chunks, [f if f[-1:] in ".!?" else f + "." for f in facts[:4]]))
        if len(out) == n:
            break
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--answers", type=int, default=200)
    args = ap.parse_args(argv)
    if not dev.DATA.is_dir():
        print(f"dev data not found under {dev.DATA}: nothing measured")
        return 0
    answers = faithful_answers(args.answers)
    judge = get_judge("local")
    verdicts: dict[str, list[str]] = {}
    claims: dict[str, int] = {}
    for name, render in FORMATS.items():
        verdicts[name], claims[name] = [], 0
        for i, (topic, query, chunks, facts) in enumerate(answers):
            out = judge.judge(
                {"trace_id": f"{i:032x}", "query": query, "answer": render(topic, facts), "chunks": chunks}
            )
            verdicts[name].append(out["response_verdict"])
            claims[name] += len(out["claims"])
    print(
        f"{len(answers)} faithful answers (four supported FActScore facts each), judged whole by {judge.judge_id}"
    )
    print(f"  {'format':<26}{'hallucinated':>13}{'verdict moved':>15}{'claims/answer':>15}")
    plain = verdicts["plain prose"]
    for name, vs in verdicts.items():
        flagged = sum(v == "hallucinated" for v in vs) / len(vs)
        moved = sum(a != b for a, b in zip(vs, plain, strict=True)) / len(vs)
        print(f"  {name:<26}{flagged:>13.3f}{moved:>15.3f}{claims[name] / len(vs):>15.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
