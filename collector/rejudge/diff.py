"""How two judges' verdicts differ on the same stored traces (``ragpulse judge diff``).

Before a new judge (a refit's weights, another model) is promoted, ``ragpulse rejudge``
scores stored history under its id beside the old one; this module compares the two ids on
the traces both judged successfully (optionally one service and a start time):

- every score of :data:`~..contract.SCORE_NAMES`: the mean under each id and how many traces
  moved up, down or not at all (on traces where both have the score);
- the flag rates the alerts read, computed from the stored rows as the objectives count them
  (collector/monitoring/objectives.yaml): unsupported and hallucinated claims among judged
  claims, traces by failure mode, false refusals, and the answers whose response verdict is
  ``hallucinated``;
- per class: claim verdicts, failure modes and response verdicts under each id, with the
  traces whose class changed (from -> to).

One query groups the joined rows by the classes of both ids and sums everything else, so the
work stays in the store however many traces the window holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..contract import CLAIM_VERDICTS, SCORE_NAMES
from ..storage.clickhouse import Storage
from .scope import JudgeScope

__all__ = ["FLAGS", "DiffScope", "judge_diff", "shared_traces"]

_CLAIM_COLS = ("claims_total", "claims_supported", "claims_unsupported", "claims_contradicted",
               "unsupported_hallucination")  # fmt: skip
_CLASSES = ("failure_mode", "response_verdict", "abstention_kind")
_PREFIX = {"failure_mode": "mode", "response_verdict": "verdict", "abstention_kind": "kind"}
_EPS = 1e-9

#: flag -> (what it counts, numerator, denominator) over the summed columns of one judge
FLAGS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "unsupported_claims": (
        "judged claims unsupported or contradicted", ("claims_unsupported", "claims_contradicted"), "claims_total"
    ),
    "hallucinated_claims": ("judged claims in no chunk", ("unsupported_hallucination",), "claims_total"),
    "retrieval_failure": ("traces failing retrieval (retrieval or both)", ("mode_retrieval", "mode_both"), "traces"),
    "generation_failure": ("traces failing generation (generation or both)", ("mode_generation", "mode_both"), "traces"),
    "false_refusal": ("traces refusing although the chunks support an answer", ("kind_false_refusal",), "traces"),
    "hallucinated_answers": ("answers whose response verdict is hallucinated", ("verdict_hallucinated",), "traces"),
}  # fmt: skip


@dataclass(frozen=True)
class DiffScope(JudgeScope):
    """Which traces: those both judges judged without error, optionally one service and a start."""

    def where(self) -> tuple[str, dict[str, Any]]:
        cond, params = self.judgment_filter()
        params.update(a=self.from_id, b=self.to_id)
        return " AND ".join(cond), params


def _side(judge: str, cond: str) -> str:
    cols = ", ".join(("trace_id", *SCORE_NAMES, *_CLAIM_COLS, "failure_mode", "abstention_kind"))
    return (
        f"(SELECT {cols}, JSONExtractString(extra, 'response_verdict') AS response_verdict "
        f"FROM {{db}}.rag_judgments FINAL WHERE judge_id = %({judge})s AND {cond})"
    )


def _sql(cond: str) -> str:
    sums = []
    for s in SCORE_NAMES:
        both = f"a.{s} IS NOT NULL AND b.{s} IS NOT NULL"
        sums += [
            f"countIf({both})", f"sumIf(a.{s}, {both})", f"sumIf(b.{s}, {both})",
            f"countIf({both} AND b.{s} > a.{s} + {_EPS})", f"countIf({both} AND b.{s} < a.{s} - {_EPS})",
        ]  # fmt: skip
    sums += [f"sum(a.{c})" for c in _CLAIM_COLS] + [f"sum(b.{c})" for c in _CLAIM_COLS]
    classes = [f"{side}.{c}" for c in _CLASSES for side in ("a", "b")]
    return (
        f"SELECT {', '.join(classes)}, count(), {', '.join(sums)} "
        f"FROM {_side('a', cond)} AS a INNER JOIN {_side('b', cond)} AS b ON a.trace_id = b.trace_id "
        f"GROUP BY {', '.join(classes)}"
    )


def shared_traces(storage: Storage, scope: DiffScope) -> int:
    """How many traces both judges judged without error in ``scope``."""
    cond, params = scope.where()
    rows = storage.query(
        f"SELECT count() FROM {_side('a', cond)} AS a INNER JOIN {_side('b', cond)} AS b "
        "ON a.trace_id = b.trace_id",
        params,
    )
    return int(rows[0][0]) if rows else 0


def _add(counts: dict[str, int], key: str, n: int) -> None:
    counts[key] = counts.get(key, 0) + n


def _fold(rows: list[tuple[Any, ...]]) -> dict[str, Any]:
    """Sum the grouped rows into per-judge totals, per-score sums and class transitions."""
    n_cls = 2 * len(_CLASSES)
    side: dict[str, dict[str, int]] = {"from": {}, "to": {}}
    scores = {s: [0, 0.0, 0.0, 0, 0] for s in SCORE_NAMES}  # n, sum from, sum to, up, down
    moves: dict[str, dict[tuple[str, str], int]] = {c: {} for c in _CLASSES}
    traces = 0
    for row in rows:
        cls, n, rest = row[:n_cls], int(row[n_cls]), row[n_cls + 1 :]
        traces += n
        for i, c in enumerate(_CLASSES):
            a, b = str(cls[2 * i] or ""), str(cls[2 * i + 1] or "")
            moves[c][(a, b)] = moves[c].get((a, b), 0) + n
            for name, value in (("from", a), ("to", b)):
                _add(side[name], f"{_PREFIX[c]}_{value or 'none'}", n)
        for k, s in enumerate(SCORE_NAMES):
            acc, vals = scores[s], rest[5 * k : 5 * k + 5]
            for j in range(5):
                acc[j] += vals[j] or 0
        claims = rest[5 * len(SCORE_NAMES) :]
        for j, c in enumerate(_CLAIM_COLS):
            _add(side["from"], c, int(claims[j] or 0))
            _add(side["to"], c, int(claims[len(_CLAIM_COLS) + j] or 0))
    for name in side:
        side[name]["traces"] = traces
    return {"traces": traces, "side": side, "scores": scores, "moves": moves}


def _rate(counts: dict[str, int], num: tuple[str, ...], den: str) -> float | None:
    d = counts.get(den, 0)
    return None if d == 0 else round(sum(counts.get(k, 0) for k in num) / d, 4)


def judge_diff(storage: Storage, scope: DiffScope) -> dict[str, Any]:
    """The comparison of the module docstring, as a dict (``--json`` prints it as it is)."""
    cond, params = scope.where()
    folded = _fold(storage.query(_sql(cond), params))
    side = folded["side"]
    out: dict[str, Any] = {"from": scope.from_id, "to": scope.to_id, "traces": folded["traces"], "scores": {}}
    for s, (n, sa, sb, up, down) in folded["scores"].items():
        out["scores"][s] = {
            "n": int(n), "from": round(sa / n, 4) if n else None, "to": round(sb / n, 4) if n else None,
            "delta": round((sb - sa) / n, 4) if n else None, "up": int(up), "down": int(down),
            "same": int(n - up - down),
        }  # fmt: skip
    out["flags"] = {
        name: {"counts": what, "from": _rate(side["from"], num, den), "to": _rate(side["to"], num, den)}
        for name, (what, num, den) in FLAGS.items()
    }
    out["claims"] = {
        v: {"from": side["from"].get(f"claims_{v}", 0), "to": side["to"].get(f"claims_{v}", 0)}
        for v in CLAIM_VERDICTS
    }
    out["classes"] = {}
    for c, moves in folded["moves"].items():
        values = sorted({v for pair in moves for v in pair}, key=lambda v: (v == "", v))
        out["classes"][c] = {
            "counts": {
                v or "none": {"from": sum(n for (a, _), n in moves.items() if a == v),
                              "to": sum(n for (_, b), n in moves.items() if b == v)}
                for v in values
            },
            "changed": [
                {"from": a or "none", "to": b or "none", "traces": n}
                for (a, b), n in sorted(moves.items(), key=lambda kv: -kv[1]) if a != b
            ],
        }  # fmt: skip
    return out
