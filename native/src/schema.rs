//! Parses an OTLP `TracesData` protobuf into borrowed Rust structures.
//!
//! Everything upb would parse is parsed (and every string field is UTF-8
//! checked, also the ones the collector ignores), with upb's message
//! semantics: scalars and strings last-wins, repeated fields appended, a
//! singular message field that occurs again is merged into the first
//! occurrence (parsing into the same target reproduces that), a oneof member
//! replaces another member, a known field with an unexpected wire type is
//! skipped as unknown. Only what the collector reads is kept; strings and
//! bytes stay slices of the input.

use std::ops::Range;

use crate::wire::{
    Reader, WResult, WireError, DEPTH_LIMIT, WT_FIXED32, WT_FIXED64, WT_LEN, WT_VARINT,
};

/// An `AnyValue`; `Unset` when no oneof member is present.
pub enum Value<'a> {
    Unset,
    Str(&'a str),
    Bool(bool),
    Int(i64),
    Double(f64),
    Array(Vec<Value<'a>>),
    KvList(Vec<KeyValue<'a>>),
    Bytes(&'a [u8]),
    /// `string_value_strindex` (profiles dictionary index): the Python decoder maps it to None.
    StrIndex,
}

pub struct KeyValue<'a> {
    pub key: &'a str,
    pub value: Value<'a>,
}

pub struct Event<'a> {
    pub time: u64,
    pub name: &'a str,
    /// Range in `TracesData::event_attrs`.
    pub attrs: Range<usize>,
}

pub struct Span<'a> {
    pub trace_id: &'a [u8],
    pub span_id: &'a [u8],
    pub parent_id: &'a [u8],
    pub name: &'a str,
    pub start: u64,
    pub end: u64,
    pub status: i32,
    /// Range in `TracesData::span_attrs`.
    pub attrs: Range<usize>,
    /// Range in `TracesData::events`.
    pub events: Range<usize>,
}

/// One `ResourceSpans`: its (merged) resource attributes and its spans' range in `TracesData::spans`.
pub struct Resource<'a> {
    pub attrs: Vec<KeyValue<'a>>,
    pub first_span: usize,
    pub end_span: usize,
}

impl<'a> Resource<'a> {
    /// The service name spans take from their resource: the first `service.name` attribute
    /// when it is a string, else "" (as the Python decoder reads `string_value`).
    pub fn service_name(&self) -> &'a str {
        match self.attrs.iter().find(|kv| kv.key == "service.name") {
            Some(KeyValue {
                value: Value::Str(s),
                ..
            }) => s,
            _ => "",
        }
    }
}

pub struct TracesData<'a> {
    pub resources: Vec<Resource<'a>>,
    pub spans: Vec<Span<'a>>,
    pub arena: Arena<'a>,
}

/// Attributes and events of all spans, one vector each instead of one per span: spans do
/// not nest, so a span's (or an event's) entries are contiguous even when fields interleave.
pub struct Arena<'a> {
    pub span_attrs: Vec<KeyValue<'a>>,
    pub events: Vec<Event<'a>>,
    pub event_attrs: Vec<KeyValue<'a>>,
}

/// Enters a sub-message: upb counts depth per nested message, the top level excluded.
#[inline]
fn enter(depth: i32) -> WResult<i32> {
    let d = depth - 1;
    if d < 0 {
        Err(WireError::MaxDepth)
    } else {
        Ok(d)
    }
}

/// Reads every field of one message: `known(reader, field, wire_type)` reads the fields it
/// knows and returns true; any other (an unknown field, or a known one with an unexpected wire
/// type) is skipped as unknown, as upb does. Tags are rejected where upb rejects them.
#[inline]
fn each_field<'a>(
    mut r: Reader<'a>,
    depth: i32,
    mut known: impl FnMut(&mut Reader<'a>, u32, u32) -> WResult<bool>,
) -> WResult<()> {
    while !r.done() {
        let (f, wt) = r.tag()?;
        if !known(&mut r, f, wt)? {
            r.skip(f, wt, depth)?;
        }
    }
    Ok(())
}

/// A sub-message field read by `parse`, one nesting level deeper than its message at `depth`.
#[inline]
fn nested<'a, T>(
    r: &mut Reader<'a>,
    depth: i32,
    parse: impl FnOnce(Reader<'a>, i32) -> WResult<T>,
) -> WResult<T> {
    let b = r.sub()?;
    parse(b, enter(depth)?)
}

/// A field read (so validated) and dropped.
#[inline]
fn dropped<T>(read: WResult<T>) -> WResult<bool> {
    read.map(|_| true)
}

/// What a field of a message that is validated and dropped holds.
#[derive(Clone, Copy)]
enum Dropped {
    Str,
    Bytes,
    Varint,
    Fixed32,
    KeyValue,
}

/// `EntityRef`: four string fields (two repeated).
const ENTITY_REF: &[(u32, u32, Dropped)] = &[
    (1, WT_LEN, Dropped::Str),
    (2, WT_LEN, Dropped::Str),
    (3, WT_LEN, Dropped::Str),
    (4, WT_LEN, Dropped::Str),
];
/// `InstrumentationScope`: name, version, attributes, dropped_attributes_count.
const SCOPE: &[(u32, u32, Dropped)] = &[
    (1, WT_LEN, Dropped::Str),
    (2, WT_LEN, Dropped::Str),
    (3, WT_LEN, Dropped::KeyValue),
    (4, WT_VARINT, Dropped::Varint),
];
/// `Span.Link`: trace and span id, trace state, attributes, dropped count, flags.
const LINK: &[(u32, u32, Dropped)] = &[
    (1, WT_LEN, Dropped::Bytes),
    (2, WT_LEN, Dropped::Bytes),
    (3, WT_LEN, Dropped::Str),
    (4, WT_LEN, Dropped::KeyValue),
    (5, WT_VARINT, Dropped::Varint),
    (6, WT_FIXED32, Dropped::Fixed32),
];

/// Validates a message the collector does not keep (`fields`: its known fields) and drops it.
fn check(r: Reader<'_>, depth: i32, fields: &[(u32, u32, Dropped)]) -> WResult<()> {
    each_field(r, depth, |r, f, wt| {
        match fields.iter().find(|(n, w, _)| *n == f && *w == wt) {
            None => Ok(false),
            Some((_, _, Dropped::Str)) => dropped(r.string()),
            Some((_, _, Dropped::Bytes)) => dropped(r.bytes()),
            Some((_, _, Dropped::Varint)) => dropped(r.varint()),
            Some((_, _, Dropped::Fixed32)) => dropped(r.fixed32()),
            Some((_, _, Dropped::KeyValue)) => dropped(nested(r, depth, parse_key_value)),
        }
    })
}

pub fn parse_traces_data(buf: &[u8]) -> WResult<TracesData<'_>> {
    let mut td = TracesData {
        resources: Vec::new(),
        spans: Vec::with_capacity(buf.len() / 1024 + 1),
        arena: Arena {
            span_attrs: Vec::with_capacity(buf.len() / 96 + 1),
            events: Vec::new(),
            event_attrs: Vec::new(),
        },
    };
    each_field(Reader::new(buf), DEPTH_LIMIT, |r, f, wt| match (f, wt) {
        (1, WT_LEN) => dropped(nested(r, DEPTH_LIMIT, |b, d| {
            parse_resource_spans(b, d, &mut td)
        })),
        _ => Ok(false),
    })?;
    Ok(td)
}

fn parse_resource_spans<'a>(r: Reader<'a>, depth: i32, td: &mut TracesData<'a>) -> WResult<()> {
    let mut attrs = Vec::new();
    let first_span = td.spans.len();
    each_field(r, depth, |r, f, wt| match (f, wt) {
        (1, WT_LEN) => dropped(nested(r, depth, |b, d| {
            parse_resource_into(b, d, &mut attrs)
        })),
        (2, WT_LEN) => dropped(nested(r, depth, |b, d| {
            parse_scope_spans(b, d, &mut td.spans, &mut td.arena)
        })),
        (3, WT_LEN) => dropped(r.string()),
        _ => Ok(false),
    })?;
    td.resources.push(Resource {
        attrs,
        first_span,
        end_span: td.spans.len(),
    });
    Ok(())
}

fn parse_resource_into<'a>(
    r: Reader<'a>,
    depth: i32,
    attrs: &mut Vec<KeyValue<'a>>,
) -> WResult<()> {
    each_field(r, depth, |r, f, wt| match (f, wt) {
        (1, WT_LEN) => dropped(nested(r, depth, parse_key_value).map(|kv| attrs.push(kv))),
        (2, WT_VARINT) => dropped(r.varint()),
        (3, WT_LEN) => dropped(nested(r, depth, |b, d| check(b, d, ENTITY_REF))),
        _ => Ok(false),
    })
}

fn parse_scope_spans<'a>(
    r: Reader<'a>,
    depth: i32,
    spans: &mut Vec<Span<'a>>,
    arena: &mut Arena<'a>,
) -> WResult<()> {
    each_field(r, depth, |r, f, wt| match (f, wt) {
        (1, WT_LEN) => dropped(nested(r, depth, |b, d| check(b, d, SCOPE))),
        (2, WT_LEN) => {
            dropped(nested(r, depth, |b, d| parse_span(b, d, arena)).map(|s| spans.push(s)))
        }
        (3, WT_LEN) => dropped(r.string()),
        _ => Ok(false),
    })
}

fn parse_span<'a>(r: Reader<'a>, depth: i32, arena: &mut Arena<'a>) -> WResult<Span<'a>> {
    let attrs0 = arena.span_attrs.len();
    let events0 = arena.events.len();
    let mut s = Span {
        trace_id: &[],
        span_id: &[],
        parent_id: &[],
        name: "",
        start: 0,
        end: 0,
        status: 0,
        attrs: 0..0,
        events: 0..0,
    };
    each_field(r, depth, |r, f, wt| {
        match (f, wt) {
            (1, WT_LEN) => s.trace_id = r.bytes()?,
            (2, WT_LEN) => s.span_id = r.bytes()?,
            (4, WT_LEN) => s.parent_id = r.bytes()?,
            (5, WT_LEN) => s.name = r.string()?,
            (7, WT_FIXED64) => s.start = r.fixed64()?,
            (8, WT_FIXED64) => s.end = r.fixed64()?,
            (9, WT_LEN) => arena.span_attrs.push(nested(r, depth, parse_key_value)?),
            (11, WT_LEN) => {
                let e = nested(r, depth, |b, d| parse_event(b, d, &mut arena.event_attrs))?;
                arena.events.push(e);
            }
            (15, WT_LEN) => s.status = nested(r, depth, |b, d| parse_status(b, d, s.status))?,
            // trace_state, kind, dropped counts, links, flags: validated and dropped.
            (3, WT_LEN) => return dropped(r.string()),
            (6 | 10 | 12 | 14, WT_VARINT) => return dropped(r.varint()),
            (13, WT_LEN) => return dropped(nested(r, depth, |b, d| check(b, d, LINK))),
            (16, WT_FIXED32) => return dropped(r.fixed32()),
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    s.attrs = attrs0..arena.span_attrs.len();
    s.events = events0..arena.events.len();
    Ok(s)
}

/// `Status`, merged into the code of an earlier occurrence (the message is validated and dropped).
fn parse_status(r: Reader<'_>, depth: i32, mut code: i32) -> WResult<i32> {
    each_field(r, depth, |r, f, wt| match (f, wt) {
        (2, WT_LEN) => dropped(r.string()),
        // An open proto3 enum: any int32, the varint truncated to 32 bits.
        (3, WT_VARINT) => dropped(r.varint().map(|v| code = v as u32 as i32)),
        _ => Ok(false),
    })?;
    Ok(code)
}

fn parse_event<'a>(r: Reader<'a>, depth: i32, attrs: &mut Vec<KeyValue<'a>>) -> WResult<Event<'a>> {
    let attrs0 = attrs.len();
    let (mut time, mut name) = (0, "");
    each_field(r, depth, |r, f, wt| match (f, wt) {
        (1, WT_FIXED64) => dropped(r.fixed64().map(|t| time = t)),
        (2, WT_LEN) => dropped(r.string().map(|n| name = n)),
        (3, WT_LEN) => dropped(nested(r, depth, parse_key_value).map(|kv| attrs.push(kv))),
        (4, WT_VARINT) => dropped(r.varint()),
        _ => Ok(false),
    })?;
    Ok(Event {
        time,
        name,
        attrs: attrs0..attrs.len(),
    })
}

fn parse_key_value(r: Reader<'_>, depth: i32) -> WResult<KeyValue<'_>> {
    let mut kv = KeyValue {
        key: "",
        value: Value::Unset,
    };
    each_field(r, depth, |r, f, wt| match (f, wt) {
        (1, WT_LEN) => dropped(r.string().map(|k| kv.key = k)),
        (2, WT_LEN) => dropped(nested(r, depth, |b, d| {
            parse_any_value_into(b, d, &mut kv.value)
        })),
        (3, WT_VARINT) => dropped(r.varint()),
        _ => Ok(false),
    })?;
    Ok(kv)
}

/// Parses (merges) one occurrence of an `AnyValue` into `v`.
fn parse_any_value_into<'a>(r: Reader<'a>, depth: i32, v: &mut Value<'a>) -> WResult<()> {
    each_field(r, depth, |r, f, wt| {
        *v = match (f, wt) {
            (1, WT_LEN) => Value::Str(r.string()?),
            (2, WT_VARINT) => Value::Bool(r.varint()? != 0),
            (3, WT_VARINT) => Value::Int(r.varint()? as i64),
            (4, WT_FIXED64) => Value::Double(f64::from_bits(r.fixed64()?)),
            (7, WT_LEN) => Value::Bytes(r.bytes()?),
            (8, WT_VARINT) => {
                r.varint()?;
                Value::StrIndex
            }
            // The same oneof member again merges (values appended); another member is replaced.
            (5, WT_LEN) => {
                let mut items = match std::mem::replace(v, Value::Unset) {
                    Value::Array(items) => items,
                    _ => Vec::new(),
                };
                nested(r, depth, |b, d| {
                    each_repeated(b, d, |b, d| {
                        let mut item = Value::Unset;
                        parse_any_value_into(b, d, &mut item)?;
                        items.push(item);
                        Ok(())
                    })
                })?;
                Value::Array(items)
            }
            (6, WT_LEN) => {
                let mut items = match std::mem::replace(v, Value::Unset) {
                    Value::KvList(items) => items,
                    _ => Vec::new(),
                };
                nested(r, depth, |b, d| {
                    each_repeated(b, d, |b, d| parse_key_value(b, d).map(|kv| items.push(kv)))
                })?;
                Value::KvList(items)
            }
            _ => return Ok(false),
        };
        Ok(true)
    })
}

/// `ArrayValue` / `KeyValueList`: field 1 repeated, each occurrence a sub-message for `item`.
fn each_repeated<'a>(
    r: Reader<'a>,
    depth: i32,
    mut item: impl FnMut(Reader<'a>, i32) -> WResult<()>,
) -> WResult<()> {
    each_field(r, depth, |r, f, wt| match (f, wt) {
        (1, WT_LEN) => dropped(nested(r, depth, &mut item)),
        _ => Ok(false),
    })
}
