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
//! differentially, including on fuzzed input (and bench/fuzz_decoder.py with
//! a coverage-guided fuzzer).
//!
//! Every entry point contains its panics (boundary.rs): a panic is raised as
//! `NativePanic`, an ordinary exception that `collector/core/native.py`
//! answers with the entry point's Python reference.

mod boundary;
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
use pyo3::types::{PyList, PyTuple};

/// Bumped whenever a function's contract changes (or one is added); collector/core/native.py
/// refuses a mismatch.
const ABI: u32 = 9;

/// Decode an OTLP `TracesData` protobuf into `span_cls` objects.
///
/// Returns `(spans, errors)`. Raises `ValueError` with the full dead-letter
/// reason when nothing in the record can be used (the caller wraps it in
/// `MalformedRecord`), `NativePanic` when the decoder panicked.
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
    boundary::contained(boundary::DECODE_TRACES, || {
        let td = schema::parse_traces_data(data).map_err(|e| {
            PyValueError::new_err(format!(
                "not an OTLP TracesData protobuf: Error parsing message with type \
                 'opentelemetry.proto.trace.v1.TracesData': {}",
                e.upb_text()
            ))
        })?;
        let decoded = build::build(py, &td, span_cls, caps)?;
        boundary::injected_panic(boundary::DECODE_TRACES);
        Ok(decoded)
    })
}

#[pymodule]
fn ragpulse_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("ABI", ABI)?;
    m.add(
        "ENTRY_POINTS",
        PyTuple::new(m.py(), boundary::ENTRY_POINTS)?,
    )?;
    m.add(
        "TEST_PANICS",
        PyTuple::new(m.py(), boundary::read_test_switch())?,
    )?;
    m.add("NativePanic", m.py().get_type::<boundary::NativePanic>())?;
    m.add_function(wrap_pyfunction!(decode_traces, m)?)?;
    m.add_function(wrap_pyfunction!(rows::encode_rows, m)?)?;
    m.add_function(wrap_pyfunction!(documents::flattened_documents, m)?)?;
    m.add_function(wrap_pyfunction!(documents::citation_events, m)?)?;
    m.add_class::<reask::ReaskIndex>()?;
    Ok(())
}
