//! `cleanup audit | monitor | terminate`: exact-tag residue (CLEAN-1..3).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};

use crate::cli::common::*;
use crate::cli::Cli;
use crate::limits::{MONITOR_INTERVAL_MS_DEFAULT, MONITOR_SAMPLES_DEFAULT};

/// `cleanup` verbs (CLEAN-1..3). GROUP is `LINEAGE/GROUP` or `GROUP`.
#[derive(Debug, Subcommand)]
pub enum CleanupCommand {
    /// Query EC2 by the exact run tag AND role tag (instances in every
    /// non-terminated state, volumes, network interfaces), the instance ids
    /// the ledger tracked for the group, and everything attached to them.
    /// Records cleanup_audited with every id found; exits 1 unless the
    /// only thing found is the retained central host (by instance id).
    Audit(CleanupArgs),
    /// Sample the run-tagged sandbox count every --interval seconds and
    /// record each sample (monitor_sampled); progress goes to stderr.
    Monitor(MonitorArgs),
    /// Terminate or delete exactly what the latest audit of the group found
    /// (the central host excluded), record each call and its answer
    /// (residue_terminated), then audit again. Needs --confirm.
    Terminate(TerminateArgs),
}

/// A group, the optional private manifest, `--json`.
#[derive(Debug, Args)]
pub struct CleanupArgs {
    /// The group (`LINEAGE/GROUP` or `GROUP`).
    pub group: String,
    /// The private manifest (required for assume_role; when given, the
    /// queried identity is checked against the frozen commitments in full,
    /// otherwise against the redacted account).
    #[arg(long, value_name = "FILE")]
    pub private: Option<PathBuf>,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `cleanup monitor`.
#[derive(Debug, Args)]
pub struct MonitorArgs {
    /// The group (`LINEAGE/GROUP` or `GROUP`).
    pub group: String,
    /// Seconds between samples.
    #[arg(long, value_name = "SECS", default_value_t = MONITOR_INTERVAL_MS_DEFAULT as f64 / 1000.0)]
    pub interval: f64,
    /// Stop at the first sample of zero sandboxes (exit 1 if --max-samples
    /// pass without one).
    #[arg(long)]
    pub until_zero: bool,
    /// Most samples to take.
    #[arg(long, value_name = "N", default_value_t = MONITOR_SAMPLES_DEFAULT)]
    pub max_samples: u64,
    /// The private manifest (required for assume_role).
    #[arg(long, value_name = "FILE")]
    pub private: Option<PathBuf>,
    /// Print one JSON document on stdout at the end.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `cleanup terminate`.
#[derive(Debug, Args)]
pub struct TerminateArgs {
    /// The group (`LINEAGE/GROUP` or `GROUP`).
    pub group: String,
    /// Act. Without it the plan is printed and nothing is done (exit 2).
    #[arg(long)]
    pub confirm: bool,
    /// The private manifest (required for assume_role).
    #[arg(long, value_name = "FILE")]
    pub private: Option<PathBuf>,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `cleanup` in a build without AWS support.
#[cfg(not(feature = "aws"))]
pub fn run_cleanup(_: &Cli, _: &CleanupCommand, _: Duration) -> anyhow::Result<ExitCode> {
    Err(no_aws("cleanup"))
}

#[cfg(feature = "aws")]
pub use with_aws::run_cleanup;
#[cfg(feature = "aws")]
pub(crate) use with_aws::{audit_and_record, monitor_sample, terminate_from_audit};

#[cfg(feature = "aws")]
mod with_aws {
    use super::*;
    use crate::cli::out::outln;
    use serde_json::json;

    use crate::cli::aws::*;
    use crate::error::ExitClass;
    use crate::gates::aws::{self, Session};
    use crate::gates::rules;
    use crate::limits::{MONITOR_INTERVAL_MS_MAX, MONITOR_INTERVAL_MS_MIN, MONITOR_SAMPLES_MAX};
    use crate::log::ledger::{Draft, Ledger};
    use crate::method::audit::cleanup_history;
    use crate::method::projections::LineageState;
    use crate::schema::events::{CleanupAudited, FoundResource, MonitorSampled, ResidueTerminated};
    use crate::schema::events::{Event, GroupRef, Status};
    use crate::schema::time::now_utc_ns;

    /// Audits a group and appends the audit; returns it with its seq.
    pub(crate) fn audit_and_record(
        cli: &Cli,
        wait: Duration,
        l: &LineageState,
        group: &str,
        session: &Session,
        private: Option<&Private>,
    ) -> anyhow::Result<(u64, CleanupAudited)> {
        let m = &l.frozen.manifest.public;
        let g = GroupRef {
            lineage: l.frozen.lineage.clone(),
            group: group.to_string(),
        };
        let history = {
            let ledger = Ledger::open(&cli.ledger, wait)?;
            cleanup_history(&ledger, &g)?
        };
        let (identity, outcome) = match queried_identity(session, l, private) {
            Ok(id) => {
                let out = aws::audit(session, &rules::RunTags::of(m), &history.tracked);
                (id, out)
            }
            Err(e) => (String::from("unproven"), Err(e)),
        };
        let obs = rules::audit_observation(
            g,
            m,
            crate::method::central::excluded_id(l),
            &session.region,
            &identity,
            &history.tracked,
            &outcome,
        );
        let done = append(cli, wait, vec![Event::CleanupAudited(obs.clone())])?;
        Ok((done[0].seq, obs))
    }

    fn print_audit(seq: u64, a: &CleanupAudited, as_json: bool) -> anyhow::Result<()> {
        if as_json {
            let mut v = serde_json::to_value(a)?;
            v["seq"] = json!(seq);
            return print_json(&v);
        }
        let central = a.excluded_central_instance_id.as_deref();
        let residue = a
            .found
            .iter()
            .filter(|r| !rules::is_excluded(r, central))
            .count();
        outln!(
            "cleanup audit of {}/{} in {} as {}: {} found, {} residue: {}; recorded at seq {}",
            a.group.lineage,
            a.group.group,
            a.region,
            a.identity,
            a.found.len(),
            residue,
            if a.status == Status::Pass {
                "zero tail"
            } else {
                "NOT zero"
            },
            seq
        )?;
        for r in &a.found {
            let ex = if rules::is_excluded(r, central) {
                " (excluded: central host)"
            } else {
                ""
            };
            outln!(
                "  {} {} {} found by {}{ex}",
                r.resource,
                r.id,
                r.state,
                r.found_by
            )?;
        }
        if let Some(e) = &a.error {
            outln!("  error: {e}")?;
        }
        Ok(())
    }

    fn audit_exit(a: &CleanupAudited) -> ExitCode {
        if a.error.is_some() {
            ExitCode::from(ExitClass::Environment.code())
        } else {
            exit(a.status)
        }
    }

    /// `cleanup audit | monitor | terminate`.
    pub fn run_cleanup(
        cli: &Cli,
        cmd: &CleanupCommand,
        wait: Duration,
    ) -> anyhow::Result<ExitCode> {
        match cmd {
            CleanupCommand::Audit(a) => {
                let (lineage, group) = parse_group(&a.group);
                let l = lineage_state(cli, wait, lineage.as_deref())?;
                require_group(&l, &group)?;
                let private = optional_private(&l, &a.private)?;
                let (session, _) = open_session(&l, private.as_ref())?;
                let (seq, obs) =
                    audit_and_record(cli, wait, &l, &group, &session, private.as_ref())?;
                print_audit(seq, &obs, a.json)?;
                Ok(audit_exit(&obs))
            }
            CleanupCommand::Monitor(a) => monitor(cli, a, wait),
            CleanupCommand::Terminate(a) => terminate(cli, a, wait),
        }
    }

    /// One monitor sample: the live run-tagged sandboxes, recorded
    /// (`monitor_sampled`); returns its seq and the instance ids.
    pub(crate) fn monitor_sample(
        cli: &Cli,
        wait: Duration,
        m: &crate::schema::manifest::ManifestFile,
        g: &GroupRef,
        session: &Session,
    ) -> anyhow::Result<(u64, Vec<String>)> {
        let live = aws::live_sandboxes(session, m)?;
        let ids: Vec<String> = live.iter().map(|(id, _)| id.clone()).collect();
        let done = append(
            cli,
            wait,
            vec![Event::MonitorSampled(MonitorSampled {
                group: g.clone(),
                sandbox_count: ids.len() as u64,
                instance_ids: ids.clone(),
            })],
        )?;
        Ok((done[0].seq, ids))
    }

    fn monitor(cli: &Cli, a: &MonitorArgs, wait: Duration) -> anyhow::Result<ExitCode> {
        let (min, max) = (
            MONITOR_INTERVAL_MS_MIN as f64 / 1000.0,
            MONITOR_INTERVAL_MS_MAX as f64 / 1000.0,
        );
        if !(min..=max).contains(&a.interval) {
            return Err(BadUsage(format!(
                "--interval must be between {min} and {max} seconds, got {}",
                a.interval
            ))
            .into());
        }
        if !(1..=MONITOR_SAMPLES_MAX).contains(&a.max_samples) {
            return Err(BadUsage(format!(
                "--max-samples must be 1 to {MONITOR_SAMPLES_MAX}, got {}",
                a.max_samples
            ))
            .into());
        }
        let (lineage, group) = parse_group(&a.group);
        let l = lineage_state(cli, wait, lineage.as_deref())?;
        require_group(&l, &group)?;
        let private = optional_private(&l, &a.private)?;
        let (session, _) = open_session(&l, private.as_ref())?;
        let m = &l.frozen.manifest.public;
        let g = GroupRef {
            lineage: l.frozen.lineage.clone(),
            group: group.clone(),
        };
        let interval = Duration::from_secs_f64(a.interval);
        let (mut peak, mut last, mut seqs, mut reached_zero) = (0u64, 0u64, Vec::new(), false);
        for n in 1..=a.max_samples {
            let (seq, ids) = monitor_sample(cli, wait, m, &g, &session)?;
            last = ids.len() as u64;
            peak = peak.max(last);
            seqs.push(seq);
            eprintln!(
                "monitor {}/{} sample {n}/{}: {last} live sandbox(es){}{} (seq {})",
                g.lineage,
                g.group,
                a.max_samples,
                if ids.is_empty() { "" } else { ": " },
                ids.join(", "),
                seq
            );
            if a.until_zero && last == 0 {
                reached_zero = true;
                break;
            }
            if n < a.max_samples {
                std::thread::sleep(interval);
            }
        }
        if a.json {
            print_json(&json!({
                "group": g.group,
                "samples": seqs.len(),
                "peak": peak,
                "last": last,
                "reached_zero": reached_zero,
                "seqs": seqs,
            }))?;
        } else {
            outln!(
                "{} samples of {}/{}: peak {peak}, last {last}",
                seqs.len(),
                g.lineage,
                g.group
            )?;
        }
        Ok(if a.until_zero && !reached_zero {
            ExitCode::from(ExitClass::CheckFailed.code())
        } else {
            ExitCode::SUCCESS
        })
    }

    /// What `cleanup terminate` would do, without `--confirm`.
    fn print_plan(audit_seq: u64, plan: &[FoundResource], as_json: bool) -> anyhow::Result<()> {
        if as_json {
            return print_json(&json!({ "audit_seq": audit_seq, "plan": plan }));
        }
        outln!(
            "plan from audit seq {audit_seq}: {} resource(s)",
            plan.len()
        )?;
        for r in plan {
            outln!(
                "  {} {} {} found by {}",
                r.resource,
                r.id,
                r.state,
                r.found_by
            )?;
        }
        Ok(())
    }

    /// What a termination did, and the audit after it.
    pub(crate) struct Terminated {
        /// The audit acted on.
        pub(crate) audit_seq: u64,
        /// Each call and its answer.
        pub(crate) calls: Vec<rules::Termination>,
        /// The seq of the audit after.
        pub(crate) seq: u64,
        /// The audit after.
        pub(crate) after: CleanupAudited,
    }

    /// `cleanup terminate --confirm` without the printing: only what the
    /// latest audit of the group proved the run's, each call recorded as it
    /// happens, then an audit again (CLEAN-1).
    pub(crate) fn terminate_from_audit(
        cli: &Cli,
        wait: Duration,
        l: &LineageState,
        group: &str,
        session: &Session,
        private: Option<&Private>,
    ) -> anyhow::Result<Terminated> {
        let g = GroupRef {
            lineage: l.frozen.lineage.clone(),
            group: group.to_string(),
        };
        let history = {
            let ledger = Ledger::open(&cli.ledger, wait)?;
            cleanup_history(&ledger, &g)?
        };
        let (audit_seq, audit) =
            crate::method::gate_outcomes::usable_audit(history.latest_audit, &g.lineage, &g.group)?;
        let central = audit.excluded_central_instance_id.as_deref();
        let plan = rules::termination_plan(&audit.found, central);
        // The calls run as the frozen identity, or not at all.
        queried_identity(session, l, private).map_err(identity_error)?;
        let mut record = |t: &rules::Termination| -> crate::Result<()> {
            let ledger = Ledger::open(&cli.ledger, wait)?;
            let done = ledger.append(
                &[Draft {
                    actor: cli.actor.clone(),
                    event: Event::ResidueTerminated(ResidueTerminated {
                        group: g.clone(),
                        resource: t.resource.clone(),
                        audit_seq,
                        action: t.action.clone(),
                        answer: t.answer.clone(),
                    }),
                    idempotency_key: None,
                }],
                now_utc_ns(),
            )?;
            eprintln!(
                "{} {} {}: {} (seq {})",
                t.action, t.resource.resource, t.resource.id, t.answer, done[0].seq
            );
            Ok(())
        };
        let calls = aws::terminate(
            session,
            &plan,
            Duration::from_millis(aws::TERMINATE_WAIT_MS),
            &mut record,
        )?;
        let (seq, after) = audit_and_record(cli, wait, l, group, session, private)?;
        Ok(Terminated {
            audit_seq,
            calls,
            seq,
            after,
        })
    }

    fn terminate(cli: &Cli, a: &TerminateArgs, wait: Duration) -> anyhow::Result<ExitCode> {
        let (lineage, group) = parse_group(&a.group);
        let l = lineage_state(cli, wait, lineage.as_deref())?;
        require_group(&l, &group)?;
        let g = GroupRef {
            lineage: l.frozen.lineage.clone(),
            group: group.clone(),
        };
        let history = {
            let ledger = Ledger::open(&cli.ledger, wait)?;
            cleanup_history(&ledger, &g)?
        };
        let (audit_seq, audit) =
            crate::method::gate_outcomes::usable_audit(history.latest_audit, &g.lineage, &g.group)?;
        let central = audit.excluded_central_instance_id.as_deref();
        let plan = rules::termination_plan(&audit.found, central);
        if !a.confirm {
            print_plan(audit_seq, &plan, a.json)?;
            return Err(BadUsage(
                "cleanup terminate changes AWS resources; nothing was done: pass --confirm".into(),
            )
            .into());
        }
        let private = optional_private(&l, &a.private)?;
        let (session, _) = open_session(&l, private.as_ref())?;
        // The audit the calls acted on (a newer one may have been recorded
        // since the plan above was printed).
        let Terminated {
            audit_seq,
            calls,
            seq,
            after,
        } = terminate_from_audit(cli, wait, &l, &group, &session, private.as_ref())?;
        if a.json {
            print_json(&json!({
                "audit_seq": audit_seq,
                "calls": calls.iter().map(|t| json!({
                    "resource": t.resource, "action": t.action, "answer": t.answer,
                })).collect::<Vec<_>>(),
                "after_audit_seq": seq,
                "after": after,
            }))?;
        } else {
            outln!(
                "{} call(s) made from audit seq {audit_seq}; audit again:",
                calls.len()
            )?;
            print_audit(seq, &after, false)?;
        }
        Ok(audit_exit(&after))
    }
}
