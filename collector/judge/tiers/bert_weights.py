"""A BERT encoder's weights as numpy arrays: the tensors of a safetensors file and each encoder
layer's tensors in the order the forward passes use them. One reading of the checkpoint for the
numpy reference forward (:class:`.minilm.NumpyBert`) and the onnxruntime graph
(:mod:`.bert_onnx`) alike, with no torch and no download.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

__all__ = ["encoder_layers", "load_safetensors"]


def load_safetensors(path: Path) -> dict[str, np.ndarray]:
    """The float32 tensors of a safetensors file (8-byte header length, JSON header, data)."""
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    out = {}
    for name, meta in header.items():
        if name == "__metadata__" or meta["dtype"] != "F32":
            continue
        a, b = meta["data_offsets"]
        out[name] = np.frombuffer(raw, np.float32, (b - a) // 4, 8 + n + a).reshape(meta["shape"])
    return out


def encoder_layers(w: dict[str, np.ndarray], layers: int | None = None) -> list[tuple[np.ndarray, ...]]:
    """Each encoder layer's tensors, in order (the first ``layers`` only when given): the
    query/key/value projection as one ``[hidden, 3 * hidden]`` matrix and its bias, then
    attention output weight, bias, layer norm gain and bias, intermediate weight and bias,
    output weight, bias, layer norm gain and bias; weights transposed to ``x @ W`` form. The
    one reading of the safetensors names, for the numpy forward and the onnx graph alike."""
    out: list[tuple[np.ndarray, ...]] = []
    while f"encoder.layer.{len(out)}.attention.self.query.weight" in w and (
        layers is None or len(out) < layers
    ):
        p = f"encoder.layer.{len(out)}."
        qkv = [p + f"attention.self.{n}." for n in ("query", "key", "value")]
        out.append(
            (
                np.concatenate([w[q + "weight"] for q in qkv]).T.copy(),
                np.concatenate([w[q + "bias"] for q in qkv]),
                w[p + "attention.output.dense.weight"].T.copy(),
                w[p + "attention.output.dense.bias"],
                w[p + "attention.output.LayerNorm.weight"],
                w[p + "attention.output.LayerNorm.bias"],
                w[p + "intermediate.dense.weight"].T.copy(),
                w[p + "intermediate.dense.bias"],
                w[p + "output.dense.weight"].T.copy(),
                w[p + "output.dense.bias"],
                w[p + "output.LayerNorm.weight"],
                w[p + "output.LayerNorm.bias"],
            )
        )
    return out
