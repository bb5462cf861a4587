//! `key generate`, `checkpoint sign | verify` and `prove inclusion |
//! consistency` (TRUST-1, TRUST-2; SPEC section 11): signer keys, signed
//! checkpoints of the ledger's Merkle tree, and the proofs an auditor
//! checks with a checkpoint alone.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand};
use serde_json::json;

use crate::cli::common::*;
use crate::cli::out::{out, outln};
use crate::cli::trust::{
    frozen_keys, not_checked, not_checked_text, open_checkpoint, parse_vkey, read_note,
    read_signer_key, signed_by,
};
use crate::cli::Cli;
use crate::error::Error;
use crate::log::ledger::Ledger;
use crate::log::tlog::merkle::Hash;
use crate::log::tlog::{
    prove_consistency, prove_inclusion, sign_note, tree_root, verify_consistency, verify_inclusion,
    Checkpoint, ConsistencyProof, InclusionProof, KeyKind, SignedNote, SignerKey,
};
use crate::log::tree::{self, NodeFile};
use crate::schema::events::{CheckpointRecorded, Event};
use crate::schema::time::now_utc_ns;

/// `key` verbs.
#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Make an Ed25519 signer key (C2SP note key encoding) from the
    /// system's random source: writes NAME.key (mode 0600, never over an
    /// existing file) and prints its verifier key, the line a manifest's
    /// `[signers]` lists.
    Generate(KeyGenerateArgs),
}

/// Arguments of `key generate`.
#[derive(Debug, Args)]
pub struct KeyGenerateArgs {
    /// The key name (C2SP: no white space, no plus sign), e.g. `alice`.
    pub name: String,
    /// A witness key (C2SP tlog-cosignature/v1, type 0x04) instead of a
    /// note key (operators and reviewers).
    #[arg(long)]
    pub witness: bool,
    /// Where to write the signer key (default `NAME.key`).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `checkpoint` verbs.
#[derive(Debug, Subcommand)]
pub enum CheckpointCommand {
    /// Sign a checkpoint of every record (origin, tree size, Merkle root,
    /// computed from the verified log), append it as a checkpoint record
    /// and print the signed note (or write it to --out).
    Sign(CheckpointSignArgs),
    /// Print a checkpoint the log records (as re-derived and checked from
    /// the records before it): the signed note of the checkpoint record at
    /// SEQ, by default the latest signed one (a seal's checkpoint, or
    /// `checkpoint sign`'s).
    Show(CheckpointShowArgs),
    /// Check a signed checkpoint: its signature (and any witness
    /// cosignature of a key the manifest lists), and that this ledger has
    /// that tree size and root. Exit 1 otherwise.
    ///
    /// The auditor remembers (TRUST-7): the largest checkpoint accepted per
    /// origin is kept in a state file (--state); a smaller one is refused
    /// as a rollback, one not consistent with it as a fork (exit 1).
    Verify(CheckpointVerifyArgs),
    /// Send the latest signed checkpoint to each witness the lineage's
    /// manifest freezes (C2SP tlog-witness `add-checkpoint`, with a
    /// consistency proof from the size each last cosigned) and record each
    /// cosignature, or why a witness did not cosign (TRUST-6). Exit 1 when
    /// fewer than the frozen quorum cosigned.
    Witness(crate::cli::witness::CheckpointWitnessArgs),
}

/// Arguments of `checkpoint sign`.
#[derive(Debug, Args)]
pub struct CheckpointSignArgs {
    /// The signer key file (`key generate`).
    #[arg(long, value_name = "FILE")]
    pub key: PathBuf,
    /// Write the signed note to this file instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `checkpoint show`.
#[derive(Debug, Args)]
pub struct CheckpointShowArgs {
    /// The seq of a checkpoint record (default: the latest signed one).
    pub seq: Option<u64>,
    /// Write the note to this file instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `checkpoint verify`.
#[derive(Debug, Args)]
pub struct CheckpointVerifyArgs {
    /// The signed checkpoint note.
    pub note: PathBuf,
    /// The log's verifier key (the text, or @FILE); repeat to allow several.
    #[arg(long, required = true, value_name = "VKEY")]
    pub vkey: Vec<String>,
    /// The auditor's state file (TRUST-7): the largest checkpoint accepted
    /// per origin. Default `$XDG_CONFIG_HOME/benchledger/auditor-state.json`
    /// (else `~/.config/benchledger/auditor-state.json`).
    #[arg(long, value_name = "FILE", env = crate::cli::auditor::STATE_ENV)]
    pub state: Option<PathBuf>,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `prove` verbs.
#[derive(Debug, Subcommand)]
pub enum ProveCommand {
    /// An inclusion proof of record SEQ in a signed checkpoint (JSON, SPEC
    /// 11.6): verifiable with the checkpoint alone, without the ledger.
    Inclusion(InclusionArgs),
    /// A consistency proof that the tree of OLD_NOTE is a prefix of the
    /// tree of NEW_NOTE (JSON, SPEC 11.6).
    Consistency(ConsistencyArgs),
}

/// Arguments of `prove inclusion`.
#[derive(Debug, Args)]
pub struct InclusionArgs {
    /// The record's seq.
    pub seq: u64,
    /// The signed checkpoint note that covers it.
    #[arg(long, value_name = "NOTE")]
    pub checkpoint: PathBuf,
    /// A verifier key trusted to sign the checkpoint besides the frozen
    /// operator keys (the text, or @FILE); repeat to allow several.
    #[arg(long, value_name = "VKEY")]
    pub vkey: Vec<String>,
    /// Write the proof to this file instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// `json` (SPEC 11.6) or `tlog-proof` (C2SP tlog-proof: the leaf data
    /// on its `extra` line, the proof hashes, then the signed checkpoint;
    /// TRUST-8).
    #[arg(long, value_enum, default_value = "json")]
    pub format: ProofFormat,
    /// The proof as one JSON document (`--format json`, the default);
    /// refused with `--format tlog-proof`.
    #[arg(long)]
    pub json: bool,
}

/// The text form of an inclusion proof.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProofFormat {
    /// benchledger's proof JSON (SPEC 11.6).
    Json,
    /// C2SP tlog-proof (`c2sp.org/tlog-proof@v1`).
    TlogProof,
}

/// Arguments of `prove consistency`.
#[derive(Debug, Args)]
pub struct ConsistencyArgs {
    /// The earlier signed checkpoint note.
    pub old_note: PathBuf,
    /// The later signed checkpoint note.
    pub new_note: PathBuf,
    /// A verifier key trusted to sign the checkpoints besides the frozen
    /// operator keys (the text, or @FILE); repeat to allow several.
    #[arg(long, value_name = "VKEY")]
    pub vkey: Vec<String>,
    /// Write the proof to this file instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// The proof as one JSON document: it is JSON either way (SPEC 11.6);
    /// accepted as on every verb that prints data.
    #[arg(long)]
    pub json: bool,
}

/// `key generate`.
pub(crate) fn run_key(cmd: &KeyCommand) -> anyhow::Result<ExitCode> {
    let KeyCommand::Generate(a) = cmd;
    let kind = if a.witness {
        KeyKind::CosignatureV1
    } else {
        KeyKind::Ed25519
    };
    let key = SignerKey::generate(&a.name, kind).map_err(|e| Error::input(e.to_string()))?;
    let path = a.out.clone().unwrap_or_else(|| {
        let safe: String = a
            .name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "._-".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        PathBuf::from(format!("{safe}.key"))
    });
    write_private(&path, &format!("{}\n", key.encode()))?;
    let vkey = key.verifier().encode();
    if a.json {
        print_json(&json!({
            "signer_key_file": path.display().to_string(),
            "verifier_key": vkey,
            "kind": kind.label(),
        }))?;
    } else {
        outln!("{vkey}")?;
    }
    eprintln!(
        "benchledger: wrote the signer key to {} (mode 0600; keep it secret); its verifier key is on stdout",
        path.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Writes a new file readable by its owner only; never replaces one.
fn write_private(path: &Path, text: &str) -> anyhow::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => Error::input(format!(
                "{} exists: a key file is never overwritten",
                path.display()
            )),
            _ => Error::io(format!("create {}", path.display()), e),
        })?;
    f.write_all(text.as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(|e| Error::io(format!("write {}", path.display()), e))?;
    Ok(())
}

/// Writes `text` to `out` (through a temporary file) or stdout.
fn emit(out: Option<&PathBuf>, text: &str) -> anyhow::Result<()> {
    match out {
        Some(path) => {
            let tmp = path.with_extension("partial");
            std::fs::write(&tmp, text)
                .and_then(|()| std::fs::rename(&tmp, path))
                .map_err(|e| Error::io(format!("write {}", path.display()), e))?;
            eprintln!("benchledger: wrote {}", path.display());
        }
        None => out!("{text}")?,
    }
    Ok(())
}

fn check_failed(msg: String) -> anyhow::Error {
    Error::Damage(msg).into()
}

/// A checkpoint note given to the ledger does not hold against it (another
/// log, a larger tree, another root): exit 1, but not called damage of this
/// ledger (issue 29 item 17).
fn not_held(msg: String) -> anyhow::Error {
    Error::NotHeld(msg).into()
}

/// `checkpoint sign | verify`.
pub(crate) fn run_checkpoint(
    cli: &Cli,
    cmd: &CheckpointCommand,
    wait: Duration,
) -> anyhow::Result<ExitCode> {
    match cmd {
        CheckpointCommand::Sign(a) => run_sign(cli, a, wait),
        CheckpointCommand::Verify(a) => run_verify_note(cli, a, wait),
        CheckpointCommand::Show(a) => run_show(cli, a, wait),
        CheckpointCommand::Witness(a) => crate::cli::witness::run_witness(cli, a, wait),
    }
}

fn run_show(cli: &Cli, a: &CheckpointShowArgs, wait: Duration) -> anyhow::Result<ExitCode> {
    let ledger = crate::cli::common::open_reading(&cli.ledger, wait)?;
    let lists = crate::cli::trust::operator_lists_of(&ledger)?;
    let derived = tree::derive(&ledger)?;
    // A checkpoint by a key no manifest lists is not shown as the signed
    // one (TRUST-5).
    let bad: Vec<u64> = derived
        .problems
        .iter()
        .chain(&crate::method::trust::unlisted_signers(&lists, &derived))
        .map(|p| p.seq)
        .collect();
    let found = match a.seq {
        Some(seq) => derived.checkpoints.iter().find(|c| c.seq == seq),
        None => derived
            .checkpoints
            .iter()
            .rev()
            .find(|c| c.record.note.is_some() && !bad.contains(&c.seq)),
    }
    .cloned();
    derived.discard();
    let Some(c) = found else {
        return Err(BadUsage(match a.seq {
            Some(seq) => format!("seq {seq} is not a checkpoint record"),
            None => "this ledger records no signed checkpoint (`checkpoint sign --key FILE`, `group seal --key FILE`)".into(),
        })
        .into());
    };
    if bad.contains(&c.seq) {
        return Err(check_failed(format!(
            "the checkpoint record at seq {} does not hold: run verify",
            c.seq
        )));
    }
    let root: Hash = hex::decode(&c.record.root)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| check_failed(format!("seq {}: the root is not 64 hex digits", c.seq)))?;
    let body = Checkpoint::new(&c.record.origin, c.record.tree_size, root)
        .map_err(|e| Error::input(e.to_string()))?
        .body();
    let text = c.record.note.clone().unwrap_or(body);
    if a.json {
        print_json(&json!({
            "seq": c.seq,
            "tree_size": c.record.tree_size,
            "root": c.record.root,
            "signer": c.record.signer,
            "sealed": c.record.sealed,
            "note": c.record.note,
        }))?;
        if let Some(path) = &a.out {
            emit(Some(path), &text)?;
        }
    } else {
        emit(a.out.as_ref(), &text)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Signs a checkpoint of every record with the key in `key_path` and
/// appends it as a checkpoint record (TRUST-1, TRUST-5): its seq, the
/// checkpoint and the signed note.
pub(crate) fn sign_head(
    cli: &Cli,
    key_path: &Path,
    wait: Duration,
) -> anyhow::Result<(u64, Checkpoint, String)> {
    let key = read_signer_key(key_path)?;
    if key.kind() != KeyKind::Ed25519 {
        return Err(BadUsage(format!(
            "{} is {} key; a checkpoint is signed with a note key",
            key_path.display(),
            crate::schema::strings::with_article(key.kind().label())
        ))
        .into());
    }
    let ledger = Ledger::open(&cli.ledger, wait)?;
    let state = crate::cli::common::decide_state(&ledger)?;
    crate::method::trust::check_checkpoint_signer(&state, &key.verifier())?;
    drop(state);
    let derived = tree::derive(&ledger)?;
    if let Some(p) = derived.problems.first() {
        let msg = format!(
            "checkpoint record at seq {}: {}; run verify",
            p.seq, p.detail
        );
        derived.discard();
        return Err(check_failed(msg));
    }
    let checkpoint = Checkpoint::new(&derived.origin, derived.size(), derived.root())
        .map_err(|e| Error::input(e.to_string()))?;
    let note = sign_note(&checkpoint.body(), &[&key]).map_err(|e| Error::input(e.to_string()))?;
    let event = Event::CheckpointRecorded(CheckpointRecorded {
        origin: checkpoint.origin().to_string(),
        tree_size: checkpoint.size(),
        root: hex::encode(checkpoint.root()),
        note: Some(note.clone()),
        signer: Some(key.verifier().encode()),
        sealed: None,
    });
    let done = append_events(&ledger, &cli.actor, now_utc_ns(), vec![event])?;
    if let Err(e) = derived.install(ledger.dir()) {
        eprintln!("benchledger: warning: the node cache was not written ({e})");
    }
    Ok((done[0].seq, checkpoint, note))
}

fn run_sign(cli: &Cli, a: &CheckpointSignArgs, wait: Duration) -> anyhow::Result<ExitCode> {
    let (seq, checkpoint, note) = sign_head(cli, &a.key, wait)?;
    if a.json {
        print_json(&json!({
            "seq": seq,
            "origin": checkpoint.origin(),
            "tree_size": checkpoint.size(),
            "root": hex::encode(checkpoint.root()),
            "note": note,
        }))?;
        if let Some(path) = &a.out {
            emit(Some(path), &note)?;
        }
    } else {
        emit(a.out.as_ref(), &note)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn run_verify_note(
    cli: &Cli,
    a: &CheckpointVerifyArgs,
    wait: Duration,
) -> anyhow::Result<ExitCode> {
    let logs = a
        .vkey
        .iter()
        .map(|k| parse_vkey(k))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let note = read_note(&a.note)?;
    let ledger = crate::cli::common::open_reading(&cli.ledger, wait)?;
    let witnesses = frozen_keys(&decide_state(&ledger)?).witnesses;
    let derived = tree::derive(&ledger)?;
    let result = (|| {
        let v = open_checkpoint(&note, &logs, &witnesses, &derived.origin)?;
        let size = v.checkpoint.size();
        if size > derived.size() {
            return Err(not_held(format!(
                "the checkpoint covers {size} records, this ledger has {}",
                derived.size()
            )));
        }
        let root = tree_root(&derived.nodes, size).map_err(|e| Error::input(e.to_string()))?;
        if root != *v.checkpoint.root() {
            return Err(not_held(format!(
                "this ledger's root at size {size} is {}, the checkpoint's is {}: run verify --against",
                hex::encode(root),
                hex::encode(v.checkpoint.root())
            )));
        }
        // TRUST-7: judged against the remembered checkpoint, with a
        // consistency proof from this ledger's tree.
        let memory = crate::cli::auditor::Memory::open(a.state.as_deref(), wait)?;
        let judged = memory.judge(&derived.nodes, &v.checkpoint, &note)?;
        if let Some(why) = judged.refusal() {
            return Err(not_held(why));
        }
        let path = memory.path().to_path_buf();
        let written = memory.commit(&[&judged])?;
        Ok((v, judged, path, written))
    })();
    derived.discard();
    let (v, judged, state_file, written) = result?;
    let (who, unchecked) = (signed_by(&v), not_checked(&v));
    if a.json {
        let mut auditor = judged.json();
        auditor["updated"] = json!(written);
        print_json(&json!({
            "ok": true,
            "origin": v.checkpoint.origin(),
            "tree_size": v.checkpoint.size(),
            "root": hex::encode(v.checkpoint.root()),
            "signed_by": who,
            "not_checked": unchecked,
            "auditor": auditor,
        }))?;
    } else {
        outln!(
            "ok: {} size {} root {} signed by {}; this ledger has that tree size and root{}",
            v.checkpoint.origin(),
            v.checkpoint.size(),
            hex::encode(v.checkpoint.root()),
            who.join(", "),
            not_checked_text(&unchecked)
        )?;
        outln!("{}", judged.line())?;
        outln!(
            "{}",
            crate::cli::auditor::committed_line(&state_file, written)
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The checkpoint body of a signed note file (not verified: a proof
/// carries the note and its verifier checks the signature).
fn note_checkpoint(path: &Path) -> anyhow::Result<(String, Checkpoint)> {
    let note = read_note(path)?;
    let parsed = SignedNote::parse(&note).map_err(|e| Error::input(e.to_string()))?;
    let cp = Checkpoint::parse(parsed.text())
        .map_err(|e| Error::input(format!("{}: {e}", path.display())))?;
    Ok((note, cp))
}

/// Runs `make` on the node cache; when what it makes does not check out
/// against the signed roots (`Ok(Err(why))`: a stale or damaged cache, or
/// a ledger that does not match), once more on the tree derived afresh
/// from the verified log, whose answer stands (exit 1 when it is `why`).
fn from_nodes<T>(
    ledger: &Ledger,
    make: impl Fn(&NodeFile) -> anyhow::Result<Result<T, String>>,
) -> anyhow::Result<T> {
    let nodes = tree::synced(ledger)?;
    if let Ok(made) = make(&nodes)? {
        return Ok(made);
    }
    drop(nodes);
    let nodes = tree::derive(ledger)?.install(ledger.dir())?;
    make(&nodes)?.map_err(not_held)
}

/// Whether `nodes` has the checkpoint's root at its size.
fn root_matches(nodes: &NodeFile, cp: &Checkpoint) -> anyhow::Result<Result<(), String>> {
    if cp.size() > nodes.leaves() {
        return Ok(Err(format!(
            "the checkpoint covers {} records, this ledger has {}",
            cp.size(),
            nodes.leaves()
        )));
    }
    if tree_root(nodes, cp.size()).map_err(|e| Error::input(e.to_string()))? != *cp.root() {
        return Ok(Err(format!(
            "this ledger's root at size {} differs from the checkpoint's: it does not extend it (run verify --against)",
            cp.size()
        )));
    }
    Ok(Ok(()))
}

/// A proof is made only for a checkpoint signed by a trusted key (the
/// frozen operator keys, or `vkeys`), with the cosignatures of the listed
/// witnesses present verifying: exit 1 otherwise (TRUST-2).
fn check_signed(
    ledger: &Ledger,
    vkeys: &[String],
    notes: &[(&PathBuf, &String, &Checkpoint)],
) -> anyhow::Result<()> {
    let mut keys = frozen_keys(&decide_state(ledger)?);
    for k in vkeys {
        keys.operators.push(parse_vkey(k)?);
    }
    for (path, note, cp) in notes {
        let v = open_checkpoint(note, &keys.operators, &keys.witnesses, cp.origin())
            .with_context(|| path.display().to_string())?;
        let unchecked = not_checked(&v);
        if !unchecked.is_empty() {
            eprintln!(
                "benchledger: warning: {}{}",
                path.display(),
                not_checked_text(&unchecked)
            );
        }
    }
    Ok(())
}

fn check_origin(ledger: &Ledger, cp: &Checkpoint) -> anyhow::Result<()> {
    let origin = tree::ledger_origin(ledger)?;
    if cp.origin() != origin {
        return Err(not_held(format!(
            "the checkpoint names the log {:?}, this ledger is {origin:?}",
            cp.origin()
        )));
    }
    Ok(())
}

/// `prove inclusion | consistency`.
pub(crate) fn run_prove(cli: &Cli, cmd: &ProveCommand, wait: Duration) -> anyhow::Result<ExitCode> {
    if let ProveCommand::Inclusion(a) = cmd {
        if a.json && a.format != ProofFormat::Json {
            return Err(BadUsage(
                "--json prints the proof as JSON: it cannot go with --format tlog-proof".into(),
            )
            .into());
        }
    }
    let ledger = crate::cli::common::open_reading(&cli.ledger, wait)?;
    match cmd {
        ProveCommand::Inclusion(a) => {
            let (note, cp) = note_checkpoint(&a.checkpoint)?;
            check_origin(&ledger, &cp)?;
            check_signed(&ledger, &a.vkey, &[(&a.checkpoint, &note, &cp)])?;
            if a.seq >= cp.size() {
                return Err(BadUsage(format!(
                    "seq {} is not in the checkpoint (it covers seqs 0..={})",
                    a.seq,
                    cp.size().saturating_sub(1)
                ))
                .into());
            }
            let link = ledger.read(a.seq)?.hash;
            let leaf = crate::log::tlog::record_leaf_hash(a.seq, &link);
            let hashes = from_nodes(&ledger, |nodes| {
                if let Err(why) = root_matches(nodes, &cp)? {
                    return Ok(Err(why));
                }
                let hashes = prove_inclusion(nodes, a.seq, cp.size())
                    .map_err(|e| Error::input(e.to_string()))?;
                Ok(
                    verify_inclusion(&leaf, a.seq, cp.size(), &hashes, cp.root())
                        .map(|()| hashes)
                        .map_err(|e| format!("the proof does not verify: {e}")),
                )
            })?;
            let proof = InclusionProof::new(&note, a.seq, link, hashes)
                .map_err(|e| Error::input(e.to_string()))?;
            let text = match a.format {
                ProofFormat::Json => proof.to_json(),
                ProofFormat::TlogProof => crate::log::tlog::tlog_proof::to_tlog_proof(&proof),
            };
            emit(a.out.as_ref(), &text)?;
        }
        ProveCommand::Consistency(a) => {
            let (old_note, old) = note_checkpoint(&a.old_note)?;
            let (new_note, new) = note_checkpoint(&a.new_note)?;
            check_origin(&ledger, &old)?;
            check_origin(&ledger, &new)?;
            check_signed(
                &ledger,
                &a.vkey,
                &[
                    (&a.old_note, &old_note, &old),
                    (&a.new_note, &new_note, &new),
                ],
            )?;
            if old.size() > new.size() {
                return Err(BadUsage(format!(
                    "the old checkpoint (size {}) is larger than the new one (size {}): swap them",
                    old.size(),
                    new.size()
                ))
                .into());
            }
            let hashes = from_nodes(&ledger, |nodes| {
                for cp in [&old, &new] {
                    if let Err(why) = root_matches(nodes, cp)? {
                        return Ok(Err(why));
                    }
                }
                let hashes = prove_consistency(nodes, old.size(), new.size())
                    .map_err(|e| Error::input(e.to_string()))?;
                Ok(
                    verify_consistency(old.size(), new.size(), &hashes, old.root(), new.root())
                        .map(|()| hashes)
                        .map_err(|e| format!("the proof does not verify: {e}")),
                )
            })?;
            let proof = ConsistencyProof::new(old.origin(), old.size(), new.size(), hashes)
                .map_err(|e| Error::input(e.to_string()))?;
            emit(a.out.as_ref(), &proof.to_json())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
