"""observe_served against a trace-by-trace reading of what it counts.

The served metrics are added per (service, variant label) group; this test reads the same
figures one trace at a time (cost added in trace order, an unpriced trace counted by its
reason, a stage observed only when it ran, the total always) and compares every sample the
registry exposes, floats exactly.
"""

from __future__ import annotations

import random
from collections import defaultdict

from ragpulse.collector.core.metrics import Metrics
from ragpulse.collector.core.model import RagTrace
from ragpulse.collector.core.variants import VariantLabels
from ragpulse.collector.ingest.cost import NO_MODEL, UNKNOWN_MODEL
from ragpulse.collector.ingest.served import observe_served

_FAMILIES = (
    "ragpulse_generation_cost_usd",
    "ragpulse_generation_priced",
    "ragpulse_generation_unpriced",
    "ragpulse_stage_latency_seconds",
)


def _traces(rng: random.Random, n: int) -> list[RagTrace]:
    out = []
    for i in range(n):
        t = RagTrace(f"{i:032x}")
        t.service = rng.choice(["rag-app", "other-app"])
        t.variant = rng.choice(["", "", "a", "b", *(f"v{k}" for k in range(15))])
        t.model = rng.choice(["", "gpt-x", "m1"])
        t.generation_cost_usd = rng.choice([None, rng.random() / 7, 0.0]) if t.model else None
        t.retrieval_ms = rng.choice([0.0, rng.random() * 300])
        t.rerank_ms = rng.choice([0.0, 0.0, rng.random() * 40])
        t.generation_ms = rng.choice([0.0, rng.random() * 3000])
        t.latency_ms = rng.random() * 4000
        out.append(t)
    return out


def _samples(m: Metrics) -> dict[tuple, float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in m.registry.collect()
        if f.name in _FAMILIES
        for s in f.samples
        if not s.name.endswith("_created")
    }


def _reference(m: Metrics, traces: list[RagTrace]) -> None:
    """One trace at a time, as the metrics were first written."""
    cost: dict[tuple, float] = {}
    priced: dict[tuple, int] = defaultdict(int)
    unpriced: dict[tuple, int] = defaultdict(int)
    latency: dict[tuple, list[float]] = defaultdict(list)
    for t in traces:
        key = (t.service, m.variants.label(t.variant))
        if t.generation_cost_usd is None:
            unpriced[(*key, UNKNOWN_MODEL if t.model else NO_MODEL)] += 1
        else:
            cost[key] = cost.get(key, 0.0) + t.generation_cost_usd
            priced[key] += 1
        for stage, ms in (
            ("retrieval", t.retrieval_ms),
            ("rerank", t.rerank_ms),
            ("generation", t.generation_ms),
        ):
            if ms > 0:
                latency[(*key, stage)].append(ms / 1000.0)
        latency[(*key, "total")].append(t.latency_ms / 1000.0)
    m.stage_latency.add(latency)
    for key, usd in cost.items():
        m.generation_cost.labels(*key).inc(usd)
    for key, n in priced.items():
        m.generation_priced.labels(*key).inc(n)
    for key, n in unpriced.items():
        m.generation_unpriced.labels(*key).inc(n)


def test_served_metrics_equal_the_trace_by_trace_reading() -> None:
    rng = random.Random(11)
    for batch in range(6):
        traces = _traces(rng, rng.choice([1, 7, 400]))
        got = Metrics(VariantLabels.from_config({"labels": {"max_values": 6}}))
        want = Metrics(VariantLabels.from_config({"labels": {"max_values": 6}}))
        observe_served(got, traces)
        _reference(want, traces)
        assert _samples(got) == _samples(want), batch
        assert got.variants.overflowed == want.variants.overflowed  # one label call per trace with a variant
        assert any(k[0].endswith("_bucket") for k in _samples(got))


def test_nothing_served_adds_nothing() -> None:
    m = Metrics(VariantLabels.from_config(None))
    before = _samples(m)
    observe_served(m, [])
    assert _samples(m) == before
