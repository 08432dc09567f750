"""Cheap variants of the MiniLM tier's features on the development data: do any add to its four?

From the cached frozen token states (bench/judge_align_states.py: each dev claim and its six
best lexically aligned chunk sentences, in rank order), per claim, against its evidence:

- ``mini4``: the tier's four features (pooled cosine, BERTScore recall, weakest piece, three
  weakest) against the three sentences it uses (``lex3``), against all six (``lex6``), and
  against the ``n`` of the six closest to the claim by pooled MiniLM cosine (``mini-top-n``:
  evidence chosen by meaning as well as by words);
- extra features added to ``mini4 lex3``, one at a time: the best single sentence's recall
  and weakest piece (support by one sentence, not the union), BERTScore precision of the
  best sentence, recall over the pieces not found verbatim (paraphrase strength), IDF-weighted
  recall (document frequencies over the encoded texts, no labels), the verbatim share, a digit
  piece the evidence lacks, a negation word on one side only.

Each row is a logistic model (bench/judge_metrics.fit_logistic, each set weighted equally) over
tier 1's claim features plus the row's features, fit on the same grouped folds as
bench/judge_quality.py; printed: out-of-fold AUROC per set and their mean (the ranking these
features can add; calibration and thresholds are the same machinery for all rows).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import judge_dev_data as dev  # noqa: E402
import judge_metrics as jm  # noqa: E402
import judge_quality as jq  # noqa: E402
from judge_align_fit import unit as _u  # noqa: E402
from judge_align_states import States, load_states  # noqa: E402
from ragpulse.collector.judge.tiers import minilm  # noqa: E402

__all__ = ["load_dev", "main", "print_rows"]

NEGATIONS = frozenset({"not", "no", "never", "nor", "none", "neither", "without", "cannot"})
EXTRA = ("single_recall", "single_min", "precision", "recall_paraphrased", "idf_recall", "verbatim",
         "number_unmatched", "negation_mismatch")  # fmt: skip


def _claim_rows(st: States, i: int, pick: list[int], idf: dict[str, float]) -> list[float]:
    """``mini4`` and the extra features of claim ``i`` against its sentences ``pick``."""
    t = st.claim[i]
    toks, s = st.tokens[t], st.text_states(t).astype(np.float32)
    keep = [j for j, x in enumerate(toks[1:-1], start=1) if x not in minilm.PUNCTUATION]
    if not keep or not pick:
        return [0.0] * (4 + len(EXTRA))
    c = _u(s[keep])
    sents = [st.text_states(x).astype(np.float32) for x in pick]
    per = [c @ _u(x[1:-1]).T for x in sents]
    best = np.concatenate(per, axis=1).max(1)
    pooled = _u(s.mean(0))
    cos = max(float(pooled @ _u(x.mean(0))) for x in sents)
    pieces = [toks[j] for j in keep]
    vocab = {x for k in pick for x in st.tokens[k][1:-1]}
    verbatim = np.array([p in vocab for p in pieces])
    w = np.array([idf.get(p, 0.0) for p in pieces])
    digit_miss = any(any(ch.isdigit() for ch in p) and not v for p, v in zip(pieces, verbatim, strict=True))
    return [
        cos, float(best.mean()), float(best.min()), float(np.sort(best)[:3].mean()),
        max(float(m.max(1).mean()) for m in per), max(float(m.max(1).min()) for m in per),
        max(float(m.max(0).mean()) for m in per),
        float(best[~verbatim].mean()) if (~verbatim).any() else 1.0,
        float((best * w).sum() / max(w.sum(), 1e-9)), float(verbatim.mean()), float(digit_miss),
        float(bool(set(pieces) & NEGATIONS) != bool(vocab & NEGATIONS)),
    ]  # fmt: skip


def _by_meaning(st: States, i: int, n: int) -> list[int]:
    """The ``n`` of claim ``i``'s six sentences closest to it by pooled MiniLM cosine."""
    pooled = _u(st.text_states(st.claim[i]).astype(np.float32).mean(0))
    sims = [float(pooled @ _u(st.text_states(x).astype(np.float32).mean(0))) for x in st.sents[i]]
    return [st.sents[i][j] for j in np.argsort(sims)[::-1][:n]]


def features(st: States) -> dict[str, np.ndarray]:
    """Per evidence choice, the features of every kept claim (rows of ``mini4`` + :data:`EXTRA`)."""
    df = Counter(p for toks in st.tokens for p in set(toks[1:-1]))
    idf = {p: float(np.log(len(st.tokens) / (1 + n))) for p, n in df.items()}
    choices = {
        "lex3": lambda i: st.sents[i][: st.n3[i]],
        "lex6": lambda i: st.sents[i],
        "mini-top-3": lambda i: _by_meaning(st, i, 3),
        "mini-top-1": lambda i: _by_meaning(st, i, 1),
    }
    return {
        k: np.array([_claim_rows(st, i, f(i), idf) for i in range(len(st.claim))]) for k, f in choices.items()
    }


def _cv_auroc(data: jq.Data, x: np.ndarray, folds: int) -> list[float]:
    z = np.zeros(len(data.y))
    for k in range(folds):
        test = data.fold == k
        coef, b = jm.fit_logistic(x[~test], data.y[~test], data.weight[~test], l2=jq.L2)
        z[test] = x[test] @ coef + b
    return [jm.auroc(z[data.src == s], data.y[data.src == s]) for s in dev.SOURCES]


def print_rows(data: jq.Data, rows: dict[str, np.ndarray]) -> None:
    """Out-of-fold AUROC per set of a logistic model over each row's features."""
    print(f"{len(data.y)} claims; out-of-fold AUROC, logistic over the features, grouped 5-fold")
    print(f"  {'features':<40}" + "".join(f"{s[:12]:>13}" for s in dev.SOURCES) + f"{'mean':>8}")
    for name, x in rows.items():
        a = _cv_auroc(data, x, 5)
        print(f"  {name:<40}" + "".join(f"{v:>13.3f}" for v in a) + f"{np.mean(a):>8.4f}")


def load_dev(script: str) -> tuple[States, jq.Data] | None:
    """The cached states and the kept claims' items; None (saying so) without the MiniLM package."""
    try:
        st = load_states(dev.DATA, 6, 0.25)
    except minilm.TierUnavailable as exc:
        print(f"bench/{script}: nothing measured: {exc}")
        return None
    items = dev.load_items(dev.DATA)
    return st, jq.Data([items[i] for i in st.keep], 5)


def main(argv: list[str] | None = None) -> int:
    loaded = load_dev("judge_align_features.py")
    if loaded is None:
        return 0
    st, data = loaded
    f = features(st)
    rows = {"tier 1": data.x}
    for k in f:
        rows[f"+ mini4 {k}"] = np.hstack([data.x, f[k][:, :4]])
    for j, name in enumerate(EXTRA, start=4):
        rows[f"+ mini4 lex3 + {name}"] = np.hstack([data.x, f["lex3"][:, [0, 1, 2, 3, j]]])
    rows["+ mini4 lex3 + all extra"] = np.hstack([data.x, f["lex3"]])
    print_rows(data, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
