"""The hand-written RAG cases of bench/judge_rag_answers.py are well formed, and the bench runs."""

from __future__ import annotations

import pytest

from bench import judge_rag_answers as bench

KEYS = {"query", "chunks", "answer", "hallucinated", "kind", "changed"}


@pytest.mark.parametrize(("name", "i"), [(n, i) for n in bench.SETS for i in range(len(bench.CASES[n]))])
def test_a_case_pairs_a_faithful_answer_with_one_changed_part(name: str, i: int) -> None:
    case = bench.CASES[name][i]
    assert set(case) == KEYS
    assert len(case["chunks"]) == 3 and all(isinstance(c, str) and c for c in case["chunks"])
    assert case["answer"] != case["hallucinated"]
    assert case["changed"] in case["hallucinated"]
    assert case["changed"] not in case["answer"]


def test_the_bench_reports_both_answer_kinds(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main([]) == 0
    out = capsys.readouterr().out
    for name, cases in bench.CASES.items():
        assert f"[{name}] " in out
        assert f"{len(cases)} faithful and {len(cases)} hallucinated answers" in out
    assert out.count("positive = hallucinated or unsure") == len(bench.SETS)


def test_the_two_sets_share_no_query() -> None:
    queries = [{c["query"] for c in cases} for cases in bench.CASES.values()]
    assert not queries[0] & queries[1]
