//! `checkpoint witness [LINEAGE]` (TRUST-6): the latest signed checkpoint
//! the log records sent to each frozen witness with the C2SP tlog-witness
//! `add-checkpoint` call; each answer judged by `method::witness` and
//! recorded, a cosignature as `checkpoint_cosigned.v1`, anything else as
//! `checkpoint_witness_failed.v1`. This file does the HTTP and the appends.

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde_json::json;

use crate::cli::common::*;
use crate::cli::out::outln;
use crate::cli::Cli;
use crate::error::Error;
use crate::gates::http::{exchange, parse_http_url, Method};
use crate::limits::WITNESS_EXCHANGE_MS_MAX;
use crate::log::ledger::Ledger;
use crate::log::tlog::merkle::Hash;
use crate::log::tlog::{prove_consistency, tree_root, Checkpoint};
use crate::log::tree::{self, Derived, RecordedCheckpoint};
use crate::method::witness::{self as w, Answer};
use crate::schema::events::{CheckpointCosigned, CheckpointWitnessFailed, Event};
use crate::schema::manifest::Witness;
use crate::schema::time::now_utc_ns;

/// Arguments of `checkpoint witness`.
#[derive(Debug, Args)]
pub struct CheckpointWitnessArgs {
    /// The lineage whose frozen `[witnessing]` names the witnesses
    /// (default: the only lineage).
    pub lineage: Option<String>,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// One witness's outcome.
struct Outcome {
    witness: Witness,
    old: u64,
    answer: Answer,
}

/// What `checkpoint witness` reads under the lock: the lineage, its
/// frozen witnesses, the latest signed checkpoint (seq, note, body) and,
/// per witness, the old size to send and the consistency proof from it.
struct Gathered {
    lineage: String,
    witnessing: crate::schema::manifest::Witnessing,
    seq: u64,
    note: String,
    checkpoint: Checkpoint,
    first: Vec<(u64, Vec<Hash>)>,
}

/// What one round of witnessing did: the checkpoint sent, each witness's
/// outcome (all recorded), how many cosigned and the quorum.
pub(crate) struct Witnessed {
    seq: u64,
    checkpoint: Checkpoint,
    outcomes: Vec<Outcome>,
    /// Witnesses that cosigned this checkpoint.
    pub(crate) cosigned: usize,
    /// k.
    pub(crate) quorum: usize,
}

impl Witnessed {
    /// One line per witness, then "n of m witnesses cosigned ...".
    pub(crate) fn lines(&self) -> Vec<String> {
        let size = self.checkpoint.size();
        let mut out: Vec<String> = self
            .outcomes
            .iter()
            .map(|o| match &o.answer {
                Answer::Cosigned { timestamp, .. } => format!(
                    "{}: cosigned the checkpoint of size {size} at {timestamp} (sent from size {})",
                    o.witness.name, o.old
                ),
                Answer::Failed { message, .. } => {
                    format!("{}: not cosigned: {message}", o.witness.name)
                }
                Answer::Retry { old } => format!(
                    "{}: not cosigned: it asked again for size {old}",
                    o.witness.name
                ),
            })
            .collect();
        out.push(format!(
            "{} of {} witnesses cosigned the checkpoint of size {size} (quorum {})",
            self.cosigned,
            self.outcomes.len(),
            self.quorum
        ));
        out
    }
}

/// Sends the latest signed checkpoint to every witness `lineage` freezes
/// and appends each outcome (TRUST-6). The ledger is read under the lock,
/// the witnesses are asked without it (each exchange bounded by
/// `WITNESS_EXCHANGE_MS_MAX`), and the outcomes appended under it again.
pub(crate) fn witness_lineage(
    cli: &Cli,
    wait: Duration,
    lineage: Option<&str>,
) -> anyhow::Result<Witnessed> {
    let g = gather(cli, lineage, wait)?;
    let outcomes: Vec<Outcome> = g
        .witnessing
        .witnesses
        .iter()
        .zip(&g.first)
        .map(|(witness, (old, proof))| Outcome {
            witness: witness.clone(),
            old: *old,
            answer: send(cli, wait, witness, &g, *old, proof.clone()),
        })
        .collect();
    let events = outcomes
        .iter()
        .map(|o| event(&g.lineage, &g.checkpoint, o))
        .collect();
    let ledger = Ledger::open(&cli.ledger, wait)?;
    append_events(&ledger, &cli.actor, now_utc_ns(), events)?;
    drop(ledger);
    let cosigned = outcomes
        .iter()
        .filter(|o| matches!(o.answer, Answer::Cosigned { .. }))
        .count();
    Ok(Witnessed {
        seq: g.seq,
        checkpoint: g.checkpoint,
        outcomes,
        cosigned,
        quorum: g.witnessing.quorum as usize,
    })
}

/// `checkpoint witness`: exit 0 when at least k witnesses cosigned the
/// checkpoint, 1 when fewer did (their failures recorded, never counted).
pub(crate) fn run_witness(
    cli: &Cli,
    a: &CheckpointWitnessArgs,
    wait: Duration,
) -> anyhow::Result<ExitCode> {
    let done = witness_lineage(cli, wait, a.lineage.as_deref())?;
    print(a, &done)?;
    if done.cosigned < done.quorum {
        eprintln!(
            "benchledger: {} of {} witnesses cosigned the checkpoint of size {} (quorum {}): the seals it covers stay pending (TRUST-6)",
            done.cosigned,
            done.outcomes.len(),
            done.checkpoint.size(),
            done.quorum
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// Reads what the exchanges need, under the lock (released on return).
fn gather(cli: &Cli, lineage: Option<&str>, wait: Duration) -> anyhow::Result<Gathered> {
    let ledger = open_reading(&cli.ledger, wait)?;
    let state = decide_state(&ledger)?;
    let l = state.lineage(lineage)?;
    let lineage = l.frozen.lineage.clone();
    let Some(witnessing) = l.witnessing.clone() else {
        return Err(BadUsage(format!(
            "lineage {lineage} freezes no [witnessing] table: there are no witnesses to send a checkpoint to (TRUST-6)"
        ))
        .into());
    };
    let cosigned = l.cosigned.clone();
    let lists = crate::method::trust::operator_lists(&state);
    drop(state);
    let derived = tree::derive(&ledger)?;
    let result = (|| {
        let (seq, note, checkpoint) = latest_signed(&lists, &derived)?;
        let mut first = Vec::new();
        for witness in &witnessing.witnesses {
            let old = w::old_size(&cosigned, &witness.name, checkpoint.size());
            let proof = prove_consistency(&derived.nodes, old, checkpoint.size())
                .map_err(|e| Error::input(e.to_string()))?;
            first.push((old, proof));
        }
        Ok::<_, anyhow::Error>((seq, note, checkpoint, first))
    })();
    derived.discard();
    let (seq, note, checkpoint, first) = result?;
    Ok(Gathered {
        lineage,
        witnessing,
        seq,
        note,
        checkpoint,
        first,
    })
}

/// The consistency proof from `old` to the checkpoint's size, read from
/// the node cache under the lock (for a retry from a witness's size); the
/// cache must give the checkpoint's root, else the tree is derived afresh
/// from the verified log.
fn proof_from(cli: &Cli, wait: Duration, old: u64, cp: &Checkpoint) -> Result<Vec<Hash>, String> {
    let fail = |e: &dyn std::fmt::Display| format!("no consistency proof from size {old}: {e}");
    let ledger = open_reading(&cli.ledger, wait).map_err(|e| fail(&e))?;
    let nodes = tree::synced(&ledger).map_err(|e| fail(&e))?;
    if tree_root(&nodes, cp.size()).ok().as_ref() == Some(cp.root()) {
        return prove_consistency(&nodes, old, cp.size()).map_err(|e| fail(&e));
    }
    drop(nodes);
    let derived = tree::derive(&ledger).map_err(|e| fail(&e))?;
    let proof = match tree_root(&derived.nodes, cp.size()) {
        Ok(root) if root == *cp.root() => {
            prove_consistency(&derived.nodes, old, cp.size()).map_err(|e| fail(&e))
        }
        _ => Err(fail(&"this ledger no longer has the checkpoint's root")),
    };
    derived.discard();
    proof
}

/// The latest checkpoint record with a signed note that holds (and whose
/// signer a frozen manifest lists, TRUST-5): its seq, note and body.
fn latest_signed(
    lists: &crate::method::trust::OperatorLists,
    derived: &Derived,
) -> anyhow::Result<(u64, String, Checkpoint)> {
    let bad: Vec<u64> = derived
        .problems
        .iter()
        .chain(&crate::method::trust::unlisted_signers(lists, derived))
        .map(|p| p.seq)
        .collect();
    let found: Option<&RecordedCheckpoint> = derived
        .checkpoints
        .iter()
        .rev()
        .find(|c| c.record.note.is_some() && !bad.contains(&c.seq));
    let Some(c) = found else {
        return Err(BadUsage(
            "this ledger records no signed checkpoint to send (`checkpoint sign --key FILE`, `group seal --key FILE`)".into(),
        )
        .into());
    };
    let root: Hash = hex::decode(&c.record.root)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| Error::Damage(format!("seq {}: the root is not 64 hex digits", c.seq)))?;
    let checkpoint = Checkpoint::new(&c.record.origin, c.record.tree_size, root)
        .map_err(|e| Error::Damage(format!("seq {}: {e}", c.seq)))?;
    let note = c.record.note.clone().unwrap_or_default();
    Ok((c.seq, note, checkpoint))
}

/// Sends the checkpoint to one witness from `old` (with `proof`), once
/// more from the witness's own size on a 409 that names a smaller one.
fn send(
    cli: &Cli,
    wait: Duration,
    witness: &Witness,
    g: &Gathered,
    mut old: u64,
    mut proof: Vec<Hash>,
) -> Answer {
    let down = |message: String| Answer::Failed {
        status: None,
        message,
    };
    let url = match parse_http_url(&w::endpoint(&witness.url)) {
        Ok(url) => url,
        Err(e) => return down(format!("the frozen url does not parse: {e}")),
    };
    for retried in [false, true] {
        let body = match w::add_checkpoint_body(old, &proof, &g.note) {
            Ok(b) => b,
            Err(e) => return down(e),
        };
        let headers = [(
            "content-type".to_string(),
            "text/plain; charset=utf-8".to_string(),
        )];
        let timeout = Duration::from_millis(WITNESS_EXCHANGE_MS_MAX);
        let r = match exchange(Method::Post, &url, &headers, body.as_bytes(), timeout) {
            Ok(r) => r,
            Err(f) => return down(format!("the witness did not answer: {}", f.error)),
        };
        let answer = w::judge(
            witness,
            &g.checkpoint,
            old,
            retried,
            r.status,
            r.header("content-type"),
            &r.body,
        );
        match answer {
            Answer::Retry { old: theirs } => {
                proof = match proof_from(cli, wait, theirs, &g.checkpoint) {
                    Ok(p) => p,
                    Err(e) => return down(e),
                };
                old = theirs;
            }
            done => return done,
        }
    }
    down("the witness asked for a second retry".into())
}

fn event(lineage: &str, checkpoint: &Checkpoint, o: &Outcome) -> Event {
    let root = hex::encode(checkpoint.root());
    match &o.answer {
        Answer::Cosigned { line, timestamp } => Event::CheckpointCosigned(CheckpointCosigned {
            lineage: lineage.to_string(),
            witness: o.witness.name.clone(),
            tree_size: checkpoint.size(),
            root,
            signature: line.clone(),
            cosigned_at: *timestamp,
        }),
        Answer::Failed { status, message } => {
            Event::CheckpointWitnessFailed(CheckpointWitnessFailed {
                lineage: lineage.to_string(),
                witness: o.witness.name.clone(),
                tree_size: checkpoint.size(),
                root,
                http_status: *status,
                message: message.clone(),
            })
        }
        Answer::Retry { old } => Event::CheckpointWitnessFailed(CheckpointWitnessFailed {
            lineage: lineage.to_string(),
            witness: o.witness.name.clone(),
            tree_size: checkpoint.size(),
            root,
            http_status: Some(409),
            message: format!("the witness asked again for size {old}"),
        }),
    }
}

fn print(a: &CheckpointWitnessArgs, done: &Witnessed) -> anyhow::Result<()> {
    let checkpoint = &done.checkpoint;
    if a.json {
        let rows: Vec<serde_json::Value> = done
            .outcomes
            .iter()
            .map(|o| {
                let (cosigned, status, message) = match &o.answer {
                    Answer::Cosigned { .. } => (true, Some(200), None),
                    Answer::Failed { status, message } => (false, *status, Some(message.clone())),
                    Answer::Retry { .. } => (false, Some(409), None),
                };
                json!({
                    "name": o.witness.name,
                    "url": o.witness.url,
                    "old_size": o.old,
                    "cosigned": cosigned,
                    "http_status": status,
                    "message": message,
                })
            })
            .collect();
        return print_json(&json!({
            "ok": done.cosigned >= done.quorum,
            "seq": done.seq,
            "origin": checkpoint.origin(),
            "tree_size": checkpoint.size(),
            "root": hex::encode(checkpoint.root()),
            "witnesses": rows,
            "cosigned": done.cosigned,
            "quorum": done.quorum,
        }));
    }
    for line in done.lines() {
        outln!("{line}")?;
    }
    Ok(())
}
