"""The pieces the ingest loops share: the batching policy, offset targets, state metrics.

Pure units (no services): what is cut when, which offsets a batch may commit
after a revocation, and that state metrics are read when /metrics is scraped.
The loops that use them run against a real broker in test_collector_kafka.py.
"""

from __future__ import annotations

import urllib.request

import pytest
from ragpulse.collector.core.metrics import Metrics
from ragpulse.collector.ingest.batcher import Batcher
from ragpulse.collector.kafka.offsets import OffsetTracker
from ragpulse.collector.serve.server import MetricsServer


def test_a_batch_is_cut_when_full_or_on_the_timer() -> None:
    b = Batcher(max_traces=8, max_seconds=4.0, now=0.0)
    assert not b.due(100.0, caught_up=True)  # nothing to store, however long it waited
    assert b.due(100.0, caught_up=True, pending=True)  # ...unless other work waits for a batch
    b.add(list(range(7)))
    assert not b.due(1.0, caught_up=False)  # busy: waits for the timer or a full batch
    assert b.due(4.0, caught_up=False)
    b.add([7])
    assert b.due(0.1, caught_up=False)  # full
    assert b.take(2.0) == list(range(8)) and len(b) == 0 and b.last_cut == 2.0


def test_a_caught_up_loop_cuts_sooner() -> None:
    b = Batcher(max_traces=8, max_seconds=4.0, now=0.0)
    b.add([1])
    assert not b.due(0.5, caught_up=True)
    assert b.due(1.0, caught_up=True)  # a quarter of the timer
    b.take(1.0)
    b.add([1, 2])
    assert b.due(1.1, caught_up=True)  # a quarter of a batch
    assert not b.due(1.1, caught_up=False)


def test_offset_targets_hold_back_buffered_records_and_die_with_a_revocation() -> None:
    t = OffsetTracker("spans")
    t.read(0, 41)
    t.read(1, 9)
    assert t.targets({}) == {0: (42, 0), 1: (10, 0)}
    assert t.targets({0: 30}) == {0: (30, 0), 1: (10, 0)}  # offset 30 still feeds a buffered trace
    assert t.next_offset(0) == 42 and t.next_offset(5) is None
    t.committed[1] = 10
    assert t.targets({}) == {0: (42, 0)}  # nothing new on partition 1
    t.revoked({0})
    assert t.epochs[0] == 1 and t.next_offset(0) is None and t.targets({}) == {}
    t.read(0, 50)
    assert t.targets({}) == {0: (51, 1)}  # a target cut before the revocation had epoch 0


def test_state_metrics_are_read_at_scrape_time() -> None:
    metrics = Metrics()
    buffered = [3]

    def lag() -> list[tuple[tuple[str, str], int]]:
        return [(("spans", "0"), 7), (("spans", "1"), 0)]

    def broken() -> float:
        raise RuntimeError("state gone")

    metrics.assembly_buffer.read_from(lambda: buffered[0])
    metrics.consumer_lag.read_from(lag)
    metrics.late_spans.read_from(broken)
    server = MetricsServer(metrics, port=0).start()
    try:
        for value in (3, 11):
            buffered[0] = value
            with urllib.request.urlopen(server.url + "/metrics", timeout=5) as resp:
                text = resp.read().decode()
            assert f"ragpulse_assembly_buffer_traces {value}.0" in text
            assert 'ragpulse_consumer_lag{partition="0",topic="spans"} 7.0' in text
            assert 'ragpulse_consumer_lag{partition="1",topic="spans"} 0.0' in text
            assert "\nragpulse_late_spans_total " not in text  # its reader failed: left out, scrape fine
            assert "ragpulse_spans_received_total 0.0" in text
        metrics.assembly_buffer.read_from(None)  # the loop stopped: no value rather than a stale one
        assert "\nragpulse_assembly_buffer_traces " not in metrics.render().decode()
    finally:
        server.stop()


def test_a_labelled_state_metric_joins_its_sources_and_drops_a_failing_one() -> None:
    metrics = Metrics()

    def broken() -> list[tuple[tuple[str, str], int]]:
        raise RuntimeError("consumer closed")

    metrics.consumer_lag.read_from(lambda: [(("spans", "0"), 7)])  # the ingest loop
    metrics.consumer_lag.read_from(lambda: [(("judge", "0"), 5), (("judge", "1"), 2)], "judge-0")
    metrics.consumer_lag.read_from(broken, "judge-1")
    text = metrics.render().decode()
    assert 'ragpulse_consumer_lag{partition="0",topic="spans"} 7.0' in text
    assert 'ragpulse_consumer_lag{partition="0",topic="judge"} 5.0' in text
    assert 'ragpulse_consumer_lag{partition="1",topic="judge"} 2.0' in text
    metrics.consumer_lag.read_from(None, "judge-0")  # that worker stopped
    metrics.consumer_lag.read_from(None, "")
    assert "\nragpulse_consumer_lag{" not in metrics.render().decode()  # only the failing one is left
    metrics.assembly_buffer.read_from(lambda: 1, "other")
    with pytest.raises(ValueError, match="one source only"):  # unlabelled: one source
        metrics.assembly_buffer.read_from(lambda: 2, "another")
