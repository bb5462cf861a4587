//! One JSON document at a time: loading an object with duplicate keys
//! refused at every depth (serde_json's `Value` silently keeps the last),
//! a raw scanner over well-formed text (the literal text of numbers, so a
//! reward written `1.0` stays `1.0`, and [`canonical_json`]), and typed
//! field access with messages that name the full path (`Obj`).

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde_json::{Map, Value};

use super::{
    echo, echo_json, path_key, FieldError, FieldResult, INGEST_FIELD_BYTES_MAX,
    JSON_NESTING_LEVELS_MAX, LINE_FIELD,
};

/// What a JSON value is, for messages (`a string`, `an object`, `null`).
pub(crate) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `found <type> <echo>` for a value of the wrong type.
pub(crate) fn found(value: &Value) -> String {
    match value {
        Value::Null => "found null".to_string(),
        other => format!("found {} {}", json_type(other), echo_json(other)),
    }
}

// ---------------------------------------------------------------------------
// Loading one JSON object
// ---------------------------------------------------------------------------

/// One JSON object as loaded: its text and its top-level members (those
/// named in `skip` are checked for syntax only and left out).
pub(crate) struct Loaded<'a> {
    /// The whole text (UTF-8 checked).
    pub text: &'a str,
    /// Top-level members, except the skipped ones.
    pub map: Map<String, Value>,
}

/// Parses `bytes` as one JSON object. Refused: not UTF-8, not JSON
/// (truncated or invalid), not an object, deeper than
/// [`JSON_NESTING_LEVELS_MAX`], and a key repeated in any object at any
/// depth. Top-level members named in `skip` are checked for syntax but not
/// kept (a trace's `raw_body` can be 16 MiB).
pub(crate) fn load_object<'a>(
    bytes: &'a [u8],
    skip: &[&str],
) -> std::result::Result<Loaded<'a>, FieldError> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        FieldError::line(format!(
            "not utf-8: invalid byte at offset {}",
            e.valid_up_to()
        ))
    })?;
    // Duplicate keys at every depth (serde_json's Value keeps the last one
    // silently) and nesting; also rejects most malformed text early.
    let mut de = serde_json::Deserializer::from_str(text);
    let top = TopSeed { skip }
        .deserialize(&mut de)
        .map_err(|e| FieldError::line(json_problem(&e)))?;
    de.end().map_err(|e| FieldError::line(json_problem(&e)))?;
    check_duplicate_keys(text)?;
    Ok(Loaded { text, map: top })
}

/// A message for a serde_json error; serde_json's messages carry positions,
/// never input text.
fn json_problem(e: &serde_json::Error) -> String {
    match e.classify() {
        serde_json::error::Category::Eof => {
            format!("truncated json: the text ends inside a value ({e})")
        }
        serde_json::error::Category::Io => format!("read failure: {e}"),
        serde_json::error::Category::Syntax | serde_json::error::Category::Data => {
            format!("invalid json: {e}")
        }
    }
}

struct TopSeed<'s> {
    skip: &'s [&'s str],
}

impl<'de> DeserializeSeed<'de> for TopSeed<'_> {
    type Value = Map<String, Value>;

    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        d: D,
    ) -> std::result::Result<Self::Value, D::Error> {
        d.deserialize_any(TopVisitor { skip: self.skip })
    }
}

struct TopVisitor<'s> {
    skip: &'s [&'s str],
}

impl<'de> Visitor<'de> for TopVisitor<'_> {
    type Value = Map<String, Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a json object")
    }

    fn visit_map<A: MapAccess<'de>>(
        self,
        mut access: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            if self.skip.contains(&key.as_str()) {
                access.next_value::<IgnoredAny>()?;
            } else {
                let value = access.next_value::<Value>()?;
                map.insert(key, value);
            }
        }
        Ok(map)
    }
}

// ---------------------------------------------------------------------------
// A raw scanner over well-formed JSON text
// ---------------------------------------------------------------------------

/// One step of a path into a JSON document.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seg<'a> {
    Key(Cow<'a, str>),
    Index(usize),
}

fn render_path(path: &[Seg<'_>]) -> String {
    let mut out = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(&path_key(k));
            }
            Seg::Index(i) => {
                out.push_str(&format!("[{i}]"));
            }
        }
    }
    if out.is_empty() {
        LINE_FIELD.to_string()
    } else {
        out
    }
}

/// A byte-level JSON scanner for text serde_json has already accepted. It
/// never panics: unexpected bytes give a [`FieldError`].
struct Scanner<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
}

fn scan_disagrees() -> FieldError {
    FieldError::line("invalid json: unexpected structure")
}

impl<'a> Scanner<'a> {
    fn new(text: &'a str) -> Scanner<'a> {
        Scanner {
            text,
            bytes: text.as_bytes(),
            at: 0,
        }
    }

    fn ws(&mut self) {
        while let Some(b) = self.bytes.get(self.at) {
            if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                self.at += 1;
            } else {
                break;
            }
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    /// At a `"`: the decoded string.
    fn string(&mut self) -> std::result::Result<Cow<'a, str>, FieldError> {
        let start = self.at;
        if !self.eat(b'"') {
            return Err(scan_disagrees());
        }
        let mut escaped = false;
        loop {
            match self.peek() {
                None => return Err(scan_disagrees()),
                Some(b'"') => {
                    self.at += 1;
                    break;
                }
                Some(b'\\') => {
                    escaped = true;
                    self.at += 2;
                }
                Some(_) => self.at += 1,
            }
        }
        let raw = self.text.get(start..self.at).ok_or_else(scan_disagrees)?;
        if escaped {
            serde_json::from_str::<String>(raw)
                .map(Cow::Owned)
                .map_err(|e| FieldError::line(json_problem(&e)))
        } else {
            raw.get(1..raw.len() - 1)
                .map(Cow::Borrowed)
                .ok_or_else(scan_disagrees)
        }
    }

    /// A number or literal: the raw text.
    fn atom(&mut self) -> std::result::Result<&'a str, FieldError> {
        let start = self.at;
        while let Some(b) = self.peek() {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.') {
                self.at += 1;
            } else {
                break;
            }
        }
        if self.at == start {
            return Err(scan_disagrees());
        }
        self.text.get(start..self.at).ok_or_else(scan_disagrees)
    }

    /// Walks one value at the current position, calling `visit(path, raw)`
    /// for every value (after its end), and refusing repeated keys.
    fn walk(
        &mut self,
        path: &mut Vec<Seg<'a>>,
        visit: &mut dyn FnMut(&[Seg<'a>], &'a str),
    ) -> std::result::Result<(), FieldError> {
        if path.len() > JSON_NESTING_LEVELS_MAX {
            return Err(FieldError::line(format!(
                "json nests deeper than {JSON_NESTING_LEVELS_MAX} levels"
            )));
        }
        self.ws();
        let start = self.at;
        match self.peek() {
            Some(b'{') => {
                self.at += 1;
                let mut seen: HashSet<Cow<'a, str>> = HashSet::new();
                self.ws();
                if !self.eat(b'}') {
                    loop {
                        self.ws();
                        let key = self.string()?;
                        if !seen.insert(key.clone()) {
                            path.push(Seg::Key(key));
                            let field = render_path(path);
                            return Err(FieldError::new(
                                field,
                                "duplicate key; a json object must not repeat a key",
                            ));
                        }
                        self.ws();
                        if !self.eat(b':') {
                            return Err(scan_disagrees());
                        }
                        path.push(Seg::Key(key));
                        self.walk(path, visit)?;
                        path.pop();
                        self.ws();
                        if self.eat(b',') {
                            continue;
                        }
                        if self.eat(b'}') {
                            break;
                        }
                        return Err(scan_disagrees());
                    }
                }
            }
            Some(b'[') => {
                self.at += 1;
                self.ws();
                if !self.eat(b']') {
                    let mut i = 0usize;
                    loop {
                        path.push(Seg::Index(i));
                        self.walk(path, visit)?;
                        path.pop();
                        i += 1;
                        self.ws();
                        if self.eat(b',') {
                            continue;
                        }
                        if self.eat(b']') {
                            break;
                        }
                        return Err(scan_disagrees());
                    }
                }
            }
            Some(b'"') => {
                self.string()?;
            }
            Some(_) => {
                self.atom()?;
            }
            None => return Err(scan_disagrees()),
        }
        let raw = self.text.get(start..self.at).ok_or_else(scan_disagrees)?;
        visit(path, raw);
        Ok(())
    }

    /// Emits the canonical form of the value at the current position.
    fn canonical(
        &mut self,
        path: &mut Vec<Seg<'a>>,
        out: &mut String,
    ) -> std::result::Result<(), FieldError> {
        if path.len() > JSON_NESTING_LEVELS_MAX {
            return Err(FieldError::line(format!(
                "json nests deeper than {JSON_NESTING_LEVELS_MAX} levels"
            )));
        }
        self.ws();
        match self.peek() {
            Some(b'{') => {
                self.at += 1;
                let mut members: Vec<(Cow<'a, str>, String)> = Vec::new();
                self.ws();
                if !self.eat(b'}') {
                    loop {
                        self.ws();
                        let key = self.string()?;
                        if members.iter().any(|(k, _)| *k == key) {
                            path.push(Seg::Key(key));
                            return Err(FieldError::new(
                                render_path(path),
                                "duplicate key; a json object must not repeat a key",
                            ));
                        }
                        self.ws();
                        if !self.eat(b':') {
                            return Err(scan_disagrees());
                        }
                        let mut member = String::new();
                        path.push(Seg::Key(key.clone()));
                        self.canonical(path, &mut member)?;
                        path.pop();
                        members.push((key, member));
                        self.ws();
                        if self.eat(b',') {
                            continue;
                        }
                        if self.eat(b'}') {
                            break;
                        }
                        return Err(scan_disagrees());
                    }
                }
                members.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
                out.push('{');
                for (i, (k, v)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    crate::schema::strings::push_json_string(out, k);
                    out.push(':');
                    out.push_str(v);
                }
                out.push('}');
            }
            Some(b'[') => {
                self.at += 1;
                out.push('[');
                self.ws();
                if !self.eat(b']') {
                    let mut i = 0usize;
                    loop {
                        if i > 0 {
                            out.push(',');
                        }
                        path.push(Seg::Index(i));
                        self.canonical(path, out)?;
                        path.pop();
                        i += 1;
                        self.ws();
                        if self.eat(b',') {
                            continue;
                        }
                        if self.eat(b']') {
                            break;
                        }
                        return Err(scan_disagrees());
                    }
                }
                out.push(']');
            }
            Some(b'"') => {
                let s = self.string()?;
                crate::schema::strings::push_json_string(out, &s);
            }
            Some(_) => {
                let atom = self.atom()?;
                out.push_str(atom);
            }
            None => return Err(scan_disagrees()),
        }
        Ok(())
    }
}

/// Refuses a key repeated in any object of `text` (well-formed JSON),
/// naming the repeated key's path.
pub(crate) fn check_duplicate_keys(text: &str) -> std::result::Result<(), FieldError> {
    let mut scanner = Scanner::new(text);
    scanner.walk(&mut Vec::new(), &mut |_, _| {})
}

/// The raw text of the values at `paths` (each a list of object keys from
/// the top), `None` where absent; `text` must be well-formed JSON. The raw
/// text of a number is its literal exactly as written (`1.0`, `1`, `1e0`).
pub(crate) fn raw_values_at<'a>(
    text: &'a str,
    paths: &[&[&str]],
) -> std::result::Result<Vec<Option<&'a str>>, FieldError> {
    let mut found: Vec<Option<&'a str>> = vec![None; paths.len()];
    let mut scanner = Scanner::new(text);
    scanner.walk(&mut Vec::new(), &mut |path, raw| {
        for (i, want) in paths.iter().enumerate() {
            let same = path.len() == want.len()
                && path
                    .iter()
                    .zip(want.iter())
                    .all(|(seg, key)| matches!(seg, Seg::Key(k) if k == key));
            if same {
                if let Some(slot) = found.get_mut(i) {
                    *slot = Some(raw);
                }
            }
        }
    })?;
    Ok(found)
}

/// The members of the JSON object `text` with each value's raw text, in
/// document order; `text` must be a well-formed object.
pub(crate) fn raw_members(text: &str) -> std::result::Result<Vec<(String, &str)>, FieldError> {
    let mut out: Vec<(String, &str)> = Vec::new();
    let mut scanner = Scanner::new(text);
    scanner.walk(&mut Vec::new(), &mut |path, raw| {
        if let [Seg::Key(k)] = path {
            out.push((k.to_string(), raw));
        }
    })?;
    Ok(out)
}

/// The canonical JSON text of the JSON value `text`, which benchledger
/// hashes (e.g. `config_blake3` of a Harbor trial result):
///
/// - no whitespace outside strings;
/// - object members sorted by the UTF-8 bytes of their (unescaped) keys,
///   recursively; array order kept;
/// - strings re-escaped minimally: `\"`, `\\`, `\b \f \n \r \t`, other
///   control characters as `\u00xx` (lowercase hex), everything else as
///   literal UTF-8 (so `\u00e9` and `é` canonicalize alike);
/// - numbers exactly as written in the source (`2.0` stays `2.0`, `1e3`
///   stays `1e3`): the canonical form adds no float formatting of its own;
/// - `true`, `false`, `null` as themselves.
///
/// Refused: text that is not JSON, a repeated key in any object, nesting
/// deeper than [`JSON_NESTING_LEVELS_MAX`].
pub fn canonical_json(text: &str) -> std::result::Result<String, FieldError> {
    let mut de = serde_json::Deserializer::from_str(text);
    serde::Deserialize::deserialize(&mut de)
        .map(|_: IgnoredAny| ())
        .and_then(|()| de.end())
        .map_err(|e| FieldError::line(json_problem(&e)))?;
    let mut scanner = Scanner::new(text);
    let mut out = String::with_capacity(text.len());
    scanner.canonical(&mut Vec::new(), &mut out)?;
    Ok(out)
}

// ---------------------------------------------------------------------------
// Typed access to one JSON object, with exact messages
// ---------------------------------------------------------------------------

/// A JSON object and its path from the top, for field access with messages
/// that name the full path.
#[derive(Clone)]
pub(crate) struct Obj<'a> {
    map: &'a Map<String, Value>,
    prefix: String,
}

impl<'a> Obj<'a> {
    /// The top-level object.
    pub(crate) fn root(map: &'a Map<String, Value>) -> Obj<'a> {
        Obj {
            map,
            prefix: String::new(),
        }
    }

    /// The full path of `key` in this object.
    pub(crate) fn path(&self, key: &str) -> String {
        if self.prefix.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.prefix)
        }
    }

    /// The value of `key` as written (`Some(Null)` for an explicit null).
    pub(crate) fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key)
    }

    /// True when `key` is present (null included).
    pub(crate) fn has(&self, key: &str) -> bool {
        self.map.contains_key(key)
    }

    /// The value of `key` unless it is missing or null.
    pub(crate) fn present(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    /// The keys of this object.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &'a String> {
        self.map.keys()
    }

    fn required(&self, key: &str) -> FieldResult<&'a Value> {
        match self.map.get(key) {
            None => Err(FieldError::new(self.path(key), "missing")),
            Some(Value::Null) => Err(FieldError::new(self.path(key), "is null")),
            Some(v) => Ok(v),
        }
    }

    fn string_of(&self, key: &str, v: &'a Value) -> FieldResult<&'a str> {
        let Value::String(s) = v else {
            return Err(FieldError::new(
                self.path(key),
                format!("expected a string, {}", found(v)),
            ));
        };
        if s.len() > INGEST_FIELD_BYTES_MAX {
            return Err(FieldError::new(
                self.path(key),
                format!(
                    "string is {} bytes, longer than the limit of {INGEST_FIELD_BYTES_MAX} bytes",
                    s.len()
                ),
            ));
        }
        Ok(s)
    }

    /// A required, non-empty string of at most [`INGEST_FIELD_BYTES_MAX`] bytes.
    pub(crate) fn id(&self, key: &str) -> FieldResult<&'a str> {
        let s = self.string_of(key, self.required(key)?)?;
        if s.is_empty() {
            return Err(FieldError::new(self.path(key), "is empty"));
        }
        Ok(s)
    }

    /// An optional non-empty string (missing or null is `None`).
    pub(crate) fn id_opt(&self, key: &str) -> FieldResult<Option<&'a str>> {
        match self.present(key) {
            None => Ok(None),
            Some(v) => {
                let s = self.string_of(key, v)?;
                if s.is_empty() {
                    return Err(FieldError::new(
                        self.path(key),
                        "is empty; write null or leave it out instead",
                    ));
                }
                Ok(Some(s))
            }
        }
    }

    /// An optional string, empty allowed (missing or null is `None`).
    pub(crate) fn text_opt(&self, key: &str) -> FieldResult<Option<&'a str>> {
        match self.present(key) {
            None => Ok(None),
            Some(v) => self.string_of(key, v).map(Some),
        }
    }

    /// A required string, empty allowed.
    pub(crate) fn text(&self, key: &str) -> FieldResult<&'a str> {
        self.string_of(key, self.required(key)?)
    }

    /// A required string of any length, for values that are only checked
    /// or hashed, never copied into a payload (a traceback can be long).
    pub(crate) fn long_text(&self, key: &str) -> FieldResult<&'a str> {
        match self.required(key)? {
            Value::String(s) => Ok(s),
            other => Err(FieldError::new(
                self.path(key),
                format!("expected a string, {}", found(other)),
            )),
        }
    }

    fn u64_of(&self, key: &str, v: &Value) -> FieldResult<u64> {
        let Value::Number(n) = v else {
            return Err(FieldError::new(
                self.path(key),
                format!("expected a non-negative integer, {}", found(v)),
            ));
        };
        if let Some(x) = n.as_u64() {
            return Ok(x);
        }
        let problem = if n.as_i64().is_some() {
            format!("negative number {n}; expected a non-negative integer")
        } else {
            match n.as_f64() {
                Some(f) if f < 0.0 => {
                    format!("negative number {n}; expected a non-negative integer")
                }
                Some(f) if f.fract() == 0.0 && f >= 18_446_744_073_709_551_616.0 => {
                    format!("number {n} is greater than u64::MAX (18446744073709551615)")
                }
                _ => format!("expected a non-negative integer, found the non-integer number {n}"),
            }
        };
        Err(FieldError::new(self.path(key), problem))
    }

    /// A required non-negative integer (u64). Refused: missing, null, a
    /// non-number, a negative number, a fraction or exponent literal (`1.0`,
    /// `1e3`, as BitRouter's and Harbor's integer fields do), above u64::MAX.
    pub(crate) fn u64(&self, key: &str) -> FieldResult<u64> {
        self.u64_of(key, self.required(key)?)
    }

    /// An optional non-negative integer (missing or null is `None`).
    pub(crate) fn u64_opt(&self, key: &str) -> FieldResult<Option<u64>> {
        match self.present(key) {
            None => Ok(None),
            Some(v) => self.u64_of(key, v).map(Some),
        }
    }

    /// A required boolean.
    pub(crate) fn bool(&self, key: &str) -> FieldResult<bool> {
        match self.required(key)? {
            Value::Bool(b) => Ok(*b),
            other => Err(FieldError::new(
                self.path(key),
                format!("expected true or false, {}", found(other)),
            )),
        }
    }

    /// A required nested object.
    pub(crate) fn obj(&self, key: &str) -> FieldResult<Obj<'a>> {
        let v = self.required(key)?;
        self.obj_of(key, v)
    }

    /// An optional nested object (missing or null is `None`).
    pub(crate) fn obj_opt(&self, key: &str) -> FieldResult<Option<Obj<'a>>> {
        match self.present(key) {
            None => Ok(None),
            Some(v) => self.obj_of(key, v).map(Some),
        }
    }

    fn obj_of(&self, key: &str, v: &'a Value) -> FieldResult<Obj<'a>> {
        match v {
            Value::Object(map) => Ok(Obj {
                map,
                prefix: self.path(key),
            }),
            other => Err(FieldError::new(
                self.path(key),
                format!("expected an object, {}", found(other)),
            )),
        }
    }

    fn enum_of<T: Copy>(&self, key: &str, v: &Value, table: &[(&str, T)]) -> FieldResult<T> {
        let Value::String(s) = v else {
            return Err(FieldError::new(
                self.path(key),
                format!("expected a string, {}", found(v)),
            ));
        };
        match table.iter().find(|(name, _)| name == s) {
            Some((_, t)) => Ok(*t),
            None => Err(FieldError::new(
                self.path(key),
                format!(
                    "unknown value {}; expected one of {}",
                    echo(s),
                    table
                        .iter()
                        .map(|(name, _)| *name)
                        .collect::<Vec<_>>()
                        .join("|")
                ),
            )),
        }
    }

    /// A required string that must be one of `table`'s names; an unknown
    /// value is refused, never mapped.
    pub(crate) fn enumerated<T: Copy>(&self, key: &str, table: &[(&str, T)]) -> FieldResult<T> {
        self.enum_of(key, self.required(key)?, table)
    }

    /// An optional enumerated string (missing or null is `None`).
    pub(crate) fn enumerated_opt<T: Copy>(
        &self,
        key: &str,
        table: &[(&str, T)],
    ) -> FieldResult<Option<T>> {
        match self.present(key) {
            None => Ok(None),
            Some(v) => self.enum_of(key, v, table).map(Some),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_strings_at_the_bound_and_one_past() {
        let at = serde_json::json!({ "s": "a".repeat(INGEST_FIELD_BYTES_MAX) });
        let past = serde_json::json!({ "s": "a".repeat(INGEST_FIELD_BYTES_MAX + 1) });
        let (Value::Object(at), Value::Object(past)) = (at, past) else {
            unreachable!()
        };
        assert_eq!(
            Obj::root(&at).id("s").unwrap().len(),
            INGEST_FIELD_BYTES_MAX
        );
        assert_eq!(
            Obj::root(&past).id("s").unwrap_err().problem,
            format!(
                "string is {} bytes, longer than the limit of {INGEST_FIELD_BYTES_MAX} bytes",
                INGEST_FIELD_BYTES_MAX + 1
            )
        );
    }

    #[test]
    fn integers_are_checked_exactly() {
        let v: Value = serde_json::from_str(
            r#"{"ok":18446744073709551615,"neg":-5,"over":18446744073709551616,"frac":1.5,"float":1.0,"exp":1e3,"s":"12","n":null}"#,
        )
        .unwrap();
        let Value::Object(m) = v else { unreachable!() };
        let o = Obj::root(&m);
        assert_eq!(o.u64("ok"), Ok(u64::MAX));
        let p = |k: &str| o.u64(k).unwrap_err().problem;
        assert_eq!(
            p("neg"),
            "negative number -5; expected a non-negative integer"
        );
        assert_eq!(
            p("over"),
            "number 1.8446744073709552e+19 is greater than u64::MAX (18446744073709551615)"
        );
        assert_eq!(
            p("frac"),
            "expected a non-negative integer, found the non-integer number 1.5"
        );
        assert_eq!(
            p("float"),
            "expected a non-negative integer, found the non-integer number 1.0"
        );
        assert_eq!(
            p("exp"),
            "expected a non-negative integer, found the non-integer number 1000.0"
        );
        assert_eq!(
            p("s"),
            "expected a non-negative integer, found a string \"12\""
        );
        assert_eq!(p("n"), "is null");
        assert_eq!(p("absent"), "missing");
        assert_eq!(o.u64_opt("n"), Ok(None));
    }

    #[test]
    fn load_object_refuses_bad_text_and_duplicate_keys_at_any_depth() {
        let p = |b: &[u8]| load_object(b, &[]).err().map(|e| format!("{e}"));
        assert_eq!(
            p(b"{\"a\":\xff}").unwrap(),
            "field (line): not utf-8: invalid byte at offset 5"
        );
        assert!(p(b"{\"a\":1")
            .unwrap()
            .starts_with("field (line): truncated json"));
        assert!(p(b"{\"a\":1}x")
            .unwrap()
            .starts_with("field (line): invalid json: trailing characters"));
        assert!(p(b"[1]").unwrap().starts_with(
            "field (line): invalid json: invalid type: sequence, expected a json object"
        ));
        assert_eq!(
            p(br#"{"a":1,"a":2}"#).unwrap(),
            "field a: duplicate key; a json object must not repeat a key"
        );
        assert_eq!(
            p(br#"{"o":{"x":[{"k":1,"k":1}]}}"#).unwrap(),
            "field o.x[0].k: duplicate key; a json object must not repeat a key"
        );
        let deep = format!("{{\"a\":{}1{}}}", "[".repeat(200), "]".repeat(200));
        assert!(p(deep.as_bytes()).unwrap().contains("recursion limit"));
        let loaded =
            load_object(br#"{"raw_body":{"big":[1,2,3]},"id":"x"}"#, &["raw_body"]).unwrap();
        assert!(!loaded.map.contains_key("raw_body"));
    }

    #[test]
    fn raw_values_keep_number_text_as_written() {
        let text = r#"{"reward":1.0,"b":{"c":1,"d":1.50,"e":1e0,"f":-0}}"#;
        let got = raw_values_at(text, &[&["reward"], &["b", "d"], &["b", "e"], &["zz"]]).unwrap();
        assert_eq!(got, vec![Some("1.0"), Some("1.50"), Some("1e0"), None]);
        // serde_json alone would not keep these
        let v: Value = serde_json::from_str(text).unwrap();
        assert_eq!(v["b"]["d"].to_string(), "1.5");
        assert_eq!(v["b"]["e"].to_string(), "1.0");
        assert_eq!(v["reward"].to_string(), "1.0");
        assert_eq!(v["b"]["c"].to_string(), "1");
        let members = raw_members(r#"{ "reward" : 1 , "x\u00e9" : 0.50 }"#).unwrap();
        assert_eq!(
            members,
            vec![("reward".to_string(), "1"), ("xé".to_string(), "0.50")]
        );
    }

    #[test]
    fn canonical_json_sorts_keys_drops_whitespace_and_keeps_numbers() {
        let text = "{ \"b\": [1.0, {\"z\":null, \"a\":true}], \"a\": \"x\\u00e9\\n\\/\", \"\\u0001\": 2e3 }";
        assert_eq!(
            canonical_json(text).unwrap(),
            "{\"\\u0001\":2e3,\"a\":\"xé\\n/\",\"b\":[1.0,{\"a\":true,\"z\":null}]}"
        );
        // equal documents in different layouts canonicalize alike
        assert_eq!(
            canonical_json("{\"a\":1,\"b\":2}").unwrap(),
            canonical_json("{\n  \"b\": 2,\n  \"a\": 1\n}").unwrap()
        );
        assert!(canonical_json("{\"a\":1,\"a\":1}").is_err());
        assert!(canonical_json("{\"a\":").is_err());
        assert_eq!(canonical_json("\"s\"").unwrap(), "\"s\"");
    }
}
