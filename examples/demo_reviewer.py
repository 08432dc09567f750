"""The demo as a reviewer: label judged traces from the demo's injected ground truth.

``python examples/demo_reviewer.py --db DIR [--claims 150] [--seed 0]``

The demo records what its scripted generator did to every answer
(``demo_injections``, collector/demo/truth.py). That gives a human label for
each claim the judge extracted: a claim carrying the number the generator
changed is ``contradicted`` (its chunk states another number); every other
claim repeats a chunk sentence and is ``supported`` (a dropped condition makes
the answer incomplete, a wrong citation points at the wrong chunk, a superseded
chunk is stale: the claim itself still rests on the chunk's words). The trace
label is ``faithful`` unless a claim is contradicted, with the failure mode
and abstention kind the generator's mode implies.

It labels a seeded random sample of judged traces, claim by claim, until at
least ``--claims`` claim labels are stored in ``rag_reviews`` (reviewer
``demo-truth``, through the same store call as the review app; recorded as the
review queue's ``random`` slice, which they are), and prints the
truth's mean faithfulness over every judged trace with a faithfulness score:
the number a prediction-powered interval from ``ragpulse calibrate
--from-reviews`` should contain.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from pathlib import Path
from typing import Any

__all__ = ["claim_truth", "main"]

REVIEWER = "demo-truth"
_CHANGED = re.compile(r"changed '([^']+)' to '([^']+)' in (\S+)")
_DROPPED = re.compile(r"dropped '([^']+)' from (\S+)")
_WORD = re.compile(r"\w+")


def _has(word: str, text: str) -> bool:
    return re.search(rf"\b{re.escape(word)}\b", text, re.IGNORECASE) is not None


def claim_truth(mode: str, detail: str, claim: str, chunks: dict[str, str], strict: bool = False) -> str:
    """The true label of one claim of a trace the generator wrote in ``mode`` (``detail`` as stored);
    ``strict``: a claim that states a rule without one of its conditions is ``unsupported``."""
    dropped = _DROPPED.match(detail) if strict and mode == "missing_condition" else None
    if dropped is not None:
        words = {w.lower() for w in _WORD.findall(chunks.get(dropped.group(2), ""))}
        if {w.lower() for w in _WORD.findall(claim)} <= words and dropped.group(
            1
        ).lower() not in claim.lower():
            return "unsupported"
        return "supported"
    m = _CHANGED.match(detail) if mode == "hallucinated_number" else None
    if m is None:
        return "supported"
    old, new, chunk_id = m.groups()
    content = chunks.get(chunk_id, "")
    if not _has(new, claim):
        return "supported"
    restored = re.sub(rf"\b{re.escape(new)}\b", old, claim, flags=re.IGNORECASE)
    words = {w.lower() for w in _WORD.findall(content)}
    if not _has(new, content) or {w.lower() for w in _WORD.findall(restored)} <= words:
        return "contradicted"
    return "supported"


def _rows(storage: Any, judge_id: str, strict: bool) -> list[dict[str, Any]]:
    """Every judged trace with ground truth: its truth, chunks, judge faithfulness and claims."""
    from ragpulse.collector.review.store import ReviewStore, Scope

    # In serving order (the demo's seeded traffic), so the seeded sample below picks the same
    # questions in every run of the same demo, whatever the (random) trace ids.
    truth = {
        str(t): (str(mode), str(detail), str(fm), str(kind))
        for t, mode, detail, fm, kind in storage.query(
            "SELECT trace_id, injected_mode, detail, expected_failure_mode, expected_abstention_kind "
            "FROM {db}.demo_injections FINAL ORDER BY time, seq"
        )
    }
    store = ReviewStore(storage)
    records = store.judge_records(Scope(judge_id))
    out = []
    for tid in truth:
        rec = records.get(tid)
        if rec is None:
            continue
        trace = store.trace(tid, judge_id)
        chunks = {c["id"]: c["content"] for c in (trace or {}).get("chunks", [])}
        mode, detail, fm, kind = truth[tid]
        labels = [claim_truth(mode, detail, c["text"], chunks, strict) for c in rec["claims"]]
        out.append(
            {"trace_id": tid, "service": rec["service"], "record": rec, "labels": labels,
             "failure_mode": fm, "abstention_kind": kind}
        )  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="examples/demo_reviewer.py", description=__doc__)
    parser.add_argument("--db", required=True, help="the demo's chDB database directory")
    parser.add_argument(
        "--claims", type=int, default=150, help="claim labels to store at least (default 150)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the sample of traces (default 0)")
    parser.add_argument(
        "--strict-conditions",
        action="store_true",
        help="a team convention: a claim that states a rule without one of its conditions is unsupported "
        "(the judge's head calls it supported: its words are all in the chunk)",
    )
    args = parser.parse_args(argv)

    from ragpulse.collector.review.labels import RANDOM, TRACE_LEVEL, Label
    from ragpulse.collector.review.store import ReviewStore
    from ragpulse.collector.storage.clickhouse import Storage

    db = Path(args.db).resolve()
    if not db.exists():
        print(f"demo_reviewer: no database at {db}", file=sys.stderr)
        return 2
    storage = Storage(f"chdb://{db}")
    try:
        storage.apply_schema()
        store = ReviewStore(storage)
        judges = store.judges()
        if not judges:
            print("demo_reviewer: no judged traces in the database", file=sys.stderr)
            return 2
        judge_id = judges[0][0]
        rows = _rows(storage, judge_id, args.strict_conditions)
        scored = [r for r in rows if r["record"].get("faithfulness") is not None and r["labels"]]
        want = args.claims or sum(len(r["labels"]) for r in rows)
        if sum(len(r["labels"]) for r in rows) < want:
            print(f"demo_reviewer: only {sum(len(r['labels']) for r in rows)} claims judged; serve more queries",
                  file=sys.stderr)  # fmt: skip
            return 2
        random.Random(args.seed).shuffle(rows)
        labelled = claims = 0
        for r in rows:
            if claims >= want:
                break
            rec = r["record"]
            labels = [
                Label(
                    r["trace_id"], c["index"], lab, REVIEWER, judge_id, c["text"], c["verdict"], slice=RANDOM
                )
                for c, lab in zip(rec["claims"], r["labels"], strict=True)
            ]
            faithful = all(lab == "supported" for lab in r["labels"])
            labels.append(
                Label(r["trace_id"], TRACE_LEVEL, "faithful" if faithful else "unfaithful", REVIEWER, judge_id,
                      "", rec.get("response_verdict") or "", r["abstention_kind"], r["failure_mode"], slice=RANDOM)
            )  # fmt: skip
            store.save_labels(labels, "judgments", r["service"])
            labelled += 1
            claims += len(r["labels"])
        truth_mean = sum(sum(lab == "supported" for lab in r["labels"]) / len(r["labels"]) for r in scored)
        truth_mean /= max(1, len(scored))
        wrong = sum(lab != "supported" for r in rows for lab in r["labels"])
        print(f"labelled {labelled} traces, {claims} claims as {REVIEWER} (judge {judge_id})")
        print(f"ground truth over all {len(scored)} judged traces with a faithfulness score: "
              f"mean faithfulness {truth_mean:.4f} ({wrong} unsupported or contradicted claims of {sum(len(r['labels']) for r in rows)})")  # fmt: skip
    finally:
        storage.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
