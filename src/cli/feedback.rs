//! `feedback record`: reward feedback after an accepted r1/r2 (LINEAGE-3).

use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};

use crate::cli::common::*;
use crate::cli::Cli;
use crate::log::ledger::Ledger;
use crate::schema::time::now_utc_ns;

/// `feedback` verbs.
#[derive(Debug, Subcommand)]
pub enum FeedbackCommand {
    /// Record reward feedback applied to the policy database, once after an
    /// accepted r1 or r2 (LINEAGE-3), with the snapshots before and after.
    Record(FeedbackArgs),
}

/// Arguments of `feedback record`.
#[derive(Debug, Args)]
pub struct FeedbackArgs {
    /// The group: `LINEAGE/r1` or `LINEAGE/r2`.
    pub group: String,
    /// Digest of the policy snapshot before feedback (64 hex).
    #[arg(long, value_name = "HASH")]
    pub before: String,
    /// Digest of the policy snapshot after feedback (64 hex).
    #[arg(long, value_name = "HASH")]
    pub after: String,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `feedback record`.
pub fn run_feedback(cli: &Cli, cmd: &FeedbackCommand, wait: Duration) -> anyhow::Result<ExitCode> {
    let FeedbackCommand::Record(a) = cmd;
    let (lineage, group) = parse_group(&a.group);
    let ledger = Ledger::open(&cli.ledger, wait)?;
    let done = crate::cli::common::decide_and_append(&ledger, &cli.actor, now_utc_ns(), |s| {
        crate::method::decide::feedback(s, lineage.as_deref(), &group, &a.before, &a.after)
    })?;
    report_appended(&done, a.json, "feedback recorded")?;
    Ok(ExitCode::SUCCESS)
}
