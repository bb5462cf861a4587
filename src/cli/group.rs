//! `group open | close | seal`: a group's daemon start, its end of launches
//! and its sealed verdict.

use crate::cli::out::outln;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};
use serde_json::json;

use crate::cli::common::*;
use crate::cli::Cli;
use crate::log::ledger::Ledger;
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
    /// SETTLE-8).
    Seal(GroupArg),
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
    /// The group's output directory.
    #[arg(long)]
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
    if let GroupCommand::Seal(a) = cmd {
        return run_seal(cli, &a.group, a.json, wait);
    }
    let ledger = Ledger::open(&cli.ledger, wait)?;
    let (done, json_out, what) = match cmd {
        GroupCommand::Open(a) => {
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
            (
                decide_and_append(&ledger, &cli.actor, now_utc_ns(), |s| {
                    crate::method::decide::group_open(s, open)
                })?,
                a.json,
                "opened",
            )
        }
        GroupCommand::Close(a) => {
            let (lineage, group) = parse_group(&a.group);
            (
                decide_and_append(&ledger, &cli.actor, now_utc_ns(), |s| {
                    crate::method::decide::group_close(s, lineage.as_deref(), &group)
                })?,
                a.json,
                "closed",
            )
        }
        GroupCommand::Seal(_) => unreachable!("handled above"),
    };
    if json_out {
        print_json(&json!({ "seq": done[0].seq, "hash": hex::encode(done[0].hash) }))?;
    } else {
        outln!("group {what} at seq {}", done[0].seq)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `group seal`.
pub fn run_seal(cli: &Cli, spec: &str, as_json: bool, wait: Duration) -> anyhow::Result<ExitCode> {
    let ledger = Ledger::open(&cli.ledger, wait)?;
    let (lineage, group) = parse_group(spec);
    let mut sealed: Option<(String, Vec<String>)> = None;
    let done = decide_scanning(cli, &ledger, |s| {
        let events = crate::method::decide::seal(s, lineage.as_deref(), &group, now_utc_ns())?;
        if let Some(Event::GroupSealed(g)) = events.first() {
            sealed = Some((
                g.status.clone(),
                g.rows
                    .iter()
                    .filter(|r| !r.holds)
                    .map(|r| r.gate.clone())
                    .collect(),
            ));
        }
        Ok(events)
    })?;
    let (status, failing) = sealed.unwrap_or_default();
    if as_json {
        print_json(&json!({
            "seq": done[0].seq,
            "hash": hex::encode(done[0].hash),
            "status": status,
            "failing_rows": failing,
            "appended": done.iter().map(|d| d.seq).collect::<Vec<_>>(),
        }))?;
    } else {
        outln!("sealed {group} {status} at seq {}", done[0].seq)?;
        if !failing.is_empty() {
            outln!("failing rows: {}", failing.join(", "))?;
        }
        if done.len() > 1 {
            eprintln!(
                "also appended seqs {:?} (control catalog / lineage stop)",
                &done[1..].iter().map(|d| d.seq).collect::<Vec<_>>()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
