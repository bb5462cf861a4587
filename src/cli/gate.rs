//! `gate GROUP`: the verdict table of a group as the log gives it now.

use crate::cli::out::outln;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde_json::json;

use crate::cli::common::*;
use crate::cli::Cli;
use crate::error::ExitClass;
use crate::method::projections::{replay_scanning, LineageState};
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

/// Where a group stands: what the header of its verdict table says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Standing {
    /// Sealed: the verdict is final (VERDICT-4).
    Sealed,
    /// Opened and not sealed: the verdict is what a seal would attest now.
    Open,
    /// Never opened in this lineage (or a reused control).
    NotOpened,
}

impl Standing {
    /// The standing of `group` in lineage `l`.
    pub(crate) fn of(l: &LineageState, group: &str) -> Standing {
        match l.groups.get(group) {
            Some(g) if g.sealed.is_some() => Standing::Sealed,
            Some(_) => Standing::Open,
            None => Standing::NotOpened,
        }
    }
}

/// A verdict's status as its standing reads: a sealed group's status, or
/// what a seal would attest now, never worded like a verdict.
pub(crate) fn status_text(v: &Verdict, standing: Standing) -> String {
    match standing {
        Standing::Sealed => v.status.to_string(),
        Standing::Open => format!("open: if sealed now, {}", v.status),
        Standing::NotOpened => format!("not opened (the log gives {} now)", v.status),
    }
}

/// Prints a verdict as a table; a failing join row is followed by the
/// request ids behind its counts (at most `report::JOIN_IDS_SHOWN` of
/// each difference, then how many more).
pub(crate) fn print_verdict(v: &Verdict, standing: Standing) -> std::io::Result<()> {
    // Evidence text (request ids, names, messages) is shown inert (BIND-10).
    use crate::schema::strings::inert;
    outln!(
        "{}/{}: {}  (passed {}/{}, projection v{})",
        v.group.lineage,
        v.group.group,
        status_text(v, standing),
        v.passed,
        v.total,
        v.projection_version
    )?;
    for r in &v.rows {
        outln!(
            "  {:<13} {:<6} {}",
            r.gate,
            if r.holds { "holds" } else { "FAILS" },
            inert(&r.evidence)
        )?;
        let ids = crate::report::offending_ids(&v.joins, r);
        if !ids.is_empty() {
            let ids = crate::report::ids_text(&ids);
            outln!("  {:<13} {:<6} {}", "", "", inert(&ids))?;
        }
    }
    // The two planes of PLANE-1 (BIND-5), apart.
    for line in v.planes.lines() {
        outln!("  plane {}", inert(&line))?;
    }
    for s in &v.skipped_security_policy {
        outln!(
            "  skipped_security_policy {}/{} ({}; evidence {}, {})",
            inert(&s.case.task),
            inert(&s.case.trial),
            s.class.as_str(),
            s.evidence_blake3[0],
            s.evidence_blake3[1]
        )?;
    }
    // What was offered and refused by a rule, never its content (BIND-12).
    for f in &v.refused_files {
        outln!("  refused evidence file {}", inert(&f.line()))?;
    }
    Ok(())
}

/// `gate GROUP`: the verdict table as the log gives it now. Exit 0 when the
/// verdict is `accepted`, 1 otherwise.
pub fn run_gate(cli: &Cli, a: &GateArgs, wait: Duration) -> anyhow::Result<ExitCode> {
    let ledger = crate::cli::common::open_reading(&cli.ledger, wait)?;
    let state = replay_scanning(&ledger)?;
    let (lineage, group) = parse_group(&a.group);
    let l = state.lineage(lineage.as_deref())?;
    // The same refusal as every verb that names a group (LINEAGE-1).
    crate::method::decide::target_group(l, &group)?;
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
        print_verdict(&v, Standing::of(l, &group))?;
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
