//! Visits every string a payload serializes (struct fields, options, lists,
//! map keys and values, decimals), without building a JSON value: the fast
//! path of the secret guard and of the verdict's secrets row. Field paths
//! are only built (through `Event::strings`) when a string matches.

use serde::ser::{self, Serialize};

/// Calls `f` on every string `value` serializes, in order, until `f`
/// returns `true` (found); returns whether it did.
pub fn any_string<T: Serialize + ?Sized>(value: &T, f: &mut dyn FnMut(&str) -> bool) -> bool {
    let mut v = Visitor { f, found: false };
    // The visitor never fails; an error can only mean "found, stop early".
    let _ = value.serialize(&mut v);
    v.found
}

struct Visitor<'f> {
    f: &'f mut dyn FnMut(&str) -> bool,
    found: bool,
}

/// Stops the walk once a string matched.
#[derive(Debug)]
struct Stop;

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("found")
    }
}

impl std::error::Error for Stop {}

impl ser::Error for Stop {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Stop
    }
}

type R = Result<(), Stop>;

macro_rules! ignore {
    ($($name:ident: $t:ty),* $(,)?) => {
        $(fn $name(self, _: $t) -> R { Ok(()) })*
    };
}

impl ser::Serializer for &mut Visitor<'_> {
    type Ok = ();
    type Error = Stop;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = Self;
    type SerializeStruct = Self;
    type SerializeStructVariant = Self;

    ignore!(
        serialize_bool: bool, serialize_i8: i8, serialize_i16: i16, serialize_i32: i32,
        serialize_i64: i64, serialize_u8: u8, serialize_u16: u16, serialize_u32: u32,
        serialize_u64: u64, serialize_f32: f32, serialize_f64: f64, serialize_char: char,
        serialize_bytes: &[u8],
    );

    fn serialize_str(self, v: &str) -> R {
        if (self.f)(v) {
            self.found = true;
            return Err(Stop);
        }
        Ok(())
    }
    fn serialize_none(self) -> R {
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> R {
        v.serialize(self)
    }
    fn serialize_unit(self) -> R {
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> R {
        Ok(())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> R {
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, v: &T) -> R {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        v: &T,
    ) -> R {
        v.serialize(self)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self, Stop> {
        Ok(self)
    }
    fn serialize_tuple(self, _: usize) -> Result<Self, Stop> {
        Ok(self)
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self, Stop> {
        Ok(self)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self, Stop> {
        Ok(self)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self, Stop> {
        Ok(self)
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, Stop> {
        Ok(self)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self, Stop> {
        Ok(self)
    }
}

macro_rules! compound {
    ($tr:ident, $method:ident) => {
        impl ser::$tr for &mut Visitor<'_> {
            type Ok = ();
            type Error = Stop;
            fn $method<T: Serialize + ?Sized>(&mut self, v: &T) -> R {
                v.serialize(&mut **self)
            }
            fn end(self) -> R {
                Ok(())
            }
        }
    };
    ($tr:ident, $method:ident, named) => {
        impl ser::$tr for &mut Visitor<'_> {
            type Ok = ();
            type Error = Stop;
            fn $method<T: Serialize + ?Sized>(&mut self, _: &'static str, v: &T) -> R {
                v.serialize(&mut **self)
            }
            fn end(self) -> R {
                Ok(())
            }
        }
    };
}

compound!(SerializeSeq, serialize_element);
compound!(SerializeTuple, serialize_element);
compound!(SerializeTupleStruct, serialize_field);
compound!(SerializeTupleVariant, serialize_field);
compound!(SerializeStruct, serialize_field, named);
compound!(SerializeStructVariant, serialize_field, named);

impl ser::SerializeMap for &mut Visitor<'_> {
    type Ok = ();
    type Error = Stop;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> R {
        k.serialize(&mut **self)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> R {
        v.serialize(&mut **self)
    }
    fn end(self) -> R {
        Ok(())
    }
}

/// Whether `c` can change how text around it looks on a terminal or in a
/// rendered document: a control character (C0, DEL, C1: carriage return,
/// escape sequences, backspace), a bidirectional override, embedding,
/// isolate or mark, or an invisible joiner, separator or byte order mark.
pub fn is_display_control(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{2069}'
                | '\u{feff}'
        )
}

/// Untrusted text made inert for display (BIND-10): every character of
/// `is_display_control` written as `\u{XXXX}` (`\n`, `\r`, `\t` as such),
/// and a backslash doubled, so an escaped form never passes for text the
/// evidence did not hold. Text without such characters comes back as it
/// is. The one escaping of every human output (`gate`, `replay`, `report`,
/// `lineage show`); the stored bytes stay exact.
pub fn inert(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(|c| is_display_control(c) || c == '\\') {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if is_display_control(c) => out.push_str(&format!("\\u{{{:04x}}}", c as u32)),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// `s` as a JSON string: `"` and `\` escaped, control characters below
/// U+0020 as `\b \f \n \r \t` or `\u00xx` (lowercase hex), everything else
/// as UTF-8 (no `\u` escapes for non-ASCII, `/` not escaped).
pub fn push_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inert_text_escapes_every_display_control_and_keeps_the_rest() {
        let evil = "id\r\u{1b}[2K  requests      holds\u{202e}sdloh\u{2066}\u{7f}\u{85}\\u{1b}";
        let shown = inert(evil);
        assert!(
            !shown.chars().any(is_display_control),
            "BIND-10: no control, escape, carriage return or bidi override is shown raw: {shown:?}"
        );
        assert_eq!(
            shown,
            "id\\r\\u{001b}[2K  requests      holds\\u{202e}sdloh\\u{2066}\\u{007f}\\u{0085}\\\\u{1b}",
            "BIND-10: each is shown as an escape, and a backslash in the text is doubled"
        );
        let plain = "r1-fix-git-t1 ñ 日本 (ok)";
        assert!(matches!(inert(plain), std::borrow::Cow::Borrowed(p) if p == plain));
    }

    /// The visitor sees every string the JSON walk lists except struct
    /// field names and enum variant names (fixed snake_case identifiers,
    /// never operator text), for one example event of every kind.
    #[test]
    fn visits_every_string_the_json_walk_lists_but_field_and_variant_names() {
        for (event, _) in crate::testkit::vectors::example_events() {
            let mut seen = Vec::new();
            assert!(!event.any_string(&mut |s| {
                seen.push(s.to_string());
                false
            }));
            let mut rest: Vec<String> = event.strings().into_iter().map(|(_, v)| v).collect();
            for s in &seen {
                let i = rest
                    .iter()
                    .position(|r| r == s)
                    .unwrap_or_else(|| panic!("{}: {s:?} is not in the json walk", event.kind()));
                rest.swap_remove(i);
            }
            for r in &rest {
                assert!(
                    !r.is_empty()
                        && r.bytes()
                            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                    "{}: the visitor missed {r:?}",
                    event.kind()
                );
            }
        }
    }

    /// A credential in a map key, a map value or a nested list is found.
    #[test]
    fn finds_a_credential_in_keys_values_and_lists() {
        use crate::schema::events::*;
        let key = format!("AKIA{}", "ABCDEFGHIJKLMNOP");
        let check = |details: std::collections::BTreeMap<String, String>| {
            Event::CheckRecorded(CheckRecorded {
                lineage: "l".into(),
                group: None,
                check: CheckKind::DaemonHealth,
                target: "t".into(),
                status: Status::Pass,
                details,
            })
        };
        let found = |e: &Event| e.any_string(&mut |s| crate::schema::secrets::scan(s).is_some());
        assert!(found(&check(
            [(key.clone(), "v".into())].into_iter().collect()
        )));
        assert!(found(&check(
            [("k".into(), key.clone())].into_iter().collect()
        )));
        assert!(!found(&check(
            [("k".into(), "v".into())].into_iter().collect()
        )));
        let listed = Event::CaseStarted(CaseStarted {
            group: GroupRef {
                lineage: "l".into(),
                group: "g".into(),
            },
            case: CaseRef {
                task: "t".into(),
                trial: "t1".into(),
                replacement: 0,
            },
            trial_name: "n".into(),
            trial_config_blake3: "0".repeat(64),
            gate_seqs: vec![],
            command: vec!["harbor".into(), format!("--key={key}")],
        });
        assert!(found(&listed));
        assert!(crate::log::guard::check_event(&listed).is_err());
    }

    #[test]
    fn stops_at_the_first_match() {
        let v = vec!["a".to_string(), "secret".to_string(), "b".to_string()];
        let mut n = 0;
        assert!(any_string(&v, &mut |s| {
            n += 1;
            s == "secret"
        }));
        assert_eq!(n, 2);
    }
}

/// `phrase` with its indefinite article, as English reads it for the words
/// the CLI names (levels of a Harbor path, key kinds, receipt states): "an"
/// before a, e, i, o and before "un" ("an unknown receipt", "an ed25519
/// note key", "an empty directory"), "a" otherwise ("a job directory", "a
/// cosignature/v1 key", "a pending receipt").
pub fn with_article(phrase: &str) -> String {
    let lower = phrase.to_ascii_lowercase();
    let an = lower.starts_with(['a', 'e', 'i', 'o']) || lower.starts_with("un");
    format!("{} {phrase}", if an { "an" } else { "a" })
}

#[cfg(test)]
mod article_tests {
    #[test]
    fn the_article_reads_as_english() {
        // Issue 29 item 17: never "a empty directory" or "a ed25519 key".
        for (phrase, read) in [
            ("empty directory", "an empty directory"),
            ("ed25519 note", "an ed25519 note"),
            ("unknown", "an unknown"),
            ("api_key_assignment", "an api_key_assignment"),
            ("job directory", "a job directory"),
            ("cosignature/v1", "a cosignature/v1"),
            ("pending", "a pending"),
            ("not_charged", "a not_charged"),
        ] {
            assert_eq!(super::with_article(phrase), read);
        }
    }
}
