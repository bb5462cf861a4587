//! `quota check`: the EC2 vCPU quota gate (GATE-2).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};

use crate::cli::common::*;
use crate::cli::Cli;

/// `quota` verbs.
#[derive(Debug, Subcommand)]
pub enum QuotaCommand {
    /// The vCPU quota gate (GATE-2): GetServiceQuota(ec2, L-1216C47A) minus
    /// the region's running + pending vCPUs must cover concurrency x
    /// sandbox vCPU + headroom (+ the central host's vCPU while it is still
    /// to be provisioned). Records quota_checked with every number. Refused
    /// (GATE-1, exit 3, nothing appended) when the live STS identity is not
    /// the frozen one.
    Check(AwsLineageArgs),
}

/// A lineage, the optional private manifest, `--json`.
#[derive(Debug, Args)]
pub struct AwsLineageArgs {
    /// The lineage (optional when the ledger holds one).
    pub lineage: Option<String>,
    /// The private manifest (required for an assume_role selector: it holds
    /// the role ARN; when given, it is checked against its commitments).
    #[arg(long, value_name = "FILE")]
    pub private: Option<PathBuf>,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `quota check` in a build without AWS support.
#[cfg(not(feature = "aws"))]
pub fn run_quota(_: &Cli, _: &QuotaCommand, _: Duration) -> anyhow::Result<ExitCode> {
    Err(no_aws("quota check"))
}

#[cfg(feature = "aws")]
pub(crate) use with_aws::check_quota;
#[cfg(feature = "aws")]
pub use with_aws::run_quota;

#[cfg(feature = "aws")]
mod with_aws {
    use super::*;
    use crate::cli::out::outln;
    use serde_json::json;

    use crate::error::ExitClass;

    use crate::schema::events::{Event, Status};

    use crate::cli::aws::*;
    use crate::gates::aws::{self, Session};
    use crate::gates::rules::{self, Target};
    use crate::method::projections::LineageState;
    use crate::schema::events::QuotaChecked;

    /// A quota check as recorded.
    pub(crate) struct QuotaRecorded {
        pub(crate) seq: u64,
        pub(crate) obs: QuotaChecked,
        /// The measured numbers, or why the check could not run.
        pub(crate) outcome: Result<rules::QuotaNumbers, rules::AwsError>,
    }

    /// `quota check` without the printing: refused (GATE-1, nothing
    /// appended) unless the session runs as the frozen identity; else the
    /// GATE-2 numbers, recorded pass or fail.
    pub(crate) fn check_quota(
        cli: &Cli,
        wait: Duration,
        l: &LineageState,
        session: &Session,
        target: &Target,
        private: Option<&Private>,
    ) -> anyhow::Result<QuotaRecorded> {
        let m = &l.frozen.manifest.public;
        // GATE-1: no quota call under an identity other than the frozen one.
        let outcome = match queried_identity(session, l, private) {
            // RUN-1: for the slots a wave may fill now; the run's own live
            // sandboxes are in the regional use.
            Ok(_) => aws::measure_quota(
                session,
                m,
                crate::method::run_plan::free_slots(l),
                crate::method::central::still_to_come(l, None),
            ),
            Err(e) if rules::is_identity_refusal(&e) => return Err(identity_error(e).into()),
            Err(e) => Err(e),
        };
        let obs = rules::quota_observation(m, &target.region, &outcome);
        let done = append(cli, wait, vec![Event::QuotaChecked(obs.clone())])?;
        Ok(QuotaRecorded {
            seq: done[0].seq,
            obs,
            outcome,
        })
    }

    /// `quota check`.
    pub fn run_quota(cli: &Cli, cmd: &QuotaCommand, wait: Duration) -> anyhow::Result<ExitCode> {
        let QuotaCommand::Check(a) = cmd;
        let l = lineage_state(cli, wait, a.lineage.as_deref())?;
        let private = optional_private(&l, &a.private)?;
        let (session, target) = open_session(&l, private.as_ref())?;
        let QuotaRecorded { seq, obs, outcome } =
            check_quota(cli, wait, &l, &session, &target, private.as_ref())?;
        if a.json {
            let mut v = serde_json::to_value(&obs)?;
            v["seq"] = json!(seq);
            v["central_live"] = json!(outcome.as_ref().ok().map(|n| n.central_live));
            print_json(&v)?;
        } else {
            outln!(
                "quota {} {}: quota {} - used {} = available {} vs required {} vCPU: {}; recorded at seq {}",
                obs.quota_code,
                obs.region,
                obs.quota_vcpu,
                obs.used_vcpu,
                obs.available_vcpu,
                obs.required_vcpu,
                if obs.status == Status::Pass { "holds" } else { "does not hold" },
                seq
            )?;
        }
        Ok(match &outcome {
            Ok(_) => exit(obs.status),
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(ExitClass::Environment.code())
            }
        })
    }
}
