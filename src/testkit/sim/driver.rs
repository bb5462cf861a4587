//! The simulated executor: what `benchledger run` (src/cli/run.rs) does
//! with each step of the production planner (`run_plan::next_step`),
//! done against the simulated world with the production decide functions
//! and observation builders, and every append through the production
//! fold. A driver's memory is lost when it dies; the ledger and the
//! machine's processes are not.

use std::collections::{BTreeMap, BTreeSet};

use crate::gates::checks::{health_observation, sentinel_observation};
use crate::gates::http::{HttpFailure, HttpResponse, HttpUrl};
use crate::gates::rules::{self, AwsError, LiveInstance};
use crate::method::projections::LineageState;
use crate::method::run_plan::{self, Facts, GateId, LaunchSeen, Orphan, RunHistory, Step};
use crate::schema::events::*;
use crate::schema::names::trial_name;

use super::world::{chance, ResultScript, SEC};
use super::{Sim, Violation};

/// How a driver's life ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// The group is sealed (or blocked for good): the run exits.
    Done,
    /// The controller died (the sim restarts a driver).
    Crashed,
    /// The driver exited on an error or a refusal; an operator reruns.
    Exited(String),
    /// The run is blocked until the operator acts; nothing more happens.
    Blocked(String),
}

/// One driver's memory (lost when it dies).
#[derive(Debug, Clone)]
pub struct Driver {
    /// Its lease holder id.
    pub holder: String,
    pub pid: u32,
    /// The processes it launched and waits for, by case.
    pub running: BTreeMap<CaseRef, u32>,
    pub(super) evidence_gathered: bool,
    pub(super) audit_failed_here: bool,
    pub(super) last_poll_utc_ns: Option<u64>,
    pub(super) receipts_collected: bool,
    last_sample_ns: Option<u64>,
    sample_due: bool,
    lease_renewed_ns: u64,
    pub(super) history: RunHistory,
    history_at: usize,
}

/// An append that did not happen: the driver died in it or was fenced.
#[derive(Debug)]
pub struct Interrupted(pub End);

type Act<T = ()> = Result<T, Interrupted>;

const LEASE_NS: u64 = crate::limits::RUN_LEASE_SEC * SEC;
const RENEW_NS: u64 = crate::limits::RUN_LEASE_RENEW_SEC * SEC;
const MONITOR_NS: u64 = crate::limits::RUN_MONITOR_INTERVAL_MS * 1_000_000;

impl Driver {
    fn new(sim: &mut Sim, group: &GroupRef) -> Driver {
        sim.next_pid += 1;
        Driver {
            holder: format!("sim-driver-{}", sim.next_pid),
            pid: sim.next_pid,
            running: BTreeMap::new(),
            evidence_gathered: false,
            audit_failed_here: false,
            last_poll_utc_ns: None,
            receipts_collected: false,
            last_sample_ns: None,
            sample_due: false,
            lease_renewed_ns: 0,
            history: RunHistory::new(group.clone()),
            history_at: 0,
        }
    }

    fn fold_history(&mut self, sim: &Sim) {
        for (i, (_, e)) in sim.w.records.iter().enumerate().skip(self.history_at) {
            self.history.apply(i as u64 + 1, e);
        }
        self.history_at = sim.w.records.len();
    }
}

impl Sim {
    fn process(&self, pid: u32) -> ProcessRef {
        ProcessRef {
            host: "sim-host".into(),
            boot_id: format!("boot-{}", self.boot),
            pid,
            start_ticks: pid.into(),
        }
    }

    /// Appends `events` as driver `d`: refused when its lease was taken
    /// over (RUN-2's fence); the controller may die in it (with a power
    /// loss, the append is lost).
    pub(super) fn append(&mut self, d: &Driver, events: Vec<Event>) -> Act {
        if let Some(by) = self.fenced(d) {
            return Err(Interrupted(End::Exited(format!(
                "fenced: holder {by} took the lease over (RUN-2)"
            ))));
        }
        let power_loss = self.crash_now() && {
            self.faults.crashes += 1;
            chance(&mut self.g_ctrl, self.rates.power_loss)
        };
        if power_loss {
            // The machine lost power: every process died with it.
            self.faults.power_losses += 1;
            self.machine_dies();
            return Err(Interrupted(End::Crashed));
        }
        self.w.push(events);
        Ok(())
    }

    /// The holder that took driver `d`'s group over since `d`'s lease.
    pub(super) fn fenced(&self, d: &Driver) -> Option<String> {
        let l = self.w.state.lineages.get(&self.w.lineage)?;
        let g = l.groups.get(&self.group)?;
        let (_, lease) = g.lease.as_ref()?;
        (lease.holder != d.holder && d.lease_renewed_ns > 0).then(|| lease.holder.clone())
    }

    fn crash_now(&mut self) -> bool {
        chance(&mut self.g_ctrl, self.rates.crash)
    }

    /// After a crash: perhaps the machine reboots (every process dies).
    pub(super) fn machine_dies_maybe(&mut self) {
        if chance(&mut self.g_ctrl, self.rates.reboot) {
            self.machine_dies();
        }
    }

    /// The machine reboots: every process dies, a new boot id.
    fn machine_dies(&mut self) {
        self.faults.reboots += 1;
        self.boot += 1;
        let now = self.w.now_ns;
        for p in self.procs.values_mut().filter(|p| p.alive) {
            p.alive = false;
            p.killed = true;
            p.ended_ns = Some(now);
        }
    }

    /// Takes (or renews) the lease of the group (RUN-2).
    fn lease(&mut self, d: &mut Driver, holder_gone: bool) -> Act {
        self.lease_for(d, holder_gone, LEASE_NS)
    }

    fn lease_for(&mut self, d: &mut Driver, holder_gone: bool, lasts_ns: u64) -> Act {
        let req = crate::method::decide::LeaseRequest {
            lineage: Some(&self.w.lineage),
            group: &self.group,
            holder: &d.holder,
            process: self.process(d.pid),
            now_utc_ns: self.w.now_ns + SEC,
            lasts_ns,
            holder_gone,
        };
        match crate::method::decide::run_lease(&self.w.state, req) {
            Ok(events) => {
                self.append(d, events)?;
                d.lease_renewed_ns = self.w.now_ns;
                Ok(())
            }
            Err(e) => Err(Interrupted(End::Exited(format!("lease refused: {e}")))),
        }
    }

    /// Starts a driver for the group and runs it until it ends.
    pub(super) fn drive(&mut self, holder_gone: bool) -> End {
        let gref = self.gref();
        let mut d = Driver::new(self, &gref);
        self.driver_since_ns = self.w.now_ns;
        if let Err(Interrupted(end)) = self.lease(&mut d, holder_gone) {
            return end;
        }
        self.adopt_gates();
        loop {
            self.steps += 1;
            if self.steps > self.max_steps {
                self.violation(Violation::new(
                    "liveness",
                    "the run did not end within the step bound",
                ));
                return End::Blocked("step bound".into());
            }
            if self.crash_now() {
                self.faults.crashes += 1;
                self.orphaned(&d);
                self.machine_dies_maybe();
                return End::Crashed;
            }
            self.controller_side_faults(&d);
            if let Some(end) = self.stalled(&mut d) {
                self.orphaned(&d);
                return end;
            }
            match self.one_step(&mut d) {
                Ok(None) => {}
                Ok(Some(end)) | Err(Interrupted(end)) => {
                    self.orphaned(&d);
                    return end;
                }
            }
            self.check_step();
        }
    }

    /// The launches a driver leaves unreaped when it dies (running, or
    /// ended unseen): their cases span a controller crash (the method lets
    /// their outcome differ, CASE-3).
    fn orphaned(&mut self, d: &Driver) {
        for case in d.running.keys() {
            self.crossed
                .insert(format!("{} {}", self.group, case.label()));
        }
    }

    /// A second driver started while `d` runs: its lease must be refused
    /// (RUN-2) and it appends nothing.
    fn controller_side_faults(&mut self, d: &Driver) {
        if !chance(&mut self.g_ctrl, self.rates.second_driver) {
            return;
        }
        self.faults.second_drivers += 1;
        let before = self.w.records.len();
        let gref = self.gref();
        let mut second = Driver::new(self, &gref);
        if self.lease(&mut second, false).is_ok() {
            self.violation(Violation::new(
                "RUN-2",
                &format!(
                    "a second driver took the lease of {} while {} held it",
                    self.group, d.holder
                ),
            ));
        }
        if self.w.records.len() != before + usize::from(self.fenced(d).is_some()) {
            self.violation(Violation::new("RUN-2", "a refused second driver appended"));
        }
    }

    /// The driver stalls past its lease: another driver takes over (the
    /// holder's lease expired); the stalled one's next append is refused.
    fn stalled(&mut self, d: &mut Driver) -> Option<End> {
        if !chance(&mut self.g_ctrl, self.rates.stall) {
            return None;
        }
        self.faults.stalls += 1;
        // What runs now spans the stall: its own driver never sees it end.
        self.orphaned(d);
        // A stall in the settlement phase outlasts the receipt polls' window
        // (the frozen grace; the successor waits out the covered lease):
        // SETTLE-8 allows no poll after it, so the seal may differ.
        let settling = self
            .lineage()
            .groups
            .get(&self.group)
            .is_some_and(|g| g.closed.is_some() && g.sealed.is_none());
        if settling {
            self.crossed
                .insert(format!("{} *receipt-window", self.group));
        }
        // Past the lease's recorded expiry (a covered step's lease lasts
        // longer than LEASE_NS).
        let expires = self
            .lineage()
            .groups
            .get(&self.group)
            .and_then(|g| g.lease.as_ref())
            .map_or(0, |(_, lease)| lease.expires_utc_ns);
        self.w.now_ns = (self.w.now_ns + LEASE_NS).max(expires) + SEC;
        let gref = self.gref();
        let mut taker = Driver::new(self, &gref);
        match self.lease(&mut taker, false) {
            Ok(()) => {}
            // The taker died in its lease's append (a power loss): nothing
            // was taken over; the stalled driver is as good as dead too.
            Err(Interrupted(End::Crashed)) => return Some(End::Crashed),
            Err(_) => {
                self.violation(Violation::new(
                    "RUN-2",
                    "an expired lease was not taken over",
                ));
                return Some(End::Blocked("lease".into()));
            }
        }
        // The stalled driver wakes and tries to append: fenced.
        let probe = vec![Event::OperatorNoted(OperatorNoted {
            lineage: None,
            text: "sim: a fenced driver's append".into(),
        })];
        if self.append(d, probe).is_ok() {
            self.violation(Violation::new(
                "RUN-2",
                "a deposed driver's append was accepted",
            ));
        }
        // The taker's memory is a fresh driver's: the sim continues with a
        // new driver that adopts the deposed one's launches.
        Some(End::Exited("deposed".into()))
    }

    /// One iteration of `Runner::drive`: reap, renew, plan, act.
    fn one_step(&mut self, d: &mut Driver) -> Act<Option<End>> {
        self.sync();
        self.reap(d)?;
        if self.w.now_ns >= d.lease_renewed_ns + RENEW_NS {
            self.lease(d, false)?;
        }
        d.fold_history(self);
        self.refresh_results();
        let plan = self.plan(d);
        let plan = match plan {
            Ok(p) => p,
            Err(e) => return Ok(Some(End::Exited(format!("plan: {e}")))),
        };
        if self.trace {
            eprintln!(
                "t+{} {} {}",
                (self.w.now_ns - crate::testkit::scenario::T0_UTC_NS) / SEC,
                d.holder,
                serde_json::to_string(&plan.next).unwrap_or_default()
            );
        }
        self.act(d, plan.next)
    }

    fn plan(&self, d: &Driver) -> crate::Result<run_plan::RunPlan> {
        let l = self.lineage();
        let job = self.job_dirs();
        let results = &self.results;
        let running: BTreeSet<CaseRef> = d.running.keys().cloned().collect();
        let launches = self.launches_seen(l, &running);
        let facts = Facts {
            now_utc_ns: self.w.now_ns,
            trial_dirs: job,
            results,
            running_here: &running,
            history: &d.history,
            stop_launching: false,
            terminate: self.terminate,
            evidence_gathered: d.evidence_gathered,
            audit_failed_here: d.audit_failed_here,
            last_poll_utc_ns: d.last_poll_utc_ns,
            receipts_collected: d.receipts_collected,
            aws_recorded: false,
            launches: &launches,
        };
        run_plan::next_step(&self.w.state, Some(&self.w.lineage), &self.group, &facts)
    }

    /// As `cli::run::launches_seen`: where each started case's recorded
    /// launch stands on this machine.
    fn launches_seen(
        &self,
        l: &LineageState,
        running: &BTreeSet<CaseRef>,
    ) -> BTreeMap<CaseRef, LaunchSeen> {
        let accepted = &l.frozen.manifest.public.harbor.accepted_exceptions;
        let Some(g) = l.groups.get(&self.group) else {
            return BTreeMap::new();
        };
        g.cases
            .iter()
            .filter(|(case, c)| {
                !running.contains(*case)
                    && c.status(accepted) == crate::method::projections::CaseStatus::Started
            })
            .filter_map(|(case, c)| {
                let p = &c.launched.as_ref()?.1.process;
                let alive = p.boot_id == format!("boot-{}", self.boot)
                    && self.procs.get(&p.pid).is_some_and(|x| x.alive);
                Some((
                    case.clone(),
                    if alive {
                        LaunchSeen::Alive
                    } else {
                        LaunchSeen::Gone
                    },
                ))
            })
            .collect()
    }

    /// Records the exit of every process of `d` that ended, and kills (and
    /// records) every one past its deadline (RUN-4).
    fn reap(&mut self, d: &mut Driver) -> Act {
        let mut ended = Vec::new();
        let cases: Vec<(CaseRef, u32)> = d.running.iter().map(|(c, p)| (c.clone(), *p)).collect();
        for (case, pid) in cases {
            let p = self.procs[&pid].clone();
            let deadline = self.deadlines[&pid];
            if !p.alive {
                ended.push((
                    case,
                    pid,
                    p.killed.then_some(9),
                    p.ended_ns.unwrap_or(self.w.now_ns),
                ));
            } else if self.w.now_ns >= deadline {
                self.kill(pid);
                ended.push((case, pid, Some(9), self.w.now_ns));
            }
        }
        if ended.is_empty() {
            return Ok(());
        }
        // As `Runner::ingest_at_exit`: the results there when each launch
        // ended (its exit witness), those trials only, first.
        let present: BTreeSet<String> = ended
            .iter()
            .map(|(_, pid, _, at)| (self.procs[pid].trial_name.clone(), *at))
            .filter(|(name, at)| self.result_at.get(name).is_some_and(|t| t <= at))
            .map(|(name, _)| name)
            .collect();
        if !present.is_empty() {
            self.ingest_results(d, &present)?;
        }
        for (case, pid, signal, at) in ended {
            let p = self.procs[&pid].clone();
            if p.killed && at == self.w.now_ns && signal.is_some() && self.deadlines[&pid] <= at {
                self.append(
                    d,
                    vec![self.killed(&case, pid, self.deadlines[&pid], p.spawned_ns)],
                )?;
            }
            let exited = Event::CaseProcessExited(CaseProcessExited {
                group: self.gref(),
                case: case.clone(),
                exit_code: signal.is_none().then_some(0),
                signal,
                duration_ms: at.saturating_sub(p.spawned_ns) / 1_000_000,
                log_path: format!("/sim/logs/{}.log", p.trial_name),
                log_blake3: "00".repeat(32),
            });
            self.append(d, vec![exited])?;
            d.running.remove(&case);
        }
        Ok(())
    }

    fn killed(&self, case: &CaseRef, pid: u32, deadline: u64, spawned: u64) -> Event {
        Event::CommandKilled(CommandKilled {
            group: self.gref(),
            case: Some(case.clone()),
            role: CommandRole::Launch,
            argv: vec!["sim-launch".into()],
            pgid: pid,
            signal: 9,
            deadline_ms: deadline.saturating_sub(spawned) / 1_000_000,
            ran_ms: self.w.now_ns.saturating_sub(spawned) / 1_000_000,
        })
    }

    /// Does one step; `Some(end)` ends this driver.
    fn act(&mut self, d: &mut Driver, step: Step) -> Act<Option<End>> {
        // As `run` does: the lease outlasts the step's command deadlines.
        let cover = run_plan::lease_cover_sec(self.lineage(), &step);
        if cover > 0 {
            self.lease_for(d, false, LEASE_NS + cover * SEC)?;
        }
        match step {
            Step::OpenGroup => return self.open_group(d).map(|()| None),
            Step::TakeGates { gates } => self.take_gates(d, &gates)?,
            Step::Stop {
                rule,
                reason,
                evidence_seq,
            } => {
                let events = run_plan::hard_stop(self.lineage(), rule, &reason, evidence_seq);
                if !events.is_empty() {
                    self.append(d, events)?;
                }
            }
            Step::Launch { cases } => {
                for case in cases {
                    self.launch(d, case)?;
                }
                d.sample_due = true;
            }
            Step::IngestResults { cases } => {
                let names = cases
                    .iter()
                    .map(|c| crate::schema::names::trial_name(&c.task, &self.group, c))
                    .collect();
                self.ingest_results(d, &names)?;
            }
            Step::Invalidate { orphans } => self.invalidate(d, &orphans)?,
            Step::KillLaunch { case, pgid } => self.kill_adopted(d, &case, pgid)?,
            Step::Sample => self.sample(d)?,
            Step::Wait {
                cases,
                until_utc_ns,
            } => self.wait(d, &cases, until_utc_ns)?,
            Step::Paused => return Ok(Some(End::Blocked("paused".into()))),
            Step::Close => {
                self.wait_all(d)?;
                let (l, g) = (self.w.lineage.clone(), self.group.clone());
                match crate::method::decide::group_close(&self.w.state, Some(&l), &g) {
                    Ok(events) => self.append(d, events)?,
                    Err(e) => return Ok(Some(self.refused("group close", &e))),
                }
            }
            Step::GatherEvidence => return self.gather_evidence(d),
            Step::PollReceipts { request_ids } => self.poll(d, &request_ids)?,
            Step::CollectReceipts { request_ids } => {
                self.collect(d, &request_ids)?;
                d.receipts_collected = true;
            }
            Step::WaitUntil { until_utc_ns, .. } => self.wait(d, &[], Some(until_utc_ns))?,
            Step::Audit => self.audit(d)?,
            Step::Terminate { .. } => self.terminate_residue(d)?,
            Step::Seal => {
                let (l, g) = (self.w.lineage.clone(), self.group.clone());
                let now = self.w.now_ns + SEC;
                match crate::method::decide::seal(&self.w.state, Some(&l), &g, now) {
                    Ok(events) => {
                        let sealed = events.iter().find_map(|e| match e {
                            Event::GroupSealed(s) => Some(s.clone()),
                            _ => None,
                        });
                        self.append(d, events)?;
                        if let Some(s) = sealed {
                            self.record_seal(s);
                        }
                    }
                    Err(e) => return Ok(Some(self.refused("seal", &e))),
                }
            }
            Step::Done { .. } => return Ok(Some(End::Done)),
            Step::Blocked { reason } => return Ok(Some(End::Blocked(reason))),
        }
        Ok(None)
    }

    /// A refusal of a step the planner chose: the planner and decide
    /// disagree.
    fn refused(&mut self, what: &str, e: &crate::error::Error) -> End {
        self.violation(Violation::new(
            "planner",
            &format!("decide refused the planned {what}: {e}"),
        ));
        End::Blocked(format!("{what} refused"))
    }

    /// `group open` as the operator records it (GATE-4): a refusal ends the
    /// lineage here (GATE-9 after a canary that did not prove c).
    fn open_group(&mut self, d: &Driver) -> Act {
        let cmd = self.w.group_open_command(&self.group);
        match crate::method::decide::group_open(&self.w.state, cmd) {
            Ok(events) => self.append(d, events),
            Err(e) => Err(Interrupted(End::Blocked(format!(
                "group open refused: {e}"
            )))),
        }
    }

    /// Takes the gates in order; stops at the first failing one (GATE-1).
    fn take_gates(&mut self, d: &Driver, gates: &[GateId]) -> Act {
        for gate in gates {
            let event = self.gate_observation(*gate);
            let failed = match &event {
                Event::IdentityChecked(e) => e.status != Status::Pass,
                Event::QuotaChecked(e) => e.status != Status::Pass,
                Event::CheckRecorded(e) => e.status != Status::Pass,
                _ => false,
            };
            self.append(d, vec![event])?;
            if failed {
                self.gate_failed_at
                    .get_or_insert(self.w.records.len() as u64);
                return Ok(());
            }
        }
        Ok(())
    }

    fn gate_observation(&mut self, gate: GateId) -> Event {
        let l = self.lineage();
        let m = l.frozen.manifest.public.clone();
        let lineage = self.w.lineage.clone();
        let pass = crate::testkit::scenario::aws_observations(&l.frozen, &self.group);
        let slots = run_plan::free_slots(l);
        let owned = run_plan::running_trials(l, &self.group);
        let aws_error = gate.calls_aws() && chance(&mut self.g_world, self.rates.aws_error);
        if aws_error {
            self.faults.aws_errors += 1;
        }
        let err = || AwsError("ThrottlingException: Rate exceeded (sim)".into());
        match gate {
            GateId::Identity => {
                let flip = chance(&mut self.g_world, self.rates.identity_flip);
                self.faults.identity_flips += u64::from(flip);
                match (&pass[0], aws_error, flip) {
                    (Event::IdentityChecked(p), false, false) => Event::IdentityChecked(p.clone()),
                    (Event::IdentityChecked(p), _, _) => {
                        let mut e = p.clone();
                        e.status = Status::Fail;
                        e.account = None;
                        e.principal = None;
                        e.error = Some(if aws_error {
                            err().0
                        } else {
                            "GATE-1: the principal differs from the frozen aws.principal_arn".into()
                        });
                        Event::IdentityChecked(e)
                    }
                    _ => unreachable!("aws_observations starts with the identity"),
                }
            }
            GateId::Quota => {
                let short = chance(&mut self.g_world, self.rates.quota_short);
                self.faults.quota_shortfalls += u64::from(short);
                let quota = if short { m.sandbox.vcpu } else { 256 };
                let live = self.live_instances(&m);
                let vcpus = BTreeMap::from([(m.sandbox.instance_type.clone(), m.sandbox.vcpu)]);
                let outcome = if aws_error {
                    Err(err())
                } else {
                    // The example lineage provisions its central host outside
                    // benchledger (no [central.launch]): always still to come.
                    rules::quota_numbers(&m, quota, &live, &vcpus, slots, true)
                };
                Event::QuotaChecked(rules::quota_observation(&m, &m.aws.region, &outcome))
            }
            GateId::CentralHost => {
                // A lineage that manages its central host (reuse, or a
                // frozen launch): the frozen host, running, as EC2 would
                // describe it; an AWS error leaves it unobserved.
                let c = &m.central;
                let id = c
                    .instance_id
                    .clone()
                    .unwrap_or_else(|| "i-0sim0central".into());
                let host = crate::schema::central::CentralInstance {
                    id: id.clone(),
                    ami: c.ami.clone(),
                    instance_type: c.instance_type.clone(),
                    state: "running".into(),
                    tags: BTreeMap::from([
                        (m.tags.run_key.clone(), m.tags.run_value.clone()),
                        (m.tags.role_key.clone(), c.role_tag_value.clone()),
                    ]),
                    // Launched at the address the sandboxes are given.
                    private_ip: Some(c.daemon_host.clone()),
                    ..Default::default()
                };
                let seen = if aws_error {
                    Err(err().0)
                } else {
                    Ok(Some(&host))
                };
                Event::CheckRecorded(crate::method::central::observation(
                    &m,
                    crate::schema::central::CentralAction::Checked,
                    &id,
                    seen,
                    &m.aws.region,
                ))
            }
            GateId::Residue => {
                if chance(&mut self.g_world, self.rates.stray) {
                    self.faults.strays += 1;
                    self.cloud.start(None);
                }
                let live = self.live_instances(&m);
                let outcome = if aws_error {
                    Err(err().0)
                } else {
                    Ok(rules::split_owned(&m, &live, &owned))
                };
                Event::CheckRecorded(rules::residue_observation(
                    &lineage,
                    &self.group,
                    &format!("{}={}", m.tags.run_key, m.tags.run_value),
                    &m.aws.region,
                    "arn:aws:sts::***:assumed-role/bench-operator/***",
                    &outcome,
                ))
            }
            GateId::DaemonHealth => {
                let flap = chance(&mut self.g_world, self.rates.health_flap);
                self.faults.health_flaps += u64::from(flap);
                let url = self.daemon_url(&m, "/health");
                let outcome = if flap {
                    Err(HttpFailure {
                        error: "connection refused".into(),
                        latency_ms: 1,
                    })
                } else {
                    Ok(answer(200, "health"))
                };
                Event::CheckRecorded(health_observation(
                    &lineage,
                    &self.group,
                    &url.text(),
                    &outcome,
                ))
            }
            GateId::Sentinel(tier) => {
                let fail = chance(&mut self.g_world, self.rates.sentinel_fail);
                self.faults.sentinel_failures += u64::from(fail);
                let route = m.route(tier).expect("a gate's tier is routed").clone();
                let url = self.daemon_url(&m, "/v1/chat/completions");
                self.sentinels += 1;
                let status = if fail {
                    [429, 502][self.sentinels % 2]
                } else {
                    200
                };
                let outcome = Ok(answer(status, &format!("sentinel-{}", self.sentinels)));
                Event::CheckRecorded(sentinel_observation(
                    &lineage,
                    Some(&self.group),
                    &route,
                    &url,
                    &outcome,
                ))
            }
        }
    }

    fn daemon_url(&self, m: &crate::schema::manifest::ManifestFile, path: &str) -> HttpUrl {
        let port = m
            .groups
            .iter()
            .find(|g| g.name == self.group)
            .and_then(|g| g.ports.first().copied())
            .unwrap_or(80);
        HttpUrl {
            host: m.central.daemon_host.clone(),
            port,
            path: path.into(),
        }
    }

    /// The live run-tagged sandboxes as DescribeInstances answers them.
    fn live_instances(&self, m: &crate::schema::manifest::ManifestFile) -> Vec<LiveInstance> {
        self.cloud
            .live()
            .into_iter()
            .map(|s| LiveInstance {
                id: s.id.clone(),
                instance_type: m.sandbox.instance_type.clone(),
                state: "running".into(),
                tags: [
                    (m.tags.run_key.clone(), m.tags.run_value.clone()),
                    (m.tags.role_key.clone(), m.tags.sandbox_role_value.clone()),
                ]
                .into_iter()
                .chain(
                    s.trial
                        .iter()
                        .map(|t| (m.tags.trial_key.clone(), t.clone())),
                )
                .collect(),
            })
            .collect()
    }

    /// Renders, validates and starts one case (`case start`'s decide) as
    /// `Runner::launch` does: its launch spawned behind a gate and recorded
    /// in the start's own append, the gate opened after it (RUN-3).
    fn launch(&mut self, d: &mut Driver, case: CaseRef) -> Act {
        let m = self.lineage().frozen.manifest.public.clone();
        let rendered = match crate::method::trial_config::render(&m, &self.group, &case) {
            Ok(r) => r,
            Err(e) => return Err(Interrupted(self.refused("render", &e))),
        };
        let v = self.w.validation(&rendered.blake3, true);
        self.append(d, vec![v])?;
        let name = trial_name(&case.task, &self.group, &case);
        let cmd = crate::method::decide::CaseStart {
            lineage: Some(self.w.lineage.clone()),
            group: self.group.clone(),
            case: case.clone(),
            trial_name: name.clone(),
            trial_config_blake3: rendered.blake3,
            command: vec!["sim-launch".into(), name.clone()],
            now_utc_ns: self.w.now_ns + SEC,
        };
        let mut events = match crate::method::decide::case_start(&self.w.state, cmd) {
            Ok(events) => events,
            Err(e) => return Err(Interrupted(self.refused("case start", &e))),
        };
        // The gated shell exists: its pid is known, nothing of it runs.
        let pid = self.gate();
        if self.crash_now() {
            // Before the append: the gate reads end of file, nothing ran,
            // nothing was recorded, the identity is not consumed.
            self.faults.crashes += 1;
            self.machine_dies_maybe();
            return Err(Interrupted(End::Crashed));
        }
        let deadline = self.w.now_ns + self.timeout_ns();
        self.deadlines.insert(pid, deadline);
        events.push(Event::CaseLaunched(CaseLaunched {
            group: self.gref(),
            case: case.clone(),
            process: self.process(pid),
            deadline_utc_ns: deadline,
        }));
        self.append(d, events)?;
        self.starts_done += 1;
        if self.crash_now() {
            // Recorded, never opened: the gate waits for a rerun to adopt
            // the launch and open it (RUN-3).
            self.faults.crashes += 1;
            self.gate_left(pid, &case, &name);
            // Its launch waits for the next driver: its time spans the crash.
            self.crossed
                .insert(format!("{} {}", self.group, case.label()));
            self.machine_dies_maybe();
            return Err(Interrupted(End::Crashed));
        }
        self.spawn(pid, &case, &name);
        d.running.insert(case, pid);
        Ok(())
    }

    /// The result files of every started case of the group, ingested as
    /// `ingest harbor` does the whole jobs directory.
    fn ingest_results(&mut self, d: &Driver, only: &BTreeSet<String>) -> Act {
        self.refresh_results();
        let present: BTreeSet<String> = self.results.intersection(only).cloned().collect();
        let g = self.gref();
        let todo: Vec<(CaseRef, ResultScript)> = self.lineage().groups[&self.group]
            .cases
            .iter()
            .filter(|(_, c)| c.started.is_some() && c.result.is_none())
            .filter_map(|(case, c)| {
                let name = &c.started.as_ref()?.1.trial_name;
                present.contains(name).then(|| {
                    let pid = self.pid_of(name)?;
                    Some((case.clone(), self.scripts[&pid].result.clone()))
                })?
            })
            .collect();
        for (case, script) in todo {
            if crate::method::decide::trial_result_case(&self.w.state, &g, &case).is_err() {
                continue;
            }
            if let Some(by) = self.fenced(d) {
                return Err(Interrupted(End::Exited(format!("fenced by {by}"))));
            }
            let (reward, exception) = match script {
                ResultScript::Reward(r) => (Some(r), None),
                ResultScript::Exception(x) => (None, Some(x)),
                ResultScript::Late(_) => (Some("1.0"), None),
                ResultScript::Missing => continue,
            };
            self.w.result(&self.group.clone(), &case, reward, exception);
        }
        Ok(())
    }

    /// Started cases without a result or a process: terminal_invalid
    /// (CASE-3).
    fn invalidate(&mut self, d: &Driver, orphans: &[Orphan]) -> Act {
        let g = self.gref();
        for o in orphans {
            let path = format!("/sim/invalidations/{}.json", o.trial_name);
            let listing = hex::encode(blake3::hash(path.as_bytes()).as_bytes());
            match crate::method::decide::case_invalidate(
                &self.w.state,
                &g,
                &o.case,
                o.reason,
                path,
                listing,
            ) {
                Ok(events) => self.append(d, events)?,
                Err(e) => return Err(Interrupted(self.refused("invalidate", &e))),
            }
        }
        Ok(())
    }

    /// Kills an adopted launch past its deadline and records its kill and
    /// end (RUN-3, RUN-4).
    fn kill_adopted(&mut self, d: &Driver, case: &CaseRef, pgid: u32) -> Act {
        let alive = self.procs.get(&pgid).is_some_and(|p| p.alive);
        if !alive {
            return Ok(());
        }
        let p = self.procs[&pgid].clone();
        self.kill(pgid);
        let deadline = self.deadlines[&pgid];
        self.append(d, vec![self.killed(case, pgid, deadline, p.spawned_ns)])?;
        let exited = Event::CaseProcessExited(CaseProcessExited {
            group: self.gref(),
            case: case.clone(),
            exit_code: None,
            signal: Some(9),
            duration_ms: self.w.now_ns.saturating_sub(p.spawned_ns) / 1_000_000,
            log_path: format!("/sim/logs/{}.log", p.trial_name),
            log_blake3: String::new(),
        });
        self.append(d, vec![exited])
    }

    /// One `monitor_sampled` of the live run-tagged sandboxes (CLEAN-2).
    fn sample(&mut self, d: &mut Driver) -> Act {
        let ids: Vec<String> = self.cloud.live().iter().map(|s| s.id.clone()).collect();
        if chance(&mut self.g_world, self.rates.aws_error) {
            self.faults.aws_errors += 1;
            return Err(Interrupted(End::Exited("monitor sample: AWS error".into())));
        }
        let e = Event::MonitorSampled(MonitorSampled {
            group: self.gref(),
            sandbox_count: ids.len() as u64,
            instance_ids: ids,
        });
        self.append(d, vec![e])?;
        d.last_sample_ns = Some(self.w.now_ns);
        d.sample_due = false;
        Ok(())
    }

    /// Waits: the time moves to the next thing the wait watches (an exit,
    /// a result, a deadline, `until`, the monitor's or the lease's turn).
    /// `Runner::adopt_gates`, once the lease is held: the gate of every
    /// recorded launch that still waits (its driver died after recording
    /// it) is opened, or closed after a hard stop (RUN-3, VERDICT-3).
    fn adopt_gates(&mut self) {
        let boot = format!("boot-{}", self.boot);
        let l = self.lineage();
        let stopped = l.stopped.is_some();
        let gates: Vec<(CaseRef, u32)> = l.groups[&self.group]
            .cases
            .iter()
            .filter_map(|(c, x)| Some((c.clone(), &x.launched.as_ref()?.1.process)))
            .filter(|(_, p)| p.boot_id == boot)
            .map(|(c, p)| (c, p.pid))
            .filter(|(_, pid)| {
                self.procs
                    .get(pid)
                    .is_some_and(|p| p.alive && p.gate_until_ns.is_some())
            })
            .collect();
        for (case, pid) in gates {
            if stopped {
                self.kill(pid);
                continue;
            }
            let name = trial_name(&case.task, &self.group, &case);
            self.faults.gates_opened += 1;
            self.spawn(pid, &case, &name);
        }
    }

    fn wait(&mut self, d: &mut Driver, cases: &[CaseRef], until: Option<u64>) -> Act {
        let now = self.w.now_ns;
        let mut next = until.unwrap_or(u64::MAX);
        for pid in d.running.values() {
            let p = &self.procs[pid];
            if p.alive {
                next = next.min(self.deadlines[pid]);
                if let Some(t) = p.exits_ns {
                    next = next.min(t);
                }
            } else {
                next = now;
            }
        }
        let mut adopted = false;
        for case in cases.iter().filter(|c| !d.running.contains_key(*c)) {
            let name = trial_name(&case.task, &self.group, case);
            if let Some(pid) = self.pid_of(&name) {
                let p = &self.procs[&pid];
                adopted |= p.alive;
                if let (true, Some(t)) = (p.alive, p.exits_ns) {
                    next = next.min(t);
                }
                if let Some(t) = self.result_at.get(&name) {
                    next = next.min(*t);
                }
            }
        }
        next = next.min(d.lease_renewed_ns + RENEW_NS);
        if !d.running.is_empty() || adopted {
            // `Runner::drive`'s idle loop: a sample after each wave, then
            // one every RUN_MONITOR_INTERVAL_MS while its own or adopted
            // cases run.
            let due = if d.sample_due {
                now
            } else {
                d.last_sample_ns.map_or(now, |t| t + MONITOR_NS)
            };
            if due <= next {
                self.w.now_ns = now.max(due);
                self.sync();
                return self.sample(d);
            }
        }
        if next == u64::MAX {
            return Err(Interrupted(End::Blocked(
                "a wait with nothing to wait for".into(),
            )));
        }
        self.w.now_ns = now.max(next);
        Ok(())
    }

    /// Before the close: every launched process of this driver ends.
    fn wait_all(&mut self, d: &mut Driver) -> Act {
        while !d.running.is_empty() {
            self.sync();
            self.reap(d)?;
            if d.running.is_empty() {
                break;
            }
            let next = d
                .running
                .values()
                .map(|pid| {
                    let p = &self.procs[pid];
                    p.exits_ns.unwrap_or(u64::MAX).min(self.deadlines[pid])
                })
                .min()
                .unwrap_or(self.w.now_ns);
            self.w.now_ns = self.w.now_ns.max(next);
        }
        Ok(())
    }
}

fn answer(status: u16, id: &str) -> HttpResponse {
    HttpResponse {
        status,
        headers: vec![(
            crate::gates::checks::REQUEST_ID_HEADER.to_string(),
            id.to_string(),
        )],
        body: Vec::new(),
        latency_ms: 12,
    }
}
