//! Evidence binding (BIND-1, BIND-2): whether a case's Harbor TrialResult is
//! evidence for the launch the ledger recorded, and what its reward is.
//!
//! A result binds to its case only when its task checksum is the frozen
//! task's, the content of its embedded TrialConfig is the content of the
//! config `case start` launched (`schema::trial_content`), its timestamps lie
//! in the launch window (from `started` minus the frozen clock skew to the
//! launch process's exit, or the result's own record, plus the skew), and no
//! job that holds its trial shows a Harbor retry (CASE-5). Its reward is the
//! number under the frozen reward key, finite and in the frozen range, agreed
//! by every reward file (BIND-2). Anything else keeps the result as evidence
//! and makes the case `terminal_invalid`, the mismatch named ([`judge`]).
//! Pure functions of a [`LineageState`].

use serde::Serialize;

use crate::method::projections::{At, CaseState, CaseStatus, GroupState, LineageState};
use crate::schema::events::{CaseRef, HarborJobRecorded, TrialResultRecordedV2};
use crate::schema::manifest::{is_non_evaluation, ManifestFile};
use crate::schema::money::Dec;
use crate::schema::time::{parse_rfc3339_ns, rfc3339_utc_ns};

/// The binding rules of a lineage: its plan's, or for a lineage frozen as
/// v1 (no plan) the defaults of method.md (reward key `reward`, range 0 to
/// 1, a clock skew of 300 s).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindingRules {
    /// The reward key of the verifier output (BIND-2).
    pub reward_key: String,
    /// The smallest valid reward.
    pub reward_min: Dec,
    /// The largest valid reward.
    pub reward_max: Dec,
    /// How far a result's timestamps may lie outside the launch window, s.
    pub clock_skew_sec: u64,
}

/// The clock skew of a lineage frozen without a plan (v1), in seconds.
pub const V1_CLOCK_SKEW_SEC: u64 = 300;

impl BindingRules {
    /// The rules of lineage `l`.
    pub fn of(l: &LineageState) -> BindingRules {
        match &l.plan {
            Some(plan) => {
                let b = &plan.binding;
                BindingRules {
                    reward_key: b.reward_key.clone(),
                    // Checked canonical decimals at freeze (method::freeze::plan).
                    reward_min: Dec::parse(&b.reward_min).unwrap_or_default(),
                    reward_max: Dec::parse(&b.reward_max).unwrap_or_else(|_| Dec::from(1u64)),
                    clock_skew_sec: b.clock_skew_sec,
                }
            }
            None => BindingRules {
                reward_key: "reward".to_string(),
                reward_min: Dec::from(0u64),
                reward_max: Dec::from(1u64),
                clock_skew_sec: V1_CLOCK_SKEW_SEC,
            },
        }
    }
}

crate::schema::named::named_enum! {
    /// What a TrialResult says about its launch that the ledger did not
    /// record (BIND-1), and which gate row the mismatch fails.
    pub enum MismatchKind {
        /// Another task version: the `manifest` row.
        TaskChecksum = "task_checksum",
        /// Another TrialConfig content: the `manifest` row.
        Config = "config",
        /// Timestamps outside the launch window: the `trial result` row.
        Window = "window",
        /// A Harbor retry in the job's files: the `manifest` row (CASE-5).
        Retries = "retries",
        /// More than one attempt of the case in its job (BIND-11): the
        /// `manifest` row.
        Attempts = "attempts",
    }
}

/// One BIND-1 mismatch of a case's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mismatch {
    /// What differs.
    pub kind: MismatchKind,
    /// How, in words (hashes cut to 16 digits, field names, times).
    pub detail: String,
}

/// The frozen content hash of `task` in `group` (a canary identity's for a
/// non-evaluation group, the scored task's otherwise).
pub fn frozen_task_checksum<'m>(m: &'m ManifestFile, group: &str, task: &str) -> Option<&'m str> {
    if is_non_evaluation(group) {
        m.cases
            .canaries
            .iter()
            .find(|k| k.group == group && k.task == task)
            .map(|k| k.content_sha256.as_str())
    } else {
        m.cases
            .tasks
            .iter()
            .find(|t| t.name == task)
            .map(|t| t.content_sha256.as_str())
    }
}

fn short(hex: &str) -> &str {
    hex.get(..16).unwrap_or(hex)
}

/// The content digest of the config `case start` launched, when it is the
/// frozen rendering of the case (the `manifest` row fails any other).
fn launched_content(
    l: &LineageState,
    group: &str,
    case: &CaseRef,
    launched_blake3: &str,
) -> Option<String> {
    crate::method::trial_config::render_frozen(l, group, case)
        .ok()
        .filter(|r| r.blake3 == launched_blake3)
        .map(|r| crate::schema::trial_content::content_blake3(&r.config))
}

fn config_mismatch(
    l: &LineageState,
    group: &str,
    case: &CaseRef,
    launched_blake3: &str,
    r: &TrialResultRecordedV2,
) -> Option<Mismatch> {
    // BIND-11: the trial's own config.json is compared like the embedded one.
    let own: Vec<String> = r
        .config_differences
        .iter()
        .filter_map(|d| d.strip_prefix(crate::schema::trial_content::OWN_CONFIG_FILE_PREFIX))
        .map(str::to_string)
        .collect();
    if !own.is_empty() {
        return Some(Mismatch {
            kind: MismatchKind::Config,
            detail: format!(
                "the trial's own config.json is not the launched config: differs at {} ({})",
                crate::method::verdict::name_some(&own),
                crate::schema::rule::Rule::Bind11
            ),
        });
    }
    let detail = if r.config_content_blake3.is_empty() {
        "the result was recorded without its TrialConfig's content (trial_result_recorded.v1)"
            .to_string()
    } else {
        match launched_content(l, group, case, launched_blake3) {
            None => format!(
                "the launched config {} is not the frozen rendering, so its content is unknown",
                short(launched_blake3)
            ),
            Some(c) if c == r.config_content_blake3 => return None,
            Some(c) => {
                let at = if r.config_differences.is_empty() {
                    String::new()
                } else {
                    format!(
                        ": differs at {}",
                        crate::method::verdict::name_some(&r.config_differences)
                    )
                };
                format!(
                    "the embedded TrialConfig's content {} is not the launched {}{at}",
                    short(&r.config_content_blake3),
                    short(&c)
                )
            }
        }
    };
    Some(Mismatch {
        kind: MismatchKind::Config,
        detail,
    })
}

/// The launch window's end: the launch process's exit when it was recorded,
/// else the result's own record.
fn window_end(c: &CaseState, result_at: At) -> (u64, String) {
    match c.exited {
        Some(at) => (
            at.utc_ns,
            format!("its launch process exited (seq {})", at.seq),
        ),
        None => (
            result_at.utc_ns,
            format!("it was recorded (seq {})", result_at.seq),
        ),
    }
}

fn window_mismatch(
    rules: &BindingRules,
    c: &CaseState,
    started: At,
    result_at: At,
    r: &TrialResultRecordedV2,
) -> Option<Mismatch> {
    let mismatch = |detail: String| {
        Some(Mismatch {
            kind: MismatchKind::Window,
            detail,
        })
    };
    let parse = |t: &Option<String>| t.as_deref().and_then(parse_rfc3339_ns);
    let (Some(from), Some(to)) = (parse(&r.started_at), parse(&r.finished_at)) else {
        return mismatch(
            "the result has no started_at and finished_at to place in the launch window".into(),
        );
    };
    let skew = i128::from(rules.clock_skew_sec) * 1_000_000_000;
    let lower = i128::from(started.utc_ns) - skew;
    let (end_ns, end_what) = window_end(c, result_at);
    let upper = i128::from(end_ns) + skew;
    let s = rules.clock_skew_sec;
    if from < lower {
        return mismatch(format!(
            "started_at {} lies before the case started (seq {}, {}) minus the frozen clock skew of {s} s",
            r.started_at.as_deref().unwrap_or(""),
            started.seq,
            rfc3339_utc_ns(started.utc_ns)
        ));
    }
    if to > upper {
        return mismatch(format!(
            "finished_at {} lies after {end_what} plus the frozen clock skew of {s} s",
            r.finished_at.as_deref().unwrap_or("")
        ));
    }
    (to < from).then(|| Mismatch {
        kind: MismatchKind::Window,
        detail: "finished_at lies before started_at".into(),
    })
}

/// BIND-11: every timestamp the result carries (each phase, the exception
/// time) lies in the launch window, as its top-level times must. Nothing
/// to check when the result's facts were not recorded.
fn times_mismatches(
    rules: &BindingRules,
    c: &CaseState,
    started: At,
    result_at: At,
) -> Vec<Mismatch> {
    let Some((_, f)) = &c.facts else {
        return Vec::new();
    };
    let skew = i128::from(rules.clock_skew_sec) * 1_000_000_000;
    let lower = i128::from(started.utc_ns) - skew;
    let (end_ns, end_what) = window_end(c, result_at);
    let upper = i128::from(end_ns) + skew;
    let s = rules.clock_skew_sec;
    let mut out = Vec::new();
    for (path, text) in &f.times {
        let detail = match parse_rfc3339_ns(text) {
            None => format!("{path} {text:?} is not an RFC 3339 time"),
            Some(t) if t < lower => format!(
                "{path} {text} lies before the case started (seq {}, {}) minus the frozen clock skew of {s} s",
                started.seq,
                rfc3339_utc_ns(started.utc_ns)
            ),
            Some(t) if t > upper => {
                format!("{path} {text} lies after {end_what} plus the frozen clock skew of {s} s")
            }
            Some(_) => continue,
        };
        out.push(Mismatch {
            kind: MismatchKind::Window,
            detail: format!("{detail} ({})", crate::schema::rule::Rule::Bind11),
        });
    }
    out
}

/// BIND-11: the job ran one attempt of the case (its config's `n_attempts`
/// and its trial directories for the case). Nothing to check when the
/// result's facts were not recorded (ledgers from before
/// `trial_facts_recorded.v1`).
fn attempts_mismatch(c: &CaseState) -> Option<Mismatch> {
    let (_, f) = c.facts.as_ref()?;
    let attempts = f
        .n_attempts
        .filter(|n| *n != 1)
        .map(|n| format!("the job's n_attempts is {n}"));
    let trials = (f.trials_for_case > 1).then(|| {
        format!(
            "{} trial directories of the job map to this case",
            f.trials_for_case
        )
    });
    let counts: Vec<String> = attempts.into_iter().chain(trials).collect();
    (!counts.is_empty()).then(|| Mismatch {
        kind: MismatchKind::Attempts,
        detail: format!(
            "one attempt per case ({}): {}",
            crate::schema::rule::Rule::Bind11,
            counts.join("; ")
        ),
    })
}

/// The Harbor retries a job's files show: (where, count) for each non-zero.
pub fn job_retries(j: &HarborJobRecorded) -> Vec<String> {
    [
        ("config.json retry.max_retries", j.config_max_retries),
        ("lock.json retry.max_retries", j.lock_max_retries),
        ("result.json stats.n_retries", j.n_retries),
    ]
    .into_iter()
    .filter_map(|(what, n)| n.filter(|n| *n > 0).map(|n| format!("{what} {n}")))
    .collect()
}

fn retries_mismatch(g: &GroupState, trial_name: &str) -> Option<Mismatch> {
    let shown: Vec<String> = g
        .jobs
        .iter()
        .filter(|(_, j)| j.trial_names.iter().any(|t| t == trial_name))
        .flat_map(|(at, j)| {
            job_retries(j)
                .into_iter()
                .map(move |r| format!("job {} (seq {}): {r}", j.job_name, at.seq))
        })
        .collect();
    (!shown.is_empty()).then(|| Mismatch {
        kind: MismatchKind::Retries,
        detail: format!("Harbor retries must stay 0 (CASE-5): {}", shown.join("; ")),
    })
}

/// Every BIND-1 mismatch of the result of `case` in `group`: task checksum,
/// TrialConfig content, launch window, Harbor retries. Empty when the case
/// has no result or no start.
pub fn result_mismatches(l: &LineageState, group: &str, case: &CaseRef) -> Vec<Mismatch> {
    let Some(g) = l.groups.get(group) else {
        return Vec::new();
    };
    let Some(c) = g.cases.get(case) else {
        return Vec::new();
    };
    let (Some((started_at, started)), Some((result_at, r))) = (&c.started, &c.result) else {
        return Vec::new();
    };
    let m = &l.frozen.manifest.public;
    let rules = BindingRules::of(l);
    let mut out = Vec::new();
    let frozen = frozen_task_checksum(m, group, &case.task);
    if frozen != Some(r.task_checksum.as_str()) {
        out.push(Mismatch {
            kind: MismatchKind::TaskChecksum,
            detail: format!(
                "task checksum {} is not the frozen {} of task {}",
                short(&r.task_checksum),
                frozen.map_or("(none)", short),
                case.task
            ),
        });
    }
    out.extend(config_mismatch(
        l,
        group,
        case,
        &started.trial_config_blake3,
        r,
    ));
    out.extend(window_mismatch(&rules, c, *started_at, *result_at, r));
    out.extend(times_mismatches(&rules, c, *started_at, *result_at));
    out.extend(attempts_mismatch(c));
    out.extend(retries_mismatch(g, &r.trial_name));
    out
}

/// A reward value's decimal, when it is a finite number in range.
fn reward_value(rules: &BindingRules, text: &str, whose: &str) -> Result<Dec, String> {
    let d = Dec::from_json_number_text(text).map_err(|_| {
        format!(
            "{whose} {text} under the frozen key {:?} is not a finite number",
            rules.reward_key
        )
    })?;
    if d < rules.reward_min || d > rules.reward_max {
        return Err(format!(
            "{whose} {text} lies outside the frozen range {}..={}",
            rules.reward_min, rules.reward_max
        ));
    }
    Ok(d)
}

/// BIND-2: the reward of a result (canonical decimal text), or why it has
/// none: the verifier never ran, no value under the frozen key, a value
/// that is not a finite number in the frozen range, or reward files that
/// disagree with it or with each other.
pub fn reward(rules: &BindingRules, r: &TrialResultRecordedV2) -> Result<String, String> {
    let Some(rewards) = &r.rewards else {
        return Err("the verifier wrote no rewards".into());
    };
    let Some(text) = rewards.get(&rules.reward_key) else {
        let keys: Vec<&String> = rewards.keys().collect();
        return Err(format!(
            "no reward under the frozen key {:?} (keys: {})",
            rules.reward_key,
            crate::method::verdict::name_some(&keys)
        ));
    };
    let value = reward_value(rules, text, "the reward")?;
    for f in &r.reward_files {
        let name = f.path.rsplit('/').next().unwrap_or(&f.path);
        let file_value = match (&f.rewards, &f.problem) {
            (Some(m), _) => m.get(&rules.reward_key),
            (None, Some(p)) => return Err(format!("reward file {name}: {p}")),
            (None, None) => None,
        };
        let Some(file_text) = file_value else {
            return Err(format!(
                "reward file {name} has no value under the frozen key {:?}",
                rules.reward_key
            ));
        };
        let file_dec = reward_value(rules, file_text, &format!("reward file {name}'s value"))?;
        if file_dec != value {
            return Err(format!(
                "reward file {name} gives {file_text}, the result {text}: the reward files disagree"
            ));
        }
    }
    Ok(value.canonical())
}

/// A case as the verdict judges it: its state (CASE-1) with the evidence
/// binding applied, its reward, and why it is not terminal_valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    pub status: CaseStatus,
    /// Its reward (BIND-2), when it has one.
    pub reward: Option<String>,
    /// The BIND-1 mismatches of its result.
    pub mismatches: Vec<Mismatch>,
    /// Why it is terminal_invalid, in words (empty otherwise).
    pub why_invalid: Vec<String>,
}

/// Judges case `case` of `group` (CASE-1, CASE-3, BIND-1, BIND-2): a result
/// is `terminal_valid` only when its exception is empty or accepted, its
/// reward binds (BIND-2), nothing of its launch differs (BIND-1), and the
/// case was not invalidated.
pub fn judge(l: &LineageState, group: &str, case: &CaseRef) -> Judged {
    let accepted = &l.frozen.manifest.public.harbor.accepted_exceptions;
    let c = l.groups.get(group).and_then(|g| g.cases.get(case));
    let status = c.map_or(CaseStatus::NotStarted, |c| c.status(accepted));
    let mut out = Judged {
        status,
        reward: None,
        mismatches: Vec::new(),
        why_invalid: Vec::new(),
    };
    let Some(c) = c.filter(|c| c.started.is_some()) else {
        return out;
    };
    if let Some((at, inv)) = &c.invalidated {
        out.why_invalid.push(format!(
            "invalidated at seq {}: {}",
            at.seq,
            inv.reason.as_str()
        ));
    }
    let Some((_, r)) = &c.result else {
        return out;
    };
    // BIND-11: a second, different result for the trial (the ingest keeps
    // only a different one) leaves no result to trust.
    if let Some(seq) = c.result_seqs.get(1) {
        out.why_invalid.push(format!(
            "a second, different result was recorded at seq {seq} ({}, {})",
            crate::schema::rule::Rule::Bind11,
            crate::schema::rule::Rule::Bind2
        ));
    }
    if let Some(e) = r.exception_type.as_ref().filter(|e| !accepted.contains(e)) {
        out.why_invalid.push(format!("exception {e}"));
    }
    match reward(&BindingRules::of(l), r) {
        Ok(v) => out.reward = Some(v),
        Err(why) => out.why_invalid.push(format!("no reward: {why}")),
    }
    out.mismatches = result_mismatches(l, group, case);
    out.why_invalid.extend(
        out.mismatches
            .iter()
            .map(|m| format!("BIND-1 {}: {}", m.kind.as_str(), m.detail)),
    );
    out.status = if out.why_invalid.is_empty() {
        CaseStatus::TerminalValid
    } else {
        CaseStatus::TerminalInvalid
    };
    out
}

/// The judged state of case `case` of `group` ([`judge`]'s status).
pub fn case_status(l: &LineageState, group: &str, case: &CaseRef) -> CaseStatus {
    judge(l, group, case).status
}
