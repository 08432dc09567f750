"""The hand-written summary cases of bench/judge_summaries.py are well formed, and the bench runs."""

from __future__ import annotations

import pytest

from bench import judge_summaries as bench

KEYS = {"task", "document", "summary", "hallucinated", "kind", "changed"}


def test_there_are_thirty_cases() -> None:
    assert len(bench.CASES) == 30


@pytest.mark.parametrize("i", range(len(bench.CASES)))
def test_a_case_pairs_a_faithful_summary_with_one_changed_part(i: int) -> None:
    case = bench.CASES[i]
    assert set(case) == KEYS
    assert all(isinstance(case[k], str) and case[k].strip() for k in KEYS)
    paragraphs = case["document"].split("\n\n")
    assert len(paragraphs) >= 3 and all(p.strip() for p in paragraphs)
    assert 250 <= len(case["document"].split()) <= 450
    assert case["summary"] != case["hallucinated"]
    assert case["changed"] in case["hallucinated"]
    assert case["changed"] not in case["summary"]


def test_the_paragraph_chunking_keeps_every_paragraph() -> None:
    document = bench.CASES[0]["document"]
    assert bench.CHUNKINGS["whole document"](document) == [document]
    assert "\n\n".join(bench.CHUNKINGS["one chunk per paragraph"](document)) == document


def test_the_bench_reports_both_chunkings_and_summary_kinds(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main([]) == 0
    out = capsys.readouterr().out
    for chunking in bench.CHUNKINGS:
        assert (
            f"[{chunking}]: {len(bench.CASES)} faithful and {len(bench.CASES)} hallucinated summaries" in out
        )
    assert out.count("faithful      summaries judged:") == len(bench.CHUNKINGS)
    assert out.count("hallucinated  summaries judged:") == len(bench.CHUNKINGS)
    assert out.count("positive = hallucinated or unsure") == len(bench.CHUNKINGS)
    assert out.count("positive = hallucinated") == 2 * len(bench.CHUNKINGS)
    assert out.count("balanced accuracy") == 2 * len(bench.CHUNKINGS)
