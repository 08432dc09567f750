"""``ragpulse judge``: judge DESIGN.md input records from a JSONL file or stdin.

Reads one JSON object per line, writes one output record per line (stdout by
default). A malformed line stops the run with a one-line error naming the line
number (exit 2) unless ``--skip-bad`` is given, in which case the line is
recorded as an error record (``trace_id`` ``line:N``) and judging continues.
Progress goes to stderr every few seconds on long inputs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, BinaryIO, TextIO

from .errors import CliError
from .jsonl import parse_object
from .judge_options import add_judge_options, build_judge

__all__ = ["ACTIONS", "register", "run"]

_BATCH = 256  # records handed to a batch-capable judge at once (progress is reported between batches)


def _refit_parser() -> argparse.ArgumentParser:
    from .judge_refit import build_parser

    return build_parser()


def _diff_parser() -> argparse.ArgumentParser:
    from .judge_diff import build_parser

    return build_parser()


#: ``ragpulse judge refit ...``, ``ragpulse judge diff ...`` (cli/dispatch.py): ``judge`` itself
#: takes an input path.
ACTIONS = {("judge", "refit"): _refit_parser, ("judge", "diff"): _diff_parser}


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "judge",
        help="judge RAG traces (JSONL in, JSONL out)",
        description="Judge RAG traces: claim-level faithfulness, citations, relevance and abstention. "
        "`ragpulse judge refit --from-reviews -o FILE` refits the local judge's claim head on review labels "
        "(see `ragpulse judge refit --help`); `ragpulse judge diff --from OLD --to NEW` compares two judges on "
        "the same stored traces.",
    )
    p.add_argument("input", nargs="?", default="-", help="input JSONL (default: stdin)")
    p.add_argument("-o", "--output", default="-", help="output JSONL (default: stdout)")
    add_judge_options(p)
    p.add_argument("--skip-bad", action="store_true", help="record malformed lines as errors and continue")
    p.add_argument("--concurrency", type=int, default=None, help="LLM judge: concurrent requests")
    p.add_argument(
        "--shuffle-chunks", action="store_true", help="LLM judge: shuffle chunk order (position bias)"
    )
    p.set_defaults(func=run)


def _open_in(path: str) -> BinaryIO:
    if path == "-":
        return sys.stdin.buffer
    try:
        return open(path, "rb")  # noqa: SIM115 - closed by caller
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror}") from exc


def _open_out(path: str) -> TextIO:
    if path == "-":
        return sys.stdout
    try:
        return open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed by caller
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror}") from exc


def _parse(raw: bytes, lineno: int) -> dict[str, Any]:
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"line {lineno}: not UTF-8 text") from None
    rec = parse_object(line, lineno)
    if not isinstance(rec.get("answer"), str):
        raise ValueError(f"line {lineno}: missing string field 'answer'")
    if "chunks" in rec and not isinstance(rec["chunks"], list):
        raise ValueError(f"line {lineno}: 'chunks' must be a list")
    return rec


def run(args: argparse.Namespace) -> int:
    from ..judge.record import error_record

    llm_settings: dict[str, Any] = {}
    if args.concurrency:
        llm_settings["concurrency"] = args.concurrency
    if args.shuffle_chunks:
        llm_settings["shuffle_chunks"] = True
    judge = build_judge(args, **llm_settings)
    src = _open_in(args.input)
    records: list[tuple[int, dict[str, Any] | None, str | None]] = []
    try:
        for lineno, line in enumerate(src, 1):
            if not line.strip():
                continue
            try:
                records.append((lineno, _parse(line, lineno), None))
            except ValueError as exc:
                if not args.skip_bad:
                    raise CliError(f"{_name(args.input)}: {exc}") from None
                records.append((lineno, None, str(exc)))
    finally:
        if src is not sys.stdin.buffer:
            src.close()
    out = _open_out(args.output)
    total = len(records)
    t0 = last = time.monotonic()
    errors = 0
    try:
        batch = getattr(judge, "judge_many", None)
        done = 0
        for start in range(0, total, _BATCH):
            part = records[start : start + _BATCH]
            good = [(n, r) for n, r, _ in part if r is not None]
            results: dict[int, dict[str, Any]] = {}
            if batch is not None and len(good) > 1:  # LLM judges: concurrent requests
                results = dict(zip((n for n, _ in good), batch([r for _, r in good]), strict=True))
            for lineno, rec, err in part:
                if err is not None:
                    res = error_record(f"line:{lineno}", judge.judge_id, f"malformed input: {err}")
                elif lineno in results:
                    res = results[lineno]
                else:
                    res = judge.judge(rec)
                if res.get("error"):
                    errors += 1
                out.write(json.dumps(res, ensure_ascii=False) + "\n")
                done += 1
                now = time.monotonic()
                if total > 200 and now - last >= 2.0:
                    last = now
                    print(
                        f"ragpulse judge: {done}/{total} traces ({done / (now - t0):.0f}/s)", file=sys.stderr
                    )
    finally:
        if out is not sys.stdout:
            out.close()
        else:
            out.flush()
        close = getattr(judge, "close", None)
        if close is not None:
            close()
    if total > 200 or errors:
        print(
            f"ragpulse judge: judged {total} traces with {judge.judge_id}, {errors} errors",
            file=sys.stderr,
        )
    return 0


def _name(path: str) -> str:
    return "stdin" if path == "-" else path
