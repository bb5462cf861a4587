//! `run` fit for the real workload (issue 27, method section 16): the
//! worker pool (RUN-1), one driver per group (RUN-2), launch records and
//! crash recovery (RUN-3), deadlines that kill whole process groups
//! (RUN-4) and probes that record nothing (RUN-6), end to end on the CLI
//! over stand-in launch commands.
//!
//! These run in a build without the `aws` feature (the daemon gates taken
//! by `run`, the AWS observations appended by the test as an `aws` build
//! records them); RUN-5's monitor samples need AWS and are tested on moto
//! (`run.rs`, module `moto`) and in the planner.

use super::run::{
    append, audit_clean, await_file_sh, await_until, ready, ready_edited, ready_with_lines,
    records, run_cmd, run_once, seq_of, starts, AWAITED_LAUNCH_TIMEOUT_SEC,
};
use super::{Harness, Run};
use benchledger::schema::events::{CaseLaunched, CaseRef, Event, GroupRef, ProcessRef, RunLeased};
use serde_json::Value;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

const L: &str = "short13-kimi-2026-11";

/// The live processes of process group `pgid`.
fn group_members(pgid: u64) -> Vec<u32> {
    benchledger::testkit::procs::group_members(u32::try_from(pgid).unwrap())
}

/// Waits up to `AWAIT_SEC_MAX` s for a record of `kind`, polling the log.
fn await_record(h: &Harness, kind: &str) -> Value {
    let mut found = None;
    await_until(&format!("a {kind} record"), || {
        found = records(h, kind).into_iter().next();
        found.is_some()
    });
    found.unwrap()
}

/// Replaces the stand-in launch with `script` (`$1` the trial name, `$2`
/// the jobs directory; the stash holds each trial's result; the shell
/// function `await_file PATH` waits for a file the test creates).
fn launch_script(h: &Harness, script: &str) {
    std::fs::write(
        h.path("launch.sh"),
        format!("#!/bin/sh\n{}{script}\n", await_file_sh()),
    )
    .unwrap();
}

/// `ready`, with a launch timeout past any `await_file` of the stand-in.
fn ready_awaited(cases: u32, concurrency: u32) -> (Harness, String) {
    ready_with_lines(
        cases,
        concurrency,
        &[(
            "timeout_sec = 4",
            &format!("timeout_sec = {AWAITED_LAUNCH_TIMEOUT_SEC}"),
        )],
    )
}

/// The stand-in's result-writing tail: the trial's result appears at once.
fn write_result(h: &Harness) -> String {
    let root = h.path("").display().to_string();
    let root = root.trim_end_matches('/');
    format!(
        "d=\"$2/{L}-canary-1/$1\"; mkdir -p \"$d\"; cp \"{root}/stash/$1.json\" \"$d/result.json.tmp\"; mv \"$d/result.json.tmp\" \"$d/result.json\""
    )
}

fn spawn_run(h: &Harness, url: &str) -> Child {
    run_cmd(h, url, &[])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn a_launch_past_its_deadline_is_killed_with_its_whole_process_group() {
    let (h, url) = ready(1, 1);
    // The launch leaves a grandchild in its group and outlives the frozen
    // launch timeout of the test manifest (4 s).
    let pidfile = h.path("grandchild.pid");
    launch_script(
        &h,
        &format!("sleep 300 &\necho $! > {}\nsleep 300", pidfile.display()),
    );
    let r = run_once(&h, &url, &[]);
    assert_eq!(r.code, 4, "the cleanup audit needs AWS: {}", r.stderr);
    let killed = records(&h, "command_killed.v1");
    assert_eq!(killed.len(), 1, "RUN-4: the kill is recorded: {killed:?}");
    let k = &killed[0]["payload"];
    assert_eq!(k["role"], "launch", "RUN-4");
    assert_eq!(k["signal"], 9, "RUN-4");
    assert_eq!(k["deadline_ms"], 4000, "RUN-4: the frozen launch timeout");
    assert_eq!(k["argv"][0], "sh");
    let pgid = k["pgid"].as_u64().unwrap();
    let grandchild: u64 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_ne!(grandchild, pgid);
    assert!(
        group_members(pgid).is_empty(),
        "RUN-4: no process of the launch's group outlives it: {:?}",
        group_members(pgid)
    );
    let exits = records(&h, "case_process_exited.v1");
    assert_eq!(exits[0]["payload"]["signal"], 9);
}

#[test]
fn a_hung_usage_export_is_killed_at_its_deadline_and_recorded() {
    let (h, url) = ready_with_lines(
        1,
        1,
        &[
            ("settlement_grace_sec = ", "settlement_grace_sec = 3"),
            (
                "usage_export = ",
                "usage_export = [\"sh\", \"-c\", \"sleep 300 & sleep 300\", \"{out}\"]",
            ),
        ],
    );
    // No usage file yet: `run` exports it with the frozen command.
    let m: Value = h
        .ok(&["log"])
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["kind"] == "group_opened.v1")
        .unwrap();
    let out_dir = m["payload"]["out_dir"].as_str().unwrap().to_string();
    std::fs::remove_file(format!("{out_dir}/usage.jsonl")).unwrap();
    let t0 = Instant::now();
    let r = run_once(&h, &url, &[]);
    assert!(t0.elapsed() < Duration::from_secs(60), "{:?}", t0.elapsed());
    assert_ne!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("past its deadline"), "{}", r.stderr);
    let killed = records(&h, "command_killed.v1");
    assert_eq!(killed.len(), 1, "RUN-4: {killed:?}");
    let k = &killed[0]["payload"];
    assert_eq!(k["role"], "usage_export", "RUN-4");
    assert_eq!(k["deadline_ms"], 3000, "RUN-4: the frozen settlement grace");
    assert!(
        group_members(k["pgid"].as_u64().unwrap()).is_empty(),
        "RUN-4"
    );
}

#[test]
fn a_hung_receipt_poll_is_killed_at_its_deadline_and_recorded() {
    let (h, url) = super::run::polling(1, 3, 3);
    std::fs::write(
        h.path("reconcile.sh"),
        "#!/bin/sh\nsleep 300 &\nsleep 300\n",
    )
    .unwrap();
    let t0 = Instant::now();
    let r = run_once(&h, &url, &[]);
    assert!(t0.elapsed() < Duration::from_secs(60), "{:?}", t0.elapsed());
    assert_eq!(r.code, 4, "the cleanup audit needs AWS: {}", r.stderr);
    let killed = records(&h, "command_killed.v1");
    assert!(!killed.is_empty(), "RUN-4: {}", r.stderr);
    for k in &killed {
        let k = &k["payload"];
        assert_eq!(k["role"], "receipt_poll", "RUN-4");
        assert_eq!(k["deadline_ms"], 3000, "RUN-4");
        assert!(
            group_members(k["pgid"].as_u64().unwrap()).is_empty(),
            "RUN-4"
        );
    }
}

#[test]
fn a_launch_program_that_cannot_run_is_refused_before_anything_starts() {
    // The frozen launch command names a program this machine does not have.
    let (h, url) = ready_edited(1, 1, super::PRIVATE, true, &|m| {
        m.lines()
            .map(|l| match l.contains("launch.sh") {
                true => l.replacen("[\"sh\",", "[\"benchledger-no-such-launcher\",", 1),
                false => l.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n")
    });
    let r = run_once(&h, &url, &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("not an executable file"), "{}", r.stderr);
    assert!(
        records(&h, "case_started.v1").is_empty(),
        "RUN-3, CASE-2: no identity is consumed by a launch that cannot run"
    );
}

#[test]
fn a_rerun_after_kill_9_marks_the_case_crashed_within_5_s() {
    // A long launch timeout: the old driver waited all of it.
    let (h, url) = ready_with_lines(1, 1, &[("timeout_sec = 4", "timeout_sec = 600")]);
    launch_script(&h, "sleep 300");
    let mut first = spawn_run(&h, &url);
    let launched = await_record(&h, "case_launched.v1");
    let pid = launched["payload"]["process"]["pid"].as_u64().unwrap();
    // The launch is recorded in the start's own append (one time, the next
    // seq): no kill can fall between a durable start and its launch record.
    let started = records(&h, "case_started.v1").remove(0);
    assert_eq!(
        (launched["seq"].as_u64(), &launched["recorded_at_utc_ns"]),
        (
            started["seq"].as_u64().map(|s| s + 1),
            &started["recorded_at_utc_ns"]
        ),
        "RUN-3: case_launched is appended with its case_started"
    );
    // kill -9 of `run` and of its launch (its whole group).
    first.kill().unwrap();
    first.wait().unwrap();
    let sent = std::process::Command::new("kill")
        .args(["-KILL", "--", &format!("-{pid}")])
        .status()
        .unwrap();
    assert!(sent.success());
    let t0 = Instant::now();
    let rerun = spawn_run(&h, &url);
    let invalidated = await_record(&h, "case_invalidated.v1");
    let took = t0.elapsed();
    let r: Run = rerun.wait_with_output().unwrap().into();
    assert!(
        took < Duration::from_secs(5),
        "RUN-3: a gone launch is a controller crash at once, not after the timeout: {took:?}; {}",
        r.stderr
    );
    assert_eq!(
        invalidated["payload"]["reason"], "controller_crash",
        "RUN-3"
    );
    assert!(
        starts(&h).values().all(|n| *n == 1),
        "CASE-2: {:?}",
        starts(&h)
    );
    // RUN-2: the rerun took over the dead driver's lease.
    let leases = records(&h, "run_leased.v1");
    assert!(
        leases.iter().any(|l| !l["payload"]["taken_from"].is_null()),
        "RUN-2: {leases:?}"
    );
}

#[test]
fn a_second_run_of_a_driven_group_is_refused_by_the_lease() {
    let (h, url) = ready_awaited(1, 1);
    let tail = write_result(&h);
    // The case runs until the second `run` has been answered.
    let release = h.path("release");
    launch_script(&h, &format!("await_file '{}'\n{tail}", release.display()));
    let first = spawn_run(&h, &url);
    await_record(&h, "case_launched.v1");
    let second = run_once(&h, &url, &[]);
    std::fs::write(&release, "").unwrap();
    assert_eq!(second.code, 3, "RUN-2: {}", second.stderr);
    assert!(second.stderr.contains("RUN-2"), "{}", second.stderr);
    assert!(
        second.stderr.contains("driven by another `run`"),
        "{}",
        second.stderr
    );
    let r: Run = first.wait_with_output().unwrap().into();
    assert_eq!(r.code, 4, "the cleanup audit needs AWS: {}", r.stderr);
    assert_eq!(starts(&h).len(), 1);
    // The refused driver never took the lease: one holder, released.
    let holders: std::collections::BTreeSet<String> = records(&h, "run_leased.v1")
        .iter()
        .map(|l| l["payload"]["holder"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(holders.len(), 1, "RUN-2: {holders:?}");
}

#[test]
fn a_driver_whose_lease_was_taken_over_appends_nothing_more() {
    let (h, url) = ready_awaited(1, 1);
    let tail = write_result(&h);
    // The case runs until the takeover is in the log.
    let release = h.path("release");
    launch_script(&h, &format!("await_file '{}'\n{tail}", release.display()));
    let first = spawn_run(&h, &url);
    await_record(&h, "case_launched.v1");
    // Another driver takes the group over (as after an expiry).
    append(
        &h,
        vec![Event::RunLeased(RunLeased {
            group: GroupRef {
                lineage: L.into(),
                group: "canary-1".into(),
            },
            holder: "intruder".into(),
            process: ProcessRef {
                host: "elsewhere".into(),
                boot_id: "b".into(),
                pid: 1234,
                start_ticks: 1,
            },
            expires_utc_ns: u64::MAX,
            taken_from: None,
        })],
    );
    let takeover = records(&h, "run_leased.v1").last().unwrap()["seq"]
        .as_u64()
        .unwrap();
    std::fs::write(&release, "").unwrap();
    let r: Run = first.wait_with_output().unwrap().into();
    assert_eq!(r.code, 3, "RUN-2: fenced: {}", r.stderr);
    assert!(r.stderr.contains("lost its lease"), "{}", r.stderr);
    let after: Vec<Value> = h
        .ok(&["log"])
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["seq"].as_u64().unwrap() > takeover)
        .collect();
    assert!(
        after.is_empty(),
        "RUN-2: nothing appended after the takeover: {after:?}"
    );
}

#[test]
fn a_freed_slot_is_refilled_while_a_long_case_runs() {
    let (h, url) = ready_awaited(3, 2);
    let tail = write_result(&h);
    // c1 runs until c3, the refill of c2's slot, has started (its launch
    // says so); c2 and c3 end at once.
    let refilled = h.path("refilled");
    launch_script(
        &h,
        &format!(
            "case \"$1\" in *-c1) await_file '{r}' ;; *-c3) : > '{r}' ;; esac\n{tail}",
            r = refilled.display()
        ),
    );
    let r = run_once(&h, &url, &[]);
    assert_eq!(r.code, 4, "the cleanup audit needs AWS: {}", r.stderr);
    let seq_of = |kind: &str, trial: &str| seq_of(&h, kind, trial);
    assert!(
        seq_of("case_started.v1", "c3") < seq_of("case_process_exited.v1", "c1"),
        "RUN-1: c3 filled c2's slot while c1 still ran"
    );
    assert_eq!(starts(&h).len(), 3);
    assert!(starts(&h).values().all(|n| *n == 1), "CASE-2");
    audit_clean(&h);
    let r = run_once(&h, &url, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn a_probe_prints_what_it_sees_and_appends_nothing() {
    let (h, url) = ready(1, 1);
    let before = h.head_bytes();
    let r = h.ok(&[
        "check",
        "daemon-health",
        "--group",
        "canary-1",
        "--url",
        &format!("{url}/health"),
        "--probe",
    ]);
    assert!(r.stdout.contains("not recorded"), "{}", r.stdout);
    assert_eq!(h.head_bytes(), before, "RUN-6: a probe appends nothing");
    let dead = h
        .cmd()
        .args([
            "check",
            "daemon-health",
            "--group",
            "canary-1",
            "--url",
            "http://127.0.0.1:9/health",
            "--probe",
            "--json",
        ])
        .output()
        .unwrap();
    let dead: Run = dead.into();
    assert_eq!(dead.code, 1, "a failing probe exits 1: {}", dead.stderr);
    assert_eq!(dead.json()["recorded"], false);
    assert_eq!(
        h.head_bytes(),
        before,
        "RUN-6: a failing probe appends nothing"
    );
    // Help and the plan say a recorded failure stops the lineage.
    let help = h.ok(&["check", "--help"]);
    assert!(
        help.stdout.contains("hard stop") && help.stdout.contains("--probe"),
        "{}",
        help.stdout
    );
    let plan = h.ok(&["run", "canary-1", "--plan", "--daemon-url", &url]);
    assert!(plan.stdout.contains("hard stop"), "{}", plan.stdout);
}

#[test]
fn a_rerun_opens_the_gate_of_a_recorded_launch_whose_driver_died_before_opening_it() {
    let (h, url) = ready(1, 1);
    launch_script(&h, &write_result(&h));
    // What a `run` killed after its start-and-launch append and before it
    // opened the gate leaves: the case started, its launch recorded, the
    // gate waiting on its file (its stdin, the dead driver's pipe, closed).
    let health = format!("{url}/health");
    h.ok(&[
        "check",
        "daemon-health",
        "--group",
        "canary-1",
        "--url",
        &health,
    ]);
    for route in ["strong", "balanced", "economy"] {
        h.ok(&[
            "check", "sentinel", "--group", "canary-1", "--route", route, "--url", &url,
        ]);
    }
    let config = h.path("config.json").display().to_string();
    h.ok(&[
        "case",
        "render-config",
        "canary-1",
        "hello-world/c1",
        "-o",
        &config,
    ]);
    h.ok(&["check", "config", "--config", &config]);
    h.ok(&[
        "case",
        "start",
        "canary-1",
        "hello-world/c1",
        "--config",
        &config,
    ]);
    let name = "hello-world__canary-1-c1";
    let out = h.path(&format!("srv/{L}/canary-1/out/gates"));
    std::fs::create_dir_all(&out).unwrap();
    let command: Vec<String> = [
        "sh".to_string(),
        h.path("launch.sh").display().to_string(),
        name.to_string(),
        h.path(&format!("srv/{L}/jobs")).display().to_string(),
        config,
    ]
    .into();
    let argv = benchledger::testkit::procs::gate_argv(&out.join(name), 60_000, &command);
    let mut gate = std::process::Command::new(&argv[0]);
    std::os::unix::process::CommandExt::process_group(&mut gate, 0);
    let mut gate = gate
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let process = benchledger::testkit::procs::process_ref(gate.id()).unwrap();
    append(
        &h,
        vec![Event::CaseLaunched(CaseLaunched {
            group: GroupRef {
                lineage: L.into(),
                group: "canary-1".into(),
            },
            case: CaseRef {
                task: "hello-world".into(),
                trial: "c1".into(),
                replacement: 0,
            },
            process,
            deadline_utc_ns: u64::MAX,
        })],
    );
    // Elapsed time on purpose: that the gate keeps waiting is shown by a
    // while in which nothing happens; no event marks it.
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        gate.try_wait().unwrap().is_none() && records(&h, "trial_result_ingested.v1").is_empty(),
        "the gate waits"
    );
    let r = run_once(&h, &url, &[]);
    assert_eq!(r.code, 4, "the cleanup audit needs AWS: {}", r.stderr);
    assert!(r.stderr.contains("opened it"), "RUN-3: {}", r.stderr);
    assert_eq!(gate.wait().unwrap().code(), Some(0), "the launch ran");
    // RUN-3: the recorded launch ran as itself, never relaunched, and its
    // result counts: the group seals as an uninterrupted run does.
    assert!(records(&h, "case_invalidated.v1").is_empty(), "RUN-3");
    assert!(
        starts(&h).values().all(|n| *n == 1),
        "CASE-2: {:?}",
        starts(&h)
    );
    audit_clean(&h);
    let r = run_once(&h, &url, &[]);
    let sealed = records(&h, "group_sealed.v1");
    assert_eq!(
        sealed[0]["payload"]["status"], "accepted",
        "RUN-3: {}",
        r.stderr
    );
}

#[test]
fn a_rerun_adopts_a_live_launch_and_kills_it_at_its_recorded_deadline() {
    let (h, url) = ready(1, 1);
    // The launch outlives the frozen timeout of the test manifest (4 s).
    let pidfile = h.path("grandchild.pid");
    launch_script(
        &h,
        &format!("sleep 300 &\necho $! > {}\nsleep 300", pidfile.display()),
    );
    let mut first = spawn_run(&h, &url);
    let launched = await_record(&h, "case_launched.v1");
    let pgid = launched["payload"]["process"]["pid"].as_u64().unwrap();
    // kill -9 of `run` alone: its launch keeps running in its own group.
    first.kill().unwrap();
    first.wait().unwrap();
    assert!(
        !group_members(pgid).is_empty(),
        "the launch outlives its driver"
    );
    let r = run_once(&h, &url, &[]);
    assert_eq!(r.code, 4, "the cleanup audit needs AWS: {}", r.stderr);
    assert!(r.stderr.contains("adopted"), "RUN-3: {}", r.stderr);
    // RUN-3: adopted, never relaunched; RUN-4: killed with its group at the
    // recorded deadline, the kill recorded.
    assert!(
        starts(&h).values().all(|n| *n == 1),
        "CASE-2: {:?}",
        starts(&h)
    );
    let killed = records(&h, "command_killed.v1");
    assert_eq!(killed.len(), 1, "RUN-4: {killed:?}");
    assert_eq!(killed[0]["payload"]["pgid"], pgid, "RUN-4");
    assert!(
        group_members(pgid).is_empty(),
        "RUN-4: {:?}",
        group_members(pgid)
    );
    // RUN-5: the same end as a launch this driver timed out itself: the
    // exit by SIGKILL, no result, terminal_invalid.
    let exits = records(&h, "case_process_exited.v1");
    assert_eq!(exits[0]["payload"]["signal"], 9, "RUN-5: {exits:?}");
    let invalid = records(&h, "case_invalidated.v1");
    assert_eq!(
        invalid[0]["payload"]["reason"], "missing_verifier_result",
        "RUN-5"
    );
}
