//! Domain values with one name each: `named_enum!` declares an enum whose
//! serde name, `as_str` and `Display` are the same text, written once. Stored
//! payloads and JSON keep the text they had (the macro only spells out the
//! renames `serde(rename_all)` used to derive), so converting an enum to it
//! changes no byte.

/// Declares a fieldless enum with `#[serde(rename = TEXT)]` on every
/// variant, `ALL` (declaration order), `as_str` and `Display`.
///
/// ```ignore
/// named_enum! {
///     /// The status of a verdict.
///     pub enum Status { Pass = "pass", Fail = "fail" }
/// }
/// ```
macro_rules! named_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$doc:meta])* $variant:ident = $text:literal ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash,
            serde::Serialize, serde::Deserialize,
        )]
        $vis enum $name {
            $( $(#[$doc])* #[serde(rename = $text)] $variant, )*
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            /// The value's one name (its serde name).
            pub const fn as_str(self) -> &'static str {
                match self { $( $name::$variant => $text, )* }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}
pub(crate) use named_enum;

/// Test support: every value's serde JSON is its `as_str` in quotes, and
/// the names are distinct.
#[cfg(test)]
pub(crate) fn assert_serde_names<T: serde::Serialize + Copy>(
    all: &[T],
    as_str: fn(T) -> &'static str,
) {
    let mut seen = std::collections::BTreeSet::new();
    for v in all {
        let json = serde_json::to_string(v).expect("a named enum serializes");
        assert_eq!(json, format!("\"{}\"", as_str(*v)));
        assert!(seen.insert(as_str(*v)), "{} is named twice", as_str(*v));
    }
}
