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
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

__all__ = ["MANY_CLAIMS", "compose", "flag_everything_f1", "pools"]

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
