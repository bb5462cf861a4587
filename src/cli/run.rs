//! `benchledger run GROUP [LINEAGE]`: drives a group through the gates,
//! its launches, evidence, cleanup and seal. Every decision is
//! `method::run_plan::next_step` on the replayed ledger and the facts on
//! disk; every action goes through the verbs' own functions (the same
//! decide path as `case start`, `ingest harbor`, `group close`, ...), so a
//! rerun after a kill continues where the log says and never relaunches a
//! started identity (CASE-4).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, ExitCode};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use serde_json::json;

use crate::cli::case::{self, Exited, StartRequest};
use crate::cli::common::*;
use crate::cli::out::outln;
use crate::cli::progress::{RunProgress, RunStanding};
use crate::cli::receipts;
use crate::cli::Cli;
use crate::error::{Error, ExitClass};
use crate::gates::checks;
use crate::log::ledger::Ledger;
use crate::method::projections::LineageState;
use crate::method::run_plan::{self, EvidenceKind, Facts, GateId, Orphan, RunHistory, Step};
use crate::schema::events::{CaseRef, GroupRef, Status};
use crate::schema::names::trial_name;
use crate::schema::rule::Rule;
use crate::schema::time::now_utc_ns;
use crate::schema::verdict::VerdictStatus;

/// `run GROUP [LINEAGE]`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The group (`GROUP` or `LINEAGE/GROUP`).
    pub group: String,
    /// The lineage, when the ledger holds several.
    pub lineage: Option<String>,
    /// Print every gate's state and the next step; change nothing.
    #[arg(long)]
    pub plan: bool,
    /// One JSON document per step on stdout.
    #[arg(long)]
    pub json: bool,
    /// Terminate what the cleanup audit proves is the run's (CLEAN-2).
    #[arg(long)]
    pub terminate: bool,
    /// The base URL of the group's daemon (health, and sentinels unless
    /// --sentinel-url); default the frozen daemon host and the group's
    /// first port.
    #[arg(long, value_name = "URL")]
    pub daemon_url: Option<String>,
    /// The base URL the provider sentinels go through (GATE-3), e.g. a
    /// preflight daemon with the same routes, so that no sentinel request
    /// enters the group's traces ("sentinel request ids never enter a
    /// group's sets"); default the group's daemon.
    #[arg(long, value_name = "URL")]
    pub sentinel_url: Option<String>,
    /// The private manifest (the AWS gates need its commitments).
    #[arg(long, value_name = "FILE")]
    pub private: Option<PathBuf>,
    /// Sign the seal's checkpoint with this operator key file (one of the
    /// frozen `[signers] operators`, TRUST-1); read before anything runs.
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// Milliseconds between looks at the launched processes.
    #[arg(long, default_value_t = 200, value_name = "MS")]
    pub poll_ms: u64,
}

/// A launched process this run waits for.
struct Running {
    child: Child,
    group: GroupRef,
    log_path: PathBuf,
    started: Instant,
    /// The frozen `launch.timeout_sec`: past it the process is killed and
    /// its exit recorded (a signal, no result: CASE-3 makes it invalid).
    timeout: Duration,
}

/// What one `run` invocation remembers beyond the ledger.
struct Runner<'a> {
    cli: &'a Cli,
    wait: Duration,
    args: &'a RunArgs,
    /// The operator key the seal's checkpoint is signed with.
    key: Option<crate::log::tlog::SignerKey>,
    spec: String,
    group: String,
    running: BTreeMap<CaseRef, Running>,
    evidence_gathered: bool,
    audit_failed_here: bool,
    aws_recorded: bool,
    /// When this run last polled receipts (SETTLE-8: polls are spaced by
    /// the frozen `receipt_poll_sec`).
    last_poll_utc_ns: Option<u64>,
    /// Whether this run has collected the receipts the usage export carries.
    receipts_collected: bool,
    /// The group's `run` history as the last replay folded it (the step
    /// being done was planned from it; the receipt polls number their
    /// attempts by it).
    history: RunHistory,
    /// Set by the first Ctrl-C (or SIGTERM): launch nothing more.
    interrupted: Arc<AtomicBool>,
    /// The bar on stderr (a terminal only; never with `--json`).
    progress: RunProgress,
    /// When this run last sampled the run-tagged sandboxes, and whether a
    /// batch launched since (CLEAN-2: the peak is observed, not assumed).
    #[cfg(feature = "aws")]
    last_sample: Option<Instant>,
    #[cfg(feature = "aws")]
    sample_due: bool,
}

/// How often `run` samples the run-tagged sandboxes while its cases run
/// (and once after every batch it launches).
#[cfg(feature = "aws")]
const MONITOR_EVERY: Duration = Duration::from_secs(10);

/// Whether this build relies on recorded AWS observations.
fn aws_recorded() -> anyhow::Result<bool> {
    if cfg!(feature = "aws") {
        return Ok(false);
    }
    require_aws_gates("run")?;
    Ok(true)
}

/// Ctrl-C (SIGINT) or SIGTERM: the first sets the flag (`run` launches
/// nothing more, waits for its running cases and ingests them); a second
/// ends the process at once with exit 130, leaving them `started`, as a
/// kill would (a rerun continues, CASE-4).
fn interrupts() -> anyhow::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(signal, 130, Arc::clone(&flag))
            .map_err(|e| Error::io("install the Ctrl-C handler".to_string(), e))?;
        signal_hook::flag::register(signal, Arc::clone(&flag))
            .map_err(|e| Error::io("install the Ctrl-C handler".to_string(), e))?;
    }
    Ok(flag)
}

/// `run`.
pub fn run_run(cli: &Cli, a: &RunArgs, wait: Duration) -> anyhow::Result<ExitCode> {
    let spec = match &a.lineage {
        Some(l) if !a.group.contains('/') => format!("{l}/{}", a.group),
        _ => a.group.clone(),
    };
    let (_, group) = parse_group(&spec);
    let key = a
        .key
        .as_deref()
        .map(crate::cli::trust::read_signer_key)
        .transpose()?;
    let mut r = Runner {
        cli,
        wait,
        args: a,
        key,
        spec,
        group,
        running: BTreeMap::new(),
        evidence_gathered: false,
        audit_failed_here: false,
        aws_recorded: !a.plan && aws_recorded()?,
        last_poll_utc_ns: None,
        receipts_collected: false,
        history: RunHistory::default(),
        interrupted: interrupts()?,
        progress: RunProgress::new(&a.group, !a.json && !a.plan),
        #[cfg(feature = "aws")]
        last_sample: None,
        #[cfg(feature = "aws")]
        sample_due: false,
    };
    if a.plan {
        r.aws_recorded = !cfg!(feature = "aws");
        let plan = r.plan_now()?.0;
        return print_plan(&plan, a.json);
    }
    // TRUST-3 on the first replay, before anything runs, not at the seal
    // hours later.
    let mut unchecked_key = r.key.as_ref().map(crate::log::tlog::SignerKey::verifier);
    loop {
        r.reap()?;
        let (plan, l) = r.plan_now()?;
        if let Some(verifier) = unchecked_key.take() {
            crate::method::trust::check_seal_signer(&l, &verifier).map_err(|why| {
                Error::Refused {
                    rule: Rule::Trust3,
                    message: format!("--key: {why}; nothing was run"),
                }
            })?;
        }
        let next = serde_json::to_value(&plan.next)?;
        if a.json {
            print_json(&next)?;
        }
        r.progress.update(&RunStanding {
            done: plan.cases.done,
            total: plan.cases.total,
            running: plan.cases.running,
            left: plan.cases.left,
            step: next["step"].as_str().unwrap_or("?"),
            spend_micro_usd: plan.spend_micro_usd,
            limit_micro_usd: plan.spend_limit_micro_usd,
        });
        if let Some(code) = r.act(&l, plan.next)? {
            return Ok(code);
        }
    }
}

fn print_plan(plan: &run_plan::RunPlan, as_json: bool) -> anyhow::Result<ExitCode> {
    if as_json {
        print_json(&serde_json::to_value(plan)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!("{}: concurrency {}", plan.group, plan.concurrency)?;
    let c = plan.cases;
    outln!(
        "cases: {} total, {} done, {} running, {} left",
        c.total,
        c.done,
        c.running,
        c.left
    )?;
    outln!(
        "spend: {} of {} micro-USD",
        plan.spend_micro_usd,
        plan.spend_limit_micro_usd
    )?;
    for g in &plan.gates {
        outln!(
            "gate {:<18} {:<8} {:<40} {}",
            g.gate.name(),
            g.rule.to_string(),
            g.target,
            serde_json::to_string(&g.state)?
        )?;
    }
    outln!("next: {}", serde_json::to_string(&plan.next)?)?;
    Ok(ExitCode::SUCCESS)
}

/// The Harbor trial directories in the group's job directory, and those
/// with a `result.json`.
fn trial_dirs(job: &Path) -> anyhow::Result<(BTreeSet<String>, BTreeSet<String>)> {
    let (mut dirs, mut results) = (BTreeSet::new(), BTreeSet::new());
    let Ok(trials) = std::fs::read_dir(job) else {
        return Ok((dirs, results));
    };
    for trial in trials {
        let trial = trial?;
        if !trial.file_type()?.is_dir() {
            continue;
        }
        let name = trial.file_name().to_string_lossy().into_owned();
        if trial.path().join("result.json").is_file() {
            results.insert(name.clone());
        }
        dirs.insert(name);
    }
    Ok((dirs, results))
}

/// The group's Harbor job directory: the `trials_dir` of every TrialConfig
/// rendered for it, so it holds this group's trials and no other's.
fn job_dir(l: &LineageState, group: &str) -> PathBuf {
    let m = &l.frozen.manifest.public;
    m.groups.iter().find(|g| g.name == group).map_or_else(
        || PathBuf::from(&m.harbor.jobs_dir),
        |g| PathBuf::from(crate::method::trial_config::trials_dir(m, g)),
    )
}

/// The group's frozen output directory.
fn out_dir(l: &LineageState, group: &str) -> PathBuf {
    let m = &l.frozen.manifest.public;
    m.groups
        .iter()
        .find(|g| g.name == group)
        .map_or_else(|| PathBuf::from("."), |g| PathBuf::from(&g.out_dir))
}

fn group_ref(l: &LineageState, group: &str) -> GroupRef {
    GroupRef {
        lineage: l.frozen.lineage.clone(),
        group: group.to_string(),
    }
}

/// A run that cannot go on without the operator: exit 4, the reason.
#[derive(Debug, thiserror::Error)]
#[error("run {0}")]
struct RunBlocked(String);

impl Runner<'_> {
    /// Replays the ledger, folds the history, gathers the facts and asks
    /// the planner for the next step (the lock is released on return).
    fn plan_now(&mut self) -> anyhow::Result<(run_plan::RunPlan, LineageState)> {
        let (lineage, _) = parse_group(&self.spec);
        let ledger = Ledger::open(&self.cli.ledger, self.wait)?;
        let state = decide_state(&ledger)?;
        let l = state.lineage(lineage.as_deref())?.clone();
        let mut history = RunHistory::new(group_ref(&l, &self.group));
        for rec in ledger.records()? {
            let rec = rec?;
            history.apply(rec.decoded.record.seq, &rec.decoded.event);
        }
        drop(ledger);
        let (dirs, results) = trial_dirs(&job_dir(&l, &self.group))?;
        let running: BTreeSet<CaseRef> = self.running.keys().cloned().collect();
        let facts = Facts {
            now_utc_ns: now_utc_ns(),
            trial_dirs: &dirs,
            results: &results,
            running_here: &running,
            history: &history,
            stop_launching: self.interrupted.load(Ordering::Relaxed),
            terminate: self.args.terminate,
            evidence_gathered: self.evidence_gathered,
            audit_failed_here: self.audit_failed_here,
            last_poll_utc_ns: self.last_poll_utc_ns,
            receipts_collected: self.receipts_collected,
            aws_recorded: self.aws_recorded,
        };
        let plan = run_plan::next_step(&state, lineage.as_deref(), &self.group, &facts)?;
        self.history = history;
        Ok((plan, l))
    }

    fn say(&self, line: &str) {
        if !self.args.json {
            self.progress.println(&format!("benchledger run: {line}"));
        }
    }

    /// Does one step; `Some(code)` ends the run.
    fn act(&mut self, l: &LineageState, step: Step) -> anyhow::Result<Option<ExitCode>> {
        match step {
            Step::OpenGroup => Err(RunBlocked(format!(
                "needs {} opened: record its daemon start with `benchledger group open` (GATE-4), then run again",
                self.spec
            ))
            .into()),
            Step::TakeGates { gates } => self.take_gates(l, &gates).map(|()| None),
            Step::Stop {
                rule,
                reason,
                evidence_seq,
            } => {
                self.say(&format!("hard stop {rule}: {reason}"));
                let events = run_plan::hard_stop(l, rule, &reason, evidence_seq);
                if !events.is_empty() {
                    append(self.cli, self.wait, events)?;
                }
                Ok(None)
            }
            Step::Launch { cases } => {
                for c in cases {
                    self.launch(l, c)?;
                }
                #[cfg(feature = "aws")]
                {
                    self.sample_due = true;
                }
                Ok(None)
            }
            Step::IngestResults { cases } => {
                self.say(&format!("ingesting {} Harbor result(s)", cases.len()));
                let job = job_dir(l, &self.group);
                crate::cli::ingest::ingest_harbor_dir(self.cli, self.wait, &self.spec, &job)?;
                Ok(None)
            }
            Step::Invalidate { orphans } => self.invalidate(l, &orphans).map(|()| None),
            Step::Wait { until_utc_ns, .. } => {
                self.sample_if_due(l)?;
                self.wait_for_exits(until_utc_ns).map(|()| None)
            }
            Step::Paused => Err(RunBlocked(format!(
                "was interrupted: nothing more was launched, and every case it started has ended and is recorded; to continue, run `benchledger run {}` again",
                self.spec
            ))
            .into()),
            Step::Close => {
                self.wait_all()?;
                self.say(&format!("closing {}", self.spec));
                crate::cli::group::close_group(self.cli, self.wait, &self.spec)?;
                Ok(None)
            }
            Step::GatherEvidence => self.gather_evidence(l).map(|()| None),
            Step::PollReceipts { request_ids } => self.poll(l, &request_ids).map(|()| None),
            Step::CollectReceipts { request_ids } => {
                let found = receipts::collect(self.cli, self.wait, &self.spec, l, &self.group, &request_ids)?;
                self.receipts_collected = true;
                self.say(&format!(
                    "the attempt budget is spent: {found} receipt(s) of {} pending request(s) collected from the usage export",
                    request_ids.len()
                ));
                Ok(None)
            }
            Step::WaitUntil { until_utc_ns, why } => {
                self.say(&format!("waiting: {why}"));
                let left = until_utc_ns.saturating_sub(now_utc_ns());
                std::thread::sleep(Duration::from_nanos(left.min(1_000_000_000)));
                Ok(None)
            }
            Step::Audit | Step::Terminate { .. } => self.cleanup(l, &step).map(|()| None),
            Step::Seal => {
                let s = crate::cli::group::seal_group(self.cli, self.wait, &self.spec, self.key.as_ref())?;
                self.say(&format!("sealed {}: {}", self.spec, s.status));
                Ok(None)
            }
            Step::Done { status } => self.done(l, &status).map(Some),
            Step::Blocked { reason } => Err(RunBlocked(format!("is blocked: {reason}")).into()),
        }
    }

    /// The group is sealed: exit 0 when accepted; otherwise exit 1 (the
    /// verdict does not hold) naming the hard stop, if one ended the
    /// lineage (VERDICT-3).
    fn done(&self, l: &LineageState, status: &str) -> anyhow::Result<ExitCode> {
        if !self.args.json {
            outln!("{} sealed: {status}", self.spec)?;
            self.print_table()?;
        }
        if status == VerdictStatus::Accepted.as_str() && l.stopped.is_none() {
            return Ok(ExitCode::SUCCESS);
        }
        let stop = l.stopped.as_ref().map_or_else(String::new, |(at, s)| {
            format!(
                "; lineage {} stopped at seq {} by {}: {}",
                l.frozen.lineage, at.seq, s.rule, s.reason
            )
        });
        eprintln!(
            "benchledger run: {} sealed {status}, not accepted{stop}",
            self.spec
        );
        Ok(ExitCode::from(ExitClass::CheckFailed.code()))
    }

    /// The sealed verdict's table, as `gate` prints it, replayed from the
    /// log.
    fn print_table(&self) -> anyhow::Result<()> {
        let (lineage, _) = parse_group(&self.spec);
        let ledger = Ledger::open(&self.cli.ledger, self.wait)?;
        let state = crate::method::projections::replay_scanning(&ledger)?;
        drop(ledger);
        let l = state.lineage(lineage.as_deref())?;
        let v = crate::method::verdict::group_verdict(&state, l, &self.group);
        crate::cli::gate::print_verdict(&v, crate::cli::gate::Standing::of(l, &self.group))?;
        Ok(())
    }

    /// Takes the batch's gates in order; stops at the first failing one so
    /// nothing reaches quota or EC2 under another identity (GATE-1).
    fn take_gates(&mut self, l: &LineageState, gates: &[GateId]) -> anyhow::Result<()> {
        for gate in gates {
            self.say(&format!("gate {}", gate.name()));
            let status = match *gate {
                GateId::DaemonHealth => {
                    let url = format!("{}/health", self.daemon_base(l)?);
                    let r = crate::cli::check::daemon_health(
                        self.cli,
                        self.wait,
                        l,
                        &self.group,
                        &url,
                    )?;
                    r.obs.status
                }
                GateId::Sentinel(tier) => {
                    let base = match &self.args.sentinel_url {
                        Some(url) => url.clone(),
                        None => self.daemon_base(l)?,
                    };
                    let r = crate::cli::check::sentinel(
                        self.cli,
                        self.wait,
                        l,
                        tier,
                        Some(&self.group),
                        Some(&base),
                    )?;
                    r.obs.status
                }
                aws_gate => self.take_aws_gate(l, aws_gate)?,
            };
            if status != Status::Pass {
                return Ok(());
            }
        }
        Ok(())
    }

    #[cfg(not(feature = "aws"))]
    fn take_aws_gate(&mut self, _l: &LineageState, gate: GateId) -> anyhow::Result<Status> {
        Err(NeedsAws(format!(
            "the {} gate of {} is missing or stale and this build cannot take it: record it with an `aws` build (`identity prove`, `quota check`, `check residue`) and run again, or {AWS_BUILD_HINT}",
            gate.name(),
            self.spec
        ))
        .into())
    }

    #[cfg(feature = "aws")]
    fn take_aws_gate(&mut self, l: &LineageState, gate: GateId) -> anyhow::Result<Status> {
        let private = crate::cli::aws::optional_private(l, &self.args.private)?;
        let (session, target) = crate::cli::aws::open_session(l, private.as_ref())?;
        Ok(match gate {
            GateId::Identity => {
                let p = private.as_ref().ok_or_else(|| {
                    BadUsage("run needs --private FILE to prove the identity (GATE-1)".into())
                })?;
                crate::cli::identity::prove(self.cli, self.wait, l, &session, &target, p)?
                    .obs
                    .status
            }
            GateId::Quota => {
                crate::cli::quota::check_quota(
                    self.cli,
                    self.wait,
                    l,
                    &session,
                    &target,
                    private.as_ref(),
                )?
                .obs
                .status
            }
            _ => {
                crate::cli::check::residue_check(
                    self.cli,
                    self.wait,
                    l,
                    &self.group,
                    &session,
                    &target,
                    private.as_ref(),
                )?
                .0
                .obs
                .status
            }
        })
    }

    /// The build without AWS cannot sample: an `aws` build's `cleanup
    /// monitor` records the samples.
    #[cfg(not(feature = "aws"))]
    fn sample_if_due(&mut self, _l: &LineageState) -> anyhow::Result<()> {
        Ok(())
    }

    /// While this run's cases run: one `monitor_sampled` after each batch
    /// it launched, then one every [`MONITOR_EVERY`] (CLEAN-2).
    #[cfg(feature = "aws")]
    fn sample_if_due(&mut self, l: &LineageState) -> anyhow::Result<()> {
        let due = self.sample_due
            || self
                .last_sample
                .is_none_or(|t| t.elapsed() >= MONITOR_EVERY);
        if self.running.is_empty() || !due {
            return Ok(());
        }
        let private = crate::cli::aws::optional_private(l, &self.args.private)?;
        let (session, _) = crate::cli::aws::open_session(l, private.as_ref())?;
        let (seq, ids) = crate::cli::cleanup::monitor_sample(
            self.cli,
            self.wait,
            &l.frozen.manifest.public,
            &group_ref(l, &self.group),
            &session,
        )?;
        self.say(&format!(
            "{} live run-tagged sandbox(es) (monitor_sampled seq {seq})",
            ids.len()
        ));
        self.last_sample = Some(Instant::now());
        self.sample_due = false;
        Ok(())
    }

    fn daemon_base(&self, l: &LineageState) -> anyhow::Result<String> {
        if let Some(u) = &self.args.daemon_url {
            return Ok(u.trim_end_matches('/').to_string());
        }
        let m = &l.frozen.manifest.public;
        let port = m
            .groups
            .iter()
            .find(|g| g.name == self.group)
            .and_then(|g| g.ports.first().copied())
            .ok_or_else(|| Error::input(format!("group {:?} has no port", self.group)))?;
        Ok(checks::daemon_base_url(&m.central.daemon_host, port))
    }

    /// Renders, validates with the frozen validator (BIND-7) and starts one
    /// case through `case start`'s decide path, then spawns the frozen
    /// launch command.
    fn launch(&mut self, l: &LineageState, case: CaseRef) -> anyhow::Result<()> {
        let m = &l.frozen.manifest.public;
        let plan = run_plan::plan_of(l)?;
        let name = trial_name(&case.task, &self.group, &case);
        let configs = out_dir(l, &self.group).join("trial-configs");
        std::fs::create_dir_all(&configs)
            .map_err(|e| Error::io(format!("create {}", configs.display()), e))?;
        let config = configs.join(format!("{name}.json"));
        case::render_config(self.cli, self.wait, &self.spec, &case, &config)?;
        validate(self.cli, self.wait, l, &config)?;
        let log = case::default_log_path(m, &self.group, &name);
        let values: BTreeMap<&str, String> = [
            ("config", config.display().to_string()),
            ("trial_name", name.clone()),
            ("jobs_dir", m.harbor.jobs_dir.clone()),
            ("group", self.group.clone()),
            ("task", case.task.clone()),
            ("trial", case.trial.clone()),
            ("log", log.display().to_string()),
        ]
        .into_iter()
        .collect();
        let command = crate::schema::plan::fill(&plan.launch.command, &values)
            .map_err(|e| Error::input(format!("launch.command: {e}")))?;
        let s = case::start_case(
            self.cli,
            self.wait,
            StartRequest {
                group: &self.spec,
                case,
                config: Some(&config),
                log: Some(log),
                command: command.clone(),
            },
        )?;
        self.say(&format!(
            "launched {name} (case_started seq {})",
            s.started.seq
        ));
        let child = case::spawn_command(&command, &s.env, &s.log_path)?;
        self.running.insert(
            s.case,
            Running {
                child,
                group: s.group,
                log_path: s.log_path,
                started: Instant::now(),
                timeout: Duration::from_secs(plan.launch.timeout_sec),
            },
        );
        Ok(())
    }

    /// Records the exit of every launched process that ended; whether one
    /// did.
    fn reap(&mut self) -> anyhow::Result<bool> {
        let mut exited = Vec::new();
        for (case, r) in &mut self.running {
            if r.started.elapsed() > r.timeout {
                if !self.args.json {
                    eprintln!(
                        "benchledger run: {} is past the frozen launch timeout ({} s): killed",
                        case.label(),
                        r.timeout.as_secs()
                    );
                }
                // Already gone is fine: try_wait below sees its status.
                let _ = r.child.kill();
            }
            if let Some(status) = r
                .child
                .try_wait()
                .map_err(|e| Error::io("wait for a launched command".to_string(), e))?
            {
                exited.push((case.clone(), status));
            }
        }
        let any = !exited.is_empty();
        for (case, status) in exited {
            let r = self
                .running
                .remove(&case)
                .expect("an exited case was running");
            let e: Exited = case::exited_of(status, r.started.elapsed(), &r.log_path)?;
            self.say(&format!("{} exited ({:?})", case.label(), e.exit_code));
            case::record_exit(self.cli, self.wait, r.group, &case, &e, &r.log_path)?;
        }
        Ok(any)
    }

    /// Waits a moment for a launched process, or until `until` when
    /// nothing of ours runs.
    fn wait_for_exits(&mut self, until: Option<u64>) -> anyhow::Result<()> {
        if self.reap()? {
            return Ok(());
        }
        let pause = Duration::from_millis(self.args.poll_ms.max(10));
        let pause = match (self.running.is_empty(), until) {
            (true, Some(t)) => pause.max(Duration::from_nanos(
                t.saturating_sub(now_utc_ns()).min(1_000_000_000),
            )),
            _ => pause,
        };
        std::thread::sleep(pause);
        Ok(())
    }

    /// Waits for every process this run launched (before the close).
    fn wait_all(&mut self) -> anyhow::Result<()> {
        while !self.running.is_empty() {
            if !self.reap()? {
                std::thread::sleep(Duration::from_millis(self.args.poll_ms.max(10)));
            }
        }
        Ok(())
    }

    /// Started cases without a result or a process: terminal_invalid on a
    /// listing of their trial directory (CASE-3).
    fn invalidate(&mut self, l: &LineageState, orphans: &[Orphan]) -> anyhow::Result<()> {
        let dir = out_dir(l, &self.group).join("invalidations");
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::io(format!("create {}", dir.display()), e))?;
        let jobs = PathBuf::from(&l.frozen.manifest.public.harbor.jobs_dir);
        for o in orphans {
            let listing = dir.join(format!("{}.json", o.trial_name));
            let body = json!({
                "trial_name": o.trial_name,
                "jobs_dir": jobs.display().to_string(),
                "reason": serde_json::to_value(o.reason)?,
                "observed_utc_ns": now_utc_ns(),
                "result_json_present": false,
            });
            std::fs::write(&listing, serde_json::to_vec_pretty(&body)?)
                .map_err(|e| Error::io(format!("write {}", listing.display()), e))?;
            self.say(&format!("{} has no result: terminal_invalid", o.trial_name));
            case::invalidate_case(self.cli, self.wait, &self.spec, &o.case, o.reason, &listing)?;
        }
        Ok(())
    }

    /// The group's BitRouter evidence from its frozen paths: `trace_path`,
    /// `decision_path`, `outcome_path` and `{out_dir}/usage.jsonl`, the
    /// usage exported there first by the frozen command when absent.
    /// One receipt poll of each pending request (SETTLE-8), then the
    /// receipts found ingested.
    fn poll(&mut self, l: &LineageState, request_ids: &[String]) -> anyhow::Result<()> {
        self.say(&format!(
            "polling the receipts of {} pending request(s)",
            request_ids.len()
        ));
        let round = receipts::poll_round(
            self.cli,
            self.wait,
            &self.spec,
            l,
            &self.group,
            request_ids,
            &self.history,
        )?;
        self.last_poll_utc_ns = Some(now_utc_ns());
        self.receipts_collected = true;
        self.say(&format!(
            "receipt polls: {} attempt(s) recorded, {} receipt(s) ingested",
            round.attempts, round.receipts
        ));
        Ok(())
    }

    fn gather_evidence(&mut self, l: &LineageState) -> anyhow::Result<()> {
        self.evidence_gathered = true;
        let plan = run_plan::plan_of(l)?;
        let g = receipts::frozen_group(l, &self.group)?;
        for kind in EvidenceKind::ALL {
            let file = match kind {
                EvidenceKind::Traces => PathBuf::from(&g.trace_path),
                EvidenceKind::Decisions => PathBuf::from(&g.decision_path),
                EvidenceKind::Outcomes => PathBuf::from(&g.outcome_path),
                EvidenceKind::Usage => PathBuf::from(&g.out_dir).join("usage.jsonl"),
            };
            if kind == EvidenceKind::Usage
                && !file.exists()
                && !plan.evidence.usage_export.is_empty()
            {
                let log = PathBuf::from(&g.out_dir).join("usage-export.log");
                receipts::export_usage(l, g, &file, &log)?;
            }
            if !file.exists() {
                self.say(&format!("no {} at {}", kind.name(), file.display()));
                continue;
            }
            let parse = crate::cli::ingest::row_parser(kind.name())
                .expect("every evidence kind has a row parser");
            crate::cli::ingest::ingest_file(
                self.cli,
                self.wait,
                &self.spec,
                &file,
                kind.name(),
                parse,
                false,
            )?;
        }
        Ok(())
    }

    #[cfg(not(feature = "aws"))]
    fn cleanup(&mut self, _l: &LineageState, step: &Step) -> anyhow::Result<()> {
        self.audit_failed_here = true;
        Err(NeedsAws(format!(
            "the {} of {} calls AWS and this build cannot: record it with an `aws` build (`cleanup audit`) and run again, or {AWS_BUILD_HINT}",
            if matches!(step, Step::Audit) { "cleanup audit" } else { "termination" },
            self.spec
        ))
        .into())
    }

    #[cfg(feature = "aws")]
    fn cleanup(&mut self, l: &LineageState, step: &Step) -> anyhow::Result<()> {
        let private = crate::cli::aws::optional_private(l, &self.args.private)?;
        let (session, _) = crate::cli::aws::open_session(l, private.as_ref())?;
        if matches!(step, Step::Audit) {
            self.say("cleanup audit");
            let (_, audit) = crate::cli::cleanup::audit_and_record(
                self.cli,
                self.wait,
                l,
                &self.group,
                &session,
                private.as_ref(),
            )?;
            if audit.error.is_some() {
                self.audit_failed_here = true;
            }
        } else {
            self.say("terminating what the audit proved is the run's");
            crate::cli::cleanup::terminate_from_audit(
                self.cli,
                self.wait,
                l,
                &self.group,
                &session,
                private.as_ref(),
            )?;
        }
        Ok(())
    }
}

/// The frozen validator (BIND-7: its program hashes to the frozen BLAKE3
/// before it runs), through the same function as `check config`; the
/// outcome is recorded (GATE-7) and a failure starts nothing.
fn validate(cli: &Cli, wait: Duration, l: &LineageState, config: &Path) -> anyhow::Result<()> {
    let r = crate::cli::check::validate_config(cli, wait, l, config, &[])?;
    if r.obs.status != Status::Pass {
        return Err(Error::Refused {
            rule: Rule::Gate7,
            message: format!(
                "the frozen validator rejected {} (recorded at seq {}); the case is not started",
                config.display(),
                r.seq
            ),
        }
        .into());
    }
    Ok(())
}
