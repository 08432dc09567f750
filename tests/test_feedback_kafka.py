"""Feedback through the agent's Kafka exporter, a real broker and the Kafka collector (``ragpulse collect``).

Feedback given inside the call (same record as its trace: the native fast path
must not fold it into the trace), feedback produced before its trace, and
feedback long after its trace was stored unjudged, all land in rag_feedback;
each unjudged trace is judged with reason rule:feedback.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ragpulse.agent import configure, feedback, flush, shutdown
from ragpulse.collector.demo.synthetic import make_trace, traces_data

from .feedback_app import answer
from .test_collector_kafka import setup_factory  # noqa: F401 - the fixture

pytestmark = pytest.mark.services


def _run_collector(setup: Any) -> None:
    proc = setup.collector("all")
    proc.wait_ready()
    setup.wait_caught_up(proc, judges=True)
    rc, _ = proc.terminate()
    assert rc == 0, proc.log_tail()


def _import_ticket(setup: Any, trace_id: str) -> None:
    """``ragpulse feedback import --judging kafka`` (a separate process, as an operator runs it):
    the trace goes to the judge topic for the collector's judge workers."""
    tickets = setup.tmp / "tickets.jsonl"
    tickets.write_text(json.dumps({"trace_id": trace_id, "value": -1, "kind": "ticket", "id": "T-9"}) + "\n")
    cmd = [str(Path(sys.executable).parent / "ragpulse"), "feedback", "import", str(tickets)]
    res = subprocess.run(
        [*cmd, "--config", str(setup.config_path), "--judging", "kafka"], capture_output=True, text=True, timeout=120
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    assert f"queued 1 unjudged trace(s) for judging (rule:feedback): sent to {setup.judge}" in res.stdout


def test_feedback_through_kafka_lands_before_with_and_long_after(setup_factory):  # noqa: F811
    setup = setup_factory(
        sampling={"rate": 0.0, "rules": [], "budget_per_minute": None}, judge={"enabled": True}
    )
    configure(
        exporter="kafka", kafka_bootstrap_servers=setup.broker.bootstrap, kafka_topic=setup.spans,
        service_name="kfb", schedule_delay_ms=20,
    )  # fmt: skip
    try:
        early = make_trace(1, seed="kfb", service="kfb")
        assert feedback(early.hex, label="negative", kind="escalation")  # before its trace
        assert flush(30)
        with_call = answer("How long are logs kept?", give_feedback=True)
        later = answer("Who approves deletion?")
        ticketed = answer("Which logs are encrypted?")
        assert flush(30)
        producer = setup.producer()
        producer.send(setup.spans, key=early.hex.encode(), value=traces_data([("kfb", early.spans)]))
        producer.flush(30)
        producer.close()
        _run_collector(setup)

        assert feedback(later, -0.5, kind="rating")  # long after: the trace is stored, unjudged
        assert flush(30)
        _import_ticket(setup, ticketed)  # a support ticket on another stored, unjudged trace
        _run_collector(setup)
    finally:
        shutdown()
    storage = setup.storage()
    try:
        fb = storage.query("SELECT trace_id, kind, label FROM {db}.rag_feedback FINAL ORDER BY kind")
        assert sorted(fb) == sorted(
            [
                (early.hex, "escalation", "negative"),
                (with_call, "thumbs", "negative"),
                (later, "rating", "negative"),
                (ticketed, "ticket", "negative"),
            ]
        )
        traces = dict(storage.query("SELECT trace_id, span_count FROM {db}.rag_traces FINAL"))
        assert traces == {
            early.hex: len(early.spans),
            with_call: 3,
            later: 3,
            ticketed: 3,
        }  # nothing folded in
        judged = dict(storage.query("SELECT trace_id, sampled_reason FROM {db}.rag_judgments FINAL"))
        assert judged == dict.fromkeys([early.hex, with_call, later, ticketed], "rule:feedback")
    finally:
        storage.close()
