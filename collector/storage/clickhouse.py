"""ClickHouse storage for ragpulse: one module for chDB (embedded) and a ClickHouse server.

``Storage(dsn)`` takes ``chdb:///abs/path`` (in-process chDB; one process may
own a path at a time; engine options in the query, e.g.
``?config-file=/etc/ragpulse/chdb.xml`` for a storage configuration; the
collector adds its engine defaults, see :mod:`.chdb_engine`) or
``http(s)://user:password@host:port[/db]``. Both go through clickhouse-connect,
so inserts, DDL and queries are the same code.
Inserts are batched; the schema (sql/schema.sql, documented in docs/schema.md)
uses ReplacingMergeTree, so a replayed trace may sit in two parts until they
merge. Reads that count rows use FINAL (:meth:`Storage.budget_spent`); the
others aggregate so that a duplicate cannot change the answer (the highest
offset, any of a trace's identical decisions).

Connection problems, and a full disk, raise :class:`StorageUnavailable`; the
caller decides how to retry (the collector retries with backoff and pauses
consumption).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from importlib import resources
from typing import Any
from urllib.parse import parse_qsl, unquote, urlparse

from ..contract import SCORE_NAMES, TRACE_COLUMNS
from ..core.model import RagTrace
from .chdb_engine import engine_options
from .rows import EncodedRows, encode_traces, json_bytes, nanos_text

__all__ = [
    "Storage",
    "StorageUnavailable",
    "schema_statements",
    "JUDGMENT_COLUMNS",
    "CLAIM_COLUMNS",
    "REVIEW_COLUMNS",
]

JUDGMENT_COLUMNS = (
    "trace_id", "judge_id", "service", "variant", "time", "judged_at",
    *SCORE_NAMES, "abstained", "abstention_kind", "failure_mode",
    "claims_total", "claims_supported", "claims_unsupported", "claims_contradicted",
    "unsupported_hallucination", "unsupported_noise", "unsupported_claims", "tier",
    "judge_latency_ms", "judge_cost_usd", "error", "sampled_reason", "version", "extra",
)  # fmt: skip

CLAIM_COLUMNS = (
    "trace_id", "judge_id", "claim_index", "service", "variant", "time", "text", "verdict",
    "supporting_chunk_ids", "cited_chunk_ids", "citation_valid", "unsupported_source", "support_probability",
    "restates_user", "version",
)  # fmt: skip

#: ``rag_reviews``: human labels from ``ragpulse review`` (claim_index -1 = the trace-level label).
REVIEW_COLUMNS = (
    "trace_id", "claim_index", "reviewer", "judge_id", "queue", "slice", "service", "claim_text", "label",
    "judge_label", "abstention_kind", "failure_mode", "comment", "time", "version",
)  # fmt: skip


class StorageUnavailable(RuntimeError):
    """ClickHouse could not be reached or refused the operation for a transient reason."""


def schema_statements(database: str = "ragpulse", ttl_days: int = 90) -> list[str]:
    """The DDL of sql/schema.sql for ``database`` with TTLs of ``ttl_days`` (0 = none)."""
    if not database.replace("_", "").isalnum():
        raise ValueError(f"invalid database name {database!r}")
    text = resources.files(__package__).joinpath("sql/schema.sql").read_text()

    def ttl(col: str) -> str:
        return f"TTL toDateTime({col}) + INTERVAL {int(ttl_days)} DAY" if ttl_days else ""

    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))
    body = body.format(
        db=database,
        ttl_traces=ttl("time"),
        ttl_judgments=ttl("time"),
        ttl_claims=ttl("time"),
        ttl_feedback=ttl("time"),
    )
    return [s.strip() for s in body.split(";") if s.strip()]


# In-process chDB: an exception's message without its symbolized stack trace. ClickHouse
# symbolizes the first stack trace a process meets by opening and reading every loaded shared
# object, and keeps them open and resident (measured on a refused insert: +134 descriptors and
# +43 MB resident for good, against +3 descriptors and +3.4 MB with this setting). The collector
# logs only an error's first line (code and message), which this leaves as it was.
_IN_PROCESS_SESSION = {"calculate_text_stack_trace": 0}


def _client_for(dsn: str) -> Any:
    import clickhouse_connect

    if dsn.startswith("chdb://"):
        # chDB engine options ride in the DSN's query (chdb:///path?config-file=/etc/chdb.xml):
        # clickhouse-connect would read them as client arguments and ignore them.
        base, _, query = dsn.partition("?")
        options = engine_options(base.removeprefix("chdb://"), dict(parse_qsl(query)))
        return clickhouse_connect.get_client(dsn=base, chdb_options=options, settings=_IN_PROCESS_SESSION)
    url = urlparse(dsn)
    secure = url.scheme in ("https", "clickhouses")
    return clickhouse_connect.get_client(
        host=url.hostname or "localhost",
        port=url.port or (8443 if secure else 8123),
        username=unquote(url.username or "default"),
        password=unquote(url.password or ""),
        secure=secure,
        database="default",
        connect_timeout=5,
        send_receive_timeout=60,
    )


_TRANSIENT_CODES = ("TOO_MANY_PARTS", "TIMEOUT", "MEMORY_LIMIT", "NOT_ENOUGH_SPACE")


def _is_transient(exc: BaseException) -> bool:
    from clickhouse_connect.driver.exceptions import DatabaseError, OperationalError

    if isinstance(exc, OperationalError | ConnectionError | TimeoutError | OSError):
        return True
    msg = str(exc)
    # NOT_ENOUGH_SPACE: the disk (less its keep_free_space_bytes) is full; retried until space returns.
    if isinstance(exc, DatabaseError) and any(code in msg for code in _TRANSIENT_CODES):
        return True
    return "Unable to open the chdb engine" in msg or "EmbeddedServer" in msg


# In-process chDB parses an insert on one thread: parallel parsing (several threads, each
# with its own chunk buffers) only adds memory for batches of this size.
_IN_PROCESS_INSERT = {"input_format_parallel_parsing": 0}
# For rag_traces also no optimize_on_insert, which runs ReplacingMergeTree's merge over each
# inserted block: a pass and a copy of every column that finds nothing to replace, since a batch
# holds each trace once (Ingestor.prepare); replays across batches are merged as ever (measured:
# chDB's pool threads 0.27-0.41 -> 0.26-0.29 CPU-s, ~12,000 fewer page faults per bench drain).
_IN_PROCESS_TRACE_INSERT = {**_IN_PROCESS_INSERT, "optimize_on_insert": 0}


class Storage:
    """Thread-safe access to the ragpulse tables through one clickhouse-connect client."""

    def __init__(self, dsn: str, database: str = "ragpulse", ttl_days: int = 90) -> None:
        self.dsn = dsn
        self.database = database
        self.ttl_days = ttl_days
        self._client: Any = None
        self._lock = threading.RLock()
        self._types: dict[str, list[str]] = {}
        self._in_process = dsn.startswith("chdb://")
        self._purge = self._in_process  # see _release_memory

    # -- connection

    def _get(self) -> Any:
        if self._client is None:
            try:
                self._client = _client_for(self.dsn)
            except Exception as exc:
                raise StorageUnavailable(f"cannot connect to {self._safe_dsn()}: {exc}") from exc
        return self._client

    def _safe_dsn(self) -> str:
        url = urlparse(self.dsn)
        if url.password:
            return self.dsn.replace(f":{url.password}@", ":***@")
        return self.dsn

    def _call(self, fn: str, *args: Any, **kwargs: Any) -> Any:
        """``client.fn(...)``; a transient failure raises :class:`StorageUnavailable`.

        A server's client is dropped then (the next call connects afresh). An in-process chDB
        client is kept: its engine runs in this process and a refused insert (a full disk) leaves
        it sound, while every close and reopen leaves threads and memory behind in the process
        (measured: about 5 threads and 2.4 MB of resident memory per reopen, never returned;
        a 45 s storage outage retried 20 times, 37 -> 161 threads)."""
        with self._lock:
            client = self._get()
            try:
                return getattr(client, fn)(*args, **kwargs)
            except Exception as exc:
                if _is_transient(exc):
                    if not self._in_process:
                        self._drop_client()
                    raise StorageUnavailable(f"{fn} failed: {exc}") from exc
                raise

    def _drop_client(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            try:
                client.close()
            except Exception:  # noqa: BLE001 - closing a broken client must not mask the cause
                pass

    def close(self) -> None:
        """Close the client (frees a chDB path for another process)."""
        with self._lock:
            self._drop_client()

    def ping(self) -> bool:
        """True when ClickHouse answers a trivial query."""
        try:
            return self._call("command", "SELECT 1") == 1
        except Exception:  # noqa: BLE001 - readiness is a yes/no answer
            return False

    # -- schema

    def apply_schema(self) -> list[str]:
        """Create the database and tables if missing (idempotent); returns the statements run."""
        statements = schema_statements(self.database, self.ttl_days)
        for stmt in statements:
            self._call("command", stmt)
        self._types.clear()
        return statements

    def _column_types(self, table: str) -> list[str]:
        types = self._types.get(table)
        if types is None:
            rows = self._call("query", f"DESCRIBE TABLE {self.database}.{table}").result_rows
            types = {r[0]: r[1] for r in rows}
            self._types[table] = types  # type: ignore[assignment]
        return types  # type: ignore[return-value]

    def _insert(self, table: str, columns: Sequence[str], data: list[list[Any]]) -> None:
        types = self._column_types(table)
        self._call(
            "insert",
            f"{self.database}.{table}",
            data,
            column_names=list(columns),
            column_type_names=[types[c] for c in columns],  # type: ignore[index]
            column_oriented=True,
        )

    # -- writes

    def insert_traces(self, traces: Sequence[RagTrace], src_topic: str = "") -> None:
        """Insert assembled traces in one statement (which also records their Kafka positions)."""
        if traces:
            self.insert_encoded_traces(encode_traces(traces, src_topic))

    def insert_encoded_traces(self, rows: EncodedRows) -> None:
        """Insert rows made by :func:`~.rows.encode_traces`.

        Split from the encoding so a writer thread can run the insert (ClickHouse work, GIL
        released) while the caller's thread does the Python work. The block is joined: handed
        a list, the chDB backend writes its input file row by row, and every write gives up the
        GIL and waits up to a switch interval (5 ms) to get it back from a busy caller
        (measured: a 2,000-row insert took 4.8 s instead of 0.1 s).
        """
        if not rows.block:
            return
        self._call(
            "raw_insert",
            f"{self.database}.rag_traces",
            list(TRACE_COLUMNS),
            insert_block=rows.block,
            fmt=rows.fmt,
            settings=_IN_PROCESS_TRACE_INSERT if self._in_process else None,
        )
        self._release_memory()

    def _release_memory(self) -> None:
        """In-process chDB only: hand the memory an insert freed back to the OS at once.

        ClickHouse's allocator (jemalloc) keeps freed pages for reuse for a while, which in
        the collector's process reads as ~50 MB of extra resident memory (measured: steady
        RSS 350 -> 305 MB, peak 390 -> 370 MB over 60,000 inserted rows). A ClickHouse
        server manages its own memory: nothing is done for one.
        """
        if not self._purge:
            return
        try:
            self._call("command", "SYSTEM JEMALLOC PURGE")
        except Exception:  # noqa: BLE001 - an engine without jemalloc: stop trying, never fail an insert
            self._purge = False

    def insert_rows(self, table: str, columns: Sequence[str], rows: Iterable[dict[str, Any]]) -> int:
        """Insert dict rows (missing keys default to the column's zero value); returns the count."""
        rows = list(rows)
        if not rows:
            return 0
        cols = [[r.get(c) for r in rows] for c in columns]
        self._insert(table, columns, cols)
        return len(rows)

    def insert_json_rows(
        self, table: str, columns: Sequence[str], rows: Iterable[dict[str, Any]], nanos: Sequence[str] = ()
    ) -> int:
        """Insert dict rows as JSON lines, ``nanos`` columns given as integer nanoseconds; returns
        the count. For the ingest process: clickhouse-connect's own inserts (:meth:`insert_rows`)
        import pandas on first use, ~40 MB of private memory a collector has no other use for."""
        lines = []
        for r in rows:
            values = [r.get(c) for c in columns]
            for k, c in enumerate(columns):
                if c in nanos:
                    values[k] = nanos_text(int(values[k]))
            lines.append(json_bytes(values, line=True))
        if lines:
            self._call(
                "raw_insert", f"{self.database}.{table}", list(columns), insert_block=b"".join(lines),
                fmt="JSONCompactEachRow", settings=_IN_PROCESS_INSERT if self._in_process else None,
            )  # fmt: skip
        return len(lines)

    def insert_judgments(self, rows: Iterable[dict[str, Any]]) -> int:
        """Insert ``rag_judgments`` rows (dicts keyed by JUDGMENT_COLUMNS)."""
        return self.insert_rows("rag_judgments", JUDGMENT_COLUMNS, rows)

    def insert_claims(self, rows: Iterable[dict[str, Any]]) -> int:
        """Insert ``rag_claims`` rows (dicts keyed by CLAIM_COLUMNS)."""
        return self.insert_rows("rag_claims", CLAIM_COLUMNS, rows)

    def insert_reviews(self, rows: Iterable[dict[str, Any]]) -> int:
        """Insert ``rag_reviews`` rows (dicts keyed by REVIEW_COLUMNS)."""
        return self.insert_rows("rag_reviews", REVIEW_COLUMNS, rows)

    # -- reads

    def read_progress(self, topic: str) -> dict[int, int]:
        """Per partition, the highest Kafka offset that fed a stored trace (replay detection)."""
        rows = self._call(
            "query",
            f"SELECT src_partition, max(src_offset) FROM {self.database}.rag_traces "
            "WHERE src_topic = %(t)s AND src_partition >= 0 GROUP BY src_partition",
            parameters={"t": topic},
        ).result_rows
        return {int(p): int(o) for p, o in rows}

    def stored_decisions(self, trace_ids: Sequence[str]) -> dict[str, tuple[bool, str]]:
        """Sampling decisions already stored for these traces (any version: decisions never change)."""
        out: dict[str, tuple[bool, str]] = {}
        ids = list(trace_ids)
        for i in range(0, len(ids), 5000):
            rows = self._call(
                "query",
                f"SELECT trace_id, any(sampled), any(sampled_reason) FROM {self.database}.rag_traces "
                "WHERE trace_id IN %(ids)s GROUP BY trace_id",
                parameters={"ids": ids[i : i + 5000]},
            ).result_rows
            for tid, sampled, reason in rows:
                out[tid] = (bool(sampled), reason)
        return out

    def budget_spent(self, minute_start_ns: int, reasons: Sequence[str]) -> int:
        """How many stored traces of this trace-time minute spent the sampling budget."""
        start = minute_start_ns // 1_000_000_000
        return int(
            self._call(
                "query",
                f"SELECT count() FROM {self.database}.rag_traces FINAL WHERE time >= toDateTime64(%(s)s, 9, 'UTC') "
                "AND time < toDateTime64(%(e)s, 9, 'UTC') AND sampled = 1 AND sampled_reason IN %(r)s",
                parameters={"s": start, "e": start + 60, "r": list(reasons)},
            ).result_rows[0][0]
        )

    def query(self, sql: str, parameters: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
        """Run a read query (``{db}`` in the text is replaced by the database name)."""
        return self._call(
            "query", sql.replace("{db}", self.database), parameters=parameters or {}
        ).result_rows

    def command(self, sql: str) -> Any:
        return self._call("command", sql.replace("{db}", self.database))
