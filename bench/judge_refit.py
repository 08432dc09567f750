"""``ragpulse judge refit`` on the development sets used as "a team's labels".

For each set with real answers (:mod:`judge_refit_data`: MTRAG grouped by conversation, the
FActScore and Factcheck-GPT responses, the hand-written RAG and summary cases), six seeds
and 100, 200 and 400 labelled answers: draw whole groups in a seeded order until that many
answers are labelled (at most two thirds of the set, so the rest holds a third; the sets
smaller than that are refit on two thirds), run what the CLI runs on them
(:func:`ragpulse.collector.judge.local.refit.run`: the held-out comparison and the decision
to promote, with the CLI's default minimums and folds), and judge the rest:

- ``packaged``: the packaged judge (claim head v4, response rule v1);
- ``deployed``: what the team runs after the command, the refit where it was promoted and
  the packaged judge where the CLI refused;
- ``refit``: the refit decision fit on the labels whether promoted or not (what promoting
  everything would have given).

Printed per set and size: labelled answers, promotions of six, answer-level balanced accuracy
(``response_verdict`` hallucinated against the answer labels) of the three, the median over
seeds of deployed minus packaged (the acceptance: never below -0.01) and its worst seed, the
refit's verdict
threshold and ``mean_below``, and where the set has claim labels claim balanced accuracy and
the answer-level recall of the packaged judge, the refit and the refit claim head under the
packaged response rule (``head only``: issue 44's failure, a refit of part of the decision),
and why the CLI refused. Then, per set, one refit written as
a weights file and the rest judged end to end by ``LocalJudge(claim_weights=file)``: its
response verdicts against the bench's arrays (they must agree on every trace), and a
learning curve from the CLI's printout for one seed.

Usage: python bench/judge_refit.py [--sets mtrag factscore ...] [--seeds 6] [--sizes 100 200 400]
[--no-judge] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from judge_refit_data import SETS, label_sets
from ragpulse.collector.judge.local.judge import LocalJudge
from ragpulse.collector.judge.local.refit import Base, read_base, run, shortfall, weights_text
from ragpulse.collector.judge.local.refit.data import LabelSet
from ragpulse.collector.judge.local.refit.decision import Minimums, fit_decision
from ragpulse.collector.judge.local.refit.head import Decision, balanced_accuracy

SIZES = (100, 200, 400)
MAX_SHARE = 2 / 3
FOLDS = 5


def split(ls: LabelSet, n: int, seed: int) -> np.ndarray:
    """Training traces: whole groups in a seeded order until ``n`` labelled answers (at most
    :data:`MAX_SHARE` of the set's)."""
    answers = ls.gold >= 0
    cap = min(n, int(MAX_SHARE * answers.sum()))
    order = np.random.default_rng(seed).permutation(np.unique(ls.group.astype(str)))
    train = np.zeros(len(ls.trace_ids), dtype=bool)
    for g in order:
        if (train & answers).sum() >= cap:
            break
        train |= ls.group.astype(str) == g
    return train


def scores(ls: LabelSet, decision: Decision) -> dict[str, float]:
    """Answer-level balanced accuracy and recall (of hallucinated answers) and claim balanced
    accuracy of ``decision`` on ``ls``."""
    has = ls.gold >= 0
    flags = decision.answers(ls.judged, len(ls.trace_ids))
    supported, _ = decision.claims(ls.labelled)
    claim = balanced_accuracy(supported, ls.labelled.y) if len(ls.labelled) else float("nan")
    recall = float(flags[ls.gold == 1].mean())
    return {"answer": balanced_accuracy(flags[has], ls.gold[has]), "recall": recall, "claim": claim}


def one(ls: LabelSet, base: Base, n: int, seed: int, minimums: Minimums) -> dict[str, Any]:
    """One (size, seed) cell: what the CLI decides on the training labels, and the rest's figures."""
    train = split(ls, n, seed)
    labelled, rest = ls.traces(train), ls.traces(~train)
    short = shortfall(labelled, minimums, FOLDS)
    outcome = None if short else run(labelled, base, minimums, FOLDS, curve=False)
    promoted = outcome is not None and outcome.comparison.promote
    forced = (outcome and outcome.fit) or fit_decision(labelled, base.decision, minimums)
    packaged = scores(rest, base.decision)
    refit = scores(rest, forced.decision)
    deployed = refit if promoted else packaged
    head_only = scores(rest, Decision(forced.decision.head, base.decision.mean_below))
    return {
        "answers": int((labelled.gold >= 0).sum()), "promoted": promoted,
        "reason": f"too few labels: {short}" if outcome is None else outcome.comparison.reason,
        "packaged": packaged, "refit": refit, "deployed": deployed,
        "head only": head_only, "head_refit": forced.head_refit,
        "threshold": forced.decision.head.threshold, "mean_below": forced.decision.mean_below,
        "train": train, "fit": forced, "comparison": outcome and outcome.comparison, "labelled": labelled,
    }  # fmt: skip


def _med(cells: list[dict[str, Any]], who: str, key: str) -> float:
    values = np.array([c[who][key] for c in cells], dtype=float)
    return float(np.nanmedian(values)) if (~np.isnan(values)).any() else float("nan")


def _print_row(name: str, n: int, cells: list[dict[str, Any]]) -> dict[str, Any]:
    delta = [c["deployed"]["answer"] - c["packaged"]["answer"] for c in cells]
    row = {
        "set": name, "size": n, "answers": int(np.median([c["answers"] for c in cells])),
        "promoted": sum(c["promoted"] for c in cells), "seeds": len(cells),
        **{f"answer_{w}": _med(cells, w, "answer") for w in ("packaged", "deployed", "refit")},
        **{f"claim_{w}": _med(cells, w, "claim") for w in ("packaged", "deployed", "refit")},
        **{f"recall_{w}": _med(cells, w, "recall") for w in ("packaged", "refit", "head only")},
        "median_delta": float(np.median(delta)), "min_delta": float(np.min(delta)),
        "threshold": float(np.median([c["threshold"] for c in cells])),
        "mean_below": float(np.median([c["mean_below"] for c in cells])),
        "refused": dict(Counter(c["reason"] for c in cells if not c["promoted"])),
    }  # fmt: skip
    claim = "" if np.isnan(row["claim_packaged"]) else (
        f"{row['claim_packaged']:>7.3f}{row['claim_deployed']:>7.3f}{row['claim_refit']:>7.3f}   recall "
        f"{row['recall_packaged']:.3f} / {row['recall_refit']:.3f} / head only {row['recall_head only']:.3f}")  # fmt: skip
    row["promoted_deltas"] = [round(d, 3) for d, c in zip(delta, cells, strict=True) if c["promoted"]]
    ok = "ok" if row["median_delta"] >= -0.01 else "FAIL"
    print(f"{name:<14}{n:>5}{row['answers']:>6}{row['promoted']:>4}/{len(cells)}"
          f"{row['answer_packaged']:>8.3f}{row['answer_deployed']:>8.3f}{row['answer_refit']:>8.3f}"
          f"{row['median_delta']:>+8.3f}{row['min_delta']:>+7.3f} {ok:<5}{row['threshold']:>5.2f}"
          f"{row['mean_below']:>6.2f}  {claim}")  # fmt: skip
    return row


def _judge_parity(ls: LabelSet, team: Any, cell: dict[str, Any], base: Base, limit: int = 150) -> str:
    """Write the cell's refit as a weights file, judge (up to ``limit`` of) the rest with it, and
    count response verdicts that differ from the bench's arrays."""
    rest = ls.traces(~cell["train"])
    flags = cell["fit"].decision.answers(rest.judged, len(rest.trace_ids))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "refit.json"
        path.write_text(weights_text(base, cell["fit"], cell["labelled"], cell["comparison"], "bench"))
        judge = LocalJudge(claim_weights=str(path))
        traces = team[0]
        ids = list(rest.trace_ids[:limit])
        differ = sum(
            (judge.judge({**traces[t], "trace_id": t})["response_verdict"] == "hallucinated")
            != bool(flags[i])
            for i, t in enumerate(ids)
        )
    return (
        f"{judge.judge_id}: {differ} of {len(ids)} held-out response verdicts differ from the bench's arrays"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", nargs="+", choices=SETS, default=list(SETS))
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--sizes", nargs="+", type=int, default=list(SIZES))
    ap.add_argument("--no-judge", action="store_true", help="skip judging the rest with a written file")
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    sets = label_sets()
    base, minimums = read_base(None), Minimums()
    print(f"base: {base.name}; CLI defaults: {FOLDS} folds, minimums {minimums}")
    print("answer-level balanced accuracy on the rest (median over seeds); delta = deployed - packaged")
    print(f"{'set':<14}{'size':>5}{'ans':>6}{'prom':>6}{'packgd':>8}{'deployd':>8}{'refit':>8}{'delta':>8}{'worst':>7} "
          f"{'':<5}{'thr':>5}{'mean<':>6}  claim bal.acc packaged/deployed/refit, answer recall")  # fmt: skip
    rows = []
    for name in args.sets:
        ls, team = sets[name]
        done: dict[int, list[dict[str, Any]]] = {}
        for n in args.sizes:
            cells = [one(ls, base, n, seed, minimums) for seed in range(args.seeds)]
            effective = cells[0]["answers"]
            if effective in done:
                continue
            done[effective] = cells
            rows.append(_print_row(name, n, cells))
        for row in rows:
            if row["set"] == name and row["promoted_deltas"]:
                print(
                    f"  {name} {row['size']}: promoted refits, deployed - packaged on the rest: {row['promoted_deltas']}"
                )
            if row["set"] == name and row["refused"]:
                print(
                    f"  {name} {row['size']}: refused: "
                    + "; ".join(f"{k} ({v})" for k, v in row["refused"].items())
                )
        compared = [c for c in done[max(done)] if c["comparison"] is not None]
        if not args.no_judge and compared:
            print(f"  {name}: " + _judge_parity(ls, team, compared[0], base), flush=True)
    print(f"({time.perf_counter() - t0:.0f}s)")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
