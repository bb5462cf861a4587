//! `resume`: the identities of a group that may launch (CASE-4).

use crate::cli::out::outln;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde_json::json;

use crate::cli::common::*;
use crate::cli::Cli;
use crate::error::Error;
use crate::log::ledger::Ledger;
use crate::method::projections::State;

/// Arguments of `resume`.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The group: `LINEAGE/GROUP`, or `GROUP` when the ledger holds one lineage.
    pub group: String,
    /// A Harbor jobs directory: identities with a trial directory there are
    /// never launchable, whatever the ledger says.
    #[arg(long, value_name = "DIR")]
    pub harbor_jobs: Option<PathBuf>,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Harbor trial directory names under a jobs dir (or a job dir).
fn harbor_trial_dirs(dir: &Path) -> anyhow::Result<std::collections::BTreeSet<String>> {
    let mut out = std::collections::BTreeSet::new();
    let read = |d: &Path| {
        std::fs::read_dir(d).map_err(|e| Error::input(format!("cannot read {}: {e}", d.display())))
    };
    for entry in read(dir)? {
        let entry = entry?;
        if !entry.file_type()?.is_dir() {
            continue;
        }
        out.insert(entry.file_name().to_string_lossy().into_owned());
        // A jobs dir holds job dirs, which hold trial dirs.
        for inner in read(&entry.path())? {
            let inner = inner?;
            if inner.file_type()?.is_dir() {
                out.insert(inner.file_name().to_string_lossy().into_owned());
            }
        }
    }
    Ok(out)
}

/// `resume`: which identities may launch (CASE-4).
pub fn run_resume(cli: &Cli, a: &ResumeArgs, wait: Duration) -> anyhow::Result<ExitCode> {
    let (lineage, group) = parse_group(&a.group);
    let on_disk = match &a.harbor_jobs {
        Some(d) => harbor_trial_dirs(d)?,
        None => Default::default(),
    };
    let ledger = Ledger::open(&cli.ledger, wait)?;
    let state: State = decide_state(&ledger)?;
    drop(ledger);
    let rows = crate::method::decide::resume(&state, lineage.as_deref(), &group, &on_disk)?;
    let mut launchable = Vec::new();
    let mut blocked = Vec::new();
    for row in rows {
        match row.blocked {
            None => launchable.push(row.case.label()),
            Some(r) => blocked.push(json!({ "case": row.case.label(), "reason": r })),
        }
    }
    if a.json {
        print_json(
            &json!({ "group": group, "launchable": launchable, "not_launchable": blocked }),
        )?;
    } else {
        outln!("{} launchable in {group}:", launchable.len())?;
        for c in &launchable {
            outln!("  {c}")?;
        }
        outln!("{} not launchable:", blocked.len())?;
        for b in &blocked {
            outln!(
                "  {}: {}",
                b["case"].as_str().unwrap_or(""),
                b["reason"].as_str().unwrap_or("")
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
