//! `lineage show | stop` (LINEAGE-1..5, VERDICT-3).

use crate::cli::out::outln;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};

use crate::cli::common::*;
use crate::cli::Cli;
use crate::log::ledger::Ledger;
use crate::method::projections::replay_scanning;
use crate::method::verdict;
use crate::schema::time::now_utc_ns;

/// `lineage` verbs.
#[derive(Debug, Subcommand)]
pub enum LineageCommand {
    /// Stop a lineage (VERDICT-3): it launches nothing more; evidence is kept.
    Stop(LineageStopArgs),
    /// The lineage projection: groups, next group, feedback, completion.
    Show(LineageShowArgs),
}

/// Arguments of `lineage stop`.
#[derive(Debug, Args)]
pub struct LineageStopArgs {
    /// The lineage (optional when the ledger holds one).
    pub lineage: Option<String>,
    /// Why.
    #[arg(long)]
    pub reason: String,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `lineage show`.
#[derive(Debug, Args)]
pub struct LineageShowArgs {
    /// The lineage (optional when the ledger holds one).
    pub lineage: Option<String>,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn print_lineage(v: &verdict::LineageView) -> std::io::Result<()> {
    outln!("lineage {}", v.lineage)?;
    for g in &v.groups {
        // An open group's verdict is what a seal would attest now, never
        // a verdict: worded as `replay` and `gate` word it (issue 21).
        let (standing, now) = match (&g.sealed, g.opened_seq) {
            (Some((seq, s)), _) => (
                format!("sealed {s} at seq {seq}"),
                format!("now {}", g.status_now),
            ),
            (None, Some(seq)) => (
                format!("open since seq {seq}"),
                format!("if sealed now, {}", g.status_now),
            ),
            (None, None) => (
                "not opened".to_string(),
                format!("the log gives {} now", g.status_now),
            ),
        };
        outln!(
            "  {:<10} {:<24} {:<26}{}",
            g.group,
            standing,
            now,
            g.feedback_seq
                .map_or(String::new(), |s| format!(" feedback at seq {s}"))
        )?;
    }
    print_lineage_tail(v)
}

/// What follows the group lines, in `lineage show` and `replay` alike: the
/// control in use, the next group, feedback, a stop and completion.
pub(crate) fn print_lineage_tail(v: &verdict::LineageView) -> std::io::Result<()> {
    if let Some(c) = &v.control {
        outln!("  control: {c}")?;
    }
    outln!(
        "  next group: {}",
        v.next_group.as_deref().unwrap_or("none")
    )?;
    if !v.feedback_allowed.is_empty() {
        outln!("  feedback allowed from: {}", v.feedback_allowed.join(", "))?;
    }
    if let Some((seq, rule, reason)) = &v.stopped {
        outln!(
            "  STOPPED at seq {seq} ({rule}): {}",
            crate::schema::strings::inert(reason)
        )?;
    }
    outln!("  complete: {}", v.complete)?;
    Ok(())
}

/// `lineage stop | show`.
pub fn run_lineage(cli: &Cli, cmd: &LineageCommand, wait: Duration) -> anyhow::Result<ExitCode> {
    match cmd {
        LineageCommand::Stop(a) => {
            let ledger = Ledger::open(&cli.ledger, wait)?;
            let done =
                crate::cli::common::decide_and_append(&ledger, &cli.actor, now_utc_ns(), |s| {
                    crate::method::decide::lineage_stop(s, a.lineage.as_deref(), &a.reason)
                })?;
            report_appended(&done, a.json, "lineage stopped")?;
        }
        LineageCommand::Show(a) => {
            let ledger = crate::cli::common::open_reading(&cli.ledger, wait)?;
            let state = replay_scanning(&ledger)?;
            let l = state.lineage(a.lineage.as_deref())?;
            let v = verdict::lineage_view(&state, l);
            if a.json {
                print_json(&serde_json::to_value(&v)?)?;
            } else {
                print_lineage(&v)?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
