"""MiniLM's top layer trained as an NLI cross-encoder on SNLI pairs, on the dev sets frozen.

bench/judge_xenc.py's cross-encoder (the lower five all-MiniLM-L6-v2 layers frozen, the top
layer and a logistic head over its [CLS] and mean-pooled states trained in jax) is trained on
``--pairs`` SNLI training pairs of bench/judge_snli_data.py's sdist, read as the dev claims are,
``[CLS] hypothesis [SEP] premise [SEP]`` (the claim first, its evidence after), entailment
against neutral or contradiction. Its SNLI test accuracy is printed; then its logit on each dev
claim (``[CLS] claim [SEP] s1 s2 s3 [SEP]``, judge_xenc's joint input) is a 28th feature beside
the tier-2 head's 27 (``+xsnli``), fit by judge_quality.fit_model on bench/judge_minilm.py's
grouped folds and printed beside tier 1 and the tier (bench/judge_snli.py's table and paired
bootstrap). Lower-layer states and the trained layer are cached under ``.cache/judge-quality/``.
Without the SNLI sdist, jax or the MiniLM package it says so and measures nothing.

Measured (defaults: 50,000 pairs, 1 epoch, layer lr 1e-4, head 1e-3; lower layers 202 + 40
CPU-s, training 267 CPU-s): SNLI test entailment-or-not accuracy 0.818 (AUROC 0.894; the
alignment head of bench/judge_snli.py reaches 0.892), and it does not transfer to the longer
dev inputs: its logit alone has dev AUROC AB 0.567, FS 0.518, FC 0.611, WiCE 0.540; banded
bal.acc with it as one more feature (tier 1 = claim-v4) 0.711 / 0.807 / 0.679 / 0.699 against
the tier's 0.715 / 0.806 / 0.678 / 0.694 (every interval across 0).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import judge_dev_data as dev  # noqa: E402
import judge_metrics as jm  # noqa: E402
import judge_quality as jq  # noqa: E402
import judge_snli as js  # noqa: E402
import judge_snli_data as snli  # noqa: E402
import judge_xenc as xenc  # noqa: E402
from judge_align import mini_features  # noqa: E402
from judge_align_features import load_dev  # noqa: E402
from ragpulse.collector.judge.tiers import minilm  # noqa: E402

__all__ = ["main"]


def _args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--snli", type=Path, default=snli.DEFAULT_PATH, help=f"the {snli.SDIST} or its folder")
    ap.add_argument("--pairs", type=int, default=50_000, help="SNLI training pairs (a fixed random subset)")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--layer-lr", type=float, default=1e-4)
    ap.add_argument("--head-lr", type=float, default=1e-3)
    ap.add_argument("--decay", type=float, default=1e-2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--band", type=float, nargs=2, default=(0.35, 0.65))
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    args.top = 1
    return args


class _Pairs:
    """The attributes judge_xenc.train and logits read of their data: no linear-term features,
    the entailment label, equal weights."""

    def __init__(self, labels: np.ndarray) -> None:
        self.y = (labels == 0).astype(int)
        self.x = np.zeros((len(labels), 0))
        self.weight = np.ones(len(labels))


def _snli_lower(args: argparse.Namespace) -> dict:
    """The lower-layer states of the joint SNLI inputs (training subset and test), cached."""
    if not args.snli.exists():
        raise FileNotFoundError(f"no SNLI pairs at {args.snli}; get the sdist with: {snli.GET_IT}")
    files = snli._read_files(args.snli)
    h = hashlib.sha256(json.dumps({s: hashlib.sha256(b).hexdigest() for s, b in files.items()}).encode())
    h.update(Path(minilm.__file__).read_bytes())
    h.update(f"{args.pairs}:{minilm.locate_model().pin}:joint-v1".encode())
    path = dev.CACHE / f"snli-xenc-lower-{h.hexdigest()[:16]}.pkl"
    if path.is_file():
        return pickle.loads(path.read_bytes())
    pairs = snli.read_pairs(files)
    pick = np.sort(np.random.default_rng(0).permutation(len(pairs["train"]))[: args.pairs])
    out = {}
    for split, rows in (("train", [pairs["train"][i] for i in pick]), ("test", pairs["test"])):
        low = xenc.encode_lower([f"{q} [SEP] {p}" for p, q, _ in rows], xenc.LAYERS - args.top)
        out[split] = (low, np.array([y for _, _, y in rows]))
        print(
            f"SNLI {split}: {len(rows)} joint inputs, {low['cpu_s']:.0f} CPU-s", file=sys.stderr, flush=True
        )
    dev.CACHE.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL))
    return out


def _trained(args: argparse.Namespace, lower: dict, w: dict) -> dict:
    """The top layer and head trained on the SNLI subset (cached)."""
    h = hashlib.sha256(Path(xenc.__file__).read_bytes())
    h.update(repr((args.pairs, args.epochs, args.layer_lr, args.head_lr, args.decay, args.seed)).encode())
    h.update(lower["train"][0]["offsets"].tobytes())
    path = dev.CACHE / f"snli-xenc-layer-{h.hexdigest()[:16]}.pkl"
    if path.is_file():
        return pickle.loads(path.read_bytes())
    import jax

    low, labels = lower["train"]
    t0 = time.process_time()
    p = xenc.train(low, w, _Pairs(labels), np.ones(len(labels), dtype=bool), args)
    p = jax.tree_util.tree_map(np.asarray, p)
    print(f"trained on {len(labels)} SNLI pairs x {args.epochs}: {time.process_time() - t0:.0f} CPU-s")
    path.write_bytes(pickle.dumps(p, protocol=pickle.HIGHEST_PROTOCOL))
    return p


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    try:
        import jax  # noqa: F401

        lower = _snli_lower(args)
    except (ImportError, FileNotFoundError, minilm.TierUnavailable) as exc:
        print(f"bench/judge_snli_xenc.py: nothing measured: {exc}")
        return 0
    loaded = load_dev("judge_snli_xenc.py")
    if loaded is None:
        return 0
    st, base = loaded
    w = minilm.load_safetensors(minilm.locate_model().folder / "model.safetensors")
    p = _trained(args, lower, w)
    low, labels = lower["test"]
    test = _Pairs(labels)
    z = xenc.logits(p, low, test, np.ones(len(labels), dtype=bool), args)
    results = {
        "snli_test": {
            "pairs": len(labels),
            "accuracy": float(np.mean((z > 0) == test.y)),
            "auroc": jm.auroc(z, test.y),
            "majority": float(max(test.y.mean(), 1 - test.y.mean())),
        }
    }
    print(f"SNLI test (entailment or not): {results['snli_test']}", flush=True)
    plus = jq.Data(base.items, args.folds)
    plus.x = np.hstack([base.x, mini_features(st)])
    dev_low = xenc.lower_states(st, xenc.LAYERS - args.top)
    frozen = p | {"coef": np.zeros(plus.x.shape[1], np.float32)}
    score = xenc.logits(frozen, dev_low, plus, np.ones(len(base.y), dtype=bool), args)
    results |= js.transfer(args, score, base, plus, "+xsnli", None)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
