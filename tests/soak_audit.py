"""After a soak: is every trace the application served stored exactly once and judged exactly once?

Read from the collector's chDB database once the collector has exited (a chDB path has one
owner). Delivery is at least once and storage deduplicates (docs: ReplacingMergeTree ordered
by ``trace_id`` for traces and by ``(trace_id, judge_id)`` for judgments), so the product's
view is the ``FINAL`` one: exactly once means every served trace id has one row there and no
row is for an id the application did not serve. The rows before ``FINAL`` show how many
duplicates the engine absorbed that are not merged away yet; :class:`Audit` reports both.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Audit", "SPANS_PER_ANSWER", "audit"]

SPANS_PER_ANSWER = 3  # the demo assistant's answer: the RAG call, its retrieval, its generation


@dataclass
class Audit:
    """The soak's end state; :attr:`problems` is empty when it is exactly once."""

    served: int
    stored: int  # served trace ids with a row in rag_traces FINAL
    trace_rows_final: int
    final_duplicates: int  # rows in FINAL beyond one per trace id
    trace_rows_raw: int  # before FINAL: duplicates not merged away yet included
    lost: list[str]  # served, no row
    unknown: int  # rows for ids the application did not serve
    # FINAL rows with fewer spans than an answer has: (id, spans, partition, offset). Stored once, but
    # parts of them came later than assembly.timeout_s (docs/collector.md#assembly: not re-assembled)
    incomplete: list[tuple]
    sampled: int  # stored rows the sampler picked
    sampling_rate: float
    judge_ids: list[str]
    judged: int  # sampled traces with a judgment (FINAL)
    judgment_rows_final: int
    judgment_rows_raw: int
    judged_twice: int  # traces with more than one judgment in FINAL (two judge ids for one trace)
    unjudged: list[str]  # sampled and stored, no judgment
    judged_unsampled: int  # judgments of traces the sampler did not pick
    judge_errors: int  # judgments stored with an error
    span_counts: dict[int, int] = field(default_factory=dict)

    @property
    def trace_duplicates_absorbed(self) -> int:
        return self.trace_rows_raw - self.trace_rows_final

    @property
    def judgment_duplicates_absorbed(self) -> int:
        return self.judgment_rows_raw - self.judgment_rows_final

    @property
    def problems(self) -> list[str]:
        """What breaks exactly once (completeness is apart: see :attr:`incomplete`)."""
        checks = {
            "lost traces": len(self.lost),
            "rows for unknown ids": self.unknown,
            "duplicate rows in FINAL": self.final_duplicates,
            "stored traces not sampled at rate 1": self.trace_rows_final - self.sampled
            if self.sampling_rate >= 1
            else 0,
            "sampled traces not judged": len(self.unjudged),
            "traces judged twice": self.judged_twice,
            "judgments of unsampled traces": self.judged_unsampled,
            "judge ids other than one": 0 if len(self.judge_ids) == 1 else len(self.judge_ids) or 1,
            "judgments with an error": self.judge_errors,
        }
        return [f"{name}: {n}" for name, n in checks.items() if n]

    def lines(self) -> list[str]:
        return [
            f"served {self.served} traces; stored {self.stored} (rag_traces FINAL {self.trace_rows_final} rows, "
            f"{self.trace_rows_raw} before FINAL: {self.trace_duplicates_absorbed} duplicates absorbed), "
            f"lost {len(self.lost)}, unknown {self.unknown}, incomplete {len(self.incomplete)} "
            f"(span counts {dict(sorted(self.span_counts.items()))})",
            *(f"  lost: {tid}" for tid in self.lost[:5]),
            *(f"  incomplete (trace, spans, partition, offset): {row}" for row in self.incomplete[:5]),
            f"sampled {self.sampled}; judged {self.judged} under {self.judge_ids} (rag_judgments FINAL "
            f"{self.judgment_rows_final} rows, {self.judgment_rows_raw} before FINAL: "
            f"{self.judgment_duplicates_absorbed} duplicates absorbed), judged twice {self.judged_twice}, "
            f"sampled but unjudged {len(self.unjudged)}, judged unsampled {self.judged_unsampled}, "
            f"judge errors {self.judge_errors}",
        ]


def audit(db: Path, served_ids: list[str], sampling_rate: float) -> Audit:
    """Read the traces and judgments stored at ``db`` against the trace ids the application served
    (``sampling_rate``: the collector's; at 1 every stored trace must be sampled and judged)."""
    from ragpulse.collector.storage.clickhouse import Storage

    st = Storage(f"chdb://{db}")
    try:
        trace_raw = st.query("SELECT count() FROM {db}.rag_traces")[0][0]
        judgment_raw = st.query("SELECT count() FROM {db}.rag_judgments")[0][0]
        traces = st.query(
            "SELECT trace_id, span_count, sampled, src_partition, src_offset FROM {db}.rag_traces FINAL"
        )
        judgments = st.query("SELECT trace_id, judge_id, error FROM {db}.rag_judgments FINAL")
    finally:
        st.close()
    served = set(served_ids)
    stored = {r[0] for r in traces}
    sampled = {r[0] for r in traces if r[2]}
    per_trace = Counter(r[0] for r in judgments)
    return Audit(
        served=len(served_ids),
        stored=len(served & stored),
        trace_rows_final=len(traces),
        final_duplicates=len(traces) - len(stored),
        trace_rows_raw=int(trace_raw),
        lost=sorted(served - stored),
        unknown=len(stored - served),
        incomplete=[(r[0], r[1], r[3], r[4]) for r in traces if r[1] < SPANS_PER_ANSWER],
        sampled=len(sampled),
        sampling_rate=sampling_rate,
        judge_ids=sorted({r[1] for r in judgments}),
        judged=len(sampled & per_trace.keys()),
        judgment_rows_final=len(judgments),
        judgment_rows_raw=int(judgment_raw),
        judged_twice=sum(1 for n in per_trace.values() if n > 1),
        unjudged=sorted(sampled - per_trace.keys()),
        judged_unsampled=len(per_trace.keys() - sampled),
        judge_errors=sum(1 for r in judgments if r[2]),
        span_counts=dict(Counter(r[1] for r in traces)),
    )
