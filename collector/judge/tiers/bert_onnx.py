"""The MiniLM encoder's BERT graph for onnxruntime, built from the safetensors weights.

The graph is written with the ``onnx`` package's helper API straight from the tensors
:func:`.bert_weights.load_safetensors` reads (no torch, no export, no download), as the fused
onnxruntime contrib ops a BERT exporter plus ``onnxruntime.transformers``' BERT fusion would
produce: ``EmbedLayerNormalization``, ``Attention`` (query, key and value in one matrix) and
``FastGelu`` (the tanh form of GELU, the one the numpy reference uses). Built from plain ONNX
ops instead, that fusion recognises only the residual layer norms of this graph, and the
attention and GELU stay unfused. The session runs with ``ORT_ENABLE_ALL`` on one intra-op
thread, less its ``SkipLayerNormFusion``: onnxruntime's fused ``SkipLayerNormalization``
kernel takes about three times as long as the two ``Add`` and the ``LayerNormalization`` it
replaces, a quarter of the int8 graph's time (onnxruntime 1.32, one core).

``quantized=True`` applies ``onnxruntime.quantization.quantize_dynamic`` to the matrix
products (``MatMul`` and ``Attention``): int8 weights per output channel, activations
quantised per call. About 3x the fp32 graph's speed on one core; the states move by a few
hundredths of a cosine, so the backend is pinned in the second tier's judge id.
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

import numpy as np

from .bert_weights import encoder_layers

__all__ = ["OnnxBert", "build_graph", "quantize"]

_MS = "com.microsoft"
# The initialiser names of one layer's tensors, in :func:`.bert_weights.encoder_layers` order.
_LAYER_TENSORS = ("qkv_w", "qkv_b", "o_w", "o_b", "g1", "b1", "i_w", "i_b", "f_w", "f_b", "g2", "b2")


def build_graph(w: dict[str, np.ndarray], heads: int, layers: int | None = None, eps: float = 1e-12):
    """The ONNX model: inputs ``input_ids`` and ``attention_mask`` (int32, [batch, tokens],
    right-padded), output ``states`` (float32, [batch, tokens, hidden]) of the last layer
    (or of layer ``layers``)."""
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits = [], []

    def init(name: str, a: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(a, dtype=np.float32), name))
        return name

    def node(op: str, inputs: list[str], n_out: int = 1, domain: str = _MS, **attrs) -> list[str]:
        name = f"n{len(nodes)}_{op}"
        outs = [f"{name}_out{i}" for i in range(n_out)]
        nodes.append(helper.make_node(op, inputs, outs, name=name, domain=domain, **attrs))
        return outs

    e = "embeddings."
    # Token type 0 throughout: its embedding row is folded into the position embeddings.
    h, lengths = node(
        "EmbedLayerNormalization",
        [
            "input_ids",
            "",
            init("word", w[e + "word_embeddings.weight"]),
            init("pos", w[e + "position_embeddings.weight"] + w[e + "token_type_embeddings.weight"][0]),
            "",
            init("emb_g", w[e + "LayerNorm.weight"]),
            init("emb_b", w[e + "LayerNorm.bias"]),
            "attention_mask",
        ],
        n_out=2,
        epsilon=eps,
    )
    for n, tensors in enumerate(encoder_layers(w, layers)):
        qkv_w, qkv_b, o_w, o_b, g1, b1, i_w, i_b, f_w, f_b, g2, b2 = (
            init(f"l{n}_{name}", t) for name, t in zip(_LAYER_TENSORS, tensors, strict=True)
        )
        (a,) = node("Attention", [h, qkv_w, qkv_b, lengths], num_heads=heads)
        (a,) = node("MatMul", [a, o_w], domain="")
        (h,) = _add_norm(node, a, o_b, h, g1, b1, eps)
        (i,) = node("MatMul", [h, i_w], domain="")
        (g,) = node("FastGelu", [i, i_b])
        (f,) = node("MatMul", [g, f_w], domain="")
        (h,) = _add_norm(node, f, f_b, h, g2, b2, eps)
    hidden = w[e + "word_embeddings.weight"].shape[1]
    graph = helper.make_graph(
        nodes,
        "minilm",
        [
            helper.make_tensor_value_info(x, TensorProto.INT32, ["batch", "tokens"])
            for x in ("input_ids", "attention_mask")
        ],
        [helper.make_tensor_value_info(h, TensorProto.FLOAT, ["batch", "tokens", hidden])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(_MS, 1)])


def _add_norm(node, x: str, bias: str, skip: str, gain: str, shift: str, eps: float) -> list[str]:
    """LayerNorm(x + bias + skip): the end of one sub-layer (all arguments graph names)."""
    (a,) = node("Add", [x, bias], domain="")
    (a,) = node("Add", [a, skip], domain="")
    return node("LayerNormalization", [a, gain, shift], domain="", axis=-1, epsilon=eps)


class _DropPreprocessHint(logging.Filter):
    """quantize_dynamic logs a hint to run its shape-inference pre-processing on every call;
    this graph carries no shapes that pre-processing would add, so the hint is noise."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "pre-processing" not in record.getMessage()


def quantize(model) -> bytes:
    """``model`` with int8 matrix products (dynamic quantisation, weights per channel)."""
    from onnx import TensorProto
    from onnxruntime.quantization import QuantType, quantize_dynamic

    hint = _DropPreprocessHint()
    logging.getLogger().addFilter(hint)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "int8.onnx"
            quantize_dynamic(
                model,
                out,
                op_types_to_quantize=["MatMul", "Attention"],
                per_channel=True,
                # 7-bit weights: int8 x uint8 products summed in pairs saturate int16 on x86
                # CPUs without VNNI (AVX2-only, e.g. this project's CI machines), which made the
                # int8 graph's output drift far from the float one there
                reduce_range=True,
                weight_type=QuantType.QInt8,
                # contrib-op outputs carry no inferred type: they are all float32
                extra_options={"DefaultTensorType": TensorProto.FLOAT},
            )
            return out.read_bytes()
    finally:
        logging.getLogger().removeFilter(hint)


class OnnxBert:
    """The encoder's forward pass in onnxruntime: ``(ids, mask) -> states``, on one thread."""

    def __init__(
        self, w: dict[str, np.ndarray], heads: int, layers: int | None = None, quantized: bool = False
    ) -> None:
        import onnxruntime as ort

        model = build_graph(w, heads, layers)
        data = quantize(model) if quantized else model.SerializeToString()
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(
            data, opts, providers=["CPUExecutionProvider"], disabled_optimizers=["SkipLayerNormFusion"]
        )
        # Activations are quantised per call, over the whole batch: a text's states would
        # depend on its batch mates, so the int8 graph is run one text at a time.
        self.per_text = quantized

    def __call__(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        feed = {
            "input_ids": ids.astype(np.int32, copy=False),
            "attention_mask": mask.astype(np.int32, copy=False),
        }
        return self.session.run(None, feed)[0]
