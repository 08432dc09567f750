"""The demo's last step: its failures become an eval set, and two generator configurations are compared on it.

After the quality report the demo (which owns the embedded database) runs
``ragpulse export`` over the traces it served, appending the failing cases to
``evalset.jsonl`` beside the database (the ``rag_exports`` watermark keeps a
second demo run from exporting a case twice), then replays every case of the
file through the demo app with ``ragpulse eval --app`` twice, on the cases'
frozen contexts: the generator at the demo's failure rates (``default``, the
baseline) and without injected failures (``careful``, the candidate). It
prints the paired comparison with its bootstrap intervals and writes the
eval's HTML report beside the quality report. Both evals are the CLI's own
command, run in this process with the arguments it prints, so a user can run
the same lines by hand once the demo has exited.
"""

from __future__ import annotations

import json
import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

__all__ = ["LoopFiles", "close_the_loop", "COMPARED", "HEADLINE"]

APP = "ragpulse.policy_rag.replay"
#: (candidate, baseline) generator configurations of the demo app (examples/policy_rag/replay.py).
COMPARED = ("careful", "default")
#: The comparison rows the demo prints (the HTML report and the JSON have every metric).
HEADLINE = (
    "strict_pass", "claim_recall", "claim_precision", "faithfulness", "citations_valid",
    "forbidden_hit", "false_refusal", "hallucination",
)  # fmt: skip
HOLDOUT = 0.2


@dataclass(frozen=True)
class LoopFiles:
    """Where the loop writes: the eval set beside the database, the eval report beside the quality report."""

    evalset: Path
    baseline_run: Path
    report: Path
    json: Path
    cache: Path

    @classmethod
    def beside(cls, db: Path, report_path: Path) -> LoopFiles:
        base = db.parent
        return cls(
            evalset=base / "evalset.jsonl",
            baseline_run=base / f"eval-run-{COMPARED[1]}.jsonl",
            report=report_path.parent / "eval-report.html",
            json=base / "eval.json",
            cache=base / "eval-judgments.sqlite",
        )


def _eval_argv(files: LoopFiles, baseline: bool) -> list[str]:
    """``ragpulse eval`` arguments: the baseline replay (saved as a run) or the candidate against it."""
    name = COMPARED[1] if baseline else COMPARED[0]
    argv = ["eval", str(files.evalset), "--app", f"{APP}:{name}", "--corpus-from-snapshot"]
    if baseline:
        return [*argv, "--save-run", str(files.baseline_run), "--cache", str(files.cache), "-q"]
    return [
        *argv, "--baseline", str(files.baseline_run), "-o", str(files.report), "--json", str(files.json),
        "--cache", str(files.cache), "-q",
    ]  # fmt: skip


def _comparison_lines(doc: dict[str, Any]) -> list[str]:
    from ..eval.report_text import comparison_table

    dev, hold = doc["overall"]["n"], doc["holdout"]["n"]
    return [
        f"{COMPARED[0]} vs {COMPARED[1]} (baseline), paired over {dev} dev case(s) "
        f"({hold} holdout case(s) reported apart), judge {doc['judge_id']}:",
        *comparison_table(doc, HEADLINE),
        "(an interval that spans 0 establishes nothing; the cases' gold is proposed by the judge, unreviewed)",
    ]


def _export(storage: Any, files: LoopFiles, since_ns: int, out: TextIO) -> int:
    """Export the run's failures; returns the number of cases in the file."""
    from ..export.run import ExportOptions, run_export

    until_ns = time.time_ns() + 1_000_000_000
    summary = run_export(storage, ExportOptions(files.evalset, since_ns, until_ns, holdout=HOLDOUT))
    for line in summary.lines():
        print(f"  {line}", file=out)
    return sum(1 for line in files.evalset.read_bytes().splitlines() if line.strip())


def close_the_loop(storage: Any, since_ns: int, files: LoopFiles, out: TextIO) -> int:
    """Export, replay both configurations, print the comparison; returns an exit status (0 = done)."""
    from ..cli import dispatch, evaluate

    print("", file=out)
    print(f"Closing the loop: exporting this run's failures into {files.evalset} ...", file=out)
    out.flush()
    cases = _export(storage, files, since_ns, out)
    if not cases:
        print("  no failing case to evaluate yet", file=out)
        return 0
    print(
        f"Replaying the {cases} case(s) of the eval set through two generator configurations of the demo app "
        "on their frozen contexts:",
        file=out,
    )
    for baseline in (True, False):
        argv = _eval_argv(files, baseline)
        print(f"  ragpulse {shlex.join(a for a in argv if a != '-q')}", file=out)
        out.flush()
        code = dispatch.run((evaluate,), argv)
        if code != 0:
            print(f"the eval exited with status {code}", file=out)
            return code
    doc = json.loads(files.json.read_text(encoding="utf-8"))
    print("", file=out)
    print("\n".join(_comparison_lines(doc)), file=out)
    print(f"Eval set:         {files.evalset}  ({cases} case(s), manifest beside it)", file=out)
    print(f"Eval report:      {files.report}", file=out)
    return 0
