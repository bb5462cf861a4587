//! What a directory or file offered as evidence must be before anything of
//! it is read into the ledger: the Harbor trees `ingest harbor` and
//! `resume` take (BIND-9) and a result's own names (CASE-8). The CLI walks
//! the tree and passes what it found; these decide.

use crate::error::Result;
use crate::method::decide::refuse;
use crate::method::projections::LineageState;
use crate::schema::events::CaseRef;
use crate::schema::rule::Rule;
use crate::schema::strings::with_article;

/// What `resume --harbor-jobs` was given, as the CLI found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OfferedJobsDir<'a> {
    /// An empty directory: nothing ran yet.
    Empty,
    /// A jobs directory holding these job directories.
    JobsRoot {
        /// The names of the job directories in it.
        jobs: &'a [String],
    },
    /// Anything else: `what` the walk says it is (a trial directory, a job
    /// directory, ...) and, when a jobs directory is one level down, where.
    Other {
        /// What the directory is, in words (`harbor::Level::as_str`).
        what: &'a str,
        /// The jobs directory one level down, if there is one.
        below: Option<&'a str>,
    },
}

/// BIND-9: `resume --harbor-jobs` takes the lineage's Harbor jobs
/// directory, whose job directories hold the trial directories. `shown` is
/// the path as given; `given` is false when the frozen directory is read
/// without the flag, where a jobs directory holding none of the lineage's
/// jobs yet is simply early. Returns whether its trials count.
pub fn resume_jobs_dir(
    l: &LineageState,
    shown: &str,
    offered: &OfferedJobsDir<'_>,
    given: bool,
) -> Result<bool> {
    let m = &l.frozen.manifest.public;
    let refuse_as = |what: String| {
        let expected = format!(
            "`resume --harbor-jobs` takes lineage {:?}'s Harbor jobs directory (harbor.jobs_dir {}, whose job directories {} hold the trial directories)",
            l.frozen.lineage,
            m.harbor.jobs_dir,
            m.groups.iter().map(|g| g.job_name.as_str()).collect::<Vec<_>>().join(", ")
        );
        Err(refuse(
            Rule::Bind9,
            format!("{shown} is {what}; {expected}"),
        ))
    };
    match offered {
        OfferedJobsDir::Empty => Ok(false),
        OfferedJobsDir::Other { what, below } => {
            let below = below
                .map(|p| format!(" (the jobs directory {p} is one level down)"))
                .unwrap_or_default();
            refuse_as(format!("{}{below}", with_article(what)))
        }
        OfferedJobsDir::JobsRoot { jobs } => {
            let ours = jobs
                .iter()
                .any(|j| m.groups.iter().any(|g| &g.job_name == j));
            if !ours && given {
                return refuse_as(
                    "a jobs directory holding none of the lineage's job directories".into(),
                );
            }
            Ok(true)
        }
    }
}

/// BIND-9: where the frozen `harbor.jobs_dir` exists on this machine,
/// `--harbor-jobs` must be it; `same` says whether `given` resolves to it.
pub fn resume_given_is_frozen(
    l: &LineageState,
    given: &str,
    frozen: &str,
    same: bool,
) -> Result<()> {
    if same {
        return Ok(());
    }
    Err(refuse(
        Rule::Bind9,
        format!(
            "{given} is not lineage {:?}'s frozen Harbor jobs directory {frozen}, which exists here; `resume --harbor-jobs` takes that directory (or leave the flag out: it is read anyway)",
            l.frozen.lineage
        ),
    ))
}

/// What `ingest harbor` found under the path it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OfferedTree<'a> {
    /// The path as given.
    pub shown: &'a str,
    /// What it is, in words (`harbor::Level::as_str`).
    pub what: &'a str,
    /// Trial directories holding a `result.json`.
    pub results: usize,
    /// Trial directories without one (still running, or cut short).
    pub incomplete: usize,
    /// The jobs directory one level down, when the path is above it.
    pub below: Option<&'a str>,
}

/// BIND-9: `ingest harbor` takes a tree holding at least one trial result,
/// and refuses any other naming what it is and which levels it takes.
pub fn harbor_tree_results(t: &OfferedTree<'_>) -> Result<()> {
    if t.results > 0 {
        return Ok(());
    }
    let below = t
        .below
        .map(|p| format!("; the jobs directory {p} is one level down"))
        .unwrap_or_default();
    Err(refuse(
        Rule::Bind9,
        format!(
            "{} is {} holding no trial result ({} trial directories without result.json){below}; `ingest harbor` takes a trial directory holding result.json, or a job directory or jobs directory whose trial directories hold one",
            t.shown,
            with_article(t.what),
            t.incomplete
        ),
    ))
}

/// CASE-8: a `result.json` binds only to its own case: the trial and task
/// it names must be its directory's (`dir_trial`) and the case's task (the
/// last path segment of Harbor's task name). Nothing the file says is
/// echoed in the refusal.
pub fn result_names_its_case(
    path: &str,
    dir_trial: &str,
    named_trial: &str,
    named_task: &str,
    case: &CaseRef,
) -> Result<()> {
    let task_tail = named_task.rsplit('/').next().unwrap_or_default();
    if named_trial == dir_trial && task_tail == case.task {
        return Ok(());
    }
    Err(refuse(
        Rule::Case8,
        format!(
            "{path}: result.json names another trial or task than its directory, trial {dir_trial:?} of task {:?}; a result binds only to its own case",
            case.task
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    fn case(task: &str) -> CaseRef {
        CaseRef {
            task: task.into(),
            trial: "t1".into(),
            replacement: 0,
        }
    }

    fn rule_of(r: Result<()>) -> Option<Rule> {
        match r {
            Err(Error::Refused { rule, .. }) => Some(rule),
            _ => None,
        }
    }

    #[test]
    fn a_result_naming_another_trial_or_task_is_refused() {
        let c = case("fix-git");
        let ok = result_names_its_case(
            "t/result.json",
            "fix-git__g-1",
            "fix-git__g-1",
            "org/fix-git",
            &c,
        );
        assert!(ok.is_ok(), "CASE-8: its own trial and task bind");
        let other_trial = result_names_its_case("t", "fix-git__g-1", "fix-git__g-2", "fix-git", &c);
        assert_eq!(
            rule_of(other_trial),
            Some(Rule::Case8),
            "CASE-8: another trial"
        );
        let other_task =
            result_names_its_case("t", "fix-git__g-1", "fix-git__g-1", "org/hello", &c);
        assert_eq!(
            rule_of(other_task),
            Some(Rule::Case8),
            "CASE-8: another task"
        );
    }

    #[test]
    fn a_tree_without_results_is_refused_naming_what_it_is() {
        let mut t = OfferedTree {
            shown: "jobs/x",
            what: "job directory",
            results: 1,
            incomplete: 2,
            below: None,
        };
        assert!(
            harbor_tree_results(&t).is_ok(),
            "BIND-9: one result is enough"
        );
        t.results = 0;
        let e = harbor_tree_results(&t).unwrap_err();
        assert!(
            matches!(
                e,
                Error::Refused {
                    rule: Rule::Bind9,
                    ..
                }
            ),
            "BIND-9: {e}"
        );
        assert!(
            e.to_string()
                .contains("jobs/x is a job directory holding no trial result (2 trial"),
            "{e}"
        );
    }
}
