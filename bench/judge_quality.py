"""Local judge quality on every development set, grouped cross-validated.

Data (``../shared/data``, see its README): AttributionBench dev, FActScore,
Factcheck-GPT and WiCE dev judged claim by claim (each labelled claim against
its record's chunks; positive = supported), and HaluEval
QA judged whole (response labels only; a sanity check, never used for fitting).

Four judges side by side, in the same run:

- ``lexical``: the share of the claim's content stems found in the chunks, one
  threshold fit on the training folds (maximising mean balanced accuracy);
- ``v1``: the first local judge (pair model ``support-v1.json``, best chunk,
  number veto, threshold 0.5), as shipped: nothing refit;
- ``v3``: the previous judge's claim model, local-3.x (``bench/judge-claim-v3.json``: logistic
  over its 23 features, isotonic map, a number cap on the best chunk, its threshold and weak
  band), as shipped;
- ``v4``: the current judge's claim model (:mod:`ragpulse.collector.judge.local.claim_model`)
  refit on the training folds of all four sets pooled (each set weighted equally), the
  isotonic map and the thresholds fit on the training folds' own cross-validated outputs,
  scored on the held-out fold.

All four read the features of the current code (stemming included; ``v3`` the 23 of them
its file names), so ``v1`` and ``v3`` are the previous models, not byte-for-byte the previous
releases.

Folds are grouped (FActScore by person, Factcheck-GPT by response, WiCE by
article, AttributionBench by question) so evidence never straddles a split.
Reported per set: claim balanced accuracy, macro-F1, AUROC, ECE; response-level F1 on
RAG-shaped answers composed from the set's claims at a production-like share of hallucinated
answers (:mod:`judge_responses`); response-level F1 (hallucinated = positive) and balanced
accuracy on the set's own responses; the v4 reliability table, and v4's ECE
beside its noise floor (the ECE a perfectly calibrated judge shows on the same probabilities:
binned ECE is biased upwards on a set of a few hundred claims).

Then the response level on every set with real answers, MTRAG included (:func:`judge_responses.
response_report`): candidate response decisions compared by grouped cross-validation, and on
MTRAG tier 1's old any-claim rule beside the packaged decision.

``--write-weights`` fits the claim model on all rows and writes the packaged
``weights/claim-v4.json`` (calibration and thresholds from the cross-validated outputs), then
refits the response decision on the real answers judged by the judge that file makes and writes
``weights/response-v1.json``. After any change to the claim probabilities (a new tier, refit
weights) this one command refits both; a second run then reports the refit decision.

Usage: python bench/judge_quality.py [--folds 5] [--write-weights] [--no-cache] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import judge_dev_data as dev  # noqa: E402
import judge_metrics as jm  # noqa: E402
import judge_responses as jr  # noqa: E402
from ragpulse.collector.judge.local.claim_features import CLAIM_FEATURES  # noqa: E402

__all__ = ["main", "cross_validate", "Data"]

WEIGHTS = Path(__file__).resolve().parents[1] / "collector" / "judge" / "local" / "weights" / "claim-v4.json"
PREVIOUS = Path(__file__).resolve().with_name("judge-claim-v3.json")
L2 = 1.0
THRESHOLDS = np.round(np.arange(0.20, 0.81, 0.01), 2)
# Composed RAG-shaped answers (judge_responses): share hallucinated, claims per answer, answers per row.
COMPOSED_PREVALENCE = 0.2
COMPOSED_K = (1, 3, 5)
COMPOSED_ANSWERS = 2000
# The weak band is fit on composed answers of these lengths (fewer answers: it is fit once per fold).
WEAK_FIT_K = (3, 5)
WEAK_FIT_ANSWERS = 600


class Data:
    """The featurised claim items as arrays."""

    def __init__(self, items: list[dict[str, Any]], folds: int) -> None:
        self.items = items
        self.x = np.array([i["x"] for i in items], dtype=float)
        self.y = np.array([i["label"] for i in items], dtype=int)
        self.src = np.array([i["source"] for i in items])
        self.v1 = np.array([i["v1"] for i in items])
        self.overlap = np.array([i["overlap"] for i in items])
        # One chunk supports the claim on its own (pair model >= 0.5), every name of the claim
        # is in some chunk and so is some word of each of its segments: supported whatever the
        # claim probability (the judge's verdict rule, ClaimEvidence.one_chunk_supports; see
        # verdict_score).
        names_missing = self.x[:, CLAIM_FEATURES.index("ent_miss_all")] > 0
        segment_missing = np.array([bool(i.get("segment_missing")) for i in items])
        self.strong = (self.v1 >= 0.5) & ~names_missing & ~segment_missing
        self.neg = np.array([bool(i.get("neg")) for i in items])
        self.elsewhere = np.array([bool(i.get("numbers_elsewhere")) for i in items])
        self.ordinals = np.array([bool(i.get("ordinals_missing")) for i in items])
        self.fold = np.array([jm.fold_of(i["group"], folds) for i in items])
        self.weight = np.zeros(len(items))
        for s in dev.SOURCES:
            m = self.src == s
            self.weight[m] = 1.0 / max(1, m.sum())
        resp: dict[str, list[int]] = defaultdict(list)
        for k, it in enumerate(items):
            resp[f"{it['source']}|{it['response']}"].append(k)
        self.responses = list(resp.values())
        self.resp_src = np.array([items[r[0]]["source"] for r in self.responses])
        self.resp_gold = np.array([int(self.y[r].min() == 0) for r in self.responses])


def isotonic(raw: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[list[float], list[float]]:
    """Weighted pool-adjacent-violators: knots (block mean of ``raw``, block rate), increasing."""
    order = np.argsort(raw, kind="mergesort")
    blocks: list[list[float]] = []  # [sum w*raw, sum w*y, sum w]
    for i in order:
        blocks.append([w[i] * raw[i], w[i] * y[i], w[i]])
        while len(blocks) > 1 and blocks[-2][1] / blocks[-2][2] >= blocks[-1][1] / blocks[-1][2]:
            a = blocks.pop()
            for j in range(3):
                blocks[-1][j] += a[j]
    xs = [b[0] / b[2] for b in blocks]
    ys = [b[1] / b[2] for b in blocks]
    return xs, ys


def _apply_iso(raw: np.ndarray, xs: list[float], ys: list[float]) -> np.ndarray:
    return np.interp(raw, xs, ys)


def _raw(x: np.ndarray, coef: np.ndarray, b: float) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(x @ coef + b, -30, 30)))


_NUM_MISS = CLAIM_FEATURES.index("num_miss")


# The number caps (ClaimModel.probability) by their weights-file keys.
NUMBER_CAPS: tuple[str, ...] = ("number_cap", "joint_number_cap", "ordinal_number_cap")


def number_cells(data: Data) -> dict[str, np.ndarray]:
    """The claims each number cap holds (ClaimModel.probability), by cap: a number the best
    chunk lacks, not found elsewhere next to the claim's words; the best chunk lacks a number
    that another chunk has next to them (ClaimEvidence.numbers_elsewhere); every number the
    best chunk lacks is an ordinal (ClaimEvidence.ordinals_missing)."""
    lacks = data.x[:, _NUM_MISS] > 0
    alone = lacks & ~data.elsewhere
    return {
        "number_cap": alone & ~data.ordinals,
        "joint_number_cap": lacks & data.elsewhere,
        "ordinal_number_cap": alone & data.ordinals,
    }


def capped(p: np.ndarray, data: Data, rows: np.ndarray, caps: dict[str, float]) -> np.ndarray:
    """The judge's caps (:data:`NUMBER_CAPS`, a missing key reads as ``number_cap``) on the
    probabilities ``p`` of ``rows`` (ClaimModel.probability, LocalJudge); ``number_cap`` also
    on a claim that conflicts with its evidence (negation, sufficiency)."""
    cells = number_cells(data)
    for key in NUMBER_CAPS[1:]:
        p = np.where(cells[key][rows], np.minimum(p, caps.get(key, caps["number_cap"])), p)
    return np.where(cells["number_cap"][rows] | data.neg[rows], np.minimum(p, caps["number_cap"]), p)


def number_caps(data: Data, rows: np.ndarray) -> dict[str, float]:
    """The supported rate among ``rows`` (sets weighted equally) of each number cell, the
    caps of :func:`capped`; 1.0 for a cell with no such claim."""
    w, y = data.weight, data.y
    caps = {}
    for key, cell in number_cells(data).items():
        m = cell & rows
        caps[key] = round(float(np.sum(w[m] * y[m]) / np.sum(w[m])), 4) if m.any() else 1.0
    return caps


def predict(fit: dict[str, Any], data: Data, rows: np.ndarray) -> np.ndarray:
    """The judge's probability of ``rows``: logistic, isotonic map, caps."""
    raw = _raw(data.x[rows], fit["coef"], fit["intercept"])
    return capped(_apply_iso(raw, *fit["knots"]), data, rows, fit)


def previous_judge(data: Data) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """local-3.x as shipped: its probability, its verdict, its thresholds (its features are
    picked from the current ones by name)."""
    w = json.loads(PREVIOUS.read_text())
    cols = [CLAIM_FEATURES.index(name) for name in w["features"]]
    raw = _raw(data.x[:, cols], np.array(w["coef"]), w["intercept"])
    every = np.ones(len(data.y), dtype=bool)
    calibrated = _apply_iso(raw, w["calibration"]["x"], w["calibration"]["y"])
    p = capped(calibrated, data, every, {"number_cap": w["number_cap"]})
    verdict = verdict_score(p, data.strong, data.neg) >= w["threshold"]
    return p, verdict, w


def _mean_ba(score: np.ndarray, y: np.ndarray, src: np.ndarray, t: float) -> float:
    vals = [jm.balanced_accuracy(score[src == s] >= t, y[src == s]) for s in dev.SOURCES if (src == s).any()]
    return float(np.nanmean(vals))


def verdict_score(p: np.ndarray, strong: np.ndarray, neg: np.ndarray) -> np.ndarray:
    """The score the verdict threshold applies to (``score >= threshold`` is the judge's verdict
    rule): the claim probability; 1 where one chunk alone supports the claim; 0 where the
    claim negates the sentence it rests on (the negation rule)."""
    return np.where(neg, 0.0, np.where(strong, 1.0, p))


def best_threshold(score: np.ndarray, y: np.ndarray, src: np.ndarray) -> float:
    """The threshold on the grid that maximises mean balanced accuracy over the sets."""
    return float(max(THRESHOLDS, key=lambda t: _mean_ba(score, y, src, t)))


def composed_answers(
    data: Data, rows: np.ndarray, lengths: tuple[int, ...], n: int
) -> list[tuple[str, int, list[np.ndarray], np.ndarray]]:
    """RAG-shaped answers composed from the claims in ``rows`` (:mod:`judge_responses`: per set
    and per length k in ``lengths``, ``n`` answers of k claims, :data:`COMPOSED_PREVALENCE` of
    them hallucinated): (set, k, each answer's claim rows, whether each is hallucinated). A set
    too small among ``rows`` for answers of k claims is left out."""
    records = np.array([i["response"] for i in data.items])
    out = []
    for s in dev.SOURCES:
        idx = np.flatnonzero(rows & (data.src == s))
        if not len(idx):
            continue
        pool = jr.pools(records[idx], data.fold[idx])
        for k in lengths:
            try:
                answers = jr.compose(data.y[idx] == 1, pool, k, COMPOSED_PREVALENCE, n, seed=k)
            except ValueError:  # too few claims of a kind among these rows
                continue
            out.append((s, k, [idx[a] for a, _ in answers], np.array([h for _, h in answers])))
    return out


def _inner_raw(data: Data, rows: np.ndarray, inner_folds: int) -> np.ndarray:
    """Stage-1 probabilities of ``rows`` cross-validated within them (grouped like the outer
    split: the outer fold ids present in ``rows``)."""
    x, y, w = data.x, data.y, data.weight
    oof = np.zeros(len(y))
    present = sorted(set(data.fold[rows].tolist()))
    inner = (
        data.fold
        if len(present) > 1
        else np.array([jm.fold_of(i["group"], inner_folds, seed=1) for i in data.items])
    )
    for k in present if len(present) > 1 else range(inner_folds):
        tr = rows & (inner != k)
        te = rows & (inner == k)
        c, bb = jm.fit_logistic(x[tr], y[tr], w[tr], l2=L2)
        oof[te] = _raw(x[te], c, bb)
    return oof


def fit_model(data: Data, rows: np.ndarray, inner_folds: int = 4) -> dict[str, Any]:
    """Fit the claim model on ``rows``: logistic weights on all of them; the isotonic map,
    verdict threshold and weak band from outputs cross-validated within ``rows`` (the weak band
    on RAG-shaped answers composed from them by :func:`judge_responses.fit_weak`'s
    one-standard-error rule: the sets' own multi-claim responses are 90-95% hallucinated, with
    33 clean ones in all)."""
    y, w = data.y, data.weight
    coef, b = jm.fit_logistic(data.x[rows], y[rows], w[rows], l2=L2)
    oof = _inner_raw(data, rows, inner_folds)
    xs, ys = isotonic(oof[rows], y[rows], w[rows])
    caps = number_caps(data, rows)
    cal = capped(_apply_iso(oof, xs, ys), data, np.ones(len(y), dtype=bool), caps)
    score = verdict_score(cal, data.strong, data.neg)
    thr = best_threshold(score[rows], y[rows], data.src[rows])
    answers = composed_answers(data, rows, WEAK_FIT_K, WEAK_FIT_ANSWERS)
    weak = jr.fit_weak(answers, score, thr)["weak"]
    return {
        "coef": coef,
        "intercept": b,
        "knots": (xs, ys),
        "threshold": thr,
        "weak": float(weak),
        **caps,
    }


def cross_validate(data: Data, folds: int, with_previous: bool = True) -> dict[str, Any]:
    """Out-of-fold v4 probabilities, per-row thresholds, lexical-baseline thresholds, and the
    previous judge (v3) as shipped (None without ``with_previous``: features other than the
    shipped ones)."""
    p = np.zeros(len(data.y))
    thr = np.zeros(len(data.y))
    weak = np.zeros(len(data.y))
    lex_thr = np.zeros(len(data.y))
    for k in range(folds):
        test = data.fold == k
        fit = fit_model(data, ~test)
        p[test] = predict(fit, data, test)
        thr[test], weak[test] = fit["threshold"], fit["weak"]
        lex_thr[test] = best_threshold(data.overlap[~test], data.y[~test], data.src[~test])
    previous = previous_judge(data) if with_previous else None
    return {"p": p, "thr": thr, "weak": weak, "lex_thr": lex_thr, "previous": previous}


def _claim_row(name: str, r: dict[str, float]) -> str:
    return (
        f"  {name:<8}{r['balanced_accuracy']:>8.3f}{r['macro_f1']:>10.3f}{r['auroc']:>8.3f}{r['ece']:>8.3f}"
    )


def _response_preds(data: Data, cv: dict[str, Any], responses: list | None = None) -> dict[str, np.ndarray]:
    """Per response (``data.responses`` unless given: lists of claim rows), each judge's flag."""
    out: dict[str, list[int]] = {"lexical": [], "v1": [], "v3": [], "v4": [], "v4_unsure": []}
    prev_p, _, prev = cv["previous"]
    for r in data.responses if responses is None else responses:
        out["lexical"].append(int((data.overlap[r] < cv["lex_thr"][r]).any()))
        out["v1"].append(int((data.v1[r] < 0.5).any()))
        score = verdict_score(prev_p[r], data.strong[r], data.neg[r])
        out["v3"].append(
            int(jr.response_verdict(list(score), prev["threshold"], prev["weak"]) == "hallucinated")
        )
        score = verdict_score(cv["p"][r], data.strong[r], data.neg[r])
        verdict = jr.response_verdict(list(score), float(cv["thr"][r[0]]), float(cv["weak"][r[0]]))
        out["v4"].append(int(verdict == "hallucinated"))
        out["v4_unsure"].append(int(verdict == "unsure"))
    return {k: np.array(v) for k, v in out.items()}


def _claim_table(data: Data, cv: dict[str, Any], results: dict[str, Any]) -> None:
    y, src, p = data.y, data.src, cv["p"]
    prev_p, prev_verdict, _ = cv["previous"]
    print(f"claim level (grouped {data.fold.max() + 1}-fold CV; positive = supported)")
    print(f"  {'judge':<8}{'bal.acc':>8}{'macro-F1':>10}{'AUROC':>8}{'ECE':>8}")
    for s in dev.SOURCES:
        m = src == s
        print(f"{s}  n={m.sum()}  supported={y[m].mean():.2f}")
        rows = {
            "lexical": (data.overlap[m], data.overlap[m] >= cv["lex_thr"][m]),
            "v1": (data.v1[m], data.v1[m] >= 0.5),
            "v3": (prev_p[m], prev_verdict[m]),
            "v4": (p[m], verdict_score(p[m], data.strong[m], data.neg[m]) >= cv["thr"][m]),
        }
        results[s] = {"claim": {}, "response": {}}
        for name, (score, pred) in rows.items():
            r = results[s]["claim"][name] = jm.claim_scores(score, pred, y[m])
            print(_claim_row(name, r))
        results[s]["reliability"] = jm.reliability(p[m], y[m])
        results[s]["ece_floor"] = jm.ece_floor(p[m])


def _composed_table(data: Data, cv: dict[str, Any], results: dict[str, Any]) -> None:
    """Response flags on RAG-shaped answers composed from each set's claims (judge_responses)."""
    floor = jr.flag_everything_f1(COMPOSED_PREVALENCE)
    print(
        f"RAG-shaped answers composed from each set's claims ({COMPOSED_PREVALENCE:.0%} hallucinated,"
        " one unsupported claim among k;"
    )
    print(f"{COMPOSED_ANSWERS} per row): F1 (share of clean / of hallucinated answers flagged);")
    print(f"flagging every answer scores F1 {floor:.3f}")
    everything = np.ones(len(data.y), dtype=bool)
    for s, k, claim_rows, gold in composed_answers(data, everything, COMPOSED_K, COMPOSED_ANSWERS):
        flags = _response_preds(data, cv, claim_rows)
        cells, figures = [], {}
        for name in ("lexical", "v3", "v4"):
            f = flags[name].astype(bool)
            figures[name] = {
                "f1": jm.f1(f, gold),
                "clean": f[~gold].mean(),
                "hallucinated": f[gold].mean(),
            }
            cells.append(f"{name} {figures[name]['f1']:.3f} ({f[~gold].mean():.2f}/{f[gold].mean():.2f})")
        figures["v4_unsure"] = float(flags["v4_unsure"].mean())
        results[s].setdefault("composed", {})[k] = figures
        print(f"  {s:<17}k={k}  " + "  ".join(cells) + f"  v4 unsure {figures['v4_unsure']:.2f}")


def report(data: Data, cv: dict[str, Any]) -> dict[str, Any]:
    """Print the tables; return the figures."""
    results: dict[str, Any] = {}
    _claim_table(data, cv, results)
    _composed_table(data, cv, results)
    resp = _response_preds(data, cv)
    print("response level (positive = hallucinated: any claim not supported; bal.acc's 95% interval")
    print("from a bootstrap over the responses' groups, a measure of how few responses decide it)")
    print(f"  {'judge':<8}{'F1':>8}{'bal.acc':>10}   95% interval")
    resp_groups = np.array([data.items[r[0]]["group"] for r in data.responses])
    for s in dev.SOURCES:
        m = data.resp_src == s
        g = data.resp_gold[m]
        print(
            f"{s}  responses={m.sum()} (clean {int((g == 0).sum())})  hallucinated={g.mean():.2f}"
            f"  v4 unsure={resp['v4_unsure'][m].mean():.2f}"
        )
        for name in ("lexical", "v1", "v3", "v4"):
            pr = resp[name][m]
            lo, hi = jm.group_bootstrap(
                lambda rows, pr=pr, g=g: jm.balanced_accuracy(pr[rows], g[rows]), resp_groups[m], draws=1000
            )
            print(
                f"  {name:<8}{jm.f1(pr, g):>8.3f}{jm.balanced_accuracy(pr, g):>10.3f}   [{lo:.3f}, {hi:.3f}]"
            )
            results[s]["response"][name] = {
                "f1": jm.f1(pr, g),
                "balanced_accuracy": jm.balanced_accuracy(pr, g),
                "balanced_accuracy_95": (lo, hi),
            }
    print("v4 reliability (bin: mean probability -> observed supported rate, count)")
    for s in dev.SOURCES:
        cells = "  ".join(f"{pm:.2f}->{obs:.2f} ({c})" for _, pm, obs, c in results[s]["reliability"])
        print(f"  {s}: {cells}")
    print("v4 ECE against its noise floor (the ECE a perfectly calibrated judge shows on these")
    print("probabilities, labels drawn from them: median, 95th percentile)")
    for s in dev.SOURCES:
        median, p95 = results[s]["ece_floor"]
        measured = results[s]["claim"]["v4"]["ece"]
        print(f"  {s:<18} ECE {measured:.3f}   floor {median:.3f} (95%: {p95:.3f})")
    return results


def weights_json(
    version: str, about: str, features: list[str], fit: dict[str, Any], threshold: float, weak: Any
) -> str:
    """A fitted claim model as the packaged weights file reads it (``collector/judge/local/weights/``):
    logistic coefficients, isotonic knots, verdict threshold, weak band and number caps."""
    xs, ys = fit["knots"]
    body = {
        "version": version,
        "about": about,
        "features": features,
        "coef": [round(float(c), 5) for c in fit["coef"]],
        "intercept": round(fit["intercept"], 5),
        "calibration": {"x": [round(v, 5) for v in xs], "y": [round(v, 5) for v in ys]},
        "threshold": threshold,
        "weak": weak,
        **{key: fit[key] for key in NUMBER_CAPS},
    }
    return json.dumps(body, indent=1) + "\n"


def write_weights(data: Data) -> None:
    """Fit on every row and write the packaged claim model."""
    fit = fit_model(data, np.ones(len(data.y), dtype=bool))
    about = (
        "Local judge claim support model: logistic over the claim features, isotonic "
        "calibration, verdict threshold, weak band and number caps; fit by "
        "bench/judge_quality.py --write-weights on the development data (AttributionBench "
        "dev, FActScore, Factcheck-GPT, WiCE dev; each set weighted equally; calibration "
        "and thresholds from grouped cross-validated outputs)."
    )
    WEIGHTS.write_text(weights_json("4", about, list(CLAIM_FEATURES), fit, fit["threshold"], fit["weak"]))
    knots = len(fit["knots"][0])
    print(f"wrote {WEIGHTS} (threshold {fit['threshold']}, weak {fit['weak']}, {knots} calibration knots)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=dev.DATA)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--write-weights", action="store_true")
    ap.add_argument("--no-cache", action="store_true")
    ap.add_argument("--no-halueval", action="store_true")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args(argv)
    if not (args.data / "judge-dev").is_dir():
        print(f"dev data not found under {args.data}: nothing to measure", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    data = Data(dev.load_items(args.data, use_cache=not args.no_cache), args.folds)
    print(
        f"{len(data.y)} claims, {len(data.responses)} responses ({time.perf_counter() - t0:.1f}s to featurise)"
    )
    cv = cross_validate(data, args.folds)
    results = report(data, cv)
    if args.write_weights:  # before HaluEval, which runs the packaged judge
        write_weights(data)
    score = verdict_score(cv["p"], data.strong, data.neg)
    claim_sets = dev.claim_set_answers(data.items, data.responses, cv["p"], score, cv["thr"], data.neg)
    results["real_answers"] = jr.real_answer_report(claim_sets, args.data, args.write_weights)
    if not args.no_halueval:
        results["halueval-qa"] = dev.halueval_report(args.data)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=float) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
