"""Per-RAG-call cost of tracing: bare OTel floor, hand-written OpenInference OTel, ragpulse, Langfuse.

One RAG call = root + retrieval + generation; the retriever returns 10 chunks
of 500 characters, the answer carries two citation markers. Variants, measured
side by side in interleaved rounds of the same run:

- ``floor``: the bare OTel SDK opening 3 empty nested spans
  (``start_as_current_span``), TracerProvider + BatchSpanProcessor with a no-op exporter;
- ``floor-direct``: the same 3 empty spans with ``start_span`` + ``context.attach``
  (no context managers) — informational, the cheapest way to open 3 spans;
- ``otel-manual``: hand-written OTel setting the same data as OpenInference attributes
  and ``rag.citation`` events (parsing the markers on the request path);
- ``ragpulse``: ``@trace_rag`` / ``@retrieval`` / ``@generation``, own provider, no-op exporter;
- ``ragpulse-app``: the same decorators with ``exporter="none"`` under the application's own
  TracerProvider (BatchSpanProcessor, no-op exporter), as teams that already run OTel use it:
  the agent's spans are completed and ended by its thread off the request path;
- ``langfuse``: Langfuse's ``@observe`` (installed only for this benchmark in
  ``.cache/bench-langfuse``, a separate venv, run in a subprocess driven round by
  round from here), with a no-op span exporter so nothing leaves the process.

Every processor defers export until the round is timed (long schedule delay,
queues larger than a round), so "request µs" is what the application thread
pays per call; "export µs" is the per-call CPU the export thread then spends
(materialising, redaction off, no network), reported so nothing is hidden.
The verdicts use the medians of the per-round figures; the best round of each
variant (least disturbed by other load) is printed beside them. Also prints
the import time of ``ragpulse.agent``. Timings on a shared machine are noisy: read the ratios.
"""

from __future__ import annotations

import gc
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LANGFUSE_VENV = ROOT / ".cache" / "bench-langfuse"
LANGFUSE_SPEC = "langfuse==5.0.4"
CALLS_PER_ROUND = int(os.environ.get("BENCH_CALLS", "2000"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "9"))

CHUNKS = [
    {
        "id": f"C{i}",
        "content": (f"Chunk {i}: retention policy text " * 40)[:500],
        "score": round(0.95 - i * 0.05, 3),
        "metadata": {"status": "current", "source": f"policy-{i}.md"},
    }
    for i in range(1, 11)
]
ANSWER = "Transaction logs are kept for five years [1]. Early deletion needs all legal holds released [2]."
QUERY = "How long are transaction logs kept, and when may they be deleted early?"


# ---------------------------------------------------------------------------------------------
# The Langfuse peer: this same file runs as a subprocess inside the Langfuse venv.
# ---------------------------------------------------------------------------------------------
def langfuse_worker() -> None:
    """Serve 'run N' / 'quit' on stdin; reply with request and export µs per call as JSON."""
    from langfuse import Langfuse, observe
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class NoopExporter(SpanExporter):
        def export(self, spans):
            return SpanExportResult.SUCCESS

    client = Langfuse(
        public_key="pk-lf-bench",
        secret_key="sk-lf-bench",
        base_url="http://127.0.0.1:9",
        span_exporter=NoopExporter(),
        flush_at=10 * CALLS_PER_ROUND * 3,
        flush_interval=3600,
    )

    @observe(as_type="retriever")
    def search(query):
        return CHUNKS

    @observe(as_type="generation")
    def complete(prompt):
        return ANSWER

    @observe()
    def rag(query):
        search(query)
        return complete(query)

    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        cmd = line.split()
        if not cmd or cmd[0] == "quit":
            break
        n = int(cmd[1])
        gc.collect()
        start = time.perf_counter()
        for _ in range(n):
            rag(QUERY)
        request = (time.perf_counter() - start) / n
        start = time.perf_counter()
        client.flush()
        export = (time.perf_counter() - start) / n
        print(json.dumps({"request": request, "export": export}), flush=True)
    client.shutdown()


def ensure_langfuse_venv() -> tuple[Path | None, str]:
    """The Langfuse venv's python (created on first use), or None and the reason."""
    python = LANGFUSE_VENV / "bin" / "python"
    check = [str(python), "-c", "import langfuse"]
    if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return python, ""
    print(f"installing {LANGFUSE_SPEC} into {LANGFUSE_VENV} (benchmark only) ...", flush=True)
    steps = [
        [sys.executable, "-m", "venv", str(LANGFUSE_VENV)],
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", LANGFUSE_SPEC],
    ]
    for step in steps:
        result = subprocess.run(step, capture_output=True, text=True)
        if result.returncode != 0:
            lines = (result.stderr or result.stdout or "install failed").strip().splitlines()
            return None, lines[-1] if lines else "install failed"
    return python, ""


class LangfusePeer:
    """A persistent subprocess in the Langfuse venv, asked for one round at a time."""

    def __init__(self, python: Path):
        env = {k: v for k, v in os.environ.items() if not k.startswith("LANGFUSE_")}
        env["OTEL_SDK_DISABLED"] = "false"
        # Langfuse's BatchSpanProcessor takes its queue size from the standard variable.
        env["OTEL_BSP_MAX_QUEUE_SIZE"] = str(10 * CALLS_PER_ROUND * 3)
        self.proc = subprocess.Popen(
            [str(python), str(Path(__file__).resolve()), "--langfuse-worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=str(ROOT),
        )
        ready = self.proc.stdout.readline()
        if not ready:
            raise RuntimeError(f"langfuse worker failed: {self.proc.stderr.read()[-2000:]}")

    def round(self, n: int) -> tuple[float, float]:
        self.proc.stdin.write(f"run {n}\n")
        self.proc.stdin.flush()
        reply = json.loads(self.proc.stdout.readline())
        return reply["request"], reply["export"]

    def close(self) -> None:
        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.flush()
            self.proc.wait(timeout=30)
        except Exception:  # noqa: BLE001
            self.proc.kill()
            self.proc.wait()


# ---------------------------------------------------------------------------------------------
# In-process variants
# ---------------------------------------------------------------------------------------------
def _otel_manual(tracer):
    """The same three spans instrumented by hand with the OTel API: what ragpulse's decorators replace."""
    marker = re.compile(r"\[(\d+)\]")

    def otel_manual():
        with tracer.start_as_current_span("rag") as root:
            root.set_attribute("openinference.span.kind", "CHAIN")
            root.set_attribute("rag.root", True)
            root.set_attribute("input.value", QUERY)
            with tracer.start_as_current_span("retrieval") as ret:
                chunks = CHUNKS
                ret.set_attribute("openinference.span.kind", "RETRIEVER")
                ret.set_attribute("gen_ai.operation.name", "retrieval")
                ret.set_attribute("input.value", QUERY)
                ret.set_attribute("gen_ai.request.top_k", 10)
                for i, c in enumerate(chunks):
                    p = f"retrieval.documents.{i}.document."
                    ret.set_attribute(p + "id", c["id"])
                    ret.set_attribute(p + "content", c["content"])
                    ret.set_attribute(p + "score", c["score"])
                    ret.set_attribute(p + "metadata", json.dumps(c["metadata"]))
            with tracer.start_as_current_span("generation") as gen:
                answer = ANSWER
                gen.set_attribute("openinference.span.kind", "LLM")
                gen.set_attribute("gen_ai.operation.name", "chat")
                gen.set_attribute("gen_ai.request.model", "gpt-bench")
                gen.set_attribute("gen_ai.provider.name", "openai")
                gen.set_attribute("gen_ai.usage.input_tokens", 1200)
                gen.set_attribute("gen_ai.usage.output_tokens", 40)
                gen.set_attribute("output.value", answer)
            root.set_attribute("output.value", answer)
            count = 0
            for m in marker.finditer(answer):
                start = answer.rfind(". ", 0, m.start()) + 1
                root.add_event(
                    "rag.citation",
                    {
                        "rag.citation.document.id": chunks[int(m.group(1)) - 1]["id"],
                        "rag.citation.marker": m.group(0),
                        "rag.citation.answer.start": start,
                        "rag.citation.answer.end": m.start(),
                    },
                )
                count += 1
            root.set_attribute("rag.citation.count", count)

    return otel_manual


def _ragpulse_app():
    """The benchmark's RAG call instrumented with the agent's decorators (after configure())."""
    from ragpulse.agent import generation, retrieval, trace_rag

    @retrieval
    def search(query: str, top_k: int = 10):
        return CHUNKS

    @generation(model="gpt-bench", provider="openai")
    def complete(prompt: str):
        return ANSWER

    @trace_rag
    def rag(query: str):
        search(query)
        return complete(query)

    return rag


def _deferred_provider(exporter, deferred: int):
    """A TracerProvider whose BatchSpanProcessor holds ``deferred`` spans and exports only when flushed."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider()
    bsp = BatchSpanProcessor(
        exporter,
        max_queue_size=deferred,
        max_export_batch_size=deferred,
        schedule_delay_millis=3_600_000,
    )
    provider.add_span_processor(bsp)
    return provider, bsp


def build_variants():
    from opentelemetry import context as context_api
    from opentelemetry import trace as trace_api
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class NoopExporter(SpanExporter):
        def export(self, spans):
            return SpanExportResult.SUCCESS

    deferred = 10 * CALLS_PER_ROUND * 3
    provider, bsp = _deferred_provider(NoopExporter(), deferred)
    tracer = provider.get_tracer("bench")

    def floor():
        with tracer.start_as_current_span("rag"):
            with tracer.start_as_current_span("retrieval"):
                pass
            with tracer.start_as_current_span("generation"):
                pass

    set_span = trace_api.set_span_in_context
    attach, detach = context_api.attach, context_api.detach

    def floor_direct():
        root = tracer.start_span("rag")
        token = attach(set_span(root))
        for name in ("retrieval", "generation"):
            child = tracer.start_span(name)
            inner = attach(set_span(child))
            detach(inner)
            child.end()
        detach(token)
        root.end()

    otel_manual = _otel_manual(tracer)

    def bsp_flush():
        bsp.force_flush()

    return {
        "floor": (floor, bsp_flush, None),
        "floor-direct": (floor_direct, bsp_flush, None),
        "otel-manual": (otel_manual, bsp_flush, None),
        **_ragpulse_variants(NoopExporter, deferred),
    }


def _ragpulse_variants(noop_exporter: type, deferred: int) -> dict:
    """The agent's two variants: its own provider, and exporter="none" under an application provider.

    name -> (one call, flush after the round, set-up before the round): the agent has one
    configuration at a time, so each variant configures it before its rounds.
    """
    from ragpulse.agent import configure, flush

    deferred_agent = {
        "max_queue_spans": deferred,
        "export_batch_spans": deferred,
        "schedule_delay_ms": 3_600_000,
    }
    app_provider, _ = _deferred_provider(noop_exporter(), deferred)

    def own_setup():
        configure(exporter=noop_exporter(), **deferred_agent)

    def app_setup():
        configure(exporter="none", tracer_provider=app_provider, **deferred_agent)

    rag = _ragpulse_app()

    def ragpulse_call():
        rag(QUERY)

    return {"ragpulse": (ragpulse_call, flush, own_setup), "ragpulse-app": (ragpulse_call, flush, app_setup)}


def run_round(fn, flush_fn, n: int, setup=None) -> tuple[float, float]:
    if setup is not None:
        setup()
    gc.collect()
    start = time.perf_counter()
    for _ in range(n):
        fn()
    request = (time.perf_counter() - start) / n
    start = time.perf_counter()
    flush_fn()
    export = (time.perf_counter() - start) / n
    return request, export


def check_captured() -> None:
    """Prove both ragpulse variants capture everything (chunks, answer, citations) before timing them."""
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
        rag = _ragpulse_app()
        rag(QUERY)
        flush()
        spans = {s.name: s for s in mem.get_finished_spans()}
        root, ret = spans["rag"], spans["search"]
        assert root.attributes["output.value"] == ANSWER and root.attributes["input.value"] == QUERY
        assert [e.attributes["rag.citation.document.id"] for e in root.events] == ["C1", "C2"]
        assert all(
            ret.attributes[f"retrieval.documents.{i}.document.content"] == CHUNKS[i]["content"]
            for i in range(10)
        )
        shutdown()


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


def main() -> int:
    import_ms, forbidden = import_time_ms()  # first, before the rounds load the machine
    check_captured()
    variants = build_variants()
    python, reason = ensure_langfuse_venv()
    peer = None
    if python is not None:
        try:
            peer = LangfusePeer(python)
        except Exception as exc:  # noqa: BLE001
            reason = str(exc)
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
    if peer is not None:
        results["langfuse"] = []
    # Warm up every variant once.
    for fn, flush_fn, setup in variants.values():
        run_round(fn, flush_fn, 200, setup)
    if peer is not None:
        peer.round(200)
    try:
        for _ in range(ROUNDS):
            for name, (fn, flush_fn, setup) in variants.items():
                results[name].append(run_round(fn, flush_fn, CALLS_PER_ROUND, setup))
            if peer is not None:
                results["langfuse"].append(peer.round(CALLS_PER_ROUND))
    finally:
        if peer is not None:
            peer.close()

    med = {name: statistics.median(r for r, _ in rounds) * 1e6 for name, rounds in results.items()}
    best = {name: min(r for r, _ in rounds) * 1e6 for name, rounds in results.items()}
    exp = {name: statistics.median(e for _, e in rounds) * 1e6 for name, rounds in results.items()}
    floor = med["floor"]
    print("\nper RAG call (root + retrieval + generation; 10 chunks x 500 chars; answer with 2 citations)")
    print(f"{ROUNDS} interleaved rounds x {CALLS_PER_ROUND} calls; python {sys.version.split()[0]}\n")
    head = f"{'variant':<14}{'median us/call':>16}{'x floor':>9}{'best round':>12}{'x floor':>9}{'export us/call':>16}"
    print(head)
    for name in results:
        print(
            f"{name:<14}{med[name]:>16.1f}{med[name] / floor:>9.2f}"
            f"{best[name]:>12.1f}{best[name] / best['floor']:>9.2f}{exp[name]:>16.1f}"
        )
    if "langfuse" not in results:
        print(f"{'langfuse':<14}{'NOT MEASURED':>16}  ({reason})")
    ratio = med["ragpulse"] / floor
    verdict = "met" if ratio <= 1.25 else "NOT met"
    print(
        f"\nragpulse / floor (3 empty spans): {ratio:.2f} on medians (target <= 1.25: {verdict}); "
        f"{best['ragpulse'] / best['floor']:.2f} on best rounds"
    )
    ratio = med["ragpulse-app"] / floor
    verdict = "met" if ratio <= 1.5 else "NOT met"
    print(
        f"ragpulse-app (exporter='none', the application's provider) / floor: {ratio:.2f} on medians "
        f"(target <= 1.5: {verdict}); {best['ragpulse-app'] / best['floor']:.2f} on best rounds; "
        f"hand-written OpenInference OTel / floor: {med['otel-manual'] / floor:.2f}"
    )
    if "langfuse" in results:
        speedup = med["langfuse"] / med["ragpulse"]
        verdict = "met" if speedup >= 5 else "NOT met"
        print(
            f"langfuse @observe / ragpulse: {speedup:.1f}x on medians (target >= 5: {verdict}); "
            f"{best['langfuse'] / best['ragpulse']:.1f}x on best rounds"
        )
    ms = import_ms
    print(
        f"import ragpulse.agent: {ms:.1f} ms cumulative (target < 150: {'met' if ms < 150 else 'NOT met'}); "
        f"collector modules imported: {forbidden or 'none'}"
    )
    return 0


if __name__ == "__main__":
    if "--langfuse-worker" in sys.argv:
        langfuse_worker()
    else:
        sys.exit(main())
