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
    groups: dict[tuple[str, str], list[RagTrace]] = {}  # by (service, variant label), in order
    for t in traces:
        v = t.variant
        key = (t.service, label(v) if v else "")
        group = groups.get(key)
        if group is None:
            groups[key] = [t]
        else:
            group.append(t)
    latency: dict[tuple[str, str, str], list[float]] = {}
    for key, group in groups.items():
        _observe_cost(m, key, group)
        for stage, values in (
            (RETRIEVAL, [t.retrieval_ms / 1000.0 for t in group if t.retrieval_ms > 0]),
            (RERANK, [t.rerank_ms / 1000.0 for t in group if t.rerank_ms > 0]),
            (GENERATION, [t.generation_ms / 1000.0 for t in group if t.generation_ms > 0]),
            (TOTAL, [t.latency_ms / 1000.0 for t in group]),
        ):
            if values:
                latency[(*key, stage)] = values
    m.stage_latency.add(latency)


def _observe_cost(m: Metrics, key: tuple[str, str], group: list[RagTrace]) -> None:
    """One label set's cost (added in trace order), priced count and unpriced counts by reason."""
    usd = 0.0
    priced = no_model = unknown = 0
    for t in group:
        c = t.generation_cost_usd
        if c is not None:
            usd += c
            priced += 1
        elif t.model:
            unknown += 1
        else:
            no_model += 1
    if priced:
        m.generation_cost.labels(*key).inc(usd)
        m.generation_priced.labels(*key).inc(priced)
    if unknown:
        m.generation_unpriced.labels(*key, UNKNOWN_MODEL).inc(unknown)
    if no_model:
        m.generation_unpriced.labels(*key, NO_MODEL).inc(no_model)
