//! Re-ask detection's session memory and matching, in Rust.
//!
//! `ReaskIndex` does what `collector/feedback/sessions.py` (`SessionIndex`)
//! and the matching of `collector/feedback/reask.py` (`ReaskDetector._match`)
//! do in Python, with the same results: the same calls held and forgotten
//! (per session the latest `lookback` by (time, trace id); sessions out of the
//! window forgotten, least recently active first; beyond `max_calls` the least
//! recently active session dropped and counted), the same signature bound and
//! the same exact Jaccard test on character 3-shingles. ASCII queries are
//! normalised here (queries.rs); any other query is normalised by the Python
//! function given to the constructor, so Unicode folding has one definition.
//! The Python code stays the reference; tests/test_reask_native.py checks
//! parity on random streams.
//!
//! A panic in `add_calls` or `detect` is raised as `NativePanic` and empties
//! the index (what it held may be half updated; the detector reloads the
//! stored calls, as after a restart); a lock poisoned by it is recovered, so
//! the index stays usable.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};

use crate::boundary::{self, EntryPoint};
use crate::queries::{normalize_ascii, signature_of, SIGNATURE_WORDS};

/// One call the index holds (or is about to).
struct Entry {
    time: i128,
    trace_key: Vec<u8>, // the trace id's UTF-8 (surrogates passed): ordered as Python orders str
    trace_id: Py<PyAny>,
    service: Py<PyAny>,
    shingles: Vec<u64>, // distinct shingle keys, sorted (see `shingle_keys`)
    signature: [u64; SIGNATURE_WORDS],
}

/// A re-ask found by `detect`: (position in the batch, earlier trace id, earlier service).
type Found = (usize, Py<PyAny>, Py<PyAny>);

/// A `Call` tuple (trace_id, session_id, time, query, service) as the index reads it.
struct Incoming {
    session: Vec<u8>,
    entry: Entry,
}

struct Session {
    active: u64, // its key in `State::order` (the larger, the more recently active)
    entries: Vec<Entry>,
}

/// What the index holds; behind a mutex that is never held while Python code runs.
#[derive(Default)]
struct State {
    sessions: HashMap<Vec<u8>, Session>,
    order: BTreeMap<u64, Vec<u8>>, // least recently active first
    next_active: u64,
    newest: i128,
}

/// The distinct shingles of `" " + normalized + " "` as sorted keys, and its signature. A key
/// is the shingle's code (`_code` in sessions.py); the one shingle of a text of under 3
/// characters is marked with bit 63, which no 3-character code uses, so keys are equal exactly
/// when the shingles are.
fn shingle_keys(chars: &[u32]) -> (Vec<u64>, [u64; SIGNATURE_WORDS]) {
    let mut padded = Vec::with_capacity(chars.len() + 2);
    padded.push(u32::from(b' '));
    padded.extend_from_slice(chars);
    padded.push(u32::from(b' '));
    let code = |gram: &[u32]| gram.iter().fold(0u64, |acc, &c| acc << 21 | u64::from(c));
    let mut codes: Vec<u64> = if padded.len() <= 3 {
        vec![code(&padded)]
    } else {
        padded.windows(3).map(code).collect()
    };
    let signature = signature_of(&codes);
    if padded.len() < 3 {
        codes[0] |= 1 << 63;
    }
    codes.sort_unstable();
    codes.dedup();
    (codes, signature)
}

/// |a ∩ b| of two sorted, distinct key lists.
fn common(a: &[u64], b: &[u64]) -> usize {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                n += 1;
                i += 1;
                j += 1;
            }
        }
    }
    n
}

/// `may_match` of sessions.py, in the same float64 operations.
fn may_match(a: &Entry, b: &Entry, threshold: f64) -> bool {
    let differ: u32 = a
        .signature
        .iter()
        .zip(&b.signature)
        .map(|(x, y)| (x ^ y).count_ones())
        .sum();
    let total = (a.shingles.len() + b.shingles.len()) as f64;
    let common = (total - f64::from(differ)) / 2.0;
    common >= threshold * (total - common) - 1e-9
}

/// `jaccard(a, b) >= threshold` of text.py, in the same float64 operations.
fn reasks(a: &Entry, b: &Entry, threshold: f64) -> bool {
    let n = common(&a.shingles, &b.shingles);
    let union = a.shingles.len() + b.shingles.len() - n;
    (n as f64) / (union as f64) >= threshold
}

/// A str's UTF-8 bytes, lone surrogates passed through (their order is Python's code point order).
fn utf8_key(text: &Bound<'_, PyString>) -> PyResult<Vec<u8>> {
    match text.to_str() {
        Ok(s) => Ok(s.as_bytes().to_vec()),
        Err(_) => {
            let raw = text.call_method1("encode", ("utf-8", "surrogatepass"))?;
            Ok(raw.cast::<PyBytes>()?.as_bytes().to_vec())
        }
    }
}

#[pyclass(module = "ragpulse_native", frozen)]
pub struct ReaskIndex {
    #[pyo3(get)]
    window_ns: i128,
    #[pyo3(get)]
    lookback: usize,
    #[pyo3(get)]
    max_calls: usize,
    calls: AtomicUsize,
    evicted: AtomicUsize,
    normalize: Py<PyAny>,
    state: Mutex<State>,
}

impl ReaskIndex {
    /// The state, locked; a lock poisoned by a panic is recovered with the state emptied.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| {
            let mut state = poisoned.into_inner();
            *state = State::default();
            self.calls.store(0, Ordering::Relaxed);
            self.state.clear_poison();
            state
        })
    }

    /// Runs a method's `body` with its panics contained: one raises `NativePanic` and leaves
    /// the index empty (and its lock usable).
    fn guarded<T>(&self, entry: EntryPoint, body: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
        let mut finished = false;
        let result = boundary::contained(entry, || {
            let out = body();
            finished = true;
            out
        });
        if !finished {
            *self.lock() = State::default();
            self.calls.store(0, Ordering::Relaxed);
        }
        result
    }

    /// Reads a `Call` (this runs Python code for a query that is not ASCII: no lock is held).
    fn read(&self, py: Python<'_>, call: &Bound<'_, PyAny>) -> PyResult<Incoming> {
        let call = call.cast::<PyTuple>()?;
        let trace_id = call.get_item(0)?;
        let trace_key = utf8_key(trace_id.cast::<PyString>()?)?;
        let session = utf8_key(call.get_item(1)?.cast::<PyString>()?)?;
        let time_obj = call.get_item(2)?;
        let time = match time_obj.extract::<i64>() {
            Ok(t) => i128::from(t),
            Err(_) => time_obj.extract::<i128>()?,
        };
        let query = call.get_item(3)?;
        let query = query.cast::<PyString>()?;
        let chars: Vec<u32> = match query.to_str() {
            Ok(s) if s.is_ascii() => {
                let mut out = Vec::with_capacity(s.len());
                normalize_ascii(s.as_bytes(), &mut out);
                out.into_iter().map(u32::from).collect()
            }
            _ => {
                // Python's normalisation, read as code points (lone surrogates included)
                let normalized = self.normalize.bind(py).call1((query,))?;
                let raw = normalized.call_method1("encode", ("utf-32-le", "surrogatepass"))?;
                let raw = raw.cast::<PyBytes>()?.as_bytes();
                raw.chunks_exact(4)
                    .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect()
            }
        };
        let (shingles, signature) = shingle_keys(&chars);
        let entry = Entry {
            time,
            trace_key,
            trace_id: trace_id.unbind(),
            service: call.get_item(4)?.unbind(),
            shingles,
            signature,
        };
        Ok(Incoming { session, entry })
    }

    fn read_all(&self, py: Python<'_>, calls: &Bound<'_, PyList>) -> PyResult<Vec<Incoming>> {
        calls.iter().map(|call| self.read(py, &call)).collect()
    }

    /// `SessionIndex.earlier` then `ReaskDetector._match`: the latest earlier call of the
    /// session in the window that `call` re-asks.
    fn matching<'s>(
        &self,
        state: &'s State,
        session: &[u8],
        call: &Entry,
        threshold: f64,
    ) -> Option<&'s Entry> {
        let entries = &state.sessions.get(session)?.entries;
        let end = entries.partition_point(|e| e.time < call.time);
        let low = call.time - self.window_ns;
        entries[end.saturating_sub(self.lookback)..end]
            .iter()
            .rev()
            .take_while(|e| e.time >= low)
            .filter(|e| may_match(call, e, threshold))
            .find(|e| e.trace_key != call.trace_key && reasks(call, e, threshold))
    }

    /// `SessionIndex.add`.
    fn add(&self, state: &mut State, incoming: Incoming) {
        let Incoming { session, entry } = incoming;
        let active = state.next_active;
        state.next_active += 1;
        let held = state.sessions.entry(session.clone()).or_insert(Session {
            active,
            entries: Vec::new(),
        });
        if held.active != active {
            state.order.remove(&held.active);
            held.active = active;
        }
        state.order.insert(active, session);
        let entries = &mut held.entries;
        let at =
            entries.partition_point(|e| (e.time, &e.trace_key) < (entry.time, &entry.trace_key));
        if at < entries.len() && entries[at].trace_key == entry.trace_key {
            return;
        }
        let time = entry.time;
        entries.insert(at, entry);
        let mut calls = self.calls.load(Ordering::Relaxed) + 1;
        if entries.len() > self.lookback {
            entries.remove(0);
            calls -= 1;
        }
        if time > state.newest {
            state.newest = time;
        }
        calls -= self.forget_expired(state);
        let mut evicted = 0;
        while calls > self.max_calls {
            let Some((_, sid)) = state.order.pop_first() else {
                break;
            };
            if let Some(dropped) = state.sessions.remove(&sid) {
                calls -= dropped.entries.len();
                evicted += dropped.entries.len();
            }
        }
        self.calls.store(calls, Ordering::Relaxed);
        self.evicted.fetch_add(evicted, Ordering::Relaxed);
    }

    /// `SessionIndex._forget_expired`; returns the calls forgotten.
    fn forget_expired(&self, state: &mut State) -> usize {
        let low = state.newest - self.window_ns;
        let mut forgotten = 0;
        while let Some((&active, sid)) = state.order.first_key_value() {
            if state.sessions[sid]
                .entries
                .last()
                .is_some_and(|e| e.time >= low)
            {
                break;
            }
            let sid = sid.clone();
            state.order.remove(&active);
            if let Some(gone) = state.sessions.remove(&sid) {
                forgotten += gone.entries.len();
            }
        }
        forgotten
    }
}

#[pymethods]
impl ReaskIndex {
    #[new]
    fn new(
        window_ns: i128,
        lookback: usize,
        max_calls: usize,
        normalize: Py<PyAny>,
    ) -> PyResult<Self> {
        if lookback < 1 || max_calls < 1 {
            return Err(PyValueError::new_err(
                "lookback and max_calls must be at least 1",
            ));
        }
        Ok(ReaskIndex {
            window_ns,
            lookback,
            max_calls,
            calls: AtomicUsize::new(0),
            evicted: AtomicUsize::new(0),
            normalize,
            state: Mutex::new(State::default()),
        })
    }

    /// Calls held (`ragpulse_reask_index_calls`).
    #[getter]
    fn calls(&self) -> usize {
        self.calls.load(Ordering::Relaxed)
    }

    /// Calls dropped for the cap before their window ended.
    #[getter]
    fn evicted(&self) -> usize {
        self.evicted.load(Ordering::Relaxed)
    }

    fn __len__(&self) -> usize {
        self.calls()
    }

    /// Hold each of `calls` (`Call` tuples), in order, as `SessionIndex.add` does.
    fn add_calls(&self, py: Python<'_>, calls: &Bound<'_, PyList>) -> PyResult<()> {
        self.guarded(boundary::REASK_ADD_CALLS, || {
            let incoming = self.read_all(py, calls)?;
            let mut state = self.lock();
            for one in incoming {
                self.add(&mut state, one);
            }
            boundary::injected_panic(boundary::REASK_ADD_CALLS);
            Ok(())
        })
    }

    /// For each of `calls` (`Call` tuples, in time order): the latest earlier call it re-asks,
    /// then hold it. Returns `(position in calls, earlier trace id, earlier service)` of each
    /// re-ask found.
    fn detect(
        &self,
        py: Python<'_>,
        calls: &Bound<'_, PyList>,
        threshold: f64,
    ) -> PyResult<Vec<Found>> {
        self.guarded(boundary::REASK_DETECT, || {
            let incoming = self.read_all(py, calls)?;
            let mut state = self.lock();
            let mut found = Vec::new();
            for (k, one) in incoming.into_iter().enumerate() {
                if let Some(e) = self.matching(&state, &one.session, &one.entry, threshold) {
                    found.push((k, e.trace_id.clone_ref(py), e.service.clone_ref(py)));
                }
                self.add(&mut state, one);
            }
            boundary::injected_panic(boundary::REASK_DETECT);
            drop(state);
            Ok(found)
        })
    }
}
