"""The hand-written RAG cases of bench/judge_rag_answers.py are well formed, and the bench runs."""

from __future__ import annotations

import pytest

from bench import judge_rag_answers as bench

KEYS = {"query", "chunks", "answer", "hallucinated", "kind", "changed"}


@pytest.mark.parametrize("i", range(len(bench.CASES)))
def test_a_case_pairs_a_faithful_answer_with_one_changed_part(i: int) -> None:
    case = bench.CASES[i]
    assert set(case) == KEYS
    assert len(case["chunks"]) == 3 and all(isinstance(c, str) and c for c in case["chunks"])
    assert case["answer"] != case["hallucinated"]
    assert case["changed"] in case["hallucinated"]
    assert case["changed"] not in case["answer"]


def test_the_bench_reports_both_answer_kinds(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main([]) == 0
    out = capsys.readouterr().out
    assert f"{len(bench.CASES)} faithful and {len(bench.CASES)} hallucinated answers" in out
    assert "positive = hallucinated" in out
