"""all-MiniLM-L6-v2 as an entailment cross-encoder, in jax: the forward pass and the loss.

The parameters keep the safetensors names of the base model (``embeddings.*``,
``encoder.layer.N.*``, ``pooler.dense.*``) plus the new head ``classifier.weight`` /
``classifier.bias`` (three outputs: entailment, neutral, contradiction), so the exporter reads
them with the same names the judge's BERT graph builder reads. Matching that graph: token type
0 throughout (the pair is told apart by its ``[SEP]``), GELU in its tanh form, layer-norm
epsilon 1e-12, the ``[CLS]`` state through the pooler's dense layer and tanh, then the head.

Labels (:data:`training.prepare.LABELS`): 0 entailment, 1 neutral, 2 contradiction, and 3
"not entailment" from the two-way files, whose loss is that of neutral-or-contradiction
(the log of the two probabilities' sum), so three-way and two-way data train one head.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

HEADS = 12
LAYERS = 6
CLASSES = 3
FROZEN: tuple[str, ...] = ("embeddings.word_embeddings.weight",)


def init_params(base: dict[str, np.ndarray], seed: int) -> tuple[dict, dict]:
    """(trainable, frozen) float32 parameters: the base model's, and a new head."""
    rng = np.random.default_rng(seed)
    hidden = base["embeddings.word_embeddings.weight"].shape[1]
    params = {k: np.asarray(v, np.float32) for k, v in base.items()}
    params["classifier.weight"] = (rng.standard_normal((CLASSES, hidden)) * 0.02).astype(np.float32)
    params["classifier.bias"] = np.zeros(CLASSES, np.float32)
    frozen = {k: jnp.asarray(params.pop(k)) for k in FROZEN}
    return {k: jnp.asarray(v) for k, v in params.items()}, frozen


def _ln(x, g, b, eps: float = 1e-12):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) * jax.lax.rsqrt(v + eps) * g + b


def _dense(p: dict, name: str, x):
    return x @ p[name + ".weight"].T + p[name + ".bias"]


def _dropout(x, rate: float, key):
    if key is None or rate == 0.0:
        return x
    keep = jax.random.bernoulli(key, 1.0 - rate, x.shape)
    return jnp.where(keep, x / (1.0 - rate), 0.0)


def logits(p: dict, frozen: dict, ids, mask, key=None, rate: float = 0.1):
    """[batch, 3] logits for ``[CLS] premise [SEP] hypothesis [SEP]`` ids (right-padded)."""
    n, t = ids.shape
    keys = list(jax.random.split(key, 2 * LAYERS + 2)) if key is not None else [None] * (2 * LAYERS + 2)
    e = "embeddings."
    h = frozen[e + "word_embeddings.weight"][ids] + p[e + "position_embeddings.weight"][:t]
    h = _ln(h + p[e + "token_type_embeddings.weight"][0], p[e + "LayerNorm.weight"], p[e + "LayerNorm.bias"])
    h = _dropout(h, rate, keys[0])
    bias = jnp.where(mask[:, None, None, :] > 0, 0.0, -1e9)
    d = h.shape[-1] // HEADS
    for i in range(LAYERS):
        a = f"encoder.layer.{i}."
        q, k, v = (
            _dense(p, a + f"attention.self.{m}", h).reshape(n, t, HEADS, d).transpose(0, 2, 1, 3)
            for m in ("query", "key", "value")
        )
        s = jax.nn.softmax(q @ k.transpose(0, 1, 3, 2) / math.sqrt(d) + bias, axis=-1)
        att = (s @ v).transpose(0, 2, 1, 3).reshape(n, t, -1)
        att = _dropout(_dense(p, a + "attention.output.dense", att), rate, keys[2 * i + 1])
        h = _ln(att + h, p[a + "attention.output.LayerNorm.weight"], p[a + "attention.output.LayerNorm.bias"])
        f = jax.nn.gelu(_dense(p, a + "intermediate.dense", h), approximate=True)
        f = _dropout(_dense(p, a + "output.dense", f), rate, keys[2 * i + 2])
        h = _ln(f + h, p[a + "output.LayerNorm.weight"], p[a + "output.LayerNorm.bias"])
    pooled = jnp.tanh(_dense(p, "pooler.dense", h[:, 0]))
    return _dense(p, "classifier", _dropout(pooled, rate, keys[-1]))


def loss(p: dict, frozen: dict, ids, mask, labels, weights, key, rate: float = 0.1):
    """Mean negative log-likelihood over the real rows (``weights`` 0 marks padding rows)."""
    z = logits(p, frozen, ids, mask, key, rate)
    log_z = jax.nn.logsumexp(z, axis=-1)
    three = jnp.take_along_axis(z, jnp.minimum(labels, 2)[:, None], axis=-1)[:, 0]
    rest = jax.nn.logsumexp(z[:, 1:], axis=-1)
    nll = log_z - jnp.where(labels == 3, rest, three)
    return (nll * weights).sum() / jnp.maximum(weights.sum(), 1.0)
