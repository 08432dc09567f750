//! The fast path: a record that holds only complete RAG traces goes straight
//! to `RagTrace` objects and their encoded `rag_traces` row heads, with no
//! per-span Python objects.
//!
//! It reproduces, for the records it accepts, exactly what the general path
//! produces: `decode_otlp_proto` (spans), the `Assembler` (a trace is complete
//! when its root, a retriever and an LLM span are all there), `build_trace`
//! (collector/ingest/assemble.py) and `storage/clickhouse.py` `_row_head` (orjson). Whenever a record
//! holds anything the general path would treat differently or that this code
//! does not model (a span it would reject, an incomplete trace, a value type
//! whose Python conversion is not reproduced here, a duplicated key, chat
//! messages to parse), it gives up on the whole record (`Bail`) and the caller
//! takes the general path. tests/test_fastpath_native.py checks the parity
//! differentially, on generated and mutated records.

use std::borrow::Cow;
use std::collections::HashMap;

use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple, PyType};

use crate::build::{self, Caps, Reject};
use crate::json;
use crate::schema::{KeyValue, Span, TracesData, Value};

/// The record leaves the fast path; the general path handles it.
pub struct Bail;

type Fast<T> = Result<T, Bail>;

/// What the fast path needs from Python: the classes it instantiates and the decoder limits.
pub struct Classes<'py> {
    pub trace: Bound<'py, PyAny>,
    pub chunk: Bound<'py, PyAny>,
    pub citation: Bound<'py, PyAny>,
    /// `ragpulse_native.trace_details`, which a trace calls to make its chunk and citation
    /// objects when something first reads them (`RagTrace._deferred`).
    pub details: Bound<'py, PyAny>,
}

const KIND: &str = "openinference.span.kind";
const STATUS_ERROR: i32 = 2;
const TOKENS_MAX: i64 = (1 << 32) - 1;
const POSITION_MAX: i64 = (1 << 31) - 1;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Other,
    Retriever,
    Reranker,
    Llm,
    Chain,
}

// ------------------------------------------------------------ Python value semantics

/// `attrs.get(key)` on the decoded dict: the last occurrence wins.
fn get<'v, 'a>(kvs: &'v [KeyValue<'a>], key: &str) -> Option<&'v Value<'a>> {
    kvs.iter()
        .rev()
        .find(|kv| kv.key == key)
        .map(|kv| &kv.value)
}

/// `key in attrs`.
fn has(kvs: &[KeyValue], key: &str) -> bool {
    kvs.iter().any(|kv| kv.key == key)
}

/// The decoded value is None (missing key, unset value, string index).
fn is_none(v: Option<&Value>) -> bool {
    matches!(v, None | Some(Value::Unset) | Some(Value::StrIndex))
}

/// Python truthiness of the decoded value.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Unset | Value::StrIndex => false,
        Value::Str(s) => !s.is_empty(),
        Value::Bool(b) => *b,
        Value::Int(i) => *i != 0,
        Value::Double(d) => *d != 0.0,
        Value::Array(a) => !a.is_empty(),
        Value::KvList(k) => !k.is_empty(),
        Value::Bytes(b) => !b.is_empty(),
    }
}

/// `str(value)` where the conversion is reproduced here.
fn py_str<'v>(v: &'v Value) -> Fast<Cow<'v, str>> {
    match v {
        Value::Str(s) => Ok(Cow::Borrowed(s)),
        Value::Int(i) => Ok(Cow::Owned(i.to_string())),
        Value::Bool(b) => Ok(Cow::Borrowed(if *b { "True" } else { "False" })),
        Value::Unset | Value::StrIndex => Ok(Cow::Borrowed("None")),
        _ => Err(Bail),
    }
}

/// `str(value or "")`.
fn str_or_empty<'v>(v: Option<&'v Value>) -> Fast<Cow<'v, str>> {
    match v {
        Some(v) if truthy(v) => py_str(v),
        _ => Ok(Cow::Borrowed("")),
    }
}

/// `a or b or c`: the first truthy value.
fn first_truthy<'v, 'a>(vs: [Option<&'v Value<'a>>; 3]) -> Option<&'v Value<'a>> {
    vs.into_iter().flatten().find(|v| truthy(v))
}

/// `assemble._int(value, low, high)`: int() of the value clamped to [low, high], 0 when
/// int() raises.
fn int_clamped(v: Option<&Value>, low: i64, high: i64) -> Fast<i64> {
    let clamp = |n: i64| n.clamp(low, high);
    Ok(match v {
        None | Some(Value::Unset | Value::StrIndex | Value::Array(_) | Value::KvList(_)) => 0,
        Some(Value::Int(i)) => clamp(*i),
        Some(Value::Bool(b)) => clamp(*b as i64),
        Some(Value::Double(d)) => {
            if !d.is_finite() {
                0
            } else {
                let t = d.trunc();
                if t < low as f64 {
                    low
                } else if t > high as f64 {
                    high
                } else {
                    t as i64
                }
            }
        }
        // int() of text parses it (whitespace, underscores, Unicode digits): not reproduced.
        Some(Value::Str(_) | Value::Bytes(_)) => return Err(Bail),
    })
}

// ------------------------------------------------------------ validation (as the decoder)

/// An upper bound on `len(str(v))` for a decoded non-string value (repr escapes a byte
/// into at most four characters).
fn repr_bound(v: &Value) -> i64 {
    match v {
        Value::Str(s) => 2 + 4 * s.len() as i64,
        Value::Int(_) => 20,
        Value::Double(_) => 25,
        Value::Bool(_) => 5,
        Value::Unset | Value::StrIndex => 4,
        Value::Bytes(b) => 2 + 4 * b.len().div_ceil(3) as i64,
        Value::Array(items) => items.iter().fold(2i64, |n, x| {
            n.saturating_add(repr_bound(x).saturating_add(2))
        }),
        Value::KvList(kvs) => kvs.iter().fold(2i64, |n, kv| {
            n.saturating_add(6 + 4 * kv.key.len() as i64)
                .saturating_add(repr_bound(&kv.value))
        }),
    }
}

/// The decoder's attribute checks (`_pb_attrs`): the record bails where it would reject.
fn check_attrs(kvs: &[KeyValue], caps: Caps) -> Fast<()> {
    if kvs.len() as i64 > caps.max_attributes {
        return Err(Bail);
    }
    let cap = caps.max_attribute_chars;
    for kv in kvs {
        match &kv.value {
            Value::Str(s) => {
                if !s.is_empty() && s.len() as i64 > cap && s.chars().count() as i64 > cap {
                    return Err(Bail);
                }
            }
            Value::Double(_) | Value::Int(_) | Value::Bool(_) | Value::Unset => {}
            other => {
                if repr_bound(other) > cap {
                    return Err(Bail);
                }
            }
        }
    }
    Ok(())
}

/// The decoder's span checks (ids, times, attribute limits of the span and its events).
fn check_span(td: &TracesData, s: &Span, caps: Caps) -> Fast<()> {
    if build::span_problem(s).is_some() {
        return Err(Bail);
    }
    check_attrs(&td.arena.span_attrs[s.attrs.clone()], caps)?;
    for e in &td.arena.events[s.events.clone()] {
        check_attrs(&td.arena.event_attrs[e.attrs.clone()], caps)?;
    }
    Ok(())
}

// ------------------------------------------------------------ assembling

/// `assemble._role`.
fn role(kvs: &[KeyValue]) -> Fast<Role> {
    match get(kvs, KIND) {
        Some(Value::Str(s)) => {
            if !s.is_ascii() {
                return Err(Bail); // str.upper() of non-ASCII text: not reproduced
            }
            match s.to_ascii_uppercase().as_str() {
                "RETRIEVER" => return Ok(Role::Retriever),
                "RERANKER" => return Ok(Role::Reranker),
                "LLM" => return Ok(Role::Llm),
                "CHAIN" | "AGENT" => return Ok(Role::Chain),
                _ => {}
            }
        }
        Some(Value::Bytes(_)) => return Err(Bail), // its base64 text could spell a kind
        _ => {}                                    // str() of any other value is never a kind
    }
    match get(kvs, "gen_ai.operation.name") {
        Some(Value::Str(op)) => match *op {
            "retrieval" | "retrieve" | "search" => return Ok(Role::Retriever),
            "chat" | "text_completion" | "generate_content" | "completion" => return Ok(Role::Llm),
            "rerank" => return Ok(Role::Reranker),
            _ => {}
        },
        Some(Value::Bytes(_)) => return Err(Bail),
        _ => {}
    }
    if has(kvs, "gen_ai.system") || has(kvs, "gen_ai.request.model") || has(kvs, "llm.model_name") {
        return Ok(Role::Llm);
    }
    if has(kvs, "retrieval.documents.0.document.content")
        || has(kvs, "retrieval.documents.0.document.id")
    {
        return Ok(Role::Retriever);
    }
    Ok(Role::Other)
}

/// One span of a trace, with what assembling and building read.
struct SpanRef<'t, 'a> {
    span: &'t Span<'a>,
    attrs: &'t [KeyValue<'a>],
    service: &'a str,
    role: Role,
}

impl SpanRef<'_, '_> {
    fn ms(&self) -> f64 {
        (self.span.end - self.span.start) as f64 / 1e6
    }

    fn has_parent(&self) -> bool {
        !(self.span.parent_id.is_empty() || build::all_zero(self.span.parent_id))
    }
}

struct Chunk<'v> {
    id: Cow<'v, str>,
    content: Cow<'v, str>,
    score: Option<f64>,
    metadata: Cow<'v, str>,
}

struct Citation<'v> {
    doc_id: Cow<'v, str>,
    marker: Cow<'v, str>,
    start: i64,
    end: i64,
}

/// A `RagTrace`'s fields, as `build_trace` computes them.
struct Built<'v, 'a> {
    service: &'a str,
    time: u64,
    end_time: u64,
    query: Cow<'v, str>,
    answer: Cow<'v, str>,
    chunks: Vec<Chunk<'v>>,
    citations: Vec<Citation<'v>>,
    corpus_version: Cow<'v, str>,
    model: Cow<'v, str>,
    provider: Cow<'v, str>,
    latency_ms: f64,
    retrieval_ms: f64,
    rerank_ms: f64,
    generation_ms: f64,
    input_tokens: i64,
    output_tokens: i64,
    risk_level: Cow<'v, str>,
    query_type: Cow<'v, str>,
    session_id: Cow<'v, str>,
    user_id: Cow<'v, str>,
    route: Cow<'v, str>,
    error: bool,
    source: &'static str,
    span_count: usize,
    /// The root span's attributes (the stored `attributes` minus input/output.value).
    root_attrs: &'v [KeyValue<'a>],
}

/// `assemble._documents`.
fn documents<'v>(attrs: &'v [KeyValue], prefix: &str) -> Fast<Vec<Chunk<'v>>> {
    // One pass over the attributes indexes `{prefix}{i}.document.{id,content,score,metadata}`
    // by document number (the last occurrence of a key wins, as in the decoded dict). Only
    // the decimal text f"{i}" gives is a document number: no sign, no leading zero. A number
    // beyond the attribute count can never be reached by the loop below, which stops at the
    // first document with neither id nor content.
    let mut docs: Vec<[Option<&'v Value>; 4]> = Vec::new();
    for kv in attrs {
        // `{num}.document.{field}`; a num with a dot in it is never all digits, so splitting
        // at the first dot is the same as at the first ".document." (and much cheaper).
        let Some((num, field)) = kv
            .key
            .strip_prefix(prefix)
            .and_then(|r| r.split_once('.'))
            .and_then(|(num, rest)| Some((num, rest.strip_prefix("document.")?)))
        else {
            continue;
        };
        let f = match field {
            "id" => 0,
            "content" => 1,
            "score" => 2,
            "metadata" => 3,
            _ => continue,
        };
        if num.is_empty()
            || num.len() > 9
            || !num.bytes().all(|c| c.is_ascii_digit())
            || (num.len() > 1 && num.starts_with('0'))
        {
            continue;
        }
        let Ok(i) = num.parse::<usize>() else {
            continue;
        };
        if i >= attrs.len() {
            continue;
        }
        if i >= docs.len() {
            docs.resize(i + 1, [None; 4]);
        }
        docs[i][f] = Some(&kv.value);
    }
    let mut out = Vec::new();
    for (i, [cid, content, score, meta]) in docs.into_iter().enumerate() {
        if is_none(cid) && is_none(content) {
            break;
        }
        let meta_present = meta.is_some();
        let score = match score {
            None | Some(Value::Unset | Value::StrIndex | Value::Array(_) | Value::KvList(_)) => {
                None
            }
            Some(Value::Double(d)) => Some(*d),
            Some(Value::Int(n)) => Some(*n as f64),
            Some(Value::Bool(b)) => Some(if *b { 1.0 } else { 0.0 }),
            Some(Value::Str(_) | Value::Bytes(_)) => return Err(Bail), // float() parsing text
        };
        let metadata = match meta {
            _ if !meta_present => Cow::Borrowed(""),
            None | Some(Value::Unset | Value::StrIndex) => Cow::Borrowed("null"), // json.dumps(None)
            Some(Value::Str(s)) => Cow::Borrowed(*s),
            Some(Value::Int(n)) => Cow::Owned(n.to_string()),
            Some(Value::Bool(b)) => Cow::Borrowed(if *b { "true" } else { "false" }),
            Some(_) => return Err(Bail), // json.dumps of floats and containers: not reproduced
        };
        out.push(Chunk {
            id: if is_none(cid) {
                Cow::Owned(i.to_string())
            } else {
                py_str(cid.ok_or(Bail)?)?
            },
            content: if is_none(content) {
                Cow::Borrowed("")
            } else {
                py_str(content.ok_or(Bail)?)?
            },
            score,
            metadata,
        });
    }
    Ok(out)
}

/// `_int(attrs.get(primary, attrs.get(fallback)))`.
fn tokens(attrs: &[KeyValue], primary: &str, fallback: &str) -> Fast<i64> {
    let v = if has(attrs, primary) {
        get(attrs, primary)
    } else {
        get(attrs, fallback)
    };
    int_clamped(v, 0, TOKENS_MAX)
}

/// The first span with the largest end time (Python's `max(spans, key=end)`).
fn latest(refs: &[SpanRef], which: &[usize]) -> Option<usize> {
    let mut best: Option<usize> = None;
    for &i in which {
        if best.is_none_or(|b| refs[i].span.end > refs[b].span.end) {
            best = Some(i);
        }
    }
    best
}

fn total_ms(refs: &[SpanRef], which: &[usize]) -> f64 {
    let mut total = 0.0;
    for &i in which {
        total += refs[i].ms();
    }
    total
}

/// `build_trace` for one complete trace's spans.
fn build_trace<'v, 'a>(td: &'v TracesData<'a>, refs: &[SpanRef<'v, 'a>]) -> Fast<Built<'v, 'a>> {
    let (mut rag_root, mut trace_root, mut chain) = (None, None, None);
    let (mut retrievers, mut rerankers, mut llms) = (Vec::new(), Vec::new(), Vec::new());
    let mut error = false;
    let mut first = 0;
    let mut end_time = refs[0].span.end;
    for (i, r) in refs.iter().enumerate() {
        let s = r.span;
        if s.status == STATUS_ERROR {
            error = true;
        }
        if get(r.attrs, "rag.root").is_some_and(truthy) {
            rag_root = Some(i);
        }
        if !r.has_parent() {
            trace_root = Some(i);
        }
        if s.start < refs[first].span.start {
            first = i;
        }
        if s.end > end_time {
            end_time = s.end;
        }
        match r.role {
            Role::Retriever => retrievers.push(i),
            Role::Reranker => rerankers.push(i),
            Role::Llm => llms.push(i),
            Role::Chain => {
                if chain.is_none_or(|c: usize| s.start < refs[c].span.start) {
                    chain = Some(i);
                }
            }
            Role::Other => {}
        }
    }
    let root = &refs[rag_root.or(chain).or(trace_root).ok_or(Bail)?];
    let source = if rag_root.is_some() {
        "ragpulse"
    } else if refs.iter().any(|r| has(r.attrs, KIND)) {
        "openinference"
    } else {
        "gen_ai"
    };
    let ra = root.attrs;
    let mut query = str_or_empty(get(ra, "input.value"))?;
    let mut answer = str_or_empty(get(ra, "output.value"))?;
    let (mut model, mut provider) = (Cow::Borrowed(""), Cow::Borrowed(""));
    let (mut input_tokens, mut output_tokens, mut generation_ms) = (0i64, 0i64, 0.0);
    if let Some(l) = latest(refs, &llms) {
        let la = refs[l].attrs;
        if answer.is_empty() {
            answer = str_or_empty(first_truthy([
                get(la, "output.value"),
                get(la, "llm.output_messages.0.message.content"),
                get(la, "gen_ai.completion.0.content"),
            ]))?;
        }
        if query.is_empty()
            && la.iter().any(|kv| {
                kv.key.starts_with("llm.input_messages.") || kv.key.starts_with("gen_ai.prompt.")
            })
        {
            return Err(Bail); // the query comes from chat messages: left to build_trace
        }
        model = str_or_empty(first_truthy([
            get(la, "gen_ai.request.model"),
            get(la, "gen_ai.response.model"),
            get(la, "llm.model_name"),
        ]))?;
        provider = str_or_empty(first_truthy([
            get(la, "gen_ai.provider.name"),
            get(la, "gen_ai.system"),
            get(la, "llm.provider"),
        ]))?;
        for &i in &llms {
            let a = refs[i].attrs;
            input_tokens += tokens(a, "gen_ai.usage.input_tokens", "llm.token_count.prompt")?;
            output_tokens += tokens(
                a,
                "gen_ai.usage.output_tokens",
                "llm.token_count.completion",
            )?;
        }
        input_tokens = input_tokens.min(TOKENS_MAX);
        output_tokens = output_tokens.min(TOKENS_MAX);
        generation_ms = total_ms(refs, &llms);
    }
    if query.is_empty() && !retrievers.is_empty() {
        query = str_or_empty(get(refs[retrievers[0]].attrs, "input.value"))?;
    }
    let mut chunks = Vec::new();
    let mut rerank_ms = 0.0;
    if let Some(rr) = latest(refs, &rerankers) {
        chunks = documents(refs[rr].attrs, "reranker.output_documents.")?;
        rerank_ms = total_ms(refs, &rerankers);
    }
    let mut retrieval_ms = 0.0;
    if !retrievers.is_empty() {
        if chunks.is_empty() {
            let mut by_start = retrievers.clone();
            by_start.sort_by_key(|&i| refs[i].span.start); // stable, as sorted()
            for i in by_start {
                chunks.extend(documents(refs[i].attrs, "retrieval.documents.")?);
            }
        }
        retrieval_ms = total_ms(refs, &retrievers);
    }
    let route = match get(ra, "http.route") {
        v if is_none(v) => match trace_root {
            Some(t) => get(refs[t].attrs, "http.route"),
            None => v,
        },
        v => v,
    };
    Ok(Built {
        service: root.service,
        time: root.span.start,
        end_time,
        query,
        answer,
        chunks,
        citations: citations(td, root.span)?,
        corpus_version: str_or_empty(get(ra, "rag.corpus.version"))?,
        model,
        provider,
        latency_ms: root.ms(),
        retrieval_ms,
        rerank_ms,
        generation_ms,
        input_tokens,
        output_tokens,
        risk_level: str_or_empty(get(ra, "rag.risk_level"))?,
        query_type: str_or_empty(get(ra, "rag.query_type"))?,
        session_id: str_or_empty(get(ra, "session.id"))?,
        user_id: str_or_empty(get(ra, "user.id"))?,
        route: str_or_empty(route)?,
        error,
        source,
        span_count: refs.len(),
        root_attrs: ra,
    })
}

/// The root span's `rag.citation` events (`build_trace`'s citations).
fn citations<'v>(td: &'v TracesData, root: &Span) -> Fast<Vec<Citation<'v>>> {
    let mut out = Vec::new();
    for e in &td.arena.events[root.events.clone()] {
        if e.name != "rag.citation" {
            continue;
        }
        let ea = &td.arena.event_attrs[e.attrs.clone()];
        let text = |key: &str| -> Fast<Cow<'v, str>> {
            match get(ea, key) {
                None => Ok(Cow::Borrowed("")),
                Some(v) => py_str(v),
            }
        };
        let position = |key: &str| -> Fast<i64> {
            if has(ea, key) {
                int_clamped(get(ea, key), -1, POSITION_MAX)
            } else {
                Ok(-1)
            }
        };
        out.push(Citation {
            doc_id: text("rag.citation.document.id")?,
            marker: text("rag.citation.marker")?,
            start: position("rag.citation.answer.start")?,
            end: position("rag.citation.answer.end")?,
        });
    }
    Ok(out)
}

// ------------------------------------------------------------ encoding (storage._row_head)

/// orjson's text for a decoded attribute value.
fn value_json(out: &mut Vec<u8>, v: &Value) -> Fast<()> {
    match v {
        Value::Str(s) => json::string(out, s),
        Value::Int(i) => json::int(out, *i),
        Value::Double(d) => json::float(out, *d),
        Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Unset | Value::StrIndex => out.extend_from_slice(b"null"),
        Value::Bytes(b) => json::string(out, &build::base64(b)),
        Value::Array(items) => {
            out.push(b'[');
            for (k, x) in items.iter().enumerate() {
                if k > 0 {
                    out.push(b',');
                }
                value_json(out, x)?;
            }
            out.push(b']');
        }
        Value::KvList(kvs) => object_json(out, kvs, &[])?,
    }
    Ok(())
}

/// orjson's text for the dict of these key-values, leaving out `skip` keys. A repeated key
/// (first position, last value in the dict) is not reproduced.
fn object_json(out: &mut Vec<u8>, kvs: &[KeyValue], skip: &[&str]) -> Fast<()> {
    out.push(b'{');
    let mut n = 0;
    for (k, kv) in kvs.iter().enumerate() {
        if kvs[..k].iter().any(|o| o.key == kv.key) {
            return Err(Bail);
        }
        if skip.contains(&kv.key) {
            continue;
        }
        if n > 0 {
            out.push(b',');
        }
        n += 1;
        json::string(out, kv.key);
        out.push(b':');
        value_json(out, &kv.value)?;
    }
    out.push(b'}');
    Ok(())
}

/// `storage._nanos_text` as a JSON string: "<seconds>.<nine digits>".
fn nanos_text(out: &mut Vec<u8>, ns: u64) {
    out.push(b'"');
    json::int(out, (ns / 1_000_000_000) as i64);
    out.push(b'.');
    let frac = ns % 1_000_000_000;
    let mut digits = [b'0'; 9];
    let mut v = frac;
    for d in digits.iter_mut().rev() {
        *d = b'0' + (v % 10) as u8;
        v /= 10;
    }
    out.extend_from_slice(&digits);
    out.push(b'"');
}

/// A JSON array of `items`, each written by `write`.
fn array<T>(out: &mut Vec<u8>, items: impl Iterator<Item = T>, write: impl Fn(&mut Vec<u8>, T)) {
    out.push(b'[');
    for (k, x) in items.enumerate() {
        if k > 0 {
            out.push(b',');
        }
        write(out, x);
    }
    out.push(b']');
}

fn score(out: &mut Vec<u8>, s: Option<f64>) {
    match s {
        Some(f) => json::float(out, f),
        None => out.extend_from_slice(b"null"),
    }
}

/// The row up to and including `attributes`, without the closing bracket
/// (`storage._row_head`).
fn row_head(b: &Built, trace_hex: &str) -> Fast<Vec<u8>> {
    let mut out = Vec::with_capacity(
        512 + b.query.len()
            + b.answer.len()
            + b.chunks
                .iter()
                .map(|c| c.content.len() + c.id.len() + c.metadata.len() + 40)
                .sum::<usize>(),
    );
    out.push(b'[');
    json::string(&mut out, trace_hex);
    out.push(b',');
    nanos_text(&mut out, b.time);
    out.push(b',');
    nanos_text(&mut out, b.end_time);
    for s in [b.service, &b.route, &b.query, &b.answer] {
        out.push(b',');
        json::string(&mut out, s);
    }
    out.push(b',');
    array(&mut out, b.chunks.iter().map(|c| &*c.id), json::string);
    out.push(b',');
    array(&mut out, b.chunks.iter().map(|c| &*c.content), json::string);
    out.push(b',');
    array(&mut out, b.chunks.iter().map(|c| c.score), score);
    out.push(b',');
    array(
        &mut out,
        b.chunks.iter().map(|c| &*c.metadata),
        json::string,
    );
    out.push(b',');
    array(
        &mut out,
        b.citations.iter().map(|c| &*c.doc_id),
        json::string,
    );
    out.push(b',');
    array(
        &mut out,
        b.citations.iter().map(|c| &*c.marker),
        json::string,
    );
    out.push(b',');
    array(&mut out, b.citations.iter().map(|c| c.start), json::int);
    out.push(b',');
    array(&mut out, b.citations.iter().map(|c| c.end), json::int);
    for s in [&b.corpus_version as &str, &b.model, &b.provider] {
        out.push(b',');
        json::string(&mut out, s);
    }
    for f in [b.latency_ms, b.retrieval_ms, b.rerank_ms, b.generation_ms] {
        out.push(b',');
        json::float(&mut out, f);
    }
    for i in [b.input_tokens, b.output_tokens] {
        out.push(b',');
        json::int(&mut out, i);
    }
    let status = if b.error { "error" } else { "ok" };
    for s in [
        &b.risk_level as &str,
        &b.query_type,
        &b.session_id,
        &b.user_id,
        status,
        b.source,
    ] {
        out.push(b',');
        json::string(&mut out, s);
    }
    out.push(b',');
    json::int(&mut out, b.span_count as i64);
    out.push(b',');
    let mut attrs = Vec::with_capacity(256);
    object_json(&mut attrs, b.root_attrs, &["input.value", "output.value"])?;
    // Only JSON text was written: valid UTF-8.
    json::string(&mut out, std::str::from_utf8(&attrs).map_err(|_| Bail)?);
    Ok(out)
}

// ------------------------------------------------------------ the entry point

/// Groups the record's spans by trace (in order of first appearance); bails unless every
/// span passes the decoder's checks and every trace is complete.
fn complete_groups<'t, 'a>(
    td: &'t TracesData<'a>,
    caps: Caps,
) -> Fast<Vec<(&'a [u8], Vec<SpanRef<'t, 'a>>)>> {
    let mut groups: Vec<(&'a [u8], Vec<SpanRef<'t, 'a>>)> = Vec::new();
    let mut index: HashMap<&'a [u8], usize> = HashMap::new();
    for res in &td.resources {
        if res.first_span == res.end_span {
            continue;
        }
        let service = res.service_name();
        for s in &td.spans[res.first_span..res.end_span] {
            check_span(td, s, caps)?;
            let attrs = &td.arena.span_attrs[s.attrs.clone()];
            let r = SpanRef {
                span: s,
                attrs,
                service,
                role: role(attrs)?,
            };
            let g = *index.entry(s.trace_id).or_insert_with(|| {
                groups.push((s.trace_id, Vec::new()));
                groups.len() - 1
            });
            groups[g].1.push(r);
        }
    }
    if groups.is_empty() {
        return Err(Bail);
    }
    for (_, refs) in &groups {
        let root = refs.iter().any(|r| !r.has_parent());
        let retrieval = refs.iter().any(|r| r.role == Role::Retriever);
        let llm = refs.iter().any(|r| r.role == Role::Llm);
        if !(root && retrieval && llm) {
            return Err(Bail);
        }
    }
    Ok(groups)
}

/// The record's traces as `RagTrace` objects (with `row_head` set), or None for the
/// general path.
pub fn complete_traces<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyBytes>,
    classes: &Classes<'py>,
    caps: Caps,
) -> PyResult<Option<Bound<'py, PyList>>> {
    let Ok(td) = crate::schema::parse_traces_data(data.as_bytes()) else {
        return Ok(None);
    };
    let Ok(groups) = complete_groups(&td, caps) else {
        return Ok(None);
    };
    let mut built = Vec::with_capacity(groups.len());
    for (tid, refs) in &groups {
        let Ok(b) = build_trace(&td, refs) else {
            return Ok(None);
        };
        let hex = hex_id(tid);
        let Ok(head) = row_head(&b, &hex) else {
            return Ok(None);
        };
        built.push((b, hex, head));
    }
    let out = PyList::empty(py);
    for (index, (b, hex, head)) in built.into_iter().enumerate() {
        match to_python(py, &b, &hex, &head, classes, caps, (data, index)) {
            Ok(t) => out.append(t)?,
            Err(Reject::Py(e)) => return Err(e),
            Err(Reject::Msg(_)) => return Ok(None),
        }
    }
    Ok(Some(out))
}

/// The chunk and citation objects of trace `index` of a record `complete_traces` took
/// (what its `RagTrace` defers until they are read).
pub fn trace_details<'py>(
    py: Python<'py>,
    data: &[u8],
    index: usize,
    classes: &Classes<'py>,
    caps: Caps,
) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>)> {
    let gone =
        || pyo3::exceptions::PyValueError::new_err("record no longer holds that complete trace");
    let td = crate::schema::parse_traces_data(data).map_err(|_| gone())?;
    let groups = complete_groups(&td, caps).map_err(|_| gone())?;
    let (_, refs) = groups.get(index).ok_or_else(gone)?;
    let b = build_trace(&td, refs).map_err(|_| gone())?;
    detail_objects(py, &b, classes)
}

fn hex_id(b: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(b.len() * 2);
    for &x in b {
        s.push(HEX[(x >> 4) as usize] as char);
        s.push(HEX[(x & 15) as usize] as char);
    }
    s
}

/// A new instance of `cls` with the given slots set, without running its `__init__`
/// (Python bytecode that costs more than the rest of building a trace). The caller sets
/// every slot; the parity tests read them all, so a slot added to the class and not
/// set here fails them.
fn instance<'py>(
    py: Python<'py>,
    cls: &Bound<'py, PyAny>,
    slots: &[(&Bound<'py, PyString>, Bound<'py, PyAny>)],
) -> PyResult<Bound<'py, PyAny>> {
    // What object.__new__(cls) does for a class without a custom allocator, minus the
    // method lookup and argument parsing: allocate it (slots empty, GC-tracked).
    let tp = cls.cast::<PyType>()?;
    // SAFETY: `tp` is a live type object; PyType_GenericAlloc returns a new reference or
    // NULL with an exception set, which from_owned_ptr_or_err turns into an error.
    let obj =
        unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyType_GenericAlloc(tp.as_type_ptr(), 0))? };
    for (name, value) in slots {
        obj.setattr(*name, value)?;
    }
    Ok(obj)
}

/// The chunk and citation lists of a built trace, as `Chunk` and `Citation` objects.
fn detail_objects<'py>(
    py: Python<'py>,
    b: &Built,
    classes: &Classes<'py>,
) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>)> {
    let s = |x: &str| PyString::new(py, x).into_any();
    let i = |x: i64| PyInt::new(py, x).into_any();
    let chunks = PyList::empty(py);
    for c in &b.chunks {
        let score = match c.score {
            Some(x) => PyFloat::new(py, x).into_any(),
            None => py.None().into_bound(py),
        };
        chunks.append(instance(
            py,
            &classes.chunk,
            &[
                (intern!(py, "id"), s(&c.id)),
                (intern!(py, "content"), s(&c.content)),
                (intern!(py, "score"), score),
                (intern!(py, "metadata"), s(&c.metadata)),
            ],
        )?)?;
    }
    let citations = PyList::empty(py);
    for c in &b.citations {
        citations.append(instance(
            py,
            &classes.citation,
            &[
                (intern!(py, "doc_id"), s(&c.doc_id)),
                (intern!(py, "marker"), s(&c.marker)),
                (intern!(py, "start"), i(c.start)),
                (intern!(py, "end"), i(c.end)),
            ],
        )?)?;
    }
    Ok((chunks, citations))
}

/// `RagTrace.top_score` over the built chunks.
fn top_score(b: &Built) -> Option<f64> {
    let mut best: Option<f64> = None;
    for c in &b.chunks {
        if let Some(x) = c.score {
            if best.is_none_or(|y| x > y) {
                best = Some(x);
            }
        }
    }
    best
}

#[allow(clippy::too_many_arguments)]
fn to_python<'py>(
    py: Python<'py>,
    b: &Built,
    hex: &str,
    head: &[u8],
    classes: &Classes<'py>,
    caps: Caps,
    source: (&Bound<'py, PyBytes>, usize),
) -> Result<Bound<'py, PyAny>, Reject> {
    let s = |x: &str| PyString::new(py, x).into_any();
    let f = |x: f64| PyFloat::new(py, x).into_any();
    let i = |x: i64| PyInt::new(py, x).into_any();
    // Chunk and citation objects are made when first read (for sampled traces' judge
    // messages): the trace keeps how to make them, its chunk count and top score.
    let args = PyTuple::new(
        py,
        [
            source.0.clone().into_any(),
            i(source.1 as i64),
            classes.chunk.clone(),
            classes.citation.clone(),
            i(caps.max_attribute_chars),
            i(caps.max_attributes),
        ],
    )?;
    let top = match top_score(b) {
        Some(x) => f(x),
        None => py.None().into_bound(py),
    };
    let deferred = PyTuple::new(
        py,
        [
            classes.details.clone(),
            args.into_any(),
            i(b.chunks.len() as i64),
            top,
        ],
    )?;
    let attributes: Bound<'py, PyDict> = build::attrs(py, b.root_attrs, caps)?;
    for key in ["input.value", "output.value"] {
        if attributes.contains(key)? {
            attributes.del_item(key)?;
        }
    }
    let no = PyBool::new(py, false).to_owned().into_any();
    Ok(instance(
        py,
        &classes.trace,
        &[
            (intern!(py, "trace_id"), s(hex)),
            (intern!(py, "service"), s(b.service)),
            (intern!(py, "time"), PyInt::new(py, b.time).into_any()),
            (
                intern!(py, "end_time"),
                PyInt::new(py, b.end_time).into_any(),
            ),
            (intern!(py, "query"), s(&b.query)),
            (intern!(py, "answer"), s(&b.answer)),
            (intern!(py, "_chunks"), py.None().into_bound(py)),
            (intern!(py, "_citations"), py.None().into_bound(py)),
            (intern!(py, "_deferred"), deferred.into_any()),
            (intern!(py, "corpus_version"), s(&b.corpus_version)),
            (intern!(py, "model"), s(&b.model)),
            (intern!(py, "provider"), s(&b.provider)),
            (intern!(py, "latency_ms"), f(b.latency_ms)),
            (intern!(py, "retrieval_ms"), f(b.retrieval_ms)),
            (intern!(py, "rerank_ms"), f(b.rerank_ms)),
            (intern!(py, "generation_ms"), f(b.generation_ms)),
            (intern!(py, "input_tokens"), i(b.input_tokens)),
            (intern!(py, "output_tokens"), i(b.output_tokens)),
            (intern!(py, "risk_level"), s(&b.risk_level)),
            (intern!(py, "query_type"), s(&b.query_type)),
            (intern!(py, "session_id"), s(&b.session_id)),
            (intern!(py, "user_id"), s(&b.user_id)),
            (intern!(py, "route"), s(&b.route)),
            (
                intern!(py, "status"),
                s(if b.error { "error" } else { "ok" }),
            ),
            (intern!(py, "source"), s(b.source)),
            (intern!(py, "span_count"), i(b.span_count as i64)),
            (intern!(py, "attributes"), attributes.into_any()),
            // Set later by the pipeline (Ingestor.prepare); RagTrace.__init__'s defaults.
            (intern!(py, "complete"), no.clone()),
            (intern!(py, "sampled"), no),
            (intern!(py, "sampled_reason"), s("")),
            (intern!(py, "src_partition"), i(-1)),
            (intern!(py, "src_offset"), i(-1)),
            (intern!(py, "row_head"), PyBytes::new(py, head).into_any()),
        ],
    )?)
}
