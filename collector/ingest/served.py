"""Per-variant cost and stage-latency metrics of freshly decided traces (judged or not).

Counted once per trace, at its first sampling decision (a replayed trace re-uses
its stored decision and is not counted again). Counters are added up per batch;
histograms take one observation per stage the trace has (a stage that did not
run, e.g. no reranker, is not observed as 0 ms, which would pull its quantiles
down); ``total`` is the root span's latency. Latencies are added per batch
(:class:`..serve.batch_histogram.BatchHistogram`).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.metrics import Metrics
from ..core.model import RagTrace
from .cost import NO_MODEL, UNKNOWN_MODEL

__all__ = ["observe_served"]

RETRIEVAL, RERANK, GENERATION, TOTAL = "retrieval", "rerank", "generation", "total"


def observe_served(m: Metrics, traces: Sequence[RagTrace]) -> None:
    """Add ``traces`` to the generation cost, priced/unpriced and stage-latency metrics."""
    if not traces:
        return
    label = m.variants.label
    cost: dict[tuple[str, str], float] = {}
    priced: dict[tuple[str, str], int] = {}
    unpriced: dict[tuple[str, str, str], int] = {}
    latency: dict[tuple[str, str, str], list[float]] = {}
    for t in traces:
        key = (t.service, label(t.variant))
        if t.generation_cost_usd is None:
            ukey = (*key, UNKNOWN_MODEL if t.model else NO_MODEL)
            unpriced[ukey] = unpriced.get(ukey, 0) + 1
        else:
            cost[key] = cost.get(key, 0.0) + t.generation_cost_usd
            priced[key] = priced.get(key, 0) + 1
        for stage, ms in ((RETRIEVAL, t.retrieval_ms), (RERANK, t.rerank_ms), (GENERATION, t.generation_ms)):
            if ms > 0:
                latency.setdefault((*key, stage), []).append(ms / 1000.0)
        latency.setdefault((*key, TOTAL), []).append(t.latency_ms / 1000.0)
    m.stage_latency.add(latency)
    for key, usd in cost.items():
        m.generation_cost.labels(*key).inc(usd)
    for key, n in priced.items():
        m.generation_priced.labels(*key).inc(n)
    for ukey, n in unpriced.items():
        m.generation_unpriced.labels(*ukey).inc(n)
