//! The method's side of TRUST-6 (witnesses): the C2SP tlog-witness
//! `add-checkpoint` request, what a witness's answer means (a cosignature
//! that counts, a 409 to retry from the witness's size, or a failure that
//! never counts), which size to send as the old one, and whether a seal has
//! its quorum. Pure: the CLI does the HTTP and the appends.

use std::collections::BTreeSet;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;

use crate::limits::WITNESS_PROOF_LINES_MAX;
use crate::log::tlog::merkle::Hash;
use crate::log::tlog::note::NoteSignature;
use crate::log::tlog::{verify_cosignature, Checkpoint, KeyKind, VerifierKey};
use crate::schema::events::CheckpointCosigned;
use crate::schema::manifest::{Witness, Witnessing};

/// The Content-Type of a witness's 409 answer that carries its size.
pub const TLOG_SIZE_CONTENT_TYPE: &str = "text/x.tlog.size";

/// The `add-checkpoint` endpoint of a witness's submission prefix.
pub fn endpoint(url: &str) -> String {
    format!("{}/add-checkpoint", url.trim_end_matches('/'))
}

/// A witness url as a manifest may freeze it: `http://host[:port][/path]`
/// (this client has no TLS), at most `WITNESS_URL_BYTES_MAX` bytes, no
/// user info (never a credential in a url), query, fragment, space or
/// control character. The CLI parses it again before each request.
pub fn check_url(url: &str) -> Result<(), String> {
    use crate::limits::WITNESS_URL_BYTES_MAX;
    if url.len() > WITNESS_URL_BYTES_MAX {
        return Err(format!(
            "{} bytes, over the limit of {WITNESS_URL_BYTES_MAX}",
            url.len()
        ));
    }
    let Some(rest) = url.strip_prefix("http://") else {
        return Err(format!(
            "{url:?} is not http://host[:port][/path] (https is not supported: this client has no TLS)"
        ));
    };
    if url.bytes().any(|b| b <= b' ' || b == 0x7f) || rest.contains(['@', '?', '#']) {
        return Err(
            "a witness url has no space, control character, user info, query or fragment".into(),
        );
    }
    let host = rest.split('/').next().unwrap_or_default();
    let name = host.rsplit_once(':').map_or(host, |(h, _)| h);
    if name.is_empty() {
        return Err(format!("{url:?} names no host"));
    }
    if let Some((_, port)) = host.rsplit_once(':') {
        if !port.parse::<u16>().is_ok_and(|p| p > 0) {
            return Err(format!("port {port:?} is not 1..=65535"));
        }
    }
    Ok(())
}

/// The frozen key of `witness`, parsed (the freeze refused any other).
pub fn witness_key(witness: &Witness) -> Option<VerifierKey> {
    VerifierKey::parse(&witness.key)
        .ok()
        .filter(|k| k.kind() == KeyKind::CosignatureV1)
}

/// The `add-checkpoint` request body: `old N`, the consistency proof
/// hashes from size N (base64, one a line; none when N is 0), an empty
/// line, then the signed checkpoint note.
pub fn add_checkpoint_body(old: u64, proof: &[Hash], note: &str) -> Result<String, String> {
    if proof.len() > WITNESS_PROOF_LINES_MAX {
        return Err(format!(
            "a consistency proof of {} hashes is over the protocol's {WITNESS_PROOF_LINES_MAX} lines",
            proof.len()
        ));
    }
    if old == 0 && !proof.is_empty() {
        return Err("the proof from size 0 is empty".into());
    }
    let mut body = format!("old {old}\n");
    for h in proof {
        body.push_str(&STANDARD.encode(h));
        body.push('\n');
    }
    body.push('\n');
    body.push_str(note);
    Ok(body)
}

/// The size to send as `old` to `witness`: the largest tree size the
/// ledger records it cosigned for `lineage`, at most `size` (0 when none).
pub fn old_size(cosigned: &[CheckpointCosigned], witness: &str, size: u64) -> u64 {
    cosigned
        .iter()
        .filter(|c| c.witness == witness && c.tree_size <= size)
        .map(|c| c.tree_size)
        .max()
        .unwrap_or(0)
}

/// What a witness's answer to one `add-checkpoint` means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// A cosignature by its frozen key that verifies over the checkpoint:
    /// the signature line and its timestamp.
    Cosigned {
        /// The line, with its newline.
        line: String,
        /// Its timestamp, POSIX seconds.
        timestamp: u64,
    },
    /// 409 with the witness's size, smaller than the checkpoint's and not
    /// the size sent: send again from it.
    Retry {
        /// The witness's size.
        old: u64,
    },
    /// No cosignature that counts (never recorded as one).
    Failed {
        /// The HTTP status, when it answered.
        status: Option<u16>,
        /// Why, in one line.
        message: String,
    },
}

fn failed(status: u16, message: String) -> Answer {
    Answer::Failed {
        status: Some(status),
        message,
    }
}

/// Judges a witness's answer to the request for `checkpoint` sent with old
/// size `sent`; `retried` when this was already the retry from its size.
pub fn judge(
    witness: &Witness,
    checkpoint: &Checkpoint,
    sent: u64,
    retried: bool,
    status: u16,
    content_type: Option<&str>,
    body: &[u8],
) -> Answer {
    let text = String::from_utf8_lossy(body);
    let size = checkpoint.size();
    match status {
        200 => cosignature(witness, checkpoint, &text),
        409 => {
            let theirs = content_type
                .filter(|t| t.split(';').next().map(str::trim) == Some(TLOG_SIZE_CONTENT_TYPE))
                .and_then(|_| text.strip_suffix('\n'))
                .and_then(|n| n.parse::<u64>().ok());
            match theirs {
                Some(n) if n > size => failed(409, format!(
                    "the witness has cosigned size {n} of this log, larger than this checkpoint's {size}: it refuses a rolled-back tree"
                )),
                Some(n) if n == sent || retried => failed(409, format!(
                    "the witness holds size {n} of this log with another root than the one sent: a fork"
                )),
                Some(n) => Answer::Retry { old: n },
                None => failed(409, format!(
                    "409 Conflict without its size as {TLOG_SIZE_CONTENT_TYPE}: the witness holds another root at size {sent} (a fork)"
                )),
            }
        }
        400 => failed(400, "400 Bad Request: the witness refuses the request as malformed".into()),
        403 => failed(403, "403 Forbidden: the witness trusts no key that signed this checkpoint".into()),
        404 => failed(404, "404 Not Found: the witness does not know this log's origin".into()),
        422 => failed(422, format!(
            "422 Unprocessable Entity: the consistency proof from size {sent} does not verify against the witness's tree (a fork)"
        )),
        other => failed(other, format!("the witness answered HTTP {other}")),
    }
}

/// The cosignature lines of a 200 answer: the one by the witness's frozen
/// key must verify over the checkpoint body; others are ignored (C2SP: a
/// client ignores cosignatures from unknown keys).
fn cosignature(witness: &Witness, checkpoint: &Checkpoint, text: &str) -> Answer {
    let Some(key) = witness_key(witness) else {
        return failed(200, "the frozen witness key does not parse".into());
    };
    let body = checkpoint.body();
    let mut bad = None;
    for line in text.lines().filter(|l| !l.is_empty()) {
        let Ok(sig) = NoteSignature::parse(line) else {
            return failed(
                200,
                format!("the answer holds a line that is not a note signature: {line:?}"),
            );
        };
        if sig.name != key.name() || sig.key_id != key.key_id() {
            continue;
        }
        match verify_cosignature(&body, &sig, &key) {
            Ok(timestamp) => {
                return Answer::Cosigned {
                    line: sig.line(),
                    timestamp,
                }
            }
            Err(e) => bad = Some(e.to_string()),
        }
    }
    let message = match bad {
        Some(e) => {
            format!("the cosignature by its frozen key does not verify over this checkpoint: {e}")
        }
        None => format!(
            "the answer holds no cosignature by its frozen key {}+{:08x}",
            key.name(),
            key.key_id()
        ),
    };
    failed(200, message)
}

/// Whether a recorded cosignature counts: its witness is frozen in
/// `witnessing` under that name, it cosigned a checkpoint the log records
/// (`recorded`: the (size, root) of its signed checkpoint records, as
/// re-derived from the records before them) and it verifies with the
/// witness's frozen key over that checkpoint of `origin`.
pub fn counts(
    witnessing: &Witnessing,
    origin: &str,
    recorded: &[(u64, Hash)],
    c: &CheckpointCosigned,
) -> bool {
    let Some(key) = witnessing
        .witnesses
        .iter()
        .find(|w| w.name == c.witness)
        .and_then(witness_key)
    else {
        return false;
    };
    let Some(root) = hex::decode(&c.root)
        .ok()
        .and_then(|b| <Hash>::try_from(b).ok())
    else {
        return false;
    };
    if !recorded.contains(&(c.tree_size, root)) {
        return false;
    }
    let Ok(checkpoint) = Checkpoint::new(origin, c.tree_size, root) else {
        return false;
    };
    let Ok(sig) = NoteSignature::parse(c.signature.trim_end_matches('\n')) else {
        return false;
    };
    verify_cosignature(&checkpoint.body(), &sig, &key).is_ok_and(|t| t == c.cosigned_at)
}

/// A seal's witnessing (TRUST-6): the frozen witnesses whose counted
/// cosignature covers it (a checkpoint of size > its seq) and the quorum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealWitnessing {
    /// The witnesses that cosigned a covering checkpoint, in frozen order.
    pub witnessed_by: Vec<String>,
    /// k.
    pub quorum: u32,
    /// How many witnesses are frozen.
    pub witnesses: usize,
}

impl SealWitnessing {
    /// Whether k distinct frozen witnesses cosigned a covering checkpoint.
    pub fn counts(&self) -> bool {
        self.witnessed_by.len() >= self.quorum as usize
    }

    /// "witnessed by a, b (quorum 2)" or "pending: 1 of 2 witnesses
    /// cosigned (quorum 2)".
    pub fn line(&self) -> String {
        if self.counts() {
            format!(
                "witnessed by {} (quorum {})",
                self.witnessed_by.join(", "),
                self.quorum
            )
        } else {
            format!(
                "pending: {} of {} witnesses cosigned (quorum {})",
                self.witnessed_by.len(),
                self.witnesses,
                self.quorum
            )
        }
    }
}

/// The witnessing of the seal at `seal_seq` under `witnessing`: only
/// cosignatures that [`counts`] and whose checkpoint covers the seal, each
/// witness once.
pub fn seal_witnessing(
    witnessing: &Witnessing,
    origin: &str,
    recorded: &[(u64, Hash)],
    cosigned: &[CheckpointCosigned],
    seal_seq: u64,
) -> SealWitnessing {
    let covering: BTreeSet<&str> = cosigned
        .iter()
        .filter(|c| c.tree_size > seal_seq && counts(witnessing, origin, recorded, c))
        .map(|c| c.witness.as_str())
        .collect();
    SealWitnessing {
        witnessed_by: witnessing
            .witnesses
            .iter()
            .filter(|w| covering.contains(w.name.as_str()))
            .map(|w| w.name.clone())
            .collect(),
        quorum: witnessing.quorum,
        witnesses: witnessing.witnesses.len(),
    }
}

#[cfg(test)]
#[path = "witness_tests.rs"]
mod tests;
