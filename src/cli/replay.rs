//! `replay [--at SEQ]`: every projection as of any seq.

use crate::cli::out::outln;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;

use crate::cli::common::*;
use crate::cli::gate::print_verdict;
use crate::cli::lineage::print_lineage;
use crate::cli::Cli;
use crate::log::ledger::Ledger;
use crate::method::audit::replay_document;
use crate::method::projections::replay_until;
use crate::method::projections::State;
use crate::method::verdict;

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

/// `replay [--at SEQ]`.
pub fn run_replay(cli: &Cli, a: &ReplayArgs, wait: Duration) -> anyhow::Result<ExitCode> {
    let ledger = Ledger::open(&cli.ledger, wait)?;
    let head = ledger.head()?;
    let at = a.at.unwrap_or(head.seq);
    if at > head.seq {
        return Err(BadUsage(format!("--at {at} is past the head {}", head.seq)).into());
    }
    let state = replay_until(&ledger, State::scanning(), at)?;
    let doc = replay_document(&state);
    if a.json {
        print_json(&doc)?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!("replayed seqs 0..={at}")?;
    for l in state.lineages.values() {
        print_lineage(&verdict::lineage_view(&state, l))?;
        for g in l.frozen.manifest.public.group_names() {
            if l.groups.contains_key(g) {
                print_verdict(&verdict::group_verdict(&state, l, g))?;
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
