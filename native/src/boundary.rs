//! What every entry point does with a panic: it is caught where it happens and
//! raised as `ragpulse_native.NativePanic`, an ordinary `Exception` (a
//! `RuntimeError`), which `collector/core/native.py` answers with the entry
//! point's Python reference. Left to pyo3, a panic would surface as its
//! `PanicException`, a `BaseException` that passes every `except Exception`.
//!
//! Tests inject panics through `RAGPULSE_NATIVE_TEST_PANIC`, read once when
//! the module is imported: a comma-separated list of entry point names (see
//! `ENTRY_POINTS`; `ReaskIndex` names both of its methods, `*` every entry
//! point). An entry point it names panics on every call, at the point where a
//! real panic would do most harm (`ReaskIndex`'s while it holds its lock), so
//! the suite exercises containment with the same build that ships.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, Ordering};

use pyo3::create_exception;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

create_exception!(
    ragpulse_native,
    NativePanic,
    PyRuntimeError,
    "A native entry point panicked; the panic was contained and the Python reference answers instead."
);

/// The entry points, as `RAGPULSE_NATIVE_TEST_PANIC` names them (bit i of the switch is entry i).
pub(crate) const ENTRY_POINTS: [&str; 6] = [
    "decode_traces",
    "encode_rows",
    "flattened_documents",
    "citation_events",
    "ReaskIndex.add_calls",
    "ReaskIndex.detect",
];

/// An entry point: its index in `ENTRY_POINTS`.
#[derive(Clone, Copy)]
pub(crate) struct EntryPoint(usize);

pub(crate) const DECODE_TRACES: EntryPoint = EntryPoint(0);
pub(crate) const ENCODE_ROWS: EntryPoint = EntryPoint(1);
pub(crate) const FLATTENED_DOCUMENTS: EntryPoint = EntryPoint(2);
pub(crate) const CITATION_EVENTS: EntryPoint = EntryPoint(3);
pub(crate) const REASK_ADD_CALLS: EntryPoint = EntryPoint(4);
pub(crate) const REASK_DETECT: EntryPoint = EntryPoint(5);

impl EntryPoint {
    pub(crate) fn name(self) -> &'static str {
        ENTRY_POINTS[self.0]
    }
}

/// The entry points that panic on every call (bits of `ENTRY_POINTS`): tests only.
static TEST_PANICS: AtomicU32 = AtomicU32::new(0);

/// The bits of the entry points `names` selects (`*`: all; `ReaskIndex`: both its methods).
fn selected(names: &str) -> u32 {
    let mut bits = 0;
    for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        for (i, entry) in ENTRY_POINTS.iter().enumerate() {
            let class = entry.split('.').next().unwrap_or(entry);
            if name == "*" || name == *entry || name == class {
                bits |= 1 << i;
            }
        }
    }
    bits
}

/// Reads `RAGPULSE_NATIVE_TEST_PANIC` (at import) and returns the entry points it selects.
pub(crate) fn read_test_switch() -> Vec<&'static str> {
    let bits = std::env::var("RAGPULSE_NATIVE_TEST_PANIC")
        .map(|v| selected(&v))
        .unwrap_or(0);
    TEST_PANICS.store(bits, Ordering::Relaxed);
    ENTRY_POINTS
        .iter()
        .enumerate()
        .filter(|(i, _)| bits & (1 << i) != 0)
        .map(|(_, name)| *name)
        .collect()
}

/// Panics when the test switch selects `entry` (one relaxed load when it does not).
pub(crate) fn injected_panic(entry: EntryPoint) {
    if TEST_PANICS.load(Ordering::Relaxed) & (1 << entry.0) != 0 {
        panic!(
            "injected test panic in {} (RAGPULSE_NATIVE_TEST_PANIC)",
            entry.name()
        );
    }
}

/// The panic's message, when it carries one.
fn message(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "no message"
    }
}

/// Runs `body`, turning a panic in it into `NativePanic` naming `entry`.
pub(crate) fn contained<T>(entry: EntryPoint, body: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(result) => result,
        Err(payload) => Err(NativePanic::new_err(format!(
            "ragpulse_native.{} panicked: {}",
            entry.name(),
            message(payload.as_ref())
        ))),
    }
}
