"""Does MiniLM read a claim and its evidence better together? Frozen joint-encoding probes.

The MiniLM tier encodes a claim and its aligned sentences separately, so no claim piece ever
attends to the evidence. Here each dev claim is encoded once with its three aligned sentences
in the same input (``claim [SEP] s1 s2 s3``, the product's encoder, 128 pieces at most), and
what the joint states say is measured on top of the tier's features (tier 1's + the four
MiniLM ones, "tier2"):

- ``shift``: how far the claim's pieces move when the evidence is in context (cosine between
  each claim piece's joint and solo states: mean, weakest, three weakest);
- ``probe``: a linear probe (L2 logistic) on the joint [CLS] state, the claim part's and the
  evidence part's mean states and their product, each projected on the first 32 principal
  axes of the dev states (no labels).

Rows: out-of-fold AUROC per set (logistic over the features, grouped 5-fold, each set
weighted equally, as bench/judge_align_features.py). The joint states are cached under
``.cache/judge-quality/``.
"""

from __future__ import annotations

import hashlib
import pickle
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import judge_dev_data as dev  # noqa: E402
from judge_align import mini_features  # noqa: E402
from judge_align_features import load_dev, print_rows  # noqa: E402
from judge_align_fit import unit  # noqa: E402
from judge_align_states import BATCH, States  # noqa: E402
from ragpulse.collector.judge.tiers import minilm  # noqa: E402

__all__ = ["main"]

PCA_DIM = 32


def _joint_states(st: States) -> dict[str, np.ndarray]:
    """Per kept claim: the joint [CLS], claim-part mean, evidence-part mean (float32) and the
    claim pieces' joint-vs-solo cosines (mean, min, three weakest)."""
    h = hashlib.sha256(repr((st.offsets[-1], len(st.claim), st.cost)).encode())
    h.update(Path(minilm.__file__).read_bytes())
    h.update(Path(__file__).read_bytes())
    path = dev.CACHE / f"align-joint-{h.hexdigest()[:16]}.pkl"
    if path.is_file():
        return pickle.loads(path.read_bytes())
    enc = minilm.MiniLM(minilm.locate_model().folder)  # the tier's backend, as load_states
    joint = [_joint_text(st, i) for i in range(len(st.claim))]
    order = sorted(range(len(joint)), key=lambda i: len(joint[i]))
    out = {k: np.zeros((len(joint), 384), np.float32) for k in ("cls", "claim", "evidence")}
    out["shift"] = np.zeros((len(joint), 3), np.float32)
    t0 = time.perf_counter()
    for b in range(0, len(order), BATCH):
        idx = order[b : b + BATCH]
        for i, (tokens, states) in zip(idx, enc.encode([joint[j] for j in idx]), strict=True):
            sep = tokens.index("[SEP]")
            out["cls"][i] = states[0]
            out["claim"][i] = states[1:sep].mean(0) if sep > 1 else 0.0
            out["evidence"][i] = states[sep + 1 : -1].mean(0) if len(tokens) > sep + 2 else 0.0
            solo = st.text_states(st.claim[i]).astype(np.float32)[1:-1]
            n = min(len(solo), sep - 1)
            if n:
                c = np.sum(unit(states[1 : 1 + n]) * unit(solo[:n]), axis=1)
                out["shift"][i] = [c.mean(), c.min(), np.sort(c)[:3].mean()]
        if b // BATCH % 40 == 0:
            print(f"  {b}/{len(joint)} claims, {time.perf_counter() - t0:.0f}s", file=sys.stderr, flush=True)
    path.write_bytes(pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL))
    return out


def _joint_text(st: States, i: int) -> str:
    """The claim and its three sentences as one input, rebuilt from their (lowercased) pieces."""
    claim = " ".join(t for t in st.tokens[st.claim[i]][1:-1]).replace(" ##", "")
    sents = [" ".join(st.tokens[s][1:-1]).replace(" ##", "") for s in st.sents[i][: st.n3[i]]]
    return claim + " [SEP] " + " ".join(sents)


def _pca(x: np.ndarray, dim: int) -> np.ndarray:
    x = x - x.mean(0)
    _, vecs = np.linalg.eigh(x.T @ x)
    z = x @ vecs[:, ::-1][:, :dim]
    return z / np.maximum(z.std(0), 1e-9)


def main(argv: list[str] | None = None) -> int:
    loaded = load_dev("judge_align_joint.py")
    if loaded is None:
        return 0
    st, data = loaded
    tier2 = np.hstack([data.x, mini_features(st)])
    j = _joint_states(st)
    probe = np.hstack(
        [_pca(j[k], PCA_DIM) * 0.1 for k in ("cls", "claim", "evidence")]
        + [_pca(unit(j["claim"]) * unit(j["evidence"]), PCA_DIM) * 0.1]
    )
    rows = {
        "tier 1": data.x,
        "tier2 (the MiniLM tier)": tier2,
        "tier2 + shift": np.hstack([tier2, j["shift"]]),
        "tier2 + probe": np.hstack([tier2, probe]),
        "tier2 + shift + probe": np.hstack([tier2, j["shift"], probe]),
    }
    print_rows(data, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
