"""The local judge's entailment tier: a MiniLM cross-encoder trained here for entailment.

Tier 1's calibrated probability decides the claims it is sure of; the ones in the ``band``
(less those one chunk supports on its own) are read by an entailment model: all-MiniLM-L6-v2
fine-tuned as a cross-encoder on ~92k labelled premise/hypothesis pairs (``training/``,
``make train-judge``; provenance, data hashes and licences in
``models/entailment-v1.json``), exported to int8 ONNX and shipped with the package, so it
runs wherever ragpulse is installed, on onnxruntime, with nothing downloaded.

Per escalated claim the premise is the chunk sentences tier 1 aligns the claim with
(:func:`.minilm.aligned_sentences`, across chunks, so a claim two chunks support jointly is
read against both), the hypothesis the claim. The model's entailment and contradiction
probabilities (:data:`ENTAIL_FEATURES`, as logits) join tier 1's claim features in a second
calibrated claim model (``weights/claim-entail-v1.json``, fit by
``bench/judge_quality.py --write-weights`` with grouped cross-validation), whose probability
replaces tier 1's. A contradiction probability of at least the head's
``contradiction_threshold`` on a claim that ends up unsupported makes it ``contradicted``,
resting on the chunk of the best-aligned sentence.

Pairs run one at a time (int8 activations are quantised per call, so batching would make a
claim's score depend on its batch mates); scores are cached by (premise, claim) across traces.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import OrderedDict
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..local.claim_features import CLAIM_FEATURES
from ..local.claim_model import ClaimModel, load_claim_model
from .band import BandTier, library_pin
from .minilm import TierUnavailable

if TYPE_CHECKING:
    from ..local.evidence import ChunkEvidence
    from ..local.support import ClaimView

__all__ = [
    "ENTAIL_FEATURES",
    "MODEL_FILE",
    "MODEL_SHA256",
    "TIER_FEATURES",
    "EntailmentModel",
    "EntailmentTier",
    "aligned_premise",
    "entail_features",
    "load_entail_head",
]

ENTAIL_FEATURES: tuple[str, ...] = ("nli_entail", "nli_contra")
TIER_FEATURES: tuple[str, ...] = CLAIM_FEATURES + ENTAIL_FEATURES
MODEL_FILE = "entailment-v1.onnx"
TOKENIZER_FILE = "entailment-tokenizer.json"
# The one pin of the shipped model: the file's SHA-256 (checked when loaded, part of the judge id).
MODEL_SHA256 = "736efda56bef0775a33102a5558be6cd12877ee4588c06a0732fdfb0b92ef9cf"
MAX_TOKENS = 256
_CLIP = 1e-4


def _packaged(name: str) -> bytes:
    return resources.files("ragpulse.collector.judge.tiers").joinpath(f"models/{name}").read_bytes()


def entail_features(probs: np.ndarray) -> list[list[float]]:
    """[entailment, neutral, contradiction] probabilities -> the tier's two features: the
    logits of entailment and of contradiction (clipped to +-9.2)."""

    def logit(p: float) -> float:
        p = min(max(float(p), _CLIP), 1.0 - _CLIP)
        return math.log(p / (1.0 - p))

    return [[logit(p[0]), logit(p[2])] for p in probs]


def aligned_premise(
    keys: frozenset[Any], chunks: list[ChunkEvidence], k: int
) -> tuple[list[str], str | None]:
    """The premise of a claim: the ``k`` chunk sentences that share most of its match keys
    (tier 1's alignment, as :func:`.minilm.aligned_sentences`), best first, and the id of the
    chunk of the best one (None when no sentence shares a key)."""
    scored = [
        (len(keys & ks), c.sentence_texts[i], c.id)
        for c in chunks
        for i, ks in enumerate(c.sentence_keys)
        if keys & ks
    ]
    scored.sort(key=lambda s: -s[0])
    return list(dict.fromkeys(t for _, t, _ in scored[:k])), (scored[0][2] if scored else None)


class EntailmentModel:
    """The shipped cross-encoder: ``probabilities(pairs) -> [n, 3]`` (entailment, neutral,
    contradiction) for (premise, claim) pairs, on one onnxruntime thread."""

    def __init__(self, path: str | Path | None = None, cache_size: int = 4096) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise TierUnavailable(
                f"entailment tier unavailable: {exc}; install ragpulse's collector or embedded extra"
            ) from exc
        raw = _packaged(MODEL_FILE) if path is None else Path(path).read_bytes()
        self.sha256 = hashlib.sha256(raw).hexdigest()
        if path is None and self.sha256 != MODEL_SHA256:
            raise TierUnavailable(
                f"entailment tier unavailable: the packaged {MODEL_FILE} has SHA-256 {self.sha256}, "
                f"not the pinned {MODEL_SHA256}; reinstall ragpulse"
            )
        self.tok = Tokenizer.from_str(_packaged(TOKENIZER_FILE).decode())
        self.tok.enable_truncation(MAX_TOKENS, strategy="longest_first")
        self.tok.no_padding()
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(raw, opts, providers=["CPUExecutionProvider"])
        self.cache: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self.cache_size = int(cache_size)
        self.pairs_scored = 0

    def probabilities(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        """[len(pairs), 3] probabilities; each distinct pair not in the cache is scored once. The
        cache keeps the ``cache_size`` pairs used last; a call holding more distinct pairs than
        that is answered whole all the same (the cache only saves time)."""
        found: dict[tuple[str, str], np.ndarray] = {}
        for pair in dict.fromkeys(pairs):
            hit = self.cache.get(pair)
            if hit is not None:
                self.cache.move_to_end(pair)
                found[pair] = hit
        todo = [pair for pair in dict.fromkeys(pairs) if pair not in found]
        for pair, enc in zip(todo, self.tok.encode_batch(todo) if todo else [], strict=True):
            ids = np.asarray(enc.ids, np.int32)[None]
            found[pair] = self.cache[pair] = self.session.run(
                None, {"input_ids": ids, "attention_mask": np.ones_like(ids)}
            )[0][0]
            self.pairs_scored += 1
        while len(self.cache) > self.cache_size:
            self.cache.popitem(last=False)
        out = np.zeros((len(pairs), 3), np.float32)
        for i, pair in enumerate(pairs):
            out[i] = found[pair]
        return out


def _packaged_head() -> bytes:
    return (
        resources.files("ragpulse.collector.judge.local")
        .joinpath("weights/claim-entail-v1.json")
        .read_bytes()
    )


def load_entail_head(path: str | Path | None = None) -> tuple[ClaimModel, float]:
    """The tier's claim model (the packaged ``weights/claim-entail-v1.json`` by default) and
    its contradiction threshold: the file's ``contradiction_threshold``, or the packaged file's
    when a custom file has none. The threshold is read on the entailment model's contradiction
    probability, not on the head, so a head refit for the shipped model keeps the shipped
    model's threshold; a value above 1 turns contradictions off. ValueError names a file whose
    value is not a positive number."""
    model = load_claim_model(path, packaged="claim-entail-v1.json", features=TIER_FEATURES)
    packaged = json.loads(_packaged_head())
    data = packaged if path is None else json.loads(Path(path).read_bytes())
    value = data.get("contradiction_threshold", packaged["contradiction_threshold"])
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
        raise ValueError(
            f"{path or 'claim-entail-v1.json'}: contradiction_threshold must be a positive number "
            f"(a contradiction probability; above 1 turns contradictions off), not {value!r}"
        )
    return model, float(value)


class EntailmentTier(BandTier):
    """Re-scores the claims whose tier-1 probability lies in ``band`` (``lo <= p < hi``) with
    the entailment model. Settings (pinned in :attr:`tier_id`): those of every second tier
    (:class:`.band.BandTier`; ``cache_size``: the (premise, claim) scores kept across traces)
    and the model file (``model``, the packaged one by default)."""

    kind = "entailment"
    contradiction_threshold: float

    def __init__(self, *, model: str | None = None, **settings: Any) -> None:
        super().__init__(**settings)
        self.model = EntailmentModel(model, cache_size=self.cache_size)
        self._pin(
            "entail",
            {
                "head": self.head.digest,
                "model": self.model.sha256[:12],
                "runtime": library_pin("onnxruntime"),
            },
        )

    def load_head(self, weights: str | None) -> ClaimModel:
        """The tier's claim model; sets :attr:`contradiction_threshold` from the same file."""
        head, self.contradiction_threshold = load_entail_head(weights)
        return head

    def read(
        self, texts: list[str], views: list[ClaimView], chunks: list[ChunkEvidence]
    ) -> list[tuple[list[float] | None, str | None]]:
        """The entailment and contradiction logits of each claim read against its premise
        (:func:`aligned_premise`, joined), and the premise's best chunk when the contradiction
        probability reaches the head's ``contradiction_threshold``; None for a claim without a
        premise."""
        premises = [aligned_premise(v.keys, chunks, self.sentences) for v in views]
        premises = [(" ".join(sents), chunk) for sents, chunk in premises]
        scored = [j for j, (premise, _) in enumerate(premises) if premise]
        nli = self.model.probabilities([(premises[j][0], texts[j]) for j in scored])
        out: list[tuple[list[float] | None, str | None]] = [(None, None)] * len(views)
        for j, p3, f in zip(scored, nli, entail_features(nli), strict=True):
            out[j] = (f, premises[j][1] if p3[2] >= self.contradiction_threshold else None)
        return out
