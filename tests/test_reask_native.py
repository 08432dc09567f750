"""The native re-ask index (``ragpulse_native.ReaskIndex``) finds what the Python reference finds.

The same streams of calls go through a detector on each: near-duplicates at and around the
threshold, replays, calls arriving late, sessions leaving the window, a cap small enough to
drop sessions mid-batch, queries that are not ASCII (normalised by Python for both), queries
that normalise to nothing, lone surrogates, calls loaded from storage (``add_calls``). Rows, the
calls held and the calls evicted must be equal.
"""

from __future__ import annotations

import random

import pytest
from ragpulse.collector.feedback.reask import Call, ReaskDetector

from tests.native_module import require_native

native = require_native(
    "re-ask detection holds and matches calls in Python",
    disabled="RAGPULSE_NATIVE=0: re-ask detection holds and matches calls in Python",
)

S = 1_000_000_000
WORDS = "how long are the logs kept who approves deletion of audit records legal hold".split()
ODD = ["café", "naïve", "Ünïcode", "日本語", "\ud800", "ǅ", "ﬁle", "?!", "", "  ", "a", "_"]


def _stream(rng: random.Random, n: int, sessions: int) -> list[Call]:
    base = [" ".join(rng.choice(WORDS + ODD) for _ in range(rng.randint(0, 8))) for _ in range(50)]
    calls, at = [], 0.0
    for k in range(n):
        q = rng.choice(base)
        r = rng.random()
        if r < 0.2:
            q = q.replace("o", "0", 1)
        elif r < 0.3:
            q = q.upper() + rng.choice(["?", "!!", " .", "\t"])
        elif r < 0.35:
            q = q + " " + rng.choice(WORDS)
        at += rng.expovariate(4.0)
        when = at - rng.uniform(0, 30) if rng.random() < 0.1 else at
        calls.append(Call(f"t{k:05d}", f"s{rng.randrange(sessions)}", int(when * S), q or "?", f"svc{k % 3}"))
    return calls + rng.sample(calls, n // 20)  # replays


def _run(native_index: bool, batches: list[list[Call]], held: list[Call], section: dict) -> tuple:
    detector = ReaskDetector(None, section, native=native_index)  # type: ignore[arg-type]
    if native_index:  # the native index alone, as the boundary holds it (no fallback)
        detector._found = detector._found.native
    detector._loaded = True  # no storage behind it: calls come from the batches and ``held``
    detector.index.add_calls(held)
    rows = [sorted(r.items()) for b in batches for r in detector.detect(b)]
    return rows, detector.index.calls, detector.index.evicted, len(detector.index)


@pytest.mark.parametrize("threshold", [0.5, 0.7, 0.9, 1.0])
def test_native_index_finds_what_the_python_index_finds(threshold):
    rng = random.Random(int(threshold * 100))
    found = 0
    for trial in range(25):
        calls = _stream(rng, 300, rng.choice([3, 12, 40]))
        held, calls = calls[:30], calls[30:]
        cut = sorted(rng.sample(range(1, len(calls)), 6))
        batches = [calls[lo:hi] for lo, hi in zip([0, *cut], [*cut, len(calls)], strict=True)]
        section = {"window_s": rng.choice([5, 20, 300]), "max_calls": rng.choice([15, 40, 100_000]),
                   "threshold": threshold}  # fmt: skip
        python = _run(False, batches, held, section)
        assert _run(True, batches, held, section) == python, (trial, section)
        found += len(python[0])
    assert found > 100  # the streams do re-ask (exact repeats at 1.0)


def test_native_index_is_used_and_checks_its_arguments():
    assert ReaskDetector(None, {}).native  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least 1"):
        native.ReaskIndex(10, 0, 5, str)
    index = native.ReaskIndex(10 * S, 3, 100, str)
    with pytest.raises(TypeError):
        index.add_calls([("t1", "s1", "not a time", "q", "svc")])
    assert index.calls == 0
