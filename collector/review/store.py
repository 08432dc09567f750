"""What the review app and the label commands read from and write to the store.

Every read goes through ``FINAL`` (replays never count twice). The judgments
queue serves a random slice (for unbiased estimates) and an informative slice
ordered by what a human label is worth most (:data:`PRIORITIES`), one trace of
each in turn (:mod:`.slices`); the alert windows are the queued windows the
Alertmanager receiver wrote to ``rag_exports``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from ..contract import SCORE_NAMES
from ..export.select import stored_metadata
from ..storage.clickhouse import Storage
from .labels import TRACE_LEVEL, Label
from .slices import (
    DEFAULT_POOL,
    PRIORITIES,
    QueueItem,
    feedback_disagrees,
    in_random_slice,
    interleave,
    random_item,
    random_key,
    response_distance,
)

__all__ = ["PRIORITIES", "QueueItem", "ReviewStore", "Scope"]

_LABEL_COLS = (
    "trace_id, claim_index, argMax(label, version), argMax(reviewer, version), argMax(judge_id, version), "
    "argMax(claim_text, version), argMax(judge_label, version), argMax(abstention_kind, version), "
    "argMax(failure_mode, version), argMax(comment, version), argMax(slice, version)"
)


@dataclass(frozen=True)
class Scope:
    """Which judged traces: one judge, optionally one service and a start time."""

    judge_id: str
    service: str | None = None
    since_ns: int | None = None

    def where(self, alias: str = "") -> tuple[str, dict[str, Any]]:
        """SQL conditions on ``rag_judgments`` (``alias.`` prefixed) and their parameters."""
        a = f"{alias}." if alias else ""
        cond = [f"{a}judge_id = %(judge)s", f"{a}error = ''"]
        params: dict[str, Any] = {"judge": self.judge_id}
        if self.service:
            cond.append(f"{a}service = %(service)s")
            params["service"] = self.service
        if self.since_ns is not None:
            cond.append(f"{a}time >= fromUnixTimestamp64Nano(%(since)s)")
            params["since"] = int(self.since_ns)
        return " AND ".join(cond), params


class ReviewStore:
    """The review queries over one :class:`Storage`."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage

    # -- judges and the queue

    def judges(self, service: str | None = None) -> list[tuple[str, int]]:
        """(judge id, judged traces) of successful judgments, most first."""
        cond, params = ("AND service = %(service)s", {"service": service}) if service else ("", {})
        rows = self.storage.query(
            f"SELECT judge_id, count() AS n FROM {{db}}.rag_judgments FINAL WHERE error = '' {cond} "
            "GROUP BY judge_id ORDER BY n DESC, judge_id",
            params,
        )
        return [(str(j), int(n)) for j, n in rows]

    def queue(
        self,
        scope: Scope,
        threshold: float,
        margin: float = 0.15,
        pool: float = DEFAULT_POOL,
        mean_below: float | None = None,
    ) -> list[QueueItem]:
        """Every judged trace of ``scope`` once, the random and the informative slice in turn
        (:mod:`.slices`): ``threshold`` is the judge's claim verdict threshold, ``mean_below``
        its response rule's (None: no response-boundary class), ``pool`` the random share."""
        cond, params = scope.where()
        params.update(threshold=float(threshold))
        rows = self.storage.query(
            "SELECT j.trace_id, j.service, toUnixTimestamp64Nano(j.time), c.nearest, "
            "JSONExtractString(j.extra, 'local_failure_mode') AS local_mode, j.failure_mode, "
            "JSONExtractString(j.extra, 'response_verdict'), c.claims "
            f"FROM (SELECT * FROM {{db}}.rag_judgments FINAL WHERE {cond}) AS j "
            "LEFT JOIN (SELECT trace_id, min(abs(support_probability - %(threshold)s)) AS nearest, "
            "groupArray(tuple(verdict, support_probability)) AS claims "
            f"FROM {{db}}.rag_claims FINAL WHERE judge_id = %(judge)s "
            "GROUP BY trace_id) AS c ON c.trace_id = j.trace_id",
            params,
        )
        random = sorted(
            (random_item(str(r[0]), str(r[1])) for r in rows if in_random_slice(str(r[0]), pool)),
            key=lambda q: random_key(q.trace_id),
        )
        rest = [r for r in rows if not in_random_slice(str(r[0]), pool)]
        return interleave(random, self._informative(rest, threshold, margin, mean_below))

    def _informative(
        self, rows: list[tuple[Any, ...]], threshold: float, margin: float, mean_below: float | None
    ) -> list[QueueItem]:
        """The informative slice's traces in the order of :data:`.slices.PRIORITIES`; within a
        class, closest to its boundary first, then newest first."""
        ids = [str(r[0]) for r in rows]
        disagree = self._disagreeing(ids)
        feedback = self._feedback(ids)
        alerts = self._alert_windows()
        items: list[tuple[tuple[Any, ...], QueueItem]] = []
        for tid, service, t_ns, nearest, local_mode, mode, verdict, claims in rows:
            near = None if nearest is None else float(nearest)
            response = response_distance([(str(v), p) for v, p in claims or []], threshold, mean_below)
            record = {"failure_mode": mode, "response_verdict": verdict}
            if response is not None and response <= margin:
                prio, near = 0, response
            elif near is not None and near <= margin:
                prio = 1
            elif tid in feedback and feedback_disagrees(*feedback[tid], record):
                prio = 2
            elif tid in disagree or (local_mode and local_mode != mode):
                prio = 3
            elif any(s == service and lo <= int(t_ns) <= hi for s, lo, hi in alerts):
                prio = 4
            else:
                prio = 5
            key = (prio, near if near is not None else 2.0, -int(t_ns), str(tid))
            items.append((key, QueueItem(str(tid), str(service), PRIORITIES[prio], near)))
        return [item for _, item in sorted(items, key=lambda kv: kv[0])]

    def _feedback(self, ids: list[str]) -> dict[str, tuple[int, int]]:
        """trace id -> (negative, positive) feedback events, for the traces that have any."""
        out: dict[str, tuple[int, int]] = {}
        for i in range(0, len(ids), 5000):
            rows = self.storage.query(
                "SELECT trace_id, countIf(label = 'negative'), countIf(label = 'positive') "
                "FROM {db}.rag_feedback FINAL WHERE trace_id IN %(ids)s GROUP BY trace_id",
                {"ids": ids[i : i + 5000]},
            )
            out.update({str(t): (int(n), int(p)) for t, n, p in rows})
        return out

    def _disagreeing(self, ids: list[str]) -> set[str]:
        out: set[str] = set()
        for i in range(0, len(ids), 5000):
            rows = self.storage.query(
                "SELECT trace_id FROM {db}.rag_judgments FINAL WHERE error = '' AND trace_id IN %(ids)s "
                "GROUP BY trace_id HAVING uniqExact(failure_mode) > 1",
                {"ids": ids[i : i + 5000]},
            )
            out.update(str(r[0]) for r in rows)
        return out

    def _alert_windows(self) -> list[tuple[str, int, int]]:
        rows = self.storage.query(
            "SELECT service, toUnixTimestamp64Nano(window_start), toUnixTimestamp64Nano(window_end) "
            "FROM {db}.rag_exports FINAL WHERE kind = 'queued'"
        )
        return [(str(s), int(lo), int(hi)) for s, lo, hi in rows]

    # -- one trace

    def trace(self, trace_id: str, judge_id: str) -> dict[str, Any] | None:
        """The trace as the page shows it: query, answer, chunks, citations, the judge's record."""
        rows = self.storage.query(
            "SELECT service, query, answer, chunk_ids, chunk_contents, chunk_scores, chunk_metadata, "
            "citation_doc_ids, citation_markers, citation_starts, citation_ends, "
            "toUnixTimestamp64Nano(time) FROM {db}.rag_traces FINAL WHERE trace_id = %(t)s",
            {"t": trace_id},
        )
        if not rows:
            return None
        svc, query, answer, ids, contents, scores, metas, c_ids, c_marks, c_starts, c_ends, t_ns = rows[0]
        chunks = [
            {"id": str(i), "content": c, "score": s, "metadata": stored_metadata(m)}
            for i, c, s, m in zip(ids, contents, scores, metas, strict=False)
        ]
        citations = [
            {"doc_id": d, "marker": m, "start": int(a), "end": int(b)}
            for d, m, a, b in zip(c_ids, c_marks, c_starts, c_ends, strict=False)
        ]
        record = self.judge_records_for([trace_id], judge_id).get(trace_id)
        return {
            "trace_id": trace_id, "service": str(svc), "query": query, "answer": answer,
            "chunks": chunks, "citations": citations, "time_ns": int(t_ns), "judgment": record,
        }  # fmt: skip

    def judge_records_for(self, ids: list[str], judge_id: str) -> dict[str, dict[str, Any]]:
        """trace id -> the judge's output record (DESIGN.md "The judge"), with its claims."""
        out: dict[str, dict[str, Any]] = {}
        for i in range(0, len(ids), 5000):
            part = ids[i : i + 5000]
            out.update(self._records("trace_id IN %(ids)s", {"ids": part, "judge": judge_id}))
        return {t: out[t] for t in ids if t in out}

    def judge_records(self, scope: Scope) -> dict[str, dict[str, Any]]:
        """trace id -> output record of every successfully judged trace of ``scope``, by time."""
        cond, params = scope.where()
        return self._records(cond, params)

    def _records(self, cond: str, params: dict[str, Any]) -> dict[str, dict[str, Any]]:
        if "judge_id" not in cond:
            cond = f"judge_id = %(judge)s AND error = '' AND {cond}"
        rows = self.storage.query(
            "SELECT trace_id, judge_id, service, "
            + ", ".join(SCORE_NAMES)
            + ", abstained, abstention_kind, failure_mode, unsupported_claims, extra "
            f"FROM {{db}}.rag_judgments FINAL WHERE {cond} ORDER BY time, trace_id",
            params,
        )
        records: dict[str, dict[str, Any]] = {}
        for r in rows:
            tid, jid, svc = str(r[0]), str(r[1]), str(r[2])
            scores = dict(zip(SCORE_NAMES, r[3 : 3 + len(SCORE_NAMES)], strict=True))
            abstained, kind, mode, unsupported, extra = r[3 + len(SCORE_NAMES) :]
            rec: dict[str, Any] = {"trace_id": tid, "judge_id": jid, "service": svc}
            rec.update({k: None if v is None else float(v) for k, v in scores.items()})
            rec.update(
                abstained=bool(abstained), abstention_kind=kind or None, failure_mode=mode or None,
                unsupported_claims=int(unsupported), claims=[],
            )  # fmt: skip
            try:
                rec["response_verdict"] = json.loads(extra or "{}").get("response_verdict")
            except ValueError:
                rec["response_verdict"] = None
            records[tid] = rec
        if records:
            self._attach_claims(records, str(params["judge"]))
        return records

    def _attach_claims(self, records: dict[str, dict[str, Any]], judge_id: str) -> None:
        ids = list(records)
        for i in range(0, len(ids), 5000):
            rows = self.storage.query(
                "SELECT trace_id, claim_index, text, verdict, supporting_chunk_ids, cited_chunk_ids, "
                "citation_valid, unsupported_source, support_probability FROM {db}.rag_claims FINAL "
                "WHERE judge_id = %(judge)s AND trace_id IN %(ids)s ORDER BY trace_id, claim_index",
                {"judge": judge_id, "ids": ids[i : i + 5000]},
            )
            for tid, idx, text, verdict, sup, cited, valid, source, prob in rows:
                records[str(tid)]["claims"].append(
                    {
                        "index": int(idx), "text": text, "verdict": verdict,
                        "supporting_chunk_ids": list(sup), "cited_chunk_ids": list(cited),
                        "citation_valid": None if valid is None else bool(valid),
                        "unsupported_source": source or None,
                        "support_probability": None if prob is None else round(float(prob), 4),
                    }
                )  # fmt: skip

    # -- labels

    def save_labels(self, labels: list[Label], queue: str, service: str) -> int:
        """Store labels (a resave of the same trace, claim, reviewer and judge replaces the row),
        each with the queue slice it carries (:data:`.labels.SLICES`)."""
        now_ns = time.time_ns()
        stamp = datetime.fromtimestamp(now_ns / 1e9, tz=timezone.utc)
        rows = [
            {
                "trace_id": lab.trace_id, "claim_index": lab.claim_index, "reviewer": lab.reviewer,
                "judge_id": lab.judge_id, "queue": queue, "slice": lab.slice, "service": service,
                "claim_text": lab.claim_text,
                "label": lab.label, "judge_label": lab.judge_label, "abstention_kind": lab.abstention_kind,
                "failure_mode": lab.failure_mode, "comment": lab.comment,
                "time": stamp, "version": now_ns,
            }
            for lab in labels
        ]  # fmt: skip
        return self.storage.insert_reviews(rows)

    def labels(
        self,
        *,
        trace_ids: list[str] | None = None,
        reviewer: str | None = None,
        judge_id: str | None = None,
        service: str | None = None,
    ) -> list[Label]:
        """The latest label per (trace, claim), of one reviewer or of anyone (latest wins)."""
        cond, params = ["1"], {}
        if trace_ids is not None:
            cond.append("trace_id IN %(ids)s")
            params["ids"] = trace_ids or [""]
        for col, val in (("reviewer", reviewer), ("judge_id", judge_id), ("service", service)):
            if val is not None:
                cond.append(f"{col} = %({col})s")
                params[col] = val
        rows = self.storage.query(
            f"SELECT {_LABEL_COLS} FROM {{db}}.rag_reviews FINAL WHERE {' AND '.join(cond)} "
            "GROUP BY trace_id, claim_index ORDER BY trace_id, claim_index",
            params,
        )
        return [Label(str(r[0]), int(r[1]), *(str(v) for v in r[2:])) for r in rows]

    def progress(self, reviewer: str, scope: Scope) -> dict[str, int]:
        """Traces of ``scope`` labelled (trace label) by anyone, and labels ``reviewer`` saved today."""
        cond, params = scope.where()
        params["reviewer"] = reviewer
        done = self.storage.query(
            "SELECT uniqExact(trace_id) FROM {db}.rag_reviews FINAL WHERE queue = 'judgments' "
            f"AND claim_index = {TRACE_LEVEL} AND judge_id = %(judge)s AND trace_id IN "
            f"(SELECT trace_id FROM {{db}}.rag_judgments FINAL WHERE {cond})",
            params,
        )[0][0]
        today = self.storage.query(
            "SELECT queue, count() FROM {db}.rag_reviews FINAL WHERE reviewer = %(reviewer)s "
            "AND toDate(time) = today() GROUP BY queue",
            params,
        )
        out = {"labelled_traces": int(done), "today_cases": 0, "today_judgments": 0}
        for q, n in today:
            out[f"today_{q}"] = int(n)
        return out

    def label_counts(self) -> dict[tuple[str, str, str], int]:
        """(service, queue, label) -> labels stored (the latest row of each key)."""
        rows = self.storage.query(
            "SELECT service, queue, label, count() FROM {db}.rag_reviews FINAL GROUP BY service, queue, label"
        )
        return {(str(s), str(q), str(lab)): int(n) for s, q, lab, n in rows}

    def unlabelled_traces(self) -> dict[str, int]:
        """service -> traces judged without error (by any judge) that have no trace label yet."""
        rows = self.storage.query(
            "SELECT service, uniqExact(trace_id) FROM {db}.rag_judgments WHERE error = '' AND trace_id NOT IN "
            f"(SELECT trace_id FROM {{db}}.rag_reviews WHERE claim_index = {TRACE_LEVEL}) GROUP BY service"
        )
        return {str(s): int(n) for s, n in rows}

    def agreement(self, last_n: int) -> list[tuple[str, str, float, int]]:
        """(service, judge, agreement, n): over the latest ``last_n`` claim labels per service and
        judge (the latest label per claim), the share where the judge's verdict, read as
        supported or not, equals the human's."""
        rows = self.storage.query(
            "SELECT service, judge_id, avg(agree), count() FROM ("
            "  SELECT service, judge_id, agree, row_number() OVER "
            "    (PARTITION BY service, judge_id ORDER BY t DESC) AS k FROM ("
            "    SELECT argMax(service, version) AS service, judge_id, max(time) AS t, "
            "      (argMax(label, version) = 'supported') = (argMax(judge_label, version) = 'supported') AS agree "
            "    FROM {db}.rag_reviews FINAL WHERE claim_index >= 0 AND judge_label != '' "
            "    GROUP BY trace_id, claim_index, judge_id)"
            ") WHERE k <= %(n)s GROUP BY service, judge_id ORDER BY service, judge_id",
            {"n": int(last_n)},
        )
        return [(str(s), str(j), float(a), int(n)) for s, j, a, n in rows]
