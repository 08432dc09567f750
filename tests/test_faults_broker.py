"""Fault: the Kafka broker is stopped for 30 s under traffic and restarted.

Both sides run for real: the application (this process) serves RAG calls
through the agent's Kafka exporter, and a ``ragpulse collect`` process
consumes the topic into chDB. The session's broker is stopped while calls go
on and started again 30 s later on the same ports and data. What the broker
acknowledged is what is in the topic afterwards, so the topic is the
reference: every trace in it must be stored exactly once (FINAL), and every
span the application made must be either exported or counted as dropped.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData
from ragpulse.agent import configure, flush, shutdown, stats

from tests.background import Background
from tests.services import KafkaBroker
from tests.soak_run import scrape
from tests.test_agent_kafka import rag_call, spans_of
from tests.test_collector_kafka import Setup, setup_factory  # noqa: F401 - the fixture
from tests.test_faults_storage import _until

pytestmark = pytest.mark.services

OUTAGE_S = 30.0
SPANS_PER_CALL = 3  # answer -> search, complete
RATE = 40.0  # calls per second


class Traffic(Background):
    """RAG calls at ``RATE`` per second on a thread; every call must return its answer."""

    def __init__(self) -> None:
        super().__init__("fault-traffic")
        self.served = 0
        self.errors: list[BaseException] = []

    def _run(self) -> None:
        t0 = time.monotonic()
        try:
            while not self._stop.wait(max(0.0, t0 + self.served / RATE - time.monotonic())):
                assert rag_call(f"question {self.served}").endswith("[2].")
                self.served += 1
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.errors.append(exc)

    def stop(self) -> None:
        super().stop()
        assert not self.errors, self.errors


def _topic_traces(s: Setup) -> dict[str, set[bytes]]:
    """Trace id -> span ids in the spans topic (records may repeat: delivery is at least once)."""
    out: dict[str, set[bytes]] = {}
    for rec in s.read_topic(s.spans):
        data = TracesData()
        data.ParseFromString(rec.value)
        for span in spans_of(data):
            out.setdefault(span.trace_id.hex(), set()).add(span.span_id)
    return out


def test_broker_stopped_30s_app_serves_drops_counted_acknowledged_stored_once(
    setup_factory: Any,  # noqa: F811 - the fixture imported above
    kafka_broker: KafkaBroker,
) -> None:
    s: Setup = setup_factory(sampling={"rate": 0.0, "rules": []})
    proc = s.collector()
    url = proc.wait_ready()
    configure(
        service_name="fault-app", exporter="kafka", kafka_bootstrap_servers=kafka_broker.bootstrap,
        kafka_topic=s.spans, max_queue_spans=4000,
        kafka_options={"delivery_timeout_ms": 5000, "request_timeout_ms": 2000, "max_block_ms": 200},
    )  # fmt: skip
    base = stats()  # the agent's counters are per process: earlier tests' spans are in them
    traffic = Traffic().start()
    try:
        _until(
            "traces stored before the outage",
            lambda: scrape(url).get("ragpulse_traces_stored_total", 0) >= 40,
            60,
        )
        kafka_broker.stop()
        down_at, served_at_stop = time.monotonic(), traffic.served
        _until("the agent counting drops", lambda: stats()["spans_dropped"] > base["spans_dropped"], OUTAGE_S)
        time.sleep(max(0.0, down_at + OUTAGE_S - time.monotonic()))  # the outage lasts OUTAGE_S by design
        served_in_outage = traffic.served - served_at_stop
        assert proc.alive(), proc.log_tail()
        kafka_broker.start()
        stored_at_restart = scrape(url).get("ragpulse_traces_stored_total", 0)
        _until(
            "traces stored after the restart",
            lambda: scrape(url)["ragpulse_traces_stored_total"] > stored_at_restart + 40,
            90,
        )
    finally:
        traffic.stop()
        flush(timeout_s=30)
        end = stats()
        shutdown()
    final = {k: end[k] - base[k] for k in ("spans_exported", "spans_dropped")}
    final["dropped"] = {k: v - base["dropped"].get(k, 0) for k, v in end["dropped"].items()}
    s.wait_caught_up(proc, timeout=120)
    m = scrape(url)
    rc, _took = proc.terminate()
    assert rc == 0, proc.log_tail()
    print(
        f"\nbroker outage: {traffic.served} calls, {served_in_outage} during the {OUTAGE_S:.0f}s outage; "
        f"spans exported {final['spans_exported']}, dropped {final['dropped']}"
    )
    assert served_in_outage >= RATE * OUTAGE_S * 0.5  # the application kept serving at its pace
    assert final["spans_dropped"] > 0
    assert final["spans_exported"] + final["spans_dropped"] == SPANS_PER_CALL * traffic.served, final
    acked = _topic_traces(s)
    st = s.storage()
    try:
        rows = st.query("SELECT trace_id, span_count FROM {db}.rag_traces FINAL")
        once = st.query("SELECT count(), uniqExact(trace_id) FROM {db}.rag_traces FINAL")[0]
    finally:
        st.close()
    stored = dict(rows)
    assert once[0] == once[1] == len(stored)
    assert set(stored) <= set(acked)
    assert {t: len(acked[t]) for t in stored} == stored  # each stored trace has every acknowledged span
    # What the broker acknowledged but is not a RAG trace (its root span was dropped) is counted.
    unstored = set(acked) - set(stored)
    assert len(unstored) == m.get("ragpulse_traces_dropped_total", 0), (len(unstored), m)
