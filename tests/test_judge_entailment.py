"""The shipped entailment model and the local judge's entailment tier.

The pairs below are ones the trained model must order right; the untrained base weights
(all-MiniLM-L6-v2 with a new, random head) fail them (measured when the model was shipped:
docs/judge-internals.md), so replacing the model file by an untrained export fails here.
"""

from __future__ import annotations

import ast
import hashlib
import json
from importlib import resources
from pathlib import Path

import pytest
from ragpulse.collector.judge import get_judge
from ragpulse.collector.judge.tiers import entailment
from ragpulse.collector.judge.tiers.entailment import MODEL_FILE, MODEL_SHA256, EntailmentModel

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = "The library is open from 9 am to 5 pm on weekdays."
CURIE = "Marie Curie was born in Warsaw in 1867."
REFUNDS = "Refunds are issued within 14 days of the return being received."
EXPENSES = "Employees must submit expense reports within 30 days."

# (premise, entailed paraphrase, unrelated sentence)
ENTAILED = [
    (
        LIBRARY,
        "On weekdays the library opens at 9 am and closes at 5 pm.",
        "The bridge was painted red in 1990.",
    ),
    (CURIE, "Warsaw is the birthplace of Marie Curie.", "The cafeteria serves lunch at noon."),
]
# (premise, contradicting claim, what it changes)
CONTRADICTED = [
    (LIBRARY, "The library is open from 9 am to 7 pm on weekdays.", "number"),
    (REFUNDS, "Refunds are issued within 30 days of the return being received.", "number"),
    (LIBRARY, "The library is not open on weekdays.", "negation"),
    (EXPENSES, "Employees are not required to submit expense reports.", "negation"),
    (CURIE, "Marie Curie was born in Paris in 1867.", "swapped entity"),
]


@pytest.fixture(scope="module")
def model() -> EntailmentModel:
    return EntailmentModel()


def test_shipped_model_is_the_pinned_one() -> None:
    raw = resources.files("ragpulse.collector.judge.tiers").joinpath(f"models/{MODEL_FILE}").read_bytes()
    assert hashlib.sha256(raw).hexdigest() == MODEL_SHA256
    assert len(raw) <= 30 * 1024 * 1024


@pytest.mark.parametrize(("premise", "paraphrase", "unrelated"), ENTAILED)
def test_paraphrase_is_entailed_above_an_unrelated_sentence(model, premise, paraphrase, unrelated) -> None:
    para, other = model.probabilities([(premise, paraphrase), (premise, unrelated)])
    assert para[0] > 0.5 > other[0]
    assert para[0] > para[2]


@pytest.mark.parametrize(("premise", "claim", "change"), CONTRADICTED)
def test_changed_fact_is_contradicted(model, premise, claim, change) -> None:
    (p,) = model.probabilities([(premise, claim)])
    assert p[2] > p[0] and p[2] > p[1], f"{change}: {p}"


def test_cache_returns_the_same_scores(model) -> None:
    pairs = [(LIBRARY, ENTAILED[0][1]), (CURIE, CONTRADICTED[-1][1])]
    first = model.probabilities(pairs)
    scored = model.pairs_scored
    assert (model.probabilities(pairs) == first).all()
    assert model.pairs_scored == scored


def test_a_call_with_more_pairs_than_the_cache_holds_gets_every_score(model) -> None:
    """``cache_size`` changes only speed: a call with more distinct pairs than it (and repeats)
    is answered whole, with the scores of a model whose cache holds them all."""
    pairs = [(p, c) for p, c, _ in CONTRADICTED] + [(p, c) for p, c, _ in ENTAILED]
    pairs += pairs[:3]
    want = model.probabilities(pairs)
    for size in (0, 2):
        small = EntailmentModel(cache_size=size)
        assert (small.probabilities(pairs) == want).all()
        assert len(small.cache) == size and small.pairs_scored == len(set(pairs))
        assert (small.probabilities(pairs[::-1]) == want[::-1]).all()
    assert model.probabilities([]).shape == (0, 3)


def _head_without_threshold(tmp_path: Path) -> Path:
    raw = resources.files("ragpulse.collector.judge.local").joinpath("weights/claim-entail-v1.json")
    data = json.loads(raw.read_bytes())
    del data["contradiction_threshold"]
    path = tmp_path / "head.json"
    path.write_text(json.dumps(data))
    return path


def test_a_custom_head_without_a_contradiction_threshold_keeps_contradictions(tmp_path) -> None:
    """The threshold is the shipped model's (a custom head refit for it keeps it), not 1.01,
    which turned every contradiction off."""
    path = _head_without_threshold(tmp_path)
    _, shipped = entailment.load_entail_head()
    assert 0 < shipped <= 1
    assert entailment.load_entail_head(path)[1] == shipped
    judge = get_judge("local", entailment={"band": (0.0, 1.0), "weights": str(path)})
    claim = judge.judge(_record("The library does not open on weekdays.", LIBRARY))["claims"][0]
    assert claim["verdict"] == "contradicted", claim


@pytest.mark.parametrize("value", ["0.9", None, True, 0, -1])
def test_a_contradiction_threshold_that_is_not_a_positive_number_is_refused(tmp_path, value) -> None:
    path = _head_without_threshold(tmp_path)
    path.write_text(json.dumps({**json.loads(path.read_text()), "contradiction_threshold": value}))
    with pytest.raises(ValueError, match="contradiction_threshold must be a positive number"):
        entailment.load_entail_head(path)


def test_wrong_model_file_is_refused(tmp_path) -> None:
    bad = tmp_path / "other.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(Exception):  # noqa: B017 - onnxruntime's own error type
        EntailmentModel(bad)


def _record(answer: str, chunk: str) -> dict:
    return {
        "trace_id": "t",
        "query": "When is the library open?",
        "answer": answer,
        "chunks": [{"id": "c1", "content": chunk}],
    }


def test_tier_is_opt_in_and_pinned_in_the_judge_id() -> None:
    alone, tiered = get_judge("local"), get_judge("local", entailment=True)
    assert "+" not in alone.judge_id
    assert tiered.judge_id.startswith(alone.judge_id + "+entail-")
    assert get_judge("local", entailment={"band": (0.2, 0.8)}).judge_id != tiered.judge_id
    rec = _record(
        "The library is open from 9 am to 5 pm on weekdays.", LIBRARY + " It is closed on holidays."
    )
    assert tiered.judge(rec)["claims"][0]["verdict"] == "supported"
    assert alone.judge(rec)["claims"][0]["verdict"] == "supported"


def test_tier_reads_a_contradiction_tier_one_misses() -> None:
    judge = get_judge("local", entailment={"band": (0.0, 1.0)})
    out = judge.judge(_record("The library does not open on weekdays.", LIBRARY))
    claim = out["claims"][0]
    assert claim["verdict"] == "contradicted", claim
    assert claim["contradicting_chunk_ids"] == ["c1"]
    assert out["tier2_claims"] == 1


def test_one_second_tier_at_most() -> None:
    with pytest.raises(ValueError, match="one second tier"):
        get_judge("local", minilm={}, entailment={"band": (0.2, 0.8)})


def test_bad_band_is_refused() -> None:
    with pytest.raises(ValueError, match="band"):
        get_judge("local", entailment={"band": (0.8, 0.2)})


def test_runtime_code_imports_neither_torch_nor_jax() -> None:
    """Training needs jax (the `train` extra); nothing the product runs may import it or torch."""
    for folder in ("agent", "collector"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else ([node.module or ""] if isinstance(node, ast.ImportFrom) else [])
                )
                assert not any(n.split(".")[0] in ("torch", "jax", "jaxlib", "optax") for n in names), path


def test_features_are_the_logits_of_entailment_and_contradiction() -> None:
    (f,) = entailment.entail_features([[0.5, 0.25, 0.25]])
    assert f[0] == pytest.approx(0.0)
    assert f[1] == pytest.approx(-1.0986, abs=1e-3)
