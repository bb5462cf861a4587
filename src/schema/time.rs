//! Time as benchledger reads and writes it: RFC 3339 timestamps, dates and
//! nanoseconds since the Unix epoch. Pure: the clock is read only by the
//! CLI ([`now_utc_ns`]).
//!
//! The calendar is `jiff`'s: every date is checked against its month
//! (`2026-02-31` and `2026-02-29` are refused, `2028-02-29` is a date), and
//! offsets and epoch arithmetic are its conversions. jiff has no strict RFC
//! 3339 parser (its own accepts RFC 9557 and Temporal forms too), so the
//! fixed-width syntax is read here, field by field, and nothing else
//! passes:
//!
//! - `YYYY-MM-DDTHH:MM:SS`, then an optional fraction of 1 to 9 digits, then
//!   the zone the [`TimeForm`] asks for (`Z`, `Z` or `+HH:MM`/`-HH:MM`, or
//!   none); offsets are `00:00` to `23:59` (RFC 3339's `time-numoffset`);
//!   `-00:00` is UTC;
//! - years `0000` to `9999`, hours `00` to `23`, minutes `00` to `59`; an
//!   instant past jiff's last one (`9999-12-30T22:00:00.999999999Z`, so
//!   that every offset still gives a civil time) is refused;
//! - second `60` only as a leap second: at 23:59:60 UTC on the last day of
//!   a month (with an offset, the local time that is that UTC minute), and
//!   never in a time without an offset (it cannot be placed in UTC). jiff
//!   has no leap seconds: as an instant it reads as second 59 with its
//!   fraction.
//!
//! One formatter, [`rfc3339_utc_ns`], writes every stored and printed
//! timestamp: `YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ`.

use jiff::civil::{Date, DateTime, Time};
use jiff::tz::Offset;
use jiff::Timestamp;

use crate::error::{Error, Result};

/// Which RFC 3339 profile a timestamp must follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeForm {
    /// RFC 3339 with `Z` or a `+HH:MM`/`-HH:MM` offset (BitRouter).
    Rfc3339,
    /// RFC 3339 in UTC with a `Z` suffix (Harbor trial timestamps).
    UtcZ,
    /// A local time without an offset (Harbor job timestamps).
    Naive,
}

impl TimeForm {
    /// What the form looks like, for messages (`expected <this>`).
    pub fn expected(self) -> &'static str {
        match self {
            TimeForm::Rfc3339 => "an rfc 3339 timestamp (YYYY-MM-DDTHH:MM:SS[.f](Z|+HH:MM))",
            TimeForm::UtcZ => "a utc timestamp YYYY-MM-DDTHH:MM:SS[.f]Z",
            TimeForm::Naive => "a timestamp YYYY-MM-DDTHH:MM:SS[.f] without offset",
        }
    }
}

/// Why a text is not a time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeError {
    /// The text does not have the form's shape (wrong separators, digits,
    /// zone or fraction length).
    #[error("not in the expected form")]
    Form,
    /// The shape is right but the fields name no time: a day past its
    /// month's end, hour 24, a misplaced leap second, an instant out of
    /// range. Lowercase; the value itself is not repeated.
    #[error("{0}")]
    Invalid(String),
}

pub use crate::limits::FRACTION_DIGITS_MAX;

// ---------------------------------------------------------------------------
// The syntax
// ---------------------------------------------------------------------------

/// The zone of a timestamp as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Zone {
    /// No zone: a local (naive) time.
    Absent,
    /// `Z`, or `z` when `lowercase`.
    Utc { lowercase: bool },
    /// A numeric offset, in seconds east of UTC.
    Offset(i32),
}

/// The fields of a timestamp as written, before any calendar check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Written {
    year: u32,
    month: u32,
    day: u32,
    separator: u8,
    hour: u32,
    minute: u32,
    second: u32,
    /// The fraction, cut to nanoseconds.
    nanosecond: i32,
    /// Digits of the fraction as written (0 without one).
    fraction_digits: usize,
    zone: Zone,
}

/// `n` ASCII digits at `at`, as a number.
fn digits(bytes: &[u8], at: usize, n: usize) -> Option<u32> {
    let part = bytes.get(at..at.checked_add(n)?)?;
    part.iter().try_fold(0u32, |acc, b| {
        b.is_ascii_digit().then(|| acc * 10 + u32::from(b - b'0'))
    })
}

/// `YYYY-MM-DD` at the start of `bytes` (no range check).
fn lex_date(bytes: &[u8]) -> Option<(u32, u32, u32)> {
    let year = digits(bytes, 0, 4)?;
    (bytes.get(4) == Some(&b'-')).then_some(())?;
    let month = digits(bytes, 5, 2)?;
    (bytes.get(7) == Some(&b'-')).then_some(())?;
    let day = digits(bytes, 8, 2)?;
    Some((year, month, day))
}

/// The fraction at `at` (after its `.`): (nanoseconds, digits written, end).
fn lex_fraction(bytes: &[u8], at: usize) -> Option<(i32, usize, usize)> {
    let count = bytes
        .get(at..)?
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    if count == 0 {
        return None;
    }
    let mut nanosecond = 0i32;
    for place in 0..FRACTION_DIGITS_MAX {
        let digit = if place < count {
            i32::from(bytes.get(at + place)? - b'0')
        } else {
            0
        };
        nanosecond = nanosecond * 10 + digit;
    }
    Some((nanosecond, count, at + count))
}

/// The zone: nothing, `Z`/`z`, or `+HH:MM`/`-HH:MM` (hours and minutes
/// range-checked by [`offset_seconds`]).
fn lex_zone(rest: &[u8]) -> Option<std::result::Result<Zone, TimeError>> {
    match rest {
        [] => Some(Ok(Zone::Absent)),
        [b'Z'] => Some(Ok(Zone::Utc { lowercase: false })),
        [b'z'] => Some(Ok(Zone::Utc { lowercase: true })),
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let hours = digits(rest, 1, 2)?;
            let minutes = digits(rest, 4, 2)?;
            Some(offset_seconds(*sign == b'-', hours, minutes).map(Zone::Offset))
        }
        _ => None,
    }
}

fn offset_seconds(negative: bool, hours: u32, minutes: u32) -> std::result::Result<i32, TimeError> {
    if hours > 23 {
        return Err(invalid(format!(
            "offset hour {hours:02} is outside 00..=23"
        )));
    }
    if minutes > 59 {
        return Err(invalid(format!(
            "offset minute {minutes:02} is outside 00..=59"
        )));
    }
    // At most 23 * 3600 + 59 * 60: no overflow.
    let seconds = (hours * 3600 + minutes * 60) as i32;
    Ok(if negative { -seconds } else { seconds })
}

/// Reads the shape of `YYYY-MM-DD(T|t| )HH:MM:SS[.f][zone]`. `Err(Form)`
/// when the shape is wrong.
fn lex(text: &str) -> std::result::Result<Written, TimeError> {
    let bytes = text.as_bytes();
    let (year, month, day) = lex_date(bytes).ok_or(TimeError::Form)?;
    let separator = *bytes.get(10).ok_or(TimeError::Form)?;
    let hour = digits(bytes, 11, 2).ok_or(TimeError::Form)?;
    let minute = digits(bytes, 14, 2).ok_or(TimeError::Form)?;
    let second = digits(bytes, 17, 2).ok_or(TimeError::Form)?;
    if !matches!(separator, b'T' | b't' | b' ')
        || bytes.get(13) != Some(&b':')
        || bytes.get(16) != Some(&b':')
    {
        return Err(TimeError::Form);
    }
    let (nanosecond, fraction_digits, end) = match bytes.get(19) {
        Some(b'.') => lex_fraction(bytes, 20).ok_or(TimeError::Form)?,
        _ => (0, 0, 19),
    };
    let zone = lex_zone(bytes.get(end..).unwrap_or(&[])).ok_or(TimeError::Form)??;
    Ok(Written {
        year,
        month,
        day,
        separator,
        hour,
        minute,
        second,
        nanosecond,
        fraction_digits,
        zone,
    })
}

/// Whether `form` accepts the shape `w` was written in.
fn form_accepts(form: TimeForm, w: &Written) -> bool {
    let strict = w.separator == b'T' && w.fraction_digits <= FRACTION_DIGITS_MAX;
    strict
        && match form {
            TimeForm::Rfc3339 => matches!(w.zone, Zone::Utc { lowercase: false } | Zone::Offset(_)),
            TimeForm::UtcZ => w.zone == Zone::Utc { lowercase: false },
            TimeForm::Naive => w.zone == Zone::Absent,
        }
}

// ---------------------------------------------------------------------------
// The calendar (jiff)
// ---------------------------------------------------------------------------

fn invalid(why: String) -> TimeError {
    TimeError::Invalid(why)
}

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// The calendar date of written fields: month in 01..=12 and day within
/// its month.
fn calendar_date(year: u32, month: u32, day: u32) -> std::result::Result<Date, TimeError> {
    // lex_date read 4 and 2 digits: year <= 9999, month and day <= 99.
    let (year_i, month_i, day_i) = (year as i16, month as i8, day as i8);
    if !(1..=12).contains(&month) {
        return Err(invalid(format!("month {month:02} is outside 01..=12")));
    }
    Date::new(year_i, month_i, day_i).map_err(|_| {
        let days = Date::new(year_i, month_i, 1).map_or(0, Date::days_in_month);
        let name = MONTHS.get(month as usize - 1).copied().unwrap_or("");
        invalid(format!(
            "{year:04}-{month:02}-{day:02} is not a date: {name} {year:04} has {days} days"
        ))
    })
}

const LEAP_SECOND_PLACE: &str =
    "second 60 (a leap second) is only valid at 23:59:60 utc on the last day of a month";

/// The calendar checks of written fields: the instant they name (a leap
/// second read as second 59), `None` for a naive time.
fn check_written(w: &Written) -> std::result::Result<Option<Timestamp>, TimeError> {
    let date = calendar_date(w.year, w.month, w.day)?;
    if w.hour > 23 {
        return Err(invalid(format!("hour {:02} is outside 00..=23", w.hour)));
    }
    if w.minute > 59 {
        return Err(invalid(format!(
            "minute {:02} is outside 00..=59",
            w.minute
        )));
    }
    if w.second > 60 {
        return Err(invalid(format!(
            "second {:02} is outside 00..=60",
            w.second
        )));
    }
    let leap = w.second == 60;
    let second = if leap { 59 } else { w.second };
    // Ranges checked above: each fits its jiff type.
    let time = Time::new(w.hour as i8, w.minute as i8, second as i8, w.nanosecond)
        .map_err(|e| invalid(format!("not a time of day: {e}")))?;
    let civil = DateTime::from_parts(date, time);
    let offset_seconds = match w.zone {
        Zone::Absent if leap => {
            return Err(invalid(format!(
                "{LEAP_SECOND_PLACE}; a time without an offset cannot be placed in utc"
            )))
        }
        Zone::Absent => return Ok(None),
        Zone::Utc { .. } => 0,
        Zone::Offset(seconds) => seconds,
    };
    let instant = Offset::from_seconds(offset_seconds)
        .and_then(|offset| offset.to_timestamp(civil))
        .map_err(|_| {
            invalid(format!(
                "the instant is outside the representable range {} to {}",
                Timestamp::MIN,
                Timestamp::MAX
            ))
        })?;
    if leap {
        let utc = Offset::UTC.to_datetime(instant);
        let last_minute = utc.hour() == 23 && utc.minute() == 59;
        if !last_minute || utc.date() != utc.date().last_of_month() {
            return Err(invalid(LEAP_SECOND_PLACE.into()));
        }
    }
    Ok(Some(instant))
}

/// Reads `text` in `form`: `Err(Form)` for the wrong shape, `Err(Invalid)`
/// for a shape that names no time.
fn read(text: &str, form: TimeForm) -> std::result::Result<Option<Timestamp>, TimeError> {
    let written = lex(text)?;
    if !form_accepts(form, &written) {
        return Err(TimeError::Form);
    }
    check_written(&written)
}

// ---------------------------------------------------------------------------
// Parsers
// ---------------------------------------------------------------------------

/// Checks that `text` is a timestamp of `form` that names a real time.
pub fn check_timestamp(text: &str, form: TimeForm) -> std::result::Result<(), TimeError> {
    read(text, form).map(|_| ())
}

/// Nanoseconds since the Unix epoch of a strict RFC 3339 timestamp
/// ([`TimeForm::Rfc3339`]: `Z` or an offset, 1 to 9 fractional digits).
/// Negative before 1970.
pub fn parse_timestamp_ns(text: &str) -> std::result::Result<i128, TimeError> {
    // Rfc3339 always has a zone, so an instant.
    read(text, TimeForm::Rfc3339)?
        .map(Timestamp::as_nanosecond)
        .ok_or(TimeError::Form)
}

/// A date `YYYY-MM-DD`, exactly, checked against its month.
pub fn parse_date(text: &str) -> std::result::Result<Date, TimeError> {
    let bytes = text.as_bytes();
    match lex_date(bytes) {
        Some((year, month, day)) if bytes.len() == 10 => calendar_date(year, month, day),
        _ => Err(TimeError::Form),
    }
}

/// Drop-in for the report's `parse_rfc3339_ns`: the RFC 3339 forms the RFC
/// itself allows (separator `T`, `t` or a space; `Z` or `z`; offsets; a
/// fraction of any length, cut to nanoseconds), with the calendar checks
/// above. `None` when the text is not such a timestamp.
pub fn parse_rfc3339_ns(text: &str) -> Option<i128> {
    let written = lex(text).ok()?;
    if written.zone == Zone::Absent {
        return None;
    }
    check_written(&written).ok()?.map(Timestamp::as_nanosecond)
}

/// Drop-in for the manifest's `check_date`: `value` must be a date
/// `YYYY-MM-DD` (checked against its month). The error names the source
/// and the field: `<source>: field <field>: must be a date YYYY-MM-DD, got
/// "<value>"`, and for a shape that is right but no date, why.
pub fn check_date(source: &str, field: &str, value: &str) -> Result<()> {
    match parse_date(value) {
        Ok(_) => Ok(()),
        Err(TimeError::Form) => Err(Error::input(format!(
            "{source}: field {field}: must be a date YYYY-MM-DD, got {value:?}"
        ))),
        Err(TimeError::Invalid(why)) => Err(Error::input(format!(
            "{source}: field {field}: must be a date YYYY-MM-DD, got {value:?} ({why})"
        ))),
    }
}

// ---------------------------------------------------------------------------
// The formatter and the clock
// ---------------------------------------------------------------------------

/// Formats `ns` since the epoch as `YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ`.
pub fn rfc3339_utc_ns(ns: u64) -> String {
    // u64::MAX ns is in 2554, well within jiff's range (to 9999).
    let instant = Timestamp::from_nanosecond(i128::from(ns))
        .expect("every u64 count of nanoseconds since 1970 is a jiff timestamp");
    let utc = Offset::UTC.to_datetime(instant);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:09}Z",
        utc.year(),
        utc.month(),
        utc.day(),
        utc.hour(),
        utc.minute(),
        utc.second(),
        utc.subsec_nanosecond()
    )
}

/// Formats `ns` since the epoch as `YYYY-MM-DDTHH:MM:SSZ`, rounded down to
/// the whole second.
pub fn rfc3339_utc_sec(ns: u64) -> String {
    let text = rfc3339_utc_ns(ns);
    let (seconds, _) = text
        .split_once('.')
        .expect("rfc3339_utc_ns always writes nine fraction digits");
    format!("{seconds}Z")
}

/// The current time in ns since the epoch. Only the CLI calls this.
pub fn now_utc_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
#[path = "time_tests.rs"]
mod tests;
