//! JSON text exactly as orjson writes it (the collector encodes `rag_traces`
//! rows with orjson; rows encoded here must be byte-identical so either path
//! stores the same values, the `attributes` JSON text included).
//!
//! orjson escapes `"`, `\` and control characters (`\b \t \n \f \r` short,
//! the rest as `\u00xx`) and nothing else; it writes floats as Python's
//! `repr` does (shortest round-trip digits) except that the exponent has no
//! zero padding and numbers from 1e-5 up to 1e-4 stay in positional notation;
//! NaN and the infinities become `null`. tests/test_fastpath_native.py checks
//! both against orjson itself.

const HEX: &[u8; 16] = b"0123456789abcdef";

/// A mask with the high bit set in each byte of `w` that must be escaped (`"`, `\\`, or
/// below 0x20). Bytes above the first match may be flagged spuriously (borrows); the lowest
/// flagged byte is always a real match, which is all the caller uses.
#[inline]
fn escape_mask(w: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let below_space = w.wrapping_sub(ONES * 0x20) & !w & HIGH;
    below_space | zero_byte(w ^ (ONES * b'"' as u64)) | zero_byte(w ^ (ONES * b'\\' as u64))
}

#[inline]
fn needs_escape(c: u8) -> bool {
    c < 0x20 || c == b'"' || c == b'\\'
}

/// Appends `s` as a JSON string literal.
pub fn string(out: &mut Vec<u8>, s: &str) {
    let b = s.as_bytes();
    let n = b.len();
    out.reserve(n + 2);
    out.push(b'"');
    let mut start = 0;
    let mut i = 0;
    loop {
        // Find the next byte to escape, eight bytes at a time: most text has none.
        while i + 8 <= n {
            let mut w = [0u8; 8];
            w.copy_from_slice(&b[i..i + 8]);
            let m = escape_mask(u64::from_le_bytes(w));
            if m != 0 {
                i += (m.trailing_zeros() / 8) as usize;
                break;
            }
            i += 8;
        }
        while i < n && !needs_escape(b[i]) {
            i += 1;
        }
        if i >= n {
            break;
        }
        out.extend_from_slice(&b[start..i]);
        let c = b[i];
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\r' => out.extend_from_slice(b"\\r"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            _ => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[(c >> 4) as usize],
                HEX[(c & 15) as usize],
            ]),
        }
        i += 1;
        start = i;
    }
    out.extend_from_slice(&b[start..]);
    out.push(b'"');
}

/// Appends a float (`null` for NaN and the infinities).
pub fn float(out: &mut Vec<u8>, f: f64) {
    if !f.is_finite() {
        out.extend_from_slice(b"null");
        return;
    }
    // ryu gives the shortest round-trip digits; only their layout is redone here.
    let mut buf = ryu::Buffer::new();
    let text = buf.format_finite(f).as_bytes();
    let (neg, text) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    let (mantissa, exp) = match text.iter().position(|&c| c == b'e') {
        Some(i) => (&text[..i], parse_exp(&text[i + 1..])),
        None => (text, 0),
    };
    // value = digits x 10^(exp - fraction digits); then drop leading and trailing zeros.
    let mut digits = [0u8; 32];
    let mut n = 0;
    let mut frac = 0i32;
    let mut seen_point = false;
    for &c in mantissa {
        if c == b'.' {
            seen_point = true;
        } else if n < digits.len() {
            digits[n] = c;
            n += 1;
            if seen_point {
                frac += 1;
            }
        }
    }
    let lead = digits[..n].iter().take_while(|&&c| c == b'0').count();
    let mut d = &digits[lead..n];
    let mut e = exp - frac;
    while d.len() > 1 && d[d.len() - 1] == b'0' {
        d = &d[..d.len() - 1];
        e += 1;
    }
    if d.is_empty() {
        d = b"0";
        e = 0;
    }
    let n = d.len() as i32;
    let x = if d == b"0" { 0 } else { e + n - 1 }; // d1.d2d3... x 10^x
    if neg {
        out.push(b'-');
    }
    if (-5..16).contains(&x) {
        if x >= 0 {
            if n <= x + 1 {
                out.extend_from_slice(d);
                out.extend(std::iter::repeat_n(b'0', (x + 1 - n) as usize));
                out.extend_from_slice(b".0");
            } else {
                out.extend_from_slice(&d[..(x + 1) as usize]);
                out.push(b'.');
                out.extend_from_slice(&d[(x + 1) as usize..]);
            }
        } else {
            out.extend_from_slice(b"0.");
            out.extend(std::iter::repeat_n(b'0', (-x - 1) as usize));
            out.extend_from_slice(d);
        }
    } else {
        out.push(d[0]);
        if n > 1 {
            out.push(b'.');
            out.extend_from_slice(&d[1..]);
        }
        out.push(b'e');
        out.push(if x < 0 { b'-' } else { b'+' });
        int(out, x.unsigned_abs() as i64);
    }
}

fn parse_exp(b: &[u8]) -> i32 {
    let (neg, b) = match b.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, b),
    };
    let v = b.iter().fold(0i32, |v, &c| v * 10 + (c - b'0') as i32);
    if neg {
        -v
    } else {
        v
    }
}

/// Appends an integer.
pub fn int(out: &mut Vec<u8>, i: i64) {
    let mut buf = [0u8; 20];
    let mut k = buf.len();
    let mut v = i.unsigned_abs();
    loop {
        k -= 1;
        buf[k] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if i < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&buf[k..]);
}
