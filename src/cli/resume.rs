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
use crate::evidence::harbor;
use crate::method::projections::{LineageState, State};
use crate::schema::rule::Rule;
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
    let level = harbor::level_of(dir)?;
    let m = &l.frozen.manifest.public;
    let expected = format!(
        "`resume --harbor-jobs` takes lineage {:?}'s Harbor jobs directory (harbor.jobs_dir {}, whose job directories {} hold the trial directories)",
        l.frozen.lineage,
        m.harbor.jobs_dir,
        m.groups.iter().map(|g| g.job_name.as_str()).collect::<Vec<_>>().join(", ")
    );
    let refuse = |what: String| -> anyhow::Error {
        Error::Refused {
            rule: Rule::Bind9,
            message: format!("{} is {what}; {expected}", dir.display()),
        }
        .into()
    };
    match level {
        harbor::Level::Empty => return Ok(BTreeSet::new()),
        harbor::Level::JobsRoot => {}
        harbor::Level::Unknown => {
            let below = harbor::jobs_root_below(dir)?
                .map(|p| format!(" (the jobs directory {p} is one level down)"))
                .unwrap_or_default();
            return Err(refuse(format!(
                "{}{below}",
                crate::schema::strings::with_article(level.as_str())
            )));
        }
        other => return Err(refuse(crate::schema::strings::with_article(other.as_str()))),
    }
    let mut out = BTreeSet::new();
    let mut ours = false;
    for job in harbor::walk_jobs(dir)?.jobs {
        ours |= m.groups.iter().any(|g| g.job_name == job.name);
        out.extend(job.trials.into_iter().map(|t| t.name));
    }
    if !ours && given {
        return Err(refuse(
            "a jobs directory holding none of the lineage's job directories".into(),
        ));
    }
    Ok(out)
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
            if std::fs::canonicalize(d).ok().as_ref() != Some(&here) {
                return Err(Error::Refused {
                    rule: Rule::Bind9,
                    message: format!(
                        "{} is not lineage {:?}'s frozen Harbor jobs directory {}, which exists here; `resume --harbor-jobs` takes that directory (or leave the flag out: it is read anyway)",
                        d.display(),
                        l.frozen.lineage,
                        frozen.display()
                    ),
                }
                .into());
            }
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
