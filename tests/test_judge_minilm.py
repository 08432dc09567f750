"""bench/judge_minilm.py's encoder and features, on a tiny random BERT the test writes.

The real weights (all-MiniLM-L6-v2, 90 MB) are not needed to check the machinery: the
safetensors reader, that padding a batch does not change a text's states (the attention
mask), and what the alignment features mean (a claim that is its sentence aligns fully).
"""

from __future__ import annotations

import importlib
import json
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
VOCAB = "[PAD] [UNK] [CLS] [SEP] audit logs are kept for five years in the archive backups run nightly . ,".split()


def _write_safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
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
def mini(tmp_path_factory: pytest.TempPathFactory):
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    folder = tmp_path_factory.mktemp("tiny-bert")
    tensors = _tiny_bert(np.random.default_rng(3))
    _write_safetensors(folder / "model.safetensors", tensors)
    tok = Tokenizer(models.WordPiece({w: i for i, w in enumerate(VOCAB)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    tok.enable_padding(length=32)  # as the shipped tokenizer.json does: the encoder must undo it
    tok.save(str(folder / "tokenizer.json"))
    assert tokenizers
    sys.path.insert(0, str(BENCH))
    try:
        module = importlib.import_module("judge_minilm")
        yield module, module.MiniLM(folder), tensors, folder
    finally:
        sys.path.remove(str(BENCH))


def test_safetensors_reader_returns_the_written_tensors(mini) -> None:
    module, _, tensors, folder = mini
    read = module.load_safetensors(folder / "model.safetensors")
    assert read.keys() == tensors.keys()
    for name, a in tensors.items():
        assert np.array_equal(read[name], a)


def test_padding_a_batch_does_not_change_a_texts_states(mini) -> None:
    _, enc, _, _ = mini
    short = "audit logs are kept"
    long = "backups run nightly in the archive for five years , audit logs are kept"
    ((tokens, alone),) = enc.encode([short])
    (tokens_b, batched), _ = enc.encode([short, long])
    assert tokens == tokens_b == ["[CLS]", "audit", "logs", "are", "kept", "[SEP]"]
    assert np.allclose(alone, batched, atol=1e-5)


def test_a_claim_that_is_its_sentence_aligns_fully_and_an_unrelated_one_does_not(mini) -> None:
    module, enc, _, _ = mini
    aligner = module.Aligner(enc)
    sentence = "audit logs are kept for five years in the archive ."
    same, other = aligner.features([sentence, "backups run nightly ."], [[sentence], [sentence]])
    assert same == pytest.approx([1.0, 1.0, 1.0, 1.0], abs=1e-5)
    assert other[1] < 0.99 and other[2] <= other[3] <= other[1]
    assert aligner.features(["audit logs"], [[]]) == [[0.0] * len(module.MINI_FEATURES)]
