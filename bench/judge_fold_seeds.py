"""How much of a dev figure is the fit's: the claim model cross-validated over several fold
assignments.

`bench/judge_quality.py` reports one grouped 5-fold assignment (seed 0). Its figures carry
two noises: the labels' (``judge_metrics.ece_floor`` for ECE: what a perfectly calibrated
judge would show on that many claims) and the fit's (which records train each fold's model,
isotonic map and threshold). A change that touches a dozen claims moves the balanced
accuracy of sets it never touches by a few thousandths through the fit alone. This repeats
the cross-validation with other fold seeds (the same groups kept together) and prints each
set's balanced accuracy, AUROC and ECE per seed and their medians, with the set's ECE
sampling floor (median and 95th percentile): compare two versions by their medians.

Usage: python bench/judge_fold_seeds.py [--seeds 6] [--folds 5]
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

_METRICS = ("bal.acc", "AUROC", "ECE")


def _figures(data: jq.Data, cv: dict, source: str) -> tuple[float, float, float]:
    m = data.src == source
    p, y = cv["p"][m], data.y[m]
    verdict = jq.verdict_score(p, data.strong[m], data.neg[m]) >= cv["thr"][m]
    return jm.balanced_accuracy(verdict, y), jm.auroc(p, y), jm.ece(p, y)


def _triple(figures: tuple[float, ...]) -> str:
    return " / ".join(f"{x:.3f}" for x in figures)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--folds", type=int, default=5)
    args = ap.parse_args(argv)
    if not (dev.DATA / "judge-dev").is_dir():
        print(f"dev data not found under {dev.DATA}: nothing to measure", file=sys.stderr)
        return 2
    data = jq.Data(dev.load_items(dev.DATA), args.folds)
    rows: dict[str, list[tuple[float, float, float]]] = {s: [] for s in dev.SOURCES}
    floors: dict[str, tuple[float, float]] = {}
    print(f"grouped {args.folds}-fold CV per fold seed: balanced accuracy / AUROC / ECE")
    print("  seed" + "".join(f"{s:>26}" for s in dev.SOURCES))
    for seed in range(args.seeds):
        data.fold = np.array([jm.fold_of(i["group"], args.folds, seed=seed) for i in data.items])
        cv = jq.cross_validate(data, args.folds, with_previous=False)
        for s in dev.SOURCES:
            rows[s].append(_figures(data, cv, s))
            if seed == 0:
                floors[s] = jm.ece_floor(cv["p"][data.src == s])
        print(
            f"  {seed:>4}" + "".join(f"{_triple(rows[s][-1]):>26}" for s in dev.SOURCES),
            flush=True,
        )
    medians = {
        s: tuple(statistics.median(r[k] for r in rows[s]) for k in range(len(_METRICS))) for s in dev.SOURCES
    }
    print("median" + "".join(f"{_triple(medians[s]):>26}" for s in dev.SOURCES))
    print(
        "  ECE floor, median (95th percentile): "
        + ", ".join(f"{s} {f[0]:.3f} ({f[1]:.3f})" for s, f in floors.items())
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
