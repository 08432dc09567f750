"""Whether WordNet synonyms and antonyms can pay for the local judge, measured on the dev sets.

For every labelled claim of the claim-level dev sets (bench/judge_dev_data.py), against the
chunk sentence it rests on (the best-aligned sentence of the claim features) and against the
best chunk:

- *rescue*: of the claim's content stems that sentence (chunk) does not cover, the share
  whose synonym or derived form (:mod:`ragpulse.collector.judge.text.lexicon`) it does have,
  for supported and unsupported claims apart; a relation that pays rescues more words of
  supported claims than of unsupported ones;
- the AUROC of the sentence coverage alone, exact and counting related forms;
- the claim model refit with the share of claim stems only a related form covers (in the best
  sentence, the best chunk, both) as extra features, grouped 5-fold CV as
  bench/judge_quality.py does, beside the model without them and beside the same features
  shuffled across claims (a null: what refitting with an uninformative column moves by chance);
- *antonym*: how often the antonym rule (:func:`ragpulse.collector.judge.local.rules.conflicts.antonym_conflicts`)
  fires on the best chunk and on any chunk, by gold label (Factcheck-GPT has ``contradicted``
  claims).

``--lexicon PATH`` measures another table (a scripts/build_lexicon.py output) in the same run
as the packaged one; ``--no-cv`` skips the refits. The per-claim sets are cached under
``.cache/judge-lexicon/``.

Usage: python bench/judge_lexicon.py [--data DIR] [--lexicon PATH ...]
"""

from __future__ import annotations

import argparse
import hashlib
import pickle
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import judge_dev_data as dev  # noqa: E402
import judge_metrics as jm  # noqa: E402
import judge_quality as jq  # noqa: E402
from ragpulse.collector.judge.local.claim_features import ChunkIndex, claim_evidence  # noqa: E402
from ragpulse.collector.judge.local.claims import normalise_claim  # noqa: E402
from ragpulse.collector.judge.local.evidence import build_evidence  # noqa: E402
from ragpulse.collector.judge.local.judge import QUESTION_WORDS  # noqa: E402
from ragpulse.collector.judge.local.rules.conflicts import antonym_conflicts  # noqa: E402
from ragpulse.collector.judge.local.support import claim_view, load_model  # noqa: E402
from ragpulse.collector.judge.text.lexicon import Lexicon, load_lexicon, parse_lexicon  # noqa: E402
from ragpulse.collector.judge.text.tokens import profile  # noqa: E402

__all__ = ["main", "claim_sets"]

CACHE = dev.ROOT / ".cache" / "judge-lexicon"


def _raw_labels(data: Path, source: str) -> list[str]:
    """The gold label words of ``source``'s claims, in :func:`judge_dev_data.iter_records` order."""
    out = []
    for rec in dev._read(data / dev._FILES[source]):
        if source == "attributionbench":
            out.append(rec["attribution_label"])
        else:
            out.extend(c["label"] for c in rec["claims"])
    return out


def claim_sets(data: Path) -> list[dict[str, Any]]:
    """Per claim: its stems, the best-aligned sentence's stems, the best chunk's stems and the
    sentence the conflict rules read (cached)."""
    key = hashlib.sha256((dev._cache_key(data) + Path(__file__).read_text()).encode()).hexdigest()[:16]
    path = CACHE / f"sets-{key}.pkl"
    if path.is_file():
        return pickle.loads(path.read_bytes())
    model = load_model()
    out: list[dict[str, Any]] = []
    for source in dev.SOURCES:
        labels = iter(_raw_labels(data, source))
        for rec in dev.iter_records(data, source):
            chunks = build_evidence(rec["chunks"])
            qstems = frozenset(s for s in profile(rec["query"]).stem_set if s not in QUESTION_WORDS)
            index = ChunkIndex(chunks)
            for claim_text, label in rec["claims"]:
                cp = profile(normalise_claim(claim_text))
                cv = claim_view(cp, qstems)
                ce = claim_evidence(cv, index, model)
                item: dict[str, Any] = {
                    "source": source,
                    "label": label,
                    "gold": next(labels),
                    "stems": cv.stems,
                    "claim_stems": cp.stem_set,
                    "sent": frozenset(),
                    "chunk": frozenset(),
                    "antonym": bool(chunks) and antonym_conflicts(cp, chunks[ce.best]),
                    "antonym_any": any(antonym_conflicts(cp, c) for c in chunks),
                }
                if ce.best_sentence is not None:
                    ci, si = ce.best_sentence
                    item["sent"] = chunks[ci].sentence_stems[si]
                if chunks:
                    item["chunk"] = chunks[ce.best].whole.stem_set
                out.append(item)
        print(f"collected {source}", file=sys.stderr)
    CACHE.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(out))
    return out


def _rescue(stems: frozenset[str], have: frozenset[str], lex: Lexicon) -> tuple[int, int]:
    """(uncovered claim stems, of those the ones with a related form in ``have``)."""
    keys = {s[:4] for s in have}
    missing = [s for s in stems if s[:4] not in keys]
    related = lex.related_keys
    return len(missing), sum(1 for s in missing if not keys.isdisjoint(related.get(s, ())))


def _coverage(stems: frozenset[str], have: frozenset[str], lex: Lexicon | None) -> float:
    if not stems:
        return 0.0
    keys = {s[:4] for s in have}
    related = lex.related_keys if lex else {}
    hit = sum(1 for s in stems if s[:4] in keys or not keys.isdisjoint(related.get(s, ())))
    return hit / len(stems)


def related_share(stems: frozenset[str], have: frozenset[str], lex: Lexicon) -> float:
    """Share of ``stems`` that ``have`` covers only through a related form."""
    _, hit = _rescue(stems, have, lex)
    return hit / len(stems) if stems else 0.0


def _rescue_table(items: list[dict[str, Any]], lex: Lexicon) -> None:
    src = np.array([i["source"] for i in items])
    y = np.array([i["label"] for i in items])
    print(
        f"  {'set':<18}{'where':<7}{'rescued sup':>12}{'rescued uns':>12}{'AUROC exact':>12}{'AUROC +rel':>11}"
    )
    for s in dev.SOURCES:
        m = src == s
        for where in ("sent", "chunk"):
            resc = {0: [0, 0], 1: [0, 0]}
            for it in (i for i in items if i["source"] == s):
                a, b = _rescue(it["stems"], it[where], lex)
                resc[it["label"]][0] += a
                resc[it["label"]][1] += b
            exact = np.array([_coverage(i["stems"], i[where], None) for i in items])[m]
            plus = np.array([_coverage(i["stems"], i[where], lex) for i in items])[m]
            sup, uns = resc[1][1] / max(1, resc[1][0]), resc[0][1] / max(1, resc[0][0])
            print(
                f"  {s:<18}{where:<7}{sup:>12.3f}{uns:>12.3f}"
                f"{jm.auroc(exact, y[m]):>12.3f}{jm.auroc(plus, y[m]):>11.3f}"
            )


def _cv_row(name: str, base: list[dict[str, Any]], extra: list[list[float]]) -> None:
    """Refit the claim model with ``extra`` columns appended (grouped 5-fold CV) and print
    bal.acc / macro-F1 / AUROC / ECE per set."""
    rows = [dict(i, x=list(i["x"]) + e) for i, e in zip(base, extra, strict=True)]
    data = jq.Data(rows, 5)
    cv = jq.cross_validate(data, 5, with_previous=False)
    cells = []
    for s in dev.SOURCES:
        m = data.src == s
        p = cv["p"][m]
        pred = jq.verdict_score(p, data.strong[m], data.neg[m]) >= cv["thr"][m]
        r = jm.claim_scores(p, pred, data.y[m])
        cells.append(f"{r['balanced_accuracy']:.3f}/{r['macro_f1']:.3f}/{r['auroc']:.3f}/{r['ece']:.3f}")
    print(f"  {name:<14}" + "".join(f"{c:>26}" for c in cells), flush=True)


def _cv_table(base: list[dict[str, Any]], items: list[dict[str, Any]], lex: Lexicon) -> None:
    sent = [related_share(i["stems"], i["sent"], lex) for i in items]
    chunk = [related_share(i["stems"], i["chunk"], lex) for i in items]
    _cv_row("+ sentence", base, [[a] for a in sent])
    _cv_row("+ chunk", base, [[b] for b in chunk])
    _cv_row("+ both", base, [[a, b] for a, b in zip(sent, chunk, strict=True)])
    rng = np.random.default_rng(0)
    for k in range(2):
        _cv_row(f"null {k}", base, [[v] for v in rng.permutation(chunk)])


def report(items: list[dict[str, Any]], base: list[dict[str, Any]] | None, name: str, lex: Lexicon) -> None:
    print(
        f"lexicon {name}: {len(lex.related_keys)} stems with related forms, {len(lex.antonyms)} lemmas with antonyms"
    )
    _rescue_table(items, lex)
    if base is not None:
        _cv_table(base, items, lex)


def _antonym_table(items: list[dict[str, Any]]) -> None:
    total = Counter((i["source"], i["gold"]) for i in items)
    for flag in ("antonym", "antonym_any"):
        fired = Counter((i["source"], i["gold"]) for i in items if i[flag])
        cells = ", ".join(f"{s}/{g} {fired[(s, g)]}/{n}" for (s, g), n in sorted(total.items()))
        print(f"antonym rule ({'best chunk' if flag == 'antonym' else 'any chunk'}): {cells}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=dev.DATA)
    ap.add_argument("--lexicon", type=Path, action="append", default=[], help="another table to measure")
    ap.add_argument("--no-cv", action="store_true", help="skip the claim model refits")
    args = ap.parse_args(argv)
    if not (args.data / "judge-dev").is_dir():
        print(f"dev data not found under {args.data}: nothing to measure", file=sys.stderr)
        return 2
    items = claim_sets(args.data)
    base = None
    if not args.no_cv:
        base = dev.load_items(args.data, verbose=False)
        assert [b["label"] for b in base] == [i["label"] for i in items]
        print("claim model refit, grouped 5-fold CV: bal.acc/macro-F1/AUROC/ECE")
        print(f"  {'features':<14}" + "".join(f"{s:>26}" for s in dev.SOURCES))
        _cv_row("v3 as it is", base, [[] for _ in base])
    _antonym_table(items)
    report(items, base, "packaged", load_lexicon())
    for path in args.lexicon:
        report(items, base, str(path), parse_lexicon(path.read_text(encoding="utf-8")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
