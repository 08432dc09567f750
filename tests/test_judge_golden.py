"""The local judge's full output records, pinned by hash.

Speed work on the local judge (tokenisation, indexing, lazy views) must not
change a single verdict, score or probability. These hashes were taken from the
local judge 5.0 (what each version changed is in the commit messages) over four input sets:
the claim-support cases of tests/data as judge records (each claim against its
own evidence, against another case's, and two claims as one answer), the
worked example runs, 500 traces of the demo application and 150 of the
throughput bench's synthetic traces; plus the lexical context
utilization the LLM judge computes from verdicts. A change that is meant to
alter verdicts must update the hashes (print them with ``_hashes()``) and say so.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from ragpulse.collector.judge import get_judge
from ragpulse.collector.judge.local.evidence import build_evidence
from ragpulse.collector.judge.local.judge import LocalJudge, lexical_utilization

from tests.carried_data import attribution_records

ROOT = Path(__file__).resolve().parents[1]

EXPECTED = {
    "attribution": "125a2a6f264a7fb6",
    "worked": "e2ef37c8b964f1cf",
    "demo": "0392e8b7abd29185",
    "synthetic": "53a14132c2070c2f",
    "lexutil": "98b7925b03f9cab5",
}


def _worked() -> list[dict]:
    lines = (ROOT / "examples" / "worked_example.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _demo() -> list[dict]:
    from ragpulse.policy_rag import PolicyRetriever, ScriptedGenerator, TrafficModel, load_corpus

    corpus = load_corpus()
    retriever, gen = PolicyRetriever(corpus), ScriptedGenerator(corpus, seed=3)
    out = []
    for req in TrafficModel(corpus, seed=5).requests(500):
        chunks = retriever.search(req.question)
        out.append(
            {
                "trace_id": f"demo{req.seq}",
                "query": req.question,
                "answer": gen.generate(req.question, chunks).text,
                "chunks": [c.as_dict() for c in chunks],
            }
        )
    return out


def _synthetic() -> list[dict]:
    from bench.judge_throughput import synthetic_traces

    return synthetic_traces(150, seed=7)


def _digest(judge: LocalJudge, records: list[dict]) -> str:
    h = hashlib.sha256()
    for rec in records:
        out = judge.judge(rec)
        out.pop("judge_latency_ms", None)  # wall-clock, the only field allowed to vary
        h.update(json.dumps(out, sort_keys=True).encode())
    return h.hexdigest()[:16]


def _lexutil_digest(judge: LocalJudge, records: list[dict]) -> str:
    h = hashlib.sha256()
    for rec in records:
        out = judge.judge(rec)
        u = lexical_utilization(
            [c["text"] for c in out["claims"]],
            [c["supporting_chunk_ids"] for c in out["claims"]],
            build_evidence(rec["chunks"]),
        )
        h.update(repr(u).encode())
    return h.hexdigest()[:16]


SETS: dict[str, Callable[[], list[dict]]] = {
    "attribution": attribution_records,
    "worked": _worked,
    "demo": _demo,
    "synthetic": _synthetic,
}


def _hashes() -> dict[str, str]:
    judge = get_judge("local")
    out = {name: _digest(judge, make()) for name, make in SETS.items()}
    out["lexutil"] = _lexutil_digest(judge, _demo())
    return out


@pytest.fixture(scope="module")
def judge() -> LocalJudge:
    return get_judge("local")  # type: ignore[return-value]


@pytest.mark.parametrize("name", sorted(SETS))
def test_local_judge_outputs_unchanged(judge: LocalJudge, name: str) -> None:
    assert _digest(judge, SETS[name]()) == EXPECTED[name]


def test_lexical_utilization_unchanged(judge: LocalJudge) -> None:
    assert _lexutil_digest(judge, _demo()) == EXPECTED["lexutil"]
