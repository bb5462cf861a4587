//! The CLI of gate observations and cleanup: `identity prove`, `quota
//! check`, `cleanup audit|monitor|terminate`, `check daemon-health|
//! sentinel|binary|config|residue`. Gathers facts (files, clock, network,
//! the AWS answers), builds the observation with `crate::checks` or
//! `crate::aws`, appends it; no rule lives here.
//!
//! Every check records its observation whether it holds or not. Exit codes:
//! 0 the check holds; 1 it ran and does not hold; 2 bad input (an unknown
//! lineage or group, a missing file); 3 refused by a rule (a private file
//! that does not match its commitments, a profile that does not exist);
//! 4 the environment failed (AWS unreachable: the failed attempt is still
//! recorded where its event has an error field). The ledger lock is not
//! held while the network is used.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};
use serde_json::json;

use crate::checks;
use crate::cli::decide_state as replay;
use crate::cli::{print_json, BadUsage, Cli};
use crate::error::{Error, ExitClass};
use crate::events::{CheckRecorded, CleanupAudited, Event, GroupRef, Status};
#[cfg(any(feature = "aws", test))]
use crate::ledger::Draft;
use crate::ledger::{Appended, Ledger};
use crate::manifest::Tier;
use crate::projections::LineageState;
use crate::timefmt::now_utc_ns;

/// Default pause between two monitor samples, in milliseconds.
pub const MONITOR_INTERVAL_MS_DEFAULT: u64 = 10_000;
/// Shortest pause between two monitor samples, in milliseconds.
pub const MONITOR_INTERVAL_MS_MIN: u64 = 100;
/// Longest pause between two monitor samples, in milliseconds.
pub const MONITOR_INTERVAL_MS_MAX: u64 = 3_600_000;
/// Default sample count of one monitor run.
pub const MONITOR_SAMPLES_DEFAULT: u64 = 360;
/// Most samples one monitor run takes.
pub const MONITOR_SAMPLES_MAX: u64 = 100_000;
/// The endpoint override of every AWS call (never read from a manifest).
pub const ENDPOINT_VAR: &str = "BENCHLEDGER_AWS_ENDPOINT_URL";
/// The instance metadata endpoint override (tests; default 169.254.169.254).
pub const IMDS_ENDPOINT_VAR: &str = "BENCHLEDGER_AWS_IMDS_ENDPOINT_URL";

// ---------------------------------------------------------------------------
// clap
// ---------------------------------------------------------------------------

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

/// `check` verbs: gate observations (GATE-3, GATE-4, GATE-7).
#[derive(Debug, Subcommand)]
pub enum CheckCommand {
    /// GET the daemon's health URL (bounded) and record check_recorded
    /// {daemon_health, group, url, http_status, latency_ms}.
    DaemonHealth(DaemonHealthArgs),
    /// One minimal request through the daemon to a route's frozen model
    /// (OpenAI POST /v1/chat/completions or Anthropic POST /v1/messages);
    /// records the HTTP status, request id and latency against the route's
    /// exact gate_target (a 429 never marks its siblings, PLANE-2).
    Sentinel(SentinelArgs),
    /// SHA-256 and ELF architecture of a BitRouter binary against the
    /// frozen software.bitrouter_binary_sha256 and bitrouter_arch (GATE-4).
    Binary(BinaryArgs),
    /// Run the pinned software's own validation command (after --) and
    /// record its exit code and output BLAKE3 against the config file's
    /// BLAKE3, the key `case start` looks up (GATE-7).
    Config(ConfigArgs),
    /// Count the live run-tagged sandboxes (AWS); passes at zero (GATE-3).
    Residue(ResidueArgs),
}

/// Arguments of `check daemon-health`.
#[derive(Debug, Args)]
pub struct DaemonHealthArgs {
    /// The lineage (optional when the ledger holds one).
    pub lineage: Option<String>,
    /// The group whose daemon is checked.
    #[arg(long)]
    pub group: String,
    /// The health URL (http:// only).
    #[arg(long)]
    pub url: String,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Route tiers on the command line.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum TierArg {
    /// The strong route.
    Strong,
    /// The balanced route.
    Balanced,
    /// The economy route.
    Economy,
}

impl From<TierArg> for Tier {
    fn from(t: TierArg) -> Tier {
        match t {
            TierArg::Strong => Tier::Strong,
            TierArg::Balanced => Tier::Balanced,
            TierArg::Economy => Tier::Economy,
        }
    }
}

/// Arguments of `check sentinel`.
#[derive(Debug, Args)]
pub struct SentinelArgs {
    /// The lineage (optional when the ledger holds one).
    pub lineage: Option<String>,
    /// The route whose frozen model is asked.
    #[arg(long, value_enum)]
    pub route: TierArg,
    /// The group the sentinel is taken for (its daemon's first port is used
    /// when --url is not given).
    #[arg(long)]
    pub group: Option<String>,
    /// The daemon's base URL (http://host:port[/v1]); default the
    /// manifest's daemon host and the group's first port.
    #[arg(long)]
    pub url: Option<String>,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `check binary`.
#[derive(Debug, Args)]
pub struct BinaryArgs {
    /// The lineage (optional when the ledger holds one).
    pub lineage: Option<String>,
    /// The binary.
    #[arg(long, value_name = "FILE")]
    pub path: PathBuf,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `check config`.
#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// The lineage (optional when the ledger holds one).
    pub lineage: Option<String>,
    /// The config validated (its BLAKE3 is the observation's target).
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
    /// The validation command of the pinned software, e.g.
    /// `tools/harbor/.venv/bin/python tools/harbor/validate_trial_config.py FILE`.
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

/// Arguments of `check residue`.
#[derive(Debug, Args)]
pub struct ResidueArgs {
    /// The lineage (optional when the ledger holds one).
    pub lineage: Option<String>,
    /// The group the batch is for.
    #[arg(long)]
    pub group: String,
    /// The private manifest (required for assume_role).
    #[arg(long, value_name = "FILE")]
    pub private: Option<PathBuf>,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

// ---------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------

fn exit(status: Status) -> ExitCode {
    match status {
        Status::Pass => ExitCode::SUCCESS,
        Status::Fail => ExitCode::from(ExitClass::CheckFailed.code()),
    }
}

/// The lineage's state, read under the lock; the lock is released on return.
fn lineage_state(cli: &Cli, wait: Duration, lineage: Option<&str>) -> anyhow::Result<LineageState> {
    let ledger = Ledger::open(&cli.ledger, wait)?;
    let state = replay(&ledger)?;
    Ok(state.lineage(lineage)?.clone())
}

fn require_group(l: &LineageState, group: &str) -> anyhow::Result<()> {
    if l.frozen
        .manifest
        .public
        .groups
        .iter()
        .any(|g| g.name == group)
    {
        Ok(())
    } else {
        Err(Error::input(format!(
            "group {group:?} is not in lineage {:?} (groups: {:?})",
            l.frozen.lineage,
            l.frozen.manifest.public.group_names()
        ))
        .into())
    }
}

/// Appends events in one atomic batch under the writer lock.
fn append(cli: &Cli, wait: Duration, events: Vec<Event>) -> anyhow::Result<Vec<Appended>> {
    let ledger = Ledger::open(&cli.ledger, wait)?;
    crate::cli::append_events(&ledger, &cli.actor, now_utc_ns(), events)
}

fn record_check(
    cli: &Cli,
    wait: Duration,
    obs: CheckRecorded,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    let status = obs.status;
    let done = append(cli, wait, vec![Event::CheckRecorded(obs.clone())])?;
    if as_json {
        print_json(&json!({
            "seq": done[0].seq,
            "check": obs.check,
            "target": obs.target,
            "group": obs.group,
            "status": obs.status,
            "details": obs.details,
        }))?;
    } else {
        let word = if status == Status::Pass {
            "holds"
        } else {
            "does not hold"
        };
        println!(
            "{:?} check of {} {word}; recorded at seq {}",
            obs.check, obs.target, done[0].seq
        );
        for (k, v) in &obs.details {
            println!("  {k:<18} {v}");
        }
    }
    Ok(exit(status))
}

// ---------------------------------------------------------------------------
// check
// ---------------------------------------------------------------------------

/// `check daemon-health | sentinel | binary | config | residue`.
pub fn run_check(cli: &Cli, cmd: &CheckCommand, wait: Duration) -> anyhow::Result<ExitCode> {
    match cmd {
        CheckCommand::DaemonHealth(a) => {
            let l = lineage_state(cli, wait, a.lineage.as_deref())?;
            require_group(&l, &a.group)?;
            let url =
                checks::parse_http_url(&a.url).map_err(|e| Error::input(format!("--url: {e}")))?;
            let outcome =
                checks::probe_health(&url, Duration::from_millis(checks::HEALTH_TIMEOUT_MS));
            let obs = checks::health_observation(&l.frozen.lineage, &a.group, &a.url, &outcome);
            record_check(cli, wait, obs, a.json)
        }
        CheckCommand::Sentinel(a) => {
            let l = lineage_state(cli, wait, a.lineage.as_deref())?;
            let m = &l.frozen.manifest.public;
            let tier: Tier = a.route.into();
            let route = m.route(tier).ok_or_else(|| {
                Error::input(format!(
                    "lineage {:?} has no {tier:?} route",
                    l.frozen.lineage
                ))
            })?;
            if let Some(g) = &a.group {
                require_group(&l, g)?;
            }
            let base = match (&a.url, &a.group) {
                (Some(u), _) => u.clone(),
                (None, Some(g)) => {
                    let port = m
                        .groups
                        .iter()
                        .find(|x| &x.name == g)
                        .and_then(|x| x.ports.first().copied())
                        .ok_or_else(|| Error::input(format!("group {g:?} has no port")))?;
                    checks::daemon_base_url(&m.central.daemon_host, port)
                }
                (None, None) => {
                    return Err(BadUsage(
                        "check sentinel needs --url or --group (whose daemon port is used)".into(),
                    )
                    .into())
                }
            };
            let req = checks::sentinel_request(route, &base, &m.harbor.local_api_key)
                .map_err(|e| Error::input(format!("--url: {e}")))?;
            let outcome =
                checks::send_sentinel(&req, Duration::from_millis(checks::SENTINEL_TIMEOUT_MS));
            let obs = checks::sentinel_observation(
                &l.frozen.lineage,
                a.group.as_deref(),
                route,
                &req.url,
                &outcome,
            );
            record_check(cli, wait, obs, a.json)
        }
        CheckCommand::Binary(a) => {
            let l = lineage_state(cli, wait, a.lineage.as_deref())?;
            let facts = checks::binary_facts(&a.path).map_err(Error::input)?;
            let obs = checks::binary_observation(
                &l.frozen.lineage,
                &a.path.display().to_string(),
                &facts,
                &l.frozen.manifest.public.software,
            );
            record_check(cli, wait, obs, a.json)
        }
        CheckCommand::Config(a) => {
            let l = lineage_state(cli, wait, a.lineage.as_deref())?;
            let b3 = checks::config_blake3(&a.config).map_err(Error::input)?;
            let run = checks::run_validation(
                &a.command,
                Duration::from_millis(checks::CONFIG_VALIDATE_TIMEOUT_MS),
            )
            .map_err(Error::input)?;
            // The file validated must be the file hashed: a config changed
            // while the command ran is refused (GATE-7: byte-identical).
            let after = checks::config_blake3(&a.config).map_err(Error::input)?;
            if after != b3 {
                return Err(Error::Refused {
                    rule: "GATE-7",
                    message: format!(
                        "{} changed while it was validated; nothing recorded",
                        a.config.display()
                    ),
                }
                .into());
            }
            let obs = checks::config_observation(
                &l.frozen.lineage,
                &b3,
                &a.config.display().to_string(),
                &a.command,
                &run,
            );
            record_check(cli, wait, obs, a.json)
        }
        CheckCommand::Residue(a) => residue(cli, a, wait),
    }
}

#[cfg(not(feature = "aws"))]
fn no_aws(verb: &str) -> anyhow::Error {
    Error::input(format!(
        "{verb} calls AWS and this build has no AWS support; build with `--features aws`"
    ))
    .into()
}

#[cfg(not(feature = "aws"))]
fn residue(_: &Cli, _: &ResidueArgs, _: Duration) -> anyhow::Result<ExitCode> {
    Err(no_aws("check residue"))
}

/// `identity prove`.
#[cfg(not(feature = "aws"))]
pub fn run_identity(_: &Cli, _: &IdentityCommand, _: Duration) -> anyhow::Result<ExitCode> {
    Err(no_aws("identity prove"))
}

/// `quota check`.
#[cfg(not(feature = "aws"))]
pub fn run_quota(_: &Cli, _: &QuotaCommand, _: Duration) -> anyhow::Result<ExitCode> {
    Err(no_aws("quota check"))
}

/// `cleanup audit | monitor | terminate`.
#[cfg(not(feature = "aws"))]
pub fn run_cleanup(_: &Cli, _: &CleanupCommand, _: Duration) -> anyhow::Result<ExitCode> {
    Err(no_aws("cleanup"))
}

// ---------------------------------------------------------------------------
// AWS verbs
// ---------------------------------------------------------------------------

/// What the ledger says about a group's cleanup: the instance ids it
/// tracked (run-tagged instances found by earlier audits and monitor
/// samples, the excluded central host left out) and its latest audit.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CleanupHistory {
    /// Instance ids seen for the group.
    pub tracked: BTreeSet<String>,
    /// The latest `cleanup_audited` of the group, with its seq.
    pub latest_audit: Option<(u64, CleanupAudited)>,
}

/// Reads a group's cleanup history from the verified log.
pub fn cleanup_history(ledger: &Ledger, group: &GroupRef) -> crate::Result<CleanupHistory> {
    let mut h = CleanupHistory::default();
    for v in ledger.records()? {
        let v = v?;
        match &v.decoded.event {
            Event::CleanupAudited(a) if &a.group == group => {
                let central = a.excluded_central_instance_id.as_deref();
                h.tracked.extend(
                    a.found
                        .iter()
                        .filter(|r| r.resource == "instance" && Some(r.id.as_str()) != central)
                        .map(|r| r.id.clone()),
                );
                h.latest_audit = Some((v.decoded.record.seq, a.clone()));
            }
            Event::MonitorSampled(s) if &s.group == group => {
                h.tracked.extend(s.instance_ids.iter().cloned());
            }
            _ => {}
        }
    }
    Ok(h)
}

#[cfg(feature = "aws")]
mod with_aws {
    use super::*;
    use crate::aws::{self, AwsError, Selector, Session, Target};
    use crate::cli_cases::parse_group;
    use crate::events::{IdentityChecked, LineageStopped, MonitorSampled, ResidueTerminated};
    use crate::manifest::PrivateFile;

    fn env_path(name: &str) -> Option<PathBuf> {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    }

    /// The endpoint overrides in force, checked.
    fn target(region: &str) -> anyhow::Result<Target> {
        let var = |name: &str| -> anyhow::Result<Option<String>> {
            match std::env::var(name) {
                Ok(v) if !v.is_empty() => Ok(Some(aws::check_endpoint(name, &v)?)),
                Ok(_) | Err(std::env::VarError::NotPresent) => Ok(None),
                Err(std::env::VarError::NotUnicode(_)) => {
                    Err(Error::input(format!("{name}: not utf-8")).into())
                }
            }
        };
        Ok(Target {
            region: region.to_string(),
            endpoint: var(ENDPOINT_VAR)?,
            imds_endpoint: var(IMDS_ENDPOINT_VAR)?,
        })
    }

    /// The private file checked against the frozen commitments: its role
    /// ARN and commitment key.
    struct Private {
        role_arn: Option<String>,
        key: [u8; 32],
    }

    fn read_private(l: &LineageState, path: &PathBuf) -> anyhow::Result<Private> {
        let text = crate::cli::read_text(path)?;
        let source = path.display().to_string();
        crate::manifest::check_private(&l.frozen.manifest, &text, &source)?;
        let p: PrivateFile = toml::from_str(&text)
            .map_err(|e| Error::input(format!("{source}: {}", e.message())))?;
        Ok(Private {
            role_arn: p.aws.role_arn.clone(),
            key: crate::manifest::commitment_key(&p.commitment_key, &source)?,
        })
    }

    /// The session of the lineage's one selector.
    fn open_session(
        l: &LineageState,
        private: Option<&Private>,
    ) -> anyhow::Result<(Session, Target)> {
        let m = &l.frozen.manifest.public;
        let files = aws::ProfileFiles::locate(
            env_path("AWS_CONFIG_FILE"),
            env_path("AWS_SHARED_CREDENTIALS_FILE"),
            env_path("HOME"),
        );
        let selector = Selector::of(m, private.and_then(|p| p.role_arn.as_deref()), files)?;
        let target = target(&m.aws.region)?;
        let session = Session::open(&selector, &target)?;
        Ok((session, target))
    }

    fn ambient() -> Vec<String> {
        aws::ambient_variables_present(
            std::env::vars_os().filter_map(|(k, _)| k.into_string().ok()),
        )
    }

    /// The redacted principal the queries run as, after checking it is the
    /// frozen identity: in full with the private key, else by the redacted
    /// account (GATE-1: a query under another account proves nothing).
    fn queried_identity(
        session: &Session,
        l: &LineageState,
        private: Option<&Private>,
    ) -> Result<String, AwsError> {
        let id = session.caller_identity()?;
        let frozen = &l.frozen.manifest.private;
        let ok = match private {
            Some(p) => aws::judge_identity(&p.key, frozen, &id).status == Status::Pass,
            None => crate::manifest::redact_account(&id.account) == frozen.account.redacted,
        };
        if !ok {
            return Err(AwsError(format!(
                "GATE-1: the queries would run as {} ({}), not the frozen identity; run identity prove",
                crate::manifest::redact_arn(&id.arn),
                crate::manifest::redact_account(&id.account)
            )));
        }
        let forms = aws::principal_forms(&id.arn);
        Ok(crate::manifest::redact_arn(forms.last().unwrap_or(&id.arn)))
    }

    /// A failed identity check as an error: a mismatch is refused by GATE-1
    /// (exit 3, before any quota or EC2 call); a failed call is exit 4.
    fn identity_error(e: AwsError) -> Error {
        match e.0.strip_prefix("GATE-1: ") {
            Some(m) => Error::Refused {
                rule: "GATE-1",
                message: m.to_string(),
            },
            None => e.into(),
        }
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
        let ambient = ambient();
        let (session, target) = open_session(&l, Some(&private))?;
        let outcome = session
            .caller_identity()
            .map(|id| aws::judge_identity(&private.key, &l.frozen.manifest.private, &id));
        let m = &l.frozen.manifest.public;
        let selector = aws::selector_label(m, &l.frozen.manifest.private);
        let obs: IdentityChecked =
            aws::identity_observation(&l.frozen.lineage, &selector, &target, ambient, &outcome);
        let ledger = Ledger::open(&cli.ledger, wait)?;
        let mut batch = ledger.batch(now_utc_ns())?;
        let draft = |event| Draft {
            actor: cli.actor.clone(),
            event,
            idempotency_key: None,
        };
        let checked = batch.push(draft(Event::IdentityChecked(obs.clone())))?;
        let stop = match &outcome {
            Ok(v) if v.status == Status::Fail => {
                Some(batch.push(draft(Event::LineageStopped(LineageStopped {
                    lineage: l.frozen.lineage.clone(),
                    rule: "GATE-1".into(),
                    reason: format!(
                        "the STS identity differs from the frozen manifest: {}",
                        v.error.as_deref().unwrap_or("")
                    ),
                    evidence_seq: Some(checked.seq),
                })))?)
            }
            _ => None,
        };
        batch.commit()?;
        drop(ledger);
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
                Ok(v) => println!(
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
                ),
                Err(e) => println!("identity not proven: {e}; recorded at seq {}", checked.seq),
            }
            if !obs.ambient_variables_ignored.is_empty() {
                println!(
                    "  ignored ambient variables: {}",
                    obs.ambient_variables_ignored.join(", ")
                );
            }
            if let Some(s) = stop {
                println!("  lineage stopped (GATE-1) at seq {}", s.seq);
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

    fn optional_private(l: &LineageState, p: &Option<PathBuf>) -> anyhow::Result<Option<Private>> {
        p.as_ref().map(|p| read_private(l, p)).transpose()
    }

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
        let obs = aws::quota_observation(m, &target.region, &outcome);
        let done = append(cli, wait, vec![Event::QuotaChecked(obs.clone())])?;
        if a.json {
            let mut v = serde_json::to_value(&obs)?;
            v["seq"] = json!(done[0].seq);
            v["central_live"] = json!(outcome.as_ref().ok().map(|n| n.central_live));
            print_json(&v)?;
        } else {
            println!(
                "quota {} {}: quota {} - used {} = available {} vs required {} vCPU: {}; recorded at seq {}",
                obs.quota_code,
                obs.region,
                obs.quota_vcpu,
                obs.used_vcpu,
                obs.available_vcpu,
                obs.required_vcpu,
                if obs.status == Status::Pass { "holds" } else { "does not hold" },
                done[0].seq
            );
        }
        Ok(match &outcome {
            Ok(_) => exit(obs.status),
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(ExitClass::Environment.code())
            }
        })
    }

    /// Audits a group and appends the audit; returns it with its seq.
    fn audit_and_record(
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
                let out = aws::audit(session, &aws::RunTags::of(m), &history.tracked);
                (id, out)
            }
            Err(e) => (String::from("unproven"), Err(e)),
        };
        let obs =
            aws::audit_observation(g, m, &session.region, &identity, &history.tracked, &outcome);
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
            .filter(|r| !aws::is_excluded(r, central))
            .count();
        println!(
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
        );
        for r in &a.found {
            let ex = if aws::is_excluded(r, central) {
                " (excluded: central host)"
            } else {
                ""
            };
            println!(
                "  {} {} {} found by {}{ex}",
                r.resource, r.id, r.state, r.found_by
            );
        }
        if let Some(e) = &a.error {
            println!("  error: {e}");
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
            let live = aws::live_sandboxes(&session, m)?;
            let ids: Vec<String> = live.iter().map(|(id, _)| id.clone()).collect();
            last = ids.len() as u64;
            peak = peak.max(last);
            let done = append(
                cli,
                wait,
                vec![Event::MonitorSampled(MonitorSampled {
                    group: g.clone(),
                    sandbox_count: last,
                    instance_ids: ids.clone(),
                })],
            )?;
            seqs.push(done[0].seq);
            eprintln!(
                "monitor {}/{} sample {n}/{}: {last} live sandbox(es){}{} (seq {})",
                g.lineage,
                g.group,
                a.max_samples,
                if ids.is_empty() { "" } else { ": " },
                ids.join(", "),
                done[0].seq
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
            println!(
                "{} samples of {}/{}: peak {peak}, last {last}",
                seqs.len(),
                g.lineage,
                g.group
            );
        }
        Ok(if a.until_zero && !reached_zero {
            ExitCode::from(ExitClass::CheckFailed.code())
        } else {
            ExitCode::SUCCESS
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
        let Some((audit_seq, audit)) = history.latest_audit else {
            return Err(Error::Refused {
                rule: "CLEAN-1",
                message: format!(
                    "no cleanup audit of {}/{} in the ledger: only resources an audit proved the run's are terminated; run cleanup audit first",
                    g.lineage, g.group
                ),
            }
            .into());
        };
        if let Some(e) = &audit.error {
            return Err(Error::Refused {
                rule: "CLEAN-1",
                message: format!(
                    "the latest audit of {}/{} (seq {audit_seq}) could not run ({e}); run cleanup audit again",
                    g.lineage, g.group
                ),
            }
            .into());
        }
        let central = audit.excluded_central_instance_id.as_deref();
        let plan = aws::termination_plan(&audit.found, central);
        if !a.confirm {
            if a.json {
                print_json(&json!({ "audit_seq": audit_seq, "plan": plan }))?;
            } else {
                println!(
                    "plan from audit seq {audit_seq}: {} resource(s)",
                    plan.len()
                );
                for r in &plan {
                    println!(
                        "  {} {} {} found by {}",
                        r.resource, r.id, r.state, r.found_by
                    );
                }
            }
            return Err(BadUsage(
                "cleanup terminate changes AWS resources; nothing was done: pass --confirm".into(),
            )
            .into());
        }
        let private = optional_private(&l, &a.private)?;
        let (session, _) = open_session(&l, private.as_ref())?;
        // The calls run as the frozen identity, or not at all.
        queried_identity(&session, &l, private.as_ref()).map_err(identity_error)?;
        let mut record = |t: &aws::Termination| -> crate::Result<()> {
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
            &session,
            &plan,
            Duration::from_millis(aws::TERMINATE_WAIT_MS),
            &mut record,
        )?;
        let (seq, after) = audit_and_record(cli, wait, &l, &group, &session, private.as_ref())?;
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
            println!(
                "{} call(s) made from audit seq {audit_seq}; audit again:",
                calls.len()
            );
            print_audit(seq, &after, false)?;
        }
        Ok(audit_exit(&after))
    }

    pub(super) fn residue(cli: &Cli, a: &ResidueArgs, wait: Duration) -> anyhow::Result<ExitCode> {
        let l = lineage_state(cli, wait, a.lineage.as_deref())?;
        require_group(&l, &a.group)?;
        let private = optional_private(&l, &a.private)?;
        let (session, target) = open_session(&l, private.as_ref())?;
        let m = &l.frozen.manifest.public;
        let (identity, outcome) = match queried_identity(&session, &l, private.as_ref()) {
            Ok(id) => (
                id,
                aws::live_sandboxes(&session, m)
                    .map(|v| v.into_iter().map(|(id, _)| id).collect::<Vec<_>>())
                    .map_err(|e| e.0),
            ),
            Err(e) => ("unproven".to_string(), Err(e.0)),
        };
        let failed = outcome.is_err();
        let obs = checks::residue_observation(
            &l.frozen.lineage,
            &a.group,
            &format!("{}={}", m.tags.run_key, m.tags.run_value),
            &target.region,
            &identity,
            &outcome,
        );
        let code = record_check(cli, wait, obs, a.json)?;
        Ok(if failed {
            ExitCode::from(ExitClass::Environment.code())
        } else {
            code
        })
    }
}

#[cfg(feature = "aws")]
pub use with_aws::{run_cleanup, run_identity, run_quota};

#[cfg(feature = "aws")]
fn residue(cli: &Cli, a: &ResidueArgs, wait: Duration) -> anyhow::Result<ExitCode> {
    with_aws::residue(cli, a, wait)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{FoundResource, MonitorSampled};
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Check {
        #[command(subcommand)]
        c: CheckCommand,
    }

    #[derive(Debug, Parser)]
    struct Cleanup {
        #[command(subcommand)]
        c: CleanupCommand,
    }

    #[test]
    fn check_config_takes_the_command_after_the_separator() {
        let p = Check::try_parse_from([
            "check",
            "config",
            "lin",
            "--config",
            "t.json",
            "--",
            "python",
            "validate.py",
            "--strict",
        ])
        .unwrap();
        let CheckCommand::Config(a) = p.c else {
            panic!()
        };
        assert_eq!(a.lineage.as_deref(), Some("lin"));
        assert_eq!(a.command, ["python", "validate.py", "--strict"]);
        assert!(Check::try_parse_from(["check", "config", "--config", "t.json"]).is_err());
    }

    #[test]
    fn sentinel_route_is_a_tier() {
        let p = Check::try_parse_from(["check", "sentinel", "--route", "economy", "--group", "r1"])
            .unwrap();
        let CheckCommand::Sentinel(a) = p.c else {
            panic!()
        };
        assert_eq!(Tier::from(a.route), Tier::Economy);
        assert!(Check::try_parse_from(["check", "sentinel", "--route", "cheap"]).is_err());
    }

    #[test]
    fn monitor_defaults_are_the_named_constants() {
        let p = Cleanup::try_parse_from(["cleanup", "monitor", "r1"]).unwrap();
        let CleanupCommand::Monitor(a) = p.c else {
            panic!()
        };
        assert_eq!(a.interval, MONITOR_INTERVAL_MS_DEFAULT as f64 / 1000.0);
        assert_eq!(a.max_samples, MONITOR_SAMPLES_DEFAULT);
        assert!(!a.until_zero);
        const { assert!(MONITOR_SAMPLES_DEFAULT <= MONITOR_SAMPLES_MAX) };
        assert!((MONITOR_INTERVAL_MS_MIN..=MONITOR_INTERVAL_MS_MAX)
            .contains(&MONITOR_INTERVAL_MS_DEFAULT));
    }

    fn found(resource: &str, id: &str) -> FoundResource {
        FoundResource {
            resource: resource.into(),
            id: id.into(),
            state: "running".into(),
            found_by: "run_tag".into(),
        }
    }

    fn audited(group: &GroupRef, found: Vec<FoundResource>, central: Option<&str>) -> Event {
        Event::CleanupAudited(CleanupAudited {
            group: group.clone(),
            region: "us-east-1".into(),
            identity: "arn:…".into(),
            filters: vec![],
            tracked_instance_ids: vec![],
            found,
            excluded_central_instance_id: central.map(str::to_string),
            status: Status::Fail,
            error: None,
        })
    }

    // rule CLEAN-1: the tracked ids are the run's instances found by earlier
    // audits and monitor samples of the same group (never the central host).
    #[test]
    fn cleanup_history_tracks_instances_of_the_group_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger");
        let (ledger, _) = Ledger::create(&path, Duration::from_secs(5), [1; 16], "t", 1).unwrap();
        let g = GroupRef {
            lineage: "l".into(),
            group: "r1".into(),
        };
        let other = GroupRef {
            lineage: "l".into(),
            group: "r2".into(),
        };
        let events = vec![
            audited(
                &g,
                vec![
                    found("instance", "i-a"),
                    found("volume", "vol-1"),
                    found("instance", "i-central"),
                ],
                Some("i-central"),
            ),
            Event::MonitorSampled(MonitorSampled {
                group: g.clone(),
                sandbox_count: 1,
                instance_ids: vec!["i-b".into()],
            }),
            Event::MonitorSampled(MonitorSampled {
                group: other.clone(),
                sandbox_count: 1,
                instance_ids: vec!["i-x".into()],
            }),
            audited(&other, vec![found("instance", "i-y")], None),
            audited(&g, vec![], Some("i-central")),
        ];
        let drafts: Vec<Draft> = events
            .into_iter()
            .map(|event| Draft {
                actor: "t".into(),
                event,
                idempotency_key: None,
            })
            .collect();
        let done = ledger.append(&drafts, 2).unwrap();
        let h = cleanup_history(&ledger, &g).unwrap();
        assert_eq!(h.tracked, ["i-a".to_string(), "i-b".to_string()].into());
        let (seq, latest) = h.latest_audit.unwrap();
        assert_eq!(seq, done[4].seq);
        assert!(latest.found.is_empty());
        let none = cleanup_history(
            &ledger,
            &GroupRef {
                lineage: "l".into(),
                group: "control".into(),
            },
        )
        .unwrap();
        assert_eq!(none, CleanupHistory::default());
    }
}
