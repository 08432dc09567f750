"""Per-RAG-call cost of tracing, on the request path and in total: bare OTel, hand-written
OpenInference OTel, ragpulse, Langfuse.

One RAG call = root + retrieval + generation; the retriever returns 10 chunks of 500 characters,
the answer carries two citation markers (``bench/sdk_calls.py``). Variants, measured side by side
in interleaved rounds of the same run:

- ``floor``: the bare OTel SDK opening 3 empty nested spans (``start_as_current_span``),
  TracerProvider + BatchSpanProcessor with an exporter that drops them;
- ``floor-direct``: the same 3 empty spans with ``start_span`` + ``context.attach``
  (no context managers) — informational, the cheapest way to open 3 spans;
- ``otel-manual``: hand-written OTel setting the same data as OpenInference attributes and
  ``rag.citation`` events (parsing the markers on the request path), exporter dropping them;
- ``otel-manual-otlp``: the same, its exporter encoding each batch with the OTel SDK's OTLP
  protobuf encoder (what ``OTLPSpanExporter`` sends) — the like-for-like peer of ragpulse;
- ``ragpulse``: ``@trace_rag`` / ``@retrieval`` / ``@generation``, the agent's own provider and
  its Kafka exporter (OTLP records keyed by trace id) over a producer that writes nowhere;
- ``ragpulse-app``: the same decorators with ``exporter="none"`` under the application's own
  TracerProvider (BatchSpanProcessor, the SDK's OTLP encoder), as teams that already run OTel use
  it: the agent's spans are completed and ended by its thread off the request path;
- ``langfuse``: Langfuse's ``@observe`` (``bench/sdk_langfuse.py``: installed only for this
  benchmark in ``.cache/bench-langfuse``, run in a subprocess), its exporter the SDK's OTLP encoder.

Every processor defers export until the round's calls are timed (long schedule delay, queues
larger than a round). Per call and round: "request µs" is the wall time the application thread
pays (the floor ratios use it); "request CPU" is that thread's own CPU clock; "total CPU" is the
process's CPU clock over the calls and the flush that follows, so it holds the request path and
everything off it (the export thread, the app provider's span thread, a flush run on the caller's
thread); "export CPU" is total minus request CPU. The export CPU of each thread is printed apart
(thread CPU clocks). Verdicts use medians of the per-round figures; the best round (least disturbed
by other load) is printed beside them. Also prints the import time of ``ragpulse.agent``. Timings on
a shared machine are noisy: read the ratios of one run.
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import sdk_calls as calls
from sdk_langfuse import LangfusePeer, ensure_venv

ROOT = Path(__file__).resolve().parent.parent
CALLS_PER_ROUND = int(os.environ.get("BENCH_CALLS", "2000"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "9"))
FIGURES = ("request", "request_cpu", "export_cpu", "total_cpu", "bytes")


class Variant(NamedTuple):
    """One way of tracing the call: the call, the flush after a round, the set-up before one
    (the agent has one configuration at a time) and where its exporter's bytes are counted."""

    call: Callable[[], Any]
    flush: Callable[[], Any]
    setup: Callable[[], Any] | None
    sink: calls.ByteCount | None
    floor: str = "floor"  # the variant opening the same spans empty, that "x floor" divides by


def _deferred_provider(exporter: Any, deferred: int) -> tuple[Any, Any]:
    """A TracerProvider whose BatchSpanProcessor holds ``deferred`` spans and exports only when flushed."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider()
    bsp = BatchSpanProcessor(
        exporter, max_queue_size=deferred, max_export_batch_size=deferred, schedule_delay_millis=3_600_000
    )
    provider.add_span_processor(bsp)
    return provider, bsp


def build_variants() -> dict[str, Variant]:
    deferred = 10 * CALLS_PER_ROUND * 3
    provider, bsp = _deferred_provider(calls.noop_exporter(), deferred)
    tracer = provider.get_tracer("bench")
    sink = calls.ByteCount()
    otlp_provider, otlp_bsp = _deferred_provider(calls.otlp_exporter(sink), deferred)
    variants = {name: Variant(fn, bsp.force_flush, None, None) for name, fn in calls.floors(tracer).items()}
    variants["otel-manual"] = Variant(calls.otel_manual(tracer), bsp.force_flush, None, None)
    manual_otlp = calls.otel_manual(otlp_provider.get_tracer("bench"))
    variants["otel-manual-otlp"] = Variant(manual_otlp, otlp_bsp.force_flush, None, sink)
    agentic_floor = calls.agentic_floor(tracer)
    variants["agentic-floor"] = Variant(agentic_floor, bsp.force_flush, None, None, "agentic-floor")
    return {**variants, **_ragpulse_variants(deferred)}


def _ragpulse_variants(deferred: int) -> dict[str, Variant]:
    """The agent with its own provider and Kafka exporter, and with exporter="none" under an
    application provider that encodes OTLP."""
    from ragpulse.agent import configure, flush

    deferred_agent = {
        "max_queue_spans": deferred,
        "export_batch_spans": deferred,
        "schedule_delay_ms": 3_600_000,
    }
    own_sink, app_sink = calls.ByteCount(), calls.ByteCount()
    app_provider, _ = _deferred_provider(calls.otlp_exporter(app_sink), deferred)

    def own_setup() -> None:
        configure(exporter=calls.kafka_exporter(own_sink), **deferred_agent)

    def app_setup() -> None:
        configure(exporter="none", tracer_provider=app_provider, **deferred_agent)

    call, agentic = calls.ragpulse_call(), calls.ragpulse_agentic()
    return {
        "ragpulse": Variant(call, flush, own_setup, own_sink),
        "ragpulse-app": Variant(call, flush, app_setup, app_sink),
        "agentic-ragpulse": Variant(agentic, flush, own_setup, own_sink, "agentic-floor"),
        "agentic-ragpulse-app": Variant(agentic, flush, app_setup, app_sink, "agentic-floor"),
    }


def thread_cpu() -> dict[int, tuple[str, float]]:
    """Every live thread's CPU clock: ident -> (name, seconds)."""
    out = {}
    for thread in threading.enumerate():
        try:
            out[thread.ident] = (thread.name, time.clock_gettime(time.pthread_getcpuclockid(thread.ident)))
        except (OSError, AttributeError, TypeError):
            continue
    return out


def run_round(variant: Variant, n: int, by_thread: dict[str, list[float]] | None = None) -> dict[str, float]:
    """``n`` calls then the flush; the figures per call (seconds; bytes). ``by_thread`` collects the
    CPU each thread spent off the request path (the caller's thread during the flush included)."""
    if variant.setup is not None:
        variant.setup()
    if variant.sink is not None:
        variant.sink.take()
    gc.collect()
    before = thread_cpu()
    cpu0, thread0, wall0 = time.process_time(), time.thread_time(), time.perf_counter()
    for _ in range(n):
        variant.call()
    wall, thread = time.perf_counter() - wall0, time.thread_time() - thread0
    variant.flush()
    cpu = time.process_time() - cpu0
    if by_thread is not None:
        main = threading.get_ident()
        for ident, (name, end) in thread_cpu().items():
            spent = end - before.get(ident, (name, 0.0))[1] - (thread if ident == main else 0.0)
            by_thread.setdefault("caller (flush)" if ident == main else name, []).append(spent / n)
    sent = variant.sink.take() if variant.sink is not None else 0
    return {
        "request": wall / n,
        "request_cpu": thread / n,
        "export_cpu": (cpu - thread) / n,
        "total_cpu": cpu / n,
        "bytes": sent / n,
    }


def check_captured() -> None:
    """Prove every ragpulse variant captures everything (chunks, answer, citations; history, tool
    results) before timing them."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from ragpulse.agent import configure, flush, shutdown

    own, app = InMemorySpanExporter(), InMemorySpanExporter()
    app_provider = TracerProvider()
    app_provider.add_span_processor(SimpleSpanProcessor(app))
    for mem, options in (
        (own, {"exporter": own}),
        (app, {"exporter": "none", "tracer_provider": app_provider}),
    ):
        configure(**options)
        calls.ragpulse_call()()
        flush()
        spans = {s.name: s for s in mem.get_finished_spans()}
        root, ret = spans["rag"], spans["search"]
        assert (
            root.attributes["output.value"] == calls.ANSWER and root.attributes["input.value"] == calls.QUERY
        )
        assert [e.attributes["rag.citation.document.id"] for e in root.events] == ["C1", "C2"]
        assert all(
            ret.attributes[f"retrieval.documents.{i}.document.content"] == calls.CHUNKS[i]["content"]
            for i in range(10)
        )
        mem.clear()
        calls.ragpulse_agentic()()
        flush()
        _check_agentic(mem.get_finished_spans())
        shutdown()


def _check_agentic(spans: Any) -> None:
    names = sorted(s.name for s in spans)
    assert len(spans) == calls.AGENTIC_SPANS and names.count("search") == 3, names
    root = next(s for s in spans if s.attributes.get("rag.root"))
    assert len(json.loads(root.attributes["gen_ai.input.messages"])) == len(calls.HISTORY)
    assert [e.attributes["rag.citation.document.id"] for e in root.events] == ["A1", "A2"]
    tools = [s for s in spans if s.name.startswith("execute_tool")]
    assert len(tools) == 2 and all("gen_ai.tool.call.result" in s.attributes for s in tools)


def import_time_ms() -> tuple[float, list[str]]:
    """Best of 5 cumulative import times of ragpulse.agent, and forbidden modules it imported."""
    best = float("inf")
    code = "import sys, ragpulse.agent; print([m for m in ('litellm','clickhouse_connect','chdb','prometheus_client') if m in sys.modules])"
    forbidden: list[str] = []
    for _ in range(5):
        out = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, cwd=str(ROOT)
        )
        for line in out.stderr.splitlines():
            parts = [p.strip() for p in line.split("|")]
            if len(parts) == 3 and parts[2] == "ragpulse.agent":
                best = min(best, int(parts[1]) / 1000.0)
        forbidden = json.loads(out.stdout.strip().replace("'", '"'))
    return best, forbidden


def measure(variants: dict[str, Variant], peer: LangfusePeer | None) -> tuple[dict, dict]:
    """Interleaved rounds after one warm-up round each: name -> rounds of figures, and
    name -> thread -> export CPU per call of each round."""
    results: dict[str, list[dict[str, float]]] = {name: [] for name in variants}
    threads: dict[str, dict[str, list[float]]] = {name: {} for name in variants}
    if peer is not None:
        results["langfuse"] = []
    for variant in variants.values():
        run_round(variant, 200)
    if peer is not None:
        peer.round(200)
    for _ in range(ROUNDS):
        for name, variant in variants.items():
            results[name].append(run_round(variant, CALLS_PER_ROUND, threads[name]))
        if peer is not None:
            results["langfuse"].append(peer.round(CALLS_PER_ROUND))
    return results, threads


def _median(rounds: list[dict[str, float]], figure: str) -> float:
    return statistics.median(r[figure] for r in rounds)


def report(
    results: dict[str, list[dict[str, float]]],
    threads: dict[str, dict[str, list[float]]],
    floors: dict[str, str],
) -> dict[str, dict[str, float]]:
    """Print the table and the export CPU by thread; the medians per variant (µs; bytes)."""
    med = {
        name: {f: _median(rounds, f) * (1 if f == "bytes" else 1e6) for f in FIGURES}
        for name, rounds in results.items()
    }
    for name, rounds in results.items():
        med[name]["best"] = min(r["request"] for r in rounds) * 1e6
    print(
        "\nper call; 'rag': root + retrieval + generation, 10 chunks x 500 chars, an answer with 2 citations;"
    )
    print(
        f"'agentic': {calls.AGENTIC_SPANS} spans, a 6-message history, 3 retrievals of 5 chunks, 2 tool calls, "
        "2 generations\n"
        f"{ROUNDS} interleaved rounds x {CALLS_PER_ROUND} calls; python {sys.version.split()[0]}; medians of rounds; "
        "'x floor': against the variant opening the same spans empty\n"
    )
    print(
        f"{'variant':<21}{'request us':>11}{'x floor':>8}{'best':>8}{'x floor':>8}"
        f"{'request CPU':>12}{'x floor':>8}{'export CPU':>11}{'total CPU':>10}{'bytes':>7}"
    )
    for name, m in med.items():
        f = med[floors.get(name, "floor")]
        print(
            f"{name:<21}{m['request']:>11.1f}{m['request'] / f['request']:>8.2f}{m['best']:>8.1f}"
            f"{m['best'] / f['best']:>8.2f}{m['request_cpu']:>12.1f}{m['request_cpu'] / f['request_cpu']:>8.2f}"
            f"{m['export_cpu']:>11.1f}{m['total_cpu']:>10.1f}{m['bytes']:>7.0f}"
        )
    print(
        "\nexport CPU us per call by thread (medians; 'caller (flush)': the flush run on the calling thread)"
    )
    for name, by_thread in threads.items():
        parts = [
            f"{t} {v:.1f}"
            for t, v in ((t, statistics.median(v) * 1e6) for t, v in by_thread.items())
            if v >= 0.5
        ]
        print(f"  {name:<21}{', '.join(parts) or '-'}")
    return med


def _request_verdict(med: dict[str, dict[str, float]], name: str, floor: str, target: float) -> str:
    m, f = med[name], med[floor]
    wall, cpu = m["request"] / f["request"], m["request_cpu"] / f["request_cpu"]
    return (
        f"{name} request path / {floor}: {wall:.2f} wall, {cpu:.2f} thread CPU on medians, "
        f"{m['best'] / f['best']:.2f} wall on best rounds (target <= {target}: "
        f"{'met' if wall <= target else 'NOT met'} on wall, {'met' if cpu <= target else 'NOT met'} on CPU)"
    )


def verdicts(med: dict[str, dict[str, float]]) -> None:
    """The targets: request paths against their floors, total CPU against the like-for-like peer."""
    print()
    print(_request_verdict(med, "ragpulse", "floor", 1.0))
    print(_request_verdict(med, "ragpulse-app", "floor", 1.5))
    print(_request_verdict(med, "agentic-ragpulse", "agentic-floor", 1.0))
    print(_request_verdict(med, "agentic-ragpulse-app", "agentic-floor", 1.0))
    own, peer = med["ragpulse"], med["otel-manual-otlp"]
    ratio = own["total_cpu"] / peer["total_cpu"]
    print(
        f"ragpulse total CPU / hand-written OpenInference OTel with the SDK's OTLP encoder: {own['total_cpu']:.1f} / "
        f"{peer['total_cpu']:.1f} us = {ratio:.2f} (target <= 0.5: {'met' if ratio <= 0.5 else 'NOT met'})"
    )
    if "langfuse" in med:
        speedup = med["langfuse"]["request"] / own["request"]
        print(
            f"langfuse @observe / ragpulse request path: {speedup:.1f}x on medians (target >= 5: "
            f"{'met' if speedup >= 5 else 'NOT met'}); {med['langfuse']['best'] / own['best']:.1f}x on best rounds; "
            f"total CPU {med['langfuse']['total_cpu'] / own['total_cpu']:.1f}x"
        )


def main() -> int:
    import_ms, forbidden = import_time_ms()  # first, before the rounds load the machine
    check_captured()
    variants = build_variants()
    python, reason = ensure_venv()
    peer = None
    if python is not None:
        try:
            peer = LangfusePeer(python, CALLS_PER_ROUND)
        except Exception as exc:  # noqa: BLE001
            reason = str(exc)
    try:
        results, threads = measure(variants, peer)
    finally:
        if peer is not None:
            peer.close()
    verdicts(report(results, threads, {name: v.floor for name, v in variants.items()}))
    if peer is None:
        print(f"langfuse: NOT MEASURED ({reason})")
    print(
        f"import ragpulse.agent: {import_ms:.1f} ms cumulative (target < 150: {'met' if import_ms < 150 else 'NOT met'}); "
        f"collector modules imported: {forbidden or 'none'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
