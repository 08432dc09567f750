-- ragpulse ClickHouse schema. Applied by `ragpulse schema apply` (idempotent:
-- every statement is CREATE ... IF NOT EXISTS). {db} is the database name and
-- {ttl_*} the TTL clauses built from storage.ttl_days (empty when 0).
-- ReplacingMergeTree keeps one row per sorting key; queries read with FINAL
-- (or argMax) so replays never double-count. The version column makes the
-- most complete assembly of a trace win over a partial replay. src_* record the
-- Kafka position of the last record that fed each trace: after a restart the
-- collector reads max(src_offset) per partition to recognise replayed traces.

CREATE DATABASE IF NOT EXISTS {db};

CREATE TABLE IF NOT EXISTS {db}.rag_traces
(
    trace_id          String,
    root_span_id      String,
    time              DateTime64(9, 'UTC'),
    end_time          DateTime64(9, 'UTC'),
    service           LowCardinality(String),
    route             LowCardinality(String),
    query             String,
    answer            String,
    conversation_roles    Array(LowCardinality(String)),
    conversation_contents Array(String),
    chunk_ids         Array(String),
    chunk_contents    Array(String),
    chunk_scores      Array(Nullable(Float64)),
    chunk_metadata    Array(String),
    chunk_sources     Array(String),
    chunk_source_types Array(LowCardinality(String)),
    chunk_tools       Array(String),
    chunk_queries     Array(String),
    citation_doc_ids  Array(String),
    citation_markers  Array(String),
    citation_starts   Array(Int32),
    citation_ends     Array(Int32),
    corpus_version    LowCardinality(String),
    model             LowCardinality(String),
    provider          LowCardinality(String),
    latency_ms        Float64,
    retrieval_ms      Float64,
    rerank_ms         Float64,
    generation_ms     Float64,
    input_tokens      UInt32,
    output_tokens     UInt32,
    generation_cost_usd Nullable(Float64),
    risk_level        LowCardinality(String),
    query_type        LowCardinality(String),
    variant           LowCardinality(String),
    session_id        String,
    user_id           String,
    status            LowCardinality(String),
    source            LowCardinality(String),
    span_count        UInt32,
    complete          UInt8,
    sampled           UInt8,
    sampled_reason    LowCardinality(String),
    attributes        String,
    src_topic         LowCardinality(String),
    src_partition     Int32,
    src_offset        Int64,
    ingested_at       DateTime64(3, 'UTC') DEFAULT now64(3),
    INDEX idx_time time TYPE minmax GRANULARITY 1
)
ENGINE = ReplacingMergeTree(span_count)
PARTITION BY toYYYYMM(time)
ORDER BY trace_id
{ttl_traces}
-- Wide rows (chunk texts): merge column by column in small blocks, which bounds merge memory
-- (measured with chDB: peak RSS 536 -> 455 MB over 120,000 inserted rows).
SETTINGS vertical_merge_algorithm_min_rows_to_activate = 1,
         vertical_merge_algorithm_min_columns_to_activate = 1,
         merge_max_block_size = 1024;

CREATE TABLE IF NOT EXISTS {db}.rag_judgments
(
    trace_id                 String,
    judge_id                 LowCardinality(String),
    service                  LowCardinality(String),
    variant                  LowCardinality(String),
    time                     DateTime64(9, 'UTC'),
    judged_at                DateTime64(3, 'UTC'),
    faithfulness             Nullable(Float64),
    citation_correctness     Nullable(Float64),
    citation_completeness    Nullable(Float64),
    answer_relevance         Nullable(Float64),
    context_precision        Nullable(Float64),
    context_utilization      Nullable(Float64),
    abstained                UInt8,
    abstention_kind          LowCardinality(String),
    failure_mode             LowCardinality(String),
    claims_total             UInt32,
    claims_supported         UInt32,
    claims_unsupported       UInt32,
    claims_contradicted      UInt32,
    unsupported_hallucination UInt32,
    unsupported_noise        UInt32,
    unsupported_claims       UInt32,
    tier                     LowCardinality(String),
    judge_latency_ms         Float64,
    judge_cost_usd           Float64,
    error                    String,
    sampled_reason           LowCardinality(String),
    version                  UInt32,
    extra                    String
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY toYYYYMM(time)
ORDER BY (trace_id, judge_id)
{ttl_judgments};

CREATE TABLE IF NOT EXISTS {db}.rag_claims
(
    trace_id              String,
    judge_id              LowCardinality(String),
    claim_index           UInt32,
    service               LowCardinality(String),
    variant               LowCardinality(String),
    time                  DateTime64(9, 'UTC'),
    text                  String,
    verdict               LowCardinality(String),
    supporting_chunk_ids  Array(String),
    cited_chunk_ids       Array(String),
    citation_valid        Nullable(UInt8),
    unsupported_source    LowCardinality(String),
    support_probability   Nullable(Float32),
    restates_user         UInt8,
    version               UInt32
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY toYYYYMM(time)
ORDER BY (trace_id, judge_id, claim_index)
{ttl_claims};

-- Tables created before the column existed gain it in place (NULL / empty for their rows).
ALTER TABLE {db}.rag_traces ADD COLUMN IF NOT EXISTS root_span_id String AFTER trace_id;
ALTER TABLE {db}.rag_traces ADD COLUMN IF NOT EXISTS chunk_sources Array(String) AFTER chunk_metadata;
ALTER TABLE {db}.rag_claims ADD COLUMN IF NOT EXISTS support_probability Nullable(Float32) AFTER unsupported_source;
ALTER TABLE {db}.rag_traces ADD COLUMN IF NOT EXISTS variant LowCardinality(String) AFTER query_type;
ALTER TABLE {db}.rag_traces ADD COLUMN IF NOT EXISTS generation_cost_usd Nullable(Float64) AFTER output_tokens;
ALTER TABLE {db}.rag_judgments ADD COLUMN IF NOT EXISTS variant LowCardinality(String) AFTER service;
ALTER TABLE {db}.rag_claims ADD COLUMN IF NOT EXISTS variant LowCardinality(String) AFTER service;
ALTER TABLE {db}.rag_traces ADD COLUMN IF NOT EXISTS conversation_roles Array(LowCardinality(String)) AFTER answer;
ALTER TABLE {db}.rag_traces ADD COLUMN IF NOT EXISTS conversation_contents Array(String) AFTER conversation_roles;
ALTER TABLE {db}.rag_traces ADD COLUMN IF NOT EXISTS chunk_source_types Array(LowCardinality(String)) AFTER chunk_sources;
ALTER TABLE {db}.rag_traces ADD COLUMN IF NOT EXISTS chunk_tools Array(String) AFTER chunk_source_types;
ALTER TABLE {db}.rag_traces ADD COLUMN IF NOT EXISTS chunk_queries Array(String) AFTER chunk_tools;
ALTER TABLE {db}.rag_claims ADD COLUMN IF NOT EXISTS restates_user UInt8 AFTER support_probability;

-- One row per feedback event. feedback_id is the feedback span's id (or an imported line's id,
-- or the re-asking trace's id for an implicit re-ask), so replays and re-imports replace rows.
CREATE TABLE IF NOT EXISTS {db}.rag_feedback
(
    trace_id     String,
    feedback_id  String,
    time         DateTime64(9, 'UTC'),
    service      LowCardinality(String),
    kind         LowCardinality(String),
    value        Nullable(Float64),
    label        LowCardinality(String),
    comment      String,
    source       LowCardinality(String),
    attributes   String,
    ingested_at  DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(ingested_at)
PARTITION BY toYYYYMM(time)
ORDER BY (trace_id, feedback_id)
{ttl_feedback};

-- The eval-set export's ledger. kind 'exported': one row per exported case (its trace ids,
-- reasons, normalised query for near-duplicate matching, the run). kind 'queued': one row per
-- firing alert (key = alert fingerprint + start), the window whose failing traces the next
-- export takes first. No TTL: the watermark must outlive the traces it covers.
CREATE TABLE IF NOT EXISTS {db}.rag_exports
(
    kind          LowCardinality(String),
    case_id       String,
    trace_ids     Array(String),
    reasons       Array(String),
    service       LowCardinality(String),
    query         String,
    export_run    String,
    window_start  DateTime64(9, 'UTC'),
    window_end    DateTime64(9, 'UTC'),
    time          DateTime64(3, 'UTC'),
    version       UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (kind, case_id);

-- Human labels from `ragpulse review` (docs/review.md). One row per (trace, claim, reviewer, judge
-- shown); claim_index -1 is the trace-level label. A resave replaces the row (version = the time
-- it was saved); readers take the latest row per (trace, claim, reviewer). No TTL: labels are
-- the team's work and outlive the traces' TTL as calibration data.
CREATE TABLE IF NOT EXISTS {db}.rag_reviews
(
    trace_id         String,
    claim_index      Int32,
    reviewer         String,
    judge_id         LowCardinality(String),
    queue            LowCardinality(String),
    slice            LowCardinality(String),
    service          LowCardinality(String),
    claim_text       String,
    label            LowCardinality(String),
    judge_label      LowCardinality(String),
    abstention_kind  LowCardinality(String),
    failure_mode     LowCardinality(String),
    comment          String,
    time             DateTime64(3, 'UTC'),
    version          UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (trace_id, claim_index, reviewer, judge_id);

-- A label table created before the judgments queue recorded its slice gains the column ('' for its rows).
ALTER TABLE {db}.rag_reviews ADD COLUMN IF NOT EXISTS slice LowCardinality(String) AFTER queue;

-- Sessions (docs/schema.md "Sessions"): the turns of each conversation, read through views so
-- they always agree with the tables (a late judgment or re-ask shows at once). One row per stored
-- trace with a session id: its latest successful judgment (by judged_at, any judge) and whether a
-- re-ask (rag_feedback kind 'reask', written on the earlier trace) followed it. A turn is flagged
-- when that judgment failed it the way the export's default criteria do: failure mode retrieval,
-- generation or both, or a false refusal. This view is that definition's one place.
CREATE OR REPLACE VIEW {db}.rag_session_turns AS
SELECT t.service AS service, t.session_id AS session_id, t.trace_id AS trace_id, t.time AS time,
       t.query AS query, t.answer AS answer, j.judged AS judged, j.failure_mode AS failure_mode,
       j.abstention_kind AS abstention_kind,
       j.judged = 1 AND (j.failure_mode IN ('retrieval', 'generation', 'both')
                         OR j.abstention_kind = 'false_refusal') AS flagged,
       f.reasked AS reasked
FROM (SELECT trace_id, service, session_id, time, query, answer FROM {db}.rag_traces FINAL
      WHERE session_id != '') AS t
LEFT JOIN (SELECT trace_id, toUInt8(1) AS judged, argMax(failure_mode, judged_at) AS failure_mode,
                  argMax(abstention_kind, judged_at) AS abstention_kind
           FROM {db}.rag_judgments FINAL WHERE error = '' GROUP BY trace_id) AS j
       ON j.trace_id = t.trace_id
LEFT JOIN (SELECT DISTINCT trace_id, toUInt8(1) AS reasked FROM {db}.rag_feedback FINAL
           WHERE kind = 'reask') AS f
       ON f.trace_id = t.trace_id;

-- One row per (service, session id): its turns, how many were judged and flagged, the flagged
-- turns a re-ask followed, and whether its last turn is flagged (abandoned once no turn followed
-- within the re-ask window: readers apply the window, collector/sessions/).
CREATE OR REPLACE VIEW {db}.rag_sessions AS
SELECT service, session_id, min(time) AS first_time, max(time) AS last_time, count() AS turns,
       countIf(judged) AS judged_turns, countIf(flagged) AS flagged_turns,
       countIf(flagged AND reasked) AS flagged_reasked,
       argMax(flagged, (time, trace_id)) AS last_turn_flagged,
       argMax(reasked, (time, trace_id)) AS last_turn_reasked
FROM {db}.rag_session_turns
GROUP BY service, session_id;
