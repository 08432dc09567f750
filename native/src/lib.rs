//! `ragpulse_native`: the collector's OTLP protobuf decoder in Rust, and the
//! session memory and matching of re-ask detection (reask.rs, queries.rs), and
//! the `rag_traces` rows in RowBinary (rows.rs), and the loops that read a
//! trace's documents and citations (documents.rs).
//!
//! `decode_traces` does exactly what the pure-Python `decode_otlp_proto_py`
//! in `collector/ingest/otlp.py` does (same spans, same per-span errors, same
//! whole-record failures) at a fraction of the cost: a hand-written wire
//! parser that follows upb's acceptance rules (wire.rs, schema.rs) and a
//! single pass that builds the Python objects (build.rs). The Python decoder
//! stays the reference; tests/test_otlp_native.py checks parity
//! differentially, including on fuzzed input.

mod build;
mod documents;
mod keys;
mod queries;
mod reask;
mod rows;
mod schema;
mod wire;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyList;

/// Bumped whenever a function's contract changes (or one is added); otlp.py refuses a mismatch.
const ABI: u32 = 8;

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

#[pymodule]
fn ragpulse_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("ABI", ABI)?;
    m.add_function(wrap_pyfunction!(decode_traces, m)?)?;
    m.add_function(wrap_pyfunction!(rows::encode_rows, m)?)?;
    m.add_function(wrap_pyfunction!(documents::flattened_documents, m)?)?;
    m.add_function(wrap_pyfunction!(documents::citation_events, m)?)?;
    m.add_class::<reask::ReaskIndex>()?;
    Ok(())
}
