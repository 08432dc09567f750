//! A bounded per-thread cache of attribute-key strings.
//!
//! The same few dozen keys (`retrieval.documents.0.document.content`, ...)
//! occur in every record; reusing one Python string per key saves creating
//! it and hashing it again on every dict insert (a str caches its hash): about
//! a fifth of the decoder's instructions per span. Values are not cached:
//! measured, it saved no instructions and cost memory traffic. Strings are
//! immutable, so sharing one object is invisible to the collector.
//! Direct-mapped: a key's hash picks one slot, a different key in that slot
//! is replaced, so the cache never grows and hostile input with endless
//! distinct keys costs one lookup per key.

use pyo3::prelude::*;
use pyo3::types::PyString;
use std::cell::RefCell;

const SLOTS: usize = 4096; // a power of two
/// Longer keys are created directly.
const MAX_CACHED_BYTES: usize = 96;

/// A fast non-cryptographic hash, eight bytes at a time (the cache is direct-mapped and
/// bounded, so collisions only cost a miss).
#[inline]
fn hash(b: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = (b.len() as u64).wrapping_mul(K);
    let mut words = b.chunks_exact(8);
    for w in &mut words {
        let mut a = [0u8; 8];
        a.copy_from_slice(w);
        h = (h ^ u64::from_le_bytes(a)).wrapping_mul(K).rotate_left(29);
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut a = [0u8; 8];
        a[..rest.len()].copy_from_slice(rest);
        h = (h ^ u64::from_le_bytes(a)).wrapping_mul(K).rotate_left(29);
    }
    h ^ (h >> 32)
}

type Slot = Option<(Box<[u8]>, Py<PyString>)>;

struct Cache {
    slots: Vec<Slot>,
}

thread_local! {
    static CACHE: RefCell<Cache> = RefCell::new(Cache { slots: (0..SLOTS).map(|_| None).collect() });
}

/// The Python string for `key`, from the cache when possible.
pub fn cached<'py>(py: Python<'py>, key: &str) -> Bound<'py, PyString> {
    if key.len() > MAX_CACHED_BYTES {
        return PyString::new(py, key);
    }
    let hit = CACHE.with(|c| {
        let Ok(mut c) = c.try_borrow_mut() else {
            return None;
        };
        let slot = &mut c.slots[(hash(key.as_bytes()) as usize) & (SLOTS - 1)];
        if let Some((k, s)) = slot {
            if **k == *key.as_bytes() {
                return Some(s.bind(py).clone());
            }
        }
        let s = PyString::new(py, key);
        *slot = Some((key.as_bytes().into(), s.clone().unbind()));
        Some(s)
    });
    hit.unwrap_or_else(|| PyString::new(py, key))
}
