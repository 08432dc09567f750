"""Sessions end to end: agent turns with a session id -> embedded collector -> local judge -> chDB views
-> the session metrics on the collector's /metrics.

Four conversations are served through the public agent API into a real embedded collector
(the local judge, chDB): one whose flagged turn the user re-asks, one that ends on a flagged
turn (abandoned), one that goes on after a flagged turn, one clean. The ``rag_sessions`` and
``rag_session_turns`` views give each session's figures; the metrics count a session only once
it has ended (a clock moved past the re-ask window), once, whatever the number of reads; the
collector's own /metrics serves the families labelled by service alone.
"""

from __future__ import annotations

import urllib.request

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from ragpulse.agent import configure, flush, shutdown
from ragpulse.collector.embedded.collector import EmbeddedCollector
from ragpulse.collector.export.criteria import DEFAULTS
from ragpulse.collector.sessions.metrics import StoreSessionMetrics
from ragpulse.collector.sessions.store import SessionStore
from ragpulse.collector.storage.clickhouse import Storage

from tests.chat_app import chat_app, serve_conversations

SERVICE = "chat-svc"
CHUNKS = [
    {"id": "C1", "content": "Transaction logs are kept for five years.", "score": 0.9},
    {"id": "C2", "content": "Deleting logs early requires releasing every legal hold.", "score": 0.8},
]
GOOD = {
    "How long are transaction logs kept?": "Transaction logs are kept for five years [1].",
    "What does deleting logs early require?": "Deleting logs early requires releasing every legal hold [2].",
}
#: Answers the judge flags (a changed number: contradicted, failure mode generation).
BAD = {q: a.replace("five", "two").replace("every legal hold", "no legal hold") for q, a in GOOD.items()}
Q1, Q2 = GOOD
# (session, question, answer) in the order served
TURNS = [
    ("s-reask", Q1, GOOD[Q1]),
    ("s-reask", Q2, BAD[Q2]),
    ("s-reask", "what does deleting logs early require", GOOD[Q2]),  # the user asks the flagged turn again
    ("s-abandon", Q2, GOOD[Q2]),
    ("s-abandon", Q1, BAD[Q1]),  # the last turn, flagged: abandoned once the window has passed
    ("s-continue", Q1, BAD[Q1]),
    ("s-continue", Q2, GOOD[Q2]),  # another question: the conversation went on
    ("s-clean", Q1, GOOD[Q1]),
]
S = 1_000_000_000


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):
    config = {"sampling": {"rate": 1.0}, "session_metrics": {"refresh_s": 0.001}}
    collector = EmbeddedCollector(tmp_path_factory.mktemp("sessions") / "db", config=config).start()
    configure(exporter="embedded", service_name=SERVICE, schedule_delay_ms=20)
    try:
        serve_conversations(chat_app(CHUNKS), TURNS)
        assert flush(10) and collector.flush(60)
        yield collector
    finally:
        shutdown()
        collector.stop()


def _figures(storage: Storage) -> dict[str, tuple]:
    rows = storage.query(
        "SELECT session_id, turns, judged_turns, flagged_turns, flagged_reasked, last_turn_flagged "
        "FROM {db}.rag_sessions WHERE service = %(s)s",
        {"s": SERVICE},
    )
    return {r[0]: tuple(int(x) for x in r[1:]) for r in rows}


def test_the_views_give_each_sessions_turns_flags_and_reasks(served: EmbeddedCollector) -> None:
    assert _figures(served.storage) == {
        # turns, judged, flagged, flagged then re-asked, last turn flagged
        "s-reask": (3, 3, 1, 1, 0),
        "s-abandon": (2, 2, 1, 0, 1),
        "s-continue": (2, 2, 1, 0, 0),
        "s-clean": (1, 1, 0, 0, 0),
    }
    store = SessionStore(served.storage)
    turns = store.turns(SERVICE, "s-reask")
    assert [(t.query, t.flagged, t.reasked) for t in turns] == [
        (Q1, False, False),
        (Q2, True, True),
        ("what does deleting logs early require", False, False),
    ]
    assert turns[1].failure_mode == "generation" and turns[1].answer == BAD[Q2]
    assert store.session_of(turns[1].trace_id) == (SERVICE, "s-reask")


def test_a_flagged_turn_is_what_the_exports_default_criteria_call_failing(served: EmbeddedCollector) -> None:
    """The view's one definition, against the export's default failure modes and false refusals."""
    modes = ", ".join(f"'{m}'" for m in DEFAULTS["failure_modes"])
    rows = served.storage.query(
        "SELECT t.trace_id, t.flagged, j.failure_mode IN ("
        + modes
        + ") OR j.abstention_kind = 'false_refusal' "
        "FROM {db}.rag_session_turns AS t INNER JOIN (SELECT * FROM {db}.rag_judgments FINAL "
        "WHERE error = '') AS j ON j.trace_id = t.trace_id"
    )
    assert len(rows) == len(TURNS)
    assert all(bool(flagged) == bool(failing) for _, flagged, failing in rows)
    assert sum(bool(f) for _, f, _ in rows) == 3


def _samples(metrics: StoreSessionMetrics) -> dict[tuple[str, tuple], float]:
    registry = CollectorRegistry()
    registry.register(metrics)
    text = generate_latest(registry).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
    }


def _session_times(storage: Storage) -> tuple[int, int]:
    lo, hi = storage.query(
        "SELECT toUnixTimestamp64Nano(min(time)), toUnixTimestamp64Nano(max(time)) FROM {db}.rag_traces FINAL"
    )[0]
    return int(lo), int(hi)


def test_sessions_are_counted_once_when_they_have_ended(served: EmbeddedCollector) -> None:
    first, last = _session_times(served.storage)
    now = [last / S + 1.0]
    metrics = StoreSessionMetrics(
        SessionStore(served.storage), window_s=300, settle_s=60, refresh_s=0, clock=lambda: now[0]
    )
    svc = (("service", SERVICE),)
    before = _samples(metrics)  # within the window: nothing has ended, four sessions are active
    assert before[("ragpulse_sessions_active", svc)] == 4
    assert before[("ragpulse_session_turns_count", svc)] == 0
    assert before[("ragpulse_session_flagged_turns_total", (*svc, ("then", "abandoned")))] == 0

    now[0] = last / S + 300 + 60 + 1  # the window and the settling time have passed
    for _ in range(3):  # however often it is read, each session counts once
        after = _samples(metrics)
    assert after[("ragpulse_sessions_active", svc)] == 0
    assert after[("ragpulse_session_turns_count", svc)] == 4
    assert after[("ragpulse_session_turns_sum", svc)] == len(TURNS)
    assert after[("ragpulse_session_turns_bucket", (("le", "1.0"), *svc))] == 1
    assert after[("ragpulse_session_turns_bucket", (("le", "2.0"), *svc))] == 3
    assert after[("ragpulse_session_turns_bucket", (("le", "3.0"), *svc))] == 4
    assert after[("ragpulse_session_judged_turns_total", svc)] == len(TURNS)
    for then in ("reasked", "abandoned", "continued"):
        assert after[("ragpulse_session_flagged_turns_total", (*svc, ("then", then)))] == 1, then
    assert after[("ragpulse_sessions_flagged_total", svc)] == 3
    assert metrics.watermark > last


def test_the_collectors_metrics_serve_the_session_families_by_service(served: EmbeddedCollector) -> None:
    assert served.metrics_url
    with urllib.request.urlopen(served.metrics_url + "/metrics", timeout=10) as resp:
        text = resp.read().decode()
    labels: dict[str, set[str]] = {}
    values: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name.startswith(("ragpulse_session", "ragpulse_sessions")):
                labels.setdefault(s.name, set()).update(s.labels)
                values[s.name] = values.get(s.name, 0.0) + s.value
    assert set(labels) == {
        "ragpulse_session_turns_bucket", "ragpulse_session_turns_count", "ragpulse_session_turns_sum",
        "ragpulse_session_judged_turns_total", "ragpulse_session_flagged_turns_total",
        "ragpulse_sessions_flagged_total", "ragpulse_sessions_active",
    }  # fmt: skip
    assert all(names <= {"service", "then", "le"} for names in labels.values())  # never a session id
    assert values["ragpulse_sessions_active"] == 4  # the sessions have not ended in this run


def test_a_failed_store_read_leaves_the_families_out_and_retries() -> None:
    metrics = StoreSessionMetrics(SessionStore(Storage("http://127.0.0.1:9/")), refresh_s=0)
    assert not [k for k in _samples(metrics) if k[0].startswith("ragpulse_session")]
    assert metrics.reader.reads == 1 and not metrics.refresh() and metrics.reader.reads == 2


def test_the_views_are_created_again_on_an_older_database(served: EmbeddedCollector) -> None:
    """schema apply is idempotent and brings the views to a database made before them."""
    storage = served.storage
    before = _figures(storage)
    for view in ("rag_sessions", "rag_session_turns"):
        storage.command(f"DROP VIEW {storage.database}.{view}")
    with pytest.raises(Exception, match="rag_sessions"):
        storage.query("SELECT count() FROM {db}.rag_sessions")
    storage.apply_schema()
    storage.apply_schema()
    assert _figures(storage) == before
