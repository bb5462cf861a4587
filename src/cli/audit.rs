//! `audit`: re-derive every sealed verdict and compare (exit 1 on a
//! difference, naming group and row).

use crate::cli::out::outln;
use std::process::ExitCode;
use std::time::Duration;

use serde_json::json;

use crate::cli::common::*;
use crate::cli::Cli;
use crate::error::ExitClass;
use crate::method::audit::audit;

/// `audit`: exit 0 when every sealed verdict re-derives exactly, 1 otherwise.
pub fn run_audit(cli: &Cli, as_json: bool, wait: Duration) -> anyhow::Result<ExitCode> {
    let ledger = crate::cli::common::open_reading(&cli.ledger, wait)?;
    let report = ledger.verify()?;
    if !report.ok() {
        let d = report
            .damage
            .as_ref()
            .map(|d| format!("seq {}: {}", d.seq, d.kind));
        eprintln!(
            "error: the ledger does not verify ({}); run `verify`",
            d.unwrap_or_default()
        );
        return Ok(ExitCode::from(ExitClass::CheckFailed.code()));
    }
    let lines = audit(&ledger)?;
    let bad = lines.iter().filter(|l| !l.differences.is_empty()).count();
    if as_json {
        print_json(
            &json!({ "ok": bad == 0, "sealed": lines.len(), "differing": bad, "verdicts": lines }),
        )?;
    } else {
        for l in &lines {
            if l.differences.is_empty() {
                outln!(
                    "{}/{} seq {}: {} re-derived exactly",
                    l.group.lineage,
                    l.group.group,
                    l.seq,
                    l.attested
                )?;
            } else {
                outln!(
                    "{}/{} seq {}: DIFFERS",
                    l.group.lineage,
                    l.group.group,
                    l.seq
                )?;
                for d in &l.differences {
                    outln!("  {d}")?;
                }
            }
        }
        outln!("{} sealed verdicts, {} differ", lines.len(), bad)?;
    }
    Ok(if bad == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(ExitClass::CheckFailed.code())
    })
}
