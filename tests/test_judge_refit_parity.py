"""A refit fits on exactly what the judge decides from: the arrays of a label set give the judge's
own claim verdicts, support probabilities and response verdicts, with the packaged weights and
with a refit file that moves every part of the decision.

The traces are the hand-written RAG and summary cases (bench/judge_rag_cases.json,
bench/judge_summary_cases.json) as ``bench/judge_refit_data.py`` turns them into a team's
labels. Among their claims are ones every chunk they would rest on conflicts with, ones a chunk
contradicts, and ones whose best chunk conflicts while another chunk they rest on does not (the
refit used to flag those, the judge not): the comparison covers each.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from ragpulse.collector.judge.local.judge import LocalJudge, read_trace
from ragpulse.collector.judge.local.reading import support_of
from ragpulse.collector.judge.local.refit import read_base
from ragpulse.collector.judge.local.refit.data import LabelSet, read_labels
from ragpulse.collector.judge.local.refit.head import Decision, Head
from ragpulse.collector.judge.local.rules.conflicts import conflicts
from ragpulse.collector.judge.record import normalise_input

from tests.bench_modules import bench_modules


@pytest.fixture(scope="module")
def corpus() -> tuple[dict[str, dict[str, Any]], LabelSet]:
    with bench_modules("judge_refit_data") as (data,):
        traces, labels = data.joined_team()
    ls, missing = read_labels(traces, labels, LocalJudge().model)
    assert not missing
    return traces, ls


def _compare(judge: LocalJudge, decision: Decision, traces: dict[str, dict[str, Any]], ls: LabelSet) -> None:
    supported, p = decision.claims(ls.judged)
    contradicted = ~supported & ls.judged.contradicted
    flags = decision.answers(ls.judged, len(ls.trace_ids))
    k = 0
    wrong: list[str] = []
    for t, tid in enumerate(ls.trace_ids):
        out = judge.judge({**traces[tid], "trace_id": tid})
        for c in out["claims"]:
            want = "supported" if supported[k] else "contradicted" if contradicted[k] else "unsupported"
            if c["verdict"] != want or abs(c["support_probability"] - p[k]) > 1e-9:
                wrong.append(
                    f"{tid} {c['text']!r}: judge {c['verdict']} {c['support_probability']}, arrays {want} {p[k]}"
                )
            k += 1
        if (out["response_verdict"] == "hallucinated") != bool(flags[t]):
            wrong.append(f"{tid}: judge {out['response_verdict']}, arrays hallucinated={bool(flags[t])}")
    assert k == len(ls.judged)
    assert not wrong, "\n".join(wrong[:20])


def test_the_corpus_holds_the_claims_the_verdict_rule_treats_apart(corpus: tuple[dict, LabelSet]) -> None:
    traces, ls = corpus
    assert ls.judged.conflicted.sum() >= 2 and ls.judged.contradicted.sum() >= 10
    model = LocalJudge().model
    apart = 0
    for tid, rec in traces.items():
        tr = read_trace(normalise_input({**rec, "trace_id": tid}), model)
        for r in tr.claims:
            best_conflicts = r.evidence.best >= 0 and conflicts(r.profile, tr.chunks[r.evidence.best])
            apart += best_conflicts != support_of(r, tr.chunks).conflicted
    assert apart >= 3


def test_the_arrays_decide_as_the_packaged_judge(corpus: tuple[dict, LabelSet]) -> None:
    traces, ls = corpus
    _compare(LocalJudge(), read_base(None).decision, traces, ls)


def test_the_arrays_decide_as_a_judge_with_a_refit_file(
    corpus: tuple[dict, LabelSet], tmp_path: Path
) -> None:
    """A file that moves the coefficients, the threshold, the caps and the response rule."""
    traces, ls = corpus
    data = read_base(None).data
    rng = np.random.default_rng(0)
    moved = {
        **data,
        "coef": [round(c * (1 + 0.3 * rng.standard_normal()), 5) for c in data["coef"]],
        "intercept": data["intercept"] + 0.4,
        "threshold": 0.71,
        "number_cap": 0.3,
        "joint_number_cap": 0.6,
        "ordinal_number_cap": 0.4,
        "response": {"version": "1-refit", "mean_below": 0.82},
    }
    path = tmp_path / "moved.json"
    path.write_text(json.dumps(moved))
    judge = LocalJudge(claim_weights=str(path))
    assert judge.threshold == 0.71 and judge.response_rule.mean_below == 0.82
    _compare(judge, Decision(Head.from_weights(moved), 0.82), traces, ls)
