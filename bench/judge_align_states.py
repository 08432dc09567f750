"""Frozen MiniLM token states of the dev claims and their aligned sentences, encoded once.

The alignment head (bench/judge_align.py) is trained on the last-layer token states of
all-MiniLM-L6-v2 (:class:`ragpulse.collector.judge.tiers.minilm.MiniLM`, the product's encoder)
for every dev claim of the sets bench/judge_minilm.py measures (AttributionBench dev,
FActScore subsampled by person, Factcheck-GPT, WiCE dev) and for the ``--sentences`` chunk
sentences tier 1 aligns each claim with (:func:`minilm.aligned_sentences`, in rank order;
the first ``n3`` of them are the three the MiniLM tier uses). Each distinct text is encoded
once (sorted by length in characters, so batches carry little padding) and its states are kept as
float16 in one array: :class:`States`, cached under ``.cache/judge-quality/`` by the dev
data, the encoder's code and files and the settings.
"""

from __future__ import annotations

import hashlib
import pickle
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import judge_dev_data as dev  # noqa: E402
import judge_metrics as jm  # noqa: E402
from judge_minilm import aligned_sentences  # noqa: E402
from ragpulse.collector.judge.local.claims import normalise_claim  # noqa: E402
from ragpulse.collector.judge.local.evidence import build_evidence  # noqa: E402
from ragpulse.collector.judge.tiers import minilm  # noqa: E402

__all__ = ["States", "load_states"]

BATCH = 32


@dataclass
class States:
    """Token states of the distinct texts and, per kept dev claim, which texts it uses.

    ``states[offsets[t]:offsets[t + 1]]`` are text ``t``'s states ([CLS] and [SEP] included),
    ``tokens[t]`` its word pieces. ``keep`` lists the dev.load_items indices of the claims
    encoded (FActScore subsampled); per kept claim ``claim[i]`` is its text id, ``sents[i]``
    its aligned sentences' text ids in rank order and ``n3[i]`` how many of them the
    three-sentence alignment gives."""

    states: np.ndarray
    offsets: np.ndarray
    tokens: list[list[str]]
    keep: list[int]
    claim: list[int]
    sents: list[list[int]]
    n3: list[int]
    cost: dict[str, float]

    def text_states(self, t: int) -> np.ndarray:
        return self.states[self.offsets[t] : self.offsets[t + 1]]


def _collect(
    data: Path, k: int, share: float
) -> tuple[list[str], list[int], list[int], list[list[int]], list[int]]:
    texts: dict[str, int] = {}
    keep, claim_ids, sent_ids, n3 = [], [], [], []
    index = 0

    def tid(text: str) -> int:
        return texts.setdefault(text, len(texts))

    for source in dev.SOURCES:
        for rec in dev.iter_records(data, source):
            if source == "factscore" and jm.fold_of(rec["group"], 100, seed=7) >= share * 100:
                index += len(rec["claims"])
                continue
            chunks = build_evidence(rec["chunks"])
            for text, _ in rec["claims"]:
                c = normalise_claim(text)
                sents = aligned_sentences(rec["query"], c, chunks, k)
                keep.append(index)
                claim_ids.append(tid(c))
                sent_ids.append([tid(s) for s in sents])
                n3.append(len(aligned_sentences(rec["query"], c, chunks, 3)))
                index += 1
    return list(texts), keep, claim_ids, sent_ids, n3


def _encode(encoder: minilm.MiniLM, texts: list[str]) -> tuple[np.ndarray, np.ndarray, list[list[str]]]:
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    per: list[tuple[list[str], np.ndarray] | None] = [None] * len(texts)
    t0 = time.perf_counter()
    for b in range(0, len(order), BATCH):
        idx = order[b : b + BATCH]
        for i, enc in zip(idx, encoder.encode([texts[i] for i in idx]), strict=True):
            per[i] = (enc[0], enc[1].astype(np.float16))
        if b // BATCH % 200 == 0:
            print(f"  {b}/{len(texts)} texts, {time.perf_counter() - t0:.0f}s", file=sys.stderr, flush=True)
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(p[0]) for p in per if p is not None])
    states = np.concatenate([p[1] for p in per if p is not None])
    return states, offsets, [p[0] for p in per if p is not None]


def load_states(
    data: Path,
    k: int = 6,
    share: float = 0.25,
    model: Path | None = None,
    backend: str = minilm.DEFAULT_BACKEND,
) -> States:
    """The cached :class:`States` (encoded on first use: minutes of CPU), by the encoder
    ``backend`` (default the tier's own)."""
    files = minilm.locate_model(model)
    h = hashlib.sha256(dev._cache_key(data).encode())
    h.update(Path(minilm.__file__).read_bytes())
    h.update(Path(__file__).read_bytes())
    h.update(f"{k}:{share}:{files.pin}:{backend}".encode())
    path = dev.CACHE / f"align-states-{h.hexdigest()[:16]}.pkl"
    if path.is_file():  # a dict, not the class: loadable whichever module ran the encoding
        return States(**pickle.loads(path.read_bytes()))
    texts, keep, claim_ids, sent_ids, n3 = _collect(data, k, share)
    print(f"{len(keep)} claims, {len(texts)} distinct texts to encode", file=sys.stderr, flush=True)
    encoder = minilm.MiniLM(files.folder, backend=backend)
    t0 = time.process_time()
    states, offsets, tokens = _encode(encoder, texts)
    cost = {"tokens": float(getattr(encoder, "tokens_encoded", 0)), "cpu_s": time.process_time() - t0}
    out = States(states, offsets, tokens, keep, claim_ids, sent_ids, n3, cost)
    dev.CACHE.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(vars(out), protocol=pickle.HIGHEST_PROTOCOL))
    return out
