"""``ragpulse calibrate``: a judge's verdicts against human labels.

With ``--from-reviews`` the labels come from the store instead: the labels
reviewers saved with ``ragpulse review`` (table ``rag_reviews``) beside the
judge's stored records of the same traces, and every judged trace nobody
labelled as the judged set (``--db``/``--config``, ``--service``, ``--since``,
``--judge`` choose them; ``ragpulse review export-labels`` writes the same rows
to a file).

LABELS.jsonl holds one object per trace: ``human`` (labels such as
``faithful``, ``faithfulness``, ``failure_mode``, ``abstained``,
``abstention_kind``), ``judge`` (the judge's output record) and optionally
``judge_b`` (a second judge's record, for the paired bootstrap). Lines without
``human`` (and ``--judged`` files of output records) form the large judged set
for the prediction-powered estimate of mean faithfulness. Its labelled set must
be a random sample: when labelled lines record the review queue's ``slice``
(``--from-reviews`` and ``review export-labels`` do), only the ``random``
slice's labels count there, the others join the judged set; agreement is over
every label.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .errors import CliError
from .jsonl import read_objects
from .review import add_scope_options

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "calibrate",
        help="agreement of a judge with human labels, PPI mean faithfulness, judge differences",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
    )
    p.add_argument("labels", nargs="?", help="LABELS.jsonl (human labels + judge records)")
    p.add_argument(
        "--from-reviews", action="store_true", help="read the labels of `ragpulse review` from the store"
    )
    add_scope_options(p)
    p.add_argument("--judged", action="append", default=[], help="JSONL of judge output records (unlabelled)")
    p.add_argument("--bootstrap", type=int, default=2000, help="bootstrap resamples (default 2000)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=run)


def _from_reviews(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The labels-file rows of the store's review labels (what ``review export-labels`` writes)."""
    from .review import review_rows

    scope, rows, dsn = review_rows(args)
    print(f"judge {scope.judge_id}: labels of `ragpulse review` from {dsn}", file=sys.stderr)
    return rows


def run(args: argparse.Namespace) -> int:
    from ..judge.calibrate import calibration_report

    if bool(args.labels) == bool(args.from_reviews):
        raise CliError("give either LABELS.jsonl or --from-reviews")
    scope_opts = ("db", "config", "service", "since", "judge")
    if not args.from_reviews and any(getattr(args, k) for k in scope_opts):
        raise CliError("--db, --config, --service, --since and --judge go with --from-reviews")
    rows = _from_reviews(args) if args.from_reviews else read_objects(args.labels)
    judged = [r for path in args.judged for r in read_objects(path)]
    if not any(isinstance(r.get("human"), dict) for r in rows):
        raise CliError(f"{args.labels}: no line has a 'human' object of labels")
    if args.bootstrap < 100:
        raise CliError("--bootstrap must be at least 100")
    rep = calibration_report(rows, judged, n_boot=args.bootstrap, seed=args.seed)
    if args.json:
        print(json.dumps(rep, indent=2))
        return 0
    out = sys.stdout
    slices = rep["slices"]
    by_slice = (
        "  (" + ", ".join(f"{k or 'no slice recorded'} {n}" for k, n in sorted(slices.items())) + ")"
        if slices
        else ""
    )
    print(
        f"labelled traces: {rep['labelled']}{by_slice}   judged (unlabelled) traces: {rep['unlabelled']}",
        file=out,
    )
    print(f"{'metric':<24}{'n':>6}{'accuracy':>10}{'kappa':>8}{'MAE':>8}{'<=0.1':>8}{'r':>8}", file=out)
    for key, m in rep["metrics"].items():

        def f(v: Any) -> str:
            return "-" if v is None else f"{v:.3f}"

        print(
            f"{key:<24}{m['n']:>6}{f(m.get('accuracy')):>10}{f(m.get('kappa')):>8}{f(m.get('mae')):>8}"
            f"{f(m.get('within_0.1')):>8}{f(m.get('pearson')):>8}",
            file=out,
        )
    ppi = rep.get("ppi_faithfulness")
    if ppi:
        print(
            f"mean faithfulness (PPI): {ppi['estimate']:.4f}  95% CI [{ppi['ci95'][0]:.4f}, {ppi['ci95'][1]:.4f}]"
            f"  (judge alone: {ppi['judge_only_mean']:.4f}; n={ppi['n_labelled']} labelled, "
            f"N={ppi['n_judged']} judged; labels: {ppi['labels']})",
            file=out,
        )
    else:
        need = "labels of the random slice" if slices else "labelled rows"
        print(f"mean faithfulness (PPI): needs {need} and unlabelled judged rows with faithfulness", file=out)
    diff = rep.get("judge_difference")
    if diff:
        print(
            f"judge_b - judge, {diff['metric']}: {diff['delta']:+.4f}  95% CI [{diff['ci95'][0]:+.4f}, "
            f"{diff['ci95'][1]:+.4f}]  n={diff['n']}  "
            + ("(significant)" if diff["significant"] else "(not significant: the interval spans 0)"),
            file=out,
        )
    return 0
