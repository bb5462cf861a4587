//! A deterministic simulator of `benchledger run` (issue 28), in the spirit
//! of TigerBeetle's VOPR and FoundationDB's simulation testing: the
//! production planner (`run_plan::next_step`), the production decide
//! functions, observation builders and fold, driven against a simulated
//! machine, cloud and BitRouter daemon with simulated time, every fault
//! drawn from one seed, and the method's promises checked after every step
//! and at the end. Test support only: never in the production binary.
//!
//! [`check_seed`] runs a seed twice, with controller faults (crashes,
//! reboots, power loss, a second driver, a stalled one) and without, and
//! compares the two: a verdict may differ only where the method names why
//! (a controller crash, a hard stop). A failing seed prints its one-line
//! reproduction ([`reproduction`]).

mod checks;
mod driver;
mod evidence;
mod world;

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

pub use checks::Violation;
pub use world::{FaultCounts, Rates};

use crate::rng::SplitMix64;
use crate::schema::events::{CaseRef, Event, GroupRef};
use crate::testkit::scenario::World;
use world::{case_script, stream, CaseScript, Cloud, Proc, ResultScript, SEC};

/// What one simulated run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    pub seed: u64,
    /// Crashes, reboots, power loss, second and stalled drivers.
    pub controller_faults: bool,
    /// The example's 89 tasks x 5 trials in four groups (1,780 cases) of
    /// 5-30 minute cases, instead of the short lineage.
    pub scale: bool,
    /// Write the records to a sled ledger in a temp dir and verify it
    /// (disk I/O: most of a seed's wall time).
    pub verify_ledger: bool,
}

/// What a run did and found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Outcome {
    pub seed: u64,
    /// The frozen concurrency.
    pub concurrency: u32,
    /// Driver steps.
    pub steps: u64,
    /// Drivers started (1 + restarts).
    pub drivers: u64,
    /// Records appended.
    pub records: u64,
    /// Cases started.
    pub starts: u64,
    /// Simulated seconds.
    pub simulated_sec: u64,
    /// Each group's sealed status, or why it did not seal.
    pub groups: BTreeMap<String, String>,
    /// Each case's status by `group task/trial`.
    pub cases: BTreeMap<String, String>,
    /// Cases invalidated as controller crashes, or whose launch a dying
    /// driver left running (both span a controller crash).
    pub crash_invalidated: BTreeSet<String>,
    /// The hard stop, if one was recorded.
    pub stopped: Option<String>,
    /// The failing rows of each sealed group, with their evidence.
    pub failing: BTreeMap<String, Vec<String>>,
    /// Why each driver but the last ended.
    pub ends: Vec<String>,
    /// Faults injected.
    pub faults: FaultCounts,
    /// Invariant violations.
    pub violations: Vec<Violation>,
    /// The central host: `none` (the operator's), else how many
    /// `central_host` observations the drivers recorded and whether it was
    /// torn down (issue 30).
    pub central: String,
}

/// The one-line reproduction of a seed.
pub fn reproduction(seed: u64) -> String {
    format!(
        "cargo run --release --no-default-features --features testkit --example sim -- --seed {seed}"
    )
}

/// The simulation of one lineage.
pub struct Sim {
    seed: u64,
    rates: Rates,
    w: World,
    group: String,
    concurrency: u32,
    timeout_ns: u64,
    terminate: bool,
    procs: BTreeMap<u32, Proc>,
    scripts: BTreeMap<u32, CaseScript>,
    deadlines: BTreeMap<u32, u64>,
    spawned: BTreeMap<String, Vec<u32>>,
    sandbox_of: BTreeMap<u32, String>,
    result_at: BTreeMap<String, u64>,
    /// The trial directories (every spawned trial name), kept as spawned.
    dirs: BTreeSet<String>,
    /// The trial directories holding a result.json at `refresh_results`,
    /// and the results still to be written, by time.
    results: BTreeSet<String>,
    results_due: BTreeSet<(u64, String)>,
    cloud: Cloud,
    boot: u32,
    next_pid: u32,
    g_world: SplitMix64,
    g_ctrl: SplitMix64,
    steps: u64,
    max_steps: u64,
    drivers: u64,
    sentinels: usize,
    starts_done: u64,
    gate_failed_at: Option<u64>,
    pending: BTreeSet<String>,
    exported: bool,
    evidence_recorded: bool,
    ends: Vec<String>,
    trace: bool,
    scale: bool,
    crossed: BTreeSet<String>,
    driver_since_ns: u64,
    verify_ledger: bool,
    sealed: BTreeMap<String, crate::schema::events::GroupSealed>,
    faults: FaultCounts,
    violations: Vec<Violation>,
}

/// The most drivers one group may take before the run counts as stuck.
const MAX_DRIVERS_PER_GROUP: u64 = 200;

impl Sim {
    /// A lineage frozen for `cfg`: concurrency, canary and launch timeout
    /// drawn from the seed.
    pub fn new(cfg: Config) -> crate::Result<Sim> {
        let mut g = stream(cfg.seed, "shape");
        let concurrency = [1u32, 2, 3, 4, 8][g.below(5) as usize];
        let timeout_sec = if cfg.scale { 7_200 } else { 150 + g.below(200) };
        // Half the short lineages provision their central host through the
        // driver (its gate before every wave, its teardown at the end).
        let central = !cfg.scale && g.below(2) == 1;
        let (public, private) = checks::manifest(concurrency, timeout_sec, cfg.scale, central);
        let mut w = World::new();
        w.requests_per_case = 2;
        w.freeze(&public, &private)?;
        let steps_per_case = if cfg.scale { 1_200 } else { 400 };
        Ok(Sim {
            seed: cfg.seed,
            rates: if cfg.scale {
                Rates::at_scale(cfg.seed, cfg.controller_faults)
            } else {
                Rates::of_seed(cfg.seed, cfg.controller_faults)
            },
            w,
            group: String::new(),
            concurrency,
            timeout_ns: timeout_sec * SEC,
            terminate: g.below(2) == 0,
            scale: cfg.scale,
            procs: BTreeMap::new(),
            scripts: BTreeMap::new(),
            deadlines: BTreeMap::new(),
            spawned: BTreeMap::new(),
            sandbox_of: BTreeMap::new(),
            result_at: BTreeMap::new(),
            dirs: BTreeSet::new(),
            results: BTreeSet::new(),
            results_due: BTreeSet::new(),
            cloud: Cloud::default(),
            boot: 1,
            next_pid: 1_000,
            g_world: stream(cfg.seed, "world"),
            g_ctrl: stream(cfg.seed, "controller"),
            steps: 0,
            max_steps: steps_per_case * if cfg.scale { 1_800 } else { 60 },
            drivers: 0,
            sentinels: 0,
            starts_done: 0,
            gate_failed_at: None,
            pending: BTreeSet::new(),
            exported: false,
            evidence_recorded: false,
            ends: Vec::new(),
            crossed: BTreeSet::new(),
            driver_since_ns: 0,
            verify_ledger: cfg.verify_ledger,
            trace: std::env::var_os("BENCHLEDGER_SIM_TRACE").is_some(),
            sealed: BTreeMap::new(),
            faults: FaultCounts::default(),
            violations: Vec::new(),
        })
    }

    fn gref(&self) -> GroupRef {
        GroupRef {
            lineage: self.w.lineage.clone(),
            group: self.group.clone(),
        }
    }

    fn lineage(&self) -> &crate::method::projections::LineageState {
        &self.w.state.lineages[&self.w.lineage]
    }

    /// A draw fixed by the seed and `label` alone (the same in a run with
    /// controller faults and without).
    fn keyed(&self, label: &str, ppm: world::Ppm) -> bool {
        world::chance(&mut stream(self.seed, label), ppm)
    }

    fn timeout_ns(&self) -> u64 {
        self.timeout_ns
    }

    fn violation(&mut self, v: Violation) {
        self.violations
            .push(v.at(self.w.records.len() as u64, self.w.now_ns));
    }

    /// The Harbor trial directories: one per spawned launch (CASE-4).
    fn job_dirs(&self) -> &BTreeSet<String> {
        &self.dirs
    }

    /// Moves the results written by now into `results` (time only moves
    /// forward): after it, `results` is every trial name whose result_at
    /// is at or before now.
    fn refresh_results(&mut self) {
        let now = self.w.now_ns;
        while let Some((t, name)) = self.results_due.first().cloned() {
            if t > now {
                break;
            }
            self.results_due.pop_first();
            self.results.insert(name);
        }
        debug_assert!(self.results.len() <= self.result_at.len());
    }

    /// The result of `name` is written at `t` (a second write moves it).
    fn write_result(&mut self, name: &str, t: u64) {
        if let Some(old) = self.result_at.insert(name.to_string(), t) {
            self.results_due.remove(&(old, name.to_string()));
            self.results.remove(name);
        }
        self.results_due.insert((t, name.to_string()));
    }

    fn pid_of(&self, trial_name: &str) -> Option<u32> {
        self.spawned.get(trial_name)?.first().copied()
    }

    /// A gated launch's shell: a pid, nothing running yet (RUN-3).
    fn gate(&mut self) -> u32 {
        self.next_pid += 1;
        self.next_pid
    }

    /// A recorded gate its driver died before opening: it waits for a
    /// rerun to open it (RUN-3), and past its wait exits having run
    /// nothing (no trial directory, no sandbox, no result).
    fn gate_left(&mut self, pid: u32, case: &CaseRef, name: &str) {
        let wait = (crate::limits::LAUNCH_GATE_WAIT_SEC * SEC).min(self.timeout_ns());
        let p = Proc {
            gate_until_ns: Some(self.w.now_ns + wait),
            ..self.proc_now(pid, case, name)
        };
        self.procs.insert(pid, p);
    }

    /// Process `pid` of `case` as it starts now: alive, no exit yet.
    fn proc_now(&self, pid: u32, case: &CaseRef, name: &str) -> Proc {
        Proc {
            pid,
            boot: self.boot,
            spawned_ns: self.w.now_ns,
            group: self.group.clone(),
            case: case.clone(),
            trial_name: name.to_string(),
            exits_ns: None,
            alive: true,
            ended_ns: None,
            killed: false,
            gate_until_ns: None,
        }
    }

    /// Opens the gate of launch `pid`: the case's command runs as it (its
    /// process group is its pid).
    fn spawn(&mut self, pid: u32, case: &CaseRef, name: &str) {
        assert!(
            self.procs
                .get(&pid)
                .is_none_or(|p| p.alive && p.gate_until_ns.is_some()),
            "a gate is opened once, while it waits"
        );
        if let Some((_, stop)) = &self.lineage().stopped {
            let why = format!("{} began running after the hard stop {}", name, stop.rule);
            self.violation(Violation::new("VERDICT-3", &why));
        }
        let script = case_script(self.seed, &self.rates, self.scale, &self.group, case);
        self.count_script(&script);
        let p = Proc {
            exits_ns: script.runs_ns.map(|r| self.w.now_ns + r),
            ..self.proc_now(pid, case, name)
        };
        self.procs.insert(pid, p);
        self.scripts.insert(pid, script);
        self.spawned.entry(name.to_string()).or_default().push(pid);
        self.dirs.insert(name.to_string());
    }

    fn count_script(&mut self, s: &CaseScript) {
        let f = &mut self.faults;
        f.hangs += u64::from(s.runs_ns.is_none());
        f.leaked_sandboxes += u64::from(s.leaks_sandbox);
        match s.result {
            ResultScript::Exception(_) => f.invalid_results += 1,
            ResultScript::Missing => f.missing_results += 1,
            ResultScript::Late(_) => f.late_results += 1,
            ResultScript::Reward(_) => {}
        }
    }

    /// Kills a process group: Harbor dies before it tears its sandbox down.
    fn kill(&mut self, pid: u32) {
        let now = self.w.now_ns;
        if let Some(p) = self.procs.get_mut(&pid).filter(|p| p.alive) {
            p.alive = false;
            p.killed = true;
            p.ended_ns = Some(now);
        }
    }

    /// Moves the world to now: sandboxes come up, processes exit by
    /// themselves, results are written, sandboxes are torn down.
    fn sync(&mut self) {
        let now = self.w.now_ns;
        let pids: Vec<u32> = self
            .procs
            .values()
            .filter(|p| p.alive)
            .map(|p| p.pid)
            .collect();
        for pid in pids {
            let p = self.procs[&pid].clone();
            if let Some(until) = p.gate_until_ns {
                // A gate nobody opened exits at the end of its wait.
                if until <= now {
                    let e = self.procs.get_mut(&pid).expect("a live pid");
                    e.alive = false;
                    e.ended_ns = Some(until);
                }
                continue;
            }
            let s = self.scripts[&pid].clone();
            let up_at = p.spawned_ns + s.sandbox_after_ns;
            let exits = p.exits_ns.unwrap_or(u64::MAX);
            if up_at <= now && up_at < exits && !self.sandbox_of.contains_key(&pid) {
                let id = self.cloud.start(Some(p.trial_name.clone()));
                self.sandbox_of.insert(pid, id);
            }
            if exits > now {
                continue;
            }
            let e = self.procs.get_mut(&pid).expect("a live pid");
            e.alive = false;
            e.ended_ns = Some(exits);
            let written = match s.result {
                ResultScript::Reward(_) | ResultScript::Exception(_) => Some(exits),
                ResultScript::Late(after) => Some(exits + after),
                ResultScript::Missing => None,
            };
            if let Some(t) = written {
                self.write_result(&p.trial_name, t);
            }
            if let (false, Some(id)) = (s.leaks_sandbox, self.sandbox_of.get(&pid).cloned()) {
                self.cloud.terminate(&id);
            }
        }
    }

    fn record_seal(&mut self, s: crate::schema::events::GroupSealed) {
        self.check_seal(&s.status);
        if self.sealed.insert(self.group.clone(), s).is_some() {
            self.violation(Violation::new("VERDICT-4", "a group was sealed twice"));
        }
    }

    /// What `run` does after the lineage's last group or a hard stop
    /// (`cli::run`'s teardown, issue 30): a provisioned central host is
    /// terminated and the exact-tag query (the simulated cloud never holds
    /// it) answers empty. Then it must be recorded exactly when due.
    fn central_teardown(&mut self) {
        let Ok(l) = self.w.state.lineage(None) else {
            return;
        };
        let due = crate::method::central::teardown_due(l);
        if due {
            let id = crate::method::central::recorded_host(l)
                .map_or(crate::method::central::NO_HOST.to_string(), |(id, _)| id);
            let e = crate::method::central::teardown(
                l,
                &id,
                &format!("{id}: ok: shutting-down"),
                Ok(0),
                "us-east-1",
            );
            self.w.push(vec![Event::CheckRecorded(e)]);
        }
        let l = self.w.state.lineage(None).expect("the lineage");
        let provisioned = l.central_launch.is_some();
        let ended = l.stopped.is_some()
            || l.frozen
                .manifest
                .public
                .groups
                .last()
                .and_then(|g| l.groups.get(&g.name))
                .is_some_and(|g| g.sealed.is_some());
        if provisioned && ended && crate::method::central::torn_down(l).is_none() {
            self.violation(Violation::new(
                "CLEAN-3",
                "the provisioned central host was not torn down after the lineage ended",
            ));
        }
    }

    /// Runs one group to its end with as many drivers as it takes.
    fn run_group(&mut self, group: &str) -> String {
        self.group = group.to_string();
        self.exported = false;
        self.evidence_recorded = false;
        let mut holder_gone = false;
        for _ in 0..MAX_DRIVERS_PER_GROUP {
            self.drivers += 1;
            match self.drive(holder_gone) {
                driver::End::Done => {
                    return self
                        .sealed
                        .get(group)
                        .map_or("sealed earlier".into(), |s| s.status.clone())
                }
                driver::End::Blocked(why) => return format!("blocked: {why}"),
                driver::End::Crashed => {
                    self.ends.push("crashed".into());
                    holder_gone = true;
                }
                driver::End::Exited(why) => {
                    self.ends.push(why);
                    holder_gone = true;
                }
            }
        }
        self.violation(Violation::new(
            "liveness",
            &format!("{group} took {MAX_DRIVERS_PER_GROUP} drivers without ending"),
        ));
        "stuck".into()
    }

    /// Runs the lineage's groups in order; r1's accepted verdict is fed
    /// back before r2 (LINEAGE-3).
    pub fn run(mut self) -> Outcome {
        let groups: Vec<String> = self
            .lineage()
            .frozen
            .manifest
            .public
            .group_names()
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut out = Outcome {
            seed: self.seed,
            concurrency: self.concurrency,
            ..Outcome::default()
        };
        for g in &groups {
            let status = self.run_group(g);
            let accepted = status == "accepted";
            out.groups.insert(g.clone(), status);
            if !accepted {
                break;
            }
            if g == "r1" || g == "r2" {
                let _ = self.w.feedback(g);
            }
        }
        self.central_teardown();
        self.finish(out)
    }
}

/// Runs one configuration.
pub fn simulate(cfg: Config) -> crate::Result<Outcome> {
    Ok(Sim::new(cfg)?.run())
}

/// Runs a seed with and without controller faults and checks the two
/// against each other: a case's status may differ only where the run with
/// faults invalidated it as a controller crash, or where a hard stop ended
/// either run first (VERDICT-3).
pub fn check_seed(
    seed: u64,
    scale: bool,
    verify_ledger: bool,
) -> crate::Result<(Outcome, Outcome)> {
    let mut a = simulate(Config {
        seed,
        controller_faults: true,
        scale,
        verify_ledger,
    })?;
    let b = simulate(Config {
        seed,
        controller_faults: false,
        scale,
        verify_ledger: false,
    })?;
    let compared = checks::compare(&a, &b);
    a.violations.extend(compared);
    Ok((a, b))
}
