//! Protobuf wire-format primitives with the acceptance rules of upb (the
//! Python protobuf backend that the pure-Python decoder uses), so that both
//! decoders accept and reject exactly the same bytes.
//!
//! Rules reproduced (each checked against upb by tests/test_otlp_native.py):
//! * varints take at most 10 bytes; bits beyond 64 are dropped;
//! * a tag takes at most 5 bytes and must fit in 32 bits; field number 0 and
//!   wire types 6 and 7 are corrupt at message level;
//! * a length takes at most 5 bytes, must be <= i32::MAX and fit the enclosing
//!   message (a string's only the record: see `Reader`);
//! * unknown groups are skipped with their own depth budget (the message depth
//!   left at that point), field number 0 is tolerated inside them, and a
//!   group that is not closed before its enclosing message ends is corrupt.

/// Why a record does not parse; the texts are upb's status strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireError {
    Corrupt,
    BadUtf8,
    MaxDepth,
}

impl WireError {
    /// The message upb's Python binding puts after the type name.
    pub fn upb_text(self) -> &'static str {
        match self {
            WireError::Corrupt => "Wire format was corrupt",
            WireError::BadUtf8 => "String field had bad UTF-8",
            WireError::MaxDepth => "Exceeded upb_DecodeOptions_MaxDepth",
        }
    }
}

pub type WResult<T> = Result<T, WireError>;

pub const WT_VARINT: u32 = 0;
pub const WT_FIXED64: u32 = 1;
pub const WT_LEN: u32 = 2;
pub const WT_START_GROUP: u32 = 3;
pub const WT_END_GROUP: u32 = 4;
pub const WT_FIXED32: u32 = 5;

/// upb's default nesting limit for sub-messages (the top-level message does not count).
pub const DEPTH_LIMIT: i32 = 100;

/// A cursor over one message: the whole record's bytes plus this message's end.
///
/// Keeping the whole record matters for upb parity in one corner: a string
/// field's length is checked against the end of the record, not of its
/// message, and its UTF-8 is checked before the overrun is noticed, so a
/// string that runs past its message reports bad UTF-8 when its bytes are
/// not UTF-8 and a corrupt wire format otherwise. A tag may likewise run past
/// its message's end (then only a string field can report anything else than
/// corrupt). Everything else must fit its message.
#[derive(Clone, Copy)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    end: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader {
            buf,
            pos: 0,
            end: buf.len(),
        }
    }

    #[inline]
    pub fn done(&self) -> bool {
        self.pos >= self.end
    }

    /// A varint of up to 10 bytes ending at or before `bound` (upb drops the bits beyond 64).
    #[inline]
    fn varint_to(&mut self, bound: usize) -> WResult<u64> {
        let buf = &self.buf[..bound];
        let mut pos = self.pos;
        let mut val: u64 = 0;
        let mut shift: u32 = 0;
        while shift < 70 {
            let b = *buf.get(pos).ok_or(WireError::Corrupt)?;
            pos += 1;
            // shift is at most 63 here; bits shifted past 64 are dropped, as in upb.
            val |= ((b & 0x7f) as u64) << shift;
            if b & 0x80 == 0 {
                self.pos = pos;
                return Ok(val);
            }
            shift += 7;
        }
        Err(WireError::Corrupt)
    }

    /// A varint field's value.
    #[inline]
    pub fn varint(&mut self) -> WResult<u64> {
        self.varint_to(self.end)
    }

    /// A varint of at most `max_bytes` bytes whose value is at most `max_val`.
    #[inline]
    fn short_varint(&mut self, bound: usize, max_bytes: usize, max_val: u64) -> WResult<u64> {
        let head = &self.buf[..bound];
        if let Some(&b) = head.get(self.pos) {
            if b & 0x80 == 0 {
                self.pos += 1;
                return Ok(b as u64);
            }
            // Two bytes (lengths 128..16383: most attribute values and spans) always fit the limits.
            if let Some(&c) = head.get(self.pos + 1) {
                if c & 0x80 == 0 {
                    self.pos += 2;
                    return Ok((b & 0x7f) as u64 | (c as u64) << 7);
                }
            }
        }
        let start = self.pos;
        let v = self.varint_to(bound)?;
        if self.pos - start > max_bytes || v > max_val {
            return Err(WireError::Corrupt);
        }
        Ok(v)
    }

    /// A field tag at message level: (field number, wire type). It may run past the
    /// message's end (not the record's); every read after it but a string's then fails.
    #[inline]
    pub fn tag(&mut self) -> WResult<(u32, u32)> {
        let t = self.short_varint(self.buf.len(), 5, u32::MAX as u64)? as u32;
        Ok((t >> 3, t & 7))
    }

    /// A length prefix read up to `bound`: (payload start, payload end).
    #[inline]
    fn length(&mut self, bound: usize) -> WResult<(usize, usize)> {
        let n = self.short_varint(bound, 5, i32::MAX as u64)? as usize;
        let start = self.pos;
        let end = start.checked_add(n).ok_or(WireError::Corrupt)?;
        if end > bound {
            return Err(WireError::Corrupt);
        }
        Ok((start, end))
    }

    /// The payload of a bytes field (or a skipped length-delimited field).
    #[inline]
    pub fn bytes(&mut self) -> WResult<&'a [u8]> {
        if self.pos > self.end {
            return Err(WireError::Corrupt);
        }
        let (start, end) = self.length(self.end)?;
        self.pos = end;
        Ok(&self.buf[start..end])
    }

    /// A sub-message: a reader over its payload, which must fit this message.
    #[inline]
    pub fn sub(&mut self) -> WResult<Reader<'a>> {
        if self.pos > self.end {
            return Err(WireError::Corrupt);
        }
        let (start, end) = self.length(self.end)?;
        self.pos = end;
        Ok(Reader {
            buf: self.buf,
            pos: start,
            end,
        })
    }

    /// A proto3 string field: UTF-8 checked (upb checks every string field it parses).
    /// Bounded by the record, then by the message (see the type's note).
    #[inline]
    pub fn string(&mut self) -> WResult<&'a str> {
        let (start, end) = self.length(self.buf.len())?;
        self.pos = end;
        let s = utf8(&self.buf[start..end])?;
        if end > self.end {
            return Err(WireError::Corrupt);
        }
        Ok(s)
    }

    /// The next `N` bytes of this message (a fixed-width field's payload).
    #[inline]
    fn fixed<const N: usize>(&mut self) -> WResult<[u8; N]> {
        let end = self.pos + N;
        let b = self.buf[..self.end]
            .get(self.pos..end)
            .ok_or(WireError::Corrupt)?;
        self.pos = end;
        let mut a = [0u8; N];
        a.copy_from_slice(b);
        Ok(a)
    }

    #[inline]
    pub fn fixed64(&mut self) -> WResult<u64> {
        Ok(u64::from_le_bytes(self.fixed()?))
    }

    #[inline]
    pub fn fixed32(&mut self) -> WResult<u32> {
        Ok(u32::from_le_bytes(self.fixed()?))
    }

    /// Skips an unknown field (or a known one with an unexpected wire type).
    /// `depth` is the message depth budget left here; groups consume it.
    pub fn skip(&mut self, field: u32, wire_type: u32, depth: i32) -> WResult<()> {
        if field == 0 {
            return Err(WireError::Corrupt);
        }
        self.skip_value(field, wire_type, depth)
    }

    fn skip_value(&mut self, field: u32, wire_type: u32, depth: i32) -> WResult<()> {
        match wire_type {
            WT_VARINT => self.varint().map(|_| ()),
            WT_FIXED64 => self.fixed64().map(|_| ()),
            WT_LEN => self.bytes().map(|_| ()),
            WT_FIXED32 => self.fixed32().map(|_| ()),
            WT_START_GROUP => self.skip_group(field, depth),
            _ => Err(WireError::Corrupt),
        }
    }

    /// Skips a group's contents up to and including its matching end tag.
    fn skip_group(&mut self, field: u32, depth: i32) -> WResult<()> {
        let depth = depth - 1;
        if depth < 0 {
            return Err(WireError::Corrupt);
        }
        while !self.done() {
            // Inside a group every read must fit the enclosing message.
            let t = self.short_varint(self.end, 5, u32::MAX as u64)? as u32;
            let (f, wt) = (t >> 3, t & 7);
            if wt == WT_END_GROUP {
                if f == field {
                    return Ok(());
                }
                return Err(WireError::Corrupt);
            }
            self.skip_value(f, wt, depth)?;
        }
        Err(WireError::Corrupt)
    }
}

/// Validates a proto3 string field's bytes as UTF-8 (upb checks every string field it parses).
#[inline]
pub fn utf8(b: &[u8]) -> WResult<&str> {
    if b.is_ascii() {
        // SAFETY: ASCII bytes are valid UTF-8.
        return Ok(unsafe { std::str::from_utf8_unchecked(b) });
    }
    std::str::from_utf8(b).map_err(|_| WireError::BadUtf8)
}
