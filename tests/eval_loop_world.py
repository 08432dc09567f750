"""The production world of the eval-loop acceptance test, and an independent oracle of what to export.

:func:`build_world` runs the demo's policy assistant (known injected failures)
through the agent's embedded exporter into an embedded collector with the
local judge: judged traffic, held-back (unjudged) traffic, sessions with
re-asks, explicit negative feedback, and one alert delivered to the
Alertmanager receiver over HTTP. :func:`expected_cases` works out from the
stored rows, by brute force and plain definitions (no code of
collector/export/), which cases an export of a window must contain.
"""

from __future__ import annotations

import json
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ragpulse import agent
from ragpulse.collector.core.text import jaccard, normalize_query, shingles
from ragpulse.collector.embedded.collector import EmbeddedCollector
from ragpulse.collector.serve.alertmanager import AlertmanagerReceiver
from ragpulse.collector.storage.clickhouse import Storage
from ragpulse.policy_rag import PolicyAssistant, TrafficModel, load_corpus

SERVICE = "policy-assistant"
ALERT = "RagpulseFaithfulnessBudgetBurn"
FAILURE_MODES = ("retrieval", "generation", "both")
FAITHFULNESS_BELOW = 0.8
NEAR_DUPLICATE = 0.7
HOLDBACK_RULE = {
    "name": "holdback",
    "action": "never",
    "match": {"attribute": "rag.variant", "equals": "holdback"},
}


@dataclass
class World:
    """What the test needs to know about the traffic it made."""

    db: Path
    judged: list[str] = field(default_factory=list)  # trace ids of judged traffic
    modes: dict[str, str] = field(default_factory=dict)  # trace id -> injected mode
    holdback: list[str] = field(default_factory=list)  # unjudged traffic
    feedback: list[str] = field(default_factory=list)  # explicit negative feedback
    reasked: list[str] = field(default_factory=list)  # first calls of re-asked pairs
    questions: dict[str, str] = field(default_factory=dict)


class Traffic:
    """The assistant with a per-call hook that tags the root span (variant, session)."""

    def __init__(self, world: World, seed: int) -> None:
        self.world = world
        self.tags: dict[str, str] = {}
        self.corpus = load_corpus()
        self.assistant = PolicyAssistant(self.corpus, seed=seed, on_answer=self._on_answer)
        self.last = ""

    def _on_answer(self, question: str, chunks: Any, result: Any) -> None:
        rag = agent.current_rag()
        for key, value in self.tags.items():
            rag.set_attribute(key, value)
        self.last = rag.trace_id or ""
        self.world.modes[self.last] = result.mode.value
        self.world.questions[self.last] = question

    def ask(self, question: str, **tags: str) -> str:
        self.tags = tags
        self.assistant.answer(question)
        return self.last

    def stream(self, n: int, seed: int) -> list[str]:
        return [self.ask(r.question) for r in TrafficModel(self.corpus, seed=seed).requests(n)]


def open_collector(db: Path) -> EmbeddedCollector:
    config = {"sampling": {"rate": 1.0, "budget_per_minute": None, "rules": [HOLDBACK_RULE]}}
    collector = EmbeddedCollector(db, config=config, metrics_port=None).start()
    agent.configure(
        service_name=SERVICE, exporter="embedded", corpus_version="policies-v1", schedule_delay_ms=50
    )
    return collector


def settle(collector: EmbeddedCollector) -> None:
    assert agent.flush(60)
    assert collector.flush(600)


def post_alert(url: str, starts: int, ends: int) -> None:
    """Alertmanager's webhook message for one firing alert (documented payload, version 4)."""
    iso = datetime.fromtimestamp(starts / 1e9, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    window_s = (starts - ends) // -1_000_000_000  # ceil of the segment's length
    alert = {
        "status": "firing", "labels": {"alertname": ALERT, "service": SERVICE, "severity": "critical",
                                       "judge": "local", "window": f"{window_s}s"},
        "annotations": {"summary": "burning"}, "startsAt": iso, "endsAt": "0001-01-01T00:00:00Z",
        "generatorURL": "http://prometheus/graph", "fingerprint": "3f2a9c1b0d4e5f60",
    }  # fmt: skip
    body = {"version": "4", "groupKey": f'{{}}:{{alertname="{ALERT}"}}', "status": "firing",
            "receiver": "ragpulse", "groupLabels": {"alertname": ALERT}, "commonLabels": alert["labels"],
            "commonAnnotations": alert["annotations"], "externalURL": "http://alertmanager", "alerts": [alert],
            "truncatedAlerts": 0}  # fmt: skip
    req = urllib.request.Request(url + "/alertmanager", json.dumps(body).encode(), method="POST")
    req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.status == 200


def build_world(db: Path, judged: int, alert_slice: tuple[int, int]) -> World:
    """The traffic of the acceptance test (see the module docstring)."""
    import time

    world = World(db)
    collector = open_collector(db)
    receiver = AlertmanagerReceiver(collector.storage).start()
    try:
        traffic = Traffic(world, seed=3)
        lo, hi = alert_slice
        requests = list(TrafficModel(traffic.corpus, seed=5).requests(judged))
        world.judged += [traffic.ask(r.question) for r in requests[:lo]]
        seg_start = time.time_ns()
        world.judged += [traffic.ask(r.question) for r in requests[lo:hi]]
        seg_end = time.time_ns()
        world.judged += [traffic.ask(r.question) for r in requests[hi:]]
        world.holdback = [traffic.ask(r.question, **{"rag.variant": "holdback"}) for r in requests[:60]]
        for i, r in enumerate(requests[-30:]):
            world.reasked.append(traffic.ask(r.question, **{"session.id": f"s{i}"}))
            world.judged.append(world.reasked[-1])
            world.judged.append(traffic.ask("Please, " + r.question.lower(), **{"session.id": f"s{i}"}))
        settle(collector)
        healthy = collector.storage.query(
            "SELECT trace_id FROM {db}.rag_judgments FINAL WHERE failure_mode = 'healthy' ORDER BY trace_id"
        )
        reasked = set(world.reasked)
        world.feedback = world.holdback[:40] + [t for (t,) in healthy if t not in reasked][:10]
        for tid in world.feedback:
            assert agent.feedback(tid, -1.0, comment="not what I asked")
        post_alert(receiver.url, seg_end, seg_start)
        post_alert(receiver.url, seg_end, seg_start)  # Alertmanager repeats a group: one window
        settle(collector)
    finally:
        receiver.stop()
        agent.shutdown()
        collector.stop()
    return world


# ------------------------------------------------------------------------------------ the oracle


def _failing(storage: Storage) -> dict[str, set[str]]:
    reasons: dict[str, set[str]] = {}
    rows = storage.query(
        "SELECT trace_id, argMax(failure_mode, judged_at), argMax(abstention_kind, judged_at), "
        "argMax(unsupported_hallucination, judged_at), argMax(faithfulness, judged_at) "
        "FROM {db}.rag_judgments FINAL WHERE error = '' GROUP BY trace_id"
    )
    for tid, mode, kind, halluc, faith in rows:
        r = reasons.setdefault(tid, set())
        if mode in FAILURE_MODES:
            r.add(f"failure_mode:{mode}")
        if kind == "false_refusal":
            r.add("false_refusal")
        if halluc > 0:
            r.add("hallucination")
        if faith is not None and faith < FAITHFULNESS_BELOW:
            r.add("low_faithfulness")
    for (tid,) in storage.query(
        "SELECT DISTINCT trace_id FROM {db}.rag_claims FINAL WHERE citation_valid = 0"
    ):
        reasons.setdefault(tid, set()).add("invalid_citation")
    return {t: r for t, r in reasons.items() if r}


def trace_reasons(storage: Storage, lo_ns: int, hi_ns: int) -> dict[str, set[str]]:
    """Every trace of [lo, hi) that an export must take, with the reasons it must carry."""
    rows = storage.query(
        "SELECT trace_id, toUnixTimestamp64Nano(time), service, query FROM {db}.rag_traces FINAL"
    )
    inside = {t: (ns, svc) for t, ns, svc, _ in rows if lo_ns <= ns < hi_ns}
    reasons = {t: r for t, r in _failing(storage).items() if t in inside}
    windows = storage.query(
        "SELECT reasons[1], service, toUnixTimestamp64Nano(window_start), toUnixTimestamp64Nano(window_end) "
        "FROM {db}.rag_exports FINAL WHERE kind = 'queued'"
    )
    for tid, r in reasons.items():
        ns, svc = inside[tid]
        for reason, service, start, end in windows:
            if service == svc and start <= ns <= end:
                r.add(reason)
    negative = storage.query(
        "SELECT DISTINCT trace_id FROM {db}.rag_feedback FINAL WHERE value < 0 OR label = 'negative'"
    )
    for (tid,) in negative:
        if tid in inside:
            reasons.setdefault(tid, set()).add("feedback:negative")
    return reasons


def near_duplicate_groups(queries: dict[str, str]) -> list[set[str]]:
    """Trace ids grouped by connected components of pairwise trigram Jaccard >= the threshold."""
    texts = sorted({normalize_query(q) for q in queries.values()})
    grams = {t: shingles(t) for t in texts}
    parent = {t: t for t in texts}

    def root(t: str) -> str:
        while parent[t] != t:
            t = parent[t]
        return t

    for i, a in enumerate(texts):
        for b in texts[i + 1 :]:
            if jaccard(grams[a], grams[b]) >= NEAR_DUPLICATE:
                parent[max(root(a), root(b))] = min(root(a), root(b))
    groups: dict[str, set[str]] = {}
    for tid, q in queries.items():
        groups.setdefault(root(normalize_query(q)), set()).add(tid)
    return list(groups.values())


def expected_cases(
    storage: Storage, lo_ns: int, hi_ns: int, exclude: set[str]
) -> list[tuple[set[str], set[str]]]:
    """(trace ids, reasons) of each case an export of [lo, hi) must add, leaving out ``exclude``d traces."""
    reasons = {t: r for t, r in trace_reasons(storage, lo_ns, hi_ns).items() if t not in exclude}
    queries = dict(
        storage.query(
            "SELECT trace_id, query FROM {db}.rag_traces FINAL WHERE trace_id IN %(ids)s",
            {"ids": sorted(reasons)},
        )
    )
    return [(g, set().union(*(reasons[t] for t in g))) for g in near_duplicate_groups(queries)]
