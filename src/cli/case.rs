//! `case render-config | start | refusal | invalidate`: one case identity's
//! TrialConfig, its launch through every gate, and the evidence that ends it
//! without a result.

use crate::cli::out::outln;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};
use serde_json::json;

use crate::cli::common::*;
use crate::cli::Cli;
use crate::error::Error;
use crate::log::ledger::{Appended, Draft, Ledger};
use crate::method::decide::CaseStart;
use crate::method::projections::LineageState;
use crate::schema::events::{ArtifactRecorded, CaseProcessExited, InvalidReason, RefusalClass};
use crate::schema::events::{CaseRef, Event, GroupRef};
use crate::schema::manifest::ManifestFile;
use crate::schema::time::now_utc_ns;
use std::io::Write;
use std::process::{Command as Process, Stdio};
use std::time::Instant;

/// `case` verbs. CASE is `TASK/TRIAL`, or `TASK/TRIAL/replacement-01`.
#[derive(Debug, Subcommand)]
pub enum CaseCommand {
    /// Write the one-case Harbor TrialConfig (Terminus 2, EC2, daemon
    /// api_base, tags) rendered from the frozen manifest, and record its hash.
    RenderConfig(RenderArgs),
    /// Start a case: in one locked decide-and-append, refuse (exit 3, rule
    /// named, nothing appended) unless every rule holds; then, after
    /// `case_started` is durable, run CMD and record how it exited.
    Start(CaseStartArgs),
    /// Record sanitized HTTP 403 evidence of a started case in one of the
    /// two security-policy skip classes (CASE-6).
    Refusal(RefusalArgs),
    /// Make a started case without a TrialResult terminal_invalid on cited
    /// Harbor or process evidence (CASE-3, CASE-8); it is never relaunched.
    Invalidate(InvalidateArgs),
}

/// Arguments of `case render-config`.
#[derive(Debug, Args)]
pub struct RenderArgs {
    /// The group: `LINEAGE/GROUP`, or `GROUP` when the ledger holds one lineage.
    pub group: String,
    /// The case (`TASK/TRIAL[/replacement-01]`).
    pub case: String,
    /// Where to write it (default: stdout, nothing recorded).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Print one JSON document on stdout (path and hash).
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `case start`.
#[derive(Debug, Args)]
pub struct CaseStartArgs {
    /// The group: `LINEAGE/GROUP`, or `GROUP` when the ledger holds one lineage.
    pub group: String,
    /// The case (`TASK/TRIAL[/replacement-01]`).
    pub case: String,
    /// The TrialConfig to launch (its BLAKE3 must equal a validated one,
    /// GATE-7); default: the config rendered from the frozen manifest.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Where the command's output goes (default `<group out_dir>/<trial
    /// name>.log`; `--log` is the older spelling).
    #[arg(long, short = 'o', value_name = "FILE", alias = "log")]
    pub out: Option<PathBuf>,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
    /// The command to run after `case_started` is durable, e.g.
    /// `harbor trial start -c CONFIG`.
    #[arg(last = true)]
    pub command: Vec<String>,
}

/// Arguments of `case refusal`.
#[derive(Debug, Args)]
pub struct RefusalArgs {
    /// The group: `LINEAGE/GROUP`, or `GROUP` when the ledger holds one lineage.
    pub group: String,
    /// The case (`TASK/TRIAL[/replacement-01]`).
    pub case: String,
    /// The normalized class of the refusal.
    #[arg(long, value_enum)]
    pub class: ClassArg,
    /// The HTTP status of the refused call (only 403 qualifies, CASE-6).
    #[arg(long)]
    pub http_status: u16,
    /// The sanitized evidence file (its BLAKE3 is recorded, the file is
    /// scanned for credentials).
    #[arg(long, value_name = "FILE")]
    pub evidence: PathBuf,
    /// The refused request's persisted id, if known.
    #[arg(long)]
    pub request_id: Option<String>,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// The two skip classes (CASE-6).
#[derive(Debug, Clone, Copy, ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum ClassArg {
    /// The provider refused on policy grounds.
    ProviderPolicyRefusal,
    /// A network security policy denied the call.
    NetworkSecurityPolicyDenied,
}

/// Arguments of `case invalidate`.
#[derive(Debug, Args)]
pub struct InvalidateArgs {
    /// The group: `LINEAGE/GROUP`, or `GROUP` when the ledger holds one lineage.
    pub group: String,
    /// The case (`TASK/TRIAL[/replacement-01]`).
    pub case: String,
    /// Why the case ended without a valid TrialResult.
    #[arg(long, value_enum)]
    pub reason: ReasonArg,
    /// The Harbor or process evidence (e.g. a listing of the trial
    /// directory without result.json, the process log).
    #[arg(long, value_name = "FILE")]
    pub evidence: PathBuf,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Typed reasons of `case invalidate` (CASE-3).
#[derive(Debug, Clone, Copy, ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum ReasonArg {
    /// The sandbox environment disconnected.
    EnvironmentDisconnect,
    /// The verifier never produced a result.
    MissingVerifierResult,
    /// Harbor's output is corrupt or incomplete.
    CorruptOutput,
    /// The agent raised a generic exception.
    AgentException,
    /// The controller crashed after `started`; Harbor left no result.
    ControllerCrash,
}

/// `case render-config | start`.
pub fn run_case(cli: &Cli, cmd: &CaseCommand, wait: Duration) -> anyhow::Result<ExitCode> {
    match cmd {
        CaseCommand::RenderConfig(a) => {
            let case = parse_case(&a.case)?;
            let Some(out) = &a.out else {
                let (lineage, group) = parse_group(&a.group);
                let ledger = Ledger::open(&cli.ledger, wait)?;
                let state = decide_state(&ledger)?;
                // An identity that can never start gets no config (LINEAGE-1,
                // CASE-8, CASE-6, VERDICT-3).
                crate::method::decide::render_identity(&state, lineage.as_deref(), &group, &case)?;
                let l = state.lineage(lineage.as_deref())?;
                let r = crate::method::trial_config::render_frozen(l, &group, &case)?;
                crate::cli::out::Out.write_all(&r.bytes)?;
                return Ok(ExitCode::SUCCESS);
            };
            let r = render_config(cli, wait, &a.group, &case, out)?;
            if a.json {
                print_json(
                    &json!({ "path": out.display().to_string(), "blake3": r.blake3, "seq": r.seq }),
                )?;
            } else {
                outln!(
                    "wrote {} (blake3 {}) recorded at seq {}",
                    out.display(),
                    r.blake3,
                    r.seq
                )?;
            }
            Ok(ExitCode::SUCCESS)
        }
        CaseCommand::Start(a) => start(cli, a, wait),
        CaseCommand::Refusal(a) => run_refusal(cli, a, wait),
        CaseCommand::Invalidate(a) => run_invalidate(cli, a, wait),
    }
}

/// A rendered TrialConfig, written and recorded.
pub(crate) struct RenderedConfig {
    /// BLAKE3 of its bytes.
    pub(crate) blake3: String,
    /// The seq of its `artifact_recorded`.
    pub(crate) seq: u64,
}

/// `case render-config -o FILE`: renders the case's TrialConfig from the
/// frozen manifest, writes it and records its hash.
pub(crate) fn render_config(
    cli: &Cli,
    wait: Duration,
    group_spec: &str,
    case: &CaseRef,
    out: &Path,
) -> anyhow::Result<RenderedConfig> {
    let (lineage, group) = parse_group(group_spec);
    let ledger = Ledger::open(&cli.ledger, wait)?;
    let state = decide_state(&ledger)?;
    crate::method::decide::render_identity(&state, lineage.as_deref(), &group, case)?;
    let l = state.lineage(lineage.as_deref())?;
    let r = crate::method::trial_config::render_frozen(l, &group, case)?;
    std::fs::write(out, &r.bytes).map_err(|e| Error::io(format!("write {}", out.display()), e))?;
    let event = Event::ArtifactRecorded(ArtifactRecorded {
        group: Some(GroupRef {
            lineage: l.frozen.lineage.clone(),
            group: group.clone(),
        }),
        role: "trial_config".into(),
        path: out.display().to_string(),
        bytes: r.bytes.len() as u64,
        blake3: r.blake3.clone(),
    });
    let draft = Draft {
        actor: cli.actor.clone(),
        event,
        idempotency_key: None,
    };
    let done = ledger.append(&[draft], now_utc_ns())?;
    announce(&done);
    Ok(RenderedConfig {
        blake3: r.blake3,
        seq: done[0].seq,
    })
}

/// Where a launched command's output goes by default: the group's frozen
/// output directory, one file per trial.
pub(crate) fn default_log_path(m: &ManifestFile, group: &str, trial_name: &str) -> PathBuf {
    let out = m
        .groups
        .iter()
        .find(|g| g.name == group)
        .map(|g| g.out_dir.clone())
        .unwrap_or_default();
    PathBuf::from(out).join(format!("{trial_name}.log"))
}

/// Appends the launched command's end (CASE-8: never a terminal state on
/// its own).
pub(crate) fn record_exit(
    cli: &Cli,
    wait: Duration,
    group: GroupRef,
    case: &CaseRef,
    exited: &Exited,
    log_path: &Path,
) -> anyhow::Result<Appended> {
    let event = Event::CaseProcessExited(CaseProcessExited {
        group,
        case: case.clone(),
        exit_code: exited.exit_code,
        signal: exited.signal,
        duration_ms: exited.duration_ms,
        log_path: log_path.display().to_string(),
        log_blake3: exited.log_blake3.clone(),
    });
    let ledger = Ledger::open(&cli.ledger, wait)?;
    let done = ledger.append(
        &[Draft {
            actor: cli.actor.clone(),
            event,
            idempotency_key: None,
        }],
        now_utc_ns(),
    )?;
    announce(&done);
    Ok(done[0])
}

/// What `case start` (and `run`) asks to start.
pub(crate) struct StartRequest<'a> {
    /// `LINEAGE/GROUP` or `GROUP`.
    pub(crate) group: &'a str,
    pub(crate) case: CaseRef,
    /// The TrialConfig to launch; default the frozen rendering.
    pub(crate) config: Option<&'a Path>,
    /// Where the command's output goes; default the group's out dir.
    pub(crate) log: Option<PathBuf>,
    /// The command recorded in `case_started` (run after it is durable).
    pub(crate) command: Vec<String>,
}

/// A case whose `case_started` is durable.
pub(crate) struct StartedCase {
    /// The `case_started` record.
    pub(crate) started: Appended,
    pub(crate) group: GroupRef,
    pub(crate) case: CaseRef,
    /// The frozen AWS selector for the child, ambient credentials removed.
    pub(crate) env: Vec<(String, Option<String>)>,
    /// Where the command's output goes.
    pub(crate) log_path: PathBuf,
    /// The command's deadline: the frozen launch timeout (RUN-4).
    pub(crate) timeout: Duration,
}

/// `case start`'s decision and append, under the writer lock: every rule
/// holds, or a refusal naming it and nothing appended (GATE-6). The lock is
/// released on return; a crash from here on leaves the case `started`.
pub(crate) fn start_case(
    cli: &Cli,
    wait: Duration,
    r: StartRequest<'_>,
) -> anyhow::Result<StartedCase> {
    start_case_with(cli, wait, r, |_| Ok((Vec::new(), ()))).map(|(s, ())| s)
}

/// What `start_case_with` knows once `decide` has accepted a start, before
/// its append.
pub(crate) struct Starting<'a> {
    pub(crate) group: &'a GroupRef,
    pub(crate) case: &'a CaseRef,
    /// The child's environment.
    pub(crate) env: &'a [(String, Option<String>)],
    /// Where the command's output goes.
    pub(crate) log_path: &'a Path,
    /// The start's time, ns since the epoch.
    pub(crate) now_utc_ns: u64,
}

/// `start_case`, with `then` called under the same lock once `decide` has
/// accepted the start: the events it returns are appended in the same
/// append as `case_started` (all or none), and what else it returns is
/// handed back. `run` spawns its gated launch there and records the launch
/// with the start (RUN-3): no crash can leave a started case whose launch
/// runs unrecorded.
pub(crate) fn start_case_with<T>(
    cli: &Cli,
    wait: Duration,
    r: StartRequest<'_>,
    then: impl FnOnce(&Starting<'_>) -> anyhow::Result<(Vec<Event>, T)>,
) -> anyhow::Result<(StartedCase, T)> {
    let (lineage, group) = parse_group(r.group);
    let case = r.case;
    // Everything below happens under the writer lock: replay, decide, append.
    let ledger = Ledger::open(&cli.ledger, wait)?;
    let state = decide_state(&ledger)?;
    let l = state.lineage(lineage.as_deref())?;
    let m = &l.frozen.manifest.public;
    // An unknown group or identity renders nothing; `decide` then refuses it
    // naming the rule (LINEAGE-1, CASE-8) before it looks at the config.
    let config_blake3 = match r.config {
        Some(path) => blake3_file(path)?.1,
        None => crate::method::trial_config::render_frozen(l, &group, &case)
            .map(|r| r.blake3)
            .unwrap_or_default(),
    };
    let trial_name = crate::schema::names::trial_name(&case.task, &group, &case);
    let log_path = r
        .log
        .unwrap_or_else(|| default_log_path(m, &group, &trial_name));
    let group_ref = GroupRef {
        lineage: l.frozen.lineage.clone(),
        group: group.clone(),
    };
    let env = child_env(l);
    let timeout = Duration::from_secs(
        l.plan
            .as_ref()
            .map_or(crate::limits::CASE_COMMAND_TIMEOUT_SEC_DEFAULT, |p| {
                p.launch.timeout_sec
            }),
    );
    let now = now_utc_ns();
    let cmd = CaseStart {
        lineage: lineage.clone(),
        group: group.clone(),
        case: case.clone(),
        trial_name,
        trial_config_blake3: config_blake3,
        command: r.command,
        now_utc_ns: now,
    };
    let events = crate::method::decide::case_start(&state, cmd)?;
    let key = format!("case-start:{}/{group}/{}", group_ref.lineage, case.label());
    let (also, held) = then(&Starting {
        group: &group_ref,
        case: &case,
        env: &env,
        log_path: &log_path,
        now_utc_ns: now,
    })?;
    let drafts: Vec<Draft> = events
        .into_iter()
        .map(|event| (event, Some(key.clone())))
        .chain(also.into_iter().map(|event| (event, None)))
        .map(|(event, idempotency_key)| Draft {
            actor: cli.actor.clone(),
            event,
            idempotency_key,
        })
        .collect();
    assert!(
        matches!(
            drafts.first().map(|d| &d.event),
            Some(Event::CaseStarted(_))
        ),
        "a start's first record is its case_started"
    );
    let started = ledger.append(&drafts, now)?;
    announce(&started);
    tracing::info!("case {} started at seq {}", case.label(), started[0].seq);
    Ok((
        StartedCase {
            started: started[0],
            group: group_ref,
            case,
            env,
            log_path,
            timeout,
        },
        held,
    ))
}

fn start(cli: &Cli, a: &CaseStartArgs, wait: Duration) -> anyhow::Result<ExitCode> {
    require_aws_gates("case start")?;
    let s = start_case(
        cli,
        wait,
        StartRequest {
            group: &a.group,
            case: parse_case(&a.case)?,
            config: a.config.as_deref(),
            log: a.out.clone(),
            command: a.command.clone(),
        },
    )?;
    // `started` is durable and the lock released while the command runs, so
    // other cases can start.
    let (started, case) = (s.started, &s.case);
    let mut out = json!({ "started_seq": started.seq, "started_hash": hex::encode(started.hash) });
    if a.command.is_empty() {
        if a.json {
            print_json(&out)?;
        } else {
            outln!("case {} started at seq {}", case.label(), started.seq)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let exited = run_command(cli, wait, &s, &a.command)?;
    let done = record_exit(cli, wait, s.group.clone(), case, &exited, &s.log_path)?;
    out["exit_code"] = json!(exited.exit_code);
    out["signal"] = json!(exited.signal);
    out["duration_ms"] = json!(exited.duration_ms);
    out["exited_seq"] = json!(done.seq);
    if a.json {
        print_json(&out)?;
    } else {
        outln!(
            "case {} started at seq {}; command exited {} after {} ms (recorded at seq {})",
            case.label(),
            started.seq,
            exited.exit_code.map_or_else(
                || format!("by signal {}", exited.signal.unwrap_or(0)),
                |c| format!("with {c}")
            ),
            exited.duration_ms,
            done.seq
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The frozen AWS selector for the child, and no ambient credentials or
/// endpoint that could silently win over it (GATE-1).
pub(crate) fn child_env(l: &LineageState) -> Vec<(String, Option<String>)> {
    let aws = &l.frozen.manifest.public.aws;
    let mut env: Vec<(String, Option<String>)> = [
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_SECURITY_TOKEN",
        "AWS_ENDPOINT_URL",
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
    ]
    .iter()
    .map(|k| (k.to_string(), None))
    .collect();
    if let Some(p) = &aws.profile {
        env.push(("AWS_PROFILE".into(), Some(p.clone())));
    }
    env.push(("AWS_REGION".into(), Some(aws.region.clone())));
    env.push(("AWS_DEFAULT_REGION".into(), Some(aws.region.clone())));
    env
}

/// How a launched command ended.
pub(crate) struct Exited {
    /// Its exit code, if it exited.
    pub(crate) exit_code: Option<i32>,
    /// The signal that ended it, if one did.
    pub(crate) signal: Option<i32>,
    /// How long it ran.
    pub(crate) duration_ms: u64,
    /// BLAKE3 of its log.
    pub(crate) log_blake3: String,
}

/// Runs `case start`'s command under its deadline (the frozen launch
/// timeout; a v1 lineage's default, RUN-4): past it the whole process group
/// is killed and the kill recorded.
fn run_command(
    cli: &Cli,
    wait: Duration,
    s: &StartedCase,
    command: &[String],
) -> anyhow::Result<Exited> {
    let t0 = Instant::now();
    let mut child = spawn_command(command, &s.env, &s.log_path)?;
    let pgid = child.id();
    let ended = crate::cli::proc::wait_bounded(&mut child, t0, s.timeout)
        .map_err(|e| Error::io(format!("run {:?}", command[0]), e))?;
    if ended.killed {
        let event = Event::CommandKilled(crate::schema::events::CommandKilled {
            group: s.group.clone(),
            case: Some(s.case.clone()),
            role: crate::schema::events::CommandRole::CaseCommand,
            argv: command.to_vec(),
            pgid,
            signal: crate::cli::proc::KILL_SIGNAL,
            deadline_ms: u64::try_from(s.timeout.as_millis()).unwrap_or(u64::MAX),
            ran_ms: u64::try_from(ended.ran.as_millis()).unwrap_or(u64::MAX),
        });
        announce(&crate::cli::common::append(cli, wait, vec![event])?);
    }
    exited_of(ended.status, ended.ran, &s.log_path)
}

/// Spawns a launched command with `env` applied, its output to `log_path`.
pub(crate) fn spawn_command(
    command: &[String],
    env: &[(String, Option<String>)],
    log_path: &Path,
) -> anyhow::Result<std::process::Child> {
    let mut p = launch_process(command, env, log_path)?;
    Ok(p.spawn()
        .map_err(|e| Error::io(format!("run {:?}", command[0]), e))?)
}

/// Spawns a launch behind its gate (RUN-3, `proc::GATE_SCRIPT`): the
/// process exists, with the pid, process group and start time the command
/// will have, but nothing of the command runs until the gate is opened. A program that cannot be
/// found is refused here, before anything is started.
pub(crate) fn spawn_gated(
    command: &[String],
    env: &[(String, Option<String>)],
    log_path: &Path,
    gate: &crate::cli::proc::GateSpec,
) -> anyhow::Result<crate::cli::proc::GatedChild> {
    let program = command.first().map(String::as_str).unwrap_or_default();
    if !program.is_empty() && !program_found(program) {
        return Err(Error::input(format!(
            "the launch program {program:?} is not an executable file (as a path or on PATH)"
        ))
        .into());
    }
    if let Some(dir) = gate.prefix.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::io(format!("create {}", dir.display()), e))?;
    }
    let mut p = launch_process(&gate.argv(command), env, log_path)?;
    p.stdin(Stdio::piped());
    let child = p
        .spawn()
        .map_err(|e| Error::io(format!("run {program:?} behind its gate"), e))?;
    Ok(crate::cli::proc::GatedChild::new(child))
}

/// Whether `program` names an executable file: a path as it is, a bare
/// name on `PATH` (as the shell's `exec` looks it up).
fn program_found(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        return executable(Path::new(program));
    }
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| executable(&d.join(program))))
}

/// The process of a launched command: its own process group, no stdin,
/// its output to `log_path`, `env` applied.
fn launch_process(
    command: &[String],
    env: &[(String, Option<String>)],
    log_path: &Path,
) -> anyhow::Result<Process> {
    if command.is_empty() {
        return Err(Error::input("the command to launch is empty".to_string()).into());
    }
    if let Some(parent) = log_path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| Error::io(format!("create {}", parent.display()), e))?;
    }
    let log = std::fs::File::create(log_path)
        .map_err(|e| Error::io(format!("create {}", log_path.display()), e))?;
    let mut p = Process::new(&command[0]);
    // Its own process group: a Ctrl-C at the operator's terminal reaches
    // `run`, which decides (stop launching, wait), never the launched case.
    std::os::unix::process::CommandExt::process_group(&mut p, 0);
    p.args(&command[1..])
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    for (k, v) in env {
        match v {
            Some(v) => p.env(k, v),
            None => p.env_remove(k),
        };
    }
    Ok(p)
}

/// How a launched command ended, with its log's hash.
pub(crate) fn exited_of(
    status: std::process::ExitStatus,
    ran: Duration,
    log_path: &Path,
) -> anyhow::Result<Exited> {
    use std::os::unix::process::ExitStatusExt;
    let (_, log_blake3) = blake3_file(log_path)?;
    Ok(Exited {
        exit_code: status.code(),
        signal: status.signal(),
        duration_ms: ran.as_millis() as u64,
        log_blake3,
    })
}

/// `case refusal`.
pub fn run_refusal(cli: &Cli, a: &RefusalArgs, wait: Duration) -> anyhow::Result<ExitCode> {
    let case = parse_case(&a.case)?;
    let (_, blake3) = hash_file(&a.evidence)?;
    let class = match a.class {
        ClassArg::ProviderPolicyRefusal => RefusalClass::ProviderPolicyRefusal,
        ClassArg::NetworkSecurityPolicyDenied => RefusalClass::NetworkSecurityPolicyDenied,
    };
    let ledger = Ledger::open(&cli.ledger, wait)?;
    let done = crate::cli::common::decide_and_append(&ledger, &cli.actor, now_utc_ns(), |s| {
        let g = group_ref(s, &a.group).map_err(|e| Error::input(e.to_string()))?;
        crate::method::decide::security_refusal(
            s,
            &g,
            &case,
            class,
            a.http_status,
            a.request_id.clone(),
            blake3,
        )
    })?;
    report_appended(&done, a.json, "refusal evidence recorded")?;
    Ok(ExitCode::SUCCESS)
}

/// `case invalidate`.
pub fn run_invalidate(cli: &Cli, a: &InvalidateArgs, wait: Duration) -> anyhow::Result<ExitCode> {
    let case = parse_case(&a.case)?;
    let reason = match a.reason {
        ReasonArg::EnvironmentDisconnect => InvalidReason::EnvironmentDisconnect,
        ReasonArg::MissingVerifierResult => InvalidReason::MissingVerifierResult,
        ReasonArg::CorruptOutput => InvalidReason::CorruptOutput,
        ReasonArg::AgentException => InvalidReason::AgentException,
        ReasonArg::ControllerCrash => InvalidReason::ControllerCrash,
    };
    let done = invalidate_case(cli, wait, &a.group, &case, reason, &a.evidence)?;
    report_appended(&done, a.json, "case terminal_invalid")?;
    Ok(ExitCode::SUCCESS)
}

/// `case invalidate`'s decision and append: a started case without a
/// result becomes terminal_invalid on the cited evidence file.
pub(crate) fn invalidate_case(
    cli: &Cli,
    wait: Duration,
    group: &str,
    case: &CaseRef,
    reason: InvalidReason,
    evidence: &PathBuf,
) -> anyhow::Result<Vec<Appended>> {
    let (path, blake3) = hash_file(evidence)?;
    let ledger = Ledger::open(&cli.ledger, wait)?;
    crate::cli::common::decide_and_append(&ledger, &cli.actor, now_utc_ns(), |s| {
        let g = group_ref(s, group).map_err(|e| Error::input(e.to_string()))?;
        crate::method::decide::case_invalidate(s, &g, case, reason, path, blake3)
    })
}
