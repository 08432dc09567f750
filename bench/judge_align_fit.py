"""The alignment head over frozen MiniLM token states, trained with jax, for bench/judge_align.py.

The head (a decomposable-attention / ESIM-lite model) reads a claim's word pieces against the
pieces of the chunk sentences tier 1 aligns it with, all as last-layer all-MiniLM-L6-v2 states:

1. every claim piece (punctuation, [CLS] and [SEP] left out) and evidence piece is
   unit-normalised; ``cos`` is their cosine matrix; ``proj`` a fixed projection to ``dim``
   dimensions (the first uncentred principal axes of all the encoded pieces: no labels);
2. each claim piece is soft-aligned to the evidence, ``a = softmax(tau * cos) @ e`` (projected);
3. a small MLP compares the ``--inputs`` of ``[c, a, c * a, |c - a|]`` and four fixed piece
   features (:data:`TOKEN_FEATURES`: the best cosine, the piece occurs verbatim in the evidence,
   it holds a digit, a digit piece the evidence lacks) into a score and an importance logit;
4. the scores are pooled three ways (a soft minimum: one unsupported piece sinks the claim;
   the importance-weighted mean; the mean) and added to a linear term over the claim's
   features (tier 1's, optionally the MiniLM tier's four) into one logit.

- :func:`prepare`: the padded arrays of every dev claim, from the cached states;
- :func:`train`: Adam on the weighted log loss (each dev set weighted equally), the linear
  term warm-started from the logistic fit, a fixed number of epochs (nothing held out
  steers it);
- :func:`fit_head`: :func:`train` on ``rows`` plus the isotonic map and number caps from
  outputs cross-validated within ``rows`` (grouped inner folds), as judge_quality.fit_model;
- :func:`predict_head`: the calibrated, capped probability.

jax is a training dependency only (``make align-train``), imported when training starts.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import judge_metrics as jm
import judge_quality as jq
import numpy as np
from ragpulse.collector.judge.tiers.minilm import PUNCTUATION as PUNCT  # the MiniLM tier's own list

__all__ = [
    "TOKEN_FEATURES",
    "adam_moments",
    "add_arguments",
    "unit",
    "fit_head",
    "head_init",
    "predict_head",
    "prepare",
    "token_inputs",
    "train",
    "weighted_log_loss",
]

TOKEN_FEATURES: tuple[str, ...] = ("max_cos", "exact", "is_number", "number_unmatched")
INPUT_PARTS: tuple[str, ...] = ("c", "a", "ca", "diff", "fixed")
MAX_CLAIM_TOKENS = 48
MAX_EVIDENCE_TOKENS = 192
BATCH = 128
# A head's starting parameters for the rows it is trained on (a pretrained head, warm-started).
Start = Callable[[np.ndarray], dict]


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--dim", type=int, default=64, help="projection of the token states")
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--decay", type=float, default=1e-4, help="L2 on the head's weights")
    ap.add_argument("--inputs", nargs="+", choices=INPUT_PARTS, default=list(INPUT_PARTS))
    ap.add_argument("--seed", type=int, default=0)


def unit(a: np.ndarray) -> np.ndarray:
    a = a.astype(np.float32)
    return a / np.maximum(np.linalg.norm(a, axis=-1, keepdims=True), 1e-9)


def token_inputs(
    claim: tuple[list[str], np.ndarray], sentences: list[tuple[list[str], np.ndarray]], proj: np.ndarray
) -> dict[str, np.ndarray] | None:
    """A claim's head inputs from the encoder's output (word pieces and states, [CLS] and [SEP]
    included) for it and its aligned sentences: projected unit states ``c`` (n x d) and ``e``
    (m x d), ``cos`` (n x m, full space), ``fixed`` (n x 4); None without a content piece or
    an evidence piece."""
    tokens, states = claim
    keep = [i for i, t in enumerate(tokens[1:-1], start=1) if t not in PUNCT][:MAX_CLAIM_TOKENS]
    ev_tokens = [t for toks, _ in sentences for t in toks[1:-1]][:MAX_EVIDENCE_TOKENS]
    if not keep or not ev_tokens:
        return None
    cu = unit(states[keep])
    eu = unit(np.concatenate([st[1:-1] for _, st in sentences])[:MAX_EVIDENCE_TOKENS])
    cos = cu @ eu.T
    vocab = set(ev_tokens)
    pieces = [tokens[i] for i in keep]
    exact = np.array([p in vocab for p in pieces], dtype=np.float32)
    number = np.array([any(ch.isdigit() for ch in p) for p in pieces], dtype=np.float32)
    fixed = np.stack([cos.max(1), exact, number, number * (1.0 - exact)], axis=1)
    return {"c": cu @ proj, "e": eu @ proj, "cos": cos, "fixed": fixed}


def _projection(states: Any, dim: int) -> np.ndarray:
    """The first ``dim`` uncentred principal axes of the unit token states ([CLS]/[SEP] out)."""
    x = unit(np.concatenate([states.text_states(t)[1:-1] for t in range(len(states.tokens))]))
    _, vecs = np.linalg.eigh(x.T @ x)
    return np.ascontiguousarray(vecs[:, ::-1][:, :dim]).astype(np.float32)


def prepare(states: Any, x: np.ndarray, k: int, dim: int) -> dict[str, np.ndarray]:
    """Padded head inputs per kept claim (``x``: its linear-term features), ``k`` aligned
    sentences each (3: the MiniLM tier's own three)."""
    proj = _projection(states, dim)
    n, nc, ne = len(x), MAX_CLAIM_TOKENS, MAX_EVIDENCE_TOKENS
    out = {
        "c": np.zeros((n, nc, dim), np.float32),
        "e": np.zeros((n, ne, dim), np.float32),
        "cos": np.zeros((n, nc, ne), np.float32),
        "fixed": np.zeros((n, nc, len(TOKEN_FEATURES)), np.float32),
        "cmask": np.zeros((n, nc), np.float32),
        "emask": np.zeros((n, ne), np.float32),
        "has": np.zeros(n, np.float32),
        "x": x.astype(np.float32),
    }
    for i in range(n):
        t = states.claim[i]
        sents = states.sents[i][: states.n3[i] if k == 3 else k]
        inp = token_inputs(
            (states.tokens[t], states.text_states(t)),
            [(states.tokens[s], states.text_states(s)) for s in sents],
            proj,
        )
        if inp is None:
            continue
        a, b = inp["cos"].shape
        out["c"][i, :a], out["e"][i, :b], out["cos"][i, :a, :b] = inp["c"], inp["e"], inp["cos"]
        out["fixed"][i, :a], out["cmask"][i, :a], out["emask"][i, :b], out["has"][i] = inp["fixed"], 1, 1, 1
    return out


def _forward(p: dict[str, Any], b: dict[str, Any], inputs: tuple[str, ...]) -> Any:
    import jax
    import jax.numpy as jnp

    att = jax.nn.softmax(p["tau"] * b["cos"] + (b["emask"][:, None, :] - 1.0) * 1e9, axis=-1)
    c, a = b["c"], att @ b["e"]
    parts = {"c": c, "a": a, "ca": c * a, "diff": jnp.abs(c - a), "fixed": b["fixed"]}
    h = jax.nn.relu(jnp.concatenate([parts[k] for k in inputs], -1) @ p["w1"] + p["b1"])
    s = h @ p["w2"] + p["b2"]
    m = b["cmask"]
    cnt = jnp.maximum(m.sum(1), 1.0)
    soft_min = -(jax.nn.logsumexp(-s + (m - 1.0) * 1e9, axis=1) - jnp.log(cnt))  # finite without pieces
    w = jax.nn.softmax(h @ p["u"] + (m - 1.0) * 1e9, axis=1)
    pooled = jnp.stack([soft_min, (w * s * m).sum(1), (s * m).sum(1) / cnt], 1) @ p["pool"]
    return b["x"] @ p["coef"] + p["intercept"] + b["has"] * pooled


def head_init(dim: int, args: argparse.Namespace) -> dict:
    """The head's own parameters (attention temperature, MLP, pooling), randomly initialised
    for token states projected to ``dim`` dimensions."""
    rng = np.random.default_rng(args.seed)
    fan = sum(len(TOKEN_FEATURES) if k == "fixed" else dim for k in args.inputs)
    return {
        "tau": np.float32(10.0),
        "w1": rng.normal(0, fan**-0.5, (fan, args.hidden)).astype(np.float32),
        "b1": np.zeros(args.hidden, np.float32),
        "w2": rng.normal(0, args.hidden**-0.5, args.hidden).astype(np.float32),
        "b2": np.float32(0.0),
        "u": np.zeros(args.hidden, np.float32),
        "pool": np.full(3, 0.3, np.float32),
    }


def _init(arrays: dict[str, np.ndarray], data: jq.Data, rows: np.ndarray, args: argparse.Namespace) -> dict:
    coef, b = jm.fit_logistic(arrays["x"][rows], data.y[rows], data.weight[rows], l2=jq.L2)
    return head_init(arrays["c"].shape[2], args) | {
        "coef": np.asarray(coef, np.float32),
        "intercept": np.float32(b),
    }


_JIT: dict[tuple, Any] = {}


def weighted_log_loss(z: Any, y: Any, w: Any) -> Any:
    """The weighted mean log loss of logits ``z`` for labels ``y`` (jax arrays)."""
    import jax.numpy as jnp

    ll = jnp.logaddexp(0.0, z) - y * z
    return (w * ll).sum() / jnp.maximum(w.sum(), 1e-9)


def adam_moments(m: Any, v: Any, g: Any, t: Any) -> tuple[Any, Any, Any]:
    """Adam's moment updates (betas 0.9, 0.999) for gradients ``g`` at step ``t``, and the
    step's bias correction: the update of a parameter is ``lr * corr * m / (sqrt(v) + 1e-8)``."""
    import jax
    import jax.numpy as jnp

    m = jax.tree_util.tree_map(lambda a, x: 0.9 * a + 0.1 * x, m, g)
    v = jax.tree_util.tree_map(lambda a, x: 0.999 * a + 0.001 * x * x, v, g)
    return m, v, jnp.sqrt(1 - 0.999**t) / (1 - 0.9**t)


def _jitted(args: argparse.Namespace) -> tuple[Any, Any]:
    """The jitted Adam step on the weighted log loss and the forward pass, per setting."""
    inputs = tuple(args.inputs)
    key = (args.lr, args.decay, inputs)
    if key in _JIT:
        return _JIT[key]
    import jax
    import jax.numpy as jnp

    def loss(p: dict, b: dict) -> Any:
        reg = sum(jnp.sum(p[n] ** 2) for n in ("w1", "w2", "u", "pool"))
        return weighted_log_loss(_forward(p, b, inputs), b["y"], b["w"]) + args.decay * reg

    @jax.jit
    def step(p: dict, m: dict, v: dict, t: Any, b: dict) -> tuple:
        m, v, corr = adam_moments(m, v, jax.grad(loss)(p, b), t)
        p = jax.tree_util.tree_map(lambda q, a, s: q - args.lr * corr * a / (jnp.sqrt(s) + 1e-8), p, m, v)
        return p, m, v

    _JIT[key] = (step, jax.jit(lambda p, b: _forward(p, b, inputs)))
    return _JIT[key]


def _batches(rows: np.ndarray | np.ndarray, arrays: dict[str, np.ndarray]):
    """Fixed-size batches (one jit shape): the indices, padded by repeating the first."""
    for s in range(0, len(rows), BATCH):
        idx = rows[s : s + BATCH]
        pad = np.concatenate([idx, np.repeat(idx[:1], BATCH - len(idx))])
        keys = ("c", "e", "cos", "fixed", "cmask", "emask", "has", "x")
        yield idx, pad, {k: arrays[k][pad] for k in keys}


def train(
    arrays: dict[str, np.ndarray],
    data: jq.Data,
    rows: np.ndarray,
    args: argparse.Namespace,
    start: Start | None = None,
) -> dict:
    """The head's parameters trained on ``rows``, from ``start(rows)`` when given (a pretrained
    head), else from a random head and the logistic fit of the linear term."""
    import jax.numpy as jnp

    init = start(rows) if start is not None else _init(arrays, data, rows, args)
    p = {k: jnp.asarray(v) for k, v in init.items()}
    m = {k: jnp.zeros_like(v) for k, v in p.items()}
    v = {k: jnp.zeros_like(x) for k, x in p.items()}
    step, _ = _jitted(args)
    w = data.weight / data.weight[rows].mean()
    rng = np.random.default_rng(args.seed)
    t = 0
    for _ in range(args.epochs):
        for idx, pad, b in _batches(rng.permutation(np.flatnonzero(rows)), arrays):
            b["y"] = data.y[pad].astype(np.float32)
            b["w"] = np.where(np.arange(BATCH) < len(idx), w[pad], 0.0).astype(np.float32)
            t += 1
            p, m, v = step(p, m, v, jnp.float32(t), b)
    return {k: np.asarray(x) for k, x in p.items()}


def logits(
    params: dict, arrays: dict[str, np.ndarray], rows: np.ndarray, args: argparse.Namespace
) -> np.ndarray:
    """The head's logits on ``rows`` (a boolean mask), in row order."""
    _, fwd = _jitted(args)
    out = [np.asarray(fwd(params, b))[: len(idx)] for idx, _, b in _batches(np.flatnonzero(rows), arrays)]
    return np.concatenate(out) if out else np.zeros(0)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))


def fit_head(
    arrays: dict[str, np.ndarray],
    data: jq.Data,
    rows: np.ndarray,
    args: argparse.Namespace,
    start: Start | None = None,
) -> dict:
    """:func:`train` on ``rows`` (from ``start``), with the isotonic map and number caps from
    inner grouped cross-validated outputs within ``rows``."""
    inner = np.array([jm.fold_of(it["group"], args.inner, seed=1) for it in data.items])
    oof = np.zeros(len(data.y))
    for j in range(args.inner):
        tr, te = rows & (inner != j), rows & (inner == j)
        oof[te] = _sigmoid(logits(train(arrays, data, tr, args, start), arrays, te, args))
    xs, ys = jq.isotonic(oof[rows], data.y[rows], data.weight[rows])
    return {
        "params": train(arrays, data, rows, args, start),
        "knots": (xs, ys),
        **jq.number_caps(data, rows),
    }


def predict_head(
    head: dict, arrays: dict[str, np.ndarray], data: jq.Data, rows: np.ndarray, args: argparse.Namespace
) -> np.ndarray:
    """The head's probability on ``rows``: isotonic map, then the judge's caps (jq.predict's)."""
    p = np.interp(_sigmoid(logits(head["params"], arrays, rows, args)), *head["knots"])
    return jq.capped(p, data, rows, head)
