//! Processes as the kernel names them, and the deadline of every external
//! command `run` starts.
//!
//! A pid is reused, so a recorded process is its pid with its start time
//! (`/proc/PID/stat` field 22) and the machine's boot id (RUN-2, RUN-3).
//! Every external command runs in its own process group; at its deadline
//! the whole group is killed, grandchildren included (RUN-4). A child's exit
//! is seen without reaping it (`waitid` with `WNOWAIT`), and its group is
//! killed before it is reaped: while the leader is an unreaped zombie its
//! pid, which is the group id, cannot be reused by another group.

use std::io::Read;
use std::path::Path;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use crate::limits::{COMMAND_POLL_MS, PROC_FILE_BYTES_MAX};
use crate::schema::events::ProcessRef;

/// The first `PROC_FILE_BYTES_MAX` bytes of a `/proc` file as text.
fn read_proc(path: &Path) -> Option<String> {
    let f = std::fs::File::open(path).ok()?;
    let mut buf = Vec::new();
    f.take(PROC_FILE_BYTES_MAX as u64)
        .read_to_end(&mut buf)
        .ok()?;
    String::from_utf8(buf).ok()
}

/// This machine's boot id; empty when the kernel does not say.
pub(crate) fn boot_id() -> String {
    read_proc(Path::new("/proc/sys/kernel/random/boot_id"))
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// This machine's host name; empty when the kernel does not say.
pub(crate) fn host_name() -> String {
    read_proc(Path::new("/proc/sys/kernel/hostname"))
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Field 22 of a `/proc/PID/stat` line: the start time in clock ticks
/// after boot. The command name (field 2) is in parentheses and may hold
/// spaces and parentheses itself, so fields are counted after the last `)`.
pub(crate) fn stat_start_ticks(stat: &str) -> Option<u64> {
    let after = &stat[stat.rfind(')')? + 1..];
    // Fields 3.. follow the name: the start time is the 20th of them.
    after.split_whitespace().nth(19)?.parse().ok()
}

/// A live process's start time in clock ticks after boot.
pub(crate) fn start_ticks(pid: u32) -> Option<u64> {
    stat_start_ticks(&read_proc(
        &Path::new("/proc").join(pid.to_string()).join("stat"),
    )?)
}

/// The process `pid` on this machine as the ledger names it, if it lives.
pub(crate) fn process_ref(pid: u32) -> Option<ProcessRef> {
    Some(ProcessRef {
        host: host_name(),
        boot_id: boot_id(),
        pid,
        start_ticks: start_ticks(pid)?,
    })
}

pub(crate) fn this_process() -> ProcessRef {
    let pid = std::process::id();
    process_ref(pid).unwrap_or_else(|| ProcessRef {
        host: host_name(),
        boot_id: boot_id(),
        pid,
        start_ticks: 0,
    })
}

/// Whether a recorded process still runs, seen from this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Liveness {
    /// The same process (pid and start time) runs here, in this boot.
    Alive,
    /// It ran here and is gone: the pid is absent or another process, or
    /// the machine rebooted since.
    Gone,
    /// It ran on another machine: this one cannot tell.
    Elsewhere,
}

/// Where `p` stands, seen from this machine.
pub(crate) fn liveness(p: &ProcessRef) -> Liveness {
    if p.host != host_name() {
        return Liveness::Elsewhere;
    }
    if p.boot_id != boot_id() {
        return Liveness::Gone;
    }
    let stat = read_proc(&Path::new("/proc").join(p.pid.to_string()).join("stat"));
    let alive = stat.as_deref().is_some_and(|s| {
        // A zombie (Z) or dead (X) process has ended; only its parent has
        // yet to reap it.
        stat_start_ticks(s) == Some(p.start_ticks) && !matches!(stat_state(s), Some('Z' | 'X'))
    });
    if alive {
        Liveness::Alive
    } else {
        Liveness::Gone
    }
}

/// Field 3 (the state letter) of a `/proc/PID/stat` line.
fn stat_state(stat: &str) -> Option<char> {
    stat[stat.rfind(')')? + 1..]
        .split_whitespace()
        .next()?
        .chars()
        .next()
}

/// Kills every process of group `pgid` (SIGKILL); a group already empty is
/// not an error.
pub(crate) fn kill_group(pgid: u32) -> std::io::Result<()> {
    let pid = i32::try_from(pgid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .ok_or_else(|| std::io::Error::other(format!("process group {pgid} out of range")))?;
    // Group 1 would be init's: a launched command's group is its own pid.
    assert!(
        pgid > 1,
        "a process group to kill is a launched command's, not {pgid}"
    );
    match rustix::process::kill_process_group(pid, rustix::process::Signal::KILL) {
        Ok(()) | Err(rustix::io::Errno::SRCH) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// The signal `kill_group` sends.
pub(crate) const KILL_SIGNAL: i32 = 9;

pub(crate) use crate::method::run_plan::launch_gate::{
    gate_file, GateSpec, GATE_NAME, GATE_SCRIPT,
};

/// Whether process `pid` is a gate still waiting: its command line is the
/// gate shell's, not yet replaced by the launch command.
fn is_waiting_gate(pid: u32) -> bool {
    let Some(cmdline) = read_proc(&Path::new("/proc").join(pid.to_string()).join("cmdline")) else {
        return false;
    };
    let argv: Vec<&str> = cmdline.split('\0').take(4).collect();
    argv == ["/bin/sh", "-c", GATE_SCRIPT, GATE_NAME]
}

/// Opens the gate of an adopted launch whose driver died before it opened
/// it (RUN-3): the launch was recorded, so it runs now, as itself, never a
/// second launch. Whether `p` runs on this machine and was still waiting.
pub(crate) fn open_adopted_gate(prefix: &Path, p: &ProcessRef) -> std::io::Result<bool> {
    if liveness(p) != Liveness::Alive || !is_waiting_gate(p.pid) {
        return Ok(false);
    }
    let file = gate_file(prefix, p.pid);
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&file)
    {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(true),
        Err(e) => Err(e),
    }
}

/// Closes the gate of an adopted launch that still waits (RUN-3): its
/// process group is killed, having run nothing. Whether `p` runs on this
/// machine and was still waiting.
pub(crate) fn close_adopted_gate(p: &ProcessRef) -> std::io::Result<bool> {
    if liveness(p) != Liveness::Alive || !is_waiting_gate(p.pid) {
        return Ok(false);
    }
    kill_group(p.pid).map(|()| true)
}

/// A launch spawned behind its gate (`GATE_SCRIPT`): until [`open`]
/// nothing of the command runs, so its pid can be recorded first, in the
/// same append as the case's start (RUN-3). Dropped unopened (a refused
/// append), the gate is closed and the waiting shell ended and reaped; a
/// driver that dies closes it the same way, by the kernel.
///
/// [`open`]: GatedChild::open
pub(crate) struct GatedChild {
    child: Option<Child>,
    gate: Option<std::process::ChildStdin>,
}

impl GatedChild {
    /// Takes a child spawned as `GateSpec::argv` with a piped stdin.
    pub(crate) fn new(mut child: Child) -> Self {
        let gate = child.stdin.take();
        assert!(
            gate.is_some(),
            "a gated launch is spawned with a piped stdin"
        );
        Self {
            child: Some(child),
            gate,
        }
    }

    /// The pid (and process group) the command will run as.
    pub(crate) fn id(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Lets the command run. A shell already gone (killed by someone) is
    /// not an error here: its end is reaped and recorded as any exit.
    pub(crate) fn open(mut self) -> Child {
        use std::io::Write;
        let child = self.child.take().expect("a gate is opened once");
        let mut gate = self.gate.take().expect("a gate is opened once");
        if let Err(e) = gate.write_all(b"go\n") {
            tracing::warn!(
                "the gate of launch {} did not take the word: {e}",
                child.id()
            );
        }
        child
    }
}

impl Drop for GatedChild {
    fn drop(&mut self) {
        // Never opened: the shell sees end of file and exits having run
        // nothing; killed too (it may not have reached its `read`) and
        // reaped, so no zombie holds the pid.
        drop(self.gate.take());
        if let Some(mut child) = self.child.take() {
            let _ = kill_group(child.id());
            let _ = child.wait();
        }
    }
}

/// Whether `child` has exited, without reaping it: its pid (its group's
/// id) stays reserved until `wait`.
fn exited_unreaped(child: &Child) -> std::io::Result<bool> {
    use rustix::process::{waitid, Pid, WaitId, WaitIdOptions};
    let pid = Pid::from_child(child);
    let flags = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
    match waitid(WaitId::Pid(pid), flags) {
        Ok(status) => Ok(status.is_some()),
        // Already reaped: it has exited.
        Err(rustix::io::Errno::CHILD) => Ok(true),
        Err(e) => Err(e.into()),
    }
}

/// How a command ended under its deadline.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ended {
    pub(crate) status: ExitStatus,
    /// True when it was killed at its deadline.
    pub(crate) killed: bool,
    /// How long it ran.
    pub(crate) ran: Duration,
    /// With an [`ExitWitness`]: whether its file was there when the
    /// command ended (`None`: no witness, or it could not tell).
    pub(crate) file_at_end: Option<bool>,
}

/// A thread that waits, without reaping, for a child to end and looks at
/// that moment whether a file is there (RUN-5: a launch's result.json
/// counts when it was there as the launch ended, however long after that
/// the driver, busy with a gate, looks). The child is reaped only after
/// the witness has looked (`poll_bounded`).
pub(crate) struct ExitWitness(Option<std::thread::JoinHandle<Option<bool>>>);

impl ExitWitness {
    /// Watches child `pid` for `file`.
    pub(crate) fn watch(pid: u32, file: std::path::PathBuf) -> ExitWitness {
        let handle = std::thread::Builder::new()
            .name("exit-witness".into())
            .spawn(move || {
                use rustix::process::{waitid, Pid, WaitId, WaitIdOptions};
                let pid = Pid::from_raw(i32::try_from(pid).ok()?)?;
                let flags = WaitIdOptions::EXITED | WaitIdOptions::NOWAIT;
                loop {
                    match waitid(WaitId::Pid(pid), flags) {
                        Ok(_) => return Some(std::fs::metadata(&file).is_ok_and(|m| m.is_file())),
                        Err(rustix::io::Errno::INTR) => continue,
                        Err(_) => return None,
                    }
                }
            })
            .ok();
        ExitWitness(handle)
    }

    /// What the witness saw; call once the child has ended, before it is
    /// reaped (the witness then returns at once).
    fn seen(&mut self) -> Option<bool> {
        self.0.take()?.join().ok().flatten()
    }
}

/// One look at `child` (started at `started`, deadline `timeout`): `None`
/// while it runs within its deadline. When it has exited, or at the
/// deadline, its whole process group is killed (no straggler outlives its
/// command) and it is reaped.
pub(crate) fn poll_bounded(
    child: &mut Child,
    started: Instant,
    timeout: Duration,
    witness: Option<&mut ExitWitness>,
) -> std::io::Result<Option<Ended>> {
    let exited = exited_unreaped(child)?;
    let killed = !exited && started.elapsed() >= timeout;
    if !exited && !killed {
        return Ok(None);
    }
    kill_group(child.id())?;
    // The child is dead (or dying of the kill), not yet reaped: the
    // witness's own wait returns.
    let file_at_end = witness.and_then(ExitWitness::seen);
    let status = child.wait()?;
    Ok(Some(Ended {
        status,
        killed,
        ran: started.elapsed(),
        file_at_end,
    }))
}

/// Waits for `child` until `timeout` after `started`; at the deadline its
/// whole process group is killed.
pub(crate) fn wait_bounded(
    child: &mut Child,
    started: Instant,
    timeout: Duration,
) -> std::io::Result<Ended> {
    loop {
        if let Some(e) = poll_bounded(child, started, timeout, None)? {
            return Ok(e);
        }
        let left = timeout.saturating_sub(started.elapsed());
        std::thread::sleep(left.min(Duration::from_millis(COMMAND_POLL_MS)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::procs::group_members;
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    use std::path::PathBuf;
    use std::process::{Command, Stdio};

    fn spawn(script: &str) -> Child {
        Command::new("sh")
            .args(["-c", script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap()
    }

    #[test]
    fn the_start_time_is_counted_after_a_name_with_spaces_and_parentheses() {
        let stat =
            "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10";
        assert_eq!(stat_start_ticks(stat), Some(987_654));
        assert_eq!(stat_start_ticks("4242 (x) S 1"), None);
        assert_eq!(stat_start_ticks("no parenthesis"), None);
    }

    /// Polls until the witness has looked (it looks as the child ends).
    fn witness_done(w: &ExitWitness) {
        let done = (0..500).any(|_| {
            std::thread::sleep(Duration::from_millis(10));
            w.0.as_ref().is_some_and(|h| h.is_finished())
        });
        assert!(done, "the witness returns once its child has ended");
    }

    /// Polls an ended child (its witness has looked) to its end.
    fn ended(child: &mut Child, w: &mut ExitWitness) -> Ended {
        poll_bounded(child, Instant::now(), Duration::from_secs(60), Some(w))
            .unwrap()
            .expect("it ended")
    }

    #[test]
    fn the_exit_witness_sees_a_result_written_before_the_exit_and_not_one_written_after() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("result.json");
        // Written by the command itself before it ends: there at its end.
        let script = format!("echo '{{}}' > '{}'; exit 0", file.display());
        let mut child = spawn(&script);
        let mut w = ExitWitness::watch(child.id(), file.clone());
        witness_done(&w);
        let e = ended(&mut child, &mut w);
        assert_eq!(e.file_at_end, Some(true), "rule RUN-5: there at the end");
        std::fs::remove_file(&file).unwrap();
        // Written after the command ended, before the driver looked: the
        // witness saw it absent, however long the driver took (RUN-5).
        let mut child = spawn("exit 0");
        let mut w = ExitWitness::watch(child.id(), file.clone());
        witness_done(&w);
        std::fs::write(&file, "{}").unwrap();
        let e = ended(&mut child, &mut w);
        assert_eq!(e.file_at_end, Some(false), "rule RUN-5: late is late");
        // Killed at its deadline: the witness looks at the kill.
        let mut child = spawn("sleep 30");
        let mut w = ExitWitness::watch(child.id(), file.clone());
        let e = poll_bounded(&mut child, Instant::now(), Duration::ZERO, Some(&mut w))
            .unwrap()
            .expect("killed at its deadline");
        assert!(e.killed, "rule RUN-4");
        assert_eq!(e.file_at_end, Some(true), "rule RUN-5: there at the kill");
    }

    #[test]
    fn a_zombie_is_gone() {
        // A child that exited and is not reaped yet stays in /proc as Z.
        let mut child = spawn("exit 0");
        let pid = child.id();
        let p = process_ref(pid).expect("the child is in /proc");
        let zombie = (0..200).any(|_| {
            std::thread::sleep(Duration::from_millis(10));
            read_proc(&Path::new("/proc").join(pid.to_string()).join("stat"))
                .is_some_and(|s| stat_state(&s) == Some('Z'))
        });
        assert!(zombie, "the unreaped child is a zombie");
        assert_eq!(
            liveness(&p),
            Liveness::Gone,
            "rule RUN-3: a zombie has ended"
        );
        child.wait().unwrap();
    }

    #[test]
    fn this_process_is_alive_and_a_changed_start_time_or_boot_is_gone() {
        let me = this_process();
        assert!(me.start_ticks > 0 && !me.boot_id.is_empty());
        assert_eq!(
            liveness(&me),
            Liveness::Alive,
            "rule RUN-3: the same process"
        );
        let reused = ProcessRef {
            start_ticks: me.start_ticks + 1,
            ..me.clone()
        };
        assert_eq!(
            liveness(&reused),
            Liveness::Gone,
            "rule RUN-3: a reused pid is not the launch"
        );
        let rebooted = ProcessRef {
            boot_id: "another-boot".into(),
            ..me.clone()
        };
        assert_eq!(
            liveness(&rebooted),
            Liveness::Gone,
            "rule RUN-3: a reboot ends every process"
        );
        let other = ProcessRef {
            host: format!("{}-other", me.host),
            ..me
        };
        assert_eq!(liveness(&other), Liveness::Elsewhere);
    }

    #[test]
    fn a_command_past_its_deadline_is_killed_with_its_grandchild() {
        // The grandchild writes its pid, then both sleep far past the bound.
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("grandchild.pid");
        let mut child = spawn(&format!(
            "sleep 300 & echo $! > {}; wait",
            pidfile.display()
        ));
        let pgid = child.id();
        let t0 = Instant::now();
        let ended = wait_bounded(&mut child, t0, Duration::from_millis(300)).unwrap();
        assert!(ended.killed, "rule RUN-4: killed at its deadline");
        assert!(ended.ran >= Duration::from_millis(300));
        let grandchild: u32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_ne!(grandchild, pgid);
        assert!(
            gone_soon(pgid),
            "rule RUN-4: no process of the group outlives the deadline: {:?}",
            group_members(pgid)
        );
    }

    /// Whether group `pgid` has no live member within two seconds (a
    /// SIGKILLed process takes a moment to die).
    fn gone_soon(pgid: u32) -> bool {
        (0..200).any(|_| {
            std::thread::sleep(Duration::from_millis(10));
            group_members(pgid).is_empty()
        })
    }

    #[test]
    fn a_command_that_ends_in_time_is_not_killed_and_leaves_no_straggler() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("straggler.pid");
        let mut child = spawn(&format!(
            "sleep 300 & echo $! > {}; exit 3",
            pidfile.display()
        ));
        let pgid = child.id();
        let ended = wait_bounded(&mut child, Instant::now(), Duration::from_secs(30)).unwrap();
        assert!(!ended.killed);
        assert_eq!(ended.status.code(), Some(3));
        assert!(
            pidfile.exists(),
            "the straggler was started before the exit"
        );
        assert!(
            gone_soon(pgid),
            "the background sleep of an ended command is killed with its group"
        );
    }

    /// A gate under `dir` that waits `wait_ms` once its driver is gone.
    fn spec(dir: &Path, wait_ms: u64) -> GateSpec {
        GateSpec {
            prefix: dir.join("gates").join("trial"),
            wait: Duration::from_millis(wait_ms),
        }
    }

    /// `case::spawn_gated` of `sh -c SCRIPT`, its log in `dir`.
    fn gated(dir: &Path, script: &str) -> GatedChild {
        let argv = ["sh", "-c", script].map(String::from);
        let log = dir.join("launch.log");
        crate::cli::case::spawn_gated(&argv, &[], &log, &spec(dir, 300)).unwrap()
    }

    fn bounded_end(child: &mut Child) -> Ended {
        wait_bounded(child, Instant::now(), Duration::from_secs(30)).unwrap()
    }

    #[test]
    fn a_gated_launch_runs_nothing_until_opened_then_runs_as_the_recorded_process() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("ran");
        let script = format!("echo $$ > '{}'; sleep 1; cat; exit 7", marker.display());
        let g = gated(dir.path(), &script);
        let recorded = process_ref(g.id()).expect("the gated shell is in /proc");
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            !marker.exists(),
            "rule RUN-3: nothing of the command runs before its gate opens"
        );
        let mut child = g.open();
        let wrote = (0..500).any(|_| {
            std::thread::sleep(Duration::from_millis(10));
            std::fs::read_to_string(&marker).is_ok_and(|s| s.ends_with('\n'))
        });
        assert!(wrote, "the opened command runs");
        assert_eq!(
            process_ref(recorded.pid).as_ref(),
            Some(&recorded),
            "rule RUN-3: the command is the recorded process (pid, start time, boot)"
        );
        let e = bounded_end(&mut child);
        assert!(!e.killed);
        // `cat` read /dev/null, not the gate's pipe.
        assert_eq!(e.status.code(), Some(7));
        let pid = std::fs::read_to_string(&marker).unwrap();
        assert_eq!(pid.trim(), recorded.pid.to_string(), "rule RUN-3");
    }

    #[test]
    fn a_gate_whose_driver_died_runs_nothing_and_exits_125_once_its_wait_is_over() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("ran");
        let mut g = gated(dir.path(), &format!("touch '{}'", marker.display()));
        // A dying driver: the kernel closes its end of the pipe, no kill.
        drop(g.gate.take());
        let mut child = g.child.take().unwrap();
        let e = bounded_end(&mut child);
        assert_eq!(e.status.code(), Some(125), "rule RUN-3: the gate exits");
        assert!(
            e.ran >= Duration::from_millis(300),
            "it waited: {:?}",
            e.ran
        );
        assert!(!marker.exists(), "rule RUN-3: the command never ran");
    }

    /// A gated `sh -c SCRIPT` whose driver died (its pipe closed): the
    /// waiting shell, as recorded, and its gate's spec.
    fn left_waiting(dir: &Path, script: &str) -> (Child, ProcessRef, GateSpec) {
        let argv = ["sh", "-c", script].map(String::from);
        let spec = spec(dir, 30_000);
        let log = dir.join("launch.log");
        let mut g = crate::cli::case::spawn_gated(&argv, &[], &log, &spec).unwrap();
        let recorded = process_ref(g.id()).unwrap();
        // Under load the child may not have exec'd the gate's shell yet
        // (its cmdline is still ours): wait for it, as an adopted launch
        // always has by the time a later driver looks.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !is_waiting_gate(recorded.pid) {
            assert!(Instant::now() < deadline, "the gate's shell never started");
            std::thread::sleep(Duration::from_millis(5));
        }
        drop(g.gate.take());
        (g.child.take().unwrap(), recorded, spec)
    }

    #[test]
    fn a_rerun_opens_the_gate_of_an_adopted_launch_whose_driver_died() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("ran");
        let script = format!("echo $$ > '{}'", marker.display());
        let (mut child, recorded, spec) = left_waiting(dir.path(), &script);
        let log = dir.path().join("launch.log");
        std::thread::sleep(Duration::from_millis(200));
        assert!(
            !marker.exists(),
            "rule RUN-3: nothing runs before the gate opens"
        );
        // Another machine's or a gone process is not opened.
        let elsewhere = ProcessRef {
            host: "another-host".into(),
            ..recorded.clone()
        };
        assert!(!open_adopted_gate(&spec.prefix, &elsewhere).unwrap());
        assert!(
            open_adopted_gate(&spec.prefix, &recorded).unwrap(),
            "rule RUN-3: a waiting gate is opened by the rerun"
        );
        let e = bounded_end(&mut child);
        assert_eq!(e.status.code(), Some(0), "the command ran");
        let pid = std::fs::read_to_string(&marker).unwrap();
        assert_eq!(
            pid.trim(),
            recorded.pid.to_string(),
            "rule RUN-3: as itself"
        );
        assert!(
            !gate_file(&spec.prefix, recorded.pid).exists(),
            "the gate file is removed as the gate opens"
        );
        // A launch already running its command is not a gate any more.
        let g = crate::cli::case::spawn_gated(&["sleep", "5"].map(String::from), &[], &log, &spec)
            .unwrap();
        let p = process_ref(g.id()).unwrap();
        let mut sleeping = g.open();
        let running = (0..500).any(|_| {
            std::thread::sleep(Duration::from_millis(10));
            !is_waiting_gate(p.pid)
        });
        assert!(running);
        assert!(!open_adopted_gate(&spec.prefix, &p).unwrap());
        assert!(
            !gate_file(&spec.prefix, p.pid).exists(),
            "nothing left behind"
        );
        kill_group(p.pid).unwrap();
        sleeping.wait().unwrap();
    }

    #[test]
    fn a_waiting_gate_closed_after_a_hard_stop_runs_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("ran");
        let script = format!("touch '{}'", marker.display());
        let (mut child, recorded, _) = left_waiting(dir.path(), &script);
        assert!(
            close_adopted_gate(&recorded).unwrap(),
            "rule VERDICT-3: a waiting gate is closed"
        );
        let e = bounded_end(&mut child);
        assert_eq!(e.status.signal(), Some(KILL_SIGNAL));
        assert!(
            !marker.exists(),
            "rule VERDICT-3: nothing ran after the stop"
        );
        assert!(group_members(recorded.pid).is_empty());
    }

    #[test]
    fn a_gate_waits_its_bound_in_polls_of_the_named_interval() {
        use crate::limits::{LAUNCH_GATE_POLL_MS, LAUNCH_GATE_WAIT_SEC};
        let gate = |wait: Duration| GateSpec {
            prefix: PathBuf::from("/g/t"),
            wait,
        };
        let argv = gate(Duration::from_secs(LAUNCH_GATE_WAIT_SEC)).argv(&["x".into()]);
        let polls = LAUNCH_GATE_WAIT_SEC * 1000 / LAUNCH_GATE_POLL_MS;
        assert_eq!(
            argv[3..],
            [GATE_NAME, "/g/t", &polls.to_string(), "0.100", "x"]
        );
        // Under one poll: no wait at all once the driver is gone.
        let argv = gate(Duration::from_millis(LAUNCH_GATE_POLL_MS - 1)).argv(&[]);
        assert_eq!(argv[5], "0");
        assert_eq!(
            gate_file(Path::new("/g/t"), 42),
            PathBuf::from("/g/t.42.go")
        );
    }

    #[test]
    fn a_gate_dropped_unopened_leaves_nothing_running() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("ran");
        let g = gated(dir.path(), &format!("touch '{}'", marker.display()));
        let pgid = g.id();
        drop(g);
        assert!(
            group_members(pgid).is_empty(),
            "rule RUN-3: a refused append leaves no launch behind"
        );
        assert!(!marker.exists(), "rule RUN-3: the command never ran");
    }

    #[test]
    fn a_launch_program_that_is_not_there_is_refused_before_a_gate_is_spawned() {
        let dir = tempfile::tempdir().unwrap();
        for program in ["/nonexistent/launch", "benchledger-no-such-program"] {
            let argv = [program.to_string()];
            let log = dir.path().join("l.log");
            let e = crate::cli::case::spawn_gated(&argv, &[], &log, &spec(dir.path(), 300))
                .err()
                .expect("refused");
            assert!(e.to_string().contains("not an executable file"), "{e}");
        }
        // A file without an execute bit is not a program either.
        let plain = dir.path().join("plain.sh");
        std::fs::write(&plain, "#!/bin/sh\n").unwrap();
        let argv = [plain.display().to_string()];
        let log = dir.path().join("l.log");
        assert!(crate::cli::case::spawn_gated(&argv, &[], &log, &spec(dir.path(), 300)).is_err());
    }
}
