"""Fine-tune all-MiniLM-L6-v2 as the local judge's entailment cross-encoder.

Reads what ``training/prepare.py`` wrote (``pairs.npz``, ``dev.npz``, ``base.npz``) and
trains with AdamW (linear warm-up and decay, gradient clipping), fixed seeds, batches of
similar length padded to a few bucket lengths (one compiled step per bucket). The word
embeddings stay frozen: the data is small next to the vocabulary, and the trained part is
what the run writes. Every ``--checkpoint-every`` steps it saves its whole state under
``--out``/checkpoint.pkl and a later run with the same settings resumes from it (a session
may stop mid-run); a run with other settings refuses the checkpoint and says so.

Logged to ``--out``/log.jsonl (and stderr): the training loss every 100 steps; at the end of
each epoch, on the held-in validation groups (5% of the NLI groups) accuracy and AUROC of
entailment against the rest, and with ``--dev-every-epoch`` (or at the end) the zero-shot
AUROC and balanced accuracy on each claim-level dev set. The result is
``--out``/trained.npz: the trainable tensors in float16 (the exporter adds the frozen word
embeddings from base.npz), and ``--out``/result.json with the settings and figures.

CPU or accelerator: jax picks what it finds; the same settings give the same model up to
floating-point order. ``make train-judge`` runs it on CPU (jax's CPU wheels, the ``train``
extra; never a runtime, test or CI dependency).
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

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DIR = ROOT / ".cache" / "entailment"
BUCKETS: tuple[int, ...] = (32, 48, 64, 96, 128, 192, 256)


def auroc(y: np.ndarray, s: np.ndarray) -> float:
    """Area under the ROC curve (ties counted half), by ranks."""
    from scipy.stats import rankdata

    pos = y == 1
    n1, n0 = int(pos.sum()), int((~pos).sum())
    if not n1 or not n0:
        return float("nan")
    r = rankdata(s)
    return float((r[pos].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def balanced_accuracy(y: np.ndarray, pred: np.ndarray) -> float:
    return float(((pred[y == 1] == 1).mean() + (pred[y == 0] == 0).mean()) / 2)


class Pairs:
    """Ragged tokenised pairs and their batches, padded to a bucket length."""

    def __init__(self, ids: np.ndarray, offsets: np.ndarray, rows: np.ndarray) -> None:
        self.ids, self.offsets, self.rows = ids, offsets, rows
        self.lengths = (offsets[rows + 1] - offsets[rows]).astype(np.int64)

    def batch(self, members: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ids, mask, weights) of positions ``members`` into ``rows``, ``size`` rows."""
        longest = int(self.lengths[members].max())
        t = next(b for b in BUCKETS if b >= longest)
        ids = np.zeros((size, t), np.int32)
        mask = np.zeros((size, t), np.int32)
        for j, m in enumerate(members):
            r = self.rows[m]
            seq = self.ids[self.offsets[r] : self.offsets[r + 1]]
            ids[j, : len(seq)] = seq
            mask[j, : len(seq)] = 1
        weights = np.zeros(size, np.float32)
        weights[: len(members)] = 1.0
        return ids, mask, weights

    def epoch_order(self, rng: np.random.Generator, size: int) -> list[np.ndarray]:
        """Batches of similar length, in random order: shuffle, sort within windows of 50
        batches by length, cut, shuffle the batches."""
        order = rng.permutation(len(self.rows))
        window = size * 50
        batches = []
        for i in range(0, len(order), window):
            w = order[i : i + window]
            w = w[np.argsort(self.lengths[w], kind="stable")]
            batches.extend(w[j : j + size] for j in range(0, len(w), size))
        return [batches[i] for i in rng.permutation(len(batches))]


def settings_digest(args: argparse.Namespace, manifest: dict) -> str:
    keys = ("epochs", "batch", "lr", "warmup", "weight_decay", "seed", "labels", "dropout", "limit")
    blob = json.dumps({k: getattr(args, k) for k in keys} | {"data": manifest}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DIR, help="what training/prepare.py wrote")
    ap.add_argument("--out", type=Path, default=DEFAULT_DIR / "run")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=7e-5)
    ap.add_argument("--warmup", type=float, default=0.06, help="share of steps warming up")
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--labels", choices=("three-way", "two-way"), default="three-way")
    ap.add_argument("--checkpoint-every", type=int, default=500)
    ap.add_argument("--dev-every-epoch", action="store_true")
    ap.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (timing runs)")
    ap.add_argument(
        "--limit", type=int, default=0, help="use only this many pairs of each split (smoke runs)"
    )
    return ap.parse_args(argv)


class Run:
    """One training run: its data splits, model state, optimiser, log and checkpoint."""

    def __init__(self, args: argparse.Namespace) -> None:
        import jax
        import optax

        sys.path.insert(0, str(ROOT))
        from training.model import init_params

        self.args, self.t0 = args, time.time()
        args.out.mkdir(parents=True, exist_ok=True)
        self.manifest = json.loads((args.data / "manifest.json").read_text())
        self.digest = settings_digest(args, self.manifest)
        self.ckpt = args.out / "checkpoint.pkl"
        self._load_splits()
        params, self.frozen = init_params(dict(np.load(args.data / "base.npz")), args.seed)
        self.total = -(-len(self.train.rows) // args.batch) * args.epochs
        warm = int(self.total * args.warmup)
        schedule = optax.join_schedules(
            [
                optax.linear_schedule(0.0, args.lr, max(1, warm)),
                optax.linear_schedule(args.lr, 0.0, self.total - warm),
            ],
            [warm],
        )
        decay_mask = {k: not (k.endswith(".bias") or "LayerNorm" in k) for k in params}
        self.opt = optax.chain(
            optax.clip_by_global_norm(1.0),
            optax.adamw(schedule, weight_decay=args.weight_decay, mask=decay_mask),
        )
        self.state = {"params": params, "opt": self.opt.init(params), "step": 0}
        self.device = str(jax.devices()[0])
        self._compile()

    def _load_splits(self) -> None:
        args = self.args
        nli = np.load(args.data / "pairs.npz")
        labels = nli["label"].astype(np.int32)
        self.labels = np.where(labels == 0, 0, 3).astype(np.int32) if args.labels == "two-way" else labels
        self.train = Pairs(nli["ids"], nli["offsets"], np.flatnonzero(~nli["val"]))
        self.held = Pairs(nli["ids"], nli["offsets"], np.flatnonzero(nli["val"]))
        self.dev_npz = np.load(args.data / "dev.npz")
        self.dev = Pairs(self.dev_npz["ids"], self.dev_npz["offsets"], np.arange(len(self.dev_npz["label"])))
        if args.limit:
            pick = np.random.default_rng(args.seed)
            for split in (self.train, self.held, self.dev):
                keep = np.sort(pick.choice(len(split.rows), min(args.limit, len(split.rows)), replace=False))
                split.rows, split.lengths = split.rows[keep], split.lengths[keep]

    def _compile(self) -> None:
        import jax
        import optax

        from training.model import logits, loss

        opt, rate = self.opt, self.args.dropout

        @jax.jit
        def train_step(p, o, frozen, ids, mask, lab, w, key):
            value, grads = jax.value_and_grad(loss)(p, frozen, ids, mask, lab, w, key, rate)
            updates, o = opt.update(grads, o, p)
            return optax.apply_updates(p, updates), o, value

        @jax.jit
        def predict(p, frozen, ids, mask):
            return jax.nn.softmax(logits(p, frozen, ids, mask), axis=-1)

        self.train_step, self.predict = train_step, predict

    def log(self, **row) -> None:
        row = {"t": round(time.time() - self.t0, 1)} | row
        print(json.dumps(row), file=sys.stderr, flush=True)
        with (self.args.out / "log.jsonl").open("a") as fh:
            fh.write(json.dumps(row) + "\n")

    def resume(self) -> bool:
        """Load the checkpoint if there is one; False when it was made with other settings."""
        import jax
        import jax.numpy as jnp

        if not self.ckpt.is_file():
            return True
        saved = pickle.loads(self.ckpt.read_bytes())
        if saved["digest"] != self.digest:
            print(
                f"{self.ckpt}: saved with other settings or data ({saved['digest']} != {self.digest}); "
                "remove it or use another --out",
                file=sys.stderr,
            )
            return False
        step = int(saved.pop("step"))
        saved.pop("digest")
        self.state = jax.tree_util.tree_map(jnp.asarray, saved) | {"step": step}
        self.log(event="resumed", step=step)
        return True

    def checkpoint(self) -> None:
        import jax

        blob = {k: jax.tree_util.tree_map(np.asarray, self.state[k]) for k in ("params", "opt")}
        tmp = self.ckpt.with_suffix(".tmp")
        tmp.write_bytes(pickle.dumps(blob | {"step": self.state["step"], "digest": self.digest}))
        tmp.replace(self.ckpt)

    def probabilities(self, pairs: Pairs, size: int = 256) -> np.ndarray:
        order = np.argsort(pairs.lengths, kind="stable")
        out = np.zeros((len(order), 3), np.float32)
        for i in range(0, len(order), size):
            members = order[i : i + size]
            ids, mask, _ = pairs.batch(members, size)
            out[members] = np.asarray(self.predict(self.state["params"], self.frozen, ids, mask))[
                : len(members)
            ]
        return out

    def evaluate(self, epoch: int, with_dev: bool) -> dict:
        p = self.probabilities(self.held)
        y = (self.labels[self.held.rows] == 0).astype(int)
        row = {
            "event": "eval",
            "epoch": epoch,
            "held_in_accuracy": round(float(((p[:, 0] >= 0.5) == y).mean()), 4),
            "held_in_auroc": round(auroc(y, p[:, 0]), 4),
        }
        if with_dev:
            d, dev = self.probabilities(self.dev), self.dev_npz
            for si, name in enumerate(dev["names"]):
                sel = dev["source"][self.dev.rows] == si
                yd = dev["label"][self.dev.rows][sel].astype(int)
                row[f"dev_{name}_auroc"] = round(auroc(yd, d[sel, 0]), 4)
                row[f"dev_{name}_bacc"] = round(balanced_accuracy(yd, (d[sel, 0] >= 0.5).astype(int)), 4)
            np.save(self.args.out / f"dev-probs-epoch{epoch}.npy", d.astype(np.float16))
        self.log(**row)
        return row

    def fit(self) -> list[dict] | None:
        """Train every epoch (replaying the data order and keys up to a resumed step); the
        figures of each epoch, None when stopped by ``--max-steps``."""
        import jax

        args, state = self.args, self.state
        rng, key = np.random.default_rng(args.seed), jax.random.PRNGKey(args.seed)
        self.log(
            event="start",
            steps=self.total,
            pairs=int(len(self.train.rows)),
            held_in=int(len(self.held.rows)),
            device=self.device,
            digest=self.digest,
        )
        figures, resumed_at, step = [], int(state["step"]), 0
        for epoch in range(1, args.epochs + 1):
            running, seen, t_epoch = 0.0, 0, time.time()
            for members in self.train.epoch_order(rng, args.batch):
                step += 1
                key, sub = jax.random.split(key)
                if step <= resumed_at:
                    continue  # resumed: the data order and keys replay, the work does not
                ids, mask, w = self.train.batch(members, args.batch)
                lab = np.zeros(args.batch, np.int32)
                lab[: len(members)] = self.labels[self.train.rows[members]]
                state["params"], state["opt"], value = self.train_step(
                    state["params"], state["opt"], self.frozen, ids, mask, lab, w, sub
                )
                state["step"] = step
                running, seen = running + float(value), seen + 1
                if step % 100 == 0:
                    rate = seen * args.batch / (time.time() - t_epoch)
                    self.log(
                        event="train",
                        epoch=epoch,
                        step=step,
                        loss=round(running / seen, 4),
                        pairs_per_s=round(rate, 1),
                    )
                    running, seen, t_epoch = 0.0, 0, time.time()
                if step % args.checkpoint_every == 0:
                    self.checkpoint()
                if args.max_steps and step >= args.max_steps:
                    self.log(event="stopped", step=step)
                    return None
            if step > resumed_at:
                figures.append(self.evaluate(epoch, args.dev_every_epoch or epoch == args.epochs))
        return figures

    def save(self, figures: list[dict]) -> None:
        trained = {k: np.asarray(v).astype(np.float16) for k, v in self.state["params"].items()}
        np.savez(self.args.out / "trained.npz", **trained)
        result = {
            "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(self.args).items()},
            "digest": self.digest,
            "data": self.manifest,
            "device": self.device,
            "seconds": round(time.time() - self.t0, 1),
            "epochs": figures,
        }
        (self.args.out / "result.json").write_text(json.dumps(result, indent=1) + "\n")
        self.log(event="done", seconds=result["seconds"])


def main(argv: list[str] | None = None) -> int:
    run = Run(parse_args(argv))
    if not run.resume():
        return 2
    figures = run.fit()
    if figures is not None:
        run.save(figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
