//! The CLI of groups and cases: `group open|close`, `case render-config`,
//! `case start [-- CMD]`, `resume`. Gathers facts (files, clock, the child
//! process), calls `decide`, appends; no rule lives here.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command as Process, ExitCode, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::cli::decide_state as replay;
use crate::cli::{
    decide_and_append, print_json, BadUsage, CaseCommand, Cli, GroupCommand, ResumeArgs,
};
use crate::decide::{CaseStart, GroupOpen};
use crate::error::Error;
use crate::events::{ArtifactRecorded, CaseProcessExited, CaseRef, Event, GroupRef};
use crate::ledger::{Draft, Ledger};
use crate::projections::{LineageState, State};
use crate::timefmt::now_utc_ns;

/// Splits `LINEAGE/GROUP` or `GROUP`.
pub fn parse_group(s: &str) -> (Option<String>, String) {
    match s.split_once('/') {
        Some((l, g)) => (Some(l.to_string()), g.to_string()),
        None => (None, s.to_string()),
    }
}

/// Parses `TASK/TRIAL` or `TASK/TRIAL/replacement-NN`.
pub(crate) fn parse_case(s: &str) -> Result<CaseRef, BadUsage> {
    let parts: Vec<&str> = s.split('/').collect();
    let bad = || {
        BadUsage(format!(
            "case {s:?} is not TASK/TRIAL or TASK/TRIAL/replacement-01"
        ))
    };
    let (task, trial, replacement) = match parts.as_slice() {
        [task, trial] => (task, trial, 0),
        [task, trial, rep] => {
            let n = rep
                .strip_prefix("replacement-")
                .and_then(|n| n.parse::<u8>().ok())
                .filter(|n| *n > 0)
                .ok_or_else(bad)?;
            (task, trial, n)
        }
        _ => return Err(bad()),
    };
    if task.is_empty() || trial.is_empty() {
        return Err(bad());
    }
    Ok(CaseRef {
        task: task.to_string(),
        trial: trial.to_string(),
        replacement,
    })
}

fn blake3_file(path: &Path) -> anyhow::Result<(u64, String)> {
    let bytes = std::fs::read(path)
        .map_err(|e| Error::input(format!("cannot read {}: {e}", path.display())))?;
    Ok((
        bytes.len() as u64,
        hex::encode(blake3::hash(&bytes).as_bytes()),
    ))
}

/// `group open | close`.
pub fn run_group(cli: &Cli, cmd: &GroupCommand, wait: Duration) -> anyhow::Result<ExitCode> {
    if let GroupCommand::Seal(a) = cmd {
        return crate::cli_verdicts::run_seal(cli, &a.group, a.json, wait);
    }
    let ledger = Ledger::open(&cli.ledger, wait)?;
    let (done, json_out, what) = match cmd {
        GroupCommand::Open(a) => {
            let (lineage, group) = parse_group(&a.group);
            let open = GroupOpen {
                lineage,
                group,
                binary_sha256: a.binary_sha256.clone(),
                config_sha256: a.config_sha256.clone(),
                ports: a.ports.clone(),
                db_path: a.db.clone(),
                out_dir: a.out.clone(),
            };
            (
                decide_and_append(&ledger, &cli.actor, now_utc_ns(), |s| {
                    crate::decide::group_open(s, open)
                })?,
                a.json,
                "opened",
            )
        }
        GroupCommand::Close(a) => {
            let (lineage, group) = parse_group(&a.group);
            (
                decide_and_append(&ledger, &cli.actor, now_utc_ns(), |s| {
                    crate::decide::group_close(s, lineage.as_deref(), &group)
                })?,
                a.json,
                "closed",
            )
        }
        GroupCommand::Seal(_) => unreachable!("handled above"),
    };
    if json_out {
        print_json(&json!({ "seq": done[0].seq, "hash": hex::encode(done[0].hash) }))?;
    } else {
        println!("group {what} at seq {}", done[0].seq);
    }
    Ok(ExitCode::SUCCESS)
}

/// `case render-config | start`.
pub fn run_case(cli: &Cli, cmd: &CaseCommand, wait: Duration) -> anyhow::Result<ExitCode> {
    match cmd {
        CaseCommand::RenderConfig(a) => {
            let (lineage, group) = parse_group(&a.group);
            let case = parse_case(&a.case)?;
            let ledger = Ledger::open(&cli.ledger, wait)?;
            let state = replay(&ledger)?;
            let l = state.lineage(lineage.as_deref())?;
            let r = crate::trial_config::render(&l.frozen.manifest.public, &group, &case)?;
            let Some(out) = &a.out else {
                std::io::stdout().write_all(&r.bytes)?;
                return Ok(ExitCode::SUCCESS);
            };
            std::fs::write(out, &r.bytes)
                .map_err(|e| Error::io(format!("write {}", out.display()), e))?;
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
            if a.json {
                print_json(
                    &json!({ "path": out.display().to_string(), "blake3": r.blake3, "seq": done[0].seq }),
                )?;
            } else {
                println!(
                    "wrote {} (blake3 {}) recorded at seq {}",
                    out.display(),
                    r.blake3,
                    done[0].seq
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        CaseCommand::Start(a) => start(cli, a, wait),
        CaseCommand::Refusal(a) => crate::cli_verdicts::run_refusal(cli, a, wait),
        CaseCommand::Invalidate(a) => crate::cli_verdicts::run_invalidate(cli, a, wait),
    }
}

fn start(cli: &Cli, a: &crate::cli::CaseStartArgs, wait: Duration) -> anyhow::Result<ExitCode> {
    let (lineage, group) = parse_group(&a.group);
    let case = parse_case(&a.case)?;
    // Everything below happens under the writer lock: replay, decide, append.
    let ledger = Ledger::open(&cli.ledger, wait)?;
    let state = replay(&ledger)?;
    let l = state.lineage(lineage.as_deref())?;
    let m = &l.frozen.manifest.public;
    // An unknown group or identity renders nothing; `decide` then refuses it
    // naming the rule (LINEAGE-1, CASE-8) before it looks at the config.
    let config_blake3 = match &a.config {
        Some(path) => blake3_file(path)?.1,
        None => crate::trial_config::render(m, &group, &case)
            .map(|r| r.blake3)
            .unwrap_or_default(),
    };
    let trial_name = crate::trial_config::trial_name(&case.task, &group, &case);
    let log_path = a.log.clone().unwrap_or_else(|| {
        let out = m
            .groups
            .iter()
            .find(|g| g.name == group)
            .map(|g| g.out_dir.clone())
            .unwrap_or_default();
        PathBuf::from(out).join(format!("{trial_name}.log"))
    });
    let lineage_label = l.frozen.lineage.clone();
    let env = child_env(l);
    let now = now_utc_ns();
    let cmd = CaseStart {
        lineage: lineage.clone(),
        group: group.clone(),
        case: case.clone(),
        trial_name,
        trial_config_blake3: config_blake3,
        command: a.command.clone(),
        now_utc_ns: now,
    };
    let events = crate::decide::case_start(&state, cmd)?;
    let key = format!("case-start:{lineage_label}/{group}/{}", case.label());
    let drafts: Vec<Draft> = events
        .into_iter()
        .map(|event| Draft {
            actor: cli.actor.clone(),
            event,
            idempotency_key: Some(key.clone()),
        })
        .collect();
    let started = ledger.append(&drafts, now)?[0];
    // `started` is durable. Release the lock while the command runs, so other
    // cases can start; a crash from here on leaves the case `started`.
    drop(ledger);
    tracing::info!("case {} started at seq {}", case.label(), started.seq);
    let mut out = json!({ "started_seq": started.seq, "started_hash": hex::encode(started.hash) });
    if a.command.is_empty() {
        if a.json {
            print_json(&out)?;
        } else {
            println!("case {} started at seq {}", case.label(), started.seq);
        }
        return Ok(ExitCode::SUCCESS);
    }
    let exited = run_command(&a.command, &env, &log_path)?;
    let event = Event::CaseProcessExited(CaseProcessExited {
        group: GroupRef {
            lineage: lineage_label,
            group,
        },
        case: case.clone(),
        exit_code: exited.exit_code,
        signal: exited.signal,
        duration_ms: exited.duration_ms,
        log_path: log_path.display().to_string(),
        log_blake3: exited.log_blake3,
    });
    let ledger = Ledger::open(&cli.ledger, wait)?;
    let done = ledger.append(
        &[Draft {
            actor: cli.actor.clone(),
            event,
            idempotency_key: None,
        }],
        now_utc_ns(),
    )?[0];
    out["exit_code"] = json!(exited.exit_code);
    out["signal"] = json!(exited.signal);
    out["duration_ms"] = json!(exited.duration_ms);
    out["exited_seq"] = json!(done.seq);
    if a.json {
        print_json(&out)?;
    } else {
        println!(
            "case {} started at seq {}; command exited {} after {} ms (recorded at seq {})",
            case.label(),
            started.seq,
            exited.exit_code.map_or_else(
                || format!("by signal {}", exited.signal.unwrap_or(0)),
                |c| format!("with {c}")
            ),
            exited.duration_ms,
            done.seq
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The frozen AWS selector for the child, and no ambient credentials or
/// endpoint that could silently win over it (GATE-1).
fn child_env(l: &LineageState) -> Vec<(String, Option<String>)> {
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

struct Exited {
    exit_code: Option<i32>,
    signal: Option<i32>,
    duration_ms: u64,
    log_blake3: String,
}

fn run_command(
    command: &[String],
    env: &[(String, Option<String>)],
    log_path: &Path,
) -> anyhow::Result<Exited> {
    use std::os::unix::process::ExitStatusExt;
    if let Some(parent) = log_path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| Error::io(format!("create {}", parent.display()), e))?;
    }
    let log = std::fs::File::create(log_path)
        .map_err(|e| Error::io(format!("create {}", log_path.display()), e))?;
    let mut p = Process::new(&command[0]);
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
    let t0 = Instant::now();
    let status = p
        .status()
        .map_err(|e| Error::io(format!("run {:?}", command[0]), e))?;
    let duration_ms = t0.elapsed().as_millis() as u64;
    let (_, log_blake3) = blake3_file(log_path)?;
    Ok(Exited {
        exit_code: status.code(),
        signal: status.signal(),
        duration_ms,
        log_blake3,
    })
}

/// Harbor trial directory names under a jobs dir (or a job dir).
fn harbor_trial_dirs(dir: &Path) -> anyhow::Result<std::collections::BTreeSet<String>> {
    let mut out = std::collections::BTreeSet::new();
    let read = |d: &Path| {
        std::fs::read_dir(d).map_err(|e| Error::input(format!("cannot read {}: {e}", d.display())))
    };
    for entry in read(dir)? {
        let entry = entry?;
        if !entry.file_type()?.is_dir() {
            continue;
        }
        out.insert(entry.file_name().to_string_lossy().into_owned());
        // A jobs dir holds job dirs, which hold trial dirs.
        for inner in read(&entry.path())? {
            let inner = inner?;
            if inner.file_type()?.is_dir() {
                out.insert(inner.file_name().to_string_lossy().into_owned());
            }
        }
    }
    Ok(out)
}

/// `resume`: which identities may launch (CASE-4).
pub fn run_resume(cli: &Cli, a: &ResumeArgs, wait: Duration) -> anyhow::Result<ExitCode> {
    let (lineage, group) = parse_group(&a.group);
    let on_disk = match &a.harbor_jobs {
        Some(d) => harbor_trial_dirs(d)?,
        None => Default::default(),
    };
    let ledger = Ledger::open(&cli.ledger, wait)?;
    let state: State = replay(&ledger)?;
    drop(ledger);
    let rows = crate::decide::resume(&state, lineage.as_deref(), &group, &on_disk)?;
    let mut launchable = Vec::new();
    let mut blocked = Vec::new();
    for row in rows {
        match row.blocked {
            None => launchable.push(row.case.label()),
            Some(r) => blocked.push(json!({ "case": row.case.label(), "reason": r })),
        }
    }
    if a.json {
        print_json(
            &json!({ "group": group, "launchable": launchable, "not_launchable": blocked }),
        )?;
    } else {
        println!("{} launchable in {group}:", launchable.len());
        for c in &launchable {
            println!("  {c}");
        }
        println!("{} not launchable:", blocked.len());
        for b in &blocked {
            println!(
                "  {}: {}",
                b["case"].as_str().unwrap_or(""),
                b["reason"].as_str().unwrap_or("")
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
