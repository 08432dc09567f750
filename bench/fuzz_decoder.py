"""The coverage-guided fuzzer's long run: the native OTLP decoder against the Python reference.

Runs tests/fuzz_otlp.py (atheris, libFuzzer) for ``--minutes`` (or ``--runs`` inputs) on
mutations of the seed corpus in tests/data/fuzz/otlp/, and prints what libFuzzer reports:
executions, their rate, coverage (``cov``: code edges reached, ``ft``: features), the corpus
it grew, then the crashes and the mismatches (inputs on which the two decoders decide or
decode differently). Exits 1 when there is either.

``--native-coverage`` (the default where cargo exists) first builds the native module with
LLVM's coverage counters (sancov: 8-bit edge counters and comparison tracing, for this crate
only, into native/target/fuzz) and runs the fuzzer on that build, so that libFuzzer is
guided by the Rust decoder's branches as well as the Python decoder's; without it the
installed module runs and only the Python code guides it.

``--write-corpus`` writes the seeds instead: requests the OTel SDK's OTLP exporter encoding
(``encode_spans``, what ``OTLPSpanExporter`` sends) of spans the agent recorded from the
policy assistant (examples/policy_rag: sessions with re-asks, feedback, a variant,
non-ASCII questions, a failed call), and records of the ingest bench's traffic
(collector/demo/synthetic.py, as bench/ingest_throughput.py makes them).

Usage: .venv/bin/python bench/fuzz_decoder.py [--minutes 10] [--runs N] [--no-native-coverage]
                                             [--seed N] [--work DIR]
       .venv/bin/python bench/fuzz_decoder.py --write-corpus
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SEEDS = ROOT / "tests" / "data" / "fuzz" / "otlp"
FUZZ_TARGET_DIR = ROOT / "native" / "target" / "fuzz"
# LLVM's coverage instrumentation for the crate alone (its dependencies stay plain): the
# counters and comparison hooks atheris's libFuzzer reads (the flags cargo-fuzz passes).
SANCOV = [
    "-C", "passes=sancov-module",
    "-C", "llvm-args=-sanitizer-coverage-level=3",
    "-C", "llvm-args=-sanitizer-coverage-inline-8bit-counters",
    "-C", "llvm-args=-sanitizer-coverage-pc-table",
    "-C", "llvm-args=-sanitizer-coverage-trace-compares",
]  # fmt: skip


# Questions the agent records, per session: a re-ask (the same question reworded), a
# different one, non-ASCII text; the last call of a session gives negative feedback.
SESSIONS = {
    "s-retention": ["How long are audit logs kept?", "how long are the audit logs kept", "Who approves deletion?"],
    "s-unicode": ["Combien de temps les journaux sont-ils conservés ? ✓", "監査ログの保存期間は？"],
    "": ["What is the legal hold procedure?"],
}  # fmt: skip


def agent_requests() -> list[tuple[str, bytes]]:
    """OTLP requests as the OTel SDK's exporter encodes them, of the agent's spans of the
    policy assistant answering :data:`SESSIONS` (one request per session) and a failed call."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from ragpulse.agent import configure, current_rag, flush, shutdown, trace_rag
    from ragpulse.policy_rag import PolicyAssistant

    app = PolicyAssistant(variant="b", config={"retriever": "bm25", "top_k": "3"})

    @trace_rag
    def ask(question: str, session_id: str = "", unhappy: bool = False) -> str:
        answer = app.generate(question, app.retrieve(question))
        if unhappy:
            current_rag().feedback(-1.0, comment="not what I asked")
        return answer

    @trace_rag
    def broken(question: str) -> str:
        app.retrieve(question)
        raise RuntimeError("the generator timed out")

    exporter = InMemorySpanExporter()
    configure(exporter=exporter, service_name="policy-assistant", schedule_delay_ms=10)
    out = []
    try:
        for k, (session, questions) in enumerate(SESSIONS.items()):
            for i, q in enumerate(questions):
                unhappy = i == len(questions) - 1
                ask(q, session_id=session, unhappy=unhappy) if session else ask(q, unhappy=unhappy)
            assert flush(10)
            out.append(
                (f"agent-session-{k}", encode_spans(exporter.get_finished_spans()).SerializeToString())
            )
            exporter.clear()
        try:
            broken("What does the retention schedule say?")
        except RuntimeError:
            pass
        assert flush(10)
        out.append(("agent-error", encode_spans(exporter.get_finished_spans()).SerializeToString()))
    finally:
        shutdown()
    return out


def bench_records() -> list[tuple[str, bytes]]:
    """Records of the ingest bench's traffic (collector/demo/synthetic.py): one trace, a reranked
    one, a refusal and an error, and several traces of two services in shared resources."""
    from ragpulse.collector.demo.synthetic import make_trace, traces_data

    def trace(i: int, **kw: object) -> tuple[str, list]:
        t = make_trace(i, seed="bench", n_chunks=5, chunk_chars=300, rng=random.Random(i), **kw)  # type: ignore[arg-type]
        return t.service, t.spans

    return [
        ("bench-trace", traces_data([trace(1)])),
        ("bench-rerank", traces_data([trace(3, rerank=True)])),
        ("bench-refusal-error", traces_data([trace(4, refusal=True), trace(5, error=True)])),
        ("bench-shared-resources", traces_data(
            [trace(6), trace(7, service="other-app"), trace(8), trace(9, service="other-app", feedback="negative")],
            shared_resource=True)),
    ]  # fmt: skip


def write_corpus() -> list[Path]:
    """Write the seed requests into tests/data/fuzz/otlp/ (replacing the .bin files there)."""
    SEEDS.mkdir(parents=True, exist_ok=True)
    for old in SEEDS.glob("*.bin"):
        old.unlink()
    written = []
    for name, data in [*agent_requests(), *bench_records()]:
        path = SEEDS / f"{name}.bin"
        path.write_bytes(data)
        written.append(path)
    return written


def build_native_coverage() -> Path:
    """Build the native module with coverage counters; returns a folder to put first on the
    module path (holding it as ``ragpulse_native``)."""
    cmd = ["cargo", "rustc", "--lib", "--release", "--target-dir", str(FUZZ_TARGET_DIR), "--", *SANCOV]
    subprocess.run(cmd, cwd=ROOT / "native", check=True)
    folder = FUZZ_TARGET_DIR / "module"
    folder.mkdir(exist_ok=True)
    shutil.copyfile(FUZZ_TARGET_DIR / "release" / "libragpulse_native.so", folder / "ragpulse_native.abi3.so")
    return folder


# libFuzzer's line per corpus change and atheris's per instrumented module: kept, not shown.
_QUIET = re.compile(r"#\d+\s+(NEW|REDUCE)\s|INFO: Instrumenting ")


def run(
    seconds: int | None, runs: int | None, module_dir: Path | None, work: Path, seed: int | None
) -> tuple[int, str]:
    """Run the fuzzer; returns its exit status and its output (also streamed to stdout)."""
    artifacts, corpus = work / "artifacts", work / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    flags = ["-print_final_stats=1", "-timeout=20", "-rss_limit_mb=4096"]
    if seed is not None:
        flags.append(f"-seed={seed}")
    flags.append(f"-max_total_time={seconds}" if seconds else f"-runs={runs}")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(module_dir or ""), str(ROOT)])))
    env.pop("RAGPULSE_NATIVE", None)
    env.pop("RAGPULSE_NATIVE_TEST_PANIC", None)
    cmd = [sys.executable, "-m", "tests.fuzz_otlp", str(artifacts), *flags, str(corpus), str(SEEDS)]
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    lines = []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line)
        if not _QUIET.match(line):
            sys.stdout.write(line)
    return proc.wait(), "".join(lines)


def summary(status: int, output: str, work: Path) -> dict[str, object]:
    """The figures of a run: from libFuzzer's last status line and final stats, and the files."""
    last = [m for m in re.finditer(r"^#(\d+)\s+\w+\s+cov: (\d+) ft: (\d+) corp: (\d+)/(\S+)", output, re.M)]
    stats = dict(re.findall(r"^stat::(\w+):\s+(\d+)", output, re.M))
    artifacts = work / "artifacts"
    files = [p.name for p in artifacts.iterdir()] if artifacts.exists() else []
    return {
        "executions": int(stats.get("number_of_executed_units", last[-1].group(1) if last else 0)),
        "exec_per_s": int(stats.get("average_exec_per_sec", 0)),
        "cov": int(last[-1].group(2)) if last else 0,
        "ft": int(last[-1].group(3)) if last else 0,
        "corpus": f"{last[-1].group(4)}/{last[-1].group(5)}" if last else "?",
        "new_units": int(stats.get("new_units_added", 0)),
        "peak_rss_mb": int(stats.get("peak_rss_mb", 0)),
        "crashes": sum(n.startswith(("crash-", "timeout-", "oom-", "leak-")) for n in files),
        "mismatches": sum(n.startswith("mismatch-") for n in files),
        "exit_status": status,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=10.0, help="how long to fuzz (default 10)")
    ap.add_argument("--runs", type=int, default=None, help="a number of inputs instead of a time")
    ap.add_argument("--native-coverage", action=argparse.BooleanOptionalAction, default=None,
                    help="build the native module with coverage counters (default: where cargo exists)")  # fmt: skip
    ap.add_argument("--seed", type=int, default=None, help="libFuzzer's random seed (default: a new one)")
    ap.add_argument("--work", type=Path, default=None, help="keep the grown corpus and artifacts here")
    ap.add_argument("--write-corpus", action="store_true", help="write the seed corpus and exit")
    args = ap.parse_args()
    if args.write_corpus:
        for path in write_corpus():
            print(f"{path.relative_to(ROOT)}: {path.stat().st_size} bytes")
        return 0
    native_coverage = (
        args.native_coverage if args.native_coverage is not None else bool(shutil.which("cargo"))
    )
    module_dir = build_native_coverage() if native_coverage else None
    work = args.work or Path(tempfile.mkdtemp(prefix="ragpulse-fuzz-"))
    seconds = None if args.runs else max(1, round(args.minutes * 60))
    started = time.monotonic()
    status, output = run(seconds, args.runs, module_dir, work, args.seed)
    figures = summary(status, output, work)
    print(f"\nfuzz_decoder: {time.monotonic() - started:.0f} s, native coverage "
          f"{'on' if native_coverage else 'off'}, seeds {len(list(SEEDS.glob('*.bin')))}, work {work}")  # fmt: skip
    for key, value in figures.items():
        print(f"  {key}: {value}")
    return 0 if status == 0 and not figures["crashes"] and not figures["mismatches"] else 1


if __name__ == "__main__":
    sys.exit(main())
