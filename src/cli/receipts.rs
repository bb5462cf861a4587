//! `run`'s receipt polls (SETTLE-8): one attempt per pending request,
//! within the frozen settlement grace and attempt budget that
//! `method::run_plan` applies. An attempt runs the frozen
//! `evidence.reconcile` command for the request (BitRouter's
//! `reconcile-metering`, which stores the receipt in its database). The
//! attempt is recorded before it runs, as a `bitrouter_reconcile` artifact
//! of `{out_dir}/receipt-polls/<key>.attempt-NNN.json` (its argv): the
//! ledger counts the attempts, and a kill can only over-count them. The
//! command's output (`.log` beside it) is recorded after it ends
//! (`bitrouter_reconcile_output`). After the round, the frozen `evidence.usage_export`
//! exports the usage rows again; the authoritative receipts of the polled
//! requests are taken from them and ingested as receipts (the usage rows
//! themselves are not ingested twice).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::cli::case;
use crate::cli::common::announce;
use crate::cli::proc::{self, Ended};
use crate::cli::Cli;
use crate::error::Error;
use crate::log::ledger::{Draft, Ledger};
use crate::method::projections::LineageState;
use crate::method::run_plan::{self, poll_file_name, RunHistory, RECONCILE_ROLE};
use crate::schema::events::{ArtifactRecorded, CommandKilled, CommandRole, Event, GroupRef};
use crate::schema::manifest::Group;
use crate::schema::time::now_utc_ns;

/// The frozen group `name` of lineage `l`.
pub(crate) fn frozen_group<'l>(l: &'l LineageState, name: &str) -> anyhow::Result<&'l Group> {
    l.frozen
        .manifest
        .public
        .groups
        .iter()
        .find(|g| g.name == name)
        .ok_or_else(|| Error::input(format!("group {name:?} is not frozen")).into())
}

/// The placeholders every evidence command of group `g` may use: its
/// `{db_path}`, and `{opened_at}` (the group's `group_opened` time, whole
/// seconds rounded down, RFC 3339 UTC) once it is open, so a database
/// shared across groups (LINEAGE-8) can be scanned from the group's start
/// (JOIN-2: a window bounds a scan, never decides membership).
fn evidence_values<'a>(l: &LineageState, g: &Group) -> BTreeMap<&'a str, String> {
    let mut values = BTreeMap::from([("db_path", g.db_path.clone())]);
    if let Some((at, _)) = l.groups.get(&g.name).and_then(|s| s.opened.as_ref()) {
        values.insert("opened_at", crate::schema::time::rfc3339_utc_sec(at.utc_ns));
    }
    values
}

/// Runs the frozen usage export (`{db_path}`, `{out}`, `{opened_at}`) of
/// group `g` into `out`; its output goes to `log`. A failed export, or one
/// killed at its deadline (RUN-4, recorded), is an error.
pub(crate) fn export_usage(
    cli: &Cli,
    wait: Duration,
    l: &LineageState,
    g: &Group,
    out: &Path,
    log: &Path,
) -> anyhow::Result<()> {
    let plan = run_plan::plan_of(l)?;
    let mut values = evidence_values(l, g);
    values.insert("out", out.display().to_string());
    let argv = crate::schema::plan::fill(&plan.evidence.usage_export, &values)
        .map_err(|e| Error::input(format!("evidence.usage_export: {e}")))?;
    if let Some(dir) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::io(format!("create {}", dir.display()), e))?;
    }
    let ended = run_evidence_command(cli, wait, l, g, CommandRole::UsageExport, &argv, log)?;
    if ended.killed {
        return Err(Error::input(format!(
            "the frozen usage export ran past its deadline ({} s, the frozen settlement grace) and was killed with its process group (recorded; its output: {})",
            l.frozen.manifest.public.limits.settlement_grace_sec,
            log.display()
        ))
        .into());
    }
    if !ended.status.success() {
        return Err(Error::input(format!(
            "the frozen usage export exited with {} (its output: {})",
            ended.status,
            log.display()
        ))
        .into());
    }
    Ok(())
}

/// Runs one evidence command of group `g` (its output to `log`) under its
/// deadline, the frozen settlement grace: past it the whole process group
/// is killed and the kill recorded (RUN-4).
fn run_evidence_command(
    cli: &Cli,
    wait: Duration,
    l: &LineageState,
    g: &Group,
    role: CommandRole,
    argv: &[String],
    log: &Path,
) -> anyhow::Result<Ended> {
    let deadline = Duration::from_secs(l.frozen.manifest.public.limits.settlement_grace_sec);
    let started = Instant::now();
    let mut child = case::spawn_command(argv, &case::child_env(l), log)?;
    let pgid = child.id();
    let ended = proc::wait_bounded(&mut child, started, deadline)
        .map_err(|e| Error::io(format!("wait for {:?}", argv[0]), e))?;
    if ended.killed {
        let event = Event::CommandKilled(CommandKilled {
            group: GroupRef {
                lineage: l.frozen.lineage.clone(),
                group: g.name.clone(),
            },
            case: None,
            role,
            argv: argv.to_vec(),
            pgid,
            signal: proc::KILL_SIGNAL,
            deadline_ms: u64::try_from(deadline.as_millis()).unwrap_or(u64::MAX),
            ran_ms: u64::try_from(ended.ran.as_millis()).unwrap_or(u64::MAX),
        });
        let done = crate::cli::common::append(cli, wait, vec![event])?;
        announce(&done);
    }
    Ok(ended)
}

/// What one round of polls did.
pub(crate) struct PollRound {
    /// Attempts recorded.
    pub attempts: usize,
    /// Receipts found for the polled requests and ingested.
    pub receipts: usize,
}

/// One poll of each of `request_ids` (group `group` of lineage `l`), the
/// attempts recorded (numbered after those `done`, the history the step
/// was planned from), then the receipts the usage export now carries for
/// them ingested.
pub(crate) fn poll_round(
    cli: &Cli,
    wait: Duration,
    spec: &str,
    l: &LineageState,
    group: &str,
    request_ids: &[String],
    done: &RunHistory,
) -> anyhow::Result<PollRound> {
    let g = frozen_group(l, group)?;
    let plan = run_plan::plan_of(l)?;
    let dir = PathBuf::from(&g.out_dir).join("receipt-polls");
    let group_ref = GroupRef {
        lineage: l.frozen.lineage.clone(),
        group: group.to_string(),
    };
    // Each attempt is recorded before it runs (its argv, as the attempt
    // file), so a kill between the record and the command can only count
    // an attempt that never ran: the budget is never exceeded.
    let mut attempts = Vec::new();
    for id in request_ids {
        let attempt = dir.join(poll_file_name(id, done.polls_of(id) + 1));
        let mut values = evidence_values(l, g);
        values.insert("request_id", id.clone());
        let argv = crate::schema::plan::fill(&plan.evidence.reconcile, &values)
            .map_err(|e| Error::input(format!("evidence.reconcile: {e}")))?;
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::io(format!("create {}", dir.display()), e))?;
        std::fs::write(&attempt, serde_json::to_vec(&argv)?)
            .map_err(|e| Error::io(format!("write {}", attempt.display()), e))?;
        attempts.push((attempt, argv));
    }
    record(
        cli,
        wait,
        &group_ref,
        RECONCILE_ROLE,
        attempts.iter().map(|(a, _)| a.as_path()),
    )?;
    let mut outputs = Vec::new();
    for (attempt, argv) in &attempts {
        let output = attempt.with_extension("log");
        // A failing or killed attempt is still an attempt: its output is
        // the record (and a kill at the deadline is recorded, RUN-4).
        run_evidence_command(cli, wait, l, g, CommandRole::ReceiptPoll, argv, &output)?;
        outputs.push(output);
    }
    record(
        cli,
        wait,
        &group_ref,
        RECONCILE_OUTPUT_ROLE,
        outputs.iter().map(PathBuf::as_path),
    )?;
    let attempts = attempts.len();
    let receipts = ingest_found(cli, wait, spec, l, g, &dir, request_ids)?;
    Ok(PollRound { attempts, receipts })
}

/// No new attempt: the usage rows exported once more, and the receipts
/// they carry for `request_ids` ingested; how many.
pub(crate) fn collect(
    cli: &Cli,
    wait: Duration,
    spec: &str,
    l: &LineageState,
    group: &str,
    request_ids: &[String],
) -> anyhow::Result<usize> {
    let g = frozen_group(l, group)?;
    let dir = PathBuf::from(&g.out_dir).join("receipt-polls");
    ingest_found(cli, wait, spec, l, g, &dir, request_ids)
}

/// The role of a poll attempt's output (what the reconcile command printed).
pub(crate) const RECONCILE_OUTPUT_ROLE: &str = "bitrouter_reconcile_output";

/// Records `paths` as artifacts of `role`, in one append.
fn record<'p>(
    cli: &Cli,
    wait: Duration,
    group: &GroupRef,
    role: &str,
    paths: impl Iterator<Item = &'p Path>,
) -> anyhow::Result<()> {
    let mut drafts = Vec::new();
    for path in paths {
        let (bytes, blake3) = crate::cli::common::blake3_file(path)?;
        drafts.push(Draft {
            actor: cli.actor.clone(),
            event: Event::ArtifactRecorded(ArtifactRecorded {
                group: Some(group.clone()),
                role: role.into(),
                path: path.display().to_string(),
                bytes,
                blake3,
            }),
            idempotency_key: None,
        });
    }
    if drafts.is_empty() {
        return Ok(());
    }
    let ledger = Ledger::open(&cli.ledger, wait)?;
    let appended = ledger.append(&drafts, now_utc_ns())?;
    announce(&appended);
    Ok(())
}

/// Exports the usage rows again and ingests, as receipts, the authoritative
/// receipts they now carry for `request_ids`; returns how many.
fn ingest_found(
    cli: &Cli,
    wait: Duration,
    spec: &str,
    l: &LineageState,
    g: &Group,
    dir: &Path,
    request_ids: &[String],
) -> anyhow::Result<usize> {
    let stamp = now_utc_ns();
    let usage = dir.join(format!("usage-{stamp}.jsonl"));
    export_usage(
        cli,
        wait,
        l,
        g,
        &usage,
        &dir.join(format!("usage-{stamp}.log")),
    )?;
    let text = std::fs::read_to_string(&usage)
        .map_err(|e| Error::io(format!("read {}", usage.display()), e))?;
    let lines = receipts_of(&text, request_ids, &usage)?;
    if lines.is_empty() {
        return Ok(0);
    }
    let file = dir.join(format!("receipts-{stamp}.jsonl"));
    std::fs::write(&file, lines.join("\n") + "\n")
        .map_err(|e| Error::io(format!("write {}", file.display()), e))?;
    let parse = crate::cli::ingest::row_parser("receipts").expect("receipts have a row parser");
    crate::cli::ingest::ingest_file(cli, wait, spec, &file, "receipts", parse, false)?;
    Ok(lines.len())
}

/// The `authoritative_receipt` objects of the usage rows of `request_ids`
/// (empty objects and nulls are no receipt), one JSON line each.
fn receipts_of(text: &str, request_ids: &[String], file: &Path) -> anyhow::Result<Vec<String>> {
    let wanted: BTreeSet<&str> = request_ids.iter().map(String::as_str).collect();
    let mut out = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let row: serde_json::Value = serde_json::from_str(line).map_err(|e| {
            Error::input(format!("{} line {}: not JSON: {e}", file.display(), i + 1))
        })?;
        let id = row.get("request_id").and_then(|v| v.as_str()).unwrap_or("");
        let receipt = row.get("authoritative_receipt");
        let present = receipt
            .and_then(|r| r.as_object())
            .is_some_and(|o| !o.is_empty());
        if wanted.contains(id) && present {
            out.push(serde_json::to_string(receipt.expect("present"))?);
        }
    }
    Ok(out)
}
