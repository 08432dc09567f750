//! A query as re-ask detection reads it: `normalize_query` of
//! `collector/export/text.py` for ASCII text (byte-wise; any other text is
//! normalised by that Python function, so Unicode folding has one definition),
//! and the shingle signature of `collector/feedback/sessions.py` (`_bit`).

const SIGNATURE_LOG2: u32 = 10;
pub(crate) const SIGNATURE_WORDS: usize = (1 << SIGNATURE_LOG2) / 64;
const MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15; // as _MULTIPLIER in sessions.py

/// `normalize_query` of an ASCII text: lower case, every byte but `[A-Za-z0-9_]` a
/// separator, words joined by one space.
pub(crate) fn normalize_ascii(text: &[u8], out: &mut Vec<u8>) {
    out.clear();
    for word in text
        .split(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
        .filter(|w| !w.is_empty())
    {
        if !out.is_empty() {
            out.push(b' ');
        }
        out.extend(word.iter().map(u8::to_ascii_lowercase));
    }
}

/// The signature of shingle codes: bit `_bit(code)` set for each (`_bit` in sessions.py).
pub(crate) fn signature_of(codes: &[u64]) -> [u64; SIGNATURE_WORDS] {
    let mut signature = [0u64; SIGNATURE_WORDS];
    for &c in codes {
        let bit = (c.wrapping_mul(MULTIPLIER) >> (64 - SIGNATURE_LOG2)) as usize;
        signature[bit / 64] |= 1 << (bit % 64);
    }
    signature
}
