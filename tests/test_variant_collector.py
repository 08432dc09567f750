"""Variants through the collector: ``variant`` stored in rag_traces, rag_judgments and rag_claims,
generation cost per trace (configured prices, litellm's map, NULL and counted when unknown), the
bounded ``variant`` label, and sampling stratified by variant.

The traces are synthetic OTLP spans fed to the real embedded collector (assembly, sampler, local
judge, chDB); the label-bound checks feed 10,000 distinct variants through the ingest core.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from ragpulse.collector.core.metrics import Metrics
from ragpulse.collector.core.variants import OTHER, VariantLabels
from ragpulse.collector.demo.synthetic import make_trace, traces_data
from ragpulse.collector.embedded.collector import EmbeddedCollector
from ragpulse.collector.ingest.assemble import Assembled
from ragpulse.collector.ingest.cost import Pricing
from ragpulse.collector.ingest.otlp import Limits, decode_record
from ragpulse.collector.ingest.pipeline import Ingestor
from ragpulse.collector.ingest.sampling import SamplingPolicy
from ragpulse.collector.storage.clickhouse import Storage

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

MINUTE = 60_000_000_000
T0 = (time.time_ns() // MINUTE - 10) * MINUTE  # a minute boundary ten minutes ago (inside the TTL)


def _spans(i: int, **kw: Any) -> list[Any]:
    t = make_trace(i, **kw)
    return decode_record(traces_data([(t.service, t.spans)]), Limits()).spans


def _label_values(metrics: Metrics, family: str) -> set[str]:
    return {
        s.labels["variant"]
        for f in metrics.registry.collect()
        if f.name == family
        for s in f.samples
        if "variant" in s.labels
    }


def _sample(metrics: Metrics, name: str, **labels: str) -> float:
    return metrics.registry.get_sample_value(name, labels) or 0.0


@pytest.fixture()
def embedded(tmp_path: Path):
    prices = {"house-model": {"input_per_million": 2.0, "output_per_million": 8.0}}
    c = EmbeddedCollector(
        tmp_path / "db",
        config={"sampling": {"rate": 1.0, "rules": []}, "cost": {"prices": prices}},
        metrics_port=None,
        install_sink=False,
    ).start()
    yield c
    c.stop()


def test_variant_and_cost_are_stored_with_the_trace_its_judgment_and_claims(embedded) -> None:
    import litellm

    models = {"a": "gpt-4o-mini", "b": "house-model", "c": "nobody-knows-this-model-1"}
    for i in range(30):
        arm = "abc"[i % 3]
        embedded.submit_decoded(_spans(i, variant=f"arm-{arm}", model=models[arm], start_ns=T0 + i * 1000))
    assert embedded.flush(60.0)
    q = embedded.storage.query
    rows = q(
        "SELECT variant, model, input_tokens, output_tokens, generation_cost_usd "
        "FROM {db}.rag_traces FINAL ORDER BY trace_id"
    )
    assert len(rows) == 30 and {r[0] for r in rows} == {"arm-a", "arm-b", "arm-c"}
    mini = litellm.model_cost["gpt-4o-mini"]
    for variant, model, tin, tout, cost in rows:
        assert model == models[variant[-1]]
        if variant == "arm-a":
            assert cost == pytest.approx(
                tin * mini["input_cost_per_token"] + tout * mini["output_cost_per_token"]
            )
        elif variant == "arm-b":
            assert cost == pytest.approx(tin * 2.0e-6 + tout * 8.0e-6) and tin > 0 and tout > 0
        else:
            assert cost is None  # unknown model: NULL, not 0
    judged = dict(q("SELECT variant, count() FROM {db}.rag_judgments FINAL GROUP BY variant"))
    claims = dict(q("SELECT variant, count() FROM {db}.rag_claims FINAL GROUP BY variant"))
    assert judged == {"arm-a": 10, "arm-b": 10, "arm-c": 10}
    assert set(claims) == {"arm-a", "arm-b", "arm-c"} and min(claims.values()) > 0
    m = embedded.metrics
    assert (
        _sample(
            m,
            "ragpulse_generation_unpriced_total",
            service="rag-app",
            variant="arm-c",
            reason="unknown_model",
        )
        == 10
    )
    assert _sample(m, "ragpulse_generation_priced_total", service="rag-app", variant="arm-b") == 10
    cost_b = sum(r[4] for r in rows if r[0] == "arm-b")
    assert _sample(
        m, "ragpulse_generation_cost_usd_total", service="rag-app", variant="arm-b"
    ) == pytest.approx(cost_b)
    assert (
        _sample(
            m, "ragpulse_stage_latency_seconds_count", service="rag-app", variant="arm-a", stage="generation"
        )
        == 10
    )
    assert (
        _sample(m, "ragpulse_stage_latency_seconds_count", service="rag-app", variant="arm-a", stage="rerank")
        == 0
    )
    judge = embedded.judge.judge_id
    assert _sample(m, "ragpulse_faithfulness_count", service="rag-app", judge=judge, variant="arm-a") == 10


def test_configured_prices_win_over_litellm_and_unpriced_reasons() -> None:
    p = Pricing({"gpt-4o-mini": {"input_per_million": 1.0, "output_per_million": 3.0}})
    assert p.cost("gpt-4o-mini", "openai", 1000, 100) == (pytest.approx(1000 * 1e-6 + 100 * 3e-6), "")
    assert p.cost("", "", 10, 10) == (None, "no_model")
    assert p.cost("nobody-knows-this-model-1", "", 10, 10) == (None, "unknown_model")
    assert Pricing().cost("openai/gpt-4o-mini", "", 0, 0) == (0.0, "")  # provider prefix understood
    with pytest.raises(ValueError, match="input_per_million"):
        Pricing({"m": {"input": 1}})


def test_the_price_file_reduced_to_its_price_fields_prices_every_model_as_the_whole_file() -> None:
    from ragpulse.collector.ingest import cost

    whole = {
        "m1": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6, "max_tokens": 8, "mode": "chat"},
        "alias-1": {"alias_of": "m1", "mode": "chat"},
        "alias-priced": {"alias_of": "m1", "input_cost_per_token": 5e-6, "output_cost_per_token": 6e-6},
        "embedding": {"input_cost_per_token": 1e-7, "mode": "embedding"},
        "openai/m2": {"input_cost_per_token": 3e-6, "output_cost_per_token": 0, "supports_vision": True},
        "sample_spec": "not an entry",
    }
    reduced = cost._price_fields(whole)
    assert all(set(entry) <= set(cost._PRICE_FIELDS) for entry in reduced.values())
    assert "sample_spec" not in reduced
    for model in [*whole, "m2", "openai/m1", "unknown"]:
        for provider in ("", "openai"):
            a, b = Pricing(), Pricing()
            a._map, b._map = whole, reduced
            assert a.price(model, provider) == b.price(model, provider), (model, provider)


def _ingest(labels: VariantLabels, variants: list[str]) -> Metrics:
    """Run traces with these variants through the ingest core's decision and metrics."""
    metrics = Metrics(labels)
    unused = Storage("chdb:///nonexistent-never-opened")  # no replays, no budget: never queried
    ingestor = Ingestor(
        unused, SamplingPolicy(rate=0.0), metrics, retry=lambda fn: fn(), pricing=Pricing({}, False)
    )
    batch = []
    for i, v in enumerate(variants):
        a = Assembled(f"{i:032x}", _spans(i, variant=v, n_chunks=1, chunk_chars=20), True, True, {})
        batch.append(a)
        if len(batch) == 1000:
            ingestor.prepare(batch)
            batch = []
    ingestor.prepare(batch)
    return metrics


def test_ten_thousand_distinct_variants_give_at_most_the_configured_label_values() -> None:
    variants = [f"exp-{i}" for i in range(10_000)]
    first_n = _ingest(VariantLabels(max_values=8), variants)
    for family in ("ragpulse_stage_latency_seconds", "ragpulse_generation_unpriced"):
        values = _label_values(first_n, family)
        assert len(values) <= 8 and OTHER in values, (family, len(values))
        assert values - {OTHER} == {f"exp-{i}" for i in range(7)}
    allowed = _ingest(VariantLabels(allow=["exp-5", "exp-9000"], max_values=4), variants)
    assert _label_values(allowed, "ragpulse_stage_latency_seconds") == {"exp-5", "exp-9000", OTHER}
    with pytest.raises(ValueError, match="leaves room"):
        VariantLabels(allow=["a", "b", "c"], max_values=3)


def test_the_judge_side_labels_stay_bounded_too(tmp_path: Path) -> None:
    from ragpulse.collector.ingest.build import build_trace
    from ragpulse.collector.judge import get_judge
    from ragpulse.collector.judge.service.worker import JudgeWorker

    st = Storage(f"chdb://{tmp_path / 'db'}")
    try:
        st.apply_schema()
        metrics = Metrics(VariantLabels(max_values=5))
        worker = JudgeWorker(get_judge("local"), st, metrics)
        msgs = []
        for i in range(200):
            t = build_trace(f"{i:032x}", _spans(i, variant=f"v{i}", n_chunks=2, chunk_chars=60))
            msgs.append(t.judge_message())
        worker.store(worker.judge_messages(msgs))
        for family in ("ragpulse_faithfulness", "ragpulse_claims", "ragpulse_failure_modes"):
            values = _label_values(metrics, family)
            assert len(values) <= 5 and OTHER in values, (family, values)
        stored = st.query("SELECT uniqExact(variant) FROM {db}.rag_judgments FINAL")[0][0]
        assert stored == 200  # storage keeps every variant; only the metric label is bounded
    finally:
        st.close()


def test_sampling_stratified_by_variant_judges_a_small_arm_as_often_as_a_big_one(
    embedded, tmp_path: Path
) -> None:
    embedded.stop()
    db = tmp_path / "strat"
    c = EmbeddedCollector(
        db,
        config={"sampling": {"rate": 0.05, "rules": [], "per_variant_per_minute": 40}},
        metrics_port=None,
        install_sink=False,
        judge=None,
    ).start()
    try:
        for i in range(2000):  # two minutes, 1000 traces each: 95% control, 5% treatment
            arm = "treatment" if i % 20 == 0 else "control"
            minute = i // 1000
            c.submit_decoded(
                _spans(i, variant=arm, n_chunks=1, chunk_chars=20, start_ns=T0 + minute * MINUTE + i)
            )
        for i in range(2000, 2100):  # no variant: the base rate as before
            c.submit_decoded(_spans(i, n_chunks=1, chunk_chars=20, start_ns=T0 + i))
        assert c.flush(60.0)
        rows = c.storage.query(
            "SELECT variant, sampled_reason, count() FROM {db}.rag_traces FINAL WHERE sampled = 1 "
            "GROUP BY variant, sampled_reason ORDER BY variant"
        )
        got = {(v, r): n for v, r, n in rows}
        assert got[("control", "variant:control")] == 80 and got[("treatment", "variant:treatment")] == 80
        assert 0 < got[("", "rate")] < 20
        # A restart re-reads the quota already spent: replaying the same minutes samples nothing more.
        spent = c._ingestor.sampler.stratum_loader(T0, "treatment")
        assert spent == 40
    finally:
        c.stop()


def test_the_batch_histogram_exposes_what_prometheus_clients_histogram_does() -> None:
    from prometheus_client import CollectorRegistry, Histogram, generate_latest
    from ragpulse.collector.core.batch_histogram import BatchHistogram

    values = [0.0, 0.005, 0.007, 0.1, 0.1000001, 2.5, 31.0, 0.25]
    buckets = (0.005, 0.01, 0.1, 0.25, 2.5, 30)
    ours, theirs = CollectorRegistry(), CollectorRegistry()
    batch = BatchHistogram("lat_seconds", "latency", ["stage"], buckets)
    ours.register(batch)
    batch.add({("total",): values[:3]})
    batch.add({("total",): values[3:]})
    ref = Histogram("lat_seconds", "latency", ["stage"], buckets=buckets, registry=theirs)
    for v in values:
        ref.labels("total").observe(v)
    strip = [line for line in generate_latest(theirs).decode().splitlines() if "_created" not in line]
    assert generate_latest(ours).decode().splitlines() == strip
