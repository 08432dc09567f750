"""RAG-shaped answers composed from labelled claims: the response level where a monitor pages.

The dev sets' own responses cannot say how often a faithfulness alert fires on clean traffic:
FActScore's and Factcheck-GPT's are 95% and 90% hallucinated (33 clean ones between them),
and AttributionBench and WiCE records hold one claim each. A production RAG answer is mostly
faithful, and a hallucinated one usually holds one unsupported claim among supported ones.
So, per set, this draws answers of ``k`` labelled claims: a clean answer is ``k`` supported
claims, a hallucinated one ``k - 1`` supported claims and one that is not, hallucinated answers
making up ``prevalence`` of them.

The claims of one answer come from one *pool*: one record where the set's records hold many
claims (FActScore: one biography judged against one article), otherwise the records of one
cross-validation fold (each claim against its own chunks, as an answer drawing on several
retrieved passages). Every claim keeps its out-of-fold probability, so an answer is judged by
a model fit without any of its claims, with its fold's threshold and weak band.

The claim model's weak band is fit on such answers by the one-standard-error rule
(:func:`fit_weak`). ``weak`` splits the claims below the verdict threshold in two: a claim under ``weak`` makes its
answer ``hallucinated`` on its own, one between ``weak`` and the threshold among supported
claims makes it ``unsure`` (:func:`response_verdict`, the local judge's response rule up to 4.8,
kept to show the claim models' rows with the rule they shipped with).
It is fit on RAG-shaped answers composed from the training claims (:func:`compose`),
scored by mean response-level balanced accuracy over their (set, length) groups.

That objective is flat over a wide range of ``weak`` (within 0.006 from 0.20 to 0.41 on the
dev data), so the value that maximises it is noise, and a refit could move it by 0.15 from one
feature change to the next. The fit therefore takes the smallest ``weak`` whose balanced
accuracy falls short of the best one's by no more than one bootstrap standard error of that
shortfall (Breiman's one-standard-error rule): among the values the data cannot tell apart,
the one that calls the fewest answers ``hallucinated`` outright, which is what a faithfulness
alert pages on.

The judge's response decision now (:mod:`ragpulse.collector.judge.local.response`) is chosen and
fit here on every development set whose answers are real (:func:`judge_dev_data.real_answers`):
MTRAG (grouped by conversation), the FActScore and Factcheck-GPT responses, the hand-written RAG
and summary cases. Candidate rules over the same claim outputs (:data:`FAMILIES`) are compared by
grouped cross-validation (each set weighted equally in the fit; six fold seeds, medians) and by
leaving each set out of the fit; :func:`write_response_weights` fits the chosen one on every
answer and writes ``weights/response-v1.json`` (``bench/judge_quality.py --write-weights``).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import judge_dev_data as dev
import numpy as np
from judge_dev_data import ROOT, Answer
from judge_metrics import balanced_accuracy, f1, fold_of
from ragpulse.collector.judge.local.response import claim_score, load_response_rule

__all__ = [
    "CHOSEN",
    "FAMILIES",
    "MANY_CLAIMS",
    "OLD",
    "REAL_SETS",
    "WEAK_GRID",
    "Stats",
    "answer_summaries",
    "compare_rules",
    "compose",
    "fit_response",
    "fit_weak",
    "flag_everything_f1",
    "pools",
    "real_answer_report",
    "response_report",
    "response_verdict",
    "weak_curve",
    "write_response_weights",
]

# Records holding at least this many claims on average are pools of their own.
MANY_CLAIMS = 4


def pools(records: np.ndarray, folds: np.ndarray) -> np.ndarray:
    """Each claim's pool: its record when the records (of this set) hold ``MANY_CLAIMS`` claims
    or more on average, else its fold."""
    _, counts = np.unique(records, return_counts=True)
    if counts.mean() >= MANY_CLAIMS:
        return np.asarray(records, dtype=str)
    return np.array([f"fold {f}" for f in folds])


def compose(
    supported: np.ndarray,
    pool: np.ndarray,
    k: int,
    prevalence: float,
    n: int,
    seed: int = 0,
) -> list[tuple[np.ndarray, bool]]:
    """``n`` answers of ``k`` claims (row indices into ``supported``, the claims' labels), each
    drawn from one pool (weighted by its size), with whether it is hallucinated. Pools without
    enough claims of the kind a draw needs are skipped; raises ValueError when none has."""
    if k < 1 or not 0.0 <= prevalence <= 1.0:
        raise ValueError(f"need k >= 1 and 0 <= prevalence <= 1, got k={k}, prevalence={prevalence}")
    members: dict[str, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
    for i, (s, p) in enumerate(zip(supported, pool, strict=True)):
        members[p][0 if s else 1].append(i)
    clean = [(np.array(sup), np.array(uns)) for sup, uns in members.values() if len(sup) >= k]
    halluc = [(np.array(sup), np.array(uns)) for sup, uns in members.values() if len(sup) >= k - 1 and uns]
    if (prevalence < 1 and not clean) or (prevalence > 0 and not halluc):
        raise ValueError(f"no pool has enough claims for answers of {k}")
    rng = np.random.default_rng(seed)
    out: list[tuple[np.ndarray, bool]] = []
    for hallucinated in rng.random(n) < prevalence:
        choices = halluc if hallucinated else clean
        sizes = np.array([len(s) + len(u) for s, u in choices], dtype=float)
        sup, uns = choices[rng.choice(len(choices), p=sizes / sizes.sum())]
        rows = rng.choice(sup, k - int(hallucinated), replace=False)
        if hallucinated:
            rows = np.append(rows, rng.choice(uns))
        out.append((rows.astype(int), bool(hallucinated)))
    return out


def flag_everything_f1(prevalence: float) -> float:
    """F1 of calling every answer hallucinated: the floor a response judge must clear."""
    return 2 * prevalence / (1 + prevalence)


# -- the weak band ------------------------------------------------------------------------------

# The candidate values, every hundredth from 0 to 0.99; a fit takes those at most its threshold.
WEAK_GRID = np.round(np.arange(0.0, 1.0, 0.01), 2)
BOOTSTRAP_DRAWS = 300


def response_verdict(probs: list[float], threshold: float, weak: float) -> str | None:
    """The response-level decision from its claims' support probabilities.

    ``hallucinated`` when a claim is clearly unsupported (``p < weak``) or when more than
    one claim, or every claim, is only weakly supported; ``unsure`` when exactly one claim
    among at least two is weakly supported (``weak <= p < threshold``); ``faithful``
    otherwise. None without claims.
    """
    if not probs:
        return None
    if any(p < weak for p in probs):
        return "hallucinated"
    n_weak = sum(1 for p in probs if p < threshold)
    if n_weak == 0:
        return "faithful"
    if n_weak == 1 and len(probs) >= 2:
        return "unsure"
    return "hallucinated"


def answer_summaries(
    answers: list[tuple[str, int, list[np.ndarray], np.ndarray]], score: np.ndarray, threshold: float
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per composed-answer group: each answer's weakest claim score, whether the answer is
    ``hallucinated`` whatever ``weak`` is (two or more claims below ``threshold``, or its only
    claim), and whether it is hallucinated in truth. With these, the verdict at any ``weak``
    is ``weakest < weak or always`` (the rule of ``response_verdict``)."""
    out = []
    for _, _, claim_rows, gold in answers:
        weakest = np.array([score[r].min() for r in claim_rows])
        below = np.array([(score[r] < threshold).sum() for r in claim_rows])
        sizes = np.array([len(r) for r in claim_rows])
        always = (below >= 2) | ((below >= 1) & (sizes < 2))
        out.append((weakest, always, np.asarray(gold, dtype=bool)))
    return out


def _group_ba(weakest: np.ndarray, always: np.ndarray, gold: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Balanced accuracy of one group's answers at each ``weak`` in ``grid`` (the group holds
    clean and hallucinated answers alike: :func:`compose`)."""
    flags = (weakest[None, :] < grid[:, None]) | always[None, :]
    hit = (flags & gold).sum(1) / gold.sum()
    rejected = (~flags & ~gold).sum(1) / (~gold).sum()
    return (hit + rejected) / 2


def weak_curve(summaries: list[tuple[np.ndarray, np.ndarray, np.ndarray]], grid: np.ndarray) -> np.ndarray:
    """Mean balanced accuracy over the groups at each ``weak`` in ``grid``."""
    return np.mean([_group_ba(*s, grid) for s in summaries], axis=0)


def fit_weak(
    answers: list[tuple[str, int, list[np.ndarray], np.ndarray]],
    score: np.ndarray,
    threshold: float,
    draws: int = BOOTSTRAP_DRAWS,
    seed: int = 0,
) -> dict[str, Any]:
    """The weak band by the one-standard-error rule: the smallest grid value at most
    ``threshold`` whose mean balanced accuracy falls short of the best one's by no more than
    the standard error of that shortfall, estimated from ``draws`` bootstrap resamples of each
    group's answers (paired: every value is scored on the same resamples; seeded, so the fit
    is reproducible). Returns ``weak``, the best value, its balanced accuracy, and the
    shortfall and its standard error at the value chosen."""
    grid = WEAK_GRID[WEAK_GRID <= threshold + 1e-9]
    if not len(grid) or not answers:
        return {"weak": float(threshold), "best": float(threshold), "ba": float("nan"), "gap": 0.0, "se": 0.0}
    summaries = answer_summaries(answers, score, threshold)
    curve = weak_curve(summaries, grid)
    best = int(np.argmax(curve))
    rng = np.random.default_rng(seed)
    shortfalls = np.empty((draws, len(grid)))
    for d in range(draws):
        picks = [rng.integers(0, len(g), len(g)) for _, _, g in summaries]
        resampled = np.mean(
            [_group_ba(w[i], a[i], g[i], grid) for (w, a, g), i in zip(summaries, picks, strict=True)], axis=0
        )
        shortfalls[d] = resampled[best] - resampled
    gap = curve[best] - curve
    se = shortfalls.std(axis=0)
    chosen = int(np.flatnonzero(gap <= se)[0])
    return {
        "weak": float(grid[chosen]),
        "best": float(grid[best]),
        "ba": float(curve[best]),
        "gap": float(gap[chosen]),
        "se": float(se[chosen]),
    }


# -- the response decision on real answers ------------------------------------------------------

RESPONSE_WEIGHTS = ROOT / "collector" / "judge" / "local" / "weights" / "response-v1.json"
REAL_SETS: tuple[str, ...] = ("mtrag", "factscore", "factcheck-gpt", "rag-dev", "rag-check", "summaries")
MEAN_GRID = np.round(np.arange(0.30, 0.901, 0.01), 2)
_LOW_GRID = np.round(np.arange(0.0, 0.60, 0.02), 2)
CV_FOLDS, CV_SEEDS = 5, 6


class Stats:
    """Per answer, the claim statistics the candidate rules read."""

    def __init__(self, answers: list[Answer]) -> None:
        self.source = np.array([a.source for a in answers])
        self.group = np.array([f"{a.source}|{a.group}" for a in answers])
        self.gold = np.array([a.gold for a in answers], dtype=bool)
        rows = [
            [claim_score(v, p, a.threshold) for v, p in zip(a.verdicts, a.probs, strict=True)]
            for a in answers
        ]
        self.n = np.array([len(r) for r in rows])
        has = self.n > 0
        self.unsupported = np.array([sum(v != "supported" for v in a.verdicts) for a in answers])
        self.share = np.where(has, self.unsupported / np.maximum(self.n, 1), 0.0)
        self.contradicted = np.array(["contradicted" in a.verdicts for a in answers])
        self.mean = np.array([np.mean(r) if r else 1.0 for r in rows])
        self.mean_prob = np.array([np.mean(a.probs) if a.probs else 1.0 for a in answers])
        self.weakest = np.array([min(r) if r else 1.0 for r in rows])
        self.flagged = self.unsupported > 0


# Candidate decisions: name -> (parameter grid, predictions [grid, answers]). None fit per answer.
Family = tuple[list[tuple[float, ...]], Callable[[Stats], np.ndarray]]


def _grid1(grid: np.ndarray, rule: Callable[[Stats, float], np.ndarray]) -> Family:
    return [(float(t),) for t in grid], lambda s: np.array([rule(s, t) for t in grid])


def _grid2(g1: np.ndarray, g2: np.ndarray, rule: Callable[[Stats, float, float], np.ndarray]) -> Family:
    pairs = [(float(a), float(b)) for a in g1 for b in g2]
    return pairs, lambda s: np.array([rule(s, a, b) for a, b in pairs])


FAMILIES: dict[str, Family] = {
    "any claim": ([()], lambda s: s.flagged[None, :]),
    "weakest<t": _grid1(np.round(np.arange(0.0, 1.0, 0.01), 2), lambda s, t: s.flagged & (s.weakest < t)),
    "count>=k": _grid1(np.arange(1, 8), lambda s, k: s.unsupported >= k),
    "share>=s": _grid1(np.round(np.arange(0.02, 1.0, 0.02), 2), lambda s, x: s.flagged & (s.share >= x)),
    "mean prob<m": _grid1(MEAN_GRID, lambda s, m: s.flagged & (s.mean_prob < m)),
    "mean<m": _grid1(MEAN_GRID, lambda s, m: s.flagged & (s.mean < m)),
    "contra|mean<m": _grid1(MEAN_GRID, lambda s, m: s.flagged & (s.contradicted | (s.mean < m))),
    "weakest<t|mean<m": _grid2(
        _LOW_GRID, MEAN_GRID[::2], lambda s, t, m: s.flagged & ((s.weakest < t) | (s.mean < m))
    ),
    "weakest<t|share>=s": _grid2(
        _LOW_GRID,
        np.round(np.arange(0.05, 1.0, 0.05), 2),
        lambda s, t, x: s.flagged & ((s.weakest < t) | (s.share >= x)),
    ),
}
# The shipped decision (collector/judge/local/response.py), and the rule it replaces.
CHOSEN, OLD = "contra|mean<m", "any claim"


def _balanced(pred: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """Balanced accuracy of each row of ``pred`` ([grid, answers]) against ``gold``."""
    pos, neg = gold.sum(), (~gold).sum()
    if not pos or not neg:
        return np.full(pred.shape[0], np.nan)
    return 0.5 * (pred[:, gold].sum(1) / pos + (~pred[:, ~gold]).sum(1) / neg)


def _fit(pred: np.ndarray, stats: Stats, rows: np.ndarray) -> int:
    """The grid index that maximises the mean balanced accuracy over the sets among ``rows``."""
    per = [
        _balanced(pred[:, rows & (stats.source == s)], stats.gold[rows & (stats.source == s)])
        for s in REAL_SETS
    ]
    return int(np.argmax(np.nanmean([p for p in per if not np.isnan(p).all()], axis=0)))


def cross_validated(pred: np.ndarray, stats: Stats, seed: int) -> np.ndarray:
    """Out-of-fold flags: the rule fit on the other folds of every set (grouped folds)."""
    fold = np.array([fold_of(g, CV_FOLDS, seed) for g in stats.group])
    out = np.zeros(pred.shape[1], dtype=bool)
    for k in range(CV_FOLDS):
        out[fold == k] = pred[_fit(pred, stats, fold != k), fold == k]
    return out


def _per_set(flags: np.ndarray, stats: Stats) -> list[float]:
    return [
        float(_balanced(flags[None, stats.source == s], stats.gold[stats.source == s])[0]) for s in REAL_SETS
    ]


def compare_rules(stats: Stats) -> dict[str, dict[str, Any]]:
    """Per family: its parameters fit on every answer, balanced accuracy per set in-sample,
    out of fold (median over :data:`CV_SEEDS` fold seeds) and with the set left out of the fit,
    and the out-of-fold flags of the first seed."""
    out = {}
    every = np.ones(len(stats.gold), dtype=bool)
    for name, (params, make) in FAMILIES.items():
        pred = make(stats)
        best = _fit(pred, stats, every)
        oof = [cross_validated(pred, stats, seed) for seed in range(CV_SEEDS)]
        held = [
            float(
                _balanced(
                    pred[_fit(pred, stats, stats.source != s)][None, stats.source == s],
                    stats.gold[stats.source == s],
                )[0]
            )
            for s in REAL_SETS
        ]
        out[name] = {
            "params": params[best],
            "in_sample": _per_set(pred[best], stats),
            "cv": list(np.median([_per_set(f, stats) for f in oof], axis=0)),
            "left_out": held,
            "flags": pred[best],
            "oof_flags": oof,
        }
    return out


def _scores(flags: np.ndarray, gold: np.ndarray) -> tuple[float, float, float, float]:
    """Balanced accuracy, precision, recall, F1 (positive = hallucinated)."""
    tp, fp = int((flags & gold).sum()), int((flags & ~gold).sum())
    precision = tp / max(1, tp + fp)
    recall = tp / max(1, int(gold.sum()))
    return balanced_accuracy(flags, gold), precision, recall, f1(flags, gold)


def fit_response(stats: Stats) -> float:
    """``mean_below`` of the shipped decision fit on every answer."""
    params, make = FAMILIES[CHOSEN]
    return params[_fit(make(stats), stats, np.ones(len(stats.gold), dtype=bool))][0]


def write_response_weights(stats: Stats, path: Path = RESPONSE_WEIGHTS) -> float:
    """Fit the shipped decision on every answer and write its weights file; returns ``mean_below``."""
    mean_below = fit_response(stats)
    flags = stats.flagged & (stats.contradicted | (stats.mean < mean_below))
    body = {
        "version": "1",
        "about": (
            "Local judge response verdict: hallucinated when a claim is not supported and a claim is "
            "contradicted or the mean claim score is below mean_below (collector/judge/local/response.py). "
            "Fit by bench/judge_quality.py --write-weights to maximise the mean balanced accuracy over the "
            "sets below (each weighted equally): MTRAG and the hand-written cases judged whole by the "
            "packaged local judge, FActScore and Factcheck-GPT responses from out-of-fold claim probabilities."
        ),
        "mean_below": mean_below,
        "fit_sets": {
            s: {
                "answers": int((stats.source == s).sum()),
                "hallucinated": int(stats.gold[stats.source == s].sum()),
                "balanced_accuracy": round(float(_per_set(flags, stats)[i]), 4),
            }
            for i, s in enumerate(REAL_SETS)
        },
    }
    path.write_text(json.dumps(body, indent=1) + "\n")
    return mean_below


def _row(label: str, values: list[float]) -> str:
    cells = "".join(f"{v:>10.3f}" for v in values)
    return f"  {label:<22}{cells}{np.nanmean(values):>8.3f}{np.nanmin(values):>8.3f}"


def response_report(answers: list[Answer]) -> dict[str, Any]:
    """Print the candidate decisions across the real-answer sets and MTRAG's figures, the old
    any-claim rule beside the shipped decision (the packaged one, refit in-sample, out of fold,
    and fit without MTRAG); return the figures."""
    stats = Stats(answers)
    rules = compare_rules(stats)
    print("response level on real answers (positive = hallucinated; balanced accuracy per set; each")
    print(
        f"rule fit on every set, each weighted equally; cv = grouped {CV_FOLDS}-fold, median of {CV_SEEDS} seeds;"
    )
    print("left out = fit on the other sets only)")
    counts = "  ".join(
        f"{s} {int((stats.source == s).sum())}/{int(stats.gold[stats.source == s].sum())}" for s in REAL_SETS
    )
    print(f"  answers/hallucinated: {counts}")
    print(f"  {'rule':<22}" + "".join(f"{s[:9]:>10}" for s in REAL_SETS) + f"{'mean':>8}{'min':>8}")
    for name, r in rules.items():
        print(f"{name}  (fit on all: {', '.join(f'{p:g}' for p in r['params']) or 'no parameter'})")
        for key in ("in_sample", "cv", "left_out"):
            print(_row(key, r[key]))
    packaged = load_response_rule()
    shipped = np.array([packaged.hallucinated(a.verdicts, a.probs, a.threshold) for a in answers])
    m = stats.source == "mtrag"
    g = stats.gold[m]
    print(
        f"MTRAG response level ({int(m.sum())} answers, {int(g.sum())} hallucinated), positive = hallucinated"
    )
    print(f"  {'decision':<44}{'bal.acc':>8}{'precision':>10}{'recall':>8}{'F1':>8}")
    old, new = rules[OLD], rules[CHOSEN]
    lines = {
        "tier 1, any claim not supported (old)": _scores(old["flags"][m], g),
        f"tier 1, packaged decision (mean_below {packaged.mean_below:g})": _scores(shipped[m], g),
        f"tier 1, decision refit on all sets ({new['params'][0]:g})": _scores(new["flags"][m], g),
        "tier 1, decision out of fold (grouped cv)": tuple(
            np.median([_scores(f[m], g) for f in new["oof_flags"]], axis=0)
        ),
    }
    held = FAMILIES[CHOSEN][1](stats)[_fit(FAMILIES[CHOSEN][1](stats), stats, ~m)]
    lines["tier 1, decision fit without MTRAG"] = _scores(held[m], g)
    for label, vals in lines.items():
        print(f"  {label:<44}" + "".join(f"{v:>{w}.3f}" for v, w in zip(vals, (8, 10, 8, 8), strict=True)))
    print("other sets, balanced accuracy: old any-claim rule -> packaged decision")
    for s in REAL_SETS[1:]:
        k = stats.source == s
        before, after = _scores(old["flags"][k], stats.gold[k])[0], _scores(shipped[k], stats.gold[k])[0]
        print(f"  {s:<14}{before:.3f} -> {after:.3f}")
    return {
        "rules": {n: {k: r[k] for k in ("params", "in_sample", "cv", "left_out")} for n, r in rules.items()},
        "mtrag": {
            label: dict(zip(("balanced_accuracy", "precision", "recall", "f1"), v, strict=True))
            for label, v in lines.items()
        },
    }


def real_answer_report(claim_sets: list[Answer], data: Path, write: bool) -> dict[str, Any]:
    """Every set of :data:`REAL_SETS` (``claim_sets`` and the sets the packaged local judge
    judges whole) through :func:`response_report`; with ``write``, the decision refit and
    written first (after the claim weights, so the judge reads the refit ones)."""
    from ragpulse.collector.judge import get_judge

    answers = dev.judged_answers(get_judge("local"), data) + claim_sets
    if write:
        mean_below = write_response_weights(Stats(answers))
        print(f"wrote {RESPONSE_WEIGHTS} (mean_below {mean_below:g})")
    return response_report(answers)
