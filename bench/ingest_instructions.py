"""The collector's per-span CPU cost by stage, in instructions counted by valgrind.

``bench/ingest_throughput.py`` measures the real thing (Kafka -> chDB) in
wall-clock time, which swings widely on a shared machine. This script counts
the instructions of the collector's own Python work per span, stage by stage,
on the same records (collector/demo/synthetic.py: root + retrieval with 5 chunks of
300 characters + generation, a reranker on every third trace, one trace per
record): decode (native and, side by side, the pure-Python upb path),
assemble, build the RagTrace, decide sampling, encode the ClickHouse rows.
Kafka fetching and the chDB insert itself are not included.

Each stage's figure is a difference of two child runs under
``valgrind --tool=cachegrind`` that do everything alike (imports, building the
records, a warm-up on other records) except that one also runs that stage:

    instructions/span(stage k) = (I(stages <= k) - I(stages < k)) / spans

Usage: python bench/ingest_instructions.py [--traces 300]
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

__all__ = ["main", "STAGES"]

ROOT = Path(__file__).resolve().parents[1]
_IREFS_RE = re.compile(r"I\s+refs:\s+([\d,]+)")
STAGES = ("decode", "assemble", "build", "sample", "encode")

_CHILD = """
import random, sys
sys.path.insert(0, {root!r})
from ragpulse.collector.ingest.assemble import Assembler, build_trace
from ragpulse.collector.config import load_config
from ragpulse.collector.ingest.otlp import Limits, decode_record
from ragpulse.collector.ingest.sampling import Sampler, SamplingPolicy
from ragpulse.collector.storage.clickhouse import encode_traces
from ragpulse.collector.demo.synthetic import make_trace, traces_data

upto, n = int(sys.argv[1]), int(sys.argv[2])
def records(lo, hi):
    out = []
    for i in range(lo, hi):
        t = make_trace(i, seed="bench", n_chunks=5, chunk_chars=300, rerank=(i % 3 == 0), rng=random.Random(i))
        out.append(traces_data([(t.service, t.spans)]))
    return out
limits = Limits()
sampler = Sampler(SamplingPolicy.from_config(load_config(None)["sampling"]))
sampler.policy.budget_per_minute = None  # the budget reads storage; not part of this count
def run(recs, upto):
    decoded = [decode_record(r, limits) for r in recs] if upto >= 1 else []
    ready = []
    if upto >= 2:
        asm = Assembler(5.0, 50_000)
        for k, d in enumerate(decoded):
            asm.add(d.spans, (0, k), 0.0)
        ready = asm.pop_ready(0.0)
    traces = [build_trace(a.trace_id, a.spans) for a in ready] if upto >= 3 else []
    if upto >= 4:
        for t in traces:
            t.sampled, t.sampled_reason = sampler.decide(t)
    if upto >= 5:
        encode_traces(traces, "ragpulse.spans")
run(records(10**6, 10**6 + 100), 5)  # warm-up: every code path and cache, on other records
recs = records(0, n)
import gc
gc.freeze()
gc.disable()  # as in `ragpulse collect` (its loop collects every 10 s)
run(recs, upto)
"""


def _instructions(upto: int, traces: int, env: dict[str, str]) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "child.py"
        script.write_text(_CHILD.format(root=str(ROOT)))
        proc = subprocess.run(
            ["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={tmp}/out",
             sys.executable, str(script), str(upto), str(traces)],
            capture_output=True, text=True, env=env, check=False,
        )  # fmt: skip
    found = _IREFS_RE.findall(proc.stderr)
    if proc.returncode != 0 or not found:
        raise RuntimeError(f"valgrind run failed (rc {proc.returncode}):\n{proc.stderr[-2000:]}")
    return int(found[-1].replace(",", ""))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=int, default=300)
    args = ap.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: no instruction counts (apt-get install valgrind)")
        return 0
    spans = sum(4 if i % 3 == 0 else 3 for i in range(args.traces))
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    counts = [_instructions(k, args.traces, env) for k in range(len(STAGES) + 1)]
    py_env = {**env, "RAGPULSE_NATIVE": "0"}
    py_decode = _instructions(1, args.traces, py_env) - _instructions(0, args.traces, py_env)
    from ragpulse.collector.ingest import otlp

    print(f"collector CPU work per span (valgrind instructions; {args.traces} traces, {spans} spans,")
    print("  5 chunks x 300 chars, rerank on every third trace; Kafka fetch and chDB insert excluded)")
    total = 0.0
    for k, stage in enumerate(STAGES, start=1):
        per = (counts[k] - counts[k - 1]) / spans
        total += per
        label = f"{stage} ({otlp.DECODER})" if stage == "decode" else stage
        print(f"  {label:<20}{per:>12,.0f} instructions/span")
    print(f"  {'total':<20}{total:>12,.0f} instructions/span")
    native = (counts[1] - counts[0]) / spans
    print(f"  decode (python, upb){py_decode / spans:>12,.0f} instructions/span  "
          f"(python/{otlp.DECODER} {py_decode / spans / native:.1f}x)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
