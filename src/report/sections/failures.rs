//! Section 11: failures, limitations and the control-to-policy time gap.

use std::collections::BTreeSet;

use crate::method::projections::{CaseStatus, GroupState};
use crate::method::verdict::{CaseLine, Series};
use crate::schema::events::CaseRef;
use crate::schema::manifest::RunRole;

use super::basis::CostBasis;
use super::evidence::row_line;
use super::Ctx;
use crate::report::model::{
    Diagnostic, FailedCase, Failures, RefusedFileLine, SkipLine, StopLine, TimeGap,
};
use crate::report::numbers::duration_text;

/// Section 11.
pub(super) fn failures(ctx: &Ctx<'_>) -> Failures {
    Failures {
        diagnostics: diagnostics(ctx),
        not_opened: ctx
            .groups
            .iter()
            .filter(|group| group.state.is_none())
            .map(|group| group.name.clone())
            .collect(),
        failed_cases: failed_cases(ctx),
        skips: skips(ctx),
        stopped: ctx.lineage.stopped.as_ref().map(|(at, stopped)| StopLine {
            seq: at.seq,
            rule: stopped.rule.clone(),
            reason: stopped.reason.clone(),
        }),
        time_gaps: time_gaps(ctx),
        limitations: limitations(ctx),
        refused_files: ctx
            .opened_groups()
            .flat_map(|group| {
                group
                    .verdict
                    .refused_files
                    .iter()
                    .map(|file| RefusedFileLine {
                        group: group.eval.name.clone(),
                        file: file.clone(),
                    })
            })
            .collect(),
    }
}

/// Every opened group that is not accepted, with its failing rows.
fn diagnostics(ctx: &Ctx<'_>) -> Vec<Diagnostic> {
    ctx.opened_groups()
        .filter(|group| !group.eval.accepted())
        .map(|group| Diagnostic {
            group: group.eval.name.clone(),
            status: group.eval.status(),
            failing: group
                .verdict
                .failing()
                .into_iter()
                .map(|row| row_line(row, &group.verdict.joins))
                .collect(),
        })
        .collect()
}

/// Every case attempt that is not terminal-valid.
fn failed_cases(ctx: &Ctx<'_>) -> Vec<FailedCase> {
    let mut failed = Vec::new();
    for group in ctx.opened_groups() {
        let skipped: BTreeSet<CaseRef> = group.verdict.skipped_cases().into_iter().collect();
        for case in &group.verdict.cases {
            if case.status != CaseStatus::TerminalValid {
                failed.push(FailedCase {
                    group: group.eval.name.clone(),
                    case: case.case.label(),
                    status: case.status.as_str().into(),
                    why: why_failed(group.state, case, &skipped),
                });
            }
        }
    }
    failed
}

/// Why a case is not terminal-valid, from its recorded evidence.
fn why_failed(group: &GroupState, case: &CaseLine, skipped: &BTreeSet<CaseRef>) -> String {
    let original = CaseRef {
        replacement: 0,
        ..case.case.clone()
    };
    let mut why = Vec::new();
    if skipped.contains(&original) {
        why.push("validated security-policy skip (CASE-6), counts 0".to_string());
    }
    if let Some(recorded) = group.cases.get(&case.case) {
        if let Some((at, invalidated)) = &recorded.invalidated {
            why.push(format!(
                "invalidated at seq {}: {}",
                at.seq,
                invalidated.reason.as_str()
            ));
        }
        if let Some((at, result)) = &recorded.result {
            if let Some(exception) = &result.exception_type {
                why.push(format!("TrialResult at seq {} raised {exception}", at.seq));
            }
            if result
                .rewards
                .as_ref()
                .is_none_or(|rewards| rewards.is_empty())
            {
                why.push(format!("TrialResult at seq {} has no reward", at.seq));
            }
        }
        for (at, refusal) in &recorded.refusals {
            why.push(format!(
                "HTTP {} {} evidence at seq {}",
                refusal.http_status,
                refusal.class.as_str(),
                at.seq
            ));
        }
    }
    for refused in group
        .refused_files
        .iter()
        .filter(|(_, f)| f.case.as_ref() == Some(&case.case))
    {
        why.push(format!(
            "{} offered at seq {} was refused ({}: {})",
            refused.1.path, refused.0.seq, refused.1.rule, refused.1.reason
        ));
    }
    match case.status {
        CaseStatus::NotStarted => why.push("never started".into()),
        CaseStatus::Started => why.push("started, no terminal evidence".into()),
        _ => {}
    }
    if case.starts > 1 {
        why.push(format!("started {} times", case.starts));
    }
    if why.is_empty() {
        why.push("no valid TrialResult".into());
    }
    why.join("; ")
}

/// Every validated security-policy skip.
fn skips(ctx: &Ctx<'_>) -> Vec<SkipLine> {
    let mut skips = Vec::new();
    for group in ctx.opened_groups() {
        for skip in &group.verdict.skipped_security_policy {
            skips.push(SkipLine {
                group: group.eval.name.clone(),
                case: skip.case.label(),
                class: skip.class.as_str().into(),
                evidence_blake3: skip.evidence_blake3.to_vec(),
                failed_attempts_cost: "not attributable: requests carry no case identity, and the join never uses sessions or trial ids (JOIN-2, JOIN-4)".into(),
            });
        }
    }
    skips
}

/// The time from the control's seal to each round's daemon start.
fn time_gaps(ctx: &Ctx<'_>) -> Vec<TimeGap> {
    let Some(control_seal) = ctx.control().and_then(|control| control.sealed.clone()) else {
        return Vec::new();
    };
    ctx.rounds()
        .filter_map(|round| {
            let opened = round.opened?;
            let gap = i128::from(opened.utc_ns) - i128::from(control_seal.at.utc_ns);
            Some(TimeGap {
                round: round.name.clone(),
                control_sealed_seq: control_seal.at.seq,
                round_opened_seq: opened.seq,
                gap_ns: i64::try_from(gap).unwrap_or(i64::MAX),
                text: duration_text(gap),
            })
        })
        .collect()
}

/// What the evidence cannot show.
fn limitations(ctx: &Ctx<'_>) -> Vec<String> {
    let mut limitations = vec![
        "Latency is not in the evidence: BitRouter traces carry no latency (it lives only in the daemon's SQLite); provider errors are counted from trace HTTP statuses and usage status.".to_string(),
        "Requests carry no case identity (JOIN-2): per-case cost and the cost of failed attempts are not attributable; costs are per group.".to_string(),
    ];
    if !ctx.replicated() {
        limitations.push(format!(
            "{} trial per case: per-case deltas have no interval and are not a sample of the task distribution (CLASS-2, REPORT-4).",
            ctx.manifest.cases.trials.len()
        ));
    }
    if ctx.cost_basis != CostBasis::Series(Series::Actual) {
        limitations.push(format!(
            "Cost basis: {}. {}",
            ctx.basis.label, ctx.basis.note
        ));
    }
    if ctx.manifest.run.role == RunRole::Tuning {
        limitations.push(
            "The rounds tune on these tasks: results are not held-out generalization (CLASS-2)."
                .into(),
        );
    }
    limitations
}
