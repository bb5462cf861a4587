//! The simulated world around the driver: one controller machine (its
//! processes, its boot), the cloud (STS, the vCPU quota, run-tagged
//! sandboxes, stray residue, API errors) and the BitRouter daemon (health,
//! sentinels, the usage export, receipts). Every fault is drawn from the
//! seed; what a case does is drawn from the seed and the case alone, so an
//! interrupted run and the same seed uninterrupted meet the same cases.

use std::collections::BTreeMap;

use crate::rng::SplitMix64;
use crate::schema::events::CaseRef;

/// 1 s in ns.
pub const SEC: u64 = 1_000_000_000;

/// Probabilities in parts per million.
pub type Ppm = u64;

/// Draws of one purpose: a generator seeded from the run's seed and a
/// label, so each stream is independent of how many draws the others made.
pub fn stream(seed: u64, label: &str) -> SplitMix64 {
    let h = blake3::hash(format!("benchledger sim {seed} {label}").as_bytes());
    let mut b = [0u8; 8];
    b.copy_from_slice(&h.as_bytes()[..8]);
    SplitMix64::new(u64::from_le_bytes(b))
}

/// Whether a draw of `g` falls under `ppm` parts per million.
pub fn chance(g: &mut SplitMix64, ppm: Ppm) -> bool {
    g.below(1_000_000) < ppm
}

/// What a launched case does, fixed by the seed and the case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseScript {
    /// From the launch to the process's own exit; `None`: it hangs until
    /// killed.
    pub runs_ns: Option<u64>,
    /// From the launch to its sandbox's start.
    pub sandbox_after_ns: u64,
    /// The Harbor result it leaves.
    pub result: ResultScript,
    /// A grandchild keeps the sandbox after the process exits (a leak the
    /// cleanup audit must find).
    pub leaks_sandbox: bool,
}

/// The result.json a case leaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResultScript {
    /// A verified result with this reward.
    Reward(&'static str),
    /// An exception (no reward).
    Exception(&'static str),
    /// None at all.
    Missing,
    /// Written this long after the process exited (a slow writer).
    Late(u64),
}

/// Fault rates of a run (ppm), drawn from the seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rates {
    /// A case hangs past its deadline.
    pub hang: Ppm,
    /// A case leaves an invalid result (an exception).
    pub invalid: Ppm,
    /// A case leaves no result.
    pub missing: Ppm,
    /// A case's result is written late.
    pub late: Ppm,
    /// A case's sandbox outlives its process.
    pub leak: Ppm,
    /// Per gate taken: the identity answers another principal.
    pub identity_flip: Ppm,
    /// Per gate taken: the quota is short.
    pub quota_short: Ppm,
    /// Per gate taken: a stray run-tagged sandbox appears.
    pub stray: Ppm,
    /// Per AWS call: an API error or throttling.
    pub aws_error: Ppm,
    /// Per health check: the daemon does not answer.
    pub health_flap: Ppm,
    /// Per sentinel: a 429 or 5xx.
    pub sentinel_fail: Ppm,
    /// Per request: its receipt is pending; per poll: it stays pending.
    pub pending: Ppm,
    /// Per usage export: it hangs past its deadline.
    pub export_hang: Ppm,
    /// Per driver step: the controller dies.
    pub crash: Ppm,
    /// Per crash: the machine reboots (every process dies, a new boot id).
    pub reboot: Ppm,
    /// Per crash: power loss during an append (its records are lost).
    pub power_loss: Ppm,
    /// Per driver step: a second driver is started.
    pub second_driver: Ppm,
    /// Per driver step: the driver stalls past its lease.
    pub stall: Ppm,
}

impl Rates {
    /// The rates of a seed: each fault kind on or off and at a drawn rate,
    /// so some seeds meet one kind often and others none at all.
    pub fn of_seed(seed: u64, controller_faults: bool) -> Rates {
        let mut g = stream(seed, "rates");
        let mut r = |max: Ppm| -> Ppm {
            if g.below(3) == 0 {
                0
            } else {
                g.below(max + 1)
            }
        };
        let mut rates = Rates {
            hang: r(30_000),
            invalid: r(50_000),
            missing: r(30_000),
            late: r(50_000),
            leak: r(30_000),
            identity_flip: r(8_000),
            quota_short: r(15_000),
            stray: r(10_000),
            aws_error: r(15_000),
            health_flap: r(10_000),
            sentinel_fail: r(10_000),
            pending: r(300_000),
            export_hang: r(150_000),
            crash: r(40_000),
            reboot: r(400_000),
            power_loss: r(300_000),
            second_driver: r(15_000),
            stall: r(8_000),
        };
        if !controller_faults {
            rates.crash = 0;
            rates.second_driver = 0;
            rates.stall = 0;
        }
        rates
    }

    /// At scale (a whole 1,780-case lineage of real minutes): only the
    /// faults a run recovers from without a rejection (controller deaths,
    /// reboots, power loss, second drivers, stalls, AWS errors that end a
    /// driver), so the run reaches every group; the rest are searched by
    /// the small lineages.
    pub fn at_scale(seed: u64, controller_faults: bool) -> Rates {
        Rates {
            hang: 0,
            invalid: 0,
            missing: 0,
            late: 0,
            leak: 0,
            identity_flip: 0,
            quota_short: 0,
            stray: 0,
            health_flap: 0,
            sentinel_fail: 0,
            pending: 0,
            export_hang: 0,
            ..Rates::of_seed(seed, controller_faults)
        }
    }
}

/// A process of the controller machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proc {
    /// Its pid (and process group).
    pub pid: u32,
    /// The boot it ran in.
    pub boot: u32,
    /// When it was spawned.
    pub spawned_ns: u64,
    /// The group and case it runs.
    pub group: String,
    pub case: CaseRef,
    /// Its Harbor trial name.
    pub trial_name: String,
    /// When it exits by itself, if ever.
    pub exits_ns: Option<u64>,
    /// Whether it still runs (a crash leaves it running; a reboot or a kill
    /// ends it).
    pub alive: bool,
    /// When it ended.
    pub ended_ns: Option<u64>,
    /// It ended by a kill.
    pub killed: bool,
    /// While it is a gate whose driver died before opening it: when the
    /// gate gives up and exits having run nothing (RUN-3).
    pub gate_until_ns: Option<u64>,
}

/// A run-tagged sandbox instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    pub id: String,
    /// Its trial tag (none for stray residue).
    pub trial: Option<String>,
    /// Whether it is pending or running.
    pub live: bool,
}

/// The simulated EC2 side: every run-tagged sandbox ever started, live or terminated.
#[derive(Debug, Clone, Default)]
pub struct Cloud {
    /// Every run-tagged sandbox ever started, by id.
    pub sandboxes: BTreeMap<String, Sandbox>,
    /// Sandboxes started so far (for ids).
    pub started: u64,
}

impl Cloud {
    /// Starts a sandbox.
    pub fn start(&mut self, trial: Option<String>) -> String {
        self.started += 1;
        let id = format!("i-{:017x}", self.started);
        self.sandboxes.insert(
            id.clone(),
            Sandbox {
                id: id.clone(),
                trial,
                live: true,
            },
        );
        id
    }

    /// The live sandboxes, in id order.
    pub fn live(&self) -> Vec<&Sandbox> {
        self.sandboxes.values().filter(|s| s.live).collect()
    }

    /// Terminates a sandbox.
    pub fn terminate(&mut self, id: &str) {
        if let Some(s) = self.sandboxes.get_mut(id) {
            s.live = false;
        }
    }
}

/// What one case of the seed does.
pub fn case_script(
    seed: u64,
    rates: &Rates,
    scale: bool,
    group: &str,
    case: &CaseRef,
) -> CaseScript {
    let mut g = stream(seed, &format!("case {group} {}", case.label()));
    // 10-120 s with a long tail: the shape of 5-30 minute cases, scaled
    // down so that a seed runs in milliseconds; at scale the real minutes
    // (300-1,800 s, one in ten past 15 minutes).
    let base = if scale {
        300 + g.below(600) + if g.below(10) == 0 { g.below(900) } else { 0 }
    } else {
        10 + g.below(50) + if g.below(10) == 0 { g.below(60) } else { 0 }
    };
    let runs_ns = (!chance(&mut g, rates.hang)).then_some(base * SEC);
    let sandbox_after_ns = (1 + g.below(4)) * SEC;
    let result = if chance(&mut g, rates.missing) {
        ResultScript::Missing
    } else if chance(&mut g, rates.invalid) {
        ResultScript::Exception("AgentTimeoutError")
    } else if chance(&mut g, rates.late) {
        ResultScript::Late((1 + g.below(20)) * SEC)
    } else if g.below(4) == 0 {
        ResultScript::Reward("0.0")
    } else {
        ResultScript::Reward("1.0")
    };
    CaseScript {
        runs_ns,
        sandbox_after_ns,
        result,
        leaks_sandbox: chance(&mut g, rates.leak),
    }
}

/// Counters of every fault injected.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct FaultCounts {
    /// Cases that hung past their deadline.
    pub hangs: u64,
    pub invalid_results: u64,
    pub missing_results: u64,
    pub late_results: u64,
    /// Sandboxes leaked by a grandchild.
    pub leaked_sandboxes: u64,
    pub identity_flips: u64,
    pub quota_shortfalls: u64,
    /// Stray residue.
    pub strays: u64,
    /// AWS API errors and throttling.
    pub aws_errors: u64,
    /// Daemon health failures.
    pub health_flaps: u64,
    /// Sentinel 429/5xx.
    pub sentinel_failures: u64,
    /// Usage exports that hung.
    pub export_hangs: u64,
    /// Receipts pending at first sight or at a poll.
    pub pending_receipts: u64,
    /// Controller crashes.
    pub crashes: u64,
    /// Reboots among them.
    pub reboots: u64,
    /// Power losses among them (an append lost).
    pub power_losses: u64,
    /// Second drivers started concurrently.
    pub second_drivers: u64,
    /// Drivers stalled past their lease (and taken over).
    pub stalls: u64,
    /// Gates a rerun opened: launches recorded by a driver that died
    /// before opening them (RUN-3).
    pub gates_opened: u64,
}

impl FaultCounts {
    /// Adds another run's counts.
    pub fn add(&mut self, o: &FaultCounts) {
        let pairs: [(&mut u64, u64); 19] = [
            (&mut self.hangs, o.hangs),
            (&mut self.invalid_results, o.invalid_results),
            (&mut self.missing_results, o.missing_results),
            (&mut self.late_results, o.late_results),
            (&mut self.leaked_sandboxes, o.leaked_sandboxes),
            (&mut self.identity_flips, o.identity_flips),
            (&mut self.quota_shortfalls, o.quota_shortfalls),
            (&mut self.strays, o.strays),
            (&mut self.aws_errors, o.aws_errors),
            (&mut self.health_flaps, o.health_flaps),
            (&mut self.sentinel_failures, o.sentinel_failures),
            (&mut self.export_hangs, o.export_hangs),
            (&mut self.pending_receipts, o.pending_receipts),
            (&mut self.crashes, o.crashes),
            (&mut self.reboots, o.reboots),
            (&mut self.power_losses, o.power_losses),
            (&mut self.second_drivers, o.second_drivers),
            (&mut self.stalls, o.stalls),
            (&mut self.gates_opened, o.gates_opened),
        ];
        for (a, b) in pairs {
            *a += b;
        }
    }
}
