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
pub use with_aws::run_quota;

#[cfg(feature = "aws")]
mod with_aws {
    use super::*;
    use crate::cli::out::outln;
    use serde_json::json;

    use crate::error::ExitClass;

    use crate::schema::events::{Event, Status};

    use crate::cli::aws::*;
    use crate::gates::aws::{self};
    use crate::gates::rules;

    /// `quota check`.
    pub fn run_quota(cli: &Cli, cmd: &QuotaCommand, wait: Duration) -> anyhow::Result<ExitCode> {
        let QuotaCommand::Check(a) = cmd;
        let l = lineage_state(cli, wait, a.lineage.as_deref())?;
        let private = optional_private(&l, &a.private)?;
        let (session, target) = open_session(&l, private.as_ref())?;
        let m = &l.frozen.manifest.public;
        // GATE-1: no quota call under an identity other than the frozen one.
        let outcome = match queried_identity(&session, &l, private.as_ref()) {
            Ok(_) => aws::measure_quota(&session, m),
            Err(e) if e.0.starts_with("GATE-1: ") => return Err(identity_error(e).into()),
            Err(e) => Err(e),
        };
        let obs = rules::quota_observation(m, &target.region, &outcome);
        let done = append(cli, wait, vec![Event::QuotaChecked(obs.clone())])?;
        if a.json {
            let mut v = serde_json::to_value(&obs)?;
            v["seq"] = json!(done[0].seq);
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
                done[0].seq
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
