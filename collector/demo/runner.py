"""The demo runner behind ``ragpulse demo``: the whole loop on the embedded default, then the quality report.

It serves questions through the demo policy assistant (``ragpulse.policy_rag``,
instrumented only with the public agent API) with the agent's ``embedded``
exporter feeding an in-process :class:`EmbeddedCollector`: assembly, the
sampler, the local judge, chDB on disk and Prometheus metrics on a local port.
Then it prints the report (every number read back from the database), the
judge-versus-truth confusion table, writes the HTML report and says where the
database, the metrics endpoint and the report are. Last it closes the loop
(demo/loop.py): the run's failures are exported into an eval set and two
generator configurations of the app are compared on it with ``ragpulse eval``. ``--serve`` keeps the
metrics endpoint up afterwards for a local Prometheus/Grafana.

A second run adds to the same database; the report covers everything in it.
Ctrl-C while serving stops cleanly: what was served is flushed, stored,
judged and reported, and the exit status is 130.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import tempfile
import threading
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

from ..cli.errors import CliError

__all__ = ["run_demo", "DEFAULT_DB", "SERVICE"]

DEFAULT_DB = "ragpulse-data/demo/chdb"
SERVICE = "policy-assistant"
CORPUS_VERSION = "policies-2026.11"


# -- helpers ----------------------------------------------------------------------------------------


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _counter_total(registry: Any, name: str) -> float:
    """Sum of a counter over all its label sets (prometheus_client public API)."""
    total = 0.0
    for family in registry.collect():
        for sample in family.samples:
            if sample.name == name:
                total += sample.value
    return total


class _Progress:
    """One status line, redrawn in place on a terminal, every 10% otherwise."""

    def __init__(self, total: int, stream: TextIO) -> None:
        self.total, self.stream = total, stream
        self.tty = stream.isatty()
        self.start = time.monotonic()
        self._last_step = -1

    def show(
        self, done: int, stored: float, judged: float, final: bool = False, elapsed: float | None = None
    ) -> None:
        rate = done / max(time.monotonic() - self.start if elapsed is None else elapsed, 1e-9)
        width = 24
        filled = int(width * done / self.total) if self.total else width
        line = (
            f"[{'=' * filled}{' ' * (width - filled)}] {done}/{self.total} questions  {rate:5.0f}/s  "
            f"stored {int(stored)}  judged {int(judged)}"
        )
        if self.tty:
            self.stream.write("\r" + line + ("\n" if final else ""))
            self.stream.flush()
            return
        step = (10 * done) // self.total if self.total else 10
        if final or step != self._last_step:
            self._last_step = step
            self.stream.write(line + "\n")
            self.stream.flush()


def _check_database(db: Path) -> None:
    """Fail fast, in one line, when another process holds the chDB path (the collector would retry)."""
    import clickhouse_connect

    saved = os.dup(2)  # chDB prints its own lock error on fd 2; keep the CLI's error to one line
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            client = clickhouse_connect.get_client(dsn=f"chdb://{db}")
            client.close()
            problem = None
        except Exception as exc:  # noqa: BLE001 - turned into a one-line CliError below
            problem = str(exc)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
    if problem is None:
        return
    if "EmbeddedServer" in problem or "lock" in problem.lower():
        raise CliError(f"database {db} is in use by another process (chDB allows one process per database)")
    raise CliError(f"cannot open database {db}: {problem.splitlines()[0]}")


def _open_collector(args: argparse.Namespace, db: Path) -> tuple[Any, str | None]:
    """Start the embedded collector on ``db`` (after checking no other process holds it)."""
    from ..embedded.collector import EmbeddedCollector

    _check_database(db)
    port = args.metrics_port
    note = None
    if port and not _port_free(port):
        note = f"port {port} is taken; serving metrics on a free port instead"
        port = 0
    from .variants import PRICES

    collector = EmbeddedCollector(
        db,
        config={
            "sampling": {"rate": args.sample_rate, "budget_per_minute": _budget(args)},
            "cost": {"prices": PRICES},
        },
        metrics_port=port,
        judge=args.judge,
    )
    collector.start()
    return collector, note


def _budget(args: argparse.Namespace) -> int | None:
    """The sampler's budget per minute: the flag's, None (unlimited) for 0."""
    return args.budget_per_minute or None


def _show(progress: _Progress, registry: Any, served: int, **final: Any) -> None:
    """The progress line: questions served, traces stored, traces judged."""
    stored = _counter_total(registry, "ragpulse_traces_stored_total")
    progress.show(served, stored, _counter_total(registry, "ragpulse_traces_judged_total"), **final)


class _Ledger:
    """The ground truth of the served answers (``demo_injections`` rows), kept from the app's
    ``on_answer`` callback: which failure the generator injected into the answer of each trace."""

    def __init__(self) -> None:
        self.run_id = uuid.uuid4().hex[:12]
        self.rows: list[dict[str, Any]] = []
        self.current: dict[str, Any] = {}

    def turn(self, req: Any) -> None:
        """The request being answered now."""
        self.current.update(seq=req.seq, template_id=req.template_id, wording=req.wording)

    def record(self, question: str, chunks: list[Any], result: Any) -> None:
        from opentelemetry import trace

        ctx = trace.get_current_span().get_span_context()
        if not ctx.is_valid:
            return
        self.rows.append(
            {
                "trace_id": f"{ctx.trace_id:032x}",
                "time": datetime.now(timezone.utc),
                "run_id": self.run_id,
                "seq": self.current.get("seq", 0),
                "template_id": self.current.get("template_id", ""),
                "wording": self.current.get("wording", ""),
                "injected_mode": result.mode.value,
                "expected_failure_mode": result.expected_failure_mode,
                "expected_abstention_kind": result.expected_abstention_kind or "",
                "detail": result.detail,
            }
        )


def _answerer(args: argparse.Namespace, assistant: Any, ledger: _Ledger, t0: float) -> Any:
    """Answers one chat turn through the app, paced to ``args.rate`` from ``t0``."""

    def ask(req: Any, history: list[dict[str, Any]]) -> str:
        # Arrive like live traffic, so scores over time and the metrics have a time axis.
        if args.rate > 0:
            delay = t0 + req.seq / args.rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        ledger.turn(req)
        return str(
            assistant.answer(req.question, history=history, session_id=req.session_id, user_id=req.user_id)
        )

    return ask


def _serve(args: argparse.Namespace, collector: Any, out: TextIO) -> tuple[int, bool]:
    """Serve ``args.queries`` questions in chat sessions; returns (served, interrupted)."""
    from ragpulse.policy_rag import PolicyAssistant, TrafficModel, load_corpus

    from ... import agent
    from .ids import SeededIds
    from .truth import TRUTH_COLUMNS, TRUTH_TABLE, truth_ddl, truth_rows

    storage = collector.storage
    storage.command(truth_ddl(storage.database))
    ids = SeededIds(args.seed + 8)  # the same trace ids, so the same traces sampled, on every run
    agent.configure(
        service_name=SERVICE, exporter="embedded", corpus_version=CORPUS_VERSION, id_generator=ids
    )
    ledger = _Ledger()
    corpus = load_corpus()
    if args.variants:
        from .variants import VariantRouter

        assistant: Any = VariantRouter(corpus, args.seed, ledger.record)
    else:
        assistant = PolicyAssistant(corpus, seed=args.seed, on_answer=ledger.record)
    traffic = TrafficModel(corpus, seed=args.seed + 4)
    progress = _Progress(args.queries, sys.stderr)
    registry = collector.metrics.registry
    served, interrupted = 0, False
    pace = f" at {args.rate:g}/s" if args.rate > 0 else ""
    print(
        f"Serving {args.queries} questions through the policy assistant{pace}, in chat sessions (Ctrl-C stops) ...",
        file=out,
    )
    out.flush()
    t0 = time.monotonic()
    try:
        for _ in traffic.conversations(args.queries, _answerer(args, assistant, ledger, t0)):
            served += 1
            if served % 10 == 0:
                _show(progress, registry, served)
    except KeyboardInterrupt:
        interrupted = True
        if progress.tty:
            sys.stderr.write("\n")
        print(f"Interrupted: stopping after {served} questions; flushing what was served ...", file=out)
    serve_s = time.monotonic() - t0
    agent.flush(30.0)
    if not collector.flush(timeout=120.0):
        print(
            "warning: the collector did not finish judging within 120 s; the report may be partial", file=out
        )
    _show(progress, registry, served, final=True, elapsed=serve_s)
    storage.insert_rows(TRUTH_TABLE, TRUTH_COLUMNS, truth_rows(ledger.rows))
    return served, interrupted


def run_demo(args: argparse.Namespace) -> int:
    """The ``ragpulse demo`` command."""
    if args.queries < 0:
        raise CliError("--queries must be 0 or more")
    if not 0.0 <= args.sample_rate <= 1.0:
        raise CliError("--sample-rate must be within [0, 1]")
    if args.rate < 0:
        raise CliError("--rate must be 0 (unpaced) or more")
    if args.budget_per_minute < 0:
        raise CliError("--budget-per-minute must be 0 (unlimited) or more")
    if not 0 <= args.metrics_port <= 65535:
        raise CliError("--metrics-port must be within 0..65535")
    db = Path(args.db).expanduser().resolve()
    if db.exists() and not db.is_dir():
        raise CliError(f"--db {db} exists and is not a directory")
    report_path = Path(args.report).expanduser().resolve() if args.report else db.parent / "report.html"
    try:
        db.parent.mkdir(parents=True, exist_ok=True)
        report_path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CliError(f"cannot create {exc.filename}: {exc.strerror}") from None
    out = sys.stdout
    color = out.isatty() and not args.no_color

    started, started_ns = time.monotonic(), time.time_ns()
    collector, note = _open_collector(args, db)
    try:
        if note:
            print(note, file=out)
        served, interrupted = _serve(args, collector, out) if args.queries else (0, False)
        code = _report(collector, db, report_path, served, started, color, out)
        if served and not interrupted and not args.no_eval and code == 0:
            from .loop import LoopFiles, close_the_loop

            code = close_the_loop(collector.storage, started_ns, LoopFiles.beside(db, report_path), out)
        if args.variants:
            _compare(collector, report_path.with_name("compare.html"), out)
        if args.serve and not interrupted:
            _serve_metrics(collector, out)
        return 130 if interrupted else code
    finally:
        collector.stop()


def _report(
    collector: Any, db: Path, report_path: Path, served: int, started: float, color: bool, out: TextIO
) -> int:
    from .report import build_report
    from .report_html import render_html
    from .report_text import render_text
    from .truth import confusion, render_confusion, truth_ddl

    storage = collector.storage
    storage.command(truth_ddl(storage.database))  # report-only runs on a database from elsewhere
    report = build_report(storage.query, database=storage.database)
    table = render_confusion(confusion(storage.query, database=storage.database, judge_id=report.judge_id))
    print("", file=out)
    print(render_text(report, color=color), file=out)
    print("", file=out)
    print(table, file=out)
    report_path.write_text(
        render_html(report, [("Judge vs injected failure modes", table)]), encoding="utf-8"
    )
    print("", file=out)
    print(f"Served {served} questions in {time.monotonic() - started:.1f} s.", file=out)
    print(
        f"Database:         {db}  (chDB; `clickhouse_connect.get_client(dsn='chdb://{db}')` once this exits)",
        file=out,
    )
    metrics = f"{collector.metrics_url}/metrics" if collector.metrics_url else "(disabled)"
    print(f"Metrics endpoint: {metrics}", file=out)
    print(f"HTML report:      {report_path}", file=out)
    return 0


def _compare(collector: Any, html_path: Path, out: TextIO) -> None:
    """The variants' comparison (``ragpulse compare`` on this database), printed and written as HTML."""
    from ..compare.report_html import render_html
    from ..compare.report_text import render_text
    from ..compare.run import CompareError, build_comparison
    from .variants import VARIANTS

    names = [name for name, _, _ in VARIANTS]  # generator-a, the usual generator, is the baseline
    try:
        cmp = build_comparison(collector.storage.query, SERVICE, time.time() - 86400, "24h", variants=names)
    except CompareError as exc:
        print(f"No variant comparison: {exc}", file=out)
        return
    print("", file=out)
    print(render_text(cmp), file=out)
    html_path.write_text(render_html(cmp), encoding="utf-8")
    print(f"Comparison:       {html_path}", file=out)


def _serve_metrics(collector: Any, out: TextIO) -> None:
    """Keep the process (and its metrics endpoint) up until Ctrl-C."""
    print(f"Serving metrics at {collector.metrics_url}/metrics for Prometheus; Ctrl-C stops.", file=out)
    out.flush()
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        print("Stopped.", file=out)
