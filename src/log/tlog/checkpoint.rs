//! C2SP tlog-checkpoint: the note text naming a log (origin), a tree size
//! and the RFC 6962 root, and its verification as a signed note.
//!
//! ```text
//! benchledger.example/ledger/000102030405060708090a0b0c0d0e0f
//! 7
//! <44 characters of standard padded base64>
//! ```
//!
//! Each line ends in a newline. Parsing is strict: the size is decimal with
//! no sign and no leading zero, the root exactly 44 characters of canonical
//! base64, extension lines (opaque, optional) non-empty.

use super::error::TlogError;
use super::merkle::{tree_root, Hash, NodeSource, TREE_SIZE_MAX};
use super::note::{open_note, KeyKind, OpenedNote, VerifierKey};
use super::text::{b64_decode_hash, b64_encode, check_origin, has_control};

/// The longest origin line, in bytes (without its newline).
pub const ORIGIN_BYTES_MAX: usize = 256;
/// The most extension lines a checkpoint may carry, in lines.
pub const EXTENSION_LINES_MAX: usize = 16;
/// The longest checkpoint body, in bytes (all lines and newlines).
pub const CHECKPOINT_BYTES_MAX: usize = 8192;

fn malformed(reason: &'static str) -> TlogError {
    TlogError::Checkpoint { reason }
}

/// A checkpoint body (the note text of a signed checkpoint).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    origin: String,
    size: u64,
    root: Hash,
    extensions: Vec<String>,
}

impl Checkpoint {
    /// A checkpoint without extension lines. The origin is any non-empty
    /// line without control characters (C2SP: clients must not assume it
    /// has no spaces; benchledger's own origins have none).
    pub fn new(origin: &str, size: u64, root: Hash) -> Result<Self, TlogError> {
        Self::with_extensions(origin, size, root, Vec::new())
    }

    /// A checkpoint with extension lines (NOT RECOMMENDED by C2SP).
    pub fn with_extensions(
        origin: &str,
        size: u64,
        root: Hash,
        extensions: Vec<String>,
    ) -> Result<Self, TlogError> {
        check_origin(origin, ORIGIN_BYTES_MAX)?;
        if size > TREE_SIZE_MAX {
            return Err(TlogError::TreeSizeTooLarge { size });
        }
        if extensions.len() > EXTENSION_LINES_MAX {
            return Err(malformed("too many extension lines"));
        }
        for line in &extensions {
            if line.is_empty() {
                return Err(malformed("an extension line is empty"));
            }
            if line.contains('\n') || has_control(line) {
                return Err(malformed("an extension line holds a control character"));
            }
        }
        let checkpoint = Self {
            origin: origin.to_owned(),
            size,
            root,
            extensions,
        };
        if checkpoint.body().len() > CHECKPOINT_BYTES_MAX {
            return Err(malformed("checkpoint is too long"));
        }
        Ok(checkpoint)
    }

    /// Parse a checkpoint body strictly.
    pub fn parse(body: &str) -> Result<Self, TlogError> {
        if body.len() > CHECKPOINT_BYTES_MAX {
            return Err(malformed("checkpoint is too long"));
        }
        let Some(content) = body.strip_suffix('\n') else {
            return Err(malformed("checkpoint does not end in a newline"));
        };
        if has_control(body) {
            return Err(malformed("checkpoint holds a control character"));
        }
        let lines: Vec<&str> = content.split('\n').collect();
        if lines.len() < 3 {
            return Err(malformed("checkpoint has fewer than three lines"));
        }
        if lines.iter().any(|line| line.is_empty()) {
            return Err(malformed("checkpoint has an empty line"));
        }
        let size = parse_size(lines[1])?;
        let root = b64_decode_hash(lines[2]).ok_or(malformed(
            "root hash is not 44 characters of canonical base64",
        ))?;
        let extensions = lines[3..].iter().map(|s| (*s).to_owned()).collect();
        let parsed = Self::with_extensions(lines[0], size, root, extensions)?;
        debug_assert_eq!(parsed.body(), body);
        Ok(parsed)
    }

    /// The body text: origin, size, base64 root, extensions, each + "\n".
    pub fn body(&self) -> String {
        let mut out = format!(
            "{}\n{}\n{}\n",
            self.origin,
            self.size,
            b64_encode(&self.root)
        );
        for line in &self.extensions {
            out.push_str(line);
            out.push('\n');
        }
        out
    }

    /// The log's origin line.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The tree size, in leaves.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The RFC 6962 root hash.
    pub fn root(&self) -> &Hash {
        &self.root
    }

    /// The extension lines, without newlines.
    pub fn extensions(&self) -> &[String] {
        &self.extensions
    }
}

/// Decimal, ASCII digits only, no leading zero (unless "0"), at most
/// [`TREE_SIZE_MAX`].
fn parse_size(line: &str) -> Result<u64, TlogError> {
    if line.is_empty() || !line.bytes().all(|b| b.is_ascii_digit()) {
        return Err(malformed("tree size is not a decimal number"));
    }
    if line.len() > 1 && line.starts_with('0') {
        return Err(malformed("tree size has a leading zero"));
    }
    let size: u64 = line
        .parse()
        .map_err(|_| malformed("tree size does not fit in 64 bits"))?;
    if size > TREE_SIZE_MAX {
        return Err(TlogError::TreeSizeTooLarge { size });
    }
    Ok(size)
}

/// A checkpoint whose note verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedCheckpoint {
    /// The parsed checkpoint body.
    pub checkpoint: Checkpoint,
    /// Every verified signature (the log key's, and any known witness
    /// cosignatures with their timestamps) and the unknown ones.
    pub note: OpenedNote,
}

/// Verify a signed checkpoint note: the log key (an Ed25519 note key) must
/// have signed it; cosignatures from `witnesses` (cosignature/v1 keys) are
/// verified when present, and a bad one fails the note; other signatures
/// are ignored. The body must be a well-formed checkpoint.
pub fn verify_checkpoint_note(
    note: &str,
    log_key: &VerifierKey,
    witnesses: &[VerifierKey],
) -> Result<VerifiedCheckpoint, TlogError> {
    if log_key.kind() != KeyKind::Ed25519 {
        return Err(TlogError::WrongKeyKind {
            name: log_key.name().to_owned(),
            found: log_key.kind().label(),
            wanted: KeyKind::Ed25519.label(),
        });
    }
    if let Some(w) = witnesses
        .iter()
        .find(|w| w.kind() != KeyKind::CosignatureV1)
    {
        return Err(TlogError::WrongKeyKind {
            name: w.name().to_owned(),
            found: w.kind().label(),
            wanted: KeyKind::CosignatureV1.label(),
        });
    }
    let mut known = Vec::with_capacity(witnesses.len() + 1);
    known.push(log_key.clone());
    known.extend(witnesses.iter().cloned());
    let opened = open_note(note, &known)?;
    let signed_by_log = opened
        .verified
        .iter()
        .any(|v| v.name == log_key.name() && v.key_id == log_key.key_id());
    if !signed_by_log {
        return Err(TlogError::RequiredKeyMissing {
            name: log_key.name().to_owned(),
            key_id: log_key.key_id(),
        });
    }
    let checkpoint = Checkpoint::parse(&opened.text)?;
    Ok(VerifiedCheckpoint {
        checkpoint,
        note: opened,
    })
}

/// Check that the log behind `src` has the checkpoint's root at the
/// checkpoint's size (O(log n) reads): it holds at least that many leaves
/// ([`TlogError::SizeBeyondSource`] otherwise) and its first `size` leaves
/// are the ones the checkpoint committed to.
pub fn check_log_matches<S: NodeSource + ?Sized>(
    src: &S,
    checkpoint: &Checkpoint,
) -> Result<(), TlogError> {
    let size = checkpoint.size();
    if tree_root(src, size)? != *checkpoint.root() {
        return Err(TlogError::CheckpointRootMismatch { size });
    }
    Ok(())
}
