//! Exact decimal money and BitRouter's charge arithmetic.
//!
//! Rules: SETTLE-1 (observed buckets), SETTLE-2 (decimal charge, shared rates
//! add tokens before multiplying), SETTLE-3 (cache price precedence), SETTLE-5
//! (recompute with the provider's final rounding rule, never an epsilon).
//! The algorithm is `spec/bitrouter-formats.md` section 4, which describes
//! BitRouter's `metering/pricing.rs`.
//!
//! [`Dec`] is a self-contained exact decimal: an `i128` mantissa and a decimal
//! scale, always kept normalized so that equal values have equal
//! representations and identical canonical text. Every operation either
//! returns the exact result or a [`MoneyError`]; nothing rounds silently,
//! wraps or panics. The only rounding anywhere is the explicit
//! [`Dec::round_half_away_from_zero`] that BitRouter applies once to a total.
//! Binary floats appear only at the JSON boundary ([`Dec::from_json_f64`]).

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Largest number of significant decimal digits a [`Dec`] holds (the mantissa
/// is below 10^38 in magnitude, which fits an `i128`).
pub const DEC_MAX_SIGNIFICANT_DIGITS: u32 = 38;

/// Largest number of digits after the decimal point a [`Dec`] holds.
pub const DEC_MAX_SCALE_DIGITS: u32 = 28;

/// Longest number text [`Dec::parse`] reads. Every finite `f64` printed with
/// `{}` fits (the longest, the smallest subnormal, is 326 bytes).
pub const DEC_MAX_TEXT_BYTES: usize = 1024;

/// BitRouter clamps every usage bucket at this many tokens before pricing it
/// (`MAX_TRUSTED_TOKENS` in `metering/pricing.rs`).
pub const BUCKET_TOKENS_CLAMP: u64 = 10_000_000;

/// Unknown reason when no rate at all is configured (all four are `None`).
pub const REASON_PRICING_NOT_FOUND: &str = "pricing_not_found";

/// Invalid reason when the exact total cannot be formed or does not fit an
/// integer micro-USD `u64` (only absurd rates get there; BitRouter's name
/// for a non-finite total).
pub const REASON_INVALID_CHARGE_TOTAL: &str = "invalid_charge_total";

/// Exponent magnitude beyond which exponent digits stop being accumulated
/// while parsing (any non-zero value that far out is out of range anyway).
const EXPONENT_SATURATION_POWERS: i64 = 1_000_000_000;

/// 10^0 ..= 10^38 as `i128`.
const POW10: [i128; 39] = {
    let mut table = [1i128; 39];
    let mut i = 1;
    while i < 39 {
        table[i] = table[i - 1] * 10;
        i += 1;
    }
    table
};

/// Exclusive bound on a mantissa's magnitude: 10^[`DEC_MAX_SIGNIFICANT_DIGITS`].
const MANTISSA_LIMIT: u128 = POW10[DEC_MAX_SIGNIFICANT_DIGITS as usize] as u128;

/// Errors from parsing, exact arithmetic and the usage bucket identities.
/// Every message is lowercase and names the problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MoneyError {
    /// The number text is empty.
    #[error("empty number text")]
    Empty,
    /// The number text is longer than [`DEC_MAX_TEXT_BYTES`].
    #[error("number text is {len} bytes, longer than the limit of {DEC_MAX_TEXT_BYTES} bytes")]
    TooLong {
        /// Length of the rejected text in bytes.
        len: usize,
    },
    /// The text (or f64) is NaN.
    #[error("nan is not a number; money and rates must be finite")]
    NotANumber,
    /// The text (or f64) is an infinity.
    #[error("infinity is not allowed; money and rates must be finite")]
    Infinite,
    /// The text is not a number literal of the accepted grammar.
    #[error("invalid number text {text:?}: {problem}")]
    Syntax {
        /// The rejected text.
        text: String,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// The value needs more than [`DEC_MAX_SIGNIFICANT_DIGITS`] digits.
    #[error("number needs {digits} significant digits, more than the limit of {DEC_MAX_SIGNIFICANT_DIGITS}")]
    TooManyDigits {
        /// Digits the exact value needs.
        digits: u64,
    },
    /// The value needs more than [`DEC_MAX_SCALE_DIGITS`] decimal places.
    #[error("number needs {places} decimal places, more than the limit of {DEC_MAX_SCALE_DIGITS}")]
    TooManyDecimalPlaces {
        /// Decimal places the exact value needs.
        places: u64,
    },
    /// An arithmetic result does not fit a [`Dec`] exactly.
    #[error("decimal overflow in {op}: the exact result does not fit {DEC_MAX_SIGNIFICANT_DIGITS} significant digits and {DEC_MAX_SCALE_DIGITS} decimal places")]
    Overflow {
        /// The operation (`"addition"`, `"subtraction"`, `"multiplication"`).
        op: &'static str,
    },
    /// Serialized text that is a number but not in canonical form.
    #[error("non-canonical decimal text {text:?}; the canonical form is {canonical:?}")]
    NonCanonical {
        /// The rejected text.
        text: String,
        /// The canonical text of the same value.
        canonical: String,
    },
    /// A value that was required to be a whole non-negative `u64` is not.
    #[error("decimal {value} is not a u64: {problem}")]
    NotU64 {
        /// Canonical text of the value.
        value: String,
        /// `"negative"`, `"fractional"` or `"greater than u64::MAX"`.
        problem: &'static str,
    },
    /// A JSON value that should be a number is something else.
    #[error("expected a json number, found {found}")]
    NotAJsonNumber {
        /// The JSON type found.
        found: &'static str,
    },
    /// `prompt = uncached + cache_read + cache_write` does not hold.
    #[error("bucket identity prompt = uncached_input + cache_read + cache_write fails: prompt_tokens {prompt} != {uncached_input} + {cache_read} + {cache_write} = {sum}")]
    PromptIdentity {
        /// `prompt_tokens`.
        prompt: u64,
        /// `uncached_input_tokens`.
        uncached_input: u64,
        /// `cache_read_tokens`.
        cache_read: u64,
        /// `cache_write_tokens`.
        cache_write: u64,
        /// The exact sum of the three buckets.
        sum: u128,
    },
    /// `completion = output + reasoning` does not hold.
    #[error("bucket identity completion = output + reasoning fails: completion_tokens {completion} != {output} + {reasoning} = {sum}")]
    CompletionIdentity {
        /// `completion_tokens`.
        completion: u64,
        /// `output_tokens`.
        output: u64,
        /// `reasoning_tokens`.
        reasoning: u64,
        /// The exact sum of the two buckets.
        sum: u128,
    },
}

/// Which number grammar [`parse_text`] accepts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Grammar {
    /// RFC 8259 number: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
    Json,
    /// JSON plus TOML's leading `+` and `_` between two digits.
    JsonOrToml,
}

/// An exact decimal number for money (micro-USD) and rates (micro-USD per
/// token).
///
/// Range: at most [`DEC_MAX_SIGNIFICANT_DIGITS`] significant digits and at
/// most [`DEC_MAX_SCALE_DIGITS`] digits after the point. The representation
/// is normalized (no trailing fractional zeros, zero has scale 0, no negative
/// zero), so the derived `==` and `Hash` are value equality, and
/// [`Dec::canonical`] gives equal text exactly for equal values.
///
/// Serde: serialized as its canonical text (a string); deserialization accepts
/// only canonical text, so decode then re-encode gives identical bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Dec {
    /// Value = mantissa / 10^scale.
    mantissa: i128,
    /// Digits after the point, at most [`DEC_MAX_SCALE_DIGITS`].
    scale: u32,
}

impl Dec {
    /// 0, scale 0.
    pub const ZERO: Dec = Dec {
        mantissa: 0,
        scale: 0,
    };

    /// 1, scale 0.
    pub const ONE: Dec = Dec {
        mantissa: 1,
        scale: 0,
    };

    /// Normalize `mantissa / 10^scale` if it fits the bounds; `None` if not.
    fn normalized(mut mantissa: i128, mut scale: u32) -> Option<Dec> {
        while scale > 0 && mantissa % 10 == 0 {
            mantissa /= 10;
            scale -= 1;
        }
        if mantissa == 0 {
            return Some(Dec::ZERO);
        }
        if scale > DEC_MAX_SCALE_DIGITS || mantissa.unsigned_abs() >= MANTISSA_LIMIT {
            return None;
        }
        Some(Dec { mantissa, scale })
    }

    /// The exact value `mantissa / 10^scale`, normalized.
    ///
    /// Errors when the value needs more than [`DEC_MAX_SIGNIFICANT_DIGITS`]
    /// significant digits or more than [`DEC_MAX_SCALE_DIGITS`] decimal places
    /// (trailing zeros are removed first, so `from_parts(8400, 4)` is 0.84).
    pub fn from_parts(mantissa: i128, scale: u32) -> Result<Dec, MoneyError> {
        let mut m = mantissa;
        let mut s = scale;
        while s > 0 && m % 10 == 0 {
            m /= 10;
            s -= 1;
        }
        if m == 0 {
            return Ok(Dec::ZERO);
        }
        if s > DEC_MAX_SCALE_DIGITS {
            return Err(MoneyError::TooManyDecimalPlaces {
                places: u64::from(s),
            });
        }
        if m.unsigned_abs() >= MANTISSA_LIMIT {
            return Err(MoneyError::TooManyDigits {
                digits: u64::from(decimal_digits(m.unsigned_abs())),
            });
        }
        Ok(Dec {
            mantissa: m,
            scale: s,
        })
    }

    /// The normalized mantissa (value = mantissa / 10^scale).
    pub fn mantissa(&self) -> i128 {
        self.mantissa
    }

    /// The normalized scale: digits after the point, 0 for whole numbers.
    pub fn scale(&self) -> u32 {
        self.scale
    }

    /// Parse a JSON or TOML number literal given as text.
    ///
    /// Accepted: the JSON number grammar (`0.84`, `3.99`, `1`, `1.0`, `-2`,
    /// `1e-6`, `2.5E+3`; exponents are supported and expanded exactly), plus
    /// two TOML extensions: a leading `+` and `_` between two digits
    /// (`1_000.5`). The value is exact; it only has to fit the bounds of
    /// [`Dec`]. `-0` is zero.
    ///
    /// Rejected, each with its own message: empty text, NaN (`nan`, `NaN`),
    /// infinities (`inf`, `-inf`, `Infinity`), surrounding whitespace,
    /// leading zeros (`01`), a bare or trailing point (`.5`, `1.`), a missing
    /// exponent, hex/octal/binary, any other character, text longer than
    /// [`DEC_MAX_TEXT_BYTES`], and values beyond the digit/scale bounds.
    pub fn parse(text: &str) -> Result<Dec, MoneyError> {
        parse_text(text, Grammar::JsonOrToml)
    }

    /// Parse the exact text of a JSON number (RFC 8259 grammar only: no `+`,
    /// no `_`). Use this when the raw literal is available (for example
    /// `serde_json::Number::to_string()` or a hand-split JSON line); it is
    /// exact for any number of digits within the bounds of [`Dec`].
    pub fn from_json_number_text(text: &str) -> Result<Dec, MoneyError> {
        parse_text(text, Grammar::Json)
    }

    /// Convert an `f64` that `serde_json` parsed from a JSON number literal.
    ///
    /// Uses the shortest text that round-trips to the same `f64` (Rust's `{}`
    /// Display), so a literal such as `0.84` or `3.99` becomes exactly 0.84
    /// or 3.99, not the binary value 0.83999999999999996891... `-0.0` gives
    /// zero. NaN and infinities are rejected.
    ///
    /// Limit: an `f64` keeps only 15 to 17 significant digits. A literal
    /// with at most 15 significant digits (and within `f64` range) always
    /// comes back as itself; a literal with more digits may come back as a
    /// different, shorter decimal (for example
    /// `0.12345678901234567891` becomes `0.12345678901234568`). When the raw
    /// text is available use [`Dec::from_json_number_text`] instead.
    pub fn from_json_f64(x: f64) -> Result<Dec, MoneyError> {
        if x.is_nan() {
            return Err(MoneyError::NotANumber);
        }
        if x.is_infinite() {
            return Err(MoneyError::Infinite);
        }
        parse_text(&format!("{x}"), Grammar::Json)
    }

    /// Convert a `serde_json::Value` that must be a JSON number.
    ///
    /// Integers are exact. Other numbers go through the text `serde_json`
    /// holds: the exact literal when serde_json's `arbitrary_precision`
    /// feature is on, otherwise the shortest round-trip text of the parsed
    /// `f64`, with the same limit as [`Dec::from_json_f64`].
    pub fn from_json_value(value: &serde_json::Value) -> Result<Dec, MoneyError> {
        match value {
            serde_json::Value::Number(n) => parse_text(&n.to_string(), Grammar::Json),
            serde_json::Value::Null => Err(MoneyError::NotAJsonNumber { found: "null" }),
            serde_json::Value::Bool(_) => Err(MoneyError::NotAJsonNumber { found: "a boolean" }),
            serde_json::Value::String(_) => Err(MoneyError::NotAJsonNumber { found: "a string" }),
            serde_json::Value::Array(_) => Err(MoneyError::NotAJsonNumber { found: "an array" }),
            serde_json::Value::Object(_) => Err(MoneyError::NotAJsonNumber { found: "an object" }),
        }
    }

    /// Parse text that must already be canonical (as produced by
    /// [`Dec::canonical`]); this is what serde deserialization uses.
    /// `"0.840"`, `"1.0"`, `"-0"`, `"+1"` and `"1e3"` are rejected.
    pub fn from_canonical(text: &str) -> Result<Dec, MoneyError> {
        let value = parse_text(text, Grammar::Json)?;
        let canonical = value.canonical();
        if canonical != text {
            return Err(MoneyError::NonCanonical {
                text: text.to_owned(),
                canonical,
            });
        }
        Ok(value)
    }

    /// The canonical text: plain decimal notation, `-` only for negative
    /// values, no `+`, no exponent, no leading zeros except the single `0`
    /// before the point, no trailing fractional zeros and no point for whole
    /// numbers (`0.84`, `1`, `-2.5`, `0.000001`, `0`). Equal values give
    /// identical text, and [`Dec::parse`] of the text gives the value back.
    pub fn canonical(&self) -> String {
        let digits = self.mantissa.unsigned_abs().to_string();
        let mut out = String::with_capacity(digits.len() + self.scale as usize + 3);
        if self.mantissa < 0 {
            out.push('-');
        }
        let scale = self.scale as usize;
        if scale == 0 {
            out.push_str(&digits);
        } else if digits.len() > scale {
            let (int, frac) = digits.split_at(digits.len() - scale);
            out.push_str(int);
            out.push('.');
            out.push_str(frac);
        } else {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', scale - digits.len()));
            out.push_str(&digits);
        }
        out
    }

    /// True when the value is below zero.
    pub fn is_negative(&self) -> bool {
        self.mantissa < 0
    }

    /// True when the value is zero.
    pub fn is_zero(&self) -> bool {
        self.mantissa == 0
    }

    /// Both mantissas at the larger scale, or `None` on overflow.
    fn aligned(self, other: Dec) -> Option<(i128, i128, u32)> {
        let scale = self.scale.max(other.scale);
        let a = self
            .mantissa
            .checked_mul(POW10[(scale - self.scale) as usize])?;
        let b = other
            .mantissa
            .checked_mul(POW10[(scale - other.scale) as usize])?;
        Some((a, b, scale))
    }

    /// Exact `self + other`, or [`MoneyError::Overflow`].
    pub fn checked_add(self, other: Dec) -> Result<Dec, MoneyError> {
        let overflow = MoneyError::Overflow { op: "addition" };
        let (a, b, scale) = self.aligned(other).ok_or(overflow.clone())?;
        let sum = a.checked_add(b).ok_or(overflow.clone())?;
        Dec::normalized(sum, scale).ok_or(overflow)
    }

    /// Exact `self - other`, or [`MoneyError::Overflow`].
    pub fn checked_sub(self, other: Dec) -> Result<Dec, MoneyError> {
        let overflow = MoneyError::Overflow { op: "subtraction" };
        let (a, b, scale) = self.aligned(other).ok_or(overflow.clone())?;
        let difference = a.checked_sub(b).ok_or(overflow.clone())?;
        Dec::normalized(difference, scale).ok_or(overflow)
    }

    /// Exact `self * other`, or [`MoneyError::Overflow`] when the exact
    /// product needs more digits or decimal places than a [`Dec`] holds
    /// (it never rounds). Conservative: a product of two mantissas beyond
    /// `i128` is reported as overflow even in the rare case that removing
    /// trailing zeros would have made it fit.
    pub fn checked_mul(self, other: Dec) -> Result<Dec, MoneyError> {
        let overflow = MoneyError::Overflow {
            op: "multiplication",
        };
        let product = self
            .mantissa
            .checked_mul(other.mantissa)
            .ok_or(overflow.clone())?;
        Dec::normalized(product, self.scale + other.scale).ok_or(overflow)
    }

    /// Round to a whole number, halves away from zero (`0.5 -> 1`,
    /// `2.5 -> 3`, `-0.5 -> -1`, `0.49 -> 0`): `f64::round` semantics, which
    /// is BitRouter's final rounding rule, and decimal HALF_UP.
    pub fn round_half_away_from_zero(&self) -> Dec {
        if self.scale == 0 {
            return *self;
        }
        let unit = POW10[self.scale as usize];
        let quotient = self.mantissa / unit;
        let remainder = self.mantissa % unit;
        // |remainder| < 10^28, so doubling cannot overflow.
        let rounded = if remainder.unsigned_abs() * 2 >= unit.unsigned_abs() {
            quotient + self.mantissa.signum()
        } else {
            quotient
        };
        // scale >= 1 means |quotient| < 10^37, so the result is in range.
        Dec {
            mantissa: rounded,
            scale: 0,
        }
    }

    /// The value as a `u64`, if it is whole, non-negative and at most
    /// `u64::MAX`; otherwise [`MoneyError::NotU64`]. Never rounds.
    pub fn to_u64(&self) -> Result<u64, MoneyError> {
        let problem = if self.mantissa < 0 {
            "negative"
        } else if self.scale != 0 {
            "fractional"
        } else {
            match u64::try_from(self.mantissa) {
                Ok(value) => return Ok(value),
                Err(_) => "greater than u64::MAX",
            }
        };
        Err(MoneyError::NotU64 {
            value: self.canonical(),
            problem,
        })
    }
}

impl From<u64> for Dec {
    /// Exact: every `u64` has at most 20 digits.
    fn from(value: u64) -> Dec {
        Dec {
            mantissa: i128::from(value),
            scale: 0,
        }
    }
}

impl Default for Dec {
    /// Zero.
    fn default() -> Dec {
        Dec::ZERO
    }
}

impl Ord for Dec {
    /// Numeric order.
    fn cmp(&self, other: &Dec) -> Ordering {
        // Integer part, then the fractional part scaled to the maximum scale;
        // both truncate toward zero, so they carry the sign of the value and
        // neither can overflow (|fraction| < 10^scale).
        let key = |d: &Dec| {
            let unit = POW10[d.scale as usize];
            let fraction = (d.mantissa % unit) * POW10[(DEC_MAX_SCALE_DIGITS - d.scale) as usize];
            (d.mantissa / unit, fraction)
        };
        key(self).cmp(&key(other))
    }
}

impl PartialOrd for Dec {
    /// Numeric order.
    fn partial_cmp(&self, other: &Dec) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Dec {
    /// The canonical text.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.canonical())
    }
}

impl fmt::Debug for Dec {
    /// `Dec(<canonical text>)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Dec({})", self.canonical())
    }
}

impl FromStr for Dec {
    type Err = MoneyError;

    /// Same as [`Dec::parse`] (JSON or TOML literal, any exact form).
    fn from_str(text: &str) -> Result<Dec, MoneyError> {
        Dec::parse(text)
    }
}

impl Serialize for Dec {
    /// The canonical text, as a string.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.canonical())
    }
}

impl<'de> Deserialize<'de> for Dec {
    /// A string holding canonical text only (see [`Dec::from_canonical`]).
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Dec, D::Error> {
        struct CanonicalText;

        impl serde::de::Visitor<'_> for CanonicalText {
            type Value = Dec;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string holding a canonical decimal such as \"0.84\"")
            }

            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Dec, E> {
                Dec::from_canonical(text).map_err(E::custom)
            }
        }

        deserializer.deserialize_str(CanonicalText)
    }
}

/// Number of decimal digits of `n` (1 for zero).
fn decimal_digits(mut n: u128) -> u32 {
    let mut digits = 1;
    while n >= 10 {
        n /= 10;
        digits += 1;
    }
    digits
}

/// Digits of one part of a literal, with the grammar's `_` rule applied.
/// Returns the digit bytes and the index after the part.
fn scan_digits(
    bytes: &[u8],
    start: usize,
    grammar: Grammar,
) -> Result<(Vec<u8>, usize), &'static str> {
    let mut digits = Vec::new();
    let mut i = start;
    while i < bytes.len() {
        let b = bytes[i];
        if b.is_ascii_digit() {
            digits.push(b - b'0');
        } else if b == b'_' {
            if grammar == Grammar::Json {
                return Err("'_' digit separators are not json");
            }
            let before = i > start && bytes[i - 1].is_ascii_digit();
            let after = bytes.get(i + 1).is_some_and(u8::is_ascii_digit);
            if !(before && after) {
                return Err("'_' must sit between two digits");
            }
        } else {
            break;
        }
        i += 1;
    }
    Ok((digits, i))
}

/// A number literal split into its parts, before normalization.
struct Literal {
    negative: bool,
    int_digits: Vec<u8>,
    frac_digits: Vec<u8>,
    exponent: i64,
}

/// Parse a number literal of `grammar` exactly.
fn parse_text(text: &str, grammar: Grammar) -> Result<Dec, MoneyError> {
    refuse_special(text)?;
    let syntax = |problem: &'static str| MoneyError::Syntax {
        text: text.to_owned(),
        problem,
    };
    let literal = split_literal(text.as_bytes(), grammar).map_err(syntax)?;
    literal_to_dec(literal)
}

/// Empty, over-long, NaN and infinite texts.
fn refuse_special(text: &str) -> Result<(), MoneyError> {
    if text.is_empty() {
        return Err(MoneyError::Empty);
    }
    if text.len() > DEC_MAX_TEXT_BYTES {
        return Err(MoneyError::TooLong { len: text.len() });
    }
    let unsigned = text
        .strip_prefix(['-', '+'])
        .unwrap_or(text)
        .to_ascii_lowercase();
    match unsigned.as_str() {
        "nan" => Err(MoneyError::NotANumber),
        "inf" | "infinity" => Err(MoneyError::Infinite),
        _ => Ok(()),
    }
}

/// Sign, integer digits, fraction and exponent of a non-empty literal, or
/// the syntax problem.
fn split_literal(bytes: &[u8], grammar: Grammar) -> Result<Literal, &'static str> {
    let mut i = 0;
    let mut negative = false;
    match bytes[0] {
        b'-' => {
            negative = true;
            i = 1;
        }
        b'+' if grammar == Grammar::Json => return Err("a leading '+' is not json"),
        b'+' => i = 1,
        _ => {}
    }
    if bytes.get(i).is_some_and(u8::is_ascii_whitespace) || bytes[0].is_ascii_whitespace() {
        return Err("whitespace is not allowed");
    }
    let (int_digits, next) = scan_digits(bytes, i, grammar)?;
    if int_digits.is_empty() {
        return Err(if bytes.get(next) == Some(&b'.') {
            "missing digits before the decimal point"
        } else {
            "expected a digit"
        });
    }
    if int_digits.len() > 1 && int_digits[0] == 0 {
        return Err("leading zeros are not allowed");
    }
    if int_digits == [0] && matches!(bytes.get(next), Some(b'x' | b'o' | b'b')) {
        return Err("hex, octal and binary literals are not allowed");
    }
    i = next;
    let mut frac_digits = Vec::new();
    if bytes.get(i) == Some(&b'.') {
        let (digits, next) = scan_digits(bytes, i + 1, grammar)?;
        if digits.is_empty() {
            return Err("missing digits after the decimal point");
        }
        frac_digits = digits;
        i = next;
    }
    let (exponent, end) = scan_exponent(bytes, i, grammar)?;
    if let Some(&b) = bytes.get(end) {
        return Err(match b {
            b'.' => "more than one decimal point",
            b'e' | b'E' => "more than one exponent",
            b'-' | b'+' => "misplaced sign",
            b if b.is_ascii_whitespace() => "whitespace is not allowed",
            _ => "unexpected character",
        });
    }
    Ok(Literal {
        negative,
        int_digits,
        frac_digits,
        exponent,
    })
}

/// An optional exponent at `i` (saturating at `EXPONENT_SATURATION_POWERS`)
/// and the index after it.
fn scan_exponent(
    bytes: &[u8],
    mut i: usize,
    grammar: Grammar,
) -> Result<(i64, usize), &'static str> {
    if !matches!(bytes.get(i), Some(b'e' | b'E')) {
        return Ok((0, i));
    }
    i += 1;
    let mut exponent_negative = false;
    match bytes.get(i) {
        Some(b'-') => {
            exponent_negative = true;
            i += 1;
        }
        Some(b'+') => i += 1,
        _ => {}
    }
    let (digits, next) = scan_digits(bytes, i, grammar)?;
    if digits.is_empty() {
        return Err("missing exponent digits");
    }
    let mut exponent: i64 = 0;
    for d in digits {
        exponent = (exponent * 10 + i64::from(d)).min(EXPONENT_SATURATION_POWERS);
    }
    Ok((
        if exponent_negative {
            -exponent
        } else {
            exponent
        },
        next,
    ))
}

/// The exact decimal of a literal: value = digits * 10^-(frac_len - exponent),
/// normalized (no leading or trailing zeros), within the digit bounds.
fn literal_to_dec(literal: Literal) -> Result<Dec, MoneyError> {
    let mut digits: Vec<u8> = literal.int_digits;
    digits.extend_from_slice(&literal.frac_digits);
    let mut scale: i64 = literal.frac_digits.len() as i64 - literal.exponent;
    let Some(first_nonzero) = digits.iter().position(|&d| d != 0) else {
        return Ok(Dec::ZERO);
    };
    let digits = &digits[first_nonzero..];
    let last_nonzero = digits.iter().rposition(|&d| d != 0).unwrap_or(0);
    scale -= (digits.len() - 1 - last_nonzero) as i64;
    let digits = &digits[..=last_nonzero];
    let significant = digits.len() as i64 + if scale < 0 { -scale } else { 0 };
    if significant > i64::from(DEC_MAX_SIGNIFICANT_DIGITS) {
        return Err(MoneyError::TooManyDigits {
            digits: significant.unsigned_abs(),
        });
    }
    if scale > i64::from(DEC_MAX_SCALE_DIGITS) {
        return Err(MoneyError::TooManyDecimalPlaces {
            places: scale.unsigned_abs(),
        });
    }
    // At most 38 digits in total from here on, so nothing below overflows.
    let mut mantissa: i128 = 0;
    for &d in digits {
        mantissa = mantissa * 10 + i128::from(d);
    }
    if scale < 0 {
        mantissa *= POW10[(-scale) as usize];
        scale = 0;
    }
    if literal.negative {
        mantissa = -mantissa;
    }
    Ok(Dec {
        mantissa,
        scale: scale as u32,
    })
}

/// The five non-overlapping usage buckets of one request (token counts).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Buckets {
    /// Prompt tokens neither read from nor written to a cache.
    pub uncached_input_tokens: u64,
    /// Prompt tokens read from a cache.
    pub cache_read_tokens: u64,
    /// Prompt tokens written to a cache.
    pub cache_write_tokens: u64,
    /// Completion tokens that are not reasoning.
    pub output_tokens: u64,
    /// Completion tokens spent on reasoning (billed at the output rate).
    pub reasoning_tokens: u64,
}

/// Effective per-token rates in micro-USD per token (= USD per million
/// tokens). `None` is a missing rate, `Some(0)` is explicitly free.
/// Reasoning tokens are billed at `output`; there is no reasoning rate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Rates {
    /// Rate for `uncached_input_tokens`.
    pub uncached_input: Option<Dec>,
    /// Rate for `cache_read_tokens`.
    pub cache_read: Option<Dec>,
    /// Rate for `cache_write_tokens`.
    pub cache_write: Option<Dec>,
    /// Rate for `output_tokens` and `reasoning_tokens`.
    pub output: Option<Dec>,
}

/// Result of [`bitrouter_charge`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Charge {
    /// The charge in integer micro-USD.
    Computed {
        /// Total after the final half-away-from-zero rounding.
        charge_micro_usd: u64,
    },
    /// Evidence is missing: `pricing_not_found` or
    /// `missing_{uncached_input,cache_read,cache_write,output}_rate`.
    Unknown {
        /// BitRouter's `unknown_reason` value.
        reason: &'static str,
    },
    /// Evidence is invalid: `invalid_{uncached_input,cache_read,cache_write,output}_rate`
    /// for a negative rate, or `invalid_charge_total` when the exact total
    /// does not fit (BitRouter records these as status `unknown` with the
    /// same reason string).
    Invalid {
        /// BitRouter's `unknown_reason` value.
        reason: &'static str,
    },
}

/// BitRouter's charge for `buckets` at `rates` (formats doc section 4,
/// SETTLE-2), in exact decimal:
///
/// 1. All four rates `None`: unknown `pricing_not_found`.
/// 2. Buckets in order `[uncached, cache_read, cache_write, output,
///    reasoning]`; a zero bucket is skipped, so its rate (missing or not)
///    does not matter.
/// 3. A missing rate on a non-zero bucket: unknown `missing_<bucket>_rate`
///    (reasoning reports `missing_output_rate`); a negative one: invalid
///    `invalid_<bucket>_rate`. The first such bucket in order is reported.
/// 4. Each bucket is clamped at [`BUCKET_TOKENS_CLAMP`] tokens.
/// 5. Buckets with equal rates are grouped and their tokens added before
///    the one multiplication per group (first-seen order).
/// 6. The exact sum of `tokens x rate` over groups is rounded once, half
///    away from zero, to integer micro-USD.
///
/// An exact total that does not fit [`Dec`] or `u64` gives invalid
/// `invalid_charge_total`; nothing panics or wraps.
///
/// BitRouter itself computes in `f64` (groups keyed by identical f64 bits).
/// For rates written with at most 15 significant digits the groups are the
/// same, and the result is the same except when the exact total is a half
/// that BitRouter's binary sum misses: 2261 tokens at 19.4 plus 4215 at 3.34
/// is exactly 57941.5, so 57942 here, but 57941.49999999999 and so 57941 in
/// `f64`. SETTLE-2 requires the decimal result; such a receipt shows up as a
/// mismatch under SETTLE-5 rather than being silently accepted.
pub fn bitrouter_charge(b: &Buckets, r: &Rates) -> Charge {
    if r.uncached_input.is_none()
        && r.cache_read.is_none()
        && r.cache_write.is_none()
        && r.output.is_none()
    {
        return Charge::Unknown {
            reason: REASON_PRICING_NOT_FOUND,
        };
    }
    let ordered = [
        (
            b.uncached_input_tokens,
            r.uncached_input,
            "missing_uncached_input_rate",
            "invalid_uncached_input_rate",
        ),
        (
            b.cache_read_tokens,
            r.cache_read,
            "missing_cache_read_rate",
            "invalid_cache_read_rate",
        ),
        (
            b.cache_write_tokens,
            r.cache_write,
            "missing_cache_write_rate",
            "invalid_cache_write_rate",
        ),
        (
            b.output_tokens,
            r.output,
            "missing_output_rate",
            "invalid_output_rate",
        ),
        (
            b.reasoning_tokens,
            r.output,
            "missing_output_rate",
            "invalid_output_rate",
        ),
    ];
    let mut groups: Vec<(Dec, u64)> = Vec::with_capacity(ordered.len());
    for (tokens, rate, missing, invalid) in ordered {
        if tokens == 0 {
            continue;
        }
        let Some(rate) = rate else {
            return Charge::Unknown { reason: missing };
        };
        if rate.is_negative() {
            return Charge::Invalid { reason: invalid };
        }
        let tokens = tokens.min(BUCKET_TOKENS_CLAMP);
        match groups
            .iter_mut()
            .find(|(group_rate, _)| *group_rate == rate)
        {
            // At most 5 clamped buckets: the sum stays below 5 x 10^7.
            Some((_, group_tokens)) => *group_tokens += tokens,
            None => groups.push((rate, tokens)),
        }
    }
    let mut total = Dec::ZERO;
    for (rate, tokens) in groups {
        let Ok(sum) = Dec::from(tokens)
            .checked_mul(rate)
            .and_then(|product| total.checked_add(product))
        else {
            return Charge::Invalid {
                reason: REASON_INVALID_CHARGE_TOTAL,
            };
        };
        total = sum;
    }
    match total.round_half_away_from_zero().to_u64() {
        Ok(charge_micro_usd) => Charge::Computed { charge_micro_usd },
        Err(_) => Charge::Invalid {
            reason: REASON_INVALID_CHARGE_TOTAL,
        },
    }
}

/// SETTLE-3 price precedence for one cache rate (cache read or cache write):
/// the route's own explicit cache price `own` if present (even an invalid,
/// negative one: the charge then reports it invalid rather than falling
/// back); else the same route's `base_input` price, but only when the frozen
/// manifest declares that fallback (`fallback_declared`) and only if it is
/// valid (non-negative); else `None`, which prices as unknown.
///
/// BitRouter's code has no such fallback (formats doc section 4: it was only
/// a skill rule), so reproducing BitRouter means `fallback_declared = false`.
pub fn effective_cache_rate(
    own: Option<Dec>,
    base_input: Option<Dec>,
    fallback_declared: bool,
) -> Option<Dec> {
    match own {
        Some(rate) => Some(rate),
        None if fallback_declared => base_input.filter(|rate| !rate.is_negative()),
        None => None,
    }
}

/// The usage bucket identities (formats doc section 2; ingest, SETTLE-1):
/// `prompt = uncached_input + cache_read + cache_write` and
/// `completion = output + reasoning`. Sums are exact (no overflow). The
/// error names the identity that fails (prompt first) with all its numbers.
pub fn check_bucket_identities(
    prompt: u64,
    completion: u64,
    b: &Buckets,
) -> Result<(), MoneyError> {
    let prompt_sum = u128::from(b.uncached_input_tokens)
        + u128::from(b.cache_read_tokens)
        + u128::from(b.cache_write_tokens);
    if prompt_sum != u128::from(prompt) {
        return Err(MoneyError::PromptIdentity {
            prompt,
            uncached_input: b.uncached_input_tokens,
            cache_read: b.cache_read_tokens,
            cache_write: b.cache_write_tokens,
            sum: prompt_sum,
        });
    }
    let completion_sum = u128::from(b.output_tokens) + u128::from(b.reasoning_tokens);
    if completion_sum != u128::from(completion) {
        return Err(MoneyError::CompletionIdentity {
            completion,
            output: b.output_tokens,
            reasoning: b.reasoning_tokens,
            sum: completion_sum,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::Value;

    /// The receipts transcribed from BitRouter (see the fixtures README).
    const RECEIPTS_DIR: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/fixtures/bitrouter/test-inline/receipts"
    );

    fn d(text: &str) -> Dec {
        Dec::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn rates(u: &str, cr: &str, cw: &str, o: &str) -> Rates {
        Rates {
            uncached_input: Some(d(u)),
            cache_read: Some(d(cr)),
            cache_write: Some(d(cw)),
            output: Some(d(o)),
        }
    }

    fn computed(charge_micro_usd: u64) -> Charge {
        Charge::Computed { charge_micro_usd }
    }

    fn read_receipt(name: &str) -> Value {
        let path = format!("{RECEIPTS_DIR}/{name}");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    /// The five usage buckets of a receipt; the receipt format has i64
    /// buckets, so a negative one fails here.
    fn receipt_buckets(receipt: &Value) -> Buckets {
        let usage = &receipt["usage"];
        let bucket = |name: &str| {
            usage[name]
                .as_u64()
                .unwrap_or_else(|| panic!("usage.{name} is not a u64: {}", usage[name]))
        };
        Buckets {
            uncached_input_tokens: bucket("uncached_input_tokens"),
            cache_read_tokens: bucket("cache_read_tokens"),
            cache_write_tokens: bucket("cache_write_tokens"),
            output_tokens: bucket("output_tokens"),
            reasoning_tokens: bucket("reasoning_tokens"),
        }
    }

    // ---- the real receipts ----

    #[test]
    fn kimi_receipt_recomputes_to_its_final_charge() {
        // rule SETTLE-2, SETTLE-5 (receipt charge == recomputed charge, exactly)
        let receipt = read_receipt("computed_kimi_equal_rate_buckets.json");
        assert_eq!(receipt["state"], "computed");
        assert_eq!(receipt["provider_id"], "ambient");
        assert_eq!(receipt["model_id"], "moonshotai/kimi-k2.7-code");
        let buckets = receipt_buckets(&receipt);
        assert_eq!(
            buckets,
            Buckets {
                uncached_input_tokens: 1972,
                cache_read_tokens: 32832,
                cache_write_tokens: 0,
                output_tokens: 485,
                reasoning_tokens: 1,
            }
        );
        let final_charge = receipt["final_charge_micro_usd"].as_u64().unwrap();
        assert_eq!(final_charge, 31175);
        // ambient:moonshotai/kimi-k2.7-code=0.84,0.84,0.84,3.99
        let price = rates("0.84", "0.84", "0.84", "3.99");
        assert_eq!(bitrouter_charge(&buckets, &price), computed(final_charge));
        // The exact total is 34804 x 0.84 + 486 x 3.99 = 29235.36 + 1939.14
        // = 31174.50, an exact half that rounds away from zero.
        let exact = d("34804")
            .checked_mul(d("0.84"))
            .unwrap()
            .checked_add(d("486").checked_mul(d("3.99")).unwrap())
            .unwrap();
        assert_eq!(exact.canonical(), "31174.5");
        // Rounding anywhere but once at the end loses the half micro-USD:
        // per bucket 1656 + 27579 + 1935 + 4 = 31174, per rate group
        // 29235 + 1939 = 31174.
        let per_bucket: u64 = [
            ("1972", "0.84"),
            ("32832", "0.84"),
            ("485", "3.99"),
            ("1", "3.99"),
        ]
        .iter()
        .map(|(t, r)| {
            d(t).checked_mul(d(r))
                .unwrap()
                .round_half_away_from_zero()
                .to_u64()
                .unwrap()
        })
        .sum();
        assert_eq!(per_bucket, 31174);
        let per_group: u64 = [("34804", "0.84"), ("486", "3.99")]
            .iter()
            .map(|(t, r)| {
                d(t).checked_mul(d(r))
                    .unwrap()
                    .round_half_away_from_zero()
                    .to_u64()
                    .unwrap()
            })
            .sum();
        assert_eq!(per_group, 31174);
        // The usage row of the formats doc (section 2) carries the same
        // buckets with prompt 34804 and completion 486: both identities hold.
        check_bucket_identities(34804, 486, &buckets).unwrap();
    }

    #[test]
    fn computed_receipt_without_a_price_is_not_recomputable() {
        // rule SETTLE-4, SETTLE-5: the SDK receipt carries no price, so
        // nothing can be recomputed (BitRouter: authoritative_pricing_not_found)
        let receipt = read_receipt("computed.json");
        assert_eq!(receipt["state"], "computed");
        let buckets = receipt_buckets(&receipt);
        assert_eq!(
            buckets,
            Buckets {
                uncached_input_tokens: 2,
                cache_read_tokens: 3,
                cache_write_tokens: 5,
                output_tokens: 7,
                reasoning_tokens: 11,
            }
        );
        // present and >= 0 because the state is computed
        assert_eq!(receipt["final_charge_micro_usd"].as_u64(), Some(29));
        assert_eq!(
            bitrouter_charge(&buckets, &Rates::default()),
            Charge::Unknown {
                reason: REASON_PRICING_NOT_FOUND
            }
        );
        // A guessed price is a mismatch, never an epsilon: 1 each gives 28.
        assert_eq!(
            bitrouter_charge(&buckets, &rates("1", "1", "1", "1")),
            computed(28)
        );
        // A price that does reproduce 29 exists (2 + 3 + 5 at 1, 18 at 1 plus
        // a cache-write surcharge of 0.2 x 5 = 1); the ledger takes the price
        // from the frozen manifest, not from a search.
        assert_eq!(
            bitrouter_charge(&buckets, &rates("1", "1", "1.2", "1")),
            computed(29)
        );
        // The receipt has no prompt/completion totals, so the identities can
        // only be checked against the buckets' own sums.
        check_bucket_identities(10, 18, &buckets).unwrap();
    }

    #[test]
    fn not_charged_receipt_has_zero_usage_and_no_charge() {
        // rule SETTLE-4 (not_charged is accepted on the receipt, not imputed)
        let receipt = read_receipt("not_charged.json");
        assert_eq!(receipt["state"], "not_charged");
        assert!(receipt["final_charge_micro_usd"].is_null());
        assert!(receipt["provider_id"].is_null() && receipt["model_id"].is_null());
        let buckets = receipt_buckets(&receipt);
        assert_eq!(buckets, Buckets::default());
        check_bucket_identities(0, 0, &buckets).unwrap();
        // Zero buckets skip every rate, so any configured price gives 0 ...
        assert_eq!(
            bitrouter_charge(&buckets, &rates("0.84", "0.84", "0.84", "3.99")),
            computed(0)
        );
        let partial = Rates {
            output: Some(d("3.99")),
            ..Rates::default()
        };
        assert_eq!(bitrouter_charge(&buckets, &partial), computed(0));
        // ... and no price at all is still pricing_not_found.
        assert_eq!(
            bitrouter_charge(&buckets, &Rates::default()),
            Charge::Unknown {
                reason: REASON_PRICING_NOT_FOUND
            }
        );
    }

    // ---- grouping and the single final rounding ----

    #[test]
    fn shared_output_rate_groups_to_1985() {
        // rule SETTLE-2: 1137@0.84 + (213+45)@3.99 = 955.08 + 1029.42 = 1984.50 -> 1985
        let buckets = Buckets {
            uncached_input_tokens: 1137,
            output_tokens: 213,
            reasoning_tokens: 45,
            ..Buckets::default()
        };
        let price = rates("0.84", "0.84", "0.84", "3.99");
        assert_eq!(bitrouter_charge(&buckets, &price), computed(1985));

        let product = |t: &str, r: &str| d(t).checked_mul(d(r)).unwrap();
        let grouped = product("1137", "0.84")
            .checked_add(product("258", "3.99"))
            .unwrap();
        assert_eq!(grouped.canonical(), "1984.5");
        // Rounding each group's product separately gives 955 + 1029 = 1984.
        let per_group = product("1137", "0.84")
            .round_half_away_from_zero()
            .to_u64()
            .unwrap()
            + product("258", "3.99")
                .round_half_away_from_zero()
                .to_u64()
                .unwrap();
        assert_eq!(per_group, 1984);
        assert_ne!(per_group, 1985);
        // In exact decimal, multiplying 213 and 45 separately and summing is
        // the same 1984.50 (multiplication distributes exactly), and even
        // rounding per bucket happens to give 955 + 850 + 180 = 1985 here.
        let separate = product("1137", "0.84")
            .checked_add(product("213", "3.99"))
            .unwrap()
            .checked_add(product("45", "3.99"))
            .unwrap();
        assert_eq!(separate, grouped);
        let per_bucket: u64 = [
            product("1137", "0.84"),
            product("213", "3.99"),
            product("45", "3.99"),
        ]
        .iter()
        .map(|p| p.round_half_away_from_zero().to_u64().unwrap())
        .sum();
        assert_eq!(per_bucket, 1985);
    }

    #[test]
    fn upstream_f64_separate_multiplication_gives_1984() {
        // rule SETTLE-2 (why BitRouter groups): reference only, this test
        // reproduces BitRouter's binary-float arithmetic; the module never
        // uses f64 arithmetic. Separate f64 products sum to 1984.4999999999998,
        // grouping first gives 1984.5.
        let separate = 1137.0_f64 * 0.84 + 213.0 * 3.99 + 45.0 * 3.99;
        let grouped = 1137.0_f64 * 0.84 + 258.0 * 3.99;
        assert!(separate < 1984.5);
        assert_eq!(separate.round(), 1984.0);
        assert_eq!(grouped.round(), 1985.0);
    }

    #[test]
    fn exact_decimal_can_differ_from_upstream_f64_at_an_exact_half() {
        // rule SETTLE-2, SETTLE-5: decimal is the method's rule; BitRouter's
        // f64 sum can land just below an exact half even after grouping.
        // Reference only: the f64 lines reproduce BitRouter, not this module.
        let buckets = Buckets {
            uncached_input_tokens: 2261,
            output_tokens: 4215,
            ..Buckets::default()
        };
        let price = Rates {
            uncached_input: Some(d("19.4")),
            output: Some(d("3.34")),
            ..Rates::default()
        };
        // 2261 x 19.4 + 4215 x 3.34 = 43863.4 + 14078.1 = 57941.5 exactly
        assert_eq!(bitrouter_charge(&buckets, &price), computed(57942));
        let upstream = 2261.0_f64 * 19.4 + 4215.0 * 3.34;
        assert!(upstream < 57941.5);
        assert_eq!(upstream.round(), 57941.0);
    }

    #[test]
    fn equal_rates_are_grouped_across_input_and_output() {
        // rule SETTLE-2: groups are keyed by value, and 0.84 = 0.840 = 84e-2
        let buckets = Buckets {
            uncached_input_tokens: 1,
            cache_read_tokens: 1,
            cache_write_tokens: 0,
            output_tokens: 1,
            reasoning_tokens: 0,
        };
        let price = Rates {
            uncached_input: Some(d("0.5")),
            cache_read: Some(d("0.50")),
            cache_write: None,
            output: Some(d("5e-1")),
        };
        assert_eq!(bitrouter_charge(&buckets, &price), computed(2)); // 1.5 -> 2
    }

    // ---- rounding ----

    #[test]
    fn rounds_half_away_from_zero() {
        // rule SETTLE-5 (the provider's final rounding rule: f64::round)
        for (value, rounded) in [
            ("0.5", "1"),
            ("1.5", "2"),
            ("2.5", "3"),
            ("31174.5", "31175"),
            ("-0.5", "-1"),
            ("-2.5", "-3"),
            ("0.4999999999999999999999999999", "0"),
            ("0.5000000000000000000000000001", "1"),
            ("2.49", "2"),
            ("2.51", "3"),
            ("-0.49", "0"),
            ("-2.51", "-3"),
            ("7", "7"),
            ("0", "0"),
        ] {
            assert_eq!(d(value).round_half_away_from_zero(), d(rounded), "{value}");
        }
    }

    #[test]
    fn charge_rounds_half_away_from_zero_at_below_and_above_half() {
        // rule SETTLE-2, SETTLE-5
        let output_only = |tokens: u64, rate: &str| {
            let buckets = Buckets {
                output_tokens: tokens,
                ..Buckets::default()
            };
            let price = Rates {
                output: Some(d(rate)),
                ..Rates::default()
            };
            bitrouter_charge(&buckets, &price)
        };
        assert_eq!(output_only(1, "0.5"), computed(1)); // exactly .5
        assert_eq!(output_only(5, "0.5"), computed(3)); // 2.5 -> 3 (banker's would give 2)
        assert_eq!(output_only(1, "0.4999"), computed(0)); // below
        assert_eq!(output_only(1, "0.5001"), computed(1)); // above
        assert_eq!(output_only(3, "0.8333"), computed(2)); // 2.4999 -> 2
        assert_eq!(output_only(3, "0.8334"), computed(3)); // 2.5002 -> 3
    }

    // ---- missing, invalid, free and unconfigured prices ----

    #[test]
    fn zero_buckets_do_not_need_rates() {
        // rule SETTLE-1, SETTLE-2 (formats doc 4 step 1: zero buckets are skipped)
        let buckets = Buckets {
            uncached_input_tokens: 100,
            ..Buckets::default()
        };
        let price = Rates {
            uncached_input: Some(d("2")),
            ..Rates::default()
        };
        assert_eq!(bitrouter_charge(&buckets, &price), computed(200));
    }

    #[test]
    fn missing_rate_on_a_nonzero_bucket_is_unknown_naming_it() {
        // rule SETTLE-3 (else unknown), SETTLE-2
        let full = rates("2", "0.2", "2.5", "10");
        let cases = [
            (
                "missing_uncached_input_rate",
                Rates {
                    uncached_input: None,
                    ..full
                },
            ),
            (
                "missing_cache_read_rate",
                Rates {
                    cache_read: None,
                    ..full
                },
            ),
            (
                "missing_cache_write_rate",
                Rates {
                    cache_write: None,
                    ..full
                },
            ),
            (
                "missing_output_rate",
                Rates {
                    output: None,
                    ..full
                },
            ),
        ];
        let all = Buckets {
            uncached_input_tokens: 1,
            cache_read_tokens: 1,
            cache_write_tokens: 1,
            output_tokens: 1,
            reasoning_tokens: 1,
        };
        for (reason, price) in cases {
            assert_eq!(bitrouter_charge(&all, &price), Charge::Unknown { reason });
        }
        // reasoning alone is billed at the output rate
        let reasoning_only = Buckets {
            reasoning_tokens: 7,
            ..Buckets::default()
        };
        assert_eq!(
            bitrouter_charge(
                &reasoning_only,
                &Rates {
                    output: None,
                    ..full
                }
            ),
            Charge::Unknown {
                reason: "missing_output_rate"
            }
        );
        assert_eq!(bitrouter_charge(&reasoning_only, &full), computed(70));
        // the first bucket in order is named when several are missing
        let only_output = Rates {
            output: Some(d("1")),
            ..Rates::default()
        };
        assert_eq!(
            bitrouter_charge(&all, &only_output),
            Charge::Unknown {
                reason: "missing_uncached_input_rate"
            }
        );
    }

    #[test]
    fn negative_rate_is_invalid_naming_the_bucket() {
        // rule SETTLE-3 (never zero for an invalid price)
        let full = rates("2", "0.2", "2.5", "10");
        let all = Buckets {
            uncached_input_tokens: 1,
            cache_read_tokens: 1,
            cache_write_tokens: 1,
            output_tokens: 1,
            reasoning_tokens: 1,
        };
        let minus = Some(d("-0.01"));
        let cases = [
            (
                "invalid_uncached_input_rate",
                Rates {
                    uncached_input: minus,
                    ..full
                },
            ),
            (
                "invalid_cache_read_rate",
                Rates {
                    cache_read: minus,
                    ..full
                },
            ),
            (
                "invalid_cache_write_rate",
                Rates {
                    cache_write: minus,
                    ..full
                },
            ),
            (
                "invalid_output_rate",
                Rates {
                    output: minus,
                    ..full
                },
            ),
        ];
        for (reason, price) in cases {
            assert_eq!(bitrouter_charge(&all, &price), Charge::Invalid { reason });
        }
        // As in BitRouter, a zero bucket is skipped before its rate is read.
        let no_cache = Buckets {
            uncached_input_tokens: 1,
            ..Buckets::default()
        };
        assert_eq!(
            bitrouter_charge(
                &no_cache,
                &Rates {
                    cache_read: minus,
                    ..full
                }
            ),
            computed(2)
        );
    }

    #[test]
    fn all_none_is_pricing_not_found_and_explicit_zero_is_free() {
        // rule SETTLE-3, formats doc 4 (all-None price; explicit 0 means free)
        let some_usage = Buckets {
            uncached_input_tokens: 10,
            output_tokens: 5,
            ..Buckets::default()
        };
        assert_eq!(
            bitrouter_charge(&some_usage, &Rates::default()),
            Charge::Unknown {
                reason: "pricing_not_found"
            }
        );
        assert_eq!(
            bitrouter_charge(&some_usage, &rates("0", "0", "0", "0")),
            computed(0)
        );
        assert_eq!(
            bitrouter_charge(&some_usage, &rates("0", "9", "9", "0.0")),
            computed(0)
        );
    }

    #[test]
    fn buckets_clamp_at_ten_million_tokens() {
        // formats doc 4 step 3 (BUCKET_TOKENS_CLAMP), SETTLE-2
        assert_eq!(BUCKET_TOKENS_CLAMP, 10_000_000);
        let one = rates("1", "1", "1", "1");
        let uncached = |tokens: u64| Buckets {
            uncached_input_tokens: tokens,
            ..Buckets::default()
        };
        assert_eq!(
            bitrouter_charge(&uncached(9_999_999), &one),
            computed(9_999_999)
        );
        assert_eq!(
            bitrouter_charge(&uncached(10_000_000), &one),
            computed(10_000_000)
        );
        assert_eq!(
            bitrouter_charge(&uncached(10_000_001), &one),
            computed(10_000_000)
        );
        assert_eq!(
            bitrouter_charge(&uncached(u64::MAX), &one),
            computed(10_000_000)
        );
        // each bucket is clamped before its group is summed
        let all_max = Buckets {
            uncached_input_tokens: u64::MAX,
            cache_read_tokens: u64::MAX,
            cache_write_tokens: u64::MAX,
            output_tokens: u64::MAX,
            reasoning_tokens: u64::MAX,
        };
        assert_eq!(bitrouter_charge(&all_max, &one), computed(50_000_000));
        assert_eq!(
            bitrouter_charge(&all_max, &rates("0.84", "0.84", "0.84", "3.99")),
            computed(105_000_000) // 3e7 x 0.84 + 2e7 x 3.99 = 25.2e6 + 79.8e6
        );
    }

    // ---- overflow ----

    #[test]
    fn overflow_is_an_error_not_a_panic() {
        // rule SETTLE-2 (exact decimal; no silent wrap or rounding)
        let max = Dec::from_parts(10_i128.pow(38) - 1, 0).unwrap();
        assert_eq!(max.canonical().len(), 38);
        assert_eq!(
            max.checked_add(Dec::ONE),
            Err(MoneyError::Overflow { op: "addition" })
        );
        assert_eq!(
            max.checked_mul(d("2")),
            Err(MoneyError::Overflow {
                op: "multiplication"
            })
        );
        let negative_max = max.checked_mul(d("-1")).unwrap();
        assert_eq!(
            negative_max.checked_sub(Dec::ONE),
            Err(MoneyError::Overflow { op: "subtraction" })
        );
        // an exact product needing more than 28 decimal places is refused, not rounded
        let tiny = d("0.0000000000000000000000000001"); // 1e-28
        assert!(matches!(
            tiny.checked_mul(d("0.1")),
            Err(MoneyError::Overflow { .. })
        ));
        // aligning scales can overflow too
        assert!(matches!(
            max.checked_add(tiny),
            Err(MoneyError::Overflow { .. })
        ));

        let invalid_total = Charge::Invalid {
            reason: REASON_INVALID_CHARGE_TOTAL,
        };
        let max_usage = Buckets {
            uncached_input_tokens: u64::MAX,
            cache_read_tokens: u64::MAX,
            cache_write_tokens: u64::MAX,
            output_tokens: u64::MAX,
            reasoning_tokens: u64::MAX,
        };
        // 1e7 x 1e37 needs 45 digits
        assert_eq!(
            bitrouter_charge(&max_usage, &rates("1e37", "1e37", "1e37", "1e37")),
            invalid_total
        );
        // a 38-digit rate times 1e7 overflows i128
        let huge = "9999999999999999999999999999.9999999999";
        assert_eq!(
            bitrouter_charge(&max_usage, &rates(huge, huge, huge, huge)),
            invalid_total
        );
        // fits a Dec (1e30) but not a u64 of micro-USD
        let one_token = Buckets {
            output_tokens: 1,
            ..Buckets::default()
        };
        assert_eq!(
            bitrouter_charge(&one_token, &rates("0", "0", "0", "1e30")),
            invalid_total
        );
        // summing groups that each fit but together exceed a Dec
        let two_groups = Buckets {
            uncached_input_tokens: 1,
            output_tokens: 1,
            ..Buckets::default()
        };
        let big = "99999999999999999999999999999999999999";
        let bigger = "99999999999999999999999999999999999998";
        assert_eq!(
            bitrouter_charge(&two_groups, &rates(big, "0", "0", bigger)),
            invalid_total
        );
        // the largest u64 charge is still computed
        assert_eq!(
            bitrouter_charge(&one_token, &rates("0", "0", "0", "18446744073709551615")),
            computed(u64::MAX)
        );
        assert_eq!(
            bitrouter_charge(&one_token, &rates("0", "0", "0", "18446744073709551615.5")),
            invalid_total
        );
        // a 28-place rate over 1e7 tokens stays exact: 1234567.890123456789012345678 -> 1234568
        let fine = "0.1234567890123456789012345678";
        let ten_million = Buckets {
            output_tokens: 10_000_000,
            ..Buckets::default()
        };
        assert_eq!(
            bitrouter_charge(&ten_million, &rates("0", "0", "0", fine)),
            computed(1_234_568)
        );
    }

    // ---- text: parse and canonical form ----

    #[test]
    fn parse_and_canonical_examples() {
        // design 3 (decode -> re-encode identical), SETTLE-2 (exact decimal)
        for (text, canonical) in [
            ("0.84", "0.84"),
            ("3.99", "3.99"),
            ("1", "1"),
            ("1.0", "1"),
            ("0.840", "0.84"),
            ("100", "100"),
            ("100.00", "100"),
            ("-0", "0"),
            ("-0.0", "0"),
            ("0e7", "0"),
            ("1e-6", "0.000001"),
            ("1E-6", "0.000001"),
            ("2.5e+3", "2500"),
            ("25e-1", "2.5"),
            ("-1.50", "-1.5"),
            (
                "0.0000000000000000000000000001",
                "0.0000000000000000000000000001",
            ),
            (
                "12345678901234567890123456789012345678",
                "12345678901234567890123456789012345678",
            ),
            ("+1.5", "1.5"),              // TOML
            ("1_000.000_5", "1000.0005"), // TOML
            ("1e0_1", "10"),              // TOML exponent with separator
        ] {
            let value = d(text);
            assert_eq!(value.canonical(), canonical, "{text}");
            assert_eq!(value.to_string(), canonical);
            assert_eq!(d(canonical), value, "{text}");
            assert_eq!(Dec::from_canonical(canonical), Ok(value));
        }
        assert_eq!(d("0.84").mantissa(), 84);
        assert_eq!(d("0.84").scale(), 2);
        assert_eq!(Dec::from_parts(8400, 4), Ok(d("0.84")));
        assert_eq!("3.99".parse::<Dec>(), Ok(d("3.99")));
    }

    #[test]
    fn parse_rejects_garbage_with_specific_messages() {
        // design 3 (bad input is refused, never guessed)
        assert_eq!(Dec::parse(""), Err(MoneyError::Empty));
        for nan in ["nan", "NaN", "-nan", "+NaN"] {
            assert_eq!(Dec::parse(nan), Err(MoneyError::NotANumber), "{nan}");
        }
        for inf in ["inf", "-inf", "+inf", "Infinity", "-Infinity", "INF"] {
            assert_eq!(Dec::parse(inf), Err(MoneyError::Infinite), "{inf}");
        }
        for (text, problem) in [
            ("abc", "expected a digit"),
            ("-", "expected a digit"),
            ("1.", "missing digits after the decimal point"),
            (".5", "missing digits before the decimal point"),
            ("01", "leading zeros are not allowed"),
            ("-007", "leading zeros are not allowed"),
            ("0x10", "hex, octal and binary literals are not allowed"),
            ("0b1", "hex, octal and binary literals are not allowed"),
            ("1b", "unexpected character"),
            ("1e", "missing exponent digits"),
            ("1e+", "missing exponent digits"),
            ("1.2.3", "more than one decimal point"),
            ("1e2e3", "more than one exponent"),
            ("--1", "expected a digit"),
            ("1-", "misplaced sign"),
            (" 1", "whitespace is not allowed"),
            ("1 ", "whitespace is not allowed"),
            ("1,5", "unexpected character"),
            ("1_", "'_' must sit between two digits"),
            ("_1", "'_' must sit between two digits"),
            ("1__0", "'_' must sit between two digits"),
            ("1._5", "'_' must sit between two digits"),
        ] {
            assert_eq!(
                Dec::parse(text),
                Err(MoneyError::Syntax {
                    text: text.to_owned(),
                    problem
                }),
                "{text}"
            );
        }
        // JSON only: no TOML extensions
        assert!(Dec::from_json_number_text("+1")
            .unwrap_err()
            .to_string()
            .contains("'+' is not json"));
        assert!(Dec::from_json_number_text("1_000")
            .unwrap_err()
            .to_string()
            .contains("not json"));
        // bounds
        let long = "1".repeat(DEC_MAX_TEXT_BYTES + 1);
        assert_eq!(Dec::parse(&long), Err(MoneyError::TooLong { len: 1025 }));
        assert_eq!(
            Dec::parse(&"9".repeat(39)),
            Err(MoneyError::TooManyDigits { digits: 39 })
        );
        assert_eq!(
            Dec::parse("1e38"),
            Err(MoneyError::TooManyDigits { digits: 39 })
        );
        assert_eq!(
            Dec::parse("1e-29"),
            Err(MoneyError::TooManyDecimalPlaces { places: 29 })
        );
        assert!(Dec::parse("1e999999999999999999999").is_err());
        assert_eq!(Dec::parse("0e999999999999999999999"), Ok(Dec::ZERO));
        // messages are lowercase and name the problem
        let message = Dec::parse("1.").unwrap_err().to_string();
        assert_eq!(
            message,
            "invalid number text \"1.\": missing digits after the decimal point"
        );
        assert_eq!(Dec::parse("").unwrap_err().to_string(), "empty number text");
        assert!(Dec::parse("NaN")
            .unwrap_err()
            .to_string()
            .starts_with("nan is not a number"));
    }

    #[test]
    fn serde_writes_and_accepts_only_canonical_text() {
        // design 3 (decode -> re-encode gives identical bytes)
        assert_eq!(serde_json::to_string(&d("0.840")).unwrap(), "\"0.84\"");
        assert_eq!(serde_json::from_str::<Dec>("\"0.84\"").unwrap(), d("0.84"));
        let error = serde_json::from_str::<Dec>("\"0.840\"")
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("non-canonical decimal text \"0.840\"; the canonical form is \"0.84\""),
            "{error}"
        );
        for text in [
            "\"1.0\"", "\"-0\"", "\"+1\"", "\"1e3\"", "\"01\"", "\"\"", "\"nan\"", "0.84", "1",
        ] {
            assert!(serde_json::from_str::<Dec>(text).is_err(), "{text}");
        }
        let price = Rates {
            cache_write: None,
            ..rates("0.84", "0.84", "0", "3.99")
        };
        let json = serde_json::to_string(&price).unwrap();
        assert_eq!(
            json,
            r#"{"uncached_input":"0.84","cache_read":"0.84","cache_write":null,"output":"3.99"}"#
        );
        let back: Rates = serde_json::from_str(&json).unwrap();
        assert_eq!(back, price);
        assert_eq!(serde_json::to_string(&back).unwrap(), json);
    }

    // ---- the JSON f64 boundary ----

    #[test]
    fn json_f64_uses_the_shortest_round_trip_text() {
        // SETTLE-2 (no binary floats past the boundary)
        for literal in [
            "0.84",
            "3.99",
            "1",
            "1.0",
            "0.2",
            "2.5",
            "1e-6",
            "1234.5678",
            "0.123456789012345",
        ] {
            let x: f64 = serde_json::from_str(literal).unwrap();
            assert_eq!(Dec::from_json_f64(x), Ok(d(literal)), "{literal}");
            let value: Value = serde_json::from_str(literal).unwrap();
            assert_eq!(Dec::from_json_value(&value), Ok(d(literal)), "{literal}");
        }
        assert_eq!(Dec::from_json_f64(-0.0), Ok(Dec::ZERO));
        assert_eq!(Dec::from_json_f64(1e-7).unwrap().canonical(), "0.0000001");
        assert_eq!(Dec::from_json_f64(f64::NAN), Err(MoneyError::NotANumber));
        assert_eq!(Dec::from_json_f64(f64::INFINITY), Err(MoneyError::Infinite));
        assert_eq!(
            Dec::from_json_f64(f64::NEG_INFINITY),
            Err(MoneyError::Infinite)
        );
        assert!(matches!(
            Dec::from_json_f64(f64::MAX),
            Err(MoneyError::TooManyDigits { .. })
        ));
        assert!(matches!(
            Dec::from_json_f64(f64::from_bits(1)),
            Err(MoneyError::TooManyDecimalPlaces { .. })
        ));
        // the documented limit: more than 15 significant digits may not survive f64
        let long = "0.12345678901234567891";
        let x: f64 = serde_json::from_str(long).unwrap();
        assert_eq!(
            Dec::from_json_f64(x).unwrap().canonical(),
            "0.12345678901234568"
        );
        assert_eq!(Dec::from_json_number_text(long).unwrap().canonical(), long);
        // integers in a Value stay exact past 2^53
        let big: Value = serde_json::from_str("18446744073709551615").unwrap();
        assert_eq!(Dec::from_json_value(&big), Ok(Dec::from(u64::MAX)));
        assert_eq!(
            Dec::from_json_value(&Value::Null),
            Err(MoneyError::NotAJsonNumber { found: "null" })
        );
        assert_eq!(
            Dec::from_json_value(&Value::String("0.84".into())),
            Err(MoneyError::NotAJsonNumber { found: "a string" })
        );
    }

    #[test]
    fn usage_row_effective_rates_reproduce_its_charge() {
        // rule SETTLE-2, SETTLE-5; formats doc 2 usage example
        let row: Value = serde_json::from_str(
            r#"{"uncached_input_micro_usd_per_token":0.84,"cache_read_micro_usd_per_token":0.84,
                "cache_write_micro_usd_per_token":0.84,"output_micro_usd_per_token":3.99}"#,
        )
        .unwrap();
        let rate = |name: &str| Some(Dec::from_json_value(&row[name]).unwrap());
        let price = Rates {
            uncached_input: rate("uncached_input_micro_usd_per_token"),
            cache_read: rate("cache_read_micro_usd_per_token"),
            cache_write: rate("cache_write_micro_usd_per_token"),
            output: rate("output_micro_usd_per_token"),
        };
        let buckets = Buckets {
            uncached_input_tokens: 1972,
            cache_read_tokens: 32832,
            cache_write_tokens: 0,
            output_tokens: 485,
            reasoning_tokens: 1,
        };
        assert_eq!(bitrouter_charge(&buckets, &price), computed(31175));
    }

    // ---- SETTLE-3 and the bucket identities ----

    #[test]
    fn cache_rate_precedence() {
        // rule SETTLE-3
        let own = Some(d("0.1"));
        let base = Some(d("0.84"));
        assert_eq!(effective_cache_rate(own, base, false), own);
        assert_eq!(effective_cache_rate(own, base, true), own);
        assert_eq!(effective_cache_rate(None, base, true), base);
        assert_eq!(effective_cache_rate(None, base, false), None); // BitRouter's code
        assert_eq!(effective_cache_rate(None, None, true), None);
        // an invalid base price is never used, and an explicit own price is never bypassed
        assert_eq!(effective_cache_rate(None, Some(d("-1")), true), None);
        assert_eq!(
            effective_cache_rate(Some(d("-1")), base, true),
            Some(d("-1"))
        );
        // explicit zero is a price (free), not a missing one
        assert_eq!(
            effective_cache_rate(Some(Dec::ZERO), base, true),
            Some(Dec::ZERO)
        );
    }

    #[test]
    fn bucket_identities() {
        // rule SETTLE-1; formats doc 2 (prompt = u + cr + cw, completion = o + reasoning)
        let b = Buckets {
            uncached_input_tokens: 1972,
            cache_read_tokens: 32832,
            cache_write_tokens: 0,
            output_tokens: 485,
            reasoning_tokens: 1,
        };
        assert_eq!(check_bucket_identities(34804, 486, &b), Ok(()));
        let prompt = check_bucket_identities(34805, 486, &b).unwrap_err();
        assert_eq!(
            prompt.to_string(),
            "bucket identity prompt = uncached_input + cache_read + cache_write fails: \
             prompt_tokens 34805 != 1972 + 32832 + 0 = 34804"
        );
        let completion = check_bucket_identities(34804, 485, &b).unwrap_err();
        assert_eq!(
            completion.to_string(),
            "bucket identity completion = output + reasoning fails: completion_tokens 485 != 485 + 1 = 486"
        );
        // sums do not overflow
        let huge = Buckets {
            uncached_input_tokens: u64::MAX,
            cache_read_tokens: 1,
            ..Buckets::default()
        };
        assert_eq!(
            check_bucket_identities(u64::MAX, 0, &huge),
            Err(MoneyError::PromptIdentity {
                prompt: u64::MAX,
                uncached_input: u64::MAX,
                cache_read: 1,
                cache_write: 0,
                sum: u128::from(u64::MAX) + 1,
            })
        );
    }

    #[test]
    fn order_and_integer_conversion() {
        // SETTLE-3 (negative detection), SETTLE-2
        assert!(d("0.84") < d("3.99"));
        assert!(d("-1.5") < d("-1.2"));
        assert!(d("-1") < d("-0.5"));
        assert!(d("-0.5") < d("0.3"));
        assert!(d("10") > d("9.99999"));
        assert_eq!(d("1.0").cmp(&d("1")), Ordering::Equal);
        assert!(d("-0.01").is_negative() && !d("-0").is_negative() && d("-0").is_zero());
        assert_eq!(d("31175").to_u64(), Ok(31175));
        assert!(d("1.5")
            .to_u64()
            .unwrap_err()
            .to_string()
            .contains("fractional"));
        assert!(d("-1")
            .to_u64()
            .unwrap_err()
            .to_string()
            .contains("negative"));
        assert!(d("18446744073709551616")
            .to_u64()
            .unwrap_err()
            .to_string()
            .contains("greater than u64::MAX"));
    }

    // ---- properties ----

    const MANTISSA_MAX: i128 = 10_i128.pow(38) - 1;

    proptest! {
        #[test]
        fn canonical_text_round_trips(m in -MANTISSA_MAX..=MANTISSA_MAX, s in 0u32..=DEC_MAX_SCALE_DIGITS) {
            // design 3 (identical bytes), SETTLE-2
            let value = Dec::from_parts(m, s).unwrap();
            let text = value.canonical();
            prop_assert_eq!(Dec::parse(&text), Ok(value));
            prop_assert_eq!(Dec::from_json_number_text(&text), Ok(value));
            prop_assert_eq!(Dec::from_canonical(&text), Ok(value));
            let json = serde_json::to_string(&value).unwrap();
            prop_assert_eq!(serde_json::from_str::<Dec>(&json).unwrap(), value);
            // the same value written with an exponent parses to the same value
            prop_assert_eq!(Dec::parse(&format!("{m}e-{s}")), Ok(value));
            // a non-canonical spelling of the same value parses but is refused by serde
            let padded = if text.contains('.') { format!("{text}0") } else { format!("{text}.0") };
            prop_assert_eq!(Dec::parse(&padded), Ok(value));
            prop_assert!(Dec::from_canonical(&padded).is_err());
        }

        #[test]
        fn equal_values_give_equal_text(m in -10_i128.pow(20)..=10_i128.pow(20), s in 0u32..=14, k in 0u32..=14) {
            // design 3: (m, s) and (m * 10^k, s + k) are the same number
            let a = Dec::from_parts(m, s).unwrap();
            let b = Dec::from_parts(m * 10_i128.pow(k), s + k).unwrap();
            prop_assert_eq!(a, b);
            prop_assert_eq!(a.canonical(), b.canonical());
            prop_assert_eq!(a.cmp(&b), Ordering::Equal);
        }

        #[test]
        fn order_agrees_with_subtraction(
            m1 in -MANTISSA_MAX..=MANTISSA_MAX, s1 in 0u32..=DEC_MAX_SCALE_DIGITS,
            m2 in -MANTISSA_MAX..=MANTISSA_MAX, s2 in 0u32..=DEC_MAX_SCALE_DIGITS,
        ) {
            let a = Dec::from_parts(m1, s1).unwrap();
            let b = Dec::from_parts(m2, s2).unwrap();
            if let Ok(difference) = a.checked_sub(b) {
                prop_assert_eq!(a.cmp(&b), difference.cmp(&Dec::ZERO));
                prop_assert_eq!(difference.checked_add(b), Ok(a));
            }
            prop_assert_eq!(a.cmp(&b), b.cmp(&a).reverse());
        }

        #[test]
        fn charge_never_panics(
            tokens in proptest::array::uniform5(any::<u64>()),
            rates in proptest::array::uniform4(proptest::option::of((-MANTISSA_MAX..=MANTISSA_MAX, 0u32..=DEC_MAX_SCALE_DIGITS))),
        ) {
            // rule SETTLE-2: every input gives a Charge, never a panic
            let [u, cr, cw, o, r] = tokens;
            let b = Buckets { uncached_input_tokens: u, cache_read_tokens: cr, cache_write_tokens: cw, output_tokens: o, reasoning_tokens: r };
            let dec = |x: Option<(i128, u32)>| x.map(|(m, s)| Dec::from_parts(m, s).unwrap());
            let price = Rates { uncached_input: dec(rates[0]), cache_read: dec(rates[1]), cache_write: dec(rates[2]), output: dec(rates[3]) };
            let _ = bitrouter_charge(&b, &price);
        }
    }
}
