//! `central up` / `central down`: the central BitRouter host, provisioned or
//! reused under the gates (FREEZE-8, GATE-1, GATE-2, CLEAN-1..3,
//! VERDICT-3). What to do is decided in `method::central`; here the facts
//! are gathered from EC2 through the lineage's one explicit session and the
//! observation appended.

use std::process::ExitCode;
use std::time::Duration;

use clap::Subcommand;

use crate::cli::common::*;
use crate::cli::quota::AwsLineageArgs;
use crate::cli::Cli;

/// `central` verbs.
#[derive(Debug, Subcommand)]
pub enum CentralCommand {
    /// Provision or check the central host. Provision mode with
    /// `[central.launch]`: launches it once (the frozen AMI, type, subnet,
    /// security groups; the run and central role tags; an idempotency
    /// token), waits for `running` within the frozen deadline and records a
    /// `central_host` observation; a rerun adopts the host the exact tags
    /// find, never launches a second. Reuse mode: checks the frozen instance
    /// id (exists, running, the frozen role tag, AMI and type). A difference
    /// is a hard stop (VERDICT-3), recorded; exit 1.
    Up(AwsLineageArgs),
    /// Tear the provisioned central host down: TerminateInstances of every
    /// host with the run and central role tags, then the same exact-tag
    /// query until it answers empty, recorded as `central_teardown` (exit 1
    /// while any is left). A reused host is never terminated: cleanup
    /// audits exclude it by its frozen id.
    Down(AwsLineageArgs),
}

/// `central` in a build without AWS support.
#[cfg(not(feature = "aws"))]
pub fn run_central(_: &Cli, c: &CentralCommand, _: Duration) -> anyhow::Result<ExitCode> {
    Err(no_aws(match c {
        CentralCommand::Up(_) => "central up",
        CentralCommand::Down(_) => "central down",
    }))
}

#[cfg(feature = "aws")]
pub use with_aws::run_central;
#[cfg(feature = "aws")]
pub(crate) use with_aws::{down, up};

#[cfg(feature = "aws")]
mod with_aws {
    use super::*;
    use crate::cli::out::outln;
    use serde_json::json;

    use crate::cli::aws::*;
    use crate::error::{Error, ExitClass};
    use crate::gates::aws::{central as ec2, Session};
    use crate::gates::rules::{AwsError, Target};
    use crate::limits::{CENTRAL_READY_POLL_MS, CENTRAL_TEARDOWN_WAIT_MS};
    use crate::method::central::{self, Up};
    use crate::method::projections::LineageState;
    use crate::schema::central::{keys, CentralAction, CentralInstance};
    use crate::schema::events::{CheckRecorded, Event, Status};
    use crate::schema::manifest::CentralMode;

    /// A central-host observation as recorded.
    pub(crate) struct Observed {
        pub(crate) seq: u64,
        pub(crate) obs: CheckRecorded,
        /// The hard stop recorded with a difference, if one.
        pub(crate) stop: Option<u64>,
        /// Whether a query or call failed (exit 4).
        pub(crate) env_error: bool,
    }

    /// The RunInstances idempotency token of a lineage's central host: a
    /// rerun's launch answers with the first one.
    fn client_token(l: &LineageState) -> String {
        let h = blake3::hash(format!("benchledger central {}", l.frozen.lineage_key).as_bytes());
        format!("benchledger-central-{}", &h.to_hex()[..32])
    }

    /// The host `action` points at, observed once it left `pending`.
    fn observe(
        l: &LineageState,
        session: &Session,
        plan: &Up,
    ) -> (
        CentralAction,
        String,
        Result<Option<CentralInstance>, AwsError>,
    ) {
        let ready =
            Duration::from_secs(l.central_launch.as_ref().map_or(0, |c| c.ready_timeout_sec));
        let poll = Duration::from_millis(CENTRAL_READY_POLL_MS);
        match plan {
            Up::Check(id) => (
                CentralAction::Checked,
                id.clone(),
                ec2::central_by_id(session, id),
            ),
            Up::Adopt(id) => (
                CentralAction::Adopted,
                id.clone(),
                ec2::wait_running(session, id, ready, poll),
            ),
            Up::Launch => {
                let m = &l.frozen.manifest.public;
                let launch = l
                    .central_launch
                    .as_ref()
                    .expect("method::central::up launches only a frozen launch");
                match session.launch_central(m, launch, &client_token(l)) {
                    Ok(id) => {
                        let seen = ec2::wait_running(session, &id, ready, poll);
                        (CentralAction::Launched, id, seen)
                    }
                    Err(e) => (CentralAction::Launched, central::NO_HOST.into(), Err(e)),
                }
            }
        }
    }

    /// `central up` without the printing (also `run`'s central gate):
    /// refused (GATE-1, nothing appended) unless the session runs as the
    /// frozen identity; else the host launched, adopted or checked, and
    /// recorded; a difference from the frozen host also records the hard
    /// stop (VERDICT-3).
    pub(crate) fn up(
        cli: &Cli,
        wait: Duration,
        l: &LineageState,
        session: &Session,
        target: &Target,
        private: Option<&Private>,
    ) -> anyhow::Result<Observed> {
        queried_identity(session, l, private).map_err(identity_error)?;
        let m = &l.frozen.manifest.public;
        let tagged = match m.central.mode {
            CentralMode::Provision if central::recorded_host(l).is_none() => {
                ec2::tagged_central(session, m)?
            }
            _ => Vec::new(),
        };
        let plan = central::up(l, &tagged).map_err(Error::from)?;
        let (action, expected, seen) = observe(l, session, &plan);
        let env_error = seen.is_err();
        let obs = central::observation(
            m,
            action,
            &expected,
            seen.as_ref().map(Option::as_ref).map_err(|e| e.0.clone()),
            &target.region,
        );
        let mut events = vec![Event::CheckRecorded(obs.clone())];
        if let Some(stop) = central::mismatch_stop(l, &obs, env_error) {
            events.push(Event::LineageStopped(stop));
        }
        let done = append(cli, wait, events)?;
        Ok(Observed {
            seq: done[0].seq,
            obs,
            stop: done.get(1).map(|d| d.seq),
            env_error,
        })
    }

    /// `central down` without the printing: `None` when there is nothing to
    /// tear down (a reused host; already torn down).
    pub(crate) fn down(
        cli: &Cli,
        wait: Duration,
        l: &LineageState,
        session: &Session,
        target: &Target,
        private: Option<&Private>,
    ) -> anyhow::Result<Option<Observed>> {
        let m = &l.frozen.manifest.public;
        if !central::down(l).map_err(Error::from)? {
            return Ok(None);
        }
        queried_identity(session, l, private).map_err(identity_error)?;
        let mut ids: Vec<String> = ec2::tagged_central(session, m)?
            .into_iter()
            .map(|i| i.id)
            .collect();
        ids.extend(central::recorded_host(l).map(|(id, _)| id));
        ids.sort();
        ids.dedup();
        let answers: Vec<String> = ids
            .iter()
            .map(|id| match session.terminate_instance(id) {
                Ok(state) => format!("{id}: ok: {state}"),
                Err(e) => format!("{id}: error: {}", e.0),
            })
            .collect();
        let terminate = if answers.is_empty() {
            "nothing launched".to_string()
        } else {
            answers.join("; ")
        };
        let left = ec2::wait_gone(
            session,
            m,
            Duration::from_millis(CENTRAL_TEARDOWN_WAIT_MS),
            Duration::from_millis(CENTRAL_READY_POLL_MS),
        );
        let env_error = left.is_err();
        let id = ids.first().map_or(central::NO_HOST, String::as_str);
        let obs = central::teardown(l, id, &terminate, left.map_err(|e| e.0), &target.region);
        let done = append(cli, wait, vec![Event::CheckRecorded(obs.clone())])?;
        Ok(Some(Observed {
            seq: done[0].seq,
            obs,
            stop: None,
            env_error,
        }))
    }

    fn print(o: &Observed, a: &AwsLineageArgs, verb: &str) -> anyhow::Result<ExitCode> {
        if a.json {
            let mut v = serde_json::to_value(&o.obs)?;
            v["seq"] = json!(o.seq);
            v["stopped_seq"] = json!(o.stop);
            print_json(&v)?;
        } else {
            let d = &o.obs.details;
            outln!(
                "central {verb}: {} {} ({}): {}; recorded at seq {}",
                d.get(keys::ACTION).map_or("teardown", String::as_str),
                o.obs.target,
                [
                    keys::AMI,
                    keys::INSTANCE_TYPE,
                    keys::STATE,
                    keys::PRIVATE_IP,
                    keys::LIVE_COUNT
                ]
                .iter()
                .filter_map(|k| d.get(*k).map(|v| format!("{k} {v}")))
                .collect::<Vec<_>>()
                .join(", "),
                if o.obs.status == Status::Pass {
                    "holds"
                } else {
                    "does not hold"
                },
                o.seq
            )?;
            for k in [keys::MISMATCHES, keys::ERROR] {
                if let Some(v) = d.get(k) {
                    outln!("  {k}: {v}")?;
                }
            }
            if let Some(s) = o.stop {
                outln!("  lineage stopped (VERDICT-3) at seq {s}")?;
            }
        }
        Ok(if o.env_error {
            ExitCode::from(ExitClass::Environment.code())
        } else {
            exit(o.obs.status)
        })
    }

    /// `central up` / `central down`.
    pub fn run_central(
        cli: &Cli,
        cmd: &CentralCommand,
        wait: Duration,
    ) -> anyhow::Result<ExitCode> {
        let a = match cmd {
            CentralCommand::Up(a) | CentralCommand::Down(a) => a,
        };
        let l = lineage_state(cli, wait, a.lineage.as_deref())?;
        let private = optional_private(&l, &a.private)?;
        let (session, target) = open_session(&l, private.as_ref())?;
        match cmd {
            CentralCommand::Up(_) => {
                let o = up(cli, wait, &l, &session, &target, private.as_ref())?;
                print(&o, a, "up")
            }
            CentralCommand::Down(_) => {
                match down(cli, wait, &l, &session, &target, private.as_ref())? {
                    Some(o) => print(&o, a, "down"),
                    None => {
                        let why = match central::torn_down(&l) {
                        Some(seq) => format!("torn down at seq {seq}"),
                        None => format!(
                            "reused host {} is never terminated; cleanup audits exclude it by its frozen id",
                            l.frozen.manifest.public.central.instance_id.as_deref().unwrap_or("")
                        ),
                    };
                        if a.json {
                            print_json(
                                &json!({ "seq": null, "status": "pass", "nothing_to_do": why }),
                            )?;
                        } else {
                            outln!("central down: nothing to do: {why}")?;
                        }
                        Ok(ExitCode::SUCCESS)
                    }
                }
            }
        }
    }
}
