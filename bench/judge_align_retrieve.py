"""Evidence chosen by MiniLM over every chunk sentence, in addition to tier 1's lexical three.

The MiniLM tier reads a claim against the three chunk sentences sharing most match keys with
it (tier 1's alignment). A paraphrase shares few keys, so its sentence may never be read. Here
every chunk sentence of every kept dev record is encoded once (pooled embedding, as the
tier's ``mini_cos``), each claim's ``n`` nearest sentences by pooled cosine are found, and the
tier's four features are recomputed against:

- ``mini-all-3``: the 3 nearest by MiniLM alone;
- ``lex3 + mini-all-n``: tier 1's three plus the ``n`` nearest (n = 1, 3; duplicates once).

Rows: out-of-fold AUROC per set of a logistic over tier 1's features plus the four
(bench/judge_align_features.py's table). Encoding every sentence multiplies the tier's
encoder work per trace (every chunk, not three sentences per claim), unless chunk states are
cached across traces. Cached under ``.cache/judge-quality/``.
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
import judge_metrics as jm  # noqa: E402
from judge_align import mini4  # noqa: E402
from judge_align_features import load_dev, print_rows  # noqa: E402
from judge_align_fit import unit  # noqa: E402
from judge_align_states import BATCH, States  # noqa: E402
from ragpulse.collector.judge.local.evidence import build_evidence  # noqa: E402
from ragpulse.collector.judge.tiers import minilm  # noqa: E402

__all__ = ["main"]


def _chunk_sentences(share: float) -> list[list[str]]:
    """Per kept claim (load_states order), every sentence of its record's chunks."""
    out: list[list[str]] = []
    for source in dev.SOURCES:
        for rec in dev.iter_records(dev.DATA, source):
            if source == "factscore" and jm.fold_of(rec["group"], 100, seed=7) >= share * 100:
                continue
            sents = list(dict.fromkeys(t for c in build_evidence(rec["chunks"]) for t in c.sentence_texts))
            out.extend([sents] * len(rec["claims"]))
    return out


def _encode_all(texts: list[str], enc: minilm.MiniLM) -> dict[str, tuple[list[str], np.ndarray]]:
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out = {}
    t0 = time.perf_counter()
    for b in range(0, len(order), BATCH):
        idx = order[b : b + BATCH]
        for i, (tokens, states) in zip(idx, enc.encode([texts[i] for i in idx]), strict=True):
            out[texts[i]] = (tokens, states.astype(np.float16))
        if b // BATCH % 400 == 0:
            print(
                f"  {b}/{len(texts)} sentences, {time.perf_counter() - t0:.0f}s", file=sys.stderr, flush=True
            )
    return out


def _nearest(st: States, per_claim: list[list[str]]) -> list[list[tuple[list[str], np.ndarray]]]:
    """Per kept claim, its 3 nearest chunk sentences by pooled MiniLM cosine (word pieces and
    states), nearest first. Every distinct sentence is encoded once; cached."""
    texts = sorted({t for s in per_claim for t in s})
    h = hashlib.sha256("\n".join(texts).encode())
    h.update(Path(minilm.__file__).read_bytes())
    h.update(repr((st.offsets[-1], len(st.claim))).encode())
    path = dev.CACHE / f"align-nearest-{h.hexdigest()[:16]}.pkl"
    if path.is_file():
        return pickle.loads(path.read_bytes())
    print(f"{len(texts)} distinct chunk sentences to encode", file=sys.stderr, flush=True)
    enc = _encode_all(texts, minilm.MiniLM(minilm.locate_model().folder))
    pooled = {t: unit(s.astype(np.float32).mean(0)) for t, (_, s) in enc.items()}
    out = []
    for i, t in enumerate(st.claim):
        cands = per_claim[i]
        if not cands:
            out.append([])
            continue
        sims = np.array([pooled[c] for c in cands]) @ unit(st.text_states(t).astype(np.float32).mean(0))
        out.append([enc[cands[j]] for j in np.argsort(sims)[::-1][:3]])
    path.write_bytes(pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL))
    return out


def main(argv: list[str] | None = None) -> int:
    loaded = load_dev("judge_align_retrieve.py")
    if loaded is None:
        return 0
    st, data = loaded
    per_claim = _chunk_sentences(0.25)
    assert len(per_claim) == len(st.claim)
    nearest = _nearest(st, per_claim)
    rows: dict[str, list[list[float]]] = {
        "lex3": [],
        "mini-all-3": [],
        "lex3 + mini-all-1": [],
        "lex3 + mini-all-3": [],
    }
    for i, t in enumerate(st.claim):
        claim = (st.tokens[t], st.text_states(t).astype(np.float32))
        lex = [st.text_states(s).astype(np.float32) for s in st.sents[i][: st.n3[i]]]
        near = nearest[i]
        lex_tokens = {tuple(st.tokens[s]) for s in st.sents[i][: st.n3[i]]}
        extra = [x.astype(np.float32) for toks, x in near if tuple(toks) not in lex_tokens]
        near_states = [x.astype(np.float32) for _, x in near]
        rows["lex3"].append(mini4(*claim, lex))
        rows["mini-all-3"].append(mini4(*claim, near_states))
        rows["lex3 + mini-all-1"].append(mini4(*claim, lex + extra[:1]))
        rows["lex3 + mini-all-3"].append(mini4(*claim, lex + extra))
    print_rows(
        data,
        {"tier 1": data.x} | {f"+ mini4 {k}": np.hstack([data.x, np.array(v)]) for k, v in rows.items()},
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
