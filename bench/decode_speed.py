"""OTLP protobuf decode speed: the native decoder against the pure-Python one.

Decodes the same records with both decoders in one process, alternating
rounds so that load from other processes on the machine hits both alike, and
prints CPU microseconds per span, spans per CPU second and the ratio. The
records are those of bench/ingest_throughput.py: collector/demo/synthetic.py
make_trace with 5 chunks of 300 characters, a reranker on every third trace,
one trace per record (about 3.3 spans and 5 KB per record). The time includes
creating the Span objects, attribute dicts and event tuples. Without the
native module (or with RAGPULSE_NATIVE=0) only the Python figures print.

Usage: .venv/bin/python bench/decode_speed.py [--traces 3000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ragpulse.collector.demo.synthetic import make_trace, traces_data  # noqa: E402
from ragpulse.collector.ingest import otlp  # noqa: E402
from ragpulse.collector.ingest.otlp import Limits, decode_otlp_proto, decode_otlp_proto_py  # noqa: E402


def records(n: int) -> tuple[list[bytes], int]:
    """``n`` one-trace records shaped like bench/ingest_throughput.py's, and their span count."""
    out = []
    spans = 0
    for i in range(n):
        t = make_trace(
            i, seed="bench", n_chunks=5, chunk_chars=300, rerank=(i % 3 == 0), rng=random.Random(i)
        )
        spans += len(t.spans)
        out.append(traces_data([(t.service, t.spans)]))
    return out, spans


def cpu_seconds(decode, recs: list[bytes], limits: Limits) -> float:
    """Process CPU time to decode every record once."""
    t0 = time.process_time()
    for r in recs:
        decode(r, limits)
    return time.process_time() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    print(otlp.decoder_description())
    recs, nspans = records(args.traces)
    limits = Limits()
    nbytes = sum(len(r) for r in recs)
    print(f"{len(recs)} records, {nspans} spans, {nbytes / len(recs):.0f} bytes/record")
    decoders = [("python", decode_otlp_proto_py)]
    if otlp.DECODER == "native":
        decoders.append(("native", decode_otlp_proto))
        a = decode_otlp_proto_py(recs[0], limits).spans
        b = decode_otlp_proto(recs[0], limits).spans
        assert [vars_of(s) for s in a] == [vars_of(s) for s in b], "decoders disagree"
    best = {name: float("inf") for name, _ in decoders}
    total = {name: 0.0 for name, _ in decoders}
    for _ in range(args.rounds):
        for name, fn in decoders:
            t = cpu_seconds(fn, recs, limits)
            best[name] = min(best[name], t)
            total[name] += t
    print(f"{'decoder':8} {'us/span (best)':>15} {'us/span (mean)':>15} {'spans/CPU-s (best)':>19}")
    for name in best:
        mean = total[name] / args.rounds
        print(
            f"{name:8} {best[name] / nspans * 1e6:15.2f} {mean / nspans * 1e6:15.2f} "
            f"{nspans / best[name]:19,.0f}"
        )
    if "native" not in best:
        print("native decoder not active: no ratio")
        return
    print(
        f"ratio python/native: {best['python'] / best['native']:.1f}x (best), "
        f"{total['python'] / total['native']:.1f}x (mean)"
    )


def vars_of(s: object) -> tuple:
    return tuple(getattr(s, k) for k in s.__slots__)  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
