//! Projection checkpoints: a cache of a projection's state (the method's
//! `State`, through the [`Projection`] trait, so the log layer never names
//! it) at a verified seq, so that a deciding verb folds only the tail of the
//! log instead of every event since genesis (issue #9: `case start` on a
//! 150k-event ledger).
//!
//! The log stays the only truth. A checkpoint is used only when
//! - its checksum (BLAKE3 derive_key over every byte before it) matches,
//! - it was written by this checkpoint format, this state layout
//!   (`Projection::LAYOUT_VERSION`, pinned by a test) and this projection
//!   code (`Projection::PROJECTION_VERSION`),
//! - and the record at its seq exists, passes its own link check and has
//!   exactly the hash the checkpoint names.
//!
//! The tail after it is read through the same verified walk as a full
//! replay (its first link is checked against that record). Anything else
//! (absent, torn, stale, from another build or another history) is ignored
//! and the state is replayed from genesis, after which a fresh checkpoint is
//! written. Deleting the file changes nothing but speed. Auditor verbs
//! (`verify`, `gate`, `group seal`, `audit`, `report`) always replay from
//! genesis, and `verify` re-derives a present checkpoint and fails when it
//! differs from the log (see `check`).
//!
//! File: `MAGIC || header length (u32 BE) || header || state || checksum`,
//! header and state in the record encoding (`codec::encode_bulk`).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::limits::{CHECKPOINT_BYTES_MAX, CHECKPOINT_EVENTS_MIN, CHECKPOINT_TAIL_EVENTS_MAX};
use crate::log::chain::Hash;
use crate::log::codec;
use crate::log::ledger::Ledger;
use crate::schema::events::Event;

/// A pure fold of the verified log whose state may be cached. The method's
/// `State` implements it; `apply` cannot fail.
pub trait Projection: Default + PartialEq + Serialize + DeserializeOwned {
    /// The version of the fold's code: a change invalidates checkpoints.
    const PROJECTION_VERSION: u32;
    /// The layout of the encoded state: a change of the state's types
    /// changes the bytes; a pinned test makes it be raised.
    const LAYOUT_VERSION: u32;
    /// Folds one verified event recorded at `seq` and `recorded_at_utc_ns`.
    fn apply_event(&mut self, seq: u64, recorded_at_utc_ns: u64, event: &Event);
    /// The last folded seq, `None` before genesis.
    fn head_seq(&self) -> Option<u64>;
    /// Whether this state may be written to a checkpoint (the decide state
    /// may; a state with extra scans may not).
    fn cacheable(&self) -> bool;
}

/// Folds the verified log from `from` up to and including `seq_max` into
/// `state`; returns the number of events folded and the last seq and hash.
pub fn fold_into<S: Projection>(
    ledger: &Ledger,
    state: &mut S,
    from: u64,
    seq_max: u64,
) -> Result<(u64, Option<(u64, Hash)>)> {
    let mut last = None;
    let mut folded = 0u64;
    for v in ledger.records_from(from)? {
        let v = v?;
        let r = &v.decoded.record;
        if r.seq > seq_max {
            break;
        }
        state.apply_event(r.seq, r.recorded_at_utc_ns, &v.decoded.event);
        folded += 1;
        last = Some((r.seq, v.hash));
    }
    Ok((folded, last))
}

/// The checkpoint's file name inside the ledger directory.
pub const CHECKPOINT_FILE: &str = "projection.checkpoint";

/// First bytes of every checkpoint file.
pub(crate) const MAGIC: &[u8; 16] = b"benchledger-ckpt";

/// The file layout version.
pub const CHECKPOINT_FORMAT: u32 = 1;

/// BLAKE3 derive_key context of the checksum.
pub(crate) const CHECKSUM_CONTEXT: &str = "benchledger v1 projection checkpoint";

const CHECKSUM_BYTES: usize = 32;

/// When a checkpoint is written and how large one may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Fewest events before the first checkpoint is written.
    pub events_min: u64,
    /// Most events folded past a checkpoint before it is renewed.
    pub tail_events_max: u64,
    /// Largest checkpoint file written or read, in bytes.
    pub bytes_max: usize,
}

impl Policy {
    /// What the CLI uses (limits.rs).
    pub const DEFAULT: Policy = Policy {
        events_min: CHECKPOINT_EVENTS_MIN,
        tail_events_max: CHECKPOINT_TAIL_EVENTS_MAX,
        bytes_max: CHECKPOINT_BYTES_MAX,
    };
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Header {
    pub(crate) format: u32,
    pub(crate) layout: u32,
    pub(crate) projection_version: u32,
    pub(crate) seq: u64,
    pub(crate) hash: Hash,
}

/// Where a replay started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// From genesis; `why` says why no checkpoint was used.
    Genesis {
        /// Why the checkpoint was not used.
        why: String,
    },
    /// From a checkpoint at `seq`, then `tail_events` events folded.
    Checkpoint {
        /// The checkpoint's seq.
        seq: u64,
        /// Events folded after it.
        tail_events: u64,
    },
}

/// A replayed state and how it was obtained.
#[derive(Debug)]
pub struct Replayed<S> {
    /// The state: equal to the full replay of the same ledger.
    pub state: S,
    /// Where the fold started.
    pub source: Source,
    /// `Some(Ok(seq))` when a checkpoint at `seq` was written, `Some(Err)`
    /// when writing one failed (the state is still good), `None` otherwise.
    pub written: Option<std::result::Result<u64, String>>,
}

/// What `check` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// No checkpoint file.
    Absent,
    /// Not usable (torn, other build or history); it is ignored.
    Ignored {
        /// What makes it unusable, in words (`verify` reports it as `why`).
        why: String,
    },
    /// Equal to the replay of the log up to `seq`.
    Matches {
        /// The checkpoint's seq.
        seq: u64,
    },
    /// Valid checksum and hash, but a state the log does not give.
    Differs {
        /// The checkpoint's seq.
        seq: u64,
    },
}

/// The checkpoint path of a ledger directory.
pub fn path(ledger_dir: &Path) -> PathBuf {
    ledger_dir.join(CHECKPOINT_FILE)
}

/// The full replay through the checkpoint, writing a fresh one when
/// `policy` says so. Errors are the ledger's (damage, I/O of the log); a
/// bad checkpoint is never an error.
pub fn replay<S: Projection>(ledger: &Ledger, policy: Policy) -> Result<Replayed<S>> {
    let (mut state, mut source) = match load::<S>(ledger, policy)? {
        Ok((header, state)) => (
            state,
            Source::Checkpoint {
                seq: header.seq,
                tail_events: 0,
            },
        ),
        Err(why) => (S::default(), Source::Genesis { why }),
    };
    let from = state.head_seq().map_or(0, |s| s + 1);
    let (folded, last) = fold_into(ledger, &mut state, from, u64::MAX)?;
    if let Source::Checkpoint { tail_events, .. } = &mut source {
        *tail_events = folded;
    }
    let due = match &source {
        Source::Genesis { .. } => state.head_seq().is_some_and(|s| s + 1 >= policy.events_min),
        Source::Checkpoint { tail_events, .. } => *tail_events >= policy.tail_events_max,
    };
    let written = match (due, last) {
        (true, Some((seq, hash))) => Some(
            write(ledger.dir(), &state, seq, hash, policy)
                .map(|()| seq)
                .map_err(|e| e.to_string()),
        ),
        _ => None,
    };
    Ok(Replayed {
        state,
        source,
        written,
    })
}

/// Re-derives a present checkpoint from genesis (the paired check of
/// `verify`).
pub fn check<S: Projection>(ledger: &Ledger) -> Result<Check> {
    if !path(ledger.dir()).exists() {
        return Ok(Check::Absent);
    }
    match load::<S>(ledger, Policy::DEFAULT)? {
        Err(why) => Ok(Check::Ignored { why }),
        Ok((header, state)) => {
            let mut derived = S::default();
            fold_into(ledger, &mut derived, 0, header.seq)?;
            Ok(if derived == state {
                Check::Matches { seq: header.seq }
            } else {
                Check::Differs { seq: header.seq }
            })
        }
    }
}

/// Writes the checkpoint of `state`, the replay up to record `seq` whose
/// hash is `hash`: to a temporary file, then renamed over the old one.
pub fn write<S: Projection>(
    ledger_dir: &Path,
    state: &S,
    seq: u64,
    hash: Hash,
    policy: Policy,
) -> Result<()> {
    assert!(
        state.cacheable(),
        "a checkpoint holds the decide state, never the scanning one"
    );
    assert_eq!(
        state.head_seq(),
        Some(seq),
        "checkpoint seq is the state's head"
    );
    let bytes = encode(state, seq, hash)?;
    if bytes.len() > policy.bytes_max {
        return Err(Error::input(format!(
            "projection checkpoint would be {} bytes, over the limit of {} bytes",
            bytes.len(),
            policy.bytes_max
        )));
    }
    let dst = path(ledger_dir);
    remove_stale_temporaries(ledger_dir);
    let tmp = ledger_dir.join(format!("{CHECKPOINT_FILE}.{}.tmp", std::process::id()));
    let written = (|| {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(&bytes)?;
        fs::rename(&tmp, &dst)
    })();
    written.map_err(|e| {
        let _ = fs::remove_file(&tmp);
        Error::io(format!("cannot write {}", dst.display()), e)
    })
}

/// Removes temporaries a killed writer left (`<file>.<pid>.tmp`). Writers
/// hold the ledger lock, so no other writer's temporary is in flight.
fn remove_stale_temporaries(ledger_dir: &Path) {
    let Ok(entries) = fs::read_dir(ledger_dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(&format!("{CHECKPOINT_FILE}.")) && name.ends_with(".tmp") {
            let _ = fs::remove_file(e.path());
        }
    }
}

pub(crate) fn encode<S: Projection>(state: &S, seq: u64, hash: Hash) -> Result<Vec<u8>> {
    let header = Header {
        format: CHECKPOINT_FORMAT,
        layout: S::LAYOUT_VERSION,
        projection_version: S::PROJECTION_VERSION,
        seq,
        hash,
    };
    let header = codec::encode_bulk(&header).map_err(|e| Error::input(e.to_string()))?;
    let body = codec::encode_bulk(state).map_err(|e| Error::input(e.to_string()))?;
    let header_len = u32::try_from(header.len()).expect("a header is a few dozen bytes");
    let mut out = Vec::with_capacity(MAGIC.len() + 4 + header.len() + body.len() + CHECKSUM_BYTES);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&header_len.to_be_bytes());
    out.extend_from_slice(&header);
    out.extend_from_slice(&body);
    seal(&mut out);
    Ok(out)
}

/// Appends the checksum of `body` (everything before it).
pub(crate) fn seal(body: &mut Vec<u8>) {
    let sum = blake3::derive_key(CHECKSUM_CONTEXT, body);
    body.extend_from_slice(&sum);
}

/// Reads and checks the checkpoint: `Ok(Err(why))` when it cannot be used.
type Loaded<S> = std::result::Result<(Header, S), String>;

fn load<S: Projection>(ledger: &Ledger, policy: Policy) -> Result<Loaded<S>> {
    let p = path(ledger.dir());
    let len = match fs::metadata(&p) {
        Ok(m) => m.len(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Err("no checkpoint".into()))
        }
        Err(e) => return Ok(Err(format!("cannot read {}: {e}", p.display()))),
    };
    if len > policy.bytes_max as u64 {
        return Ok(Err(format!(
            "checkpoint is {len} bytes, over the limit of {} bytes",
            policy.bytes_max
        )));
    }
    let bytes = match fs::read(&p) {
        Ok(b) => b,
        Err(e) => return Ok(Err(format!("cannot read {}: {e}", p.display()))),
    };
    let (header, state) = match decode::<S>(&bytes) {
        Ok(hs) => hs,
        Err(why) => return Ok(Err(why)),
    };
    if state.head_seq() != Some(header.seq) || !state.cacheable() {
        return Ok(Err("checkpoint state does not sit at its seq".into()));
    }
    let head = ledger.head()?;
    if header.seq > head.seq {
        return Ok(Err(format!(
            "checkpoint seq {} is past the head {}",
            header.seq, head.seq
        )));
    }
    if ledger.read(header.seq)?.hash != header.hash {
        return Ok(Err(format!(
            "record {} does not have the checkpoint's hash",
            header.seq
        )));
    }
    Ok(Ok((header, state)))
}

pub(crate) fn decode<S: Projection>(bytes: &[u8]) -> Loaded<S> {
    let body_end = bytes
        .len()
        .checked_sub(CHECKSUM_BYTES)
        .filter(|&n| n >= MAGIC.len() + 4)
        .ok_or("checkpoint is truncated")?;
    if &bytes[..MAGIC.len()] != MAGIC {
        return Err("not a checkpoint file".into());
    }
    if blake3::derive_key(CHECKSUM_CONTEXT, &bytes[..body_end])[..] != bytes[body_end..] {
        return Err("checkpoint checksum does not match".into());
    }
    let at = MAGIC.len();
    let header_len = u32::from_be_bytes(bytes[at..at + 4].try_into().expect("4 bytes")) as usize;
    let header_end = (at + 4)
        .checked_add(header_len)
        .filter(|&e| e <= body_end)
        .ok_or("checkpoint header is truncated")?;
    let header: Header = codec::decode_bulk(&bytes[at + 4..header_end])
        .map_err(|e| format!("checkpoint header: {e}"))?;
    if header.format != CHECKPOINT_FORMAT
        || header.layout != S::LAYOUT_VERSION
        || header.projection_version != S::PROJECTION_VERSION
    {
        return Err(format!(
            "checkpoint written by another build (format {}, layout {}, projections {}; this build {CHECKPOINT_FORMAT}, {}, {})",
            header.format,
            header.layout,
            header.projection_version,
            S::LAYOUT_VERSION,
            S::PROJECTION_VERSION
        ));
    }
    let state: S = codec::decode_bulk(&bytes[header_end..body_end])
        .map_err(|e| format!("checkpoint state: {e}"))?;
    Ok((header, state))
}
