//! `identity prove`: the STS proof of the frozen identity (GATE-1).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};

use crate::cli::common::*;
use crate::cli::Cli;

/// `identity` verbs.
#[derive(Debug, Subcommand)]
pub enum IdentityCommand {
    /// Prove the AWS identity (GATE-1): STS GetCallerIdentity through the
    /// manifest's one explicit selector (named profile, assume_role or
    /// instance_profile; never the default chain, whose ambient
    /// AWS_ACCESS_KEY_ID/AWS_ENDPOINT_URL are ignored and their names
    /// recorded). Account and principal are compared through the frozen
    /// commitments. Records identity_checked; a mismatch also records a
    /// hard stop (lineage_stopped, GATE-1) and exits 1.
    Prove(IdentityProveArgs),
}

/// Arguments of `identity prove`.
#[derive(Debug, Args)]
pub struct IdentityProveArgs {
    /// The lineage (optional when the ledger holds one).
    pub lineage: Option<String>,
    /// The private manifest: its commitment key recomputes the commitments
    /// of what STS answered; for assume_role it holds the role ARN.
    #[arg(long, value_name = "FILE")]
    pub private: PathBuf,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `identity prove` in a build without AWS support.
#[cfg(not(feature = "aws"))]
pub fn run_identity(_: &Cli, _: &IdentityCommand, _: Duration) -> anyhow::Result<ExitCode> {
    Err(no_aws("identity prove"))
}

#[cfg(feature = "aws")]
pub(crate) use with_aws::prove;
#[cfg(feature = "aws")]
pub use with_aws::run_identity;

#[cfg(feature = "aws")]
mod with_aws {
    use super::*;
    use crate::cli::out::outln;
    use serde_json::json;

    use crate::error::ExitClass;
    use crate::log::ledger::{Draft, Ledger};

    use crate::cli::aws::*;
    use crate::gates::aws::Session;
    use crate::gates::rules::{self, Target};
    use crate::log::ledger::Appended;
    use crate::method::projections::LineageState;
    use crate::schema::events::{Event, IdentityChecked, Status};
    use crate::schema::time::now_utc_ns;

    /// An identity proof as recorded.
    pub(crate) struct Proved {
        /// The `identity_checked` record.
        pub(crate) checked: Appended,
        pub(crate) obs: IdentityChecked,
        /// The GATE-1 hard stop recorded with a mismatch.
        pub(crate) stop: Option<Appended>,
        /// What STS answered, judged.
        pub(crate) outcome: Result<rules::IdentityVerdict, rules::AwsError>,
    }

    /// `identity prove` without the printing: STS through the session's
    /// one selector, judged against the private commitments and recorded;
    /// a mismatch also records the GATE-1 hard stop (unless the lineage is
    /// already stopped).
    pub(crate) fn prove(
        cli: &Cli,
        wait: Duration,
        l: &LineageState,
        session: &Session,
        target: &Target,
        private: &Private,
    ) -> anyhow::Result<Proved> {
        let ambient = ambient();
        let outcome = session
            .caller_identity()
            .map(|id| rules::judge_identity(&private.key, &l.frozen.manifest.private, &id));
        let m = &l.frozen.manifest.public;
        let selector = rules::selector_label(m, &l.frozen.manifest.private);
        let obs: IdentityChecked =
            rules::identity_observation(&l.frozen.lineage, &selector, target, ambient, &outcome);
        let ledger = Ledger::open(&cli.ledger, wait)?;
        let mut batch = ledger.batch(now_utc_ns())?;
        let draft = |event| Draft {
            actor: cli.actor.clone(),
            event,
            idempotency_key: None,
        };
        let checked = batch.push(draft(Event::IdentityChecked(obs.clone())))?;
        let stop = match &outcome {
            Ok(v) => crate::method::gate_outcomes::identity_stop(
                l,
                v.status,
                v.error.as_deref(),
                checked.seq,
            )
            .map(|stop| batch.push(draft(Event::LineageStopped(stop))))
            .transpose()?,
            Err(_) => None,
        };
        announce(&batch.commit()?);
        Ok(Proved {
            checked,
            obs,
            stop,
            outcome,
        })
    }

    /// `identity prove`.
    pub fn run_identity(
        cli: &Cli,
        cmd: &IdentityCommand,
        wait: Duration,
    ) -> anyhow::Result<ExitCode> {
        let IdentityCommand::Prove(a) = cmd;
        let l = lineage_state(cli, wait, a.lineage.as_deref())?;
        let private = read_private(&l, &a.private)?;
        let (session, target) = open_session(&l, Some(&private))?;
        let Proved {
            checked,
            obs,
            stop,
            outcome,
        } = prove(cli, wait, &l, &session, &target, &private)?;
        if a.json {
            print_json(&json!({
                "seq": checked.seq,
                "status": obs.status,
                "selector": obs.selector,
                "region": obs.region,
                "endpoint_override": obs.endpoint_override,
                "ambient_variables_ignored": obs.ambient_variables_ignored,
                "account": obs.account.as_ref().map(|c| &c.redacted),
                "principal": obs.principal.as_ref().map(|c| &c.redacted),
                "error": obs.error,
                "stopped_seq": stop.map(|s| s.seq),
            }))?;
        } else {
            match &outcome {
                Ok(v) => outln!(
                    "identity {} as {} in account {} (selector {}); recorded at seq {}",
                    if v.status == Status::Pass {
                        "proven"
                    } else {
                        "MISMATCH"
                    },
                    v.principal.redacted,
                    v.account.redacted,
                    obs.selector,
                    checked.seq
                )?,
                Err(e) => outln!("identity not proven: {e}; recorded at seq {}", checked.seq)?,
            }
            if !obs.ambient_variables_ignored.is_empty() {
                outln!(
                    "  ignored ambient variables: {}",
                    obs.ambient_variables_ignored.join(", ")
                )?;
            }
            if let Some(s) = stop {
                outln!("  lineage stopped (GATE-1) at seq {}", s.seq)?;
            }
        }
        Ok(match outcome {
            Ok(v) => exit(v.status),
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(ExitClass::Environment.code())
            }
        })
    }
}
