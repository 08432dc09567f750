"""Re-ask detection: the in-memory session index and when the detector reads storage.

The end-to-end re-ask (agent -> embedded collector -> rag_feedback) is in
tests/test_feedback.py; the eval-loop test counts 30 re-asks among 5,000
traces. Here: the index's bounds (lookback, window, cap, replays), and the
detector against a real chDB: re-asks across batches from memory alone, the
stored window read once after a restart, and other collectors' stored calls
read on every batch while this process owns only part of the topic.
"""

from __future__ import annotations

import random
import time

import pytest
from ragpulse.collector.core.metrics import Metrics
from ragpulse.collector.core.model import RagTrace
from ragpulse.collector.core.text import jaccard, normalize_query, shingles
from ragpulse.collector.feedback.reask import Call, ReaskDetector
from ragpulse.collector.feedback.sessions import (
    Earlier,
    SessionIndex,
    feature_of,
    features,
    may_match,
    sketches,
)
from ragpulse.collector.storage.clickhouse import Storage
from ragpulse.collector.storage.rows import encode_traces

S = 1_000_000_000
T0 = (int(time.time()) - 3600) * S  # recent: older rows would meet the tables' TTL


def _call(n: int, query: str, session: str = "s1", at_s: float = 0.0) -> Call:
    return Call(f"{n:032x}", session, T0 + int(at_s * S), query, "svc")


def _earlier(n: int, at_s: float, query: str = "q") -> Earlier:
    ((size, sig),) = features([normalize_query(query)])
    (sketch,) = sketches([sig])
    return Earlier(T0 + int(at_s * S), f"{n:032x}", "svc", normalize_query(query), size, sig, sketch)


@pytest.fixture()
def storage(chdb_storage):
    return chdb_storage


def _store(storage: Storage, calls: list[Call]) -> None:
    traces = []
    for c in calls:
        t = RagTrace(c.trace_id)
        t.session_id, t.time, t.end_time, t.query, t.service = (
            c.session_id,
            c.time,
            c.time + S,
            c.query,
            c.service,
        )
        traces.append(t)
    storage.insert_encoded_traces(encode_traces(traces))


def _counting(storage: Storage) -> list[str]:
    """Record the SQL of every query ``storage`` runs from now on (the real queries still run)."""
    seen: list[str] = []
    query = storage.query

    def counted(sql, parameters=None):
        seen.append(sql)
        return query(sql, parameters)

    storage.query = counted  # type: ignore[method-assign]
    return seen


def test_index_keeps_the_latest_lookback_calls_before_a_time_within_the_window():
    index = SessionIndex(window_ns=10 * S, lookback=3, max_calls=100)
    for n, at in enumerate([1, 2, 3, 4, 5]):
        index.add("s", _earlier(n, at))
    assert [e.trace_id for e in index.earlier("s", _earlier(9, 5))] == [
        f"{n:032x}" for n in (3, 2)
    ]  # not 5 itself
    assert len(index) == 3  # calls at 1 and 2 s: beyond the lookback
    assert index.earlier("s", _earlier(9, 16)) == []  # 16 s: the latest (5 s) is out of the window
    assert index.earlier("other", _earlier(9, 5)) == []
    index.add("s", _earlier(4, 5))  # the same trace again (a replay): held once
    assert len(index) == 3


def test_index_forgets_sessions_out_of_the_window_and_counts_what_the_cap_drops():
    index = SessionIndex(window_ns=10 * S, lookback=5, max_calls=4)
    index.add("old", _earlier(1, 0))
    index.add("a", _earlier(2, 20))  # 20 s later: "old" can no longer be matched, and goes
    assert len(index) == 1 and index.evicted == 0
    for n in range(3, 7):
        index.add("b", _earlier(n, 21))
    assert len(index) == 4 and index.evicted == 1  # "a", least recently active, made room
    assert index.earlier("a", _earlier(9, 22)) == []


def test_the_signature_bound_never_drops_a_match_and_drops_most_non_matches():
    rng = random.Random(7)
    words = "how long are the logs kept who approves deletion of audit records legal hold".split()
    queries = [" ".join(rng.choice(words) for _ in range(rng.randint(3, 9))) for _ in range(300)]
    queries += [q.replace("o", "0", 1) for q in queries[:100]]  # near-duplicates
    calls = [_earlier(n, 0, q) for n, q in enumerate(queries)]
    matches = dropped = 0
    pairs = [(calls[k], calls[300 + k]) for k in range(100)]
    pairs += [(rng.choice(calls), rng.choice(calls)) for _ in range(20_000)]
    for a, b in pairs:
        exact = jaccard(shingles(a.normalized), shingles(b.normalized)) >= 0.7
        kept = may_match(a, b, 0.7)
        assert kept or not exact, (a.normalized, b.normalized)
        matches += exact
        dropped += not kept
    assert matches > 100 and dropped > 0.8 * (len(pairs) - matches)


def test_the_batch_prefilter_finds_every_reask_the_call_by_call_scan_finds():
    """could_match only skips calls the exact scan would find nothing for: the same re-asks with
    and without it, on streams with near-duplicates, replays, out-of-order times, sessions out of
    the window and a cap small enough to drop sessions mid-batch."""
    rng = random.Random(11)
    words = "how long are the logs kept who approves deletion of audit records legal hold".split()
    base = [" ".join(rng.choice(words) for _ in range(rng.randint(2, 8))) for _ in range(60)]

    def query() -> str:
        q = rng.choice(base)
        return q.replace("o", "0", 1) if rng.random() < 0.3 else q

    def detect_all(prefilter: bool, batches: list[list[Call]]) -> tuple[list[tuple[str, str]], int]:
        detector = ReaskDetector(None, {"window_s": 20, "max_calls": 40}, native=False)  # type: ignore[arg-type]
        detector._loaded = True  # the index alone: no storage behind it
        if not prefilter:
            detector.index.could_match = lambda batch, threshold: [True] * len(batch)  # type: ignore[method-assign]
        rows = [(r["trace_id"], r["feedback_id"]) for b in batches for r in detector.detect(b)]
        return rows, detector.index.evicted

    for trial in range(30):
        calls, at = [], 0.0
        for n in range(400):
            at += rng.expovariate(4.0)
            when = at - rng.uniform(0, 30) if rng.random() < 0.1 else at  # some arrive late
            calls.append(_call(n, query(), f"s{rng.randrange(12)}", when))
        calls += rng.sample(calls, 20)  # replays of calls already seen
        cut = sorted(rng.sample(range(1, len(calls)), 8))
        batches = [calls[lo:hi] for lo, hi in zip([0, *cut], [*cut, len(calls)], strict=True)]
        with_filter, evicted = detect_all(True, batches)
        assert (with_filter, evicted) == detect_all(False, batches), trial
        assert with_filter  # the streams do re-ask


def test_features_in_bulk_equal_features_in_python():
    texts = ["how long are logs kept", "", "a", "ab", "café au lait", "naïve question", "x" * 300, "zz zz zz"]
    bulk = features([normalize_query(t) for t in texts])
    alone = [feature_of(normalize_query(t)) for t in texts]
    assert bulk == alone
    assert [size for size, _ in bulk] == [len(shingles(normalize_query(t))) for t in texts]


def test_reasks_across_batches_come_from_memory_after_one_read(storage):
    detector = ReaskDetector(storage, {"window_s": 300})
    seen = _counting(storage)
    assert (
        detector.detect([_call(1, "How long are logs kept?"), _call(2, "Who approves deletion?", at_s=1)])
        == []
    )
    assert len(seen) == 1  # the stored window, read once
    rows = detector.detect([
        _call(3, "how long are the logs kept", at_s=2),  # re-asks call 1
        _call(4, "How long are logs kept?", session="s2", at_s=3),  # another session
        _call(5, "who approves deletion", at_s=400),  # call 2 is out of the window
    ])  # fmt: skip
    assert len(seen) == 1
    assert [(r["trace_id"], r["feedback_id"], r["kind"], r["source"], r["value"]) for r in rows] == [
        (f"{1:032x}", f"reask:{3:032x}", "reask", "implicit", -1.0)
    ]
    m = Metrics()
    m.read_state_of(None, detector.index)
    # s1 holds calls 1, 2, 3, 5; s2's one call is out of the window of the newest (call 5) and went
    assert "ragpulse_reask_index_calls 4.0" in m.render().decode()


def test_a_restarted_collector_finds_reasks_of_calls_stored_before_it(storage):
    _store(storage, [_call(1, "How long are logs kept?"), _call(2, "Something else entirely", at_s=1)])
    detector = ReaskDetector(storage)  # a new process: nothing in memory
    rows = detector.detect([_call(3, "how long are logs kept", at_s=60), _call(1, "How long are logs kept?")])
    assert [r["trace_id"] for r in rows] == [f"{1:032x}"]  # the replayed call 1 does not re-ask itself


def test_owning_part_of_the_topic_reads_other_collectors_calls_on_every_batch(storage):
    detector = ReaskDetector(storage)
    detector.local = False  # the Kafka loop's view: other processes own the other partitions
    seen = _counting(storage)
    assert detector.detect([_call(1, "Who approves deletion?")]) == []
    _store(storage, [_call(2, "How long are logs kept?", at_s=5)])  # stored by another collector
    rows = detector.detect([_call(3, "how long are the logs kept", at_s=10)])
    assert [r["trace_id"] for r in rows] == [f"{2:032x}"]
    assert len(seen) == 2


def test_reask_detection_off_reads_nothing(storage):
    detector = ReaskDetector(storage, {"enabled": False})
    seen = _counting(storage)
    assert detector.detect([_call(1, "a"), _call(2, "a", at_s=1)]) == []
    assert seen == []


def test_ascii_queries_normalise_as_the_unicode_rule_does():
    """normalize_query's ASCII path (bytes) gives what NFKD, the \\w pattern and split give."""
    import re
    import string
    import unicodedata

    def reference(text: str) -> str:
        folded = unicodedata.normalize("NFKD", text or "").lower()
        return " ".join(re.sub(r"[^\w]+", " ", folded).split())

    rng = random.Random(7)
    texts = ["How long are logs kept? (3)", "a_b c-d e.f", "\x1c\x1dx\ty\n\x0b", "", "__", "  Q2:  20%! "]
    texts += ["".join(rng.choice(string.printable) for _ in range(rng.randint(0, 120))) for _ in range(5_000)]
    texts += ["".join(chr(rng.randint(0, 127)) for _ in range(rng.randint(0, 60))) for _ in range(5_000)]
    for text in texts:
        assert normalize_query(text) == reference(text), repr(text)
    assert normalize_query("Café, naïve?") == "cafe naive"  # the Unicode path folds accents
