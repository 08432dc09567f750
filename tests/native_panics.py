"""Scenarios tests/test_native_boundary.py runs in a fresh process with native panics injected.

``RAGPULSE_NATIVE_TEST_PANIC`` is read when ``ragpulse_native`` is imported, so each scenario
runs as ``python -m tests.native_panics SCENARIO [ARG]`` with the variable set, and prints
one JSON object as its last line of output:

* ``entry_points``: each entry point's native function alone raises (what it raised, and
  whether that is an ``Exception``), and the boundary's answer equals the reference's, on
  real requests (tests/data/fuzz/otlp/);
* ``reask_lock``: the native re-ask index after a panic while it held its lock: emptied,
  then usable, and finding what a fresh Python index finds;
* ``collector DB START``: an embedded collector storing real requests, one trace per batch
  (so re-asks span batches), their first span moved to START (ns); the rows of rag_traces
  and rag_feedback it stored.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ragpulse.agent.conventions import RERANKER_OUTPUT_DOCUMENTS, RETRIEVAL_DOCUMENTS
from ragpulse.collector.core import native
from ragpulse.collector.core.text import normalize_query
from ragpulse.collector.feedback.reask import Call
from ragpulse.collector.feedback.sessions import SessionIndex
from ragpulse.collector.ingest import build, documents, otlp
from ragpulse.collector.ingest.build import build_trace
from ragpulse.collector.ingest.otlp import Limits, decode_record, split_by_trace
from ragpulse.collector.storage import rows

from tests.otlp_parity import canon, outcome

SEEDS = Path(__file__).resolve().parent / "data" / "fuzz" / "otlp"
S = 1_000_000_000
PREFIXES = (RETRIEVAL_DOCUMENTS, RERANKER_OUTPUT_DOCUMENTS)


def _requests() -> list[bytes]:
    return [p.read_bytes() for p in sorted(SEEDS.glob("*.bin"))]


def _raised(fn: Any, *args: Any) -> dict[str, Any]:
    """What ``fn(*args)`` raised: its type's name and whether it is an ``Exception``."""
    try:
        fn(*args)
    except BaseException as exc:  # noqa: BLE001 - a PanicException is what this looks for
        return {"raised": type(exc).__name__, "exception": isinstance(exc, Exception)}
    return {"raised": None, "exception": False}


def _chunks(chunks: list[Any]) -> Any:
    return canon([[getattr(c, k) for k in type(c).__slots__] for c in chunks])


def entry_points() -> dict[str, Any]:
    """Per entry point: what its native function raised, and whether the boundary answered
    every real request as the reference does."""
    limits = Limits()
    out: dict[str, Any] = {}
    data = _requests()
    spans = [s for d in data for s in decode_record(d, limits).spans]
    traces = [
        build_trace(t, [s for s in spans if s.trace_id == t]) for t in sorted({s.trace_id for s in spans})
    ]
    roots = [s for s in spans if s.events]
    fns = {
        "decode_traces": (otlp.decode_otlp_proto, [(d, limits) for d in data],
                          lambda fn, *a: outcome(fn, *a)),
        "flattened_documents": (documents._flattened, [(s.attrs, p) for s in spans for p in PREFIXES],
                                lambda fn, *a: _chunks(fn(*a))),
        "citation_events": (build._citations, [(r,) for r in roots],
                            lambda fn, *a: canon([[c.doc_id, c.marker, c.start, c.end] for c in fn(*a)])),
        "encode_rows": (rows._encoder(), [(traces, "ragpulse.spans")], lambda fn, *a: fn(*a)),
    }  # fmt: skip
    for name, (entry, inputs, result) in fns.items():
        out[name] = _raised(entry.native, *inputs[0])
        out[name]["inputs"] = len(inputs)
        out[name]["same"] = all(result(entry, *a) == result(entry.reference, *a) for a in inputs)
    reask = native.native_function("ReaskIndex")(60 * S, 20, 1000, normalize_query)
    calls = [Call("t1", "s1", S, "How long are logs kept?", "svc")]
    out["ReaskIndex"] = _raised(reask.detect, calls, 0.7)
    out["panics"] = native.panics()
    out["test_panics"] = list(native.native_module().TEST_PANICS)
    return out


def _stream() -> list[list[Call]]:
    """Batches of calls in two sessions with re-asks inside a batch and across batches."""
    q = [
        "How long are logs kept?",
        "how long are the logs kept",
        "Who approves deletion?",
        "LOGS kept how long",
    ]
    b1 = [Call(f"a{k}", "s1", (k + 1) * S, q[k % 4], "svc") for k in range(4)]
    b2 = [Call(f"b{k}", "s2", (k + 1) * S, q[(k + 1) % 4], "svc") for k in range(4)]
    b3 = [Call(f"c{k}", s, (10 + k) * S, text, "svc") for k, (s, text) in enumerate(
        [("s1", q[1]), ("s2", q[2]), ("s1", q[0]), ("s2", q[2].upper())])]  # fmt: skip
    return [b1, b2, b3]


def reask_lock() -> dict[str, Any]:
    """The native index with ``add_calls`` panicking (after it held and changed its state)."""
    index = native.native_function("ReaskIndex")(60 * S, 20, 1000, normalize_query)
    b1, b2, b3 = _stream()
    first = [list(f) for f in index.detect(b1, 0.7)]
    first_py = [list(f) for f in SessionIndex(60 * S, 20, 1000).detect(b1, 0.7)]
    held_before = index.calls
    panicked = _raised(index.add_calls, b2)
    held_after = index.calls
    after = [list(f) for f in index.detect(b3, 0.7)]
    after_py = [list(f) for f in SessionIndex(60 * S, 20, 1000).detect(b3, 0.7)]
    again = _raised(index.add_calls, b2)
    return {
        "first": first, "first_py": first_py, "held_before": held_before, "panicked": panicked,
        "held_after": held_after, "after": after, "after_py": after_py, "again": again,
        "held_last": index.calls,
    }  # fmt: skip


def collector(db: str, start: str) -> dict[str, Any]:
    """The rows an embedded collector stores from the real requests, one trace per batch, their
    times moved to begin at ``start`` (recent: the table has a TTL)."""
    from ragpulse.collector.embedded.collector import EmbeddedCollector

    limits = Limits()
    records = [rec for d in _requests() for _, rec in split_by_trace(d)]
    decoded = [decode_record(rec, limits).spans for rec in records]
    shift = int(start) - min(s.start for spans in decoded for s in spans)
    config = {"feedback": {"reask": {"window_s": 300}}}
    with EmbeddedCollector(db, config=config, metrics_port=None, judge=None, install_sink=False) as c:
        for spans in decoded:
            for s in spans:
                s.start, s.end = s.start + shift, s.end + shift
                s.events = [(name, ts + shift, ea) for name, ts, ea in s.events]
            assert c.submit_decoded(spans)
            assert c.flush(60)
        stored = c.storage.query("SELECT * EXCEPT ingested_at FROM {db}.rag_traces FINAL ORDER BY trace_id")
        feedback = c.storage.query(
            "SELECT * EXCEPT ingested_at FROM {db}.rag_feedback FINAL ORDER BY trace_id, feedback_id"
        )
    return {
        "traces": [repr(r) for r in stored], "feedback": [repr(r) for r in feedback],
        "reasks": sum("reask" in r for r in feedback), "panics": native.panics(),
        "implementation": native.implementation(),
    }  # fmt: skip


if __name__ == "__main__":
    scenario, *rest = sys.argv[1:]
    result = {"entry_points": entry_points, "reask_lock": reask_lock, "collector": collector}[scenario](*rest)
    print(json.dumps(result, default=str))
