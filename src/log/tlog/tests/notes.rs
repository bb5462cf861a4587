//! Signed notes, keys and cosignatures.

use super::super::checkpoint::{verify_checkpoint_note, Checkpoint};
use super::super::cosignature::*;
use super::super::error::TlogError;
use super::super::merkle::leaf_hash;
use super::super::note::*;
use super::super::text::b64_encode;
use super::super::vectors::{
    C2SP_EXAMPLE_NOTE, C2SP_EXAMPLE_VKEY, GO_NOTE, GO_NOTE_SKEY, GO_NOTE_VKEY,
};

fn key(name: &str, kind: KeyKind, byte: u8) -> SignerKey {
    SignerKey::from_seed(name, kind, [byte; 32]).unwrap()
}

fn log_key() -> SignerKey {
    key("log.example/a", KeyKind::Ed25519, 1)
}

fn checkpoint_body() -> String {
    Checkpoint::new("log.example/a", 5, leaf_hash(b"r"))
        .unwrap()
        .body()
}

#[test]
fn published_examples_verify() {
    let c2sp = VerifierKey::parse(C2SP_EXAMPLE_VKEY).unwrap();
    let opened = open_note(C2SP_EXAMPLE_NOTE, std::slice::from_ref(&c2sp)).unwrap();
    assert_eq!(opened.text, "This is an example message.\n");
    assert_eq!(c2sp.encode(), C2SP_EXAMPLE_VKEY);
    assert_eq!(c2sp.key_id(), 0x530d903a);
    // Go's key pair: the signer key re-derives the verifier key, and signing
    // reproduces Go's note byte for byte (Ed25519 is deterministic).
    let skey = SignerKey::parse(GO_NOTE_SKEY).unwrap();
    assert_eq!(skey.encode(), GO_NOTE_SKEY);
    assert_eq!(skey.verifier().encode(), GO_NOTE_VKEY);
    let text = GO_NOTE.split("\n\n").next().unwrap().to_owned() + "\n";
    assert_eq!(sign_note(&text, &[&skey]).unwrap(), GO_NOTE);
    let vkey = VerifierKey::parse(GO_NOTE_VKEY).unwrap();
    assert!(open_note(GO_NOTE, std::slice::from_ref(&vkey)).is_ok());
    let altered = GO_NOTE.replacen("answer", "Answer", 1);
    let bad = Err(TlogError::BadSignature {
        name: "PeterNeumann".into(),
        key_id: 0xc74f20a3,
    });
    assert_eq!(open_note(&altered, &[vkey]), bad);
}

#[test]
fn sign_and_open_round_trip() {
    let (a, b) = (log_key(), key("other.example/b", KeyKind::Ed25519, 2));
    let text = "line one\n\nafter a blank line\n";
    let note = sign_note(text, &[&a, &b]).unwrap();
    let parsed = SignedNote::parse(&note).unwrap();
    assert_eq!((parsed.text(), parsed.signatures().len()), (text, 2));
    assert_eq!(parsed.encode(), note);
    let opened = open_note(&note, &[a.verifier()]).unwrap();
    assert_eq!(opened.text, text);
    assert_eq!(opened.verified.len(), 1);
    assert_eq!(opened.unverified.len(), 1, "unknown key ignored");
    let opened = open_note(&note, &[a.verifier(), b.verifier()]).unwrap();
    assert_eq!(opened.verified.len(), 2);
    let stranger = key("stranger.example/c", KeyKind::Ed25519, 3);
    assert_eq!(
        open_note(&note, &[stranger.verifier()]),
        Err(TlogError::NoKnownSignature)
    );
    // A key with the same name but another key id is unknown, not bad.
    let namesake = key("log.example/a", KeyKind::Ed25519, 9);
    assert_eq!(
        open_note(&note, &[namesake.verifier()]),
        Err(TlogError::NoKnownSignature)
    );
}

#[test]
fn a_bad_signature_from_a_known_key_fails_the_note() {
    let (a, b) = (log_key(), key("other.example/b", KeyKind::Ed25519, 2));
    let text = "hello\n";
    let good = sign_note(text, &[&a]).unwrap();
    let forged = sign_note("other\n", &[&b]).unwrap();
    // Graft b's signature (for another text) next to a's.
    let line = forged.split("\n\n").nth(1).unwrap();
    let note = format!("{good}{line}");
    let bad = Err(TlogError::BadSignature {
        name: b.name().into(),
        key_id: b.key_id(),
    });
    assert_eq!(open_note(&note, &[a.verifier(), b.verifier()]), bad);
    assert!(open_note(&note, &[a.verifier()]).is_ok());
    // A repeated identical signature is counted once.
    let twice = format!("{good}{}", good.split("\n\n").nth(1).unwrap());
    assert_eq!(
        open_note(&twice, &[a.verifier()]).unwrap().verified.len(),
        1
    );
}

#[test]
fn note_syntax_is_strict() {
    let a = log_key();
    let note = sign_note("hello\n", &[&a]).unwrap();
    let sig = note.split("\u{2014} ").nth(1).unwrap().to_owned();
    let m = |r| Err(TlogError::Note { reason: r });
    let cases: Vec<(String, Result<SignedNote, TlogError>)> = vec![
        (
            "hello\n".into(),
            m("note has no blank line before its signatures"),
        ),
        ("hello\n\n".into(), m("note has no signature lines")),
        (
            note.trim_end().into(),
            m("note text does not end in a newline"),
        ),
        (
            note.replace("\u{2014} ", "- "),
            m("signature line does not start with an em dash and a space"),
        ),
        (
            note.replace("\u{2014} ", "\u{2014}  "),
            Err(TlogError::Name {
                what: "key name",
                problem: "is empty",
            }),
        ),
        (
            note.replace("a ", "a\u{2003}"),
            m("signature line has no space after the key name"),
        ),
        (
            note.replace("hello", "hel\rlo"),
            m("note holds a control character"),
        ),
        (
            note.replace("hello", "hel\tlo"),
            m("note holds a control character"),
        ),
        (
            format!("hello\n\n\u{2014} n {}\n", b64_encode(&[1, 2, 3, 4])),
            m("signature is shorter than five bytes"),
        ),
        (
            format!("hello\n\n\u{2014} n {}\n", "AAAAAAA"),
            m("signature is not canonical base64"),
        ),
        (
            format!("hello\n\n\u{2014} n+x {sig}"),
            Err(TlogError::Name {
                what: "key name",
                problem: "contains a plus sign",
            }),
        ),
    ];
    for (text, want) in cases {
        assert_eq!(SignedNote::parse(&text), want, "{text:?}");
    }
    assert!(SignedNote::parse_bytes(b"hi\n\n\xff\n").is_err());
    assert!(SignedNote::parse_bytes(note.as_bytes()).is_ok());
    assert_eq!(
        sign_note("no newline", &[&a]),
        Err(TlogError::Note {
            reason: "note text does not end in a newline"
        })
    );
    assert_eq!(
        sign_note("x\n", &[]),
        Err(TlogError::Note {
            reason: "a note needs at least one signer"
        })
    );
    let dup = Err(TlogError::DuplicateSigner {
        name: a.name().into(),
        key_id: a.key_id(),
    });
    assert_eq!(sign_note("x\n", &[&a, &a]), dup);
    let amb = Err(TlogError::AmbiguousVerifier {
        name: a.name().into(),
        key_id: a.key_id(),
    });
    assert_eq!(open_note(&note, &[a.verifier(), a.verifier()]), amb);
}

#[test]
fn signatures_max_at_and_past_the_bound() {
    let signers: Vec<SignerKey> = (0..=SIGNATURES_MAX)
        .map(|i| key(&format!("k{i}.example"), KeyKind::Ed25519, i as u8))
        .collect();
    let refs: Vec<&SignerKey> = signers.iter().collect();
    let at = sign_note("x\n", &refs[..SIGNATURES_MAX]).unwrap();
    assert_eq!(
        SignedNote::parse(&at).unwrap().signatures().len(),
        SIGNATURES_MAX
    );
    assert!(open_note(&at, &[signers[0].verifier()]).is_ok());
    let past = TlogError::TooManySignatures {
        count: SIGNATURES_MAX + 1,
    };
    assert_eq!(sign_note("x\n", &refs).err(), Some(past.clone()));
    let extra = sign_note("x\n", &refs[SIGNATURES_MAX..]).unwrap();
    let past_note = format!("{at}{}", extra.split("\n\n").nth(1).unwrap());
    assert_eq!(SignedNote::parse(&past_note).err(), Some(past.clone()));
    let mut parsed = SignedNote::parse(&at).unwrap();
    let one = SignedNote::parse(&extra).unwrap().signatures()[0].clone();
    assert_eq!(parsed.push_signature(one), Err(past));
    let mut small = SignedNote::parse(&extra).unwrap();
    let empty = NoteSignature {
        name: "n".into(),
        key_id: 1,
        signature: Vec::new(),
    };
    let short = Err(TlogError::Note {
        reason: "signature is shorter than five bytes",
    });
    assert_eq!(small.push_signature(empty), short);
}

#[test]
fn note_bytes_max_at_and_past_the_bound() {
    let a = log_key();
    let probe = sign_note("x\n", &[&a]).unwrap();
    let overhead = probe.len() - 2;
    let fill = "y".repeat(NOTE_BYTES_MAX - overhead - 1);
    let at = sign_note(&format!("{fill}\n"), &[&a]).unwrap();
    assert_eq!(at.len(), NOTE_BYTES_MAX);
    assert!(open_note(&at, &[a.verifier()]).is_ok());
    let too_long = Some(TlogError::Note {
        reason: "note is too long",
    });
    assert_eq!(sign_note(&format!("{fill}y\n"), &[&a]).err(), too_long);
    let past = format!("y{at}");
    assert_eq!(SignedNote::parse(&past).err(), too_long);
    assert_eq!(SignedNote::parse_bytes(past.as_bytes()).err(), too_long);
}

#[test]
fn key_encodings_are_strict() {
    let a = log_key();
    let vkey = a.verifier().encode();
    assert_eq!(VerifierKey::parse(&vkey), Ok(a.verifier()));
    assert_eq!(
        SignerKey::parse(&a.encode()).map(|k| k.encode()),
        Ok(a.encode())
    );
    let parts: Vec<&str> = vkey.split('+').collect();
    let k = |r| Err(TlogError::Key { reason: r });
    let wrong_id = format!("{}+{:08x}+{}", parts[0], a.key_id() ^ 1, parts[2]);
    let cases: Vec<(String, Result<VerifierKey, TlogError>)> = vec![
        (
            wrong_id,
            Err(TlogError::KeyIdMismatch {
                found: a.key_id() ^ 1,
                expected: a.key_id(),
            }),
        ),
        (
            format!("{}+{}+{}", parts[0], parts[1].to_uppercase(), parts[2]),
            k("key id is not 8 lowercase hex digits"),
        ),
        (
            format!("{}+{}0+{}", parts[0], parts[1], parts[2]),
            k("key id is not 8 lowercase hex digits"),
        ),
        (
            format!("{}+{}", parts[0], parts[1]),
            k("key is not three parts joined by plus signs"),
        ),
        (
            format!("{vkey}+x"),
            k("key material is not canonical base64"),
        ),
        (
            format!("{}+{}+{}", parts[0], parts[1], &parts[2][1..]),
            k("key material is not canonical base64"),
        ),
        (
            format!("{}+{}+{}", parts[0], parts[1], b64_encode(&[1u8; 32])),
            k("key material is not a type byte and 32 bytes"),
        ),
        (
            format!("{}+{}+{}", parts[0], parts[1], b64_encode(&[2u8; 33])),
            k("key has an unsupported type byte"),
        ),
        (
            format!("a b+{}+{}", parts[1], parts[2]),
            Err(TlogError::Name {
                what: "key name",
                problem: "contains white space",
            }),
        ),
        (
            format!("+{}+{}", parts[1], parts[2]),
            Err(TlogError::Name {
                what: "key name",
                problem: "is empty",
            }),
        ),
    ];
    for (text, want) in cases {
        assert_eq!(VerifierKey::parse(&text), want, "{text:?}");
    }
    // The identity point (small order) is refused.
    let mut identity = [0u8; 32];
    identity[0] = 1;
    assert_eq!(
        VerifierKey::new("n", KeyKind::Ed25519, identity),
        k("public key is a small-order point")
    );
    assert!(SignerKey::parse(&vkey).is_err());
    assert!(SignerKey::parse(&a.encode().replacen("PRIVATE+KEY+", "PRIVATE+KEY+x", 1)).is_err());
    assert!(!format!("{a:?}").contains(&a.encode()[a.encode().len() - 40..]));
}

#[test]
fn key_name_bytes_max_at_and_past_the_bound() {
    let at = "n".repeat(KEY_NAME_BYTES_MAX);
    let past = "n".repeat(KEY_NAME_BYTES_MAX + 1);
    let signer = SignerKey::from_seed(&at, KeyKind::Ed25519, [4; 32]).unwrap();
    let note = sign_note("x\n", &[&signer]).unwrap();
    assert!(open_note(
        &note,
        &[VerifierKey::parse(&signer.verifier().encode()).unwrap()]
    )
    .is_ok());
    let too_long = TlogError::Name {
        what: "key name",
        problem: "is too long",
    };
    assert_eq!(
        SignerKey::from_seed(&past, KeyKind::Ed25519, [4; 32]).err(),
        Some(too_long.clone())
    );
    let vkey = signer.verifier().encode().replacen(&at, &past, 1);
    assert_eq!(VerifierKey::parse(&vkey), Err(too_long.clone()));
    assert_eq!(
        SignedNote::parse(&note.replacen(&at, &past, 1)),
        Err(too_long)
    );
}

#[test]
fn generated_keys_are_fresh_and_usable() {
    let a = SignerKey::generate("gen.example/a", KeyKind::Ed25519).unwrap();
    let b = SignerKey::generate("gen.example/a", KeyKind::Ed25519).unwrap();
    assert_ne!(a.encode(), b.encode());
    let note = sign_note("x\n", &[&a]).unwrap();
    assert!(open_note(
        &note,
        &[VerifierKey::parse(&a.verifier().encode()).unwrap()]
    )
    .is_ok());
    let w = SignerKey::generate("gen.example/w", KeyKind::CosignatureV1).unwrap();
    let wv = VerifierKey::parse(&w.verifier().encode()).unwrap();
    assert_eq!(wv.kind(), KeyKind::CosignatureV1);
    assert_eq!(
        wv.encode().splitn(3, '+').nth(2).unwrap().as_bytes()[0],
        b'B',
        "type 0x04 = 000001|00"
    );
    assert_eq!(
        sign_note("x\n", &[&w]),
        Err(TlogError::WrongKeyKind {
            name: w.name().into(),
            found: "cosignature/v1",
            wanted: "ed25519 note"
        })
    );
}

#[test]
fn cosignatures_verify_and_fail_precisely() {
    let (log, w) = (
        log_key(),
        key("witness.example/w", KeyKind::CosignatureV1, 7),
    );
    let body = checkpoint_body();
    let line = cosign(&body, &w, 1_700_000_000).unwrap();
    assert_eq!(line.signature.len(), 72);
    assert_eq!(&line.signature[..8], &1_700_000_000u64.to_be_bytes());
    assert_eq!(
        verify_cosignature(&body, &line, &w.verifier()),
        Ok(1_700_000_000)
    );
    let mut note = SignedNote::parse(&sign_note(&body, &[&log]).unwrap()).unwrap();
    note.push_signature(line.clone()).unwrap();
    let text = note.encode();
    let opened = verify_checkpoint_note(&text, &log.verifier(), &[w.verifier()]).unwrap();
    let times: Vec<_> = opened.note.verified.iter().map(|v| v.timestamp).collect();
    assert_eq!(times, vec![None, Some(1_700_000_000)]);
    // Without the witness key the cosignature is ignored.
    assert_eq!(
        verify_checkpoint_note(&text, &log.verifier(), &[])
            .unwrap()
            .note
            .unverified
            .len(),
        1
    );
    // A changed timestamp breaks it.
    let mut moved = line.clone();
    moved.signature[7] ^= 1;
    let bad = Err(TlogError::BadSignature {
        name: w.name().into(),
        key_id: w.key_id(),
    });
    assert_eq!(verify_cosignature(&body, &moved, &w.verifier()), bad);
    let mut note2 = SignedNote::parse(&sign_note(&body, &[&log]).unwrap()).unwrap();
    note2.push_signature(moved).unwrap();
    assert_eq!(
        verify_checkpoint_note(&note2.encode(), &log.verifier(), &[w.verifier()]).err(),
        bad.err()
    );
    // Wrong kinds are refused both ways.
    assert!(cosign(&body, &log, 1).is_err());
    assert!(verify_checkpoint_note(&text, &w.verifier(), &[]).is_err());
    assert!(verify_checkpoint_note(&text, &log.verifier(), &[log.verifier()]).is_err());
    // The log key must be among the signers.
    let other = key("log.example/b", KeyKind::Ed25519, 8);
    let by_other = sign_note(&body, &[&other]).unwrap();
    let missing = TlogError::RequiredKeyMissing {
        name: log.name().into(),
        key_id: log.key_id(),
    };
    assert_eq!(
        verify_checkpoint_note(&by_other, &log.verifier(), &[]).err(),
        Some(TlogError::NoKnownSignature)
    );
    // Signed by another known key only: still not the log's checkpoint.
    let mut with_cosig = SignedNote::parse(&by_other).unwrap();
    with_cosig.push_signature(line).unwrap();
    let text = with_cosig.encode();
    assert_eq!(
        verify_checkpoint_note(&text, &log.verifier(), &[w.verifier()]).err(),
        Some(missing)
    );
    assert!(cosign("not a checkpoint\n", &w, 1).is_err());
}

#[test]
fn cosignature_time_max_at_and_past_the_bound() {
    let w = key("witness.example/w", KeyKind::CosignatureV1, 7);
    let body = checkpoint_body();
    let at = cosign(&body, &w, COSIGNATURE_TIME_SECONDS_MAX).unwrap();
    assert_eq!(
        verify_cosignature(&body, &at, &w.verifier()),
        Ok(COSIGNATURE_TIME_SECONDS_MAX)
    );
    let past = COSIGNATURE_TIME_SECONDS_MAX + 1;
    assert_eq!(
        cosign(&body, &w, past),
        Err(TlogError::CosignatureTimeTooLarge { timestamp: past })
    );
    let mut forged = at.clone();
    forged.signature[..8].copy_from_slice(&past.to_be_bytes());
    assert_eq!(
        verify_cosignature(&body, &forged, &w.verifier()),
        Err(TlogError::CosignatureTimeTooLarge { timestamp: past })
    );
    assert_eq!(cosigned_message("b\n", 5), "cosignature/v1\ntime 5\nb\n");
}
