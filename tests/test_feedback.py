"""Feedback end to end on the embedded path: agent ``feedback()`` -> rag.feedback span -> rag_feedback.

Covers feedback given in the same batch as its call, feedback arriving before
its trace, feedback long after (the trace stored and unjudged: it is queued
for judging with reason rule:feedback), implicit re-asks, and malformed
arguments that never raise into the application.
"""

from __future__ import annotations

import json

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from ragpulse.agent import configure, current_trace_id, feedback, flush, shutdown, stats, trace_rag
from ragpulse.collector.demo.synthetic import make_trace, traces_data
from ragpulse.collector.embedded.collector import EmbeddedCollector
from ragpulse.collector.ingest.otlp import Limits, decode_record

from tests.feedback_app import answer, complete, search

UNSAMPLED = {"sampling": {"rate": 0.0, "rules": [], "budget_per_minute": None}}


@pytest.fixture()
def embedded(tmp_path):
    collector = EmbeddedCollector(tmp_path / "db", config=UNSAMPLED, metrics_port=None).start()
    configure(exporter="embedded", service_name="fb-svc", schedule_delay_ms=20, redact=True)
    yield collector
    shutdown()
    collector.stop()


def _settle(collector: EmbeddedCollector) -> None:
    assert flush(10)
    assert collector.flush(60)


def _feedback_rows(collector: EmbeddedCollector) -> list[tuple]:
    return collector.storage.query(
        "SELECT trace_id, kind, value, label, comment, source, service FROM {db}.rag_feedback FINAL "
        "ORDER BY trace_id, feedback_id"
    )


def _reasons(collector: EmbeddedCollector) -> dict[str, str]:
    rows = collector.storage.query("SELECT trace_id, sampled_reason FROM {db}.rag_judgments FINAL")
    return dict(rows)


def test_feedback_in_the_same_batch_and_long_after(embedded):
    from ragpulse.agent import current_rag

    kept: list[str] = []

    @trace_rag
    def handled(query: str) -> str:
        kept.append(current_trace_id())
        search(query)
        out = complete(query)
        assert current_rag().feedback(-1.0, comment="wrong, mail me at a@b.example")
        return out

    handled("How long are logs kept?")  # feedback in the call's own export batch
    answer("Who approves deletion?")
    _settle(embedded)
    later = embedded.storage.query("SELECT trace_id FROM {db}.rag_traces FINAL WHERE query LIKE 'Who%'")[0][0]
    assert _reasons(embedded) == {kept[0]: "rule:feedback"}  # unsampled trace queued for judging

    assert feedback(later, label="negative", kind="escalation", source="business")  # minutes later
    assert feedback(later, 1.0)
    _settle(embedded)
    rows = _feedback_rows(embedded)
    assert len(rows) == 3
    first = [r for r in rows if r[0] == kept[0]][0]
    assert first[1:4] == ("thumbs", -1.0, "negative") and "[REDACTED:EMAIL]" in first[4]
    assert first[6] == "fb-svc"
    assert {r[1:4] for r in rows if r[0] == later} == {
        ("escalation", None, "negative"),
        ("thumbs", 1.0, "positive"),
    }
    assert _reasons(embedded) == {kept[0]: "rule:feedback", later: "rule:feedback"}
    late = embedded.metrics.registry.get_sample_value("ragpulse_late_spans_total") or 0.0
    assert late == 0.0
    assert (
        embedded.metrics.registry.get_sample_value(
            "ragpulse_feedback_total", {"service": "fb-svc", "kind": "thumbs", "label": "negative"}
        )
        == 1.0
    )


def test_imported_negative_feedback_is_judged_like_live_feedback(tmp_path, capsys):
    """``ragpulse feedback import`` on an embedded database: negative tickets on stored, unjudged
    traces are judged (rule:feedback) exactly as live feedback on the same content is; positive,
    already judged and unknown traces are not; a second import of the file judges nothing."""
    from ragpulse.collector.cli.main import main
    from ragpulse.collector.storage.clickhouse import Storage

    db = tmp_path / "db"
    collector = EmbeddedCollector(db, config=UNSAMPLED, metrics_port=None).start()
    configure(exporter="embedded", service_name="fb-svc", schedule_delay_ms=20)
    try:
        ids = [answer("How long are logs kept?") for _ in range(4)]  # the same call four times
        _settle(collector)
        assert feedback(ids[0], -1.0)  # live: judged by the collector
        _settle(collector)
        assert _reasons(collector) == {ids[0]: "rule:feedback"}
    finally:
        shutdown()
        collector.stop()
    unknown = "ab" * 16
    tickets = tmp_path / "tickets.jsonl"
    tickets.write_text("".join(json.dumps(t) + "\n" for t in [
        {"trace_id": ids[1], "value": -1, "kind": "ticket", "id": "T-1"},
        {"trace_id": ids[2], "label": "Escalated", "id": "T-2"},
        {"trace_id": ids[3], "value": 1, "id": "T-3"},
        {"trace_id": ids[0], "value": -1, "id": "T-4"},  # judged already
        {"trace_id": unknown, "value": -1, "id": "T-5"},
    ]))  # fmt: skip
    assert main(["feedback", "import", str(tickets), "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "imported 5 feedback row(s) (4 negative)" in out
    assert "queued 2 unjudged trace(s) for judging (rule:feedback): judged here by local-" in out
    assert "1 trace(s) with negative feedback are not stored (yet)" in out
    assert main(["feedback", "import", str(tickets), "--db", str(db)]) == 0
    assert "queued" not in capsys.readouterr().out
    storage = Storage(f"chdb://{db}")
    try:
        judged = storage.query(
            "SELECT trace_id, sampled_reason, judge_id, faithfulness, failure_mode, claims_total "
            "FROM {db}.rag_judgments FINAL ORDER BY trace_id"
        )
        (n,) = storage.query("SELECT count() FROM {db}.rag_feedback FINAL")[0]
    finally:
        storage.close()
    by_id = {r[0]: r[1:] for r in judged}
    assert set(by_id) == {ids[0], ids[1], ids[2]} and n == 6
    assert {r[0] for r in by_id.values()} == {"rule:feedback"}
    live = by_id[ids[0]]
    assert by_id[ids[1]] == by_id[ids[2]] == live  # same answer, same chunks: the same judgment


def test_feedback_before_its_trace(embedded):
    synth = make_trace(7, service="early-svc")
    assert feedback(synth.hex, -1.0)
    _settle(embedded)
    assert _feedback_rows(embedded)[0][0] == synth.hex
    spans = decode_record(traces_data([("early-svc", synth.spans)]), Limits()).spans
    assert embedded.submit_decoded(spans)
    _settle(embedded)
    stored = embedded.storage.query("SELECT sampled, sampled_reason FROM {db}.rag_traces FINAL")
    assert stored == [(1, "rule:feedback")]
    assert _reasons(embedded) == {synth.hex: "rule:feedback"}


def test_reask_is_implicit_negative_feedback(embedded):
    answer("How long are logs kept?", session_id="s1")
    answer("how long are the logs kept", session_id="s1")  # re-ask: negative on the first
    answer("Who approves deletion?", session_id="s1")  # a different question
    answer("How long are logs kept?", session_id="s2")  # another session
    _settle(embedded)
    rows = embedded.storage.query(
        "SELECT f.trace_id, f.kind, f.source, t.query, t.session_id FROM {db}.rag_feedback AS f FINAL "
        "JOIN {db}.rag_traces AS t FINAL ON t.trace_id = f.trace_id"
    )
    assert [r[1:] for r in rows] == [("reask", "implicit", "How long are logs kept?", "s1")]


@pytest.mark.parametrize(
    "args, kwargs",
    [
        (("not-a-trace-id", -1.0), {}),
        (("0" * 32, -1.0), {}),
        (("ab" * 16, 5.0), {}),
        (("ab" * 16, float("nan")), {}),
        (("ab" * 16, True), {}),
        (("ab" * 16,), {}),
        (("ab" * 16, -1.0), {"kind": ""}),
        (("ab" * 16, -1.0), {"comment": 42}),
        ((None, -1.0), {}),
        (("ab" * 16, -1.0), {"attributes": {"rag.feedback.kind": "x"}}),
    ],
)
def test_malformed_feedback_is_dropped_and_counted(args, kwargs):
    exporter = InMemorySpanExporter()
    configure(exporter=exporter, service_name="t", schedule_delay_ms=20)
    try:
        before = stats()["feedback_invalid"]
        assert feedback(*args, **kwargs) is False
        assert stats()["feedback_invalid"] == before + 1
        flush(5)
        assert exporter.get_finished_spans() == ()
    finally:
        shutdown()


def test_feedback_span_follows_the_conventions():
    exporter = InMemorySpanExporter()
    configure(exporter=exporter, service_name="t", schedule_delay_ms=20)
    try:
        assert feedback("00-" + "cd" * 16 + "-" + "12" * 8 + "-01", 0.5, kind="rating", attributes={"a": 1})
        flush(5)
        (span,) = exporter.get_finished_spans()
        assert span.name == "rag.feedback"
        assert f"{span.context.trace_id:032x}" == "cd" * 16
        assert f"{span.parent.span_id:016x}" == "12" * 8
        assert dict(span.attributes) == {
            "rag.feedback.kind": "rating",
            "rag.feedback.source": "user",
            "rag.feedback.value": 0.5,
            "rag.feedback.label": "positive",
            "a": 1,
        }
    finally:
        shutdown()
