//! The cases of a group as the verdict sees them (CASE-1..8): every
//! identity of its manifest plus any started outside it, their states and
//! rewards, the validated security-policy skips (CASE-6), and the lists the
//! attempts, trial result and runtime rows name.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::method::binding::{judge, Mismatch, MismatchKind};
use crate::method::projections::{CaseStatus, GroupState, LineageState};
use crate::method::verdict::skip::{skip_check, Skip};
use crate::schema::events::CaseRef;
use crate::schema::money::Dec;

/// One case identity in the verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CaseLine {
    pub case: CaseRef,
    pub status: CaseStatus,
    /// Its reward: the number under the frozen reward key, when it binds
    /// (BIND-2).
    pub reward: Option<String>,
    /// Seq of its start.
    pub started_seq: Option<u64>,
    /// How many `case_started` it has (more than one is a violation).
    pub starts: usize,
    /// How many TrialResults it has.
    pub results: usize,
    /// Why it is terminal_invalid (an exception, no reward, a BIND-1
    /// mismatch named), empty otherwise.
    pub why_invalid: Vec<String>,
    /// Seqs of the files offered for it that a rule refused (BIND-12): a
    /// started case whose only result was refused is named with them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub refused_seqs: Vec<u64>,
}

/// The cases of a group, tallied once for the case rows and the verdict.
#[derive(Debug, Default)]
pub(super) struct CaseTally {
    /// Validated security-policy skips.
    pub skips: Vec<Skip>,
    /// Skips that were attempted and do not hold: `label: why`.
    pub bad_skips: Vec<String>,
    /// Every identity of the manifest plus any started outside it.
    pub lines: Vec<CaseLine>,
    /// Original identities never started.
    pub missing: Vec<String>,
    /// Identities started more than once.
    pub started_twice: Vec<String>,
    /// Started identities that are not the manifest's.
    pub foreign: Vec<String>,
    /// Started and not terminal.
    pub not_terminal: Vec<String>,
    /// terminal_invalid and not a validated skip.
    pub invalid: Vec<String>,
    /// Cases with more than one TrialResult.
    pub multi_results: Vec<String>,
    /// BIND-1 mismatches that fail the `manifest` row: `label: detail`.
    pub manifest_mismatches: Vec<String>,
    /// BIND-1 mismatches that fail the `trial result` row (the window).
    pub window_mismatches: Vec<String>,
    /// Original identities terminal_valid with reward 1.
    pub passed: u64,
    /// Original identities terminal_valid.
    pub valid: usize,
}

/// Whether a reward is exactly 1.
fn is_pass(reward: Option<&str>) -> bool {
    reward
        .and_then(|r| Dec::parse(r).ok())
        .is_some_and(|r| r == Dec::from(1u64))
}

impl CaseTally {
    /// Tallies the cases of `group_state` against the group's manifest
    /// `identities`.
    pub fn of(
        l: &LineageState,
        group: &str,
        group_state: &GroupState,
        identities: &[CaseRef],
    ) -> Self {
        let mut tally = CaseTally::default();
        for id in identities {
            match skip_check(l, group, group_state, id) {
                Some(Ok(skip)) => tally.skips.push(skip),
                Some(Err(why)) => tally.bad_skips.push(format!("{}: {why}", id.label())),
                None => {}
            }
        }
        let skipped: BTreeSet<CaseRef> = tally
            .skips
            .iter()
            .flat_map(|s| {
                [
                    s.case.clone(),
                    CaseRef {
                        replacement: 1,
                        ..s.case.clone()
                    },
                ]
            })
            .collect();
        let mut all: BTreeSet<CaseRef> = identities.iter().cloned().collect();
        all.extend(
            group_state
                .cases
                .iter()
                .filter(|(_, c)| c.started.is_some())
                .map(|(k, _)| k.clone()),
        );
        let manifest_ids: BTreeSet<&CaseRef> = identities.iter().collect();
        for case in &all {
            tally.add(l, group, group_state, case, &manifest_ids, &skipped);
        }
        tally.valid = tally
            .lines
            .iter()
            .filter(|c| c.status == CaseStatus::TerminalValid && c.case.replacement == 0)
            .count();
        tally
    }

    /// Adds one case: its line, and its label to every list it belongs to.
    fn add(
        &mut self,
        l: &LineageState,
        group: &str,
        group_state: &GroupState,
        case: &CaseRef,
        manifest_ids: &BTreeSet<&CaseRef>,
        skipped: &BTreeSet<CaseRef>,
    ) {
        let state = group_state.cases.get(case);
        let judged = judge(l, group, case);
        let status = judged.status;
        let reward = judged.reward.clone();
        for Mismatch { kind, detail } in &judged.mismatches {
            let line = format!("{}: {detail}", case.label());
            match kind {
                // The manifest row names the job's retries once, by job.
                MismatchKind::Retries => {}
                MismatchKind::Window => self.window_mismatches.push(line),
                _ => self.manifest_mismatches.push(line),
            }
        }
        let starts = state.map_or(0, |c| c.start_seqs.len());
        let results = state.map_or(0, |c| c.result_seqs.len());
        let original = CaseRef {
            replacement: 0,
            ..case.clone()
        };
        if !manifest_ids.contains(&original)
            || (case.replacement > 0 && !skipped.contains(case) && case.replacement > 1)
        {
            self.foreign.push(case.label());
        }
        if starts > 1 {
            self.started_twice.push(case.label());
        }
        if results > 1 {
            self.multi_results.push(case.label());
        }
        let refused: Vec<_> = group_state
            .refused_files
            .iter()
            .filter(|(_, f)| f.case.as_ref() == Some(case))
            .collect();
        match status {
            CaseStatus::NotStarted if case.replacement == 0 => self.missing.push(case.label()),
            CaseStatus::NotStarted => {}
            // BIND-12: never silently `started` when what was offered for
            // it was refused.
            CaseStatus::Started => match refused.last() {
                Some((at, f)) => self.not_terminal.push(format!(
                    "{} (its result was refused: {} at seq {}, {})",
                    case.label(),
                    f.path,
                    at.seq,
                    f.rule
                )),
                None => self.not_terminal.push(case.label()),
            },
            CaseStatus::TerminalInvalid if !skipped.contains(case) => {
                let why = judged
                    .why_invalid
                    .first()
                    .map_or(String::new(), |w| format!(" ({w})"));
                self.invalid.push(format!("{}{why}", case.label()))
            }
            CaseStatus::TerminalInvalid => {}
            CaseStatus::TerminalValid => {
                if case.replacement == 0 && is_pass(reward.as_deref()) {
                    self.passed += 1;
                }
            }
        }
        self.lines.push(CaseLine {
            case: case.clone(),
            status,
            reward,
            started_seq: state.and_then(|c| c.started.as_ref()).map(|(at, _)| at.seq),
            starts,
            results,
            why_invalid: judged.why_invalid,
            refused_seqs: refused.iter().map(|(at, _)| at.seq).collect(),
        });
    }
}
