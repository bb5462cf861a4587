//! What the transparency verbs share (TRUST-1..4): key and note files, the
//! keys a ledger's frozen manifests trust, the tree part of `verify`, and
//! `verify --against` (does this ledger extend a published checkpoint?).

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::{json, Value};

use crate::cli::common::read_text;
use crate::error::Error;
use crate::log::ledger::Ledger;
use crate::log::tlog::merkle::Hash;
use crate::log::tlog::{
    prove_inclusion, verify_checkpoint_note, Checkpoint, InclusionProof, SignedNote, SignerKey,
    TlogError, VerifiedCheckpoint, VerifierKey,
};
use crate::log::tree::{self, CacheCheck, Derived, Divergence};
use crate::method::projections::State;
use crate::method::trust::{operator_lists, unlisted_signers};
use crate::schema::events::SignOffRole;

/// Reads a signer key file (`PRIVATE+KEY+...`, as `key generate` writes
/// it); warns when others may read it.
pub(crate) fn read_signer_key(path: &Path) -> anyhow::Result<SignerKey> {
    use std::os::unix::fs::PermissionsExt;
    let text = read_text(path)?;
    let key = SignerKey::parse(text.trim_end_matches('\n'))
        .map_err(|e| Error::input(format!("{}: not a signer key: {e}", path.display())))?;
    if let Ok(meta) = std::fs::metadata(path) {
        if meta.permissions().mode() & 0o077 != 0 {
            eprintln!(
                "benchledger: warning: signer key {} is readable by others (mode {:o}); chmod 600 it",
                path.display(),
                meta.permissions().mode() & 0o777
            );
        }
    }
    Ok(key)
}

/// A verifier key given on the command line: the key text, or `@FILE`.
pub(crate) fn parse_vkey(arg: &str) -> anyhow::Result<VerifierKey> {
    let text = match arg.strip_prefix('@') {
        Some(file) => read_text(&PathBuf::from(file))?,
        None => arg.to_string(),
    };
    Ok(VerifierKey::parse(text.trim_end_matches('\n'))
        .map_err(|e| Error::input(format!("--vkey {arg}: not a verifier key: {e}")))?)
}

/// Reads a signed note file.
pub(crate) fn read_note(path: &Path) -> anyhow::Result<String> {
    let text = read_text(path)?;
    SignedNote::parse(&text).map_err(|e| Error::input(format!("{}: {e}", path.display())))?;
    Ok(text)
}

/// The keys a ledger's frozen manifests name: operators (who sign
/// checkpoints) and witnesses (whose cosignatures are checked), each once.
#[derive(Debug, Clone, Default)]
pub(crate) struct TrustedKeys {
    pub(crate) operators: Vec<VerifierKey>,
    pub(crate) witnesses: Vec<VerifierKey>,
}

/// The operator and witness keys of every v2 lineage of `state`.
pub(crate) fn frozen_keys(state: &State) -> TrustedKeys {
    let mut keys = TrustedKeys::default();
    for plan in state.lineages.values().filter_map(|l| l.plan.as_ref()) {
        let operators =
            crate::method::trust::role_keys(plan, crate::schema::events::SignOffRole::Operator);
        for k in operators {
            if !keys.operators.contains(&k) {
                keys.operators.push(k);
            }
        }
        for k in crate::method::trust::witness_keys(plan) {
            if !keys
                .witnesses
                .iter()
                .any(|w| w.name() == k.name() && w.key_id() == k.key_id())
            {
                keys.witnesses.push(k);
            }
        }
    }
    keys
}

/// The operator lists read from the verified log without folding it (an
/// auditor verb: `verify`, `checkpoint show`).
pub(crate) fn operator_lists_of(
    ledger: &Ledger,
) -> anyhow::Result<crate::method::trust::OperatorLists> {
    let mut out = Vec::new();
    for v in ledger.records()? {
        let v = v?;
        let plan = match &v.decoded.event {
            crate::schema::events::Event::ManifestFrozenV2(m) => &m.plan,
            crate::schema::events::Event::ManifestFrozenV3(m) => &m.plan,
            _ => continue,
        };
        let keys = crate::method::trust::role_keys(plan, SignOffRole::Operator);
        out.push((v.decoded.record.seq, keys));
    }
    Ok(out)
}

/// Verifies a checkpoint note with whichever of `logs` signed it (the
/// first whose name and key id a signature line carries) and the
/// witnesses' cosignatures present; the note must name `origin`.
pub(crate) fn open_checkpoint(
    note: &str,
    logs: &[VerifierKey],
    witnesses: &[VerifierKey],
    origin: &str,
) -> anyhow::Result<VerifiedCheckpoint> {
    let parsed = SignedNote::parse(note).map_err(|e| Error::input(e.to_string()))?;
    let Some(log) = logs.iter().find(|k| {
        parsed
            .signatures()
            .iter()
            .any(|s| s.name == k.name() && s.key_id == k.key_id())
    }) else {
        let names: Vec<String> = parsed
            .signatures()
            .iter()
            .map(|s| format!("{}+{:08x}", s.name, s.key_id))
            .collect();
        return Err(Error::NotHeld(format!(
            "the note is signed by {} and by no key trusted here (the frozen operator keys, or --vkey)",
            names.join(", ")
        ))
        .into());
    };
    let verified = verify_checkpoint_note(note, log, witnesses).map_err(|e| match e {
        TlogError::BadSignature { .. }
        | TlogError::NoKnownSignature
        | TlogError::RequiredKeyMissing { .. } => {
            Error::NotHeld(format!("the checkpoint note does not verify: {e}"))
        }
        _ => Error::input(format!("not a checkpoint note: {e}")),
    })?;
    if verified.checkpoint.origin() != origin {
        return Err(Error::NotHeld(format!(
            "the checkpoint names the log {:?}, this ledger is {origin:?}",
            verified.checkpoint.origin()
        ))
        .into());
    }
    Ok(verified)
}

/// The signers of a verified note, as `name+keyid` (witnesses with their
/// cosignature time).
pub(crate) fn signed_by(v: &VerifiedCheckpoint) -> Vec<String> {
    v.note
        .verified
        .iter()
        .map(|s| match s.timestamp {
            Some(t) => format!("{}+{:08x} (cosigned at {t})", s.name, s.key_id),
            None => format!("{}+{:08x}", s.name, s.key_id),
        })
        .collect()
}

/// The signatures of a verified note by keys neither trusted here nor
/// listed as witnesses by a frozen manifest, as `name+keyid`: not checked
/// (C2SP: an unknown key's signature vouches for nothing), and every verb
/// says so rather than pass over them.
pub(crate) fn not_checked(v: &VerifiedCheckpoint) -> Vec<String> {
    v.note
        .unverified
        .iter()
        .map(|s| format!("{}+{:08x}", s.name, s.key_id))
        .collect()
}

/// The sentence for `not_checked` signatures ("" when there are none).
pub(crate) fn not_checked_text(names: &[String]) -> String {
    if names.is_empty() {
        return String::new();
    }
    format!(
        "; not checked: signed also by {} (a key neither trusted here nor a witness a frozen manifest lists)",
        names.join(", ")
    )
}

/// The tree part of `verify`: every checkpoint record re-derived, and the
/// node cache compared hash for hash. `None` when the ledger has neither
/// (nothing to report: the output of older ledgers is unchanged).
pub(crate) struct TreeReport {
    pub(crate) checkpoints: usize,
    pub(crate) problems: Vec<tree::CheckpointProblem>,
    pub(crate) cache: CacheCheck,
}

impl TreeReport {
    pub(crate) fn ok(&self) -> bool {
        self.problems.is_empty() && !matches!(self.cache, CacheCheck::Differs { .. })
    }

    pub(crate) fn json(&self) -> Value {
        let cache = match &self.cache {
            CacheCheck::Absent => json!({ "state": "absent" }),
            CacheCheck::Matches { leaves } => json!({ "state": "matches", "leaves": leaves }),
            CacheCheck::Differs { why } => json!({ "state": "differs", "why": why }),
        };
        json!({
            "checkpoints": self.checkpoints,
            "problems": self.problems.iter().map(|p| json!({ "seq": p.seq, "detail": p.detail })).collect::<Vec<_>>(),
            "node_cache": cache,
        })
    }

    pub(crate) fn lines(&self) -> Vec<String> {
        let mut out = vec![format!(
            "transparency: {} checkpoint records re-derived from the records before them",
            self.checkpoints
        )];
        for p in &self.problems {
            out.push(format!(
                "damaged: checkpoint record at seq {}: {}",
                p.seq, p.detail
            ));
        }
        match &self.cache {
            CacheCheck::Matches { leaves } => out.push(format!(
                "transparency: {} equals the tree of the first {leaves} records",
                tree::NODES_FILE
            )),
            CacheCheck::Differs { why } => out.push(format!(
                "damaged: {} differs from the tree of the log ({why}); proofs are checked against signed roots, but delete it (the log itself verifies)",
                tree::NODES_FILE
            )),
            CacheCheck::Absent => {}
        }
        out
    }
}

/// One published checkpoint against this ledger.
pub(crate) struct Against {
    pub(crate) note: PathBuf,
    pub(crate) checkpoint: Checkpoint,
    pub(crate) signed_by: Vec<String>,
    /// Signatures by keys neither trusted nor listed (`not_checked`).
    pub(crate) not_checked: Vec<String>,
    /// `None` when this ledger extends it.
    pub(crate) divergence: Option<Divergence>,
    /// The ledger's size.
    pub(crate) size: u64,
    /// The note's text.
    text: String,
    /// TRUST-7: the note judged against the auditor's memory (only a note
    /// this ledger extends is judged).
    pub(crate) auditor: Option<crate::cli::auditor::Judged>,
}

impl Against {
    pub(crate) fn json(&self) -> Value {
        json!({
            "note": self.note.display().to_string(),
            "origin": self.checkpoint.origin(),
            "tree_size": self.checkpoint.size(),
            "root": hex::encode(self.checkpoint.root()),
            "signed_by": self.signed_by,
            "not_checked": self.not_checked,
            "extends": self.divergence.is_none(),
            "ledger_size": self.size,
            "agrees_through": self.divergence.as_ref().map(|d| d.agrees_through),
            "differs_by": self.divergence.as_ref().map(|d| d.differs_by),
            "auditor": self.auditor.as_ref().map(|j| j.json()),
        })
    }

    /// Whether it holds: this ledger extends it and the auditor accepts it
    /// (TRUST-7).
    pub(crate) fn ok(&self) -> bool {
        self.divergence.is_none() && self.auditor.as_ref().is_none_or(|j| j.judgement.accepted())
    }

    pub(crate) fn line(&self) -> String {
        let (m, who) = (self.checkpoint.size(), self.signed_by.join(", "));
        let line = match &self.divergence {
            None => format!(
                "extends: {} (size {m}, signed by {who}): this ledger's first {m} of {} records have its root",
                self.note.display(),
                self.size
            ),
            Some(d) if d.differs_by > self.size => format!(
                "does not extend {} (size {m}, signed by {who}): this ledger has {} records; the histories agree through size {} and this ledger ends before size {}",
                self.note.display(),
                self.size,
                d.agrees_through,
                d.differs_by
            ),
            Some(d) => format!(
                "does not extend {} (size {m}, signed by {who}): the histories agree through size {} and diverge by size {}: the first record that differs is among seqs {}..={}",
                self.note.display(),
                d.agrees_through,
                d.differs_by,
                d.agrees_through,
                d.differs_by - 1
            ),
        };
        line + &not_checked_text(&self.not_checked)
    }
}

/// `verify --against NOTE...`: each note verified with `logs` (and the
/// witnesses), then compared with the tree of this ledger; where it does
/// not extend a note, the sizes are bisected over every root the signed
/// history vouches for: the notes given and the checkpoint records of this
/// ledger signed by a trusted key (TRUST-1, TRUST-2).
pub(crate) fn against(
    derived: &Derived,
    notes: &[PathBuf],
    logs: &[VerifierKey],
    witnesses: &[VerifierKey],
) -> anyhow::Result<Vec<Against>> {
    let mut published: Vec<(PathBuf, VerifiedCheckpoint, String)> = Vec::new();
    for path in notes {
        let note = read_note(path)?;
        let v = open_checkpoint(&note, logs, witnesses, &derived.origin)
            .with_context(|| path.display().to_string())?;
        published.push((path.clone(), v, note));
    }
    let mut signed: Vec<(u64, Hash)> = published
        .iter()
        .map(|(_, v, _)| (v.checkpoint.size(), *v.checkpoint.root()))
        .collect();
    signed.extend(recorded_signed_roots(derived, logs));
    let mut out = Vec::new();
    for (note, v, text) in published {
        let own = [(v.checkpoint.size(), *v.checkpoint.root())];
        let extends = tree::bisect(&derived.nodes, &own)
            .map_err(|e| Error::input(e.to_string()))?
            .is_none();
        let divergence = if extends {
            None
        } else {
            let found =
                tree::bisect(&derived.nodes, &signed).map_err(|e| Error::input(e.to_string()))?;
            // Two signed roots of one size (a split view) can hide the
            // boundary; the note's own size still differs.
            Some(found.unwrap_or(Divergence {
                agrees_through: 0,
                differs_by: v.checkpoint.size(),
            }))
        };
        out.push(Against {
            signed_by: signed_by(&v),
            not_checked: not_checked(&v),
            note,
            checkpoint: v.checkpoint,
            divergence,
            size: derived.size(),
            text,
            auditor: None,
        });
    }
    Ok(out)
}

/// The roots of this ledger's checkpoint records whose note a trusted key
/// signed (the copy's bytes after a rewrite are the original's, and a
/// signature cannot be recomputed).
fn recorded_signed_roots(derived: &Derived, logs: &[VerifierKey]) -> Vec<(u64, Hash)> {
    derived
        .checkpoints
        .iter()
        .filter_map(|c| {
            let note = c.record.note.as_deref()?;
            let v = logs
                .iter()
                .find_map(|k| verify_checkpoint_note(note, k, &[]).ok())?;
            Some((v.checkpoint.size(), *v.checkpoint.root()))
        })
        .collect()
}

/// What the tree part of `verify` found: the checkpoint records and node
/// cache, each `--against` note, and the auditor's memory they were
/// judged against (TRUST-7; held, locked, until the verb commits it).
pub(crate) type TreeFound = (
    Option<TreeReport>,
    Vec<Against>,
    Option<crate::cli::auditor::Memory>,
);

/// The tree part of `verify` and its `--against` notes, from one walk;
/// each note this ledger extends is judged against the auditor's memory
/// in `state` (TRUST-7).
pub(crate) fn verify_tree(
    ledger: &Ledger,
    notes: &[PathBuf],
    vkeys: &[String],
    state: Option<&Path>,
    wait: std::time::Duration,
) -> anyhow::Result<TreeFound> {
    let derived = tree::derive(ledger)?;
    let result = (|| {
        let cache = derived.check_cache(ledger.dir())?;
        let mut problems = derived.problems.clone();
        if derived
            .checkpoints
            .iter()
            .any(|c| c.record.signer.is_some())
        {
            // the operator lists from the verified walk, without a fold
            problems.extend(unlisted_signers(&operator_lists_of(ledger)?, &derived));
            problems.sort_by_key(|p| p.seq);
        }
        let report = TreeReport {
            checkpoints: derived.checkpoints.len(),
            problems,
            cache,
        };
        let nothing = report.checkpoints == 0 && report.cache == CacheCheck::Absent;
        if notes.is_empty() {
            return Ok(((!nothing).then_some(report), Vec::new(), None));
        }
        let frozen = frozen_keys(&crate::cli::common::decide_state(ledger)?);
        let logs = if vkeys.is_empty() {
            frozen.operators.clone()
        } else {
            vkeys
                .iter()
                .map(|k| parse_vkey(k))
                .collect::<anyhow::Result<Vec<_>>>()?
        };
        let mut found = against(&derived, notes, &logs, &frozen.witnesses)?;
        let memory = crate::cli::auditor::Memory::open(state, wait)?;
        for a in found.iter_mut().filter(|a| a.divergence.is_none()) {
            a.auditor = Some(memory.judge(&derived.nodes, &a.checkpoint, &a.text)?);
        }
        Ok(((!nothing).then_some(report), found, Some(memory)))
    })();
    derived.discard();
    result
}

/// Appends `events` and, in the same atomic batch, the checkpoint of every
/// record up to and including them (TRUST-1): the tree of the verified log
/// extended by their link hashes, signed with `key` when given (already
/// checked to be a frozen operator key). Returns what was appended and the
/// checkpoint.
pub(crate) fn append_with_checkpoint(
    ledger: &Ledger,
    actor: &str,
    now_ns: u64,
    events: Vec<crate::schema::events::Event>,
    sealed: &crate::schema::events::GroupRef,
    key: Option<&SignerKey>,
) -> anyhow::Result<(Vec<crate::log::ledger::Appended>, Checkpoint)> {
    let derived = tree::derive(ledger)?;
    if let Some(p) = derived.problems.first() {
        let msg = format!(
            "checkpoint record at seq {}: {}; run verify",
            p.seq, p.detail
        );
        derived.discard();
        return Err(Error::Damage(msg).into());
    }
    let mut builder = derived.builder.clone();
    let mut batch = ledger.batch(now_ns)?;
    for event in events {
        let a = batch.push(crate::log::ledger::Draft {
            actor: actor.to_string(),
            event,
            idempotency_key: None,
        })?;
        builder
            .append(crate::log::tlog::record_leaf_hash(a.seq, &a.hash))
            .map_err(|e| Error::input(e.to_string()))?;
    }
    let checkpoint = Checkpoint::new(&derived.origin, builder.size(), builder.root())
        .map_err(|e| Error::input(e.to_string()))?;
    let event = crate::method::decide::seal_checkpoint(sealed, &checkpoint, key)?;
    batch.push(crate::log::ledger::Draft {
        actor: actor.to_string(),
        event,
        idempotency_key: None,
    })?;
    let done = batch.commit()?;
    crate::cli::common::announce(&done);
    if let Err(e) = derived.install(ledger.dir()) {
        eprintln!("benchledger: warning: the node cache was not written ({e})");
    }
    Ok((done, checkpoint))
}

/// TRUST-4: what a published report and a publication bundle carry, the
/// latest signed checkpoint the log records (re-derived from the records
/// before it) and an inclusion proof in it of every group seal it covers.
pub(crate) struct SignedHead {
    /// The seq of its `checkpoint_recorded` record.
    pub(crate) seq: u64,
    /// The signed note, verbatim.
    pub(crate) note: String,
    /// Its body.
    pub(crate) checkpoint: Checkpoint,
    /// The key that signed it.
    pub(crate) signer: VerifierKey,
    /// One proof per seal it covers, in seq order, each verified against
    /// the note with `signer`.
    pub(crate) seals: Vec<InclusionProof>,
    /// The (size, root) of every signed checkpoint record, re-derived from
    /// the records before it: the checkpoints a witness's cosignature may
    /// count for (TRUST-6).
    pub(crate) recorded: Vec<(u64, Hash)>,
}

/// The latest signed checkpoint of `ledger` and the inclusion proof of
/// every seal it covers (`None` when the log records no signed
/// checkpoint), from one verified walk (`tree::derive`); a checkpoint
/// record that does not hold is damage.
pub(crate) fn signed_head(ledger: &Ledger, state: &State) -> anyhow::Result<Option<SignedHead>> {
    let mut derived = tree::derive(ledger)?;
    // A checkpoint by an unlisted key is never presented (TRUST-5).
    let unlisted = unlisted_signers(&operator_lists(state), &derived);
    derived.problems.extend(unlisted);
    derived.problems.sort_by_key(|p| p.seq);
    let made = signed_head_of(&derived);
    derived.discard();
    made
}

fn signed_head_of(derived: &Derived) -> anyhow::Result<Option<SignedHead>> {
    if let Some(p) = derived.problems.first() {
        return Err(Error::Damage(format!(
            "checkpoint record at seq {}: {}; run verify",
            p.seq, p.detail
        ))
        .into());
    }
    let Some((seq, note, signer)) = derived
        .checkpoints
        .iter()
        .rev()
        .find_map(|c| Some((c.seq, c.record.note.clone()?, c.record.signer.clone()?)))
    else {
        return Ok(None);
    };
    let damaged = |e: TlogError| Error::Damage(format!("checkpoint record at seq {seq}: {e}"));
    let signer = VerifierKey::parse(&signer).map_err(damaged)?;
    let checkpoint = verify_checkpoint_note(&note, &signer, &[])
        .map_err(damaged)?
        .checkpoint;
    let mut seals = Vec::new();
    for seal in derived.seals.iter().filter(|s| s.seq < checkpoint.size()) {
        let hashes = prove_inclusion(&derived.nodes, seal.seq, checkpoint.size())
            .map_err(|e| Error::input(e.to_string()))?;
        let proof = InclusionProof::new(&note, seal.seq, seal.link, hashes).map_err(damaged)?;
        proof.verify(&signer, &[]).map_err(damaged)?;
        seals.push(proof);
    }
    let recorded = derived
        .checkpoints
        .iter()
        .filter(|c| c.record.note.is_some())
        .filter_map(|c| {
            let root: Hash = hex::decode(&c.record.root).ok()?.try_into().ok()?;
            Some((c.record.tree_size, root))
        })
        .collect();
    Ok(Some(SignedHead {
        seq,
        note,
        checkpoint,
        signer,
        seals,
        recorded,
    }))
}
