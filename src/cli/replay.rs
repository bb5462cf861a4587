//! `replay [--at SEQ]`: every projection as of any seq.

use crate::cli::out::outln;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;

use crate::cli::common::*;
use crate::cli::gate::{print_verdict, status_text, Standing};
use crate::cli::progress::Progress;
use crate::cli::Cli;
use crate::method::audit::replay_document;
use crate::method::projections::{replay_until_observed, LineageState, State};
use crate::method::verdict::{self, GroupLine, LineageView, Verdict};

/// Arguments of `replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// Replay up to and including this seq (default: the head).
    #[arg(long, value_name = "SEQ")]
    pub at: Option<u64>,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Why an open group would be sealed as it would: its failing rows with
/// their evidence (and the request ids behind a failing join row's counts).
fn because(v: &Verdict) -> String {
    let failing: Vec<String> = v
        .failing()
        .iter()
        .map(|row| {
            let ids = crate::report::offending_ids(&v.joins, row);
            if ids.is_empty() {
                format!(
                    "{} fails: {}",
                    row.gate,
                    crate::schema::strings::inert(&row.evidence)
                )
            } else {
                format!(
                    "{} fails: {}; {}",
                    row.gate,
                    crate::schema::strings::inert(&row.evidence),
                    crate::schema::strings::inert(&crate::report::ids_text(&ids))
                )
            }
        })
        .collect();
    if failing.is_empty() {
        String::new()
    } else {
        format!(" because {}", failing.join("; "))
    }
}

/// One target group's line: sealed with its verdict, open with what a seal
/// would attest now and why (never worded like a verdict), not opened, or
/// a reused control.
fn group_line(state: &State, l: &LineageState, g: &GroupLine) -> String {
    let reused = g.group == "control" && l.control_reused.is_some();
    let standing = match &g.sealed {
        Some((seq, status)) => format!("sealed {status} at seq {seq}"),
        None if reused => "reused from another lineage (see control below)".to_string(),
        None if g.opened_seq.is_none() => "not opened".to_string(),
        None => {
            let v = verdict::group_verdict(state, l, &g.group);
            format!("{}{}", status_text(&v, Standing::Open), because(&v))
        }
    };
    let feedback = g
        .feedback_seq
        .map_or(String::new(), |seq| format!("; feedback at seq {seq}"));
    format!("  {:<10} {standing}{feedback}", g.group)
}

/// The lineage's progress as `replay` shows it.
fn print_progress(state: &State, l: &LineageState, v: &LineageView) -> std::io::Result<()> {
    outln!("lineage {}", v.lineage)?;
    for g in &v.groups {
        outln!("{}", group_line(state, l, g))?;
    }
    crate::cli::lineage::print_lineage_tail(v)
}

/// `replay [--at SEQ]`.
pub fn run_replay(cli: &Cli, a: &ReplayArgs, wait: Duration) -> anyhow::Result<ExitCode> {
    let ledger = crate::cli::common::open_reading(&cli.ledger, wait)?;
    let head = ledger.head()?;
    let at = a.at.unwrap_or(head.seq);
    if at > head.seq {
        return Err(BadUsage(format!("--at {at} is past the head {}", head.seq)).into());
    }
    let progress = Progress::records("replay", at + 1);
    let state = replay_until_observed(&ledger, State::scanning(), at, &mut |seq| {
        progress.set(seq + 1)
    })?;
    progress.finish();
    let doc = replay_document(&state);
    if a.json {
        print_json(&doc)?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!("replayed seqs 0..={at}")?;
    for l in state.lineages.values() {
        print_progress(&state, l, &verdict::lineage_view(&state, l))?;
        for g in l.frozen.manifest.public.group_names() {
            if l.groups.contains_key(g) {
                print_verdict(&verdict::group_verdict(&state, l, g), Standing::of(l, g))?;
            }
        }
    }
    for e in verdict::control_catalog(&state) {
        outln!(
            "control catalog: {}/{} key {} (seq {}) reused by {:?}",
            e.group.lineage,
            e.group.group,
            e.control_key,
            e.seq,
            e.reused_by
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
