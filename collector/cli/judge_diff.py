"""``ragpulse judge diff --from OLD --to NEW``: how two judges differ on the same stored traces.

On the traces both judge ids judged without error (``--service``, ``--since`` narrow them;
``ragpulse rejudge`` fills in the new id's rows), it prints per score the mean under each id
and how many traces moved up and down; the flag rates the alerts read (unsupported and
hallucinated claims, retrieval and generation failures, false refusals, answers judged
hallucinated); claim verdicts, failure modes and response verdicts under each id, and the
traces whose class changed. ``--json`` prints the same as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, TextIO

from .errors import CliError, storage_errors
from .export import open_storage, parse_time

__all__ = ["add_window_options", "build_parser", "print_diff", "run", "since_ns"]


def add_window_options(p: argparse.ArgumentParser) -> None:
    """``--db``, ``--config``, ``--service``, ``--since``: which stored judgments."""
    p.add_argument("--db", help="chdb:///path, a database directory, or http://user:pass@host:8123/db")
    p.add_argument("--config", help="collector YAML config (its storage section; --db overrides)")
    p.add_argument("--service", help="only this service's traces")
    p.add_argument("--since", help="only traces since: 7d, 24h or an ISO time (default: all)")


def since_ns(args: argparse.Namespace) -> int | None:
    return parse_time(args.since, time.time_ns()) if args.since else None


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ragpulse judge diff", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--from", dest="base", required=True, help="the judge id scores move from (the old judge)")
    p.add_argument("--to", dest="new", required=True, help="the judge id scores move to (the new judge)")
    add_window_options(p)
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.set_defaults(func=run, command="judge diff")
    return p


def run(args: argparse.Namespace) -> int:
    from ..rejudge.diff import DiffScope, judge_diff

    if args.base == args.new:
        raise CliError("--from and --to name the same judge")
    storage = open_storage(args)
    with storage_errors(storage):
        storage.apply_schema()
        diff = judge_diff(storage, DiffScope(args.base, args.new, args.service, since_ns(args)))
    if args.json:
        print(json.dumps(diff, indent=2))
        return 0
    if not diff["traces"]:
        raise CliError(
            f"no trace judged by both {args.base} and {args.new} (`ragpulse rejudge --from {args.base}` "
            "judges the old judge's traces with the new one)"
        )
    print_diff(diff)
    return 0


def _f(v: float | None, sign: bool = False) -> str:
    return "-" if v is None else (f"{v:+.4f}" if sign else f"{v:.4f}")


def print_diff(diff: dict[str, Any], out: TextIO = sys.stdout) -> None:
    """The comparison of :func:`..rejudge.diff.judge_diff` as text."""
    w = out.write
    w(f"judge diff: {diff['from']} -> {diff['to']} on {diff['traces']} traces both judged\n\n")
    w(f"{'score':<24}{'n':>6}{'from':>9}{'to':>9}{'delta':>9}{'up':>7}{'down':>7}{'same':>7}\n")
    for name, s in diff["scores"].items():
        if s["n"]:
            w(f"{name:<24}{s['n']:>6}{_f(s['from']):>9}{_f(s['to']):>9}{_f(s['delta'], True):>9}"
              f"{s['up']:>7}{s['down']:>7}{s['same']:>7}\n")  # fmt: skip
    w(f"\n{'flag rate':<24}{'from':>9}{'to':>9}{'delta':>9}  what it counts\n")
    for name, f in diff["flags"].items():
        delta = None if f["from"] is None or f["to"] is None else round(f["to"] - f["from"], 4)
        w(f"{name:<24}{_f(f['from']):>9}{_f(f['to']):>9}{_f(delta, True):>9}  {f['counts']}\n")
    w(f"\n{'claim verdict':<24}{'from':>9}{'to':>9}\n")
    for v, c in diff["claims"].items():
        w(f"{v:<24}{c['from']:>9}{c['to']:>9}\n")
    for cls, data in diff["classes"].items():
        w(f"\n{cls.replace('_', ' '):<24}{'from':>9}{'to':>9}\n")
        for v, c in data["counts"].items():
            w(f"{v:<24}{c['from']:>9}{c['to']:>9}\n")
        changed = data["changed"]
        moved = sum(m["traces"] for m in changed)
        w(f"  changed on {moved} traces" + (": " if changed else "") +
          ", ".join(f"{m['from']} -> {m['to']} {m['traces']}" for m in changed) + "\n")  # fmt: skip
