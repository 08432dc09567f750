//! Turns parsed spans into the collector's Python objects, with the checks,
//! error texts and attribute semantics of the pure-Python decoder
//! (`collector/ingest/otlp.py`: `decode_otlp_proto_py`, `_pb_attrs`, `_pb_value`).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use crate::keys;
use crate::schema::{Arena, Event, KeyValue, Span, TracesData, Value};

/// A span is rejected with a message, or Python itself failed (memory).
pub(crate) enum Reject {
    Msg(String),
    Py(PyErr),
}

impl From<PyErr> for Reject {
    fn from(e: PyErr) -> Self {
        Reject::Py(e)
    }
}

/// The decoder's limits, as `Limits` in otlp.py (Python ints compared as such).
#[derive(Clone, Copy)]
pub struct Caps {
    pub max_attribute_chars: i64,
    pub max_attributes: i64,
}

/// The first `n` characters (code points) of `s`, as Python's `s[:n]`.
fn prefix_chars(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// Python's `repr(s[:n])`.
fn py_repr(py: Python<'_>, s: &str, n: usize) -> PyResult<String> {
    let p = PyString::new(py, prefix_chars(s, n));
    Ok(p.repr()?.to_str()?.to_owned())
}

const HEX: &[u8; 16] = b"0123456789abcdef";

pub(crate) fn hex<'py>(py: Python<'py>, b: &[u8]) -> Bound<'py, PyString> {
    let mut out = [0u8; 32];
    let n = b.len().min(16);
    for (i, &x) in b[..n].iter().enumerate() {
        out[2 * i] = HEX[(x >> 4) as usize];
        out[2 * i + 1] = HEX[(x & 15) as usize];
    }
    // Only ASCII hex digits were written.
    PyString::new(py, std::str::from_utf8(&out[..2 * n]).unwrap_or(""))
}

/// The hex strings of ids seen recently in this record: a trace's spans share the trace id,
/// and parent ids repeat span ids, so most lookups hit (linear search over a few entries).
struct Ids<'a, 'py> {
    recent: Vec<(&'a [u8], Bound<'py, PyString>)>,
    next: usize,
}

impl<'a, 'py> Ids<'a, 'py> {
    const SIZE: usize = 16;

    fn new() -> Self {
        Ids {
            recent: Vec::with_capacity(Self::SIZE),
            next: 0,
        }
    }

    fn hex(&mut self, py: Python<'py>, id: &'a [u8]) -> Bound<'py, PyString> {
        if let Some((_, s)) = self.recent.iter().find(|(b, _)| *b == id) {
            return s.clone();
        }
        let s = hex(py, id);
        if self.recent.len() < Self::SIZE {
            self.recent.push((id, s.clone()));
        } else {
            self.recent[self.next] = (id, s.clone());
            self.next = (self.next + 1) % Self::SIZE;
        }
        s
    }
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding, as `base64.b64encode(b).decode()`.
pub(crate) fn base64(b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len().div_ceil(3) * 4);
    for chunk in b.chunks(3) {
        let n = chunk.len();
        let v = (chunk[0] as u32) << 16
            | (if n > 1 { chunk[1] as u32 } else { 0 }) << 8
            | (if n > 2 { chunk[2] as u32 } else { 0 });
        out.push(B64[(v >> 18) as usize & 63] as char);
        out.push(B64[(v >> 12) as usize & 63] as char);
        out.push(if n > 1 {
            B64[(v >> 6) as usize & 63] as char
        } else {
            '='
        });
        out.push(if n > 2 {
            B64[v as usize & 63] as char
        } else {
            '='
        });
    }
    out
}

/// `_pb_value`: any AnyValue to a plain Python value (nested arrays and kvlists included).
fn value<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Str(s) => PyString::new(py, s).into_any(),
        Value::Int(i) => PyInt::new(py, *i).into_any(),
        Value::Double(d) => PyFloat::new(py, *d).into_any(),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Array(items) => {
            let l = PyList::empty(py);
            for x in items {
                l.append(value(py, x)?)?;
            }
            l.into_any()
        }
        Value::KvList(kvs) => {
            let d = PyDict::new(py);
            for kv in kvs {
                d.set_item(keys::cached(py, kv.key), value(py, &kv.value)?)?;
            }
            d.into_any()
        }
        Value::Bytes(b) => PyString::new(py, &base64(b)).into_any(),
        Value::Unset | Value::StrIndex => py.None().into_bound(py),
    })
}

/// `_pb_attrs`: a span's or event's attributes to a dict, enforcing the limits.
pub(crate) fn attrs<'py>(
    py: Python<'py>,
    kvs: &[KeyValue],
    caps: Caps,
) -> Result<Bound<'py, PyDict>, Reject> {
    if kvs.len() as i64 > caps.max_attributes {
        return Err(Reject::Msg(format!(
            "{} attributes exceed max_attributes {}",
            kvs.len(),
            caps.max_attributes
        )));
    }
    let out = PyDict::new(py);
    let cap = caps.max_attribute_chars;
    for kv in kvs {
        let key = keys::cached(py, kv.key);
        match &kv.value {
            Value::Str(s) if !s.is_empty() => {
                // Characters never outnumber bytes: count them only when the bytes could exceed.
                if s.len() as i64 > cap {
                    let n = s.chars().count();
                    if n as i64 > cap {
                        return Err(Reject::Msg(format!(
                            "attribute {} of {} chars exceeds max_attribute_chars {}",
                            py_repr(py, kv.key, 80)?,
                            n,
                            cap
                        )));
                    }
                }
                out.set_item(key, PyString::new(py, s))?;
            }
            Value::Str(_) => out.set_item(key, PyString::new(py, ""))?,
            Value::Double(d) => out.set_item(key, PyFloat::new(py, *d))?,
            Value::Int(i) => out.set_item(key, *i)?,
            Value::Bool(b) => out.set_item(key, PyBool::new(py, *b))?,
            Value::Unset => out.set_item(key, py.None())?,
            other => {
                let v = value(py, other)?;
                if v.str()?.len()? as i64 > cap {
                    return Err(Reject::Msg(format!(
                        "attribute {} exceeds max_attribute_chars {}",
                        py_repr(py, kv.key, 80)?,
                        cap
                    )));
                }
                out.set_item(key, v)?;
            }
        }
    }
    Ok(out)
}

fn events<'py>(
    py: Python<'py>,
    evs: &[Event],
    arena: &Arena,
    caps: Caps,
) -> Result<Bound<'py, PyList>, Reject> {
    let out = PyList::empty(py);
    for e in evs {
        let a = attrs(py, &arena.event_attrs[e.attrs.clone()], caps)?;
        let t = PyTuple::new(
            py,
            [
                PyString::new(py, e.name).into_any(),
                PyInt::new(py, e.time).into_any(),
                a.into_any(),
            ],
        )?;
        out.append(t)?;
    }
    Ok(out)
}

pub(crate) fn all_zero(b: &[u8]) -> bool {
    b.iter().all(|&x| x == 0)
}

/// Why the decoder rejects a span for its ids or times (None when they are fine); the
/// message the dead letter gives after the span's name.
pub(crate) fn span_problem(s: &Span) -> Option<String> {
    let (tid, sid, pid) = (s.trace_id, s.span_id, s.parent_id);
    if tid.len() != 16 || all_zero(tid) {
        Some(format!(
            "trace_id must be 16 non-zero bytes, got {}",
            tid.len()
        ))
    } else if sid.len() != 8 || all_zero(sid) {
        Some(format!(
            "span_id must be 8 non-zero bytes, got {}",
            sid.len()
        ))
    } else if !pid.is_empty() && pid.len() != 8 {
        Some(format!("parent_span_id must be 8 bytes, got {}", pid.len()))
    } else if s.start == 0 || s.end == 0 || s.end < s.start {
        Some("missing or inverted start/end time".to_owned())
    } else {
        None
    }
}

/// Builds `(spans, errors)` from a parsed record, as `decode_otlp_proto_py` does.
pub fn build<'a, 'py>(
    py: Python<'py>,
    td: &TracesData<'a>,
    span_cls: &Bound<'py, PyAny>,
    caps: Caps,
) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>)> {
    let spans = PyList::empty(py);
    let errors = PyList::empty(py);
    let empty = PyString::new(py, "");
    let mut ids = Ids::new();
    for res in &td.resources {
        if res.first_span == res.end_span {
            continue;
        }
        let service = match res.service_name() {
            "" => empty.clone(),
            s => PyString::new(py, s),
        };
        for s in &td.spans[res.first_span..res.end_span] {
            let (tid, sid, pid) = (s.trace_id, s.span_id, s.parent_id);
            let problem = span_problem(s);
            if let Some(msg) = problem {
                errors.append(format!("span {}: {}", py_repr(py, s.name, 60)?, msg))?;
                continue;
            }
            let built = attrs(py, &td.arena.span_attrs[s.attrs.clone()], caps).and_then(|a| {
                let ev = if s.events.is_empty() {
                    PyList::empty(py)
                } else {
                    events(py, &td.arena.events[s.events.clone()], &td.arena, caps)?
                };
                Ok((a, ev))
            });
            let (a, ev) = match built {
                Ok(x) => x,
                Err(Reject::Msg(msg)) => {
                    errors.append(format!("span {}: {}", py_repr(py, s.name, 60)?, msg))?;
                    continue;
                }
                Err(Reject::Py(e)) => return Err(e),
            };
            let parent = if pid.is_empty() || all_zero(pid) {
                empty.clone()
            } else {
                ids.hex(py, pid)
            };
            let span = span_cls.call1((
                ids.hex(py, tid),
                ids.hex(py, sid),
                parent,
                PyString::new(py, s.name),
                s.start,
                s.end,
                s.status,
                service.clone(),
                a,
                ev,
            ))?;
            spans.append(span)?;
        }
    }
    if spans.is_empty() && errors.is_empty() {
        return Err(PyValueError::new_err(if td.resources.is_empty() {
            "no OTLP resource_spans in record"
        } else {
            "no spans in record"
        }));
    }
    Ok((spans, errors))
}
