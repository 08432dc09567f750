//! Kafka record-batch unpacking for kafka-python's consumer (message format v2).
//!
//! kafka-python parses every record of a fetched batch in Python (seven
//! varints, slices and two objects per record): about 40 us per record, a
//! third of the collector's main thread. `unpack_records` parses the records
//! section of one (already decompressed) batch in one call and builds the
//! consumer's `ConsumerRecord` tuples directly.
//!
//! Contract (collector/kafka/records.py relies on it): for a batch kafka-python
//! would unpack without error, the records are exactly the ones it yields, in
//! order; for anything else (a varint kafka-python would read differently, a
//! length that overruns, a record whose size does not match its length field,
//! a header key that is not UTF-8, bytes left over, a negative count) it
//! returns None and the caller lets kafka-python unpack the batch itself, so
//! its errors stay its own.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyInt, PyList, PyString, PyTuple};

/// The batch-level values every record of the batch shares.
pub struct BatchInfo<'py> {
    pub count: i64,
    pub base_offset: i64,
    pub first_timestamp: i64,
    pub max_timestamp: i64,
    /// 0 = create time, 1 = log-append time (then every record has `max_timestamp`).
    pub timestamp_type: i64,
    pub topic: Bound<'py, PyAny>,
    pub partition: Bound<'py, PyAny>,
    pub leader_epoch: Bound<'py, PyAny>,
    pub record_cls: Bound<'py, PyAny>,
}

/// A byte range `start..end` of the records section.
type Range = (usize, usize);

/// One record's fields, as positions into the records section (header keys as checked text).
struct Parsed<'a> {
    size: i64,
    offset: i64,
    timestamp: i64,
    key: Option<Range>,
    value: Option<Range>,
    headers: Vec<(&'a str, Option<Range>)>,
}

/// A zigzag varint as kafka-python's `decode_varint` reads it, or None where its
/// result would not fit an i64 (it would give a Python int beyond 64 bits or raise).
fn varint(buf: &[u8], pos: &mut usize) -> Option<i64> {
    let mut raw: u64 = 0;
    for i in 0..10 {
        let b = *buf.get(*pos)?;
        *pos += 1;
        let bits = (b & 0x7f) as u64;
        if i == 9 && (bits > 1 || b & 0x80 != 0) {
            return None; // beyond 64 bits, or kafka-python's "Out of int64 range"
        }
        raw |= bits << (7 * i);
        if b & 0x80 == 0 {
            return Some(((raw >> 1) as i64) ^ -((raw & 1) as i64));
        }
    }
    None
}

/// A byte range of `len` bytes at `pos` (None for a negative length, i.e. null).
fn field(buf: &[u8], pos: &mut usize, len: i64) -> Result<Option<Range>, ()> {
    if len < 0 {
        return Ok(None);
    }
    let end = pos
        .checked_add(usize::try_from(len).map_err(|_| ())?)
        .ok_or(())?;
    if end > buf.len() {
        return Err(());
    }
    let range = (*pos, end);
    *pos = end;
    Ok(Some(range))
}

fn parse_record<'a>(buf: &'a [u8], pos: &mut usize, info: &BatchInfo<'_>) -> Option<Parsed<'a>> {
    let length = varint(buf, pos)?;
    let start = *pos;
    varint(buf, pos)?; // attributes: unused in format v2
    let ts_delta = varint(buf, pos)?;
    let timestamp = if info.timestamp_type == 1 {
        info.max_timestamp
    } else {
        info.first_timestamp.checked_add(ts_delta)?
    };
    let offset = info.base_offset.checked_add(varint(buf, pos)?)?;
    let key_len = varint(buf, pos)?;
    let key = field(buf, pos, key_len).ok()?;
    let value_len = varint(buf, pos)?;
    let value = field(buf, pos, value_len).ok()?;
    let mut header_count = varint(buf, pos)?;
    if header_count < 0 {
        return None;
    }
    let mut headers = Vec::new();
    while header_count > 0 {
        let key_len = varint(buf, pos)?;
        if key_len < 0 {
            return None;
        }
        let (start, end) = field(buf, pos, key_len).ok()??;
        let hkey = std::str::from_utf8(&buf[start..end]).ok()?;
        let value_len = varint(buf, pos)?;
        let hvalue = field(buf, pos, value_len).ok()?;
        headers.push((hkey, hvalue));
        header_count -= 1;
    }
    if (*pos - start) as i64 != length {
        return None;
    }
    Some(Parsed {
        size: length,
        offset,
        timestamp,
        key,
        value,
        headers,
    })
}

/// Every record of the section, or None when kafka-python must unpack it (see the module doc).
fn parse_all<'a>(buf: &'a [u8], pos: usize, info: &BatchInfo<'_>) -> Option<Vec<Parsed<'a>>> {
    if info.count < 0 || pos > buf.len() {
        return None;
    }
    let mut at = pos;
    let mut out = Vec::with_capacity(info.count.min(1 << 16) as usize);
    for _ in 0..info.count {
        out.push(parse_record(buf, &mut at, info)?);
    }
    (at == buf.len()).then_some(out)
}

/// `(records, sizes)`: the batch's `ConsumerRecord`s and each record's size in bytes
/// (kafka-python's `size_in_bytes`), or None (see the module doc).
pub fn unpack_records<'py>(
    py: Python<'py>,
    buf: &[u8],
    pos: usize,
    info: &BatchInfo<'py>,
) -> PyResult<Option<(Bound<'py, PyList>, Bound<'py, PyList>)>> {
    let Some(parsed) = parse_all(buf, pos, info) else {
        return Ok(None);
    };
    let bytes_or_none = |r: Option<Range>| match r {
        Some((a, b)) => PyBytes::new(py, &buf[a..b]).into_any(),
        None => py.None().into_bound(py),
    };
    let size_of = |r: Option<Range>| r.map_or(-1, |(a, b)| (b - a) as i64);
    let timestamp_type = PyInt::new(py, info.timestamp_type).into_any();
    let records = PyList::empty(py);
    let sizes = PyList::empty(py);
    for p in parsed {
        let headers = PyList::empty(py);
        let mut header_size: i64 = 0;
        for (key, v) in &p.headers {
            header_size += key.len() as i64 + size_of(*v).max(0);
            let pair = PyTuple::new(py, [PyString::new(py, key).into_any(), bytes_or_none(*v)])?;
            headers.append(pair)?;
        }
        if p.headers.is_empty() {
            header_size = -1;
        }
        let args = PyTuple::new(
            py,
            [
                info.topic.clone(),
                info.partition.clone(),
                info.leader_epoch.clone(),
                PyInt::new(py, p.offset).into_any(),
                PyInt::new(py, p.timestamp).into_any(),
                timestamp_type.clone(),
                bytes_or_none(p.key),
                bytes_or_none(p.value),
                headers.into_any(),
                py.None().into_bound(py),
                PyInt::new(py, size_of(p.key)).into_any(),
                PyInt::new(py, size_of(p.value)).into_any(),
                PyInt::new(py, header_size).into_any(),
            ],
        )?;
        records.append(info.record_cls.call1(args)?)?;
        sizes.append(p.size)?;
    }
    Ok(Some((records, sizes)))
}
