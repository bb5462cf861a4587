//! `group open | close | seal`: a group's daemon start, its end of launches
//! and its sealed verdict.

use crate::cli::out::outln;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};
use serde_json::json;

use crate::cli::common::*;
use crate::cli::Cli;
use crate::log::ledger::{Appended, Ledger};
use crate::method::decide::GroupOpen;
use crate::schema::events::Event;
use crate::schema::time::now_utc_ns;

/// `group` verbs. GROUP is `LINEAGE/GROUP`, or `GROUP` when the ledger holds
/// one lineage.
#[derive(Debug, Subcommand)]
pub enum GroupCommand {
    /// Record the group's daemon start; refused unless binary, config,
    /// ports and paths equal the frozen manifest (GATE-4, FREEZE-4) and the
    /// group is next in the lineage's order (LINEAGE-1, LINEAGE-2).
    Open(GroupOpenArgs),
    /// End launches for an open group (CASE-9).
    Close(GroupArg),
    /// Attest the group's verdict, final from then on (VERDICT-4): refused
    /// while a case is not terminal, before a cleanup audit after the close,
    /// or while requests are pending inside the settlement grace (CASE-9,
    /// SETTLE-8). Then appends a checkpoint of the log up to the seal
    /// (TRUST-1), signed with --key, which must be one of the lineage's
    /// frozen operator keys (TRUST-3).
    Seal(SealArgs),
}

/// Arguments of `group seal`.
#[derive(Debug, Args)]
pub struct SealArgs {
    /// The group (`LINEAGE/GROUP` or `GROUP`).
    pub group: String,
    /// Sign the seal's checkpoint with this operator key file (one of the
    /// frozen `[signers] operators`); unsigned without it.
    #[arg(long, value_name = "FILE")]
    pub key: Option<std::path::PathBuf>,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `group open`.
#[derive(Debug, Args)]
pub struct GroupOpenArgs {
    /// The group (`LINEAGE/GROUP` or `GROUP`).
    pub group: String,
    /// SHA-256 of the daemon binary started.
    #[arg(long)]
    pub binary_sha256: String,
    /// SHA-256 of the daemon config.
    #[arg(long)]
    pub config_sha256: String,
    /// The daemon's ports, comma-separated.
    #[arg(long, value_delimiter = ',', required = true)]
    pub ports: Vec<u16>,
    /// The daemon's database path.
    #[arg(long)]
    pub db: String,
    /// The group's output directory (recorded; the daemon and the cases
    /// write there).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: String,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// A group argument alone.
#[derive(Debug, Args)]
pub struct GroupArg {
    /// The group (`LINEAGE/GROUP` or `GROUP`).
    pub group: String,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `group open | close`.
pub fn run_group(cli: &Cli, cmd: &GroupCommand, wait: Duration) -> anyhow::Result<ExitCode> {
    let (done, json_out, what) = match cmd {
        GroupCommand::Seal(a) => return run_seal(cli, a, wait),
        GroupCommand::Open(a) => {
            require_aws_gates("group open")?;
            let (lineage, group) = parse_group(&a.group);
            let open = GroupOpen {
                lineage,
                group,
                binary_sha256: a.binary_sha256.clone(),
                config_sha256: a.config_sha256.clone(),
                ports: a.ports.clone(),
                db_path: a.db.clone(),
                out_dir: a.out.clone(),
            };
            (open_group(cli, wait, open)?, a.json, "opened")
        }
        GroupCommand::Close(a) => (close_group(cli, wait, &a.group)?, a.json, "closed"),
    };
    if json_out {
        print_json(&json!({ "seq": done[0].seq, "hash": hex::encode(done[0].hash) }))?;
    } else {
        outln!("group {what} at seq {}", done[0].seq)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `group open`'s decision and append under the writer lock.
pub(crate) fn open_group(
    cli: &Cli,
    wait: Duration,
    open: GroupOpen,
) -> anyhow::Result<Vec<Appended>> {
    let ledger = Ledger::open(&cli.ledger, wait)?;
    decide_and_append(&ledger, &cli.actor, now_utc_ns(), |s| {
        crate::method::decide::group_open(s, open)
    })
}

/// `group close`'s decision and append under the writer lock.
pub(crate) fn close_group(cli: &Cli, wait: Duration, spec: &str) -> anyhow::Result<Vec<Appended>> {
    let (lineage, group) = parse_group(spec);
    let ledger = Ledger::open(&cli.ledger, wait)?;
    decide_and_append(&ledger, &cli.actor, now_utc_ns(), |s| {
        crate::method::decide::group_close(s, lineage.as_deref(), &group)
    })
}

/// A sealed verdict: its status, failing rows and the checkpoint appended
/// with it.
pub(crate) struct Sealed {
    /// The records appended (the seal first, the checkpoint last).
    pub(crate) done: Vec<Appended>,
    pub(crate) status: String,
    /// The failing rows.
    pub(crate) failing: Vec<String>,
    /// The checkpoint of the log up to the seal (TRUST-1).
    pub(crate) checkpoint: crate::log::tlog::Checkpoint,
}

/// `group seal`'s decision (on a scanning replay) and one atomic append of
/// the verdict, its consequences and the checkpoint of the log up to them,
/// signed with `key` when given (TRUST-3: a frozen operator key).
pub(crate) fn seal_group(
    cli: &Cli,
    wait: Duration,
    spec: &str,
    key: Option<&crate::log::tlog::SignerKey>,
) -> anyhow::Result<Sealed> {
    let ledger = Ledger::open(&cli.ledger, wait)?;
    let (lineage, group) = parse_group(spec);
    let now = now_utc_ns();
    let state = crate::method::projections::replay_scanning(&ledger)?;
    let events = crate::method::decide::seal(&state, lineage.as_deref(), &group, now)?;
    if let Some(k) = key {
        crate::method::decide::seal_signer(&state, lineage.as_deref(), k)?;
    }
    let Some(Event::GroupSealed(sealed)) = events.first().cloned() else {
        unreachable!("a seal starts with its verdict")
    };
    let failing: Vec<String> = sealed
        .rows
        .iter()
        .filter(|r| !r.holds)
        .map(|r| r.gate.clone())
        .collect();
    let (done, checkpoint) = crate::cli::trust::append_with_checkpoint(
        &ledger,
        &cli.actor,
        now,
        events,
        &sealed.group,
        key,
    )?;
    Ok(Sealed {
        done,
        status: sealed.status,
        failing,
        checkpoint,
    })
}

/// `group seal [--key FILE]`.
pub fn run_seal(cli: &Cli, a: &SealArgs, wait: Duration) -> anyhow::Result<ExitCode> {
    let key = a
        .key
        .as_deref()
        .map(crate::cli::trust::read_signer_key)
        .transpose()?;
    let (_, group) = parse_group(&a.group);
    let Sealed {
        done,
        status,
        failing,
        checkpoint,
    } = seal_group(cli, wait, &a.group, key.as_ref())?;
    let seqs: Vec<u64> = done.iter().map(|d| d.seq).collect();
    if a.json {
        print_json(&json!({
            "seq": done[0].seq,
            "hash": hex::encode(done[0].hash),
            "status": status,
            "failing_rows": failing,
            "appended": seqs,
            "checkpoint": {
                "seq": seqs.last(),
                "tree_size": checkpoint.size(),
                "root": hex::encode(checkpoint.root()),
                "signed_by": key.as_ref().map(|k| k.verifier().encode()),
            },
        }))?;
    } else {
        outln!("sealed {group} {} at seq {}", status, done[0].seq)?;
        if !failing.is_empty() {
            outln!("failing rows: {}", failing.join(", "))?;
        }
        eprintln!(
            "also appended seqs {:?} (control catalog / lineage stop, then the checkpoint of size {}{})",
            &seqs[1..],
            checkpoint.size(),
            if key.is_some() { ", signed" } else { ", unsigned" }
        );
    }
    Ok(ExitCode::SUCCESS)
}
