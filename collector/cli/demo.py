"""``ragpulse demo``: its arguments; the run itself is ``demo/runner.py``."""

from __future__ import annotations

import argparse

from ..demo.runner import DEFAULT_DB, run_demo

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "demo",
        help="run the whole loop on the embedded default and print the quality report",
        description=(
            "Serve questions through the demo policy assistant, instrumented with the ragpulse agent; "
            "the in-process collector samples, judges (local judge) and stores them in chDB, exports "
            "Prometheus metrics, then prints the quality report and writes it as HTML."
        ),
    )
    p.add_argument(
        "--queries", type=int, default=300, help="questions to serve (default 300; 0 = report only)"
    )
    p.add_argument("--db", default=DEFAULT_DB, help=f"chDB database directory (default {DEFAULT_DB})")
    p.add_argument(
        "--report", default=None, help="HTML report path (default: report.html next to the database)"
    )
    p.add_argument(
        "--metrics-port",
        type=int,
        default=9466,
        help="Prometheus metrics port on 127.0.0.1 (default 9466; a free port is used if it is taken; 0 = any)",
    )
    p.add_argument(
        "--rate",
        type=float,
        default=25.0,
        help="questions per second, paced like live traffic (default 25; 0 = as fast as possible)",
    )
    p.add_argument(
        "--serve", action="store_true", help="keep the metrics endpoint up after the report (Ctrl-C stops)"
    )
    p.add_argument("--seed", type=int, default=7, help="seed of the traffic and the generator (default 7)")
    p.add_argument(
        "--sample-rate",
        type=float,
        default=0.5,
        help="base sampling rate for judging (default 0.5, plus the rules)",
    )
    p.add_argument(
        "--budget-per-minute",
        type=int,
        default=600,
        help="judging budget per minute of trace time (default 600, the collector's; 0 = unlimited)",
    )
    p.add_argument("--judge", default="local", help="judge: local (default) or a litellm model name")
    p.add_argument(
        "--variants",
        action="store_true",
        help="serve two generator variants split 50/50 (generator-b: cheaper, hallucinates numbers more "
        "often) and print their comparison (ragpulse compare) after the report",
    )
    p.add_argument("--no-color", action="store_true", help="plain text even on a terminal")
    p.add_argument(
        "--no-eval",
        action="store_true",
        help="skip the last step (export the run's failures, compare two generator configurations on them)",
    )
    p.set_defaults(func=run_demo)
