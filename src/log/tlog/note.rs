//! C2SP signed-note: text, a blank line, then signature lines
//! `— <key name> <base64(key id || signature)>` (U+2014, space).
//!
//! Keys are Ed25519, of two kinds sharing one encoding: note keys
//! (signature type 0x01, signing the note text) and cosignature/v1 keys
//! (type 0x04, see `cosignature`). Key id = the first four bytes, big-endian,
//! of SHA-256(name || 0x0A || type || 32-byte public key).
//!
//! Verifier key: `<name>+<hex8 key id>+<base64(type || public key)>`.
//! Signer key:   `PRIVATE+KEY+<name>+<hex8 key id>+<base64(type || seed)>`
//! (the golang.org/x/mod/sumdb/note encoding; the seed is RFC 8032's
//! 32-byte private key).

use std::fmt;

use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};

use super::cosignature;
use super::error::TlogError;
use super::text::{b64_decode, b64_encode, check_name, has_control, hex_decode};

/// The largest note, in bytes (text and signature lines).
pub const NOTE_BYTES_MAX: usize = 128 * 1024;
/// The most signature lines a note may carry (C2SP: at least 16).
pub const SIGNATURES_MAX: usize = 32;
/// The longest key name, in bytes.
pub const KEY_NAME_BYTES_MAX: usize = 256;

const SIGNATURE_LINE_PREFIX: &str = "\u{2014} ";
const SIGNER_KEY_PREFIX: &str = "PRIVATE+KEY+";

fn malformed(reason: &'static str) -> TlogError {
    TlogError::Note { reason }
}

fn bad_key(reason: &'static str) -> TlogError {
    TlogError::Key { reason }
}

/// The two Ed25519 signature types this module knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyKind {
    /// Signature type 0x01: Ed25519 over the note text.
    Ed25519,
    /// Signature type 0x04: timestamped Ed25519 checkpoint cosignature v1.
    CosignatureV1,
}

impl KeyKind {
    /// The signature type identifier byte.
    pub fn alg_byte(self) -> u8 {
        match self {
            KeyKind::Ed25519 => 0x01,
            KeyKind::CosignatureV1 => 0x04,
        }
    }

    /// The kind of a signature type byte, if known.
    pub fn from_alg_byte(byte: u8) -> Option<Self> {
        match byte {
            0x01 => Some(KeyKind::Ed25519),
            0x04 => Some(KeyKind::CosignatureV1),
            _ => None,
        }
    }

    /// A short name for messages.
    pub fn label(self) -> &'static str {
        match self {
            KeyKind::Ed25519 => "ed25519 note",
            KeyKind::CosignatureV1 => "cosignature/v1",
        }
    }
}

/// The C2SP key id: `SHA-256(name || "\n" || type || public key)[:4]`, big-endian.
pub fn key_id(name: &str, kind: KeyKind, public_key: &[u8; 32]) -> u32 {
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update([b'\n', kind.alg_byte()]);
    h.update(public_key);
    let digest = h.finalize();
    u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]])
}

/// Split `<name>+<hex8>+<base64>` at the first two plus signs (base64 may
/// hold more) and check name, id syntax and key length; returns (name, id,
/// kind, 32 key bytes).
fn split_key(text: &str) -> Result<(&str, u32, KeyKind, [u8; 32]), TlogError> {
    let parts: Vec<&str> = text.splitn(3, '+').collect();
    let [name, id_hex, material] = parts[..] else {
        return Err(bad_key("key is not three parts joined by plus signs"));
    };
    check_name("key name", name, KEY_NAME_BYTES_MAX)?;
    let id = hex_decode::<4>(id_hex).ok_or(bad_key("key id is not 8 lowercase hex digits"))?;
    let raw = b64_decode(material).ok_or(bad_key("key material is not canonical base64"))?;
    if raw.len() != 33 {
        return Err(bad_key("key material is not a type byte and 32 bytes"));
    }
    let kind = KeyKind::from_alg_byte(raw[0]).ok_or(bad_key("key has an unsupported type byte"))?;
    let mut bytes = [0u8; 32];
    bytes.copy_from_slice(&raw[1..]);
    Ok((name, u32::from_be_bytes(id), kind, bytes))
}

fn check_key_id(found: u32, expected: u32) -> Result<(), TlogError> {
    if found != expected {
        return Err(TlogError::KeyIdMismatch { found, expected });
    }
    Ok(())
}

/// A public key with its name and kind (a C2SP verifier key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifierKey {
    name: String,
    kind: KeyKind,
    key_id: u32,
    key: VerifyingKey,
}

impl VerifierKey {
    /// A verifier key from its parts.
    pub fn new(name: &str, kind: KeyKind, public_key: [u8; 32]) -> Result<Self, TlogError> {
        check_name("key name", name, KEY_NAME_BYTES_MAX)?;
        let key = VerifyingKey::from_bytes(&public_key)
            .map_err(|_| bad_key("public key is not an ed25519 point"))?;
        if key.is_weak() {
            return Err(bad_key("public key is a small-order point"));
        }
        let key_id = key_id(name, kind, &public_key);
        Ok(Self {
            name: name.to_owned(),
            kind,
            key_id,
            key,
        })
    }

    /// Parse `<name>+<hex8 key id>+<base64(type || public key)>`.
    pub fn parse(vkey: &str) -> Result<Self, TlogError> {
        let (name, id, kind, bytes) = split_key(vkey)?;
        let key = Self::new(name, kind, bytes)?;
        check_key_id(id, key.key_id)?;
        Ok(key)
    }

    /// The verifier key text.
    pub fn encode(&self) -> String {
        let mut material = vec![self.kind.alg_byte()];
        material.extend_from_slice(self.key.as_bytes());
        format!(
            "{}+{:08x}+{}",
            self.name,
            self.key_id,
            b64_encode(&material)
        )
    }

    /// The key name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The signature type.
    pub fn kind(&self) -> KeyKind {
        self.kind
    }

    /// The C2SP key id.
    pub fn key_id(&self) -> u32 {
        self.key_id
    }

    /// The 32-byte RFC 8032 public key.
    pub fn public_key(&self) -> [u8; 32] {
        self.key.to_bytes()
    }

    /// RFC 8032 verification (strict: no small-order R, canonical S).
    pub(super) fn verify_raw(&self, message: &[u8], signature: &[u8]) -> Result<(), TlogError> {
        let bad = || TlogError::BadSignature {
            name: self.name.clone(),
            key_id: self.key_id,
        };
        let signature = Signature::from_slice(signature).map_err(|_| bad())?;
        self.key
            .verify_strict(message, &signature)
            .map_err(|_| bad())
    }
}

/// A private key with its name and kind (a signer key). Its `Debug` output
/// hides the seed; `encode` reveals it.
#[derive(Clone)]
pub struct SignerKey {
    name: String,
    kind: KeyKind,
    key_id: u32,
    key: SigningKey,
}

impl fmt::Debug for SignerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SignerKey")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("key_id", &format_args!("{:08x}", self.key_id))
            .finish_non_exhaustive()
    }
}

impl SignerKey {
    /// A new key from 32 bytes of the system's random source.
    pub fn generate(name: &str, kind: KeyKind) -> Result<Self, TlogError> {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(|e| TlogError::Random(e.to_string()))?;
        let key = Self::from_seed(name, kind, seed);
        seed.fill(0);
        key
    }

    /// The key with this RFC 8032 seed (tests and vectors).
    pub fn from_seed(name: &str, kind: KeyKind, seed: [u8; 32]) -> Result<Self, TlogError> {
        check_name("key name", name, KEY_NAME_BYTES_MAX)?;
        let key = SigningKey::from_bytes(&seed);
        let key_id = key_id(name, kind, key.verifying_key().as_bytes());
        Ok(Self {
            name: name.to_owned(),
            kind,
            key_id,
            key,
        })
    }

    /// Parse `PRIVATE+KEY+<name>+<hex8 key id>+<base64(type || seed)>`.
    pub fn parse(skey: &str) -> Result<Self, TlogError> {
        let rest = skey
            .strip_prefix(SIGNER_KEY_PREFIX)
            .ok_or(bad_key("signer key does not start with PRIVATE+KEY+"))?;
        let (name, id, kind, seed) = split_key(rest)?;
        let key = Self::from_seed(name, kind, seed)?;
        check_key_id(id, key.key_id)?;
        Ok(key)
    }

    /// The signer key text. It holds the secret seed.
    pub fn encode(&self) -> String {
        let mut material = vec![self.kind.alg_byte()];
        material.extend_from_slice(self.key.as_bytes());
        let text = format!(
            "{SIGNER_KEY_PREFIX}{}+{:08x}+{}",
            self.name,
            self.key_id,
            b64_encode(&material)
        );
        material.fill(0);
        text
    }

    /// The matching verifier key.
    pub fn verifier(&self) -> VerifierKey {
        VerifierKey {
            name: self.name.clone(),
            kind: self.kind,
            key_id: self.key_id,
            key: self.key.verifying_key(),
        }
    }

    /// The key name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The signature type.
    pub fn kind(&self) -> KeyKind {
        self.kind
    }

    /// The C2SP key id.
    pub fn key_id(&self) -> u32 {
        self.key_id
    }

    pub(super) fn sign_raw(&self, message: &[u8]) -> [u8; 64] {
        self.key.sign(message).to_bytes()
    }
}

/// One signature line: key name, key id and the signature bytes after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteSignature {
    /// The key name.
    pub name: String,
    /// The 32-bit key id (first four bytes of the decoded signature).
    pub key_id: u32,
    /// The bytes after the key id (for 0x04 keys: timestamp and signature).
    pub signature: Vec<u8>,
}

impl NoteSignature {
    /// The line `— <name> <base64(key id || signature)>\n`.
    pub fn line(&self) -> String {
        let mut raw = self.key_id.to_be_bytes().to_vec();
        raw.extend_from_slice(&self.signature);
        format!(
            "{SIGNATURE_LINE_PREFIX}{} {}\n",
            self.name,
            b64_encode(&raw)
        )
    }

    /// Parse one signature line (without its newline).
    pub fn parse(line: &str) -> Result<Self, TlogError> {
        let rest = line.strip_prefix(SIGNATURE_LINE_PREFIX).ok_or(malformed(
            "signature line does not start with an em dash and a space",
        ))?;
        let (name, encoded) = rest
            .split_once(' ')
            .ok_or(malformed("signature line has no space after the key name"))?;
        check_name("key name", name, KEY_NAME_BYTES_MAX)?;
        let raw = b64_decode(encoded).ok_or(malformed("signature is not canonical base64"))?;
        if raw.len() < 5 {
            return Err(malformed("signature is shorter than five bytes"));
        }
        let key_id = u32::from_be_bytes([raw[0], raw[1], raw[2], raw[3]]);
        Ok(Self {
            name: name.to_owned(),
            key_id,
            signature: raw[4..].to_vec(),
        })
    }
}

/// A parsed, not yet verified, signed note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedNote {
    text: String,
    signatures: Vec<NoteSignature>,
}

fn check_text(text: &str) -> Result<(), TlogError> {
    if text.len() > NOTE_BYTES_MAX {
        return Err(malformed("note is too long"));
    }
    if !text.ends_with('\n') {
        return Err(malformed("note text does not end in a newline"));
    }
    if has_control(text) {
        return Err(malformed("note holds a control character"));
    }
    Ok(())
}

impl SignedNote {
    /// Parse a signed note: at most [`NOTE_BYTES_MAX`] bytes, no control
    /// characters but newline, text up to the last blank line, then 1 to
    /// [`SIGNATURES_MAX`] signature lines.
    pub fn parse(note: &str) -> Result<Self, TlogError> {
        check_text(note)?;
        let split = note
            .rfind("\n\n")
            .ok_or(malformed("note has no blank line before its signatures"))?;
        let (text, block) = (&note[..split + 1], &note[split + 2..]);
        let Some(block) = block.strip_suffix('\n') else {
            return Err(malformed("note has no signature lines"));
        };
        let count = block.split('\n').count();
        if count > SIGNATURES_MAX {
            return Err(TlogError::TooManySignatures { count });
        }
        let signatures = block
            .split('\n')
            .map(NoteSignature::parse)
            .collect::<Result<_, _>>()?;
        Ok(Self {
            text: text.to_owned(),
            signatures,
        })
    }

    /// Parse a note given as bytes (must be UTF-8).
    pub fn parse_bytes(note: &[u8]) -> Result<Self, TlogError> {
        if note.len() > NOTE_BYTES_MAX {
            return Err(malformed("note is too long"));
        }
        let text = std::str::from_utf8(note).map_err(|_| malformed("note is not utf-8"))?;
        Self::parse(text)
    }

    /// The note text (ends in a newline; excludes the blank line).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The signature lines, in order.
    pub fn signatures(&self) -> &[NoteSignature] {
        &self.signatures
    }

    /// Add a signature line (e.g. a cosignature) at the end.
    pub fn push_signature(&mut self, signature: NoteSignature) -> Result<(), TlogError> {
        if self.signatures.len() >= SIGNATURES_MAX {
            return Err(TlogError::TooManySignatures {
                count: self.signatures.len() + 1,
            });
        }
        check_name("key name", &signature.name, KEY_NAME_BYTES_MAX)?;
        if signature.signature.is_empty() {
            return Err(malformed("signature is shorter than five bytes"));
        }
        self.signatures.push(signature);
        if self.encode().len() > NOTE_BYTES_MAX {
            self.signatures.pop();
            return Err(malformed("note is too long"));
        }
        Ok(())
    }

    /// The note: text, blank line, signature lines.
    pub fn encode(&self) -> String {
        let mut out = self.text.clone();
        out.push('\n');
        for signature in &self.signatures {
            out.push_str(&signature.line());
        }
        out
    }
}

/// Sign `text` (ending in a newline) with one or more Ed25519 note keys.
pub fn sign_note(text: &str, signers: &[&SignerKey]) -> Result<String, TlogError> {
    check_text(text)?;
    if signers.is_empty() {
        return Err(malformed("a note needs at least one signer"));
    }
    let mut note = SignedNote {
        text: text.to_owned(),
        signatures: Vec::new(),
    };
    for (i, signer) in signers.iter().enumerate() {
        if signer.kind != KeyKind::Ed25519 {
            return Err(TlogError::WrongKeyKind {
                name: signer.name.clone(),
                found: signer.kind.label(),
                wanted: KeyKind::Ed25519.label(),
            });
        }
        let same = |s: &&SignerKey| s.name == signer.name && s.key_id == signer.key_id;
        if signers[..i].iter().any(same) {
            let (name, key_id) = (signer.name.clone(), signer.key_id);
            return Err(TlogError::DuplicateSigner { name, key_id });
        }
        let signature = signer.sign_raw(text.as_bytes()).to_vec();
        let line = NoteSignature {
            name: signer.name.clone(),
            key_id: signer.key_id,
            signature,
        };
        note.push_signature(line)?;
    }
    Ok(note.encode())
}

/// A signature that verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedSignature {
    /// The key name.
    pub name: String,
    /// The C2SP key id (see [`key_id`]), checked against the key.
    pub key_id: u32,
    /// Note key or cosigner key.
    pub kind: KeyKind,
    /// The cosignature timestamp (POSIX seconds); `None` for note keys.
    pub timestamp: Option<u64>,
}

/// A note whose signatures were checked against a set of known keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenedNote {
    /// The note text (ends in a newline).
    pub text: String,
    /// Known keys whose signatures verified (one entry per key).
    pub verified: Vec<VerifiedSignature>,
    /// Signatures from unknown keys, ignored (repeats dropped).
    pub unverified: Vec<NoteSignature>,
}

fn check_unambiguous(verifiers: &[VerifierKey]) -> Result<(), TlogError> {
    for (i, v) in verifiers.iter().enumerate() {
        if verifiers[..i]
            .iter()
            .any(|w| w.name == v.name && w.key_id == v.key_id)
        {
            return Err(TlogError::AmbiguousVerifier {
                name: v.name.clone(),
                key_id: v.key_id,
            });
        }
    }
    Ok(())
}

/// Verify one signature with a known key; a cosignature yields its time.
fn verify_one(key: &VerifierKey, text: &str, signature: &[u8]) -> Result<Option<u64>, TlogError> {
    match key.kind {
        KeyKind::Ed25519 => key.verify_raw(text.as_bytes(), signature).map(|()| None),
        KeyKind::CosignatureV1 => cosignature::verify_timestamped(text, signature, key).map(Some),
    }
}

/// Open a signed note against known keys. A signature whose name and key
/// id match a known key must verify (else the whole note fails); others are
/// ignored; at least one known signature must verify.
pub fn open_note(note: &str, verifiers: &[VerifierKey]) -> Result<OpenedNote, TlogError> {
    check_unambiguous(verifiers)?;
    let parsed = SignedNote::parse(note)?;
    let mut verified: Vec<VerifiedSignature> = Vec::new();
    let mut unverified: Vec<NoteSignature> = Vec::new();
    for sig in parsed.signatures {
        let known = verifiers
            .iter()
            .find(|v| v.name == sig.name && v.key_id == sig.key_id);
        let Some(key) = known else {
            if !unverified.contains(&sig) {
                unverified.push(sig);
            }
            continue;
        };
        let timestamp = verify_one(key, &parsed.text, &sig.signature)?;
        if !verified
            .iter()
            .any(|v| v.name == sig.name && v.key_id == sig.key_id)
        {
            let (name, key_id, kind) = (sig.name, sig.key_id, key.kind);
            verified.push(VerifiedSignature {
                name,
                key_id,
                kind,
                timestamp,
            });
        }
    }
    if verified.is_empty() {
        return Err(TlogError::NoKnownSignature);
    }
    Ok(OpenedNote {
        text: parsed.text,
        verified,
        unverified,
    })
}
