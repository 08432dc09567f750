"""The local judge on MTRAG's multi-turn answers, with and without the conversation.

MTRAG (``../shared/data/judge-dev/mtrag.jsonl``) holds 426 human-rated answers to the turns of
20 conversations, 372 of them follow-up turns with 2 to 22 earlier messages. Each answer is
judged twice by the packaged local judge: once as a single call (query, passages, answer) and
once with the turns before it as the judge input's ``conversation`` (``user`` / ``assistant``,
oldest first). What the conversation changes (docs/judging.md, "Conversations and tools"): a
follow-up's topic for answer relevance and answerability, and a claim that repeats the user's
own statements is supported (``restates_user``); earlier assistant answers are never evidence.

The figure is the response-level decision (positive = hallucinated: the judge's
``response_verdict`` is ``hallucinated``; an abstention or an answer without claims is not),
against MTRAG's human faithfulness label, over the labelled answers. The three answers to one
task and the tasks of one conversation share turns and passages, so the intervals are
bootstraps that resample whole conversations (2,000 draws, seeded), and the difference is
paired: both judgments of an answer are in the same draw. Nothing here is fit: the rules'
constants were set by reading, not tuned on MTRAG.

Usage: python bench/judge_conversation.py [--data DIR] [--draws N] [--json OUT]
(prints a note and exits 0 when the data is not there).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from judge_metrics import balanced_accuracy, f1

__all__ = ["main", "records", "judge_both", "report"]

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
MTRAG = "judge-dev/mtrag.jsonl"
_ROLES = {"user": "user", "agent": "assistant"}


def records(path: Path) -> list[dict[str, Any]]:
    """The labelled MTRAG answers as judge input records with their conversation, and the label
    and conversation id beside them (``_gold``, ``_group``)."""
    out = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            r = json.loads(line)
            if r["hallucinated"] is None:
                continue
            turns = [
                {"role": _ROLES[m["speaker"]], "content": m["text"]}
                for m in r.get("conversation") or []
                if m.get("speaker") in _ROLES and m.get("text")
            ]
            out.append(
                {
                    "trace_id": r["id"],
                    "query": r["query"],
                    "answer": r["answer"],
                    "chunks": r["chunks"],
                    "conversation": turns,
                    "_gold": bool(r["hallucinated"]),
                    "_group": r["conversation_id"],
                }
            )
    return out


def _judged(out: dict[str, Any]) -> dict[str, Any]:
    claims = out["claims"]
    return {
        "flag": out.get("response_verdict") == "hallucinated",
        "relevance": out.get("answer_relevance"),
        "failure_mode": out.get("failure_mode"),
        "abstained": bool(out.get("abstained")),
        "restated": sum(1 for c in claims if c.get("restates_user")),
        "claims": len(claims),
    }


def judge_both(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Each record judged without and with its conversation by the packaged local judge."""
    from ragpulse.collector.judge import get_judge

    judge = get_judge("local")
    without, with_ = [], []
    for i, r in enumerate(rows):
        rec = {k: v for k, v in r.items() if not k.startswith("_")}
        without.append(_judged(judge.judge({**rec, "conversation": []})))
        with_.append(_judged(judge.judge(rec)))
        if (i + 1) % 100 == 0:
            print(f"  judged {i + 1}/{len(rows)}", file=sys.stderr)
    return without, with_


def _cluster_bootstrap(
    groups: np.ndarray, gold: np.ndarray, a: np.ndarray, b: np.ndarray, draws: int, seed: int = 0
) -> dict[str, tuple[float, float]]:
    """95% intervals of balanced accuracy of ``a``, of ``b`` and of ``b - a``, resampling whole groups."""
    names = np.unique(groups)
    members = [np.flatnonzero(groups == g) for g in names]
    rng = np.random.default_rng(seed)
    ba_a, ba_b, diff = [], [], []
    for _ in range(draws):
        rows = np.concatenate([members[i] for i in rng.integers(0, len(names), len(names))])
        g = gold[rows]
        if g.all() or not g.any():
            continue
        x, y = balanced_accuracy(a[rows], g), balanced_accuracy(b[rows], g)
        ba_a.append(x)
        ba_b.append(y)
        diff.append(y - x)

    def interval(v: list[float]) -> tuple[float, float]:
        return float(np.percentile(v, 2.5)), float(np.percentile(v, 97.5))

    return {"without": interval(ba_a), "with": interval(ba_b), "difference": interval(diff)}


def _per_conversation(groups: np.ndarray, gold: np.ndarray, pred: np.ndarray) -> float:
    """Mean balanced accuracy over the conversations holding answers of both labels."""
    values = [
        balanced_accuracy(pred[groups == g], gold[groups == g])
        for g in np.unique(groups)
        if 0 < gold[groups == g].sum() < (groups == g).sum()
    ]
    return float(np.mean(values))


def _precision(pred: np.ndarray, gold: np.ndarray) -> float:
    return float((pred & gold).sum() / max(1, pred.sum()))


def _recall(pred: np.ndarray, gold: np.ndarray) -> float:
    return float((pred & gold).sum() / max(1, gold.sum()))


def report(rows: list[dict[str, Any]], without: list[dict], with_: list[dict], draws: int) -> dict[str, Any]:
    """Print and return both figures, their intervals and what the conversation changed."""
    gold = np.array([r["_gold"] for r in rows])
    groups = np.array([r["_group"] for r in rows])
    follow = np.array([bool(r["conversation"]) for r in rows])
    a = np.array([j["flag"] for j in without])
    b = np.array([j["flag"] for j in with_])
    ci = _cluster_bootstrap(groups, gold, a, b, draws)
    out: dict[str, Any] = {
        "answers": len(rows),
        "hallucinated": int(gold.sum()),
        "conversations": len(set(groups)),
    }
    print(
        f"MTRAG: {len(rows)} labelled answers ({int(gold.sum())} hallucinated), {len(set(groups))} conversations, "
        f"{int(follow.sum())} follow-up turns; response level, positive = hallucinated"
    )
    print(f"  {'judge input':<22}{'bal.acc':>8}  {'95% CI (by conversation)':<26}{'prec':>6}{'recall':>8}{'F1':>7}"
          f"{'per-conv':>10}")  # fmt: skip
    for name, pred in (("without conversation", a), ("with conversation", b)):
        key = "without" if pred is a else "with"
        lo, hi = ci[key]
        row = {
            "balanced_accuracy": balanced_accuracy(pred, gold),
            "interval": [lo, hi],
            "precision": _precision(pred, gold),
            "recall": _recall(pred, gold),
            "f1": f1(pred, gold),
            "per_conversation": _per_conversation(groups, gold, pred),
        }
        out[key] = row
        print(
            f"  {name:<22}{row['balanced_accuracy']:>8.3f}  [{lo:.3f}, {hi:.3f}]{'':<12}{row['precision']:>6.2f}"
            f"{row['recall']:>8.2f}{row['f1']:>7.3f}{row['per_conversation']:>10.3f}"
        )
    lo, hi = ci["difference"]
    changed = int((a != b).sum())
    out["difference"] = {"balanced_accuracy": out["with"]["balanced_accuracy"] - out["without"]["balanced_accuracy"],
                         "interval": [lo, hi], "verdicts_changed": changed}  # fmt: skip
    print(f"  with - without: {out['difference']['balanced_accuracy']:+.3f} [{lo:+.3f}, {hi:+.3f}] (paired); "
          f"{changed} response verdicts changed")  # fmt: skip
    _changes(without, with_, follow, out)
    return out


def _changes(without: list[dict], with_: list[dict], follow: np.ndarray, out: dict[str, Any]) -> None:
    """What the conversation did besides the response verdicts."""
    restated = sum(j["restated"] for j in with_)
    claims = sum(j["claims"] for j in with_)
    rel = [(x["relevance"], y["relevance"]) for x, y, f in zip(without, with_, follow, strict=True) if f]
    rel = [(x, y) for x, y in rel if x is not None and y is not None]
    modes = (Counter(j["failure_mode"] for j in without), Counter(j["failure_mode"] for j in with_))
    abst = (sum(j["abstained"] for j in without), sum(j["abstained"] for j in with_))
    out["restated_claims"], out["claims"] = restated, claims
    out["follow_up_relevance"] = [float(np.mean([x for x, _ in rel])), float(np.mean([y for _, y in rel]))]
    out["failure_modes"] = [dict(modes[0]), dict(modes[1])]
    print(f"  claims that restate the user: {restated} of {claims}")
    print(f"  mean answer relevance on follow-up turns: {out['follow_up_relevance'][0]:.3f} -> "
          f"{out['follow_up_relevance'][1]:.3f}")  # fmt: skip
    print(f"  failure modes without: {dict(sorted(modes[0].items()))}")
    print(f"  failure modes with:    {dict(sorted(modes[1].items()))}")
    print(f"  abstentions: {abst[0]} -> {abst[1]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--data", type=Path, default=DATA, help="the folder holding judge-dev/mtrag.jsonl")
    parser.add_argument("--draws", type=int, default=2000, help="bootstrap draws (whole conversations)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    path = args.data / MTRAG
    if not path.exists():
        print(f"skipped: {path} not found (MTRAG is development data beside the repository)")
        return 0
    rows = records(path)
    without, with_ = judge_both(rows)
    out = report(rows, without, with_, args.draws)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
