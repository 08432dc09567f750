"""``ragpulse compare``: online comparison of a service's variants (docs/compare.md)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from .errors import CliError

__all__ = ["register"]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "compare",
        help="compare a service's variants: quality with 95%% intervals, latency and cost per query",
        description=(
            "Per variant (the rag.variant of each call): judged volume, every score and failure-mode "
            "share with a 95% bootstrap interval, latency p50/p95 per stage and cost per query; the "
            "difference of each variant against the baseline with its interval (95% simultaneous over the "
            "metrics compared) and a verdict."
        ),
    )
    p.add_argument("--service", required=True, help="the service (service.name) whose variants to compare")
    p.add_argument("--since", default="24h", help="window start: 24h, 7d or an ISO time (default 24h)")
    p.add_argument("--variants", nargs="+", metavar="VARIANT", help="variants to compare; the first is the baseline "
                   "(default: all, the one with the most judged traces as baseline)")  # fmt: skip
    p.add_argument("--db", help="chdb:///path, a database directory, or http://user:pass@host:8123/db")
    p.add_argument("--config", help="collector YAML config (its storage section; --db overrides)")
    p.add_argument("--judge", help="judge id (default: the one with the most judgments in the window)")
    p.add_argument(
        "--metric", default="faithfulness", help="headline metric of the verdict line (default faithfulness)"
    )
    p.add_argument(
        "--html", help="write the self-contained HTML report (with the cost-quality frontier) here"
    )
    p.add_argument("--json", help="write the comparison as JSON here")
    p.add_argument(
        "--max-rows", type=int, default=20_000, help="judged traces per variant at most (default 20000)"
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap resampling (default 0)")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from ..compare.report_html import render_html
    from ..compare.report_text import render_text
    from ..compare.run import CompareError, build_comparison
    from ..compare.stats import METRIC_NAMES
    from .export import open_storage, parse_time

    if args.metric not in METRIC_NAMES:
        raise CliError(f"--metric must be one of {', '.join(METRIC_NAMES)}")
    if args.max_rows < 2:
        raise CliError("--max-rows must be at least 2")
    if args.variants and len(set(args.variants)) != len(args.variants):
        raise CliError("--variants names a variant twice")
    since_s = parse_time(args.since, time.time_ns()) / 1e9
    storage = open_storage(args)
    print(f"Comparing the variants of {args.service} since {args.since} ...", file=sys.stderr)
    try:
        cmp = build_comparison(
            storage.query, args.service, since_s, args.since, variants=args.variants or (),
            judge_id=args.judge, metric=args.metric, max_rows=args.max_rows, seed=args.seed,
        )  # fmt: skip
    except CompareError as exc:
        raise CliError(str(exc)) from None
    finally:
        storage.close()
    print(render_text(cmp))
    if args.html:
        Path(args.html).write_text(render_html(cmp), encoding="utf-8")
        print(f"HTML report: {args.html}")
    if args.json:
        import json

        Path(args.json).write_text(json.dumps(cmp.as_json(), indent=2, default=str) + "\n", encoding="utf-8")
    return 0
