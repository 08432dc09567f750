"""Local judge cost in CPU instructions per trace, counted by valgrind.

Wall-clock rates on a shared machine swing by +-25%; instruction counts do
not. This script runs the same workload as ``bench/judge_throughput.py``'s
local part (10 chunks x ~500 characters, 4-sentence cited answers, all traces
distinct) in child processes under ``valgrind --tool=cachegrind`` and prints
instructions per trace for the local judge and, side by side, for merely
tokenising the same traces (``text.profile`` of the answer and of each chunk).

Each figure is a difference of two runs that do everything alike (import,
generate the traces, warm the caches on 20 other traces) except the measured
work, so interpreter start-up and trace generation cancel out:

    instructions/trace = (I(run with the work) - I(run without)) / traces

Two judge figures: *fresh traces* (each trace judged once, so the per-process
word tables still learn new words, as on live traffic) and *second pass* (the
same traces judged again with every word already classified: the state of
bench/judge_throughput.py's timed passes, which judge the same traces five
times).

Usage: python bench/judge_instructions.py [--traces 150] [--seed 0]
(prints a note and exits 0 when valgrind is not installed).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["main", "count_instructions"]

ROOT = Path(__file__).resolve().parents[1]
_IREFS_RE = re.compile(r"I\s+refs:\s+([\d,]+)")
_WARM = 20

# The child: build the traces, warm up, then do ``mode``'s work (or none for "base").
_CHILD = """
import os, sys
sys.path.insert(0, {root!r})
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
from bench.judge_throughput import synthetic_traces
from ragpulse.collector.judge import get_judge
from ragpulse.collector.judge.text.tokens import profile
mode, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
traces = synthetic_traces(n + {warm}, seed=seed)
judge = get_judge("local")
for r in traces[:{warm}]:
    judge.judge(r)
    profile(r["answer"])
    for c in r["chunks"]:
        profile(c["content"])
work = traces[{warm}:]
for _ in range({{"judge": 1, "judge2": 2}}.get(mode, 0)):
    for r in work:
        judge.judge(r)
if mode == "tokenise":
    for r in work:
        profile(r["answer"])
        for c in r["chunks"]:
            profile(c["content"])
"""


def count_instructions(mode: str, n: int, seed: int) -> int:
    """Instructions executed by one child run (valgrind cachegrind, no cache simulation)."""
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "child.py"
        script.write_text(_CHILD.format(root=str(ROOT), warm=_WARM), encoding="utf-8")
        env = dict(os.environ, PYTHONHASHSEED="0", LITELLM_LOCAL_MODEL_COST_MAP="True")
        proc = subprocess.run(
            [
                "valgrind",
                "--tool=cachegrind",
                "--cache-sim=no",
                f"--cachegrind-out-file={tmp}/cg.out",
                sys.executable,
                str(script),
                mode,
                str(n),
                str(seed),
            ],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
    m = _IREFS_RE.search(proc.stderr)
    if proc.returncode != 0 or m is None:
        raise RuntimeError(f"valgrind run failed (rc {proc.returncode}): {proc.stderr[-2000:]}")
    return int(m.group(1).replace(",", ""))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=int, default=150)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: no instruction counts (see bench/judge_throughput.py for rates)")
        return 0
    n = args.traces
    base = count_instructions("base", n, args.seed)
    tok = count_instructions("tokenise", n, args.seed)
    jud = count_instructions("judge", n, args.seed)
    jud2 = count_instructions("judge2", n, args.seed)
    tok_per, jud_per, jud2_per = (tok - base) / n, (jud - base) / n, (jud2 - jud) / n
    print(
        f"local judge instructions (valgrind cachegrind): {n} traces after {_WARM} warm-up, seed {args.seed}"
    )
    print("  10 chunks x ~500 chars, 4-sentence answers with citation markers")
    print(f"  tokenising only           : {tok_per / 1e6:6.2f} M instructions/trace")
    print(f"  local judge, fresh traces : {jud_per / 1e6:6.2f} M instructions/trace")
    print(f"  local judge, second pass  : {jud2_per / 1e6:6.2f} M instructions/trace")
    return 0


if __name__ == "__main__":
    sys.exit(main())
