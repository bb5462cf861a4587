//! `check daemon-health | sentinel | binary | config | residue`: gate
//! observations (GATE-3, GATE-4, GATE-7, residue), each recorded pass or
//! fail. The ledger lock is not held while the network is used.

use crate::cli::out::outln;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};
use serde_json::json;

use crate::cli::common::*;
use crate::cli::Cli;
use crate::error::Error;
use crate::gates::{checks, http};
use crate::method::projections::LineageState;
use crate::schema::events::CheckRecorded;
use crate::schema::events::{Event, Status};
use crate::schema::manifest::Tier;

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
    /// Run the lineage's frozen validator (binding.validator: its program's
    /// BLAKE3 checked first, then exactly its command) on a config and
    /// record its exit code and output BLAKE3 against the config file's
    /// BLAKE3, the key `case start` looks up (GATE-7, BIND-7).
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
    /// Look without recording: print what the check sees and append
    /// nothing (RUN-6). Only a recorded observation is a gate; a recorded
    /// failure before a wave stops the lineage (VERDICT-3).
    #[arg(long)]
    pub probe: bool,
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
    /// Look without recording: print what the check sees and append
    /// nothing (RUN-6). Only a recorded observation is a gate; a recorded
    /// failure before a wave stops the lineage (VERDICT-3).
    #[arg(long)]
    pub probe: bool,
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
    /// Optional: the command expected to run (after --); it must be the
    /// frozen validator's command for this config, or nothing runs (BIND-7).
    #[arg(last = true)]
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
    /// Look without recording: print what the check sees and append
    /// nothing (RUN-6). Only a recorded observation is a gate; a recorded
    /// failure before a wave stops the lineage (VERDICT-3).
    #[arg(long)]
    pub probe: bool,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// A gate observation as appended.
pub(crate) struct Recorded {
    pub(crate) seq: u64,
    pub(crate) obs: CheckRecorded,
}

/// Appends a gate observation.
pub(crate) fn append_check(
    cli: &Cli,
    wait: Duration,
    obs: CheckRecorded,
) -> anyhow::Result<Recorded> {
    let done = append(cli, wait, vec![Event::CheckRecorded(obs.clone())])?;
    Ok(Recorded {
        seq: done[0].seq,
        obs,
    })
}

fn print_check(r: &Recorded, as_json: bool) -> anyhow::Result<ExitCode> {
    print_observation(&r.obs, Some(r.seq), as_json)
}

/// A check as seen: recorded at `seq`, or a probe (RUN-6) when `None`.
fn print_observation(
    obs: &CheckRecorded,
    seq: Option<u64>,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    if as_json {
        let mut v = json!({
            "check": obs.check,
            "target": obs.target,
            "group": obs.group,
            "status": obs.status,
            "details": obs.details,
        });
        match seq {
            Some(seq) => v["seq"] = json!(seq),
            None => {
                v["probe"] = json!(true);
                v["recorded"] = json!(false);
            }
        }
        print_json(&v)?;
    } else {
        let word = if obs.status == Status::Pass {
            "holds"
        } else {
            "does not hold"
        };
        let how = seq.map_or_else(
            || "not recorded (a probe is no gate, RUN-6)".to_string(),
            |seq| format!("recorded at seq {seq}"),
        );
        let what = if seq.is_some() { "check" } else { "probe" };
        outln!(
            "{} {what} of {} {word}; {how}",
            obs.check.as_str(),
            obs.target
        )?;
        for (k, v) in &obs.details {
            outln!("  {k:<18} {v}")?;
        }
    }
    Ok(exit(obs.status))
}

fn record_check(
    cli: &Cli,
    wait: Duration,
    obs: CheckRecorded,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    print_check(&append_check(cli, wait, obs)?, as_json)
}

/// `check daemon-health`: GET the group's health URL and record it.
pub(crate) fn daemon_health(
    cli: &Cli,
    wait: Duration,
    l: &LineageState,
    group: &str,
    url: &str,
) -> anyhow::Result<Recorded> {
    append_check(cli, wait, observe_health(l, group, url)?)
}

/// What `check daemon-health` sees, not recorded.
fn observe_health(l: &LineageState, group: &str, url: &str) -> anyhow::Result<CheckRecorded> {
    require_group(l, group)?;
    let parsed = http::parse_http_url(url).map_err(|e| Error::input(format!("--url: {e}")))?;
    let outcome = checks::probe_health(&parsed, Duration::from_millis(checks::HEALTH_TIMEOUT_MS));
    Ok(checks::health_observation(
        &l.frozen.lineage,
        group,
        url,
        &outcome,
    ))
}

/// `check sentinel`: one minimal request through the daemon to the route's
/// frozen model, recorded against its exact gate target (PLANE-2).
pub(crate) fn sentinel(
    cli: &Cli,
    wait: Duration,
    l: &LineageState,
    tier: Tier,
    group: Option<&str>,
    url: Option<&str>,
) -> anyhow::Result<Recorded> {
    append_check(cli, wait, observe_sentinel(l, tier, group, url)?)
}

/// What `check sentinel` sees, not recorded.
fn observe_sentinel(
    l: &LineageState,
    tier: Tier,
    group: Option<&str>,
    url: Option<&str>,
) -> anyhow::Result<CheckRecorded> {
    let m = &l.frozen.manifest.public;
    let route = m.route(tier).ok_or_else(|| {
        Error::input(format!(
            "lineage {:?} has no {} route",
            l.frozen.lineage,
            tier.as_str()
        ))
    })?;
    if let Some(g) = group {
        require_group(l, g)?;
    }
    let base = match (url, group) {
        (Some(u), _) => u.to_string(),
        (None, Some(g)) => {
            let port = m
                .groups
                .iter()
                .find(|x| x.name == g)
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
    let outcome = checks::send_sentinel(&req, Duration::from_millis(checks::SENTINEL_TIMEOUT_MS));
    Ok(checks::sentinel_observation(
        &l.frozen.lineage,
        group,
        route,
        &req.url,
        &outcome,
    ))
}

/// A probe's answer (RUN-6): what the check saw, the note that nothing was
/// recorded, and the exit code the recorded check would have.
fn print_probe(obs: &CheckRecorded, as_json: bool) -> anyhow::Result<ExitCode> {
    print_observation(obs, None, as_json)
}

/// `check config` and `run`: validates `config` with the lineage's frozen
/// validator and appends the observation, pass or fail (GATE-7, BIND-7).
/// `expected`, when not empty, must be the frozen command for this config.
/// Refused (nothing runs, nothing is recorded) when the lineage has no
/// frozen validator (v1), the program's BLAKE3 is not the frozen one, or
/// the config changed while it ran.
pub(crate) fn validate_config(
    cli: &Cli,
    wait: Duration,
    l: &LineageState,
    config: &Path,
    expected: &[String],
) -> anyhow::Result<Recorded> {
    let validator = crate::method::gate_outcomes::frozen_validator(l)?;
    // The config first: a missing file is bad input whatever runs.
    checks::config_blake3(config).map_err(Error::input)?;
    if !expected.is_empty() {
        let frozen = checks::frozen_validator_argv(validator, config).map_err(Error::from)?;
        crate::method::gate_outcomes::validator_command(expected, &frozen)?;
    }
    let timeout = Duration::from_millis(checks::CONFIG_VALIDATE_TIMEOUT_MS);
    let obs = checks::validate_config(&l.frozen.lineage, validator, config, timeout)
        .map_err(Error::from)?;
    append_check(cli, wait, obs)
}

/// `check daemon-health | sentinel | binary | config | residue`.
pub fn run_check(cli: &Cli, cmd: &CheckCommand, wait: Duration) -> anyhow::Result<ExitCode> {
    match cmd {
        CheckCommand::DaemonHealth(a) => {
            let l = lineage_state(cli, wait, a.lineage.as_deref())?;
            if a.probe {
                return print_probe(&observe_health(&l, &a.group, &a.url)?, a.json);
            }
            print_check(&daemon_health(cli, wait, &l, &a.group, &a.url)?, a.json)
        }
        CheckCommand::Sentinel(a) => {
            let l = lineage_state(cli, wait, a.lineage.as_deref())?;
            if a.probe {
                let obs =
                    observe_sentinel(&l, a.route.into(), a.group.as_deref(), a.url.as_deref())?;
                return print_probe(&obs, a.json);
            }
            let r = sentinel(
                cli,
                wait,
                &l,
                a.route.into(),
                a.group.as_deref(),
                a.url.as_deref(),
            )?;
            print_check(&r, a.json)
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
            print_check(
                &validate_config(cli, wait, &l, &a.config, &a.command)?,
                a.json,
            )
        }
        CheckCommand::Residue(a) => residue(cli, a, wait),
    }
}

#[cfg(not(feature = "aws"))]
fn residue(_: &Cli, _: &ResidueArgs, _: Duration) -> anyhow::Result<ExitCode> {
    Err(no_aws("check residue"))
}

#[cfg(feature = "aws")]
fn residue(cli: &Cli, a: &ResidueArgs, wait: Duration) -> anyhow::Result<ExitCode> {
    with_aws::residue_aws(cli, a, wait)
}

#[cfg(feature = "aws")]
pub(crate) use with_aws::residue_check;

#[cfg(feature = "aws")]
mod with_aws {
    use super::*;

    use crate::error::ExitClass;

    use crate::cli::aws::*;
    use crate::gates::aws::{self, Session};
    use crate::gates::rules::{self, Target};

    pub fn residue_aws(cli: &Cli, a: &ResidueArgs, wait: Duration) -> anyhow::Result<ExitCode> {
        let l = lineage_state(cli, wait, a.lineage.as_deref())?;
        require_group(&l, &a.group)?;
        let private = optional_private(&l, &a.private)?;
        let (session, target) = open_session(&l, private.as_ref())?;
        if a.probe {
            let (obs, failed) = observe_residue(&l, &a.group, &session, &target, private.as_ref());
            let code = print_probe(&obs, a.json)?;
            return Ok(if failed {
                ExitCode::from(ExitClass::Environment.code())
            } else {
                code
            });
        }
        let (r, failed) =
            residue_check(cli, wait, &l, &a.group, &session, &target, private.as_ref())?;
        let code = print_check(&r, a.json)?;
        Ok(if failed {
            ExitCode::from(ExitClass::Environment.code())
        } else {
            code
        })
    }

    /// `check residue`: the live run-tagged sandboxes, recorded (GATE-3);
    /// also whether the query itself failed.
    pub(crate) fn residue_check(
        cli: &Cli,
        wait: Duration,
        l: &LineageState,
        group: &str,
        session: &Session,
        target: &Target,
        private: Option<&Private>,
    ) -> anyhow::Result<(Recorded, bool)> {
        let (obs, failed) = observe_residue(l, group, session, target, private);
        Ok((append_check(cli, wait, obs)?, failed))
    }

    /// What `check residue` sees, not recorded; whether the query failed.
    fn observe_residue(
        l: &LineageState,
        group: &str,
        session: &Session,
        target: &Target,
        private: Option<&Private>,
    ) -> (CheckRecorded, bool) {
        let m = &l.frozen.manifest.public;
        let (identity, outcome) = match queried_identity(session, l, private) {
            // RUN-1: the sandboxes of the group's running cases are theirs.
            Ok(id) => (
                id,
                aws::live_sandbox_instances(session, m)
                    .map(|live| {
                        let owned = crate::method::run_plan::running_trials(l, group);
                        rules::split_owned(m, &live, &owned)
                    })
                    .map_err(|e| e.0),
            ),
            Err(e) => ("unproven".to_string(), Err(e.0)),
        };
        let failed = outcome.is_err();
        let obs = rules::residue_observation(
            &l.frozen.lineage,
            group,
            &format!("{}={}", m.tags.run_key, m.tags.run_value),
            &target.region,
            &identity,
            &outcome,
        );
        (obs, failed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::cleanup::CleanupCommand;
    use crate::limits::{
        MONITOR_INTERVAL_MS_DEFAULT, MONITOR_INTERVAL_MS_MAX, MONITOR_INTERVAL_MS_MIN,
        MONITOR_SAMPLES_DEFAULT, MONITOR_SAMPLES_MAX,
    };
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
        // BIND-7: the command is optional; the frozen validator is what runs
        let p = Check::try_parse_from(["check", "config", "--config", "t.json"]).unwrap();
        let CheckCommand::Config(a) = p.c else {
            panic!()
        };
        assert!(a.command.is_empty());
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

    // rule PLANE-2: a 429 on one exact target fails that target's gate only,
    // once the observations are folded into the replayed state.
    #[test]
    fn a_429_moves_only_its_own_target_in_the_replayed_state() {
        use crate::method::projections::{At, State};
        use crate::schema::events::CheckKind;
        use crate::schema::manifest::{Route, RouteProtocol};
        use crate::testkit::http_server::{response, Server};
        let s = Server::start(|r| {
            let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
            match body["model"].as_str().unwrap() {
                "limited" => response(429, &[], br#"{"error":"rate"}"#),
                _ => response(200, &[], br#"{"id":"ok-1"}"#),
            }
        });
        let route = |tier: Tier, model: &str| Route {
            tier,
            provider: "p".into(),
            model: model.into(),
            protocol: RouteProtocol::Openai,
            credential_class: "api_key".into(),
            gate_target: format!("p:{model}"),
        };
        let mut state = State::default();
        let mut frozen = crate::testkit::examples::frozen();
        frozen.lineage = "l".into();
        state.apply(
            At { seq: 1, utc_ns: 1 },
            &Event::ManifestFrozenV2(Box::new(frozen)),
        );
        for (i, r) in [
            route(Tier::Balanced, "limited"),
            route(Tier::Economy, "sibling"),
        ]
        .iter()
        .enumerate()
        {
            let req = checks::sentinel_request(r, &s.url(), "k").unwrap();
            let out = checks::send_sentinel(&req, Duration::from_secs(5));
            let obs = checks::sentinel_observation("l", None, r, &req.url, &out);
            let at = At {
                seq: 2 + i as u64,
                utc_ns: 1,
            };
            state.apply(at, &Event::CheckRecorded(obs));
        }
        let gates = &state.lineages["l"].gates.checks;
        let get = |t: &str| {
            &gates[&crate::method::projections::CheckKey {
                kind: CheckKind::ProviderSentinel,
                group: None,
                target: t.to_string(),
            }]
                .status
        };
        assert_eq!(get("p:limited"), &Status::Fail);
        assert_eq!(get("p:sibling"), &Status::Pass);
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
}
