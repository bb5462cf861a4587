//! Checkpoint bodies.

use super::super::checkpoint::*;
use super::super::error::TlogError;
use super::super::merkle::{leaf_hash, Hash, TREE_SIZE_MAX};
use super::super::text::b64_encode;

const ORIGIN: &str = "benchledger.example/ledger/000102030405060708090a0b0c0d0e0f";

fn root() -> Hash {
    leaf_hash(b"root")
}

fn body(origin: &str, size: &str, root: &str) -> String {
    format!("{origin}\n{size}\n{root}\n")
}

#[test]
fn checkpoint_round_trips() {
    let cp = Checkpoint::new(ORIGIN, 7, root()).unwrap();
    let text = cp.body();
    assert_eq!(text, body(ORIGIN, "7", &b64_encode(&root())));
    assert_eq!(Checkpoint::parse(&text), Ok(cp.clone()));
    assert_eq!((cp.origin(), cp.size(), cp.root()), (ORIGIN, 7, &root()));
    let ext =
        Checkpoint::with_extensions(ORIGIN, 0, root(), vec!["x y".into(), "— z".into()]).unwrap();
    assert!(ext.body().ends_with("\nx y\n— z\n"));
    assert_eq!(Checkpoint::parse(&ext.body()), Ok(ext.clone()));
    assert_eq!(ext.extensions().len(), 2);
}

fn reason(r: &'static str) -> Result<Checkpoint, TlogError> {
    Err(TlogError::Checkpoint { reason: r })
}

#[test]
fn checkpoint_parse_is_strict() {
    let r = b64_encode(&root());
    let name = |problem| {
        Err(TlogError::Name {
            what: "origin",
            problem,
        })
    };
    let cases: Vec<(String, Result<Checkpoint, TlogError>)> = vec![
        (
            body(ORIGIN, "07", &r),
            reason("tree size has a leading zero"),
        ),
        (
            body(ORIGIN, "+7", &r),
            reason("tree size is not a decimal number"),
        ),
        (
            body(ORIGIN, "-7", &r),
            reason("tree size is not a decimal number"),
        ),
        (
            body(ORIGIN, "7 ", &r),
            reason("tree size is not a decimal number"),
        ),
        (body(ORIGIN, "", &r), reason("checkpoint has an empty line")),
        (
            body(ORIGIN, "99999999999999999999999", &r),
            reason("tree size does not fit in 64 bits"),
        ),
        (
            body(ORIGIN, "18446744073709551616", &r),
            reason("tree size does not fit in 64 bits"),
        ),
        (
            body(&format!("{ORIGIN}\u{85}"), "7", &r),
            name("contains a control character"),
        ),
        (
            body(ORIGIN, "7", &r[1..]),
            reason("root hash is not 44 characters of canonical base64"),
        ),
        (
            body(ORIGIN, "7", &format!("{r}=")),
            reason("root hash is not 44 characters of canonical base64"),
        ),
        (
            body(ORIGIN, "7", &r.replace('=', "A")),
            reason("root hash is not 44 characters of canonical base64"),
        ),
        (
            body(ORIGIN, "7", &b64_encode(&[0u8; 31])),
            reason("root hash is not 44 characters of canonical base64"),
        ),
        (
            body(ORIGIN, "7", &r).trim_end().to_owned(),
            reason("checkpoint does not end in a newline"),
        ),
        (
            format!("{ORIGIN}\n7\n"),
            reason("checkpoint has fewer than three lines"),
        ),
        (
            format!("{}\n", body(ORIGIN, "7", &r)),
            reason("checkpoint has an empty line"),
        ),
        (
            body(ORIGIN, "7", &r).replace('\n', "\r\n"),
            reason("checkpoint holds a control character"),
        ),
        (
            String::new(),
            reason("checkpoint does not end in a newline"),
        ),
    ];
    for (text, want) in cases {
        assert_eq!(Checkpoint::parse(&text), want, "{text:?}");
    }
    // A root whose last character sets a trailing bit is not canonical:
    // 32 bytes leave 2 unused bits in the 43rd character.
    const ALPHABET: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let last = ALPHABET.find(&r[42..43]).unwrap();
    let flipped = &ALPHABET[(last ^ 1)..(last ^ 1) + 1];
    let bad = format!("{}{}=", &r[..42], flipped);
    let want = reason("root hash is not 44 characters of canonical base64");
    assert_eq!(Checkpoint::parse(&body(ORIGIN, "7", &bad)), want);
    assert_eq!(
        Checkpoint::parse(&body(ORIGIN, "0", &r)).map(|c| c.size()),
        Ok(0)
    );
}

#[test]
fn tree_size_max_in_checkpoints() {
    let r = b64_encode(&root());
    let at = body(ORIGIN, &TREE_SIZE_MAX.to_string(), &r);
    assert_eq!(Checkpoint::parse(&at).map(|c| c.size()), Ok(TREE_SIZE_MAX));
    let past = body(ORIGIN, &(TREE_SIZE_MAX + 1).to_string(), &r);
    assert_eq!(
        Checkpoint::parse(&past),
        Err(TlogError::TreeSizeTooLarge {
            size: TREE_SIZE_MAX + 1
        })
    );
    assert!(Checkpoint::new(ORIGIN, TREE_SIZE_MAX, root()).is_ok());
    assert!(Checkpoint::new(ORIGIN, TREE_SIZE_MAX + 1, root()).is_err());
}

/// C2SP tlog-checkpoint: the origin must be non-empty; that it has no
/// spaces or plus signs is only recommended, and clients must not assume
/// it (sum.golang.org's origin is `go.sum database tree`).
#[test]
fn origins_with_spaces_and_plus_signs_parse() {
    let r = b64_encode(&root());
    for origin in [
        "go.sum database tree",
        "a+b",
        "trailing space ",
        " leading",
        "no\u{a0}break",
    ] {
        let cp = Checkpoint::parse(&body(origin, "7", &r))
            .unwrap_or_else(|e| panic!("TRUST-8: origin {origin:?} parses: {e}"));
        assert_eq!(
            cp.origin(),
            origin,
            "TRUST-8: the origin is the whole first line"
        );
        assert_eq!(Checkpoint::new(origin, 7, root()), Ok(cp));
    }
}

#[test]
fn origin_bytes_max_at_and_past_the_bound() {
    let at = "o".repeat(ORIGIN_BYTES_MAX);
    let past = "o".repeat(ORIGIN_BYTES_MAX + 1);
    assert!(Checkpoint::new(&at, 1, root()).is_ok());
    let too_long = Err(TlogError::Name {
        what: "origin",
        problem: "is too long",
    });
    assert_eq!(Checkpoint::new(&past, 1, root()), too_long);
    let r = b64_encode(&root());
    assert!(Checkpoint::parse(&body(&at, "1", &r)).is_ok());
    assert_eq!(Checkpoint::parse(&body(&past, "1", &r)), too_long);
    assert_eq!(
        Checkpoint::new("", 1, root()),
        Err(TlogError::Name {
            what: "origin",
            problem: "is empty"
        })
    );
}

#[test]
fn extension_lines_max_at_and_past_the_bound() {
    let lines = |n| (0..n).map(|i| format!("ext {i}")).collect::<Vec<_>>();
    let at = Checkpoint::with_extensions(ORIGIN, 1, root(), lines(EXTENSION_LINES_MAX)).unwrap();
    assert_eq!(Checkpoint::parse(&at.body()), Ok(at.clone()));
    let too_many = reason("too many extension lines");
    assert_eq!(
        Checkpoint::with_extensions(ORIGIN, 1, root(), lines(EXTENSION_LINES_MAX + 1)),
        too_many
    );
    assert_eq!(
        Checkpoint::parse(&format!("{}ext 16\n", at.body())),
        too_many
    );
    assert_eq!(
        Checkpoint::with_extensions(ORIGIN, 1, root(), vec![String::new()]),
        reason("an extension line is empty")
    );
    assert_eq!(
        Checkpoint::with_extensions(ORIGIN, 1, root(), vec!["a\nb".into()]),
        reason("an extension line holds a control character")
    );
}

#[test]
fn checkpoint_bytes_max_at_and_past_the_bound() {
    let head = Checkpoint::new(ORIGIN, 1, root()).unwrap().body().len();
    // Fill to exactly the bound with two extension lines (each + "\n").
    let room = CHECKPOINT_BYTES_MAX - head - 2;
    let ext = vec!["a".repeat(room / 2), "b".repeat(room - room / 2)];
    let at = Checkpoint::with_extensions(ORIGIN, 1, root(), ext.clone()).unwrap();
    assert_eq!(at.body().len(), CHECKPOINT_BYTES_MAX);
    assert_eq!(Checkpoint::parse(&at.body()), Ok(at.clone()));
    let mut past = ext;
    past[1].push('c');
    let too_long = reason("checkpoint is too long");
    assert_eq!(
        Checkpoint::with_extensions(ORIGIN, 1, root(), past),
        too_long
    );
    assert_eq!(Checkpoint::parse(&format!("{}c\n", at.body())), too_long);
}
