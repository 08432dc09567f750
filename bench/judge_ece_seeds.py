"""How much of a dev set's ECE is the fit's: the claim model cross-validated over several fold
assignments.

`bench/judge_quality.py` reports one grouped 5-fold assignment (seed 0). A set's ECE on the
out-of-fold probabilities carries two noises: the labels' (``judge_metrics.ece_floor``, what
a perfectly calibrated judge would show on that many claims) and the fit's (which records
train the folds' models and isotonic maps). This repeats the cross-validation with other
fold seeds (the same groups kept together) and prints each set's ECE per seed with the
median, beside the set's sampling floor (median and 95th percentile).

Usage: python bench/judge_ece_seeds.py [--seeds 6] [--folds 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import judge_dev_data as dev  # noqa: E402
import judge_metrics as jm  # noqa: E402
import judge_quality as jq  # noqa: E402

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--folds", type=int, default=5)
    args = ap.parse_args(argv)
    if not (dev.DATA / "judge-dev").is_dir():
        print(f"dev data not found under {dev.DATA}: nothing to measure", file=sys.stderr)
        return 2
    data = jq.Data(dev.load_items(dev.DATA), args.folds)
    eces: dict[str, list[float]] = {s: [] for s in dev.SOURCES}
    floors: dict[str, tuple[float, float]] = {}
    print(f"ECE of the out-of-fold claim probabilities, grouped {args.folds}-fold CV, per fold seed")
    print("  seed  " + "".join(f"{s:>18}" for s in dev.SOURCES))
    for seed in range(args.seeds):
        data.fold = np.array([jm.fold_of(i["group"], args.folds, seed=seed) for i in data.items])
        p = jq.cross_validate(data, args.folds, with_previous=False)["p"]
        for s in dev.SOURCES:
            m = data.src == s
            eces[s].append(jm.ece(p[m], data.y[m]))
            if seed == 0:
                floors[s] = jm.ece_floor(p[m])
        print(f"  {seed:>4}  " + "".join(f"{eces[s][-1]:>18.3f}" for s in dev.SOURCES), flush=True)
    print("  median" + "".join(f"{statistics.median(eces[s]):>18.3f}" for s in dev.SOURCES))
    print("  floor " + "".join(f"{f'{floors[s][0]:.3f} ({floors[s][1]:.3f})':>18}" for s in dev.SOURCES))
    print(
        "  (floor: median (95th percentile) ECE of a perfectly calibrated judge on the set, seed 0's probabilities)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
