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
use crate::cli::proc;
use crate::cli::progress::{RunProgress, RunStanding};
use crate::cli::receipts;
use crate::cli::run_state::{Fold, Lease};
use crate::cli::Cli;
use crate::error::{Error, ExitClass};
use crate::gates::checks;
use crate::log::ledger::Ledger;
use crate::method::projections::{CaseStatus, LineageState};
use crate::method::run_plan::{
    self, EvidenceKind, Facts, GateId, LaunchSeen, Orphan, RunHistory, Step,
};
use crate::schema::events::{
    CaseLaunched, CaseRef, CommandKilled, CommandRole, Event, GroupRef, ProcessRef, Status,
};
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
    /// Milliseconds between looks at the launched processes, the head
    /// witness and the result files while `run` waits.
    #[arg(long, default_value_t = crate::limits::RUN_POLL_MS_DEFAULT, value_name = "MS")]
    pub poll_ms: u64,
}

/// A launched process this run waits for.
struct Running {
    child: Child,
    group: GroupRef,
    log_path: PathBuf,
    started: Instant,
    /// The frozen `launch.timeout_sec`: at it the process group is killed,
    /// the kill and the exit recorded (a signal, no result: CASE-3 makes it
    /// invalid).
    timeout: Duration,
    /// The launch command, for the kill record (RUN-4).
    argv: Vec<String>,
    /// Whether the case's result.json is there when the launch ends (RUN-5).
    witness: proc::ExitWitness,
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
    /// The group's frozen Harbor trials directory.
    job: PathBuf,
    running: BTreeMap<CaseRef, Running>,
    evidence_gathered: bool,
    audit_failed_here: bool,
    aws_recorded: bool,
    /// When this run last polled receipts (SETTLE-8: polls are spaced by
    /// the frozen `receipt_poll_sec`).
    last_poll_utc_ns: Option<u64>,
    /// Whether this run has collected the receipts the usage export carries.
    receipts_collected: bool,
    /// Why the seal this run made does not count yet (TRUST-6: fewer than
    /// k witnesses cosigned), for `done`.
    witness_pending: Option<String>,
    /// The ledger folded once, then only what is new (RUN-7): the state and
    /// the group's history every step is planned from.
    fold: Fold,
    /// This driver's lease on the group (RUN-2).
    lease: Option<Lease>,
    /// While waiting: what wakes the planner besides an exit or an append.
    idle: Idle,
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

/// What a waiting `run` looks at on each tick, all of it cheap: the time,
/// the result files of the cases it waits for, adopted launches (RUN-3).
#[derive(Default)]
struct Idle {
    /// Wake at this time, ns since the epoch.
    until_utc_ns: Option<u64>,
    /// Result files whose appearance wakes the planner.
    results: Vec<PathBuf>,
    /// Adopted launches whose end wakes the planner.
    adopted: Vec<ProcessRef>,
    /// Whether the last step was a wait (otherwise plan again at once).
    waiting: bool,
}

/// How often `run` samples the run-tagged sandboxes while its cases run
/// (and once after every batch it launches).
#[cfg(feature = "aws")]
const MONITOR_EVERY: Duration = Duration::from_millis(crate::limits::RUN_MONITOR_INTERVAL_MS);

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
    crate::cli::interrupt::verb_cleans_up();
    let flag = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(signal, 130, Arc::clone(&flag))
            .map_err(|e| Error::io("install the Ctrl-C handler".to_string(), e))?;
        signal_hook::flag::register(signal, Arc::clone(&flag))
            .map_err(|e| Error::io("install the Ctrl-C handler".to_string(), e))?;
    }
    Ok(flag)
}

/// `run`: the group is `a.group`, or `a.lineage`/`a.group` when `a.group` has no slash.
pub fn run_run(cli: &Cli, a: &RunArgs, wait: Duration) -> anyhow::Result<ExitCode> {
    let spec = match &a.lineage {
        Some(l) if !a.group.contains('/') => format!("{l}/{}", a.group),
        _ => a.group.clone(),
    };
    let (lineage, group) = parse_group(&spec);
    let key = a
        .key
        .as_deref()
        .map(crate::cli::trust::read_signer_key)
        .transpose()?;
    let mut fold = Fold::new(&cli.ledger, wait, None)?;
    let l = fold.state.lineage(lineage.as_deref())?;
    // The private manifest, given, is checked against the frozen
    // commitments before anything runs or is planned, in every build (issue
    // 29: `run --plan --private FILE` never read it).
    if let Some(p) = &a.private {
        let text = crate::cli::common::read_text(p)?;
        crate::method::freeze::check_private(&l.frozen.manifest, &text, &p.display().to_string())?;
    }
    let gref = group_ref(l, &group);
    let job = job_dir(l, &group);
    fold.set_group(&cli.ledger, wait, gref.clone())?;
    let mut r = Runner {
        cli,
        wait,
        args: a,
        key,
        spec,
        group,
        job,
        running: BTreeMap::new(),
        evidence_gathered: false,
        audit_failed_here: false,
        aws_recorded: !a.plan && aws_recorded()?,
        last_poll_utc_ns: None,
        receipts_collected: false,
        witness_pending: None,
        fold,
        lease: None,
        idle: Idle::default(),
        interrupted: interrupts()?,
        progress: RunProgress::new(&a.group, !a.json && !a.plan),
        #[cfg(feature = "aws")]
        last_sample: None,
        #[cfg(feature = "aws")]
        sample_due: false,
    };
    if a.plan {
        r.aws_recorded = !cfg!(feature = "aws");
        let fold = std::mem::take(&mut r.fold);
        let plan = r.plan_now(&fold)?;
        return print_plan(&plan, a.json);
    }
    // TRUST-3 on the first replay, before anything runs, not at the seal
    // hours later.
    if let Some(verifier) = r.key.as_ref().map(crate::log::tlog::SignerKey::verifier) {
        crate::method::decide::run_signer(&r.fold.state, lineage.as_deref(), &verifier)?;
    }
    // RUN-2: one driver per group.
    r.lease = Some(Lease::take(cli, wait, lineage.as_deref(), gref)?);
    let outcome = r.adopt_gates().and_then(|()| r.drive());
    if let Some(lease) = r.lease.take() {
        lease.release(cli, wait);
    }
    outcome
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
    outln!("A gate recorded as failing before a wave is a hard stop of the whole lineage (VERDICT-3, RUN-6): to look without recording, use `benchledger check ... --probe`.")?;
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

/// Where the gate of a trial's launch waits to be opened (RUN-3): under the
/// group's output directory, so that a rerun finds it.
fn gate_prefix(l: &LineageState, group: &str, trial_name: &str) -> PathBuf {
    out_dir(l, group).join("gates").join(trial_name)
}

fn group_ref(l: &LineageState, group: &str) -> GroupRef {
    GroupRef {
        lineage: l.frozen.lineage.clone(),
        group: group.to_string(),
    }
}

/// Where the recorded launch of each started case of `group` that this
/// process does not run stands, seen from this machine (RUN-3).
fn launches_seen(
    l: &LineageState,
    group: &str,
    running_here: &BTreeSet<CaseRef>,
) -> BTreeMap<CaseRef, LaunchSeen> {
    let accepted = &l.frozen.manifest.public.harbor.accepted_exceptions;
    l.groups
        .get(group)
        .iter()
        .flat_map(|g| g.cases.iter())
        .filter(|(case, c)| {
            !running_here.contains(*case) && c.status(accepted) == CaseStatus::Started
        })
        .filter_map(|(case, c)| {
            let seen = match proc::liveness(&c.launched.as_ref()?.1.process) {
                proc::Liveness::Alive => LaunchSeen::Alive,
                proc::Liveness::Gone => LaunchSeen::Gone,
                proc::Liveness::Elsewhere => LaunchSeen::Elsewhere,
            };
            Some((case.clone(), seen))
        })
        .collect()
}

/// A run that cannot go on without the operator: exit 4, the reason.
#[derive(Debug, thiserror::Error)]
#[error("run {0}")]
struct RunBlocked(String);

impl Runner<'_> {
    /// The loop: plan one step on the in-memory fold, do it, and plan
    /// again; while the step is a wait, look only at what is cheap (exits,
    /// the head witness, result files, adopted launches, the time) and
    /// plan again when one of them changed (RUN-7).
    fn drive(&mut self) -> anyhow::Result<ExitCode> {
        let poll = Duration::from_millis(self.args.poll_ms.max(10));
        loop {
            let mut woke = self.reap()?;
            woke |= self.fold.catch_up(&self.cli.ledger, self.wait)?;
            if let Some(lease) = self.lease.as_mut() {
                lease.renew_if_due(self.cli, self.wait)?;
            }
            if self.idle.waiting && !woke && !self.idle_woke() {
                // CLEAN-2 while cases run: this run's launches and the ones
                // it adopted after a crash (RUN-3), so a rerun still sees
                // the peak (GATE-9's canary).
                #[cfg(feature = "aws")]
                if (!self.running.is_empty() || !self.idle.adopted.is_empty())
                    && self.sample_is_due()
                {
                    let fold = std::mem::take(&mut self.fold);
                    let sampled = fold
                        .state
                        .lineage(parse_group(&self.spec).0.as_deref())
                        .map_err(anyhow::Error::from)
                        .and_then(|l| self.sample(l));
                    self.fold = fold;
                    sampled?;
                    continue;
                }
                std::thread::sleep(poll);
                continue;
            }
            self.idle = Idle::default();
            let fold = std::mem::take(&mut self.fold);
            let outcome = self.step(&fold);
            self.fold = fold;
            if let Some(code) = outcome? {
                return Ok(code);
            }
        }
    }

    /// Plans and does one step on `fold`; `Some(code)` ends the run.
    fn step(&mut self, fold: &Fold) -> anyhow::Result<Option<ExitCode>> {
        let plan = self.plan_now(fold)?;
        let l = fold.state.lineage(parse_group(&self.spec).0.as_deref())?;
        let next = serde_json::to_value(&plan.next)?;
        if self.args.json {
            print_json(&next)?;
        }
        self.progress.update(&RunStanding {
            done: plan.cases.done,
            total: plan.cases.total,
            running: plan.cases.running,
            left: plan.cases.left,
            step: next["step"].as_str().unwrap_or("?"),
            spend_micro_usd: plan.spend_micro_usd,
            limit_micro_usd: plan.spend_limit_micro_usd,
        });
        self.act(l, &fold.history, plan.next)
    }

    /// Whether something a wait watches changed: its time came, a result
    /// file appeared, an adopted launch ended.
    fn idle_woke(&self) -> bool {
        self.idle.until_utc_ns.is_some_and(|t| now_utc_ns() >= t)
            || self.idle.results.iter().any(|p| p.is_file())
            || self
                .idle
                .adopted
                .iter()
                .any(|p| proc::liveness(p) != proc::Liveness::Alive)
            || self.interrupted.load(Ordering::Relaxed) && self.running.is_empty()
    }

    /// Gathers the facts and asks the planner for the next step, on the
    /// in-memory fold (nothing is opened).
    fn plan_now(&self, fold: &Fold) -> anyhow::Result<run_plan::RunPlan> {
        let (lineage, _) = parse_group(&self.spec);
        let l = fold.state.lineage(lineage.as_deref())?;
        let (dirs, results) = trial_dirs(&job_dir(l, &self.group))?;
        let running: BTreeSet<CaseRef> = self.running.keys().cloned().collect();
        let launches = launches_seen(l, &self.group, &running);
        let facts = Facts {
            now_utc_ns: now_utc_ns(),
            trial_dirs: &dirs,
            results: &results,
            running_here: &running,
            history: &fold.history,
            stop_launching: self.interrupted.load(Ordering::Relaxed),
            terminate: self.args.terminate,
            evidence_gathered: self.evidence_gathered,
            audit_failed_here: self.audit_failed_here,
            last_poll_utc_ns: self.last_poll_utc_ns,
            receipts_collected: self.receipts_collected,
            aws_recorded: self.aws_recorded,
            launches: &launches,
        };
        Ok(run_plan::next_step(
            &fold.state,
            lineage.as_deref(),
            &self.group,
            &facts,
        )?)
    }

    fn say(&self, line: &str) {
        if !self.args.json {
            self.progress.println(&format!("benchledger run: {line}"));
        }
    }

    /// Once the lease is held: the gate of every recorded launch whose
    /// driver died after recording it and before opening it (RUN-3) is
    /// opened, so the launch runs now as itself (never a second launch);
    /// after a hard stop it is closed instead (VERDICT-3: nothing starts
    /// running), and the case becomes a controller crash.
    fn adopt_gates(&mut self) -> anyhow::Result<()> {
        let fold = std::mem::take(&mut self.fold);
        let adopted = fold
            .state
            .lineage(parse_group(&self.spec).0.as_deref())
            .map_err(anyhow::Error::from)
            .and_then(|l| self.adopt_gates_of(l));
        self.fold = fold;
        adopted
    }

    fn adopt_gates_of(&mut self, l: &LineageState) -> anyhow::Result<()> {
        let Some(g) = l.groups.get(&self.group) else {
            return Ok(());
        };
        let accepted = &l.frozen.manifest.public.harbor.accepted_exceptions;
        let stopped = l.stopped.is_some();
        let launched = g
            .cases
            .iter()
            .filter(|(_, c)| c.status(accepted) == CaseStatus::Started)
            .filter_map(|(case, c)| Some((case, &c.launched.as_ref()?.1.process)));
        for (case, p) in launched {
            let prefix = gate_prefix(l, &self.group, &trial_name(&case.task, &self.group, case));
            let done = if stopped {
                proc::close_adopted_gate(p)
                    .map(|closed| closed.then_some("closed it: the lineage is stopped"))
            } else {
                proc::open_adopted_gate(&prefix, p).map(|opened| opened.then_some("opened it"))
            };
            let done = done.map_err(|e| {
                let file = proc::gate_file(&prefix, p.pid);
                Error::io(format!("the gate {}", file.display()), e)
            })?;
            if let Some(what) = done {
                self.say(&format!(
                    "{} (adopted, pid {}): its driver died before opening its gate; {what}",
                    case.label(),
                    p.pid
                ));
            }
        }
        Ok(())
    }

    /// A wait: until a process exits, the ledger moves, one of `cases`'
    /// result files appears, an adopted launch ends, or `until`.
    fn wait_on(&mut self, l: &LineageState, cases: &[CaseRef], until: Option<u64>) {
        let job = job_dir(l, &self.group);
        let g = l.groups.get(&self.group);
        self.idle = Idle {
            until_utc_ns: until,
            results: cases
                .iter()
                .map(|c| {
                    job.join(trial_name(&c.task, &self.group, c))
                        .join("result.json")
                })
                .collect(),
            adopted: cases
                .iter()
                .filter(|c| !self.running.contains_key(*c))
                .filter_map(|c| g?.cases.get(c)?.launched.as_ref())
                .map(|(_, e)| e.process.clone())
                .collect(),
            waiting: true,
        };
    }

    /// Does one step; `Some(code)` ends the run.
    fn act(
        &mut self,
        l: &LineageState,
        history: &RunHistory,
        step: Step,
    ) -> anyhow::Result<Option<ExitCode>> {
        let cover = run_plan::lease_cover_sec(l, &step);
        if let Some(lease) = self.lease.as_mut() {
            lease.cover(self.cli, self.wait, cover)?;
        }
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
            } => self.hard_stop(l, rule, &reason, evidence_seq).map(|()| None),
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
            Step::IngestResults { cases } => self.ingest_results(l, &cases).map(|()| None),
            Step::Invalidate { orphans } => self.invalidate(l, &orphans).map(|()| None),
            Step::Wait {
                cases,
                until_utc_ns,
            } => {
                self.wait_on(l, &cases, until_utc_ns);
                Ok(None)
            }
            Step::Sample => self.sample(l).map(|()| None),
            Step::KillLaunch { case, pgid } => self.kill_adopted(l, &case, pgid).map(|()| None),
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
            Step::PollReceipts { request_ids } => {
                self.poll(l, &request_ids, history).map(|()| None)
            }
            Step::CollectReceipts { request_ids } => {
                self.collect_receipts(l, &request_ids).map(|()| None)
            }
            Step::WaitUntil { until_utc_ns, why } => {
                self.say(&format!("waiting: {why}"));
                self.wait_on(l, &[], Some(until_utc_ns));
                Ok(None)
            }
            Step::Audit | Step::Terminate { .. } => self.cleanup(l, &step).map(|()| None),
            Step::Seal => {
                let s = crate::cli::group::seal_group(self.cli, self.wait, &self.spec, self.key.as_ref())?;
                self.say(&format!("sealed {}: {}", self.spec, s.status));
                self.witness(l)?;
                Ok(None)
            }
            Step::Done { status } => self.done(l, &status).map(Some),
            Step::Blocked { reason } => Err(RunBlocked(format!("is blocked: {reason}")).into()),
        }
    }

    /// TRUST-6: after the seal, with a frozen quorum, the seal's signed
    /// checkpoint goes to the witnesses (`checkpoint witness`); fewer than
    /// k cosignatures leave the seal pending, and `done` says so (exit 1).
    fn witness(&mut self, l: &LineageState) -> anyhow::Result<()> {
        let Some(witnessing) = &l.witnessing else {
            return Ok(());
        };
        if self.key.is_none() {
            self.witness_pending = Some(format!(
                "its seal's checkpoint is unsigned (no --key), so no witness can cosign it: the seal stays pending until a signed checkpoint covering it has {} cosignatures (`checkpoint sign`, `checkpoint witness`; TRUST-6)",
                witnessing.quorum
            ));
            return Ok(());
        }
        let done =
            crate::cli::witness::witness_lineage(self.cli, self.wait, Some(&l.frozen.lineage))?;
        for line in done.lines() {
            self.say(&format!("witness {line}"));
        }
        if done.cosigned < done.quorum {
            self.witness_pending = Some(format!(
                "its seal is pending: {} of {} witnesses cosigned (quorum {}); run `benchledger checkpoint witness` once they are up (TRUST-6)",
                done.cosigned,
                witnessing.witnesses.len(),
                done.quorum
            ));
        }
        Ok(())
    }

    /// A hard stop (VERDICT-3), recorded unless the lineage already has one.
    fn hard_stop(
        &self,
        l: &LineageState,
        rule: Rule,
        reason: &str,
        evidence_seq: Option<u64>,
    ) -> anyhow::Result<()> {
        self.say(&format!("hard stop {rule}: {reason}"));
        let events = run_plan::hard_stop(l, rule, reason, evidence_seq);
        if !events.is_empty() {
            append(self.cli, self.wait, events)?;
        }
        Ok(())
    }

    /// Ingests the results of those trials only: a result written after
    /// its launch's exit was recorded never counts (RUN-5).
    fn ingest_results(&self, l: &LineageState, cases: &[CaseRef]) -> anyhow::Result<()> {
        self.say(&format!("ingesting {} Harbor result(s)", cases.len()));
        let job = job_dir(l, &self.group);
        let names: BTreeSet<String> = cases
            .iter()
            .map(|c| trial_name(&c.task, &self.group, c))
            .collect();
        crate::cli::ingest::ingest_harbor_trials(
            self.cli,
            self.wait,
            &self.spec,
            &job,
            Some(&names),
        )?;
        Ok(())
    }

    /// The attempt budget is spent: the receipts the usage export carries
    /// are collected once (SETTLE-8).
    fn collect_receipts(&mut self, l: &LineageState, request_ids: &[String]) -> anyhow::Result<()> {
        let found =
            receipts::collect(self.cli, self.wait, &self.spec, l, &self.group, request_ids)?;
        self.receipts_collected = true;
        self.say(&format!(
            "the attempt budget is spent: {found} receipt(s) of {} pending request(s) collected from the usage export",
            request_ids.len()
        ));
        Ok(())
    }

    /// The group is sealed: exit 0 when accepted; otherwise exit 1 (the
    /// verdict does not hold) naming the hard stop, if one ended the
    /// lineage (VERDICT-3).
    fn done(&self, l: &LineageState, status: &str) -> anyhow::Result<ExitCode> {
        self.central_teardown()?;
        if !self.args.json {
            outln!("{} sealed: {status}", self.spec)?;
            self.print_table()?;
        }
        if let Some(why) = &self.witness_pending {
            eprintln!("benchledger run: {} sealed {status}, but {why}", self.spec);
            return Ok(ExitCode::from(ExitClass::CheckFailed.code()));
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

    /// After the lineage's last group or a hard stop: the central host this
    /// lineage provisioned is torn down and audited (`central down`).
    #[cfg(not(feature = "aws"))]
    fn central_teardown(&self) -> anyhow::Result<()> {
        Ok(())
    }

    #[cfg(feature = "aws")]
    fn central_teardown(&self) -> anyhow::Result<()> {
        // The state as of now: the seal this run just appended included.
        let ledger = Ledger::open(&self.cli.ledger, self.wait)?;
        let state = crate::cli::common::decide_state(&ledger)?;
        drop(ledger);
        let l = state.lineage(parse_group(&self.spec).0.as_deref())?;
        if !crate::method::central::teardown_due(l) {
            return Ok(());
        }
        self.say("tearing the central host down (central down)");
        let private = crate::cli::aws::optional_private(l, &self.args.private)?;
        let (session, target) = crate::cli::aws::open_session(l, private.as_ref())?;
        if let Some(o) =
            crate::cli::central::down(self.cli, self.wait, l, &session, &target, private.as_ref())?
        {
            self.say(&format!(
                "central host {} torn down: {} (seq {})",
                o.obs.target,
                if o.obs.status == Status::Pass {
                    "none left"
                } else {
                    "NOT at zero"
                },
                o.seq
            ));
        }
        Ok(())
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
            // Each gate blocks for at most a minute (its bounded exchanges);
            // the lease is renewed between them (RUN-2).
            if let Some(lease) = self.lease.as_mut() {
                lease.renew_if_due(self.cli, self.wait)?;
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
            GateId::CentralHost => {
                crate::cli::central::up(
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
    /// monitor` records the samples (the planner asks for none, RUN-5).
    #[cfg(not(feature = "aws"))]
    fn sample(&mut self, _l: &LineageState) -> anyhow::Result<()> {
        Err(NeedsAws(format!(
            "the cleanup monitor sample of {} calls AWS and this build cannot: {AWS_BUILD_HINT}",
            self.spec
        ))
        .into())
    }

    /// While this run's cases run: a sample after each wave it launched,
    /// then one every [`MONITOR_EVERY`] (CLEAN-2).
    #[cfg(feature = "aws")]
    fn sample_is_due(&self) -> bool {
        self.sample_due
            || self
                .last_sample
                .is_none_or(|t| t.elapsed() >= MONITOR_EVERY)
    }

    /// One `monitor_sampled` of the run-tagged sandboxes (CLEAN-2; RUN-5
    /// after each case's exit).
    #[cfg(feature = "aws")]
    fn sample(&mut self, l: &LineageState) -> anyhow::Result<()> {
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
        let timeout_ns = plan.launch.timeout_sec.saturating_mul(1_000_000_000);
        let gate = proc::GateSpec {
            prefix: gate_prefix(l, &self.group, &name),
            wait: Duration::from_secs(
                crate::limits::LAUNCH_GATE_WAIT_SEC.min(plan.launch.timeout_sec),
            ),
        };
        // RUN-3: the launch is spawned behind its gate and recorded, as the
        // kernel names it, in the same append as the case's start; only
        // then does its command run. A driver that dies before the append
        // leaves nothing started and nothing running; after it, a launch
        // that a later driver adopts while it lives, or finds gone at once.
        let (s, gated) = case::start_case_with(
            self.cli,
            self.wait,
            StartRequest {
                group: &self.spec,
                case,
                config: Some(&config),
                log: Some(log),
                command: command.clone(),
            },
            |st| {
                let gated = case::spawn_gated(&command, st.env, st.log_path, &gate)?;
                let process = proc::process_ref(gated.id()).ok_or_else(|| {
                    anyhow::anyhow!("the launch {} vanished before it was recorded", gated.id())
                })?;
                let launched = Event::CaseLaunched(CaseLaunched {
                    group: st.group.clone(),
                    case: st.case.clone(),
                    process,
                    deadline_utc_ns: st.now_utc_ns.saturating_add(timeout_ns),
                });
                Ok((vec![launched], gated))
            },
        )?;
        let child = gated.open();
        self.say(&format!(
            "launched {name} (case_started seq {})",
            s.started.seq
        ));
        let started = Instant::now();
        let timeout = Duration::from_secs(plan.launch.timeout_sec);
        let result = self.job.join(&name).join("result.json");
        self.running.insert(
            s.case,
            Running {
                witness: proc::ExitWitness::watch(child.id(), result),
                child,
                group: s.group,
                log_path: s.log_path,
                started,
                timeout,
                argv: command,
            },
        );
        Ok(())
    }

    /// Records the exit of every launched process that ended, and kills
    /// (with its whole process group) and records every one past its
    /// deadline (RUN-4); whether one ended.
    fn reap(&mut self) -> anyhow::Result<bool> {
        let mut ended = Vec::new();
        for (case, r) in &mut self.running {
            let e = proc::poll_bounded(&mut r.child, r.started, r.timeout, Some(&mut r.witness))
                .map_err(|e| Error::io("wait for a launched command".to_string(), e))?;
            if let Some(e) = e {
                ended.push((case.clone(), e));
            }
        }
        let any = !ended.is_empty();
        if !ended.is_empty() {
            self.ingest_at_exit(&ended)?;
        }
        for (case, e) in ended {
            let r = self
                .running
                .remove(&case)
                .expect("an ended case was running");
            if e.killed {
                self.say(&format!(
                    "{} is past the frozen launch timeout ({} s): its process group was killed",
                    case.label(),
                    r.timeout.as_secs()
                ));
                self.record_kill(&r.group, &case, &r.argv, r.child.id(), r.timeout, e.ran)?;
            }
            let x: Exited = case::exited_of(e.status, e.ran, &r.log_path)?;
            let how = x.exit_code.map_or_else(
                || "no exit code: ended by a signal".to_string(),
                |c| format!("exit code {c}"),
            );
            self.say(&format!("{} exited ({how})", case.label()));
            case::record_exit(self.cli, self.wait, r.group, &case, &x, &r.log_path)?;
        }
        Ok(any)
    }

    /// The results that were there when their launches ended (as each
    /// launch's exit witness saw them) are ingested, those trials only,
    /// before the exits are recorded: an exit recorded without a result
    /// makes its case terminal_invalid whatever is written later, so what
    /// counts never depends on when the driver looked (CASE-3, RUN-5).
    fn ingest_at_exit(&mut self, ended: &[(CaseRef, proc::Ended)]) -> anyhow::Result<()> {
        let present: BTreeSet<String> = ended
            .iter()
            .map(|(c, e)| (trial_name(&c.task, &self.group, c), e.file_at_end))
            .filter(|(name, at_end)| {
                // A witness that could not tell: the file as it is now.
                at_end.unwrap_or_else(|| self.job.join(name).join("result.json").is_file())
            })
            .map(|(name, _)| name)
            .collect();
        if !present.is_empty() {
            crate::cli::ingest::ingest_harbor_trials(
                self.cli,
                self.wait,
                &self.spec,
                &self.job,
                Some(&present),
            )?;
        }
        Ok(())
    }

    /// Records a launch killed at its deadline (RUN-4).
    fn record_kill(
        &self,
        group: &GroupRef,
        case: &CaseRef,
        argv: &[String],
        pgid: u32,
        deadline: Duration,
        ran: Duration,
    ) -> anyhow::Result<()> {
        append(
            self.cli,
            self.wait,
            vec![Event::CommandKilled(CommandKilled {
                group: group.clone(),
                case: Some(case.clone()),
                role: CommandRole::Launch,
                argv: argv.to_vec(),
                pgid,
                signal: proc::KILL_SIGNAL,
                deadline_ms: u64::try_from(deadline.as_millis()).unwrap_or(u64::MAX),
                ran_ms: u64::try_from(ran.as_millis()).unwrap_or(u64::MAX),
            })],
        )?;
        Ok(())
    }

    /// An adopted launch past its deadline (RUN-3, RUN-4): its process
    /// group killed, the kill recorded, and its end recorded as this run's
    /// own launches' are (SIGKILL), so the verdict does not depend on which
    /// driver launched it (RUN-5).
    fn kill_adopted(&mut self, l: &LineageState, case: &CaseRef, pgid: u32) -> anyhow::Result<()> {
        let c = l
            .groups
            .get(&self.group)
            .and_then(|g| g.cases.get(case))
            .ok_or_else(|| anyhow::anyhow!("{} is not a case of {}", case.label(), self.spec))?;
        let (Some((started_at, started)), Some((_, launched))) = (&c.started, &c.launched) else {
            return Err(anyhow::anyhow!(
                "{} has no recorded launch to kill",
                case.label()
            ));
        };
        if proc::liveness(&launched.process) != proc::Liveness::Alive {
            // It ended since the plan: the next plan sees it gone (RUN-3);
            // no kill happened, so none is recorded.
            return Ok(());
        }
        proc::kill_group(pgid).map_err(|e| Error::io(format!("kill process group {pgid}"), e))?;
        let ran = Duration::from_nanos(now_utc_ns().saturating_sub(started_at.utc_ns));
        let deadline =
            Duration::from_nanos(launched.deadline_utc_ns.saturating_sub(started_at.utc_ns));
        let group = group_ref(l, &self.group);
        self.say(&format!(
            "{} (adopted, pid {pgid}) is past its deadline: its process group was killed",
            case.label()
        ));
        self.record_kill(&group, case, &started.command, pgid, deadline, ran)?;
        let log =
            case::default_log_path(&l.frozen.manifest.public, &self.group, &started.trial_name);
        let x = Exited {
            exit_code: None,
            signal: Some(proc::KILL_SIGNAL),
            duration_ms: u64::try_from(ran.as_millis()).unwrap_or(u64::MAX),
            log_blake3: blake3_file(&log).map(|(_, h)| h).unwrap_or_default(),
        };
        case::record_exit(self.cli, self.wait, group, case, &x, &log)?;
        Ok(())
    }

    /// Waits for every process this run launched (before the close),
    /// within their deadlines, renewing the lease.
    fn wait_all(&mut self) -> anyhow::Result<()> {
        while !self.running.is_empty() {
            if let Some(lease) = self.lease.as_mut() {
                lease.renew_if_due(self.cli, self.wait)?;
            }
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
    fn poll(
        &mut self,
        l: &LineageState,
        request_ids: &[String],
        history: &RunHistory,
    ) -> anyhow::Result<()> {
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
            history,
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
                receipts::export_usage(self.cli, self.wait, l, g, &file, &log)?;
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
    crate::method::gate_outcomes::config_validated(&r.obs, &config.display().to_string(), r.seq)?;
    Ok(())
}
