"""The native loops that read a span's documents and citations give what the Python ones give.

``ragpulse_native.flattened_documents`` and ``citation_events`` against
``documents._flattened_py`` and ``build._citations_py`` (the reference), both taken from the
native boundary's entry points (``documents._flattened``, ``build._citations``), on
random attributes: every field missing, None, or of each type a span can
carry, gaps between documents, numbered past the key cache, and citation
events among others with positions inside and outside their range.
"""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
from ragpulse.agent.conventions import (
    CITATION_DOCUMENT_ID,
    CITATION_END,
    CITATION_EVENT,
    CITATION_MARKER,
    CITATION_START,
    RERANKER_OUTPUT_DOCUMENTS,
    RETRIEVAL_DOCUMENTS,
    document_key,
)
from ragpulse.collector.core.model import Span
from ragpulse.collector.ingest import build, documents

from tests.native_module import require_native

require_native("the documents and citations are read in Python", disabled="RAGPULSE_NATIVE=0: read in Python")


class _Text(str):
    """A str subclass: read as str(value), as the Python loops do."""


def _value(rng: random.Random) -> Any:
    return rng.choice(
        [None, "", "doc-1", "ü ✓ 🦀", _Text("sub"), 0, 7, -3, 2**70, True, False, 0.5, math.nan, math.inf,
         "0.25", "x1", [1, "a"], {"k": [1, 2]}, b"raw"]
    )  # fmt: skip


def _documents(rng: random.Random, prefix: str, n: int) -> dict[str, Any]:
    attrs: dict[str, Any] = {"other": rng.choice(["a", 1])}
    for i in range(n):
        for field in ("id", "content", "score", "metadata", "source"):
            if rng.random() < 0.7:
                attrs[document_key(prefix, i, field)] = _value(rng)
        if rng.random() < 0.5:  # the common shape: a str id and content, a float score
            attrs[document_key(prefix, i, "id")] = f"d{i}"
            attrs[document_key(prefix, i, "content")] = f"text {i}"
            attrs[document_key(prefix, i, "score")] = rng.random()
    return attrs


def _chunks(chunks: list[Any]) -> list[tuple[Any, ...]]:
    return [tuple(repr(getattr(c, k)) for k in c.__slots__) for c in chunks]


# Each loop alone, as the boundary holds it: the native one without its fallback, the reference.
flattened_native, flattened_py = documents._flattened.native, documents._flattened.reference
citations_native, citations_py = build._citations.native, build._citations.reference


@pytest.mark.parametrize("seed", range(40))
def test_flattened_documents_match_the_python_loop(seed: int) -> None:
    rng = random.Random(seed)
    for prefix in (RETRIEVAL_DOCUMENTS, RERANKER_OUTPUT_DOCUMENTS):
        attrs = _documents(rng, prefix, rng.randrange(0, 9))
        assert _chunks(flattened_native(attrs, prefix)) == _chunks(flattened_py(attrs, prefix))


def test_documents_past_the_key_cache_are_read_alike() -> None:
    prefix = RETRIEVAL_DOCUMENTS
    attrs = {document_key(prefix, i, "content"): f"c{i}" for i in range(documents._CACHED_DOCUMENTS + 5)}
    native = flattened_native(attrs, prefix)
    assert len(native) == documents._CACHED_DOCUMENTS + 5
    assert _chunks(native) == _chunks(flattened_py(attrs, prefix))
    assert native[-1].id == str(documents._CACHED_DOCUMENTS + 5)


def _event(rng: random.Random) -> tuple[str, int, dict[str, Any]]:
    name = CITATION_EVENT if rng.random() < 0.8 else rng.choice(["exception", "rag.other", ""])
    ea: dict[str, Any] = {}
    for key in (CITATION_DOCUMENT_ID, CITATION_MARKER):
        if rng.random() < 0.85:
            ea[key] = _value(rng)
    for key in (CITATION_START, CITATION_END):
        if rng.random() < 0.85:
            ea[key] = rng.choice(
                [0, 5, -1, -2, 2**31 - 1, 2**31, 2**64, True, 3.7, "12", "x", None, math.nan]
            )
    return name, 0, ea


def _root(events: list[Any]) -> Span:
    return Span("t", "s", "", "root", 0, 1, 0, "svc", {}, events)


def _citations(cits: list[Any]) -> list[tuple[Any, ...]]:
    return [(repr(c.doc_id), repr(c.marker), c.start, c.end) for c in cits]


@pytest.mark.parametrize("seed", range(40))
def test_citation_events_match_the_python_loop(seed: int) -> None:
    rng = random.Random(seed)
    root = _root([_event(rng) for _ in range(rng.randrange(0, 12))])
    assert _citations(citations_native(root)) == _citations(citations_py(root))


def test_events_that_are_not_tuples_are_read_by_the_python_loop() -> None:
    root = _root([[CITATION_EVENT, 0, {CITATION_DOCUMENT_ID: "d1", CITATION_START: 3, CITATION_END: 9}]])
    assert _citations(build._citations(root)) == [("'d1'", "''", 3, 9)]
