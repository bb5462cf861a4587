//! `gate GROUP`: the verdict table of a group as the log gives it now.

use crate::cli::out::outln;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde_json::json;

use crate::cli::common::*;
use crate::cli::Cli;
use crate::error::{Error, ExitClass};
use crate::log::ledger::Ledger;
use crate::method::projections::replay_scanning;
use crate::method::verdict::{self, Verdict};

/// Arguments of `gate`.
#[derive(Debug, Args)]
pub struct GateArgs {
    /// The group: `LINEAGE/GROUP`, or `GROUP` when the ledger holds one lineage.
    pub group: String,
    /// Print one JSON document on stdout (every row, case, request).
    #[arg(long)]
    pub json: bool,
}

/// Prints a verdict as a table.
pub(crate) fn print_verdict(v: &Verdict) -> std::io::Result<()> {
    outln!(
        "{}/{}: {}  (passed {}/{}, projection v{})",
        v.group.lineage,
        v.group.group,
        v.status,
        v.passed,
        v.total,
        v.projection_version
    )?;
    for r in &v.rows {
        outln!(
            "  {:<13} {:<6} {}",
            r.gate,
            if r.holds { "holds" } else { "FAILS" },
            r.evidence
        )?;
    }
    // The two planes of PLANE-1 (BIND-5), apart.
    for line in v.planes.lines() {
        outln!("  plane {line}")?;
    }
    for s in &v.skipped_security_policy {
        outln!(
            "  skipped_security_policy {}/{} ({:?}; evidence {}, {})",
            s.case.task,
            s.case.trial,
            s.class,
            s.evidence_blake3[0],
            s.evidence_blake3[1]
        )?;
    }
    Ok(())
}

/// `gate GROUP`: the verdict table as the log gives it now. Exit 0 when the
/// verdict is `accepted`, 1 otherwise.
pub fn run_gate(cli: &Cli, a: &GateArgs, wait: Duration) -> anyhow::Result<ExitCode> {
    let ledger = Ledger::open(&cli.ledger, wait)?;
    let state = replay_scanning(&ledger)?;
    let (lineage, group) = parse_group(&a.group);
    let l = state.lineage(lineage.as_deref())?;
    if !l
        .frozen
        .manifest
        .public
        .group_names()
        .contains(&group.as_str())
    {
        return Err(Error::input(format!(
            "group {group:?} is not in the frozen target list {:?}",
            l.frozen.manifest.public.group_names()
        ))
        .into());
    }
    let v = verdict::group_verdict(&state, l, &group);
    let sealed = l
        .groups
        .get(&group)
        .and_then(|g| g.sealed.as_ref())
        .map(|(at, s)| json!({ "seq": at.seq, "status": s.status }));
    if a.json {
        let mut doc = serde_json::to_value(&v)?;
        doc["sealed"] = sealed.unwrap_or(serde_json::Value::Null);
        print_json(&doc)?;
    } else {
        print_verdict(&v)?;
        if let Some(s) = sealed {
            outln!(
                "  sealed: {} at seq {}",
                s["status"].as_str().unwrap_or(""),
                s["seq"]
            )?;
        }
    }
    Ok(if v.status == verdict::VerdictStatus::Accepted {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(ExitClass::CheckFailed.code())
    })
}
