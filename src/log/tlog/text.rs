//! Small strict text helpers shared by the formats (private to `tlog`).

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;

use super::error::TlogError;
use super::merkle::Hash;

/// Standard padded base64 (RFC 4648 section 4).
pub(super) fn b64_encode(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// Strict standard padded base64: the canonical encoding only (padding
/// required, no whitespace, zero trailing bits).
pub(super) fn b64_decode(s: &str) -> Option<Vec<u8>> {
    let bytes = STANDARD.decode(s).ok()?;
    (STANDARD.encode(&bytes) == s).then_some(bytes)
}

/// A 32-byte hash in base64 (exactly 44 characters).
pub(super) fn b64_decode_hash(s: &str) -> Option<Hash> {
    if s.len() != 44 {
        return None;
    }
    b64_decode(s)?.try_into().ok()
}

/// Lowercase hex.
pub(super) fn hex_encode(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

/// Strict lowercase hex of exactly `N` bytes.
pub(super) fn hex_decode<const N: usize>(s: &str) -> Option<[u8; N]> {
    fn nibble(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        }
    }
    let raw = s.as_bytes();
    if raw.len() != N * 2 {
        return None;
    }
    let mut out = [0u8; N];
    for (i, pair) in raw.chunks_exact(2).enumerate() {
        out[i] = (nibble(pair[0])? << 4) | nibble(pair[1])?;
    }
    Some(out)
}

/// True when `s` holds an ASCII control character other than newline
/// (signed-note: none below U+0020 but U+000A).
pub(super) fn has_control(s: &str) -> bool {
    s.bytes().any(|b| b < 0x20 && b != b'\n')
}

/// A key name: non-empty, at most `max` bytes, no Unicode white
/// space, no plus, no control character. `what` names it in the error.
pub(super) fn check_name(what: &'static str, s: &str, max: usize) -> Result<(), TlogError> {
    let problem = if s.is_empty() {
        "is empty"
    } else if s.len() > max {
        "is too long"
    } else if s.chars().any(char::is_whitespace) {
        "contains white space"
    } else if s.contains('+') {
        "contains a plus sign"
    } else if s.chars().any(char::is_control) {
        "contains a control character"
    } else {
        return Ok(());
    };
    Err(TlogError::Name { what, problem })
}

/// A checkpoint's origin line (C2SP tlog-checkpoint): non-empty, at most
/// `max` bytes, no control character. Spaces and plus signs are allowed:
/// C2SP only recommends an origin without them, and clients must not
/// assume one (`go.sum database tree` is a real origin).
pub(super) fn check_origin(s: &str, max: usize) -> Result<(), TlogError> {
    let problem = if s.is_empty() {
        "is empty"
    } else if s.len() > max {
        "is too long"
    } else if s.chars().any(char::is_control) {
        "contains a control character"
    } else {
        return Ok(());
    };
    Err(TlogError::Name {
        what: "origin",
        problem,
    })
}
