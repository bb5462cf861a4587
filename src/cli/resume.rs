//! `resume`: the identities of a group that may launch (CASE-4).

use crate::cli::out::outln;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde_json::json;

use crate::cli::common::*;
use crate::cli::Cli;
use crate::evidence::harbor;
use crate::method::projections::{LineageState, State};
use std::collections::BTreeSet;

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

/// Harbor trial directory names under the lineage's Harbor jobs directory
/// (BIND-9): `dir` must be that directory (its job directories hold the
/// trial directories), empty before anything ran. A trial directory, a job
/// directory, a directory one level above, or a jobs directory holding none
/// of the lineage's jobs is refused, naming what it is and what is expected.
/// With `given` false (the frozen directory, read though not named), a jobs
/// directory holding none of the lineage's jobs yet is simply empty.
fn harbor_trial_dirs(
    dir: &Path,
    l: &LineageState,
    given: bool,
) -> anyhow::Result<BTreeSet<String>> {
    use crate::method::decide::OfferedJobsDir;
    let shown = dir.display().to_string();
    let level = harbor::level_of(dir)?;
    let below = match level {
        harbor::Level::Unknown => harbor::jobs_root_below(dir)?,
        _ => None,
    };
    let jobs = match level {
        harbor::Level::JobsRoot => harbor::walk_jobs(dir)?.jobs,
        _ => Vec::new(),
    };
    let names: Vec<String> = jobs.iter().map(|j| j.name.clone()).collect();
    let offered = match level {
        harbor::Level::Empty => OfferedJobsDir::Empty,
        harbor::Level::JobsRoot => OfferedJobsDir::JobsRoot { jobs: &names },
        other => OfferedJobsDir::Other {
            what: other.as_str(),
            below: below.as_deref(),
        },
    };
    if !crate::method::decide::resume_jobs_dir(l, &shown, &offered, given)? {
        return Ok(BTreeSet::new());
    }
    Ok(jobs
        .into_iter()
        .flat_map(|j| j.trials.into_iter().map(|t| t.name))
        .collect())
}

/// The trial directories `resume` must respect (BIND-9): where the frozen
/// `harbor.jobs_dir` exists on this machine, `--harbor-jobs` must be it
/// (another path, even an empty one, is refused naming both) and its trial
/// directories always count, the flag given or not; where it does not,
/// the directory given (a copy of the run's jobs directory) is read.
fn trial_dirs_on_disk(given: Option<&Path>, l: &LineageState) -> anyhow::Result<BTreeSet<String>> {
    let frozen = Path::new(&l.frozen.manifest.public.harbor.jobs_dir);
    let frozen_here = std::fs::canonicalize(frozen).ok();
    match (given, frozen_here) {
        (Some(d), Some(here)) => {
            let same = std::fs::canonicalize(d).ok().as_ref() == Some(&here);
            crate::method::decide::resume_given_is_frozen(
                l,
                &d.display().to_string(),
                &frozen.display().to_string(),
                same,
            )?;
            harbor_trial_dirs(d, l, true)
        }
        (Some(d), None) => harbor_trial_dirs(d, l, true),
        (None, Some(here)) => harbor_trial_dirs(&here, l, false),
        (None, None) => Ok(BTreeSet::new()),
    }
}

/// `resume`: which identities may launch (CASE-4).
pub fn run_resume(cli: &Cli, a: &ResumeArgs, wait: Duration) -> anyhow::Result<ExitCode> {
    let (lineage, group) = parse_group(&a.group);
    let ledger = crate::cli::common::open_reading(&cli.ledger, wait)?;
    let state: State = decide_state(&ledger)?;
    drop(ledger);
    let on_disk = trial_dirs_on_disk(a.harbor_jobs.as_deref(), state.lineage(lineage.as_deref())?)?;
    let rows = crate::method::decide::resume(&state, lineage.as_deref(), &group, &on_disk)?;
    let mut launchable = Vec::new();
    let mut blocked = Vec::new();
    for row in rows {
        match row.blocked {
            None => launchable.push(row.case.label()),
            Some(r) => blocked.push(json!({ "case": row.case.label(), "reason": r })),
        }
    }
    // BIND-9: say which level the Harbor path was (only a jobs directory,
    // or an empty one, gets here).
    let level = a
        .harbor_jobs
        .as_ref()
        .map(|d| harbor::level_of(d))
        .transpose()?;
    if a.json {
        print_json(&json!({
            "group": group, "harbor_jobs_level": level,
            "launchable": launchable, "not_launchable": blocked,
        }))?;
    } else {
        if let (Some(d), Some(level)) = (&a.harbor_jobs, level) {
            outln!(
                "given {}: {}",
                crate::schema::strings::with_article(level.as_str()),
                d.display()
            )?;
        }
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
