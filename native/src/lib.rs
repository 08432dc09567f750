//! `ragpulse_native`: the collector's OTLP protobuf decoder in Rust.
//!
//! `decode_traces` does exactly what the pure-Python `decode_otlp_proto_py`
//! in `collector/ingest/otlp.py` does (same spans, same per-span errors, same
//! whole-record failures) at a fraction of the cost: a hand-written wire
//! parser that follows upb's acceptance rules (wire.rs, schema.rs) and a
//! single pass that builds the Python objects (build.rs). The Python decoder
//! stays the reference; tests/test_otlp_native.py checks parity
//! differentially, including on fuzzed input.

mod build;
mod fast;
mod json;
mod keys;
mod schema;
mod wire;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

/// Bumped whenever a function's contract changes (or one is added); otlp.py refuses a mismatch.
const ABI: u32 = 4;

/// Decode an OTLP `TracesData` protobuf into `span_cls` objects.
///
/// Returns `(spans, errors)`. Raises `ValueError` with the full dead-letter
/// reason when nothing in the record can be used (the caller wraps it in
/// `MalformedRecord`).
#[pyfunction]
fn decode_traces<'py>(
    py: Python<'py>,
    data: &[u8],
    span_cls: &Bound<'py, PyAny>,
    max_attribute_chars: i64,
    max_attributes: i64,
) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>)> {
    let caps = build::Caps {
        max_attribute_chars,
        max_attributes,
    };
    let run = std::panic::AssertUnwindSafe(|| {
        let td = schema::parse_traces_data(data).map_err(|e| {
            PyValueError::new_err(format!(
                "not an OTLP TracesData protobuf: Error parsing message with type \
                 'opentelemetry.proto.trace.v1.TracesData': {}",
                e.upb_text()
            ))
        })?;
        build::build(py, &td, span_cls, caps)
    });
    match std::panic::catch_unwind(run) {
        Ok(r) => r,
        Err(_) => Err(PyValueError::new_err(
            "not an OTLP TracesData protobuf: native decoder failure",
        )),
    }
}

/// The fast path (fast.rs): a record holding only complete RAG traces, as `trace_cls`
/// objects with `row_head` set and their chunk and citation objects deferred (made by
/// `details_fn`, i.e. `trace_details`, when first read); None when the record must take
/// the general path.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn complete_traces<'py>(
    py: Python<'py>,
    data: Bound<'py, PyBytes>,
    trace_cls: Bound<'py, PyAny>,
    chunk_cls: Bound<'py, PyAny>,
    citation_cls: Bound<'py, PyAny>,
    details_fn: Bound<'py, PyAny>,
    max_attribute_chars: i64,
    max_attributes: i64,
) -> PyResult<Option<Bound<'py, PyList>>> {
    let caps = build::Caps {
        max_attribute_chars,
        max_attributes,
    };
    let classes = fast::Classes {
        trace: trace_cls,
        chunk: chunk_cls,
        citation: citation_cls,
        details: details_fn,
    };
    let run = std::panic::AssertUnwindSafe(|| fast::complete_traces(py, &data, &classes, caps));
    // A panic here is a bug, never the input's fault: the general path still handles the record.
    std::panic::catch_unwind(run).unwrap_or(Ok(None))
}

/// The `(chunks, citations)` lists of trace `index` of a record `complete_traces` took.
#[pyfunction]
fn trace_details<'py>(
    py: Python<'py>,
    data: &[u8],
    index: usize,
    chunk_cls: Bound<'py, PyAny>,
    citation_cls: Bound<'py, PyAny>,
    max_attribute_chars: i64,
    max_attributes: i64,
) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>)> {
    let caps = build::Caps {
        max_attribute_chars,
        max_attributes,
    };
    let classes = fast::Classes {
        trace: py.None().into_bound(py),
        chunk: chunk_cls,
        citation: citation_cls,
        details: py.None().into_bound(py),
    };
    fast::trace_details(py, data, index, &classes, caps)
}

/// orjson's text for a float (tests compare it with orjson).
#[pyfunction]
fn json_float(f: f64) -> String {
    let mut out = Vec::new();
    json::float(&mut out, f);
    String::from_utf8(out).unwrap_or_default()
}

/// orjson's text for a string (tests compare it with orjson).
#[pyfunction]
fn json_string(s: &str) -> String {
    let mut out = Vec::new();
    json::string(&mut out, s);
    String::from_utf8(out).unwrap_or_default()
}

#[pymodule]
fn ragpulse_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("ABI", ABI)?;
    m.add_function(wrap_pyfunction!(decode_traces, m)?)?;
    m.add_function(wrap_pyfunction!(complete_traces, m)?)?;
    m.add_function(wrap_pyfunction!(trace_details, m)?)?;
    m.add_function(wrap_pyfunction!(json_float, m)?)?;
    m.add_function(wrap_pyfunction!(json_string, m)?)?;
    Ok(())
}
