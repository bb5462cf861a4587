//! Readers of the evidence files Harbor and BitRouter write.
//!
//! These are pure parsers: they read bytes (or, for Harbor, a directory
//! tree) and return payload structs of [`crate::schema::events`]; they never write a
//! ledger. Every refusal is an [`Error::Input`] (exit 2) whose message names
//! the file, the line (for JSON Lines) and the field:
//! `<source>: line <n>: field <path>: <problem>`. Problems about a whole line
//! (not UTF-8, not JSON, blank, too long) name the field `(line)`.
//!
//! Here, shared by the readers:
//! - the named limits ([`INGEST_LINE_BYTES_MAX`], [`INGEST_ROWS_PER_FILE_MAX`],
//!   [`HARBOR_RESULT_BYTES_MAX`], [`HARBOR_TRIAL_DIRS_MAX`], ...);
//! - [`FieldError`] and [`echo`], which never prints a value that looks like a
//!   credential ([`crate::schema::secrets::scan`]);
//! - [`Progress`], the progress hook of the JSON Lines reader;
//! - [`blake3_hex`] and the common field checks (timestamps through
//!   [`crate::schema::time`], hex digests).
//!
//! Submodules: [`json`] (loading one object with duplicate keys refused at
//! every depth, typed field access with exact messages, the raw text of
//! number literals, [`canonical_json`]), [`jsonl`] (the bounded streaming
//! JSON Lines reader, [`for_each_jsonl_row`]), [`bitrouter`] (traces,
//! decisions, usage, receipts, outcomes) and [`harbor`] (trial results, job
//! trees, trial-name mapping).

pub mod bitrouter;
pub mod harbor;
pub mod json;
pub mod jsonl;

use std::borrow::Cow;
use std::fmt;

use serde_json::Value;

use crate::error::Error;
pub(crate) use crate::schema::time::TimeForm;

pub use json::canonical_json;
pub use jsonl::{for_each_jsonl_row, for_each_jsonl_row_with_progress};

// ---------------------------------------------------------------------------
// Limits
// ---------------------------------------------------------------------------

pub use crate::limits::INGEST_LINE_BYTES_MAX;

pub use crate::limits::INGEST_ROWS_PER_FILE_MAX;

pub use crate::limits::HARBOR_RESULT_BYTES_MAX;

pub use crate::limits::HARBOR_TRIAL_DIRS_MAX;

pub use crate::limits::HARBOR_JOB_DIRS_MAX;

pub use crate::limits::HARBOR_REWARD_KEYS_MAX;

pub use crate::limits::INGEST_FIELD_BYTES_MAX;

pub use crate::limits::INGEST_ECHO_BYTES_MAX;

pub use crate::limits::JSON_NESTING_LEVELS_MAX;

/// Default progress interval of the JSON Lines reader, in rows.
pub const PROGRESS_EVERY_ROWS_DEFAULT: u64 = 10_000;

/// The field name used for problems of a whole line or document.
pub const LINE_FIELD: &str = "(line)";

// ---------------------------------------------------------------------------
// Errors and echoes
// ---------------------------------------------------------------------------

/// A refusal of one row or document: which field and what is wrong with it.
/// [`FieldError::at_line`] and [`FieldError::in_document`] turn it into the
/// crate's [`Error::Input`] with the file (and line) prefixed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// The field path (`outcome.http_status`, `usage.output_tokens`), or
    /// [`LINE_FIELD`] for the whole line or document.
    pub field: String,
    /// What is wrong, lowercase; never a value that looks like a credential.
    pub problem: String,
}

impl FieldError {
    /// A problem of `field`.
    pub fn new(field: impl Into<String>, problem: impl Into<String>) -> FieldError {
        FieldError {
            field: field.into(),
            problem: problem.into(),
        }
    }

    /// A problem of the whole line or document.
    pub fn line(problem: impl Into<String>) -> FieldError {
        FieldError::new(LINE_FIELD, problem)
    }

    /// `<source>: line <line>: field <field>: <problem>` as an input error.
    pub fn at_line(&self, source: &str, line: u64) -> Error {
        Error::Input(format!(
            "{source}: line {line}: field {}: {}",
            self.field, self.problem
        ))
    }

    /// `<source>: field <field>: <problem>` as an input error, for files that
    /// hold one JSON document.
    pub fn in_document(&self, source: &str) -> Error {
        Error::Input(format!("{source}: field {}: {}", self.field, self.problem))
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "field {}: {}", self.field, self.problem)
    }
}

/// The echo of an offending text for an error message: quoted and escaped,
/// cut to [`INGEST_ECHO_BYTES_MAX`] bytes; or, when the text looks like a
/// credential, only its length and shape ([`crate::schema::secrets::describe_redacted`]).
pub fn echo(text: &str) -> String {
    if crate::schema::secrets::scan(text).is_some() {
        return crate::schema::secrets::describe_redacted(text);
    }
    if text.len() <= INGEST_ECHO_BYTES_MAX {
        return format!("{text:?}");
    }
    let cut = floor_char_boundary(text, INGEST_ECHO_BYTES_MAX);
    format!(
        "{:?}... ({} bytes in all)",
        text.get(..cut).unwrap_or(""),
        text.len()
    )
}

/// The echo of a JSON value: strings as [`echo`], other values as compact
/// JSON text under the same credential check and length cut.
pub fn echo_json(value: &Value) -> String {
    match value {
        Value::String(s) => echo(s),
        other => {
            let text = other.to_string();
            if crate::schema::secrets::scan(&text).is_some() {
                return crate::schema::secrets::describe_redacted(&text);
            }
            if text.len() <= INGEST_ECHO_BYTES_MAX {
                return text;
            }
            let cut = floor_char_boundary(&text, INGEST_ECHO_BYTES_MAX);
            format!(
                "{}... ({} bytes in all)",
                text.get(..cut).unwrap_or(""),
                text.len()
            )
        }
    }
}

/// A key from the input as it may appear in a field path: itself, unless it
/// looks like a credential or is too long to print.
fn path_key(key: &str) -> Cow<'_, str> {
    if crate::schema::secrets::scan(key).is_some() {
        Cow::Borrowed("<redacted key>")
    } else if key.len() > INGEST_ECHO_BYTES_MAX {
        let cut = floor_char_boundary(key, INGEST_ECHO_BYTES_MAX);
        Cow::Owned(format!("{}...", key.get(..cut).unwrap_or("")))
    } else {
        Cow::Borrowed(key)
    }
}

/// The largest char boundary of `s` at or below `at`.
fn floor_char_boundary(s: &str, at: usize) -> usize {
    if at >= s.len() {
        return s.len();
    }
    let mut i = at;
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// A `FieldError` result.
pub(crate) type FieldResult<T> = std::result::Result<T, FieldError>;

// ---------------------------------------------------------------------------
// Credential shapes in input files (BIND-8)
// ---------------------------------------------------------------------------

pub use crate::limits::CREDENTIAL_FINDINGS_PER_FILE_MAX;

/// A credential shape found in an ingested file (BIND-8): where, which
/// shape, and a redacted form (length and shape, never a character of the
/// value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leak {
    /// The JSON field path (`exception_info.exception_message`,
    /// `config.agent.env.<redacted key>`), or `(text)` when the shape lies
    /// outside any one string (an escape, text that is not JSON).
    pub field: String,
    /// The shape's name.
    pub shape: &'static str,
    /// The value's redacted form.
    pub redacted: String,
}

fn leak_path(path: &str, key: &str) -> String {
    let key = path_key(key);
    if path.is_empty() {
        key.into_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn walk_leaks(v: &Value, path: &str, out: &mut Vec<Leak>) {
    if out.len() >= CREDENTIAL_FINDINGS_PER_FILE_MAX {
        return;
    }
    match v {
        Value::String(s) => {
            if let Some(found) = crate::schema::secrets::scan(s) {
                out.push(Leak {
                    field: if path.is_empty() {
                        "(value)".into()
                    } else {
                        path.to_string()
                    },
                    shape: found.shape,
                    redacted: crate::schema::secrets::describe_redacted(s),
                });
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                walk_leaks(item, &format!("{path}[{i}]"), out);
            }
        }
        Value::Object(m) => {
            for (k, item) in m {
                let p = leak_path(path, k);
                if let Some(found) = crate::schema::secrets::scan(k) {
                    out.push(Leak {
                        field: format!("{p} (key)"),
                        shape: found.shape,
                        redacted: crate::schema::secrets::describe_redacted(k),
                    });
                    continue;
                }
                // A key names what its value is (`"api_key": "..."`): the
                // pair is read as one assignment, as the raw text has it.
                if let Value::String(s) = item {
                    let pair = format!("{}: {}", Value::from(k.as_str()), Value::from(s.as_str()));
                    if crate::schema::secrets::scan(s).is_none() {
                        if let Some(found) = crate::schema::secrets::scan(&pair) {
                            out.push(Leak {
                                field: p,
                                shape: found.shape,
                                redacted: crate::schema::secrets::describe_redacted(s),
                            });
                            continue;
                        }
                    }
                }
                walk_leaks(item, &p, out);
            }
        }
        _ => {}
    }
}

/// Every credential shape in an ingested file's text (BIND-8), at most
/// [`CREDENTIAL_FINDINGS_PER_FILE_MAX`]. The whole text is scanned first
/// (fast when clean); on a hit, each JSON string, key and `"key": "value"`
/// pair is scanned to name the field. A shape the raw text shows but no
/// single field does (behind an escape, or in text that is not JSON) is one
/// finding of field `(text)`.
pub fn credential_findings(text: &str) -> Vec<Leak> {
    let Some(raw) = crate::schema::secrets::scan(text) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        walk_leaks(&v, "", &mut out);
    }
    if out.is_empty() {
        out.push(Leak {
            field: "(text)".into(),
            shape: raw.shape,
            redacted: format!(
                "<redacted: {} bytes of text, looks like {} at byte {}>",
                text.len(),
                raw.shape,
                raw.offset
            ),
        });
    }
    out
}

// ---------------------------------------------------------------------------
// Hashing
// ---------------------------------------------------------------------------

/// BLAKE3 of `bytes`, lowercase hex (64 characters).
pub fn blake3_hex(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

// ---------------------------------------------------------------------------
// Progress of a long read
// ---------------------------------------------------------------------------

/// A progress hook for [`for_each_jsonl_row_with_progress`]: `report` is
/// called with (rows read, bytes read) after every `every_rows` rows.
pub struct Progress<'a> {
    /// Interval in rows; 0 disables the hook.
    pub every_rows: u64,
    /// Called with the rows and bytes (newlines included) read so far.
    pub report: &'a mut dyn FnMut(u64, u64),
}

// ---------------------------------------------------------------------------
// Small value checks
// ---------------------------------------------------------------------------

/// Checks a timestamp of `form` ([`crate::schema::time::check_timestamp`]:
/// the shape, then the calendar). Returns the problem: `expected <form>,
/// found <echo>`, with why when the shape is right but the time is not.
pub(crate) fn check_timestamp(s: &str, form: TimeForm) -> std::result::Result<(), String> {
    use crate::schema::time::TimeError;
    match crate::schema::time::check_timestamp(s, form) {
        Ok(()) => Ok(()),
        Err(TimeError::Form) => Err(format!("expected {}, found {}", form.expected(), echo(s))),
        Err(TimeError::Invalid(why)) => Err(format!(
            "expected {}, found {}: {why}",
            form.expected(),
            echo(s)
        )),
    }
}

/// True for exactly `n` lowercase hex digits.
pub(crate) fn is_lower_hex(s: &str, n: usize) -> bool {
    s.len() == n
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Checks `sha256:<64 lowercase hex>`; returns the problem.
pub(crate) fn check_sha256_tag(s: &str) -> std::result::Result<(), String> {
    match s.strip_prefix("sha256:") {
        Some(hex) if is_lower_hex(hex, 64) => Ok(()),
        _ => Err(format!(
            "expected sha256:<64 lowercase hex digits>, found {}",
            echo(s)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_cuts_long_values_and_never_prints_secrets() {
        assert_eq!(echo("abc"), "\"abc\"");
        let long = "é".repeat(100);
        let e = echo(&long);
        assert!(e.ends_with("... (200 bytes in all)"), "{e}");
        assert!(e.len() < INGEST_ECHO_BYTES_MAX + 40);
        let key = format!("sk-proj-{}", "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z".repeat(2));
        let e = echo(&key);
        assert!(!e.contains(&key) && e.starts_with("<redacted:"), "{e}");
        let e = echo_json(&serde_json::json!({ "k": key }));
        assert!(
            !e.contains("Ab3dEf6h") && e.starts_with("<redacted:"),
            "{e}"
        );
    }

    #[test]
    fn timestamps() {
        for ok in [
            "2026-08-17T00:00:01.234Z",
            "2026-08-17T00:00:01.1+00:00",
            "2026-03-01T12:00:05Z",
        ] {
            assert_eq!(check_timestamp(ok, TimeForm::Rfc3339), Ok(()), "{ok}");
        }
        assert_eq!(
            check_timestamp("2026-03-01T12:00:26.500000Z", TimeForm::UtcZ),
            Ok(())
        );
        assert!(check_timestamp("2026-03-01T12:00:26+00:00", TimeForm::UtcZ).is_err());
        assert_eq!(
            check_timestamp("2026-03-01T12:00:00", TimeForm::Naive),
            Ok(())
        );
        for bad in [
            "",
            "2026-13-01T00:00:00Z",
            "2026-08-17 00:00:01Z",
            "2026-08-17T00:00:01",
            "2026-08-17T00:00:01.Z",
            "yesterday",
        ] {
            assert!(check_timestamp(bad, TimeForm::Rfc3339).is_err(), "{bad}");
        }
        // The shape is right but the calendar refuses: the message says why.
        assert_eq!(
            check_timestamp("2026-02-31T00:00:00Z", TimeForm::UtcZ).unwrap_err(),
            "expected a utc timestamp YYYY-MM-DDTHH:MM:SS[.f]Z, found \"2026-02-31T00:00:00Z\": 2026-02-31 is not a date: february 2026 has 28 days"
        );
        assert_eq!(
            check_timestamp("2026-02-29T12:00:00", TimeForm::Naive).unwrap_err(),
            "expected a timestamp YYYY-MM-DDTHH:MM:SS[.f] without offset, found \"2026-02-29T12:00:00\": 2026-02-29 is not a date: february 2026 has 28 days"
        );
        assert_eq!(
            check_timestamp("2028-02-29T12:00:00", TimeForm::Naive),
            Ok(())
        );
        assert_eq!(
            check_timestamp("2026-03-01T24:00:00+01:00", TimeForm::Rfc3339).unwrap_err(),
            "expected an rfc 3339 timestamp (YYYY-MM-DDTHH:MM:SS[.f](Z|+HH:MM)), found \"2026-03-01T24:00:00+01:00\": hour 24 is outside 00..=23"
        );
        // A leap second only where one can be (it was accepted anywhere).
        assert_eq!(
            check_timestamp("2016-12-31T23:59:60Z", TimeForm::Rfc3339),
            Ok(())
        );
        assert!(check_timestamp("2026-03-01T12:30:60Z", TimeForm::Rfc3339)
            .unwrap_err()
            .ends_with("second 60 (a leap second) is only valid at 23:59:60 utc on the last day of a month"));
        // The shape error is unchanged.
        assert_eq!(
            check_timestamp("2026-03-01T12:00:26+00:00", TimeForm::UtcZ).unwrap_err(),
            "expected a utc timestamp YYYY-MM-DDTHH:MM:SS[.f]Z, found \"2026-03-01T12:00:26+00:00\""
        );
    }

    #[test]
    fn sha256_tags() {
        assert_eq!(
            check_sha256_tag(&format!("sha256:{}", "ab".repeat(32))),
            Ok(())
        );
        assert!(check_sha256_tag(&format!("sha256:{}", "AB".repeat(32))).is_err());
        assert!(check_sha256_tag(&"ab".repeat(32)).is_err());
        assert!(check_sha256_tag("sha256:abc").is_err());
    }

    // rule BIND-8: a credential anywhere in a file is named by field and
    // shape, never echoed.
    #[test]
    fn credentials_in_a_file_are_found_by_field() {
        let key = format!("sk-proj-{}", "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z".repeat(2));
        let text = serde_json::json!({
            "exception_info": {"exception_message": format!("Incorrect API key provided: {key}")},
            "config": {"agent": {"kwargs": {"llm_kwargs": {"api_key": "bitrouter-local"}}}},
            "list": ["fine", key.clone()],
        })
        .to_string();
        let found = credential_findings(&text);
        let fields: Vec<&str> = found.iter().map(|l| l.field.as_str()).collect();
        assert_eq!(fields, ["exception_info.exception_message", "list[1]"]);
        for l in &found {
            assert!(!l.redacted.contains("Ab3dEf6h"), "{l:?}");
            assert_eq!(crate::schema::secrets::scan(&l.redacted), None, "{l:?}");
            assert_eq!(crate::schema::secrets::scan(&l.field), None, "{l:?}");
        }
        assert!(credential_findings("{\"a\": 1}").is_empty());
        // Not JSON: the whole text is one finding.
        let raw = credential_findings(&format!("token {key}"));
        assert_eq!(raw[0].field, "(text)");
    }

    #[test]
    fn blake3_hex_is_lowercase_64() {
        let h = blake3_hex(b"");
        assert_eq!(
            h,
            "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
        );
        assert!(is_lower_hex(&h, 64));
    }
}
