"""The trace builder's shortcuts read spans as the plain readings do.

A span kind is looked up as written before it is upper-cased, a single generation is its own
last one, and token counts take their common type without a call: each case here pins what
the general reading gives (case-insensitive kinds, kinds of other types, a present-but-None
token count that does not fall back to the other convention's key, clamping, ties).
"""

from __future__ import annotations

from typing import Any

import pytest
from ragpulse.agent import conventions as sc
from ragpulse.collector.core.model import RagTrace, Span
from ragpulse.collector.ingest.build import _read_generation, _role


class _Str(str):
    """A str subclass whose upper case is another word: the kind must be read as str(kind)."""

    def upper(self) -> str:  # pragma: no cover - never called by the reader
        return "TOOL"


@pytest.mark.parametrize(
    ("kind", "role"),
    [
        ("RETRIEVER", "retriever"),
        ("retriever", "retriever"),
        ("Reranker", "reranker"),
        ("LLM", "llm"),
        ("llm", "llm"),
        ("TOOL", "tool"),
        ("CHAIN", "chain"),
        ("AGENT", "chain"),
        ("agent", "chain"),
        (_Str("LLM"), "llm"),
        (_Str("llm"), "llm"),
        ("LLM ", ""),  # not a kind: falls through to the other readings (none here)
        ("EMBEDDING", ""),
        (5, ""),
        (b"LLM", ""),
    ],
)
def test_span_kinds_read_case_insensitively_and_as_text(kind: Any, role: str) -> None:
    assert _role({sc.SPAN_KIND: kind}) == role


def test_an_unknown_kind_falls_through_to_the_operation() -> None:
    assert _role({sc.SPAN_KIND: "EMBEDDING", sc.GEN_AI_OPERATION: "chat"}) == "llm"
    assert _role({sc.SPAN_KIND: 7, sc.GEN_AI_REQUEST_MODEL: "m"}) == "llm"


def _llm(end: int, **attrs: Any) -> Span:
    return Span("t" * 32, f"{end:016x}", "p" * 16, "g", 1, end, 0, "svc", attrs, [])


def _generation(*llms: Span) -> RagTrace:
    t = RagTrace("t" * 32)
    _read_generation(t, list(llms))
    return t


def test_token_counts_one_convention_at_a_time_clamped() -> None:
    inp, out = sc.GEN_AI_INPUT_TOKENS, sc.GEN_AI_OUTPUT_TOKENS
    prompt, completion = sc.LLM_TOKEN_COUNT_PROMPT, sc.LLM_TOKEN_COUNT_COMPLETION
    cases = [
        ({inp: 11, out: 3}, (11, 3)),
        ({prompt: 7, completion: 2}, (7, 2)),
        ({inp: None, prompt: 7, out: 4, completion: 9}, (0, 4)),  # present None: no fallback
        ({inp: "12", out: 2.9}, (12, 2)),
        ({inp: -5, out: True}, (0, 1)),
        ({inp: 2**40, out: "many"}, (2**32 - 1, 0)),
        ({}, (0, 0)),
    ]
    for attrs, want in cases:
        t = _generation(_llm(10, **attrs))
        assert (t.input_tokens, t.output_tokens) == want, attrs
    t = _generation(_llm(10, **{inp: 2**32 - 10}), _llm(20, **{inp: 2**32 - 10, prompt: 1}))
    assert t.input_tokens == 2**32 - 1  # the sum clamped


def test_model_and_provider_come_from_the_generation_that_ended_last() -> None:
    first = _llm(30, **{sc.GEN_AI_REQUEST_MODEL: "a", sc.GEN_AI_PROVIDER: "p1"})
    tie = _llm(30, **{sc.GEN_AI_REQUEST_MODEL: "b", sc.GEN_AI_PROVIDER: "p2"})
    early = _llm(10, **{sc.GEN_AI_REQUEST_MODEL: "c"})
    t = _generation(early, first, tie)
    assert (t.model, t.provider) == ("a", "p1")  # a tie keeps the first
    t = _generation(_llm(5, **{sc.GEN_AI_RESPONSE_MODEL: 4, sc.GEN_AI_SYSTEM: "sys"}))
    assert (t.model, t.provider) == ("4", "sys")
    t = _generation(_llm(5, **{sc.LLM_MODEL_NAME: "", sc.LLM_PROVIDER: None}))
    assert (t.model, t.provider) == ("", "")
    assert t.generation_ms == 4 / 1e6
