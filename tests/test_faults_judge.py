"""Faults on the judging side: judge workers SIGKILLed mid-batch, the LLM provider gone for 60 s.

The LLM provider is the local OpenAI-compatible server the other judge tests
use (:class:`tests.judge_llm_server.ScriptedLLMServer`), reached through
litellm over HTTP. A worker is "mid-batch" while the server holds one of its
requests: nothing of that batch is stored or committed yet, so a SIGKILL then
loses real work that the restarted process must redo.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from ragpulse.collector.contract import SCORE_NAMES
from ragpulse.collector.demo.synthetic import make_trace, traces_data
from ragpulse.collector.judge.llm.judge import LLMJudge
from ragpulse.collector.judge.tiers.tiered import TieredJudge

from tests.judge_llm_server import Reply, ScriptedLLMServer, all_supported
from tests.live_demo import LiveDemo
from tests.soak_run import scrape
from tests.test_collector_kafka import Setup, _produce_all, setup_factory  # noqa: F401 - the fixture

MODEL = "openai/fake-judge"
OUTAGE_S = 60.0
MAX_RETRIES = 2
LLM_SETTINGS: dict[str, Any] = {"api_key": "test", "max_retries": MAX_RETRIES, "backoff_base": 0.05,
                                "backoff_max": 0.2, "timeout": 10.0, "input_cost_per_token": 1e-6,
                                "output_cost_per_token": 2e-6}  # fmt: skip


class SlowProvider:
    """Answers every claim as supported after ``delay`` seconds; ``seen`` is set once ``want``
    requests have arrived (each held for ``delay``: its worker is mid-batch)."""

    def __init__(self, delay: float = 0.03) -> None:
        self.delay = delay
        self.want = 0
        self.seen = threading.Event()
        self.server = ScriptedLLMServer(self._reply).start()

    def _reply(self, body: dict[str, Any], n: int) -> Reply:
        if n + 1 >= self.want:
            self.seen.set()
        reply = all_supported(body, n)
        reply.delay = self.delay
        return reply

    def wait_for(self, more: int, timeout: float = 90.0) -> None:
        self.want = len(self.server.requests) + more
        self.seen.clear()
        assert self.seen.wait(timeout), f"{more} more judge requests did not arrive"


@pytest.mark.services
def test_judge_workers_sigkilled_mid_batch_judge_every_sampled_trace_once(
    setup_factory: Any,  # noqa: F811 - the fixture imported above
) -> None:
    provider = SlowProvider()
    n = 300
    s: Setup = setup_factory(
        sampling={"rate": 1.0, "budget_per_minute": None},
        judge={"enabled": True, "judge": MODEL, "workers": 2, "batch_size": 25,
               "settings": {**LLM_SETTINGS, "api_base": provider.server.url}},
    )  # fmt: skip
    traces = [make_trace(i, seed="judge-kill", n_chunks=2, chunk_chars=80) for i in range(n)]
    _produce_all(s, [(t.hex.encode(), traces_data([(t.service, t.spans)])) for t in traces])
    try:
        proc = s.collector(role="all")
        provider.wait_for(60)  # SIGKILL while a judge request is held: both workers are mid-batch
        proc.kill()
        proc = s.collector(role="all")
        s.wait_caught_up(proc, timeout=150, judges=True)
        proc.wait_ready()
        rc, _took = proc.terminate()
        assert rc == 0, proc.log_tail()
    finally:
        provider.server.stop()
    st = s.storage()
    try:
        sampled = {r[0] for r in st.query("SELECT trace_id FROM {db}.rag_traces FINAL WHERE sampled")}
        rows = st.query("SELECT trace_id, error, faithfulness FROM {db}.rag_judgments FINAL")
        once = st.query("SELECT count(), uniqExact(trace_id, judge_id) FROM {db}.rag_judgments FINAL")[0]
        raw = st.query("SELECT count() FROM {db}.rag_judgments")[0][0]
        claims = st.query(
            "SELECT count(), uniqExact(trace_id, judge_id, claim_index) FROM {db}.rag_claims FINAL"
        )
    finally:
        st.close()
    requests = len(provider.server.requests)
    print(f"\njudge SIGKILL: {requests} LLM requests for {n} traces; {raw} judgment rows before FINAL")
    assert sampled == {t.hex for t in traces}
    assert once == (n, n) and {r[0] for r in rows} == sampled
    assert all(r[1] == "" and r[2] is not None for r in rows), [r for r in rows if r[1]][:3]
    assert claims[0][0] == claims[0][1] > 0
    assert requests > n  # the batches killed in flight were judged again, and stored once


def _judge_rows(demo: LiveDemo, judge_id: str) -> list[tuple[Any, ...]]:
    """(trace id, error, tier, extra, judged_at in ms, abstained, *scores) of one judge's FINAL rows."""
    return demo.query(
        "SELECT trace_id, error, tier, extra, toUnixTimestamp64Milli(judged_at), abstained, "
        f"{', '.join(SCORE_NAMES)} "
        f"FROM {{db}}.rag_judgments FINAL WHERE judge_id = '{judge_id}'"
    )


def _verdict(row: tuple[Any, ...]) -> bool:
    """A local verdict: an abstention (which has no scores) or at least one score."""
    return bool(row[5]) or any(v is not None for v in row[6:])


class PlainLLM:
    """The plain LLM judge as a second judge of every stored trace, each judged once (LiveDemo.rejudge)."""

    def __init__(self, demo: LiveDemo, api_base: str) -> None:
        self.demo = demo
        self.judge = LLMJudge(MODEL, api_base=api_base, **LLM_SETTINGS)
        self.done: set[str] = set()

    def catch_up(self) -> None:
        self.done.update(self.demo.rejudge(self.judge, limit=10_000, exclude=self.done))


def _until_judged(what: str, plain: PlainLLM, check: Any, timeout: float) -> None:
    """Keep the plain judge catching up until ``check()`` holds."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"{what}: not reached within {timeout:.0f}s"
        plain.catch_up()
        time.sleep(0.5)


def test_llm_provider_gone_60s_retries_count_errors_and_keeps_local_verdicts(tmp_path: Path) -> None:
    first = ScriptedLLMServer(all_supported).start()
    tiered = TieredJudge(MODEL, sample_rate=0.3, api_base=first.url, **LLM_SETTINGS)
    demo = LiveDemo(tmp_path / "db", rate=3.0, judge=tiered).start()
    plain = PlainLLM(demo, first.url)
    running = [first]  # the servers to stop at the end

    def escalated() -> int:
        return tiered.stats["escalated_sample"] + tiered.stats["escalated_borderline"]

    try:
        demo.run_in_background()
        _until_judged("LLM judgments before the outage", plain,
                      lambda: escalated() >= 3 and plain.judge.stats["judged"] >= 3, 60)  # fmt: skip
        running.remove(first)
        first.stop()  # the provider goes away: its port refuses connections
        back = time.monotonic() + OUTAGE_S
        _until_judged("failures during the outage", plain,
                      lambda: tiered.stats["llm_failed"] > 0 and plain.judge.stats["errors"] > 0, OUTAGE_S)  # fmt: skip
        _until_judged("the end of the outage", plain, lambda: time.monotonic() >= back, OUTAGE_S + 5)
        running.append(ScriptedLLMServer(all_supported, port=first.port).start())
        back_ms = int(time.time() * 1000)
        before = (escalated(), plain.judge.stats["judged"])
        _until_judged("LLM judgments after the provider returned", plain,
                      lambda: escalated() > before[0] and plain.judge.stats["judged"] > before[1], 60)  # fmt: skip
        demo.stop_traffic()
        assert demo.flush(), "the embedded collector did not drain"
        plain.catch_up()
        traces = {r[0] for r in demo.query("SELECT trace_id FROM {db}.rag_traces FINAL")}
        tiered_rows, plain_rows = _judge_rows(demo, tiered.judge_id), _judge_rows(demo, plain.judge.judge_id)
        m = scrape(demo.metrics_url)
    finally:
        demo.stop()
        for server in running:
            server.stop()
        tiered.close()
        plain.judge.close()
    print(f"\nLLM outage: tiered {tiered.stats}; plain LLM {plain.judge.stats}")
    # Tiered: every trace keeps one verdict; where the LLM tier failed, the local one, counted.
    assert len(tiered_rows) == len(traces) and {r[0] for r in tiered_rows} == traces
    assert all(r[1] == "" for r in tiered_rows)
    fell_back = [r for r in tiered_rows if json.loads(r[3] or "{}").get("llm_error")]
    assert fell_back and all(r[2] == "local" and _verdict(r) for r in fell_back)
    assert len(fell_back) == tiered.stats["llm_failed"] == m["ragpulse_judge_escalation_errors_total"]
    assert any(r[2] == "llm" and r[4] >= back_ms for r in tiered_rows)
    # Plain LLM: each failure is an error row without any score, counted; every trace has its row.
    assert len(plain_rows) == len(traces) and {r[0] for r in plain_rows} == traces
    errors = [r for r in plain_rows if r[1]]
    assert errors and all(all(v is None for v in r[6:]) for r in errors)
    assert len(errors) == plain.judge.stats["errors"] == m["ragpulse_judge_errors_total"]
    assert any(not r[1] and r[4] >= back_ms for r in plain_rows)
    # Retries within each judgment's budget: MAX_RETRIES per failed judgment, at most that per success.
    st = plain.judge.stats
    assert MAX_RETRIES * st["errors"] <= st["retries"] <= MAX_RETRIES * (st["errors"] + st["judged"])
