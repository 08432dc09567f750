//! A span's flattened documents and its root's citation events, read into `Chunk` and
//! `Citation` objects: the loops of `_flattened` (collector/ingest/documents.py) and
//! `_citations` (collector/ingest/build.py).
//!
//! Only the common case is decided here: values of exactly the type the
//! agent and the OpenInference instrumentors write (a str id and content, a
//! float score, a str metadata text, an int position inside its range). Any
//! other value goes through the Python function the caller passes
//! (`optional_float`, `_meta_text`, `str`, `_int`), so how an odd value is
//! read keeps one definition. The Python loops stay the reference;
//! tests/test_documents_native.py checks parity on random attributes.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use crate::boundary;

/// `value` when it is exactly a str, else `str(value)`.
fn text<'py>(value: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    if value.is_exact_instance_of::<PyString>() {
        Ok(value)
    } else {
        Ok(value.str()?.into_any())
    }
}

/// `attrs[key]`, None when it is missing or None (as `attrs.get(key)` reads it).
fn get<'py>(
    attrs: &Bound<'py, PyDict>,
    key: Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    Ok(attrs.get_item(key)?.filter(|v| !v.is_none()))
}

/// The five attribute keys (id, content, score, metadata, source) of document `i`: from the
/// caller's cache when it holds them, else from `doc_keys(prefix, i)` (which extends it).
fn keys_of<'py>(
    cache: &Bound<'py, PyList>,
    doc_keys: &Bound<'py, PyAny>,
    prefix: &Bound<'py, PyString>,
    i: usize,
) -> PyResult<Bound<'py, PyTuple>> {
    let keys = if i < cache.len() {
        cache.get_item(i)?
    } else {
        doc_keys.call1((prefix, i))?
    };
    Ok(keys.cast_into::<PyTuple>()?)
}

/// The chunks of the flattened documents under `prefix` for i = 0, 1, ... until one has
/// neither an id nor a content, as `_flattened` reads them. `keys` is the key cache and the
/// function that extends it; `readers` the chunk class, `optional_float` and `_meta_text`.
#[pyfunction]
pub fn flattened_documents<'py>(
    py: Python<'py>,
    attrs: &Bound<'py, PyDict>,
    prefix: &Bound<'py, PyString>,
    keys: (Bound<'py, PyList>, Bound<'py, PyAny>),
    readers: (Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>),
) -> PyResult<Bound<'py, PyList>> {
    boundary::contained(boundary::FLATTENED_DOCUMENTS, || {
        let (cache, doc_keys) = keys;
        let (chunk_cls, optional_float, meta_text) = readers;
        let chunks = PyList::empty(py);
        let mut i = 0usize;
        loop {
            let keys = keys_of(&cache, &doc_keys, prefix, i)?;
            let cid = get(attrs, keys.get_item(0)?)?;
            let content = get(attrs, keys.get_item(1)?)?;
            if cid.is_none() && content.is_none() {
                break;
            }
            i += 1;
            let score = match get(attrs, keys.get_item(2)?)? {
                None => py.None().into_bound(py),
                Some(s) if s.is_exact_instance_of::<PyFloat>() => s,
                Some(s) => optional_float.call1((s,))?,
            };
            let meta = match get(attrs, keys.get_item(3)?)? {
                None => PyString::new(py, "").into_any(),
                Some(m) if m.is_exact_instance_of::<PyString>() => m,
                Some(m) => meta_text.call1((m,))?,
            };
            let source = match get(attrs, keys.get_item(4)?)? {
                None => py.None().into_bound(py),
                Some(s) => text(s)?,
            };
            let cid = match cid {
                None => PyString::new(py, &i.to_string()).into_any(),
                Some(c) => text(c)?,
            };
            let content = match content {
                None => PyString::new(py, "").into_any(),
                Some(c) => text(c)?,
            };
            chunks.append(chunk_cls.call1((cid, content, score, meta, source))?)?;
        }
        boundary::injected_panic(boundary::FLATTENED_DOCUMENTS);
        Ok(chunks)
    })
}

/// `value` when it is exactly an int in [low, high], else `clamp(value, low, high)`.
fn position<'py>(
    value: Bound<'py, PyAny>,
    clamp: &Bound<'py, PyAny>,
    low: i64,
    high: i64,
) -> PyResult<Bound<'py, PyAny>> {
    if value.is_exact_instance_of::<PyInt>() {
        if let Ok(n) = value.extract::<i64>() {
            if (low..=high).contains(&n) {
                return Ok(value);
            }
        }
    }
    clamp.call1((value, low, high))
}

/// The citations of `events` (a span's `(name, time, attrs)` tuples) named `event_name`, in
/// order, as `_citations` reads them. `keys` are the document id, marker, start and end
/// attribute keys; `positions` is `(clamp, low, high)`: a position outside [low, high] or of
/// another type is `clamp(value, low, high)`.
#[pyfunction]
pub fn citation_events<'py>(
    py: Python<'py>,
    events: &Bound<'py, PyList>,
    event_name: &Bound<'py, PyString>,
    keys: [Bound<'py, PyString>; 4],
    citation_cls: &Bound<'py, PyAny>,
    positions: (Bound<'py, PyAny>, i64, i64),
) -> PyResult<Bound<'py, PyList>> {
    boundary::contained(boundary::CITATION_EVENTS, || {
        let (clamp, low, high) = positions;
        let out = PyList::empty(py);
        let empty = PyString::new(py, "").into_any();
        let minus_one = (-1i64).into_pyobject(py)?.into_any();
        for event in events.iter() {
            let event = event.cast_into::<PyTuple>()?;
            if !event.get_item(0)?.eq(event_name)? {
                continue;
            }
            let ea = event.get_item(2)?;
            let ea = ea.cast::<PyDict>()?;
            let get = |key: &Bound<'py, PyString>,
                       default: &Bound<'py, PyAny>|
             -> PyResult<Bound<'py, PyAny>> {
                Ok(ea.get_item(key)?.unwrap_or_else(|| default.clone()))
            };
            out.append(citation_cls.call1((
                text(get(&keys[0], &empty)?)?,
                text(get(&keys[1], &empty)?)?,
                position(get(&keys[2], &minus_one)?, &clamp, low, high)?,
                position(get(&keys[3], &minus_one)?, &clamp, low, high)?,
            ))?)?;
        }
        boundary::injected_panic(boundary::CITATION_EVENTS);
        Ok(out)
    })
}
