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

``--loop`` counts the Kafka loop's own work instead, on the same traces as
Kafka record batches (lz4, ``--per-record`` traces per record, one by
default as the agent's exporter writes them): kafka-python unpacking the
fetched batches into consumer records (what ``poll()`` does after the fetch),
the loop taking them (``KafkaCollector._take``: decoding, the fast path,
assembly, offsets), preparing the batch (building what the fast path did not,
sampling) and encoding the rows, on a collector warmed up on other records
(what a process does once, such as reading the model price table on its first
batch, is not counted). Run it with another checkout's interpreter to compare
two versions of the loop on identical work.

Usage: python bench/ingest_instructions.py [--traces 300] [--loop [--per-record N]]
(prints a note and exits 0 when valgrind is not installed).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

__all__ = ["main", "STAGES"]

ROOT = Path(__file__).resolve().parents[1]
_IREFS_RE = re.compile(r"I\s+refs:\s+([\d,]+)")
STAGES = ("decode", "assemble", "build", "sample", "encode")
LOOP_STAGES = ("unpack", "take", "prepare", "encode")

# valgrind resolves the interpreter's symlink, so a child would not see this virtual
# environment: it adds this interpreter's site-packages itself (.pth files included).
_CHILD = """
import random, site, sys
site.addsitedir({site!r})
sys.path.insert(0, {root!r})
from ragpulse.collector.ingest.assemble import Assembler
from ragpulse.collector.ingest.build import build_trace
from ragpulse.collector.config import load_config
from ragpulse.collector.ingest.otlp import Limits, decode_record
from ragpulse.collector.ingest.sampling import Sampler, SamplingPolicy
try:
    from ragpulse.collector.storage.rows import encode_traces
except ImportError:  # a checkout from before storage/rows.py
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


_LOOP_CHILD = """
import random, site, sys, tempfile
site.addsitedir({site!r})
sys.path.insert(0, {root!r})
from kafka.consumer.fetcher import Fetcher
from kafka.record import MemoryRecords
from kafka.record.memory_records import MemoryRecordsBuilder
from kafka.structs import TopicPartition
from ragpulse.collector.config import load_config
from ragpulse.collector.kafka.collector import KafkaCollector
try:
    from ragpulse.collector.storage.rows import encode_traces
except ImportError:  # a checkout from before storage/rows.py
    from ragpulse.collector.storage.clickhouse import encode_traces
from ragpulse.collector.demo.synthetic import make_trace, traces_data
try:  # a checkout whose collector patches kafka-python's record unpacking
    from ragpulse.collector.kafka.records import install
    install()
except ImportError:
    pass

upto, n, per = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
def batches(lo, hi):
    out, offset = [], 0
    traces = [make_trace(i, seed="bench", n_chunks=5, chunk_chars=300, rerank=(i % 3 == 0),
                         rng=random.Random(i)) for i in range(lo, hi)]
    records = [traces_data([(t.service, t.spans) for t in traces[k:k + per]]) for k in range(0, len(traces), per)]
    for k in range(0, len(records), 500):  # ~500 records per batch, like the bench's producer
        b = MemoryRecordsBuilder(2, 3, 1 << 26, offset=offset)
        for r in records[k:k + 500]:
            b.append(1_700_000_000_000, str(offset).encode(), r, [])
            offset += 1
        b.close()
        out.append(b.buffer())
    return out
cfg = load_config(None, overrides={{"storage": {{"dsn": "chdb://" + tempfile.mkdtemp()}},
                                    "sampling": {{"budget_per_minute": None}}}})
tp = TopicPartition("bench", 0)
# One collector for the warm-up and the counted run, as one process serves every batch: what a
# process does once (loading the price table on its first batch) is not a cost per trace.
c = KafkaCollector(cfg, serve_metrics=False)
def run(data, upto):
    records = []
    if upto >= 1:
        for d in data:
            part = Fetcher.PartitionRecords(0, tp, MemoryRecords(d))
            while part:
                records.extend(part.take(500))
    if upto >= 2:
        c._take({{tp: records}}, 0.0)
        got = c.assembler.pop_ready(0.0)
        c.ingestor.build(got)
    traces = c.ingestor.prepare(got) if upto >= 3 else []
    if upto >= 4:
        encode_traces(traces, "bench")
run(batches(10**6, 10**6 + 100), 4)  # warm-up: every code path and cache, on other records
data = batches(0, n)
import gc
gc.freeze()
gc.set_threshold(20_000, 20, 100)  # as in `ragpulse collect`
run(data, upto)
"""


def _instructions(upto: int, traces: int, env: dict[str, str], child: str = _CHILD, *extra: str) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "child.py"
        script.write_text(child.format(root=str(ROOT), site=sysconfig.get_path("purelib")))
        proc = subprocess.run(
            ["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={tmp}/out",
             sys.executable, str(script), str(upto), str(traces), *extra],
            capture_output=True, text=True, env=env, check=False,
        )  # fmt: skip
    found = _IREFS_RE.findall(proc.stderr)
    if proc.returncode != 0 or not found:
        raise RuntimeError(f"valgrind run failed (rc {proc.returncode}):\n{proc.stderr[-2000:]}")
    return int(found[-1].replace(",", ""))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=int, default=300)
    ap.add_argument("--loop", action="store_true", help="count the Kafka loop's work (see above)")
    ap.add_argument("--per-record", type=int, default=1, help="traces per Kafka record (--loop)")
    args = ap.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: no instruction counts (apt-get install valgrind)")
        return 0
    spans = sum(4 if i % 3 == 0 else 3 for i in range(args.traces))
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    if args.loop:
        return _loop_report(args.traces, args.per_record, spans, env)
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


def _loop_report(traces: int, per_record: int, spans: int, env: dict[str, str]) -> int:
    counts = [
        _instructions(k, traces, env, _LOOP_CHILD, str(per_record)) for k in range(len(LOOP_STAGES) + 1)
    ]
    print(f"Kafka loop CPU work per trace (valgrind instructions; {traces} traces, {spans} spans,")
    print(f"  {per_record} trace(s) per record, lz4 batches; {sys.executable})")
    for k, stage in enumerate(LOOP_STAGES, start=1):
        print(f"  {stage:<20}{(counts[k] - counts[k - 1]) / traces:>12,.0f} instructions/trace")
    print(f"  {'total':<20}{(counts[-1] - counts[0]) / traces:>12,.0f} instructions/trace")
    return 0


if __name__ == "__main__":
    sys.exit(main())
