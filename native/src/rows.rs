//! `rag_traces` rows in ClickHouse's RowBinary format, read from `RagTrace` objects.
//!
//! `collector/storage/rows.py` gives the columns as a spec made from the
//! contract (`collector/contract.py` `COLUMNS`): per column a kind (the names
//! of `Kind::parse`), the trace attribute and, for an array, the attribute of
//! each item. The JSONCompactEachRow rows that rows.py makes in Python stay the
//! reference: a value those rows would write differently from a plain binary
//! value (a non-finite float in a non-nullable column, an integer out of its
//! column's range, a value of another type) raises here, and rows.py encodes
//! that batch as JSON instead. tests/test_rows_native.py checks that both
//! formats store the same rows.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};

use crate::boundary;

/// How a column's value is read and written.
#[derive(Clone, Copy)]
enum Kind {
    Text,             // String or LowCardinality(String): a str
    TimeNs,           // DateTime64(9): integer nanoseconds, 0 or more
    Float64,          // a finite float (or int)
    NullableFloat64,  // None or a float; a non-finite one is NULL, as orjson writes it
    UInt32,           // an int in range
    Int32,            // an int in range
    Int64,            // an int in range
    Flag,             // UInt8: 1 when the value is truthy
    Json,             // String: json_text(value) when truthy, else "{}"
    Topic,            // String: the topic given to encode_rows
    ArrayText,        // Array(String) of one attribute of each item; None is ""
    ArrayNullableF64, // Array(Nullable(Float64)) of one attribute of each item
    ArrayInt32,       // Array(Int32) of one attribute of each item
}

impl Kind {
    fn parse(name: &str) -> Option<Kind> {
        Some(match name {
            "string" => Kind::Text,
            "time_ns" => Kind::TimeNs,
            "float64" => Kind::Float64,
            "nullable_float64" => Kind::NullableFloat64,
            "uint32" => Kind::UInt32,
            "int32" => Kind::Int32,
            "int64" => Kind::Int64,
            "flag" => Kind::Flag,
            "json" => Kind::Json,
            "topic" => Kind::Topic,
            "array_string" => Kind::ArrayText,
            "array_nullable_float64" => Kind::ArrayNullableF64,
            "array_int32" => Kind::ArrayInt32,
            _ => return None,
        })
    }

    fn is_array(self) -> bool {
        matches!(
            self,
            Kind::ArrayText | Kind::ArrayNullableF64 | Kind::ArrayInt32
        )
    }
}

/// One column of the spec: its kind, the trace attribute, the item attribute (arrays).
struct Field<'py> {
    kind: Kind,
    attr: Bound<'py, PyString>,
    item: Bound<'py, PyString>,
}

fn parse_spec<'py>(spec: &Bound<'py, PyAny>) -> PyResult<Vec<Field<'py>>> {
    let mut fields = Vec::new();
    for entry in spec.try_iter()? {
        let entry = entry?;
        let entry = entry.cast::<PyTuple>()?;
        let name = entry.get_item(0)?;
        let name = name.cast::<PyString>()?;
        let kind = Kind::parse(name.to_str()?)
            .ok_or_else(|| PyValueError::new_err(format!("unknown row column kind {name}")))?;
        let attr = entry.get_item(1)?.cast_into::<PyString>()?;
        let item = entry.get_item(2)?.cast_into::<PyString>()?;
        if kind.is_array() && item.is_empty()? {
            return Err(PyValueError::new_err(format!(
                "array column {attr} names no item attribute"
            )));
        }
        fields.push(Field { kind, attr, item });
    }
    Ok(fields)
}

fn varint(out: &mut Vec<u8>, mut n: usize) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    varint(out, b.len());
    out.extend_from_slice(b);
}

/// A str's UTF-8; lone surrogates become '?', as the JSON rows' fallback encoder writes them.
fn put_str(out: &mut Vec<u8>, s: &Bound<'_, PyString>) -> PyResult<()> {
    match s.to_str() {
        Ok(text) => put_bytes(out, text.as_bytes()),
        Err(_) => {
            let raw = s.call_method1("encode", ("utf-8", "replace"))?;
            put_bytes(out, raw.cast::<PyBytes>()?.as_bytes());
        }
    }
    Ok(())
}

fn unencodable(what: &str, value: &Bound<'_, PyAny>) -> PyErr {
    let type_name = value
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".to_owned());
    PyTypeError::new_err(format!("{what}: no binary row value for a {type_name}"))
}

fn put_text(out: &mut Vec<u8>, value: &Bound<'_, PyAny>) -> PyResult<()> {
    match value.cast::<PyString>() {
        Ok(s) => put_str(out, s),
        Err(_) => Err(unencodable("string column", value)),
    }
}

fn finite(value: &Bound<'_, PyAny>) -> PyResult<Option<f64>> {
    let x: f64 = value.extract()?;
    Ok(x.is_finite().then_some(x))
}

fn put_nullable_f64(out: &mut Vec<u8>, value: &Bound<'_, PyAny>) -> PyResult<()> {
    let x = if value.is_none() {
        None
    } else {
        finite(value)?
    };
    match x {
        Some(x) => {
            out.push(0);
            out.extend_from_slice(&x.to_le_bytes());
        }
        None => out.push(1),
    }
    Ok(())
}

fn put_scalar(
    out: &mut Vec<u8>,
    kind: Kind,
    value: &Bound<'_, PyAny>,
    json_text: &Bound<'_, PyAny>,
) -> PyResult<()> {
    match kind {
        Kind::Text => put_text(out, value)?,
        Kind::TimeNs => {
            let ns: i64 = value.extract()?;
            if ns < 0 {
                return Err(PyValueError::new_err("a time before 1970"));
            }
            out.extend_from_slice(&ns.to_le_bytes());
        }
        Kind::Float64 => match finite(value)? {
            Some(x) => out.extend_from_slice(&x.to_le_bytes()),
            None => {
                return Err(PyValueError::new_err(
                    "a non-finite value in a Float64 column",
                ))
            }
        },
        Kind::NullableFloat64 => put_nullable_f64(out, value)?,
        Kind::UInt32 => out.extend_from_slice(&value.extract::<u32>()?.to_le_bytes()),
        Kind::Int32 => out.extend_from_slice(&value.extract::<i32>()?.to_le_bytes()),
        Kind::Int64 => out.extend_from_slice(&value.extract::<i64>()?.to_le_bytes()),
        Kind::Flag => out.push(u8::from(value.is_truthy()?)),
        Kind::Json => {
            if value.is_truthy()? {
                let text = json_text.call1((value,))?;
                put_bytes(out, text.cast::<PyBytes>()?.as_bytes());
            } else {
                put_bytes(out, b"{}");
            }
        }
        Kind::Topic | Kind::ArrayText | Kind::ArrayNullableF64 | Kind::ArrayInt32 => {
            unreachable!("not a scalar kind")
        }
    }
    Ok(())
}

fn put_array(out: &mut Vec<u8>, field: &Field<'_>, items: &Bound<'_, PyAny>) -> PyResult<()> {
    let items = items
        .cast::<PyList>()
        .map_err(|_| unencodable("array column", items))?;
    varint(out, items.len());
    for item in items.iter() {
        let value = item.getattr(&field.item)?;
        match field.kind {
            Kind::ArrayText => {
                if value.is_none() {
                    put_bytes(out, b"");
                } else {
                    put_text(out, &value)?;
                }
            }
            Kind::ArrayNullableF64 => put_nullable_f64(out, &value)?,
            Kind::ArrayInt32 => out.extend_from_slice(&value.extract::<i32>()?.to_le_bytes()),
            _ => unreachable!("not an array kind"),
        }
    }
    Ok(())
}

fn put_row(
    out: &mut Vec<u8>,
    trace: &Bound<'_, PyAny>,
    fields: &[Field<'_>],
    topic: &Bound<'_, PyString>,
    json_text: &Bound<'_, PyAny>,
) -> PyResult<()> {
    for field in fields {
        match field.kind {
            Kind::Topic => put_str(out, topic)?,
            kind if kind.is_array() => put_array(out, field, &trace.getattr(&field.attr)?)?,
            kind => put_scalar(out, kind, &trace.getattr(&field.attr)?, json_text)?,
        }
    }
    Ok(())
}

/// The RowBinary rows of `traces`, one per trace, the columns as `spec` gives them.
///
/// Raises TypeError, ValueError or OverflowError for a value the binary format
/// would not write as the JSON rows do (see the module documentation), `NativePanic`
/// when it panicked.
#[pyfunction]
pub fn encode_rows<'py>(
    py: Python<'py>,
    traces: &Bound<'py, PyAny>,
    spec: &Bound<'py, PyAny>,
    topic: &Bound<'py, PyString>,
    json_text: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    boundary::contained(boundary::ENCODE_ROWS, || {
        let fields = parse_spec(spec)?;
        let mut out = Vec::with_capacity(traces.len().unwrap_or(0) * 4096);
        for trace in traces.try_iter()? {
            put_row(&mut out, &trace?, &fields, topic, json_text)?;
        }
        boundary::injected_panic(boundary::ENCODE_ROWS);
        Ok(PyBytes::new(py, &out))
    })
}
