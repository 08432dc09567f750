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

/// Reads the next tag, rejecting what upb rejects at message level.
#[inline]
fn next_tag(r: &mut Reader) -> WResult<(u32, u32)> {
    r.tag()
}

pub fn parse_traces_data(buf: &[u8]) -> WResult<TracesData<'_>> {
    let mut r = Reader::new(buf);
    let mut td = TracesData {
        resources: Vec::new(),
        spans: Vec::with_capacity(buf.len() / 1024 + 1),
        arena: Arena {
            span_attrs: Vec::with_capacity(buf.len() / 96 + 1),
            events: Vec::new(),
            event_attrs: Vec::new(),
        },
    };
    let depth = DEPTH_LIMIT;
    while !r.done() {
        let (f, wt) = next_tag(&mut r)?;
        if f == 1 && wt == WT_LEN {
            let b = r.sub()?;
            let d = enter(depth)?;
            parse_resource_spans(b, d, &mut td)?;
        } else {
            r.skip(f, wt, depth)?;
        }
    }
    Ok(td)
}

fn parse_resource_spans<'a>(mut r: Reader<'a>, depth: i32, td: &mut TracesData<'a>) -> WResult<()> {
    let mut res = Resource {
        attrs: Vec::new(),
        first_span: td.spans.len(),
        end_span: 0,
    };
    while !r.done() {
        let (f, wt) = next_tag(&mut r)?;
        match (f, wt) {
            (1, WT_LEN) => {
                let b = r.sub()?;
                parse_resource_into(b, enter(depth)?, &mut res.attrs)?;
            }
            (2, WT_LEN) => {
                let b = r.sub()?;
                parse_scope_spans(b, enter(depth)?, &mut td.spans, &mut td.arena)?;
            }
            (3, WT_LEN) => {
                r.string()?;
            }
            _ => r.skip(f, wt, depth)?,
        }
    }
    res.end_span = td.spans.len();
    td.resources.push(res);
    Ok(())
}

fn parse_resource_into<'a>(
    mut r: Reader<'a>,
    depth: i32,
    attrs: &mut Vec<KeyValue<'a>>,
) -> WResult<()> {
    while !r.done() {
        let (f, wt) = next_tag(&mut r)?;
        match (f, wt) {
            (1, WT_LEN) => {
                let b = r.sub()?;
                attrs.push(parse_key_value(b, enter(depth)?)?);
            }
            (2, WT_VARINT) => {
                r.varint()?;
            }
            (3, WT_LEN) => {
                let b = r.sub()?;
                check_entity_ref(b, enter(depth)?)?;
            }
            _ => r.skip(f, wt, depth)?,
        }
    }
    Ok(())
}

/// `EntityRef`: four string fields (two repeated), validated and dropped.
fn check_entity_ref(mut r: Reader<'_>, depth: i32) -> WResult<()> {
    while !r.done() {
        let (f, wt) = next_tag(&mut r)?;
        match (f, wt) {
            (1..=4, WT_LEN) => {
                r.string()?;
            }
            _ => r.skip(f, wt, depth)?,
        }
    }
    Ok(())
}

fn parse_scope_spans<'a>(
    mut r: Reader<'a>,
    depth: i32,
    spans: &mut Vec<Span<'a>>,
    arena: &mut Arena<'a>,
) -> WResult<()> {
    while !r.done() {
        let (f, wt) = next_tag(&mut r)?;
        match (f, wt) {
            (1, WT_LEN) => {
                let b = r.sub()?;
                check_scope(b, enter(depth)?)?;
            }
            (2, WT_LEN) => {
                let b = r.sub()?;
                spans.push(parse_span(b, enter(depth)?, arena)?);
            }
            (3, WT_LEN) => {
                r.string()?;
            }
            _ => r.skip(f, wt, depth)?,
        }
    }
    Ok(())
}

/// `InstrumentationScope`: validated and dropped.
fn check_scope(mut r: Reader<'_>, depth: i32) -> WResult<()> {
    while !r.done() {
        let (f, wt) = next_tag(&mut r)?;
        match (f, wt) {
            (1 | 2, WT_LEN) => {
                r.string()?;
            }
            (3, WT_LEN) => {
                let b = r.sub()?;
                parse_key_value(b, enter(depth)?)?;
            }
            (4, WT_VARINT) => {
                r.varint()?;
            }
            _ => r.skip(f, wt, depth)?,
        }
    }
    Ok(())
}

fn parse_span<'a>(mut r: Reader<'a>, depth: i32, arena: &mut Arena<'a>) -> WResult<Span<'a>> {
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
    while !r.done() {
        let (f, wt) = next_tag(&mut r)?;
        match (f, wt) {
            (1, WT_LEN) => s.trace_id = r.bytes()?,
            (2, WT_LEN) => s.span_id = r.bytes()?,
            (3, WT_LEN) => {
                r.string()?;
            }
            (4, WT_LEN) => s.parent_id = r.bytes()?,
            (5, WT_LEN) => s.name = r.string()?,
            (6 | 10 | 12 | 14, WT_VARINT) => {
                r.varint()?;
            }
            (7, WT_FIXED64) => s.start = r.fixed64()?,
            (8, WT_FIXED64) => s.end = r.fixed64()?,
            (9, WT_LEN) => {
                let b = r.sub()?;
                arena.span_attrs.push(parse_key_value(b, enter(depth)?)?);
            }
            (11, WT_LEN) => {
                let b = r.sub()?;
                let e = parse_event(b, enter(depth)?, &mut arena.event_attrs)?;
                arena.events.push(e);
            }
            (13, WT_LEN) => {
                let b = r.sub()?;
                check_link(b, enter(depth)?)?;
            }
            (15, WT_LEN) => {
                let b = r.sub()?;
                parse_status_into(b, enter(depth)?, &mut s.status)?;
            }
            (16, WT_FIXED32) => {
                r.fixed32()?;
            }
            _ => r.skip(f, wt, depth)?,
        }
    }
    s.attrs = attrs0..arena.span_attrs.len();
    s.events = events0..arena.events.len();
    Ok(s)
}

fn parse_status_into(mut r: Reader<'_>, depth: i32, code: &mut i32) -> WResult<()> {
    while !r.done() {
        let (f, wt) = next_tag(&mut r)?;
        match (f, wt) {
            (2, WT_LEN) => {
                r.string()?;
            }
            // An open proto3 enum: any int32, the varint truncated to 32 bits.
            (3, WT_VARINT) => *code = r.varint()? as u32 as i32,
            _ => r.skip(f, wt, depth)?,
        }
    }
    Ok(())
}

fn parse_event<'a>(
    mut r: Reader<'a>,
    depth: i32,
    attrs: &mut Vec<KeyValue<'a>>,
) -> WResult<Event<'a>> {
    let attrs0 = attrs.len();
    let mut e = Event {
        time: 0,
        name: "",
        attrs: 0..0,
    };
    while !r.done() {
        let (f, wt) = next_tag(&mut r)?;
        match (f, wt) {
            (1, WT_FIXED64) => e.time = r.fixed64()?,
            (2, WT_LEN) => e.name = r.string()?,
            (3, WT_LEN) => {
                let b = r.sub()?;
                attrs.push(parse_key_value(b, enter(depth)?)?);
            }
            (4, WT_VARINT) => {
                r.varint()?;
            }
            _ => r.skip(f, wt, depth)?,
        }
    }
    e.attrs = attrs0..attrs.len();
    Ok(e)
}

/// `Span.Link`: validated and dropped.
fn check_link(mut r: Reader<'_>, depth: i32) -> WResult<()> {
    while !r.done() {
        let (f, wt) = next_tag(&mut r)?;
        match (f, wt) {
            (1 | 2, WT_LEN) => {
                r.bytes()?;
            }
            (3, WT_LEN) => {
                r.string()?;
            }
            (4, WT_LEN) => {
                let b = r.sub()?;
                parse_key_value(b, enter(depth)?)?;
            }
            (5, WT_VARINT) => {
                r.varint()?;
            }
            (6, WT_FIXED32) => {
                r.fixed32()?;
            }
            _ => r.skip(f, wt, depth)?,
        }
    }
    Ok(())
}

fn parse_key_value(mut r: Reader<'_>, depth: i32) -> WResult<KeyValue<'_>> {
    let mut kv = KeyValue {
        key: "",
        value: Value::Unset,
    };
    while !r.done() {
        let (f, wt) = next_tag(&mut r)?;
        match (f, wt) {
            (1, WT_LEN) => kv.key = r.string()?,
            (2, WT_LEN) => {
                let b = r.sub()?;
                parse_any_value_into(b, enter(depth)?, &mut kv.value)?;
            }
            (3, WT_VARINT) => {
                r.varint()?;
            }
            _ => r.skip(f, wt, depth)?,
        }
    }
    Ok(kv)
}

/// Parses (merges) one occurrence of an `AnyValue` into `v`.
fn parse_any_value_into<'a>(mut r: Reader<'a>, depth: i32, v: &mut Value<'a>) -> WResult<()> {
    while !r.done() {
        let (f, wt) = next_tag(&mut r)?;
        match (f, wt) {
            (1, WT_LEN) => *v = Value::Str(r.string()?),
            (2, WT_VARINT) => *v = Value::Bool(r.varint()? != 0),
            (3, WT_VARINT) => *v = Value::Int(r.varint()? as i64),
            (4, WT_FIXED64) => *v = Value::Double(f64::from_bits(r.fixed64()?)),
            (5, WT_LEN) => {
                let b = r.sub()?;
                let d = enter(depth)?;
                // The same oneof member again merges (values appended); another member is replaced.
                if !matches!(v, Value::Array(_)) {
                    *v = Value::Array(Vec::new());
                }
                if let Value::Array(items) = v {
                    parse_array_into(b, d, items)?;
                }
            }
            (6, WT_LEN) => {
                let b = r.sub()?;
                let d = enter(depth)?;
                if !matches!(v, Value::KvList(_)) {
                    *v = Value::KvList(Vec::new());
                }
                if let Value::KvList(items) = v {
                    parse_kvlist_into(b, d, items)?;
                }
            }
            (7, WT_LEN) => *v = Value::Bytes(r.bytes()?),
            (8, WT_VARINT) => {
                r.varint()?;
                *v = Value::StrIndex;
            }
            _ => r.skip(f, wt, depth)?,
        }
    }
    Ok(())
}

fn parse_array_into<'a>(mut r: Reader<'a>, depth: i32, items: &mut Vec<Value<'a>>) -> WResult<()> {
    while !r.done() {
        let (f, wt) = next_tag(&mut r)?;
        if f == 1 && wt == WT_LEN {
            let b = r.sub()?;
            let mut v = Value::Unset;
            parse_any_value_into(b, enter(depth)?, &mut v)?;
            items.push(v);
        } else {
            r.skip(f, wt, depth)?;
        }
    }
    Ok(())
}

fn parse_kvlist_into<'a>(
    mut r: Reader<'a>,
    depth: i32,
    items: &mut Vec<KeyValue<'a>>,
) -> WResult<()> {
    while !r.done() {
        let (f, wt) = next_tag(&mut r)?;
        if f == 1 && wt == WT_LEN {
            let b = r.sub()?;
            items.push(parse_key_value(b, enter(depth)?)?);
        } else {
            r.skip(f, wt, depth)?;
        }
    }
    Ok(())
}
