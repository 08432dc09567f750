"""Does NLI pretraining make the alignment head pay? The head pretrained on SNLI, on the dev sets.

The decomposable-attention head of bench/judge_align_fit.py (frozen all-MiniLM-L6-v2 token
states; claim pieces soft-aligned to the evidence pieces, compared by an MLP, pooled) is
pretrained on the SNLI pairs of bench/judge_snli_data.py (premise = evidence, hypothesis =
claim; entailment against neutral or contradiction, or with ``--target`` contradiction
against the others; one logit; no linear term), with jax
(training only: ``make align-train``). Its SNLI test accuracy is printed as a sanity check.

Then, on bench/judge_minilm.py's dev claims and grouped folds (the claim against the tier's
three aligned chunk sentences, bench/judge_align_states.py), side by side:

- ``+snli``: the pretrained head frozen, its logit one more feature beside the tier-2 head's
  (tier 1's, the MiniLM tier's 4), fit by judge_quality.fit_model on the training folds;
- ``snli-ft``: the pretrained head fine-tuned on the training folds (``--ft-epochs``, Adam,
  each dev set weighted equally) with a linear term over the tier-2 head's features, warm-started at
  the ``+snli`` logistic fit (the head's pooling scaled by the logit's coefficient), its
  isotonic map and number cap from grouped inner folds (judge_align_fit.fit_head);

beside tier 1, the current tier-2 head ("+minilm") and the tier as it runs ("tier": +minilm
on tier 1's band), each also banded ("/band": on the claims whose tier-1 probability lies in
``--band``, tier 1 elsewhere). Verdicts at the fold's tier-1 threshold, as the judge's.

``paired_delta`` gives each candidate's banded balanced accuracy minus the tier's, with a 95%
interval from a bootstrap over the claims' groups. Without the SNLI sdist (``--snli``), jax,
the MiniLM package or the dev data it says so and measures nothing.

Measured (int8 states, defaults, tier 1 = claim-v4's 26 features): SNLI test
entailment-or-not accuracy 0.892 (majority 0.657; AUROC 0.955); the frozen logit alone has
dev AUROC AB 0.733, FS 0.826, FC 0.746, WiCE 0.675, but on the dev sets neither transfer
beats the tier beyond noise (banded bal.acc AB / FS / FC / WiCE: tier 0.715 / 0.806 / 0.678 /
0.694, ``+snli`` 0.714 / 0.808 / 0.677 / 0.688, ``+snli-ft`` 0.715 / 0.811 / 0.682 / 0.688,
every interval across 0). With tier 1's earlier 23 features the same held, and ``+snli-ft``
equalled the same fine-tuning from a random head (bench/judge_align.py --with-mini --epochs 3
--lr 5e-4). ``--target contradiction`` (test 0.859) adds nothing either.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import judge_align_fit as fit  # noqa: E402
import judge_dev_data as dev  # noqa: E402
import judge_metrics as jm  # noqa: E402
import judge_quality as jq  # noqa: E402
import judge_snli_data as snli  # noqa: E402
from judge_align import _verdict, mini_features  # noqa: E402
from judge_align_states import load_states  # noqa: E402
from judge_minilm import _table  # noqa: E402
from ragpulse.collector.judge.tiers import minilm  # noqa: E402

__all__ = ["main", "paired_delta", "pretrain", "snli_logits", "transfer"]


def _args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--snli", type=Path, default=snli.DEFAULT_PATH, help=f"the {snli.SDIST} or its folder")
    ap.add_argument("--data", type=Path, default=dev.DATA)
    ap.add_argument("--backend", choices=minilm.BACKENDS, default=minilm.DEFAULT_BACKEND)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--inner", type=int, default=3, help="grouped inner folds for the calibration map")
    ap.add_argument("--factscore-share", type=float, default=0.25)
    ap.add_argument("--band", type=float, nargs=2, default=(0.35, 0.65))
    ap.add_argument("--snli-epochs", type=int, default=4)
    ap.add_argument("--snli-lr", type=float, default=2e-3)
    ap.add_argument(
        "--target",
        choices=(snli.LABELS[0], snli.LABELS[2]),
        default=snli.LABELS[0],
        help="the SNLI class learnt",
    )
    ap.add_argument("--snli-only", action="store_true", help="pretrain and report SNLI test accuracy only")
    ap.add_argument("--ft-epochs", type=int, default=3, help="fine-tuning epochs on the dev training folds")
    ap.add_argument("--ft-lr", type=float, default=5e-4)
    ap.add_argument("--no-ft", action="store_true", help="skip the fine-tuned head (minutes of CPU)")
    ap.add_argument("--json", type=Path, help="write the figures here")
    fit.add_arguments(ap)
    return ap.parse_args(argv)


def _with(args: argparse.Namespace, **kw: Any) -> argparse.Namespace:
    return argparse.Namespace(**(vars(args) | kw))


def snli_logits(p: dict, st: snli.SnliStates, pairs: np.ndarray, proj: np.ndarray, args: argparse.Namespace):
    """The head's entailment logits for ``pairs``."""
    _, fwd = fit._jitted(_with(args, lr=args.snli_lr))
    target = snli.LABELS.index(args.target)
    return np.concatenate(
        [np.asarray(fwd(p, b))[:n] for n, b in snli.batches(st, pairs, proj, target=target)]
    )


def _snli_report(p: dict, st: snli.SnliStates, proj: np.ndarray, args: argparse.Namespace) -> dict:
    test = st.pairs["test"]
    z, y = snli_logits(p, st, test, proj, args), test[:, 2] == snli.LABELS.index(args.target)
    return {
        "pairs": len(test),
        "accuracy": float(np.mean((z > 0) == y)),
        "balanced_accuracy": jm.balanced_accuracy(z > 0, y),
        "auroc": jm.auroc(z, y),
        "majority": float(max(y.mean(), 1 - y.mean())),
    }


def _head_cache(st: snli.SnliStates, proj: np.ndarray, args: argparse.Namespace) -> Path:
    h = hashlib.sha256(json.dumps(st.sha256, sort_keys=True).encode())
    h.update(Path(fit.__file__).read_bytes())
    h.update(proj.tobytes())
    keys = ("dim", "hidden", "inputs", "seed", "decay", "snli_epochs", "snli_lr", "backend", "target")
    h.update(json.dumps({k: vars(args)[k] for k in keys}).encode())
    return dev.CACHE / f"snli-head-{h.hexdigest()[:16]}.npz"


def pretrain(st: snli.SnliStates, proj: np.ndarray, args: argparse.Namespace) -> dict[str, np.ndarray]:
    """The head trained on the SNLI training pairs (``args.target`` or not), cached under
    ``.cache/judge-quality/``; the SNLI test figures printed after each epoch."""
    path = _head_cache(st, proj, args)
    if path.is_file():
        with np.load(path) as z:
            p = {k: z[k] for k in z.files}
        print(f"SNLI head from {path.name}: test {_snli_report(p, st, proj, args)}")
        return p
    import jax.numpy as jnp

    step, _ = fit._jitted(_with(args, lr=args.snli_lr))
    init = fit.head_init(proj.shape[1], args) | {"coef": np.zeros(0, np.float32), "intercept": np.float32(0)}
    p = {k: jnp.asarray(v) for k, v in init.items()}
    m = {k: jnp.zeros_like(v) for k, v in p.items()}
    v = {k: jnp.zeros_like(x) for k, x in p.items()}
    rng = np.random.default_rng(args.seed)
    train, t, t0 = st.pairs["train"], 0, time.process_time()
    for epoch in range(args.snli_epochs):
        for _, b in snli.batches(
            st, train[rng.permutation(len(train))], proj, target=snli.LABELS.index(args.target)
        ):
            t += 1
            p, m, v = step(p, m, v, jnp.float32(t), b)
        out = {k: np.asarray(x) for k, x in p.items()}
        report = _snli_report(out, st, proj, args)
        print(f"  SNLI epoch {epoch + 1}: {time.process_time() - t0:.0f} CPU-s, test {report}", flush=True)
    dev.CACHE.mkdir(parents=True, exist_ok=True)
    np.savez(path, **out)
    return out


def _warm_start(head: dict, score: np.ndarray, data: jq.Data) -> fit.Start:
    """The fine-tuning start for given training rows: the pretrained head, its pooling scaled
    and the linear term set so that its logit is the logistic fit over [the tier-2 features, score]."""

    def start(rows: np.ndarray) -> dict:
        x = np.hstack([data.x, score[:, None]])
        coef, b = jm.fit_logistic(x[rows], data.y[rows], data.weight[rows], l2=jq.L2)
        beta = float(coef[-1])
        return head | {
            "pool": (head["pool"] * beta).astype(np.float32),
            "coef": coef[:-1].astype(np.float32),
            "intercept": np.float32(b + beta * float(head["intercept"])),
        }

    return start


def _dev_arrays(args: argparse.Namespace) -> tuple[jq.Data, jq.Data, dict, np.ndarray]:
    """The dev claims: tier 1's data, the tier-2 head's features, the head's padded inputs
    (linear term over the 27) and the projection the head reads the states through."""
    states = load_states(args.data, 6, args.factscore_share, backend=args.backend)
    items = dev.load_items(args.data)
    base = jq.Data([items[i] for i in states.keep], args.folds)
    plus = jq.Data([items[i] for i in states.keep], args.folds)
    plus.x = np.hstack([base.x, mini_features(states)])
    return base, plus, fit.prepare(states, plus.x, 3, args.dim), fit._projection(states, args.dim)


Tune = Callable[[np.ndarray], np.ndarray]  # test rows -> the tuned judge's probabilities


def transfer(
    args: argparse.Namespace, score: np.ndarray, base: jq.Data, plus: jq.Data, label: str, tune: Tune | None
) -> dict:
    """Out-of-fold probabilities and verdicts of every judge on the same folds (``args.folds``,
    ``args.band``): tier 1, the tier-2 head (``plus``), the tier-2 head with ``score`` (a frozen
    pretrained head's logit) as a 28th feature (``label``) and, given ``tune``, the judge it
    trains on each fold's training rows (``label-ft``); the table, and each candidate's banded
    bal.acc against the tier's with its group-bootstrap interval."""
    n = len(base.y)
    third = jq.Data(base.items, args.folds)
    third.x = np.hstack([plus.x, score[:, None]])
    names = ("tier1", "+minilm", label) + (() if tune is None else (label + "-ft",))
    out = {k: np.zeros(n) for k in names}
    pred = {k: np.zeros(n, dtype=bool) for k in names}
    t0 = time.process_time()
    for k in range(args.folds):
        test = base.fold == k
        fits = [jq.fit_model(d, ~test) for d in (base, plus, third)]
        for name, d, f in zip(names, (base, plus, third), fits, strict=False):
            out[name][test] = jq.predict(f, d, test)
        if tune is not None:
            out[label + "-ft"][test] = tune(test)
        for name in names:
            pred[name][test] = _verdict(out[name][test], base, test, fits[0]["threshold"])
        print(f"  fold {k}: {time.process_time() - t0:.0f} CPU-s", file=sys.stderr, flush=True)
    band = (out["tier1"] >= args.band[0]) & (out["tier1"] < args.band[1])
    judges = {"tier1": (out["tier1"], pred["tier1"])}
    for name in names[1:]:
        judges[name] = (out[name], pred[name])
        judges[name + "/band"] = (
            np.where(band, out[name], out["tier1"]),
            np.where(band, pred[name], pred["tier1"]),
        )
    alone = {s: jm.auroc(score[base.src == s], base.y[base.src == s]) for s in dev.SOURCES}
    print(f"{label}: the frozen logit alone, AUROC per set:", {s: round(a, 3) for s, a in alone.items()})
    results = {"table": _table(base, judges, band), "logit_auroc": alone, "delta": {}}
    ref = judges["+minilm/band"][1]
    for name in names[2:]:
        d = results["delta"][name] = paired_delta(base, judges[name + "/band"][1], ref)
        print(
            f"{name}/band - the tier, bal.acc (95% group bootstrap): "
            + "; ".join(f"{s} {v:+.3f} [{lo:+.3f}, {hi:+.3f}]" for s, (v, lo, hi) in d.items())
        )
    return results


def _head_transfer(args: argparse.Namespace, head: dict, base: jq.Data, plus: jq.Data, arrays: dict) -> dict:
    """:func:`transfer` of the SNLI-pretrained alignment head: frozen, and fine-tuned."""
    frozen = head | {"coef": np.zeros(plus.x.shape[1], np.float32)}
    score = fit.logits(frozen, arrays, np.ones(len(base.y), dtype=bool), _with(args, lr=args.snli_lr))
    ft = _with(args, lr=args.ft_lr, epochs=args.ft_epochs)

    def tune(test: np.ndarray) -> np.ndarray:
        tuned = fit.fit_head(arrays, plus, ~test, ft, _warm_start(head, score, plus))
        return fit.predict_head(tuned, arrays, plus, test, ft)

    label = "+snli" if args.target == snli.LABELS[0] else "+snli-con"
    return transfer(args, score, base, plus, label, None if args.no_ft else tune)


def paired_delta(
    data: jq.Data, pred: np.ndarray, ref: np.ndarray, draws: int = 2000, seed: int = 0
) -> dict[str, tuple[float, float, float]]:
    """Per set, balanced accuracy of verdicts ``pred`` minus that of ``ref`` on the same claims,
    with its 95% interval from a bootstrap over the claims' groups (a group's claims share a
    response or a person, so they are drawn together: :func:`judge_metrics.group_bootstrap`)."""
    rng = np.random.default_rng(seed)
    groups = np.array([it["group"] for it in data.items])
    y = data.y
    out = {}
    for s in dev.SOURCES:
        idx = np.flatnonzero(data.src == s)

        def delta(rows: np.ndarray, idx: np.ndarray = idx) -> float:
            r = idx[rows]
            return jm.balanced_accuracy(pred[r], y[r]) - jm.balanced_accuracy(ref[r], y[r])

        lo, hi = jm.group_bootstrap(delta, groups[idx], draws=draws, seed=rng)
        out[s] = (delta(np.arange(len(idx))), lo, hi)
    return out


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    try:
        import jax  # noqa: F401

        st = snli.load_snli(args.snli, args.backend)
        base, plus, arrays, proj = _dev_arrays(args)
    except (ImportError, FileNotFoundError, minilm.TierUnavailable) as exc:
        # Optional pieces (jax: `make align-train`; the SNLI sdist; the MiniLM package; the dev data).
        print(f"bench/judge_snli.py: nothing measured: {exc}")
        return 0
    print(
        f"SNLI: {len(st.pairs['train'])} training / {len(st.pairs['test'])} test pairs "
        f"(sha256 {st.sha256}); {st.cost['tokens']:.0f} tokens encoded in {st.cost['cpu_s']:.0f} CPU-s"
    )
    head = pretrain(st, proj, args)
    results: dict[str, Any] = {"snli_test": _snli_report(head, st, proj, args)}
    print(f"SNLI test ({args.target} or not): {results['snli_test']}")
    if not args.snli_only:
        print(
            f"head: inputs {'+'.join(args.inputs)}, d={args.dim}, hidden {args.hidden}; SNLI "
            f"{args.snli_epochs} epochs; fine-tuned {args.ft_epochs} epochs at lr {args.ft_lr}"
        )
        results |= _head_transfer(args, head, base, plus, arrays)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
