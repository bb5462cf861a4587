//! `control reuse | list`: the control catalog (LINEAGE-6, LINEAGE-9).

use crate::cli::out::outln;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};
use serde_json::json;

use crate::cli::common::*;
use crate::cli::Cli;
use crate::log::ledger::Ledger;
use crate::method::verdict;
use crate::schema::events::GroupRef;
use crate::schema::time::now_utc_ns;

/// `control` verbs.
#[derive(Debug, Subcommand)]
pub enum ControlCommand {
    /// Reuse another lineage's accepted control: exact control key only,
    /// artifact checksum re-derived from the log (LINEAGE-6, LINEAGE-9).
    Reuse(ControlReuseArgs),
    /// List the control catalog: accepted controls by key and their reusers.
    List(JsonArg),
}

/// Arguments of `control reuse`.
#[derive(Debug, Args)]
pub struct ControlReuseArgs {
    /// The lineage that reuses.
    pub lineage: String,
    /// The accepted control: `LINEAGE/control`.
    #[arg(long, value_name = "LINEAGE/control")]
    pub control: String,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `control reuse | list`.
pub fn run_control(cli: &Cli, cmd: &ControlCommand, wait: Duration) -> anyhow::Result<ExitCode> {
    match cmd {
        ControlCommand::Reuse(a) => {
            let ledger = Ledger::open(&cli.ledger, wait)?;
            let (Some(cl), cg) = parse_group(&a.control) else {
                return Err(
                    BadUsage(format!("--control {:?} is not LINEAGE/control", a.control)).into(),
                );
            };
            let control = GroupRef {
                lineage: cl,
                group: cg,
            };
            let done =
                crate::cli::common::decide_and_append(&ledger, &cli.actor, now_utc_ns(), |s| {
                    crate::method::decide::control_reuse(s, &a.lineage, &control)
                })?;
            report_appended(&done, a.json, "control reuse recorded")?;
        }
        ControlCommand::List(a) => {
            let ledger = crate::cli::common::open_reading(&cli.ledger, wait)?;
            let state = crate::cli::common::decide_state(&ledger)?;
            let cat = verdict::control_catalog(&state);
            if a.json {
                print_json(&json!({ "controls": cat }))?;
            } else if cat.is_empty() {
                outln!("no accepted control in the catalog")?;
            } else {
                for e in cat {
                    outln!(
                        "{}/{} key {} artifact {} (seq {}) reused by {:?}",
                        e.group.lineage,
                        e.group.group,
                        e.control_key,
                        e.artifact_blake3,
                        e.seq,
                        e.reused_by
                    )?;
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
