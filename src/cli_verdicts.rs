//! The CLI of verdicts and lineages: `group seal`, `case refusal`,
//! `case invalidate`, `feedback record`, `control reuse`, `lineage stop |
//! show`, and the read-only `gate`, `replay`, `audit`. Gathers facts (files,
//! clock), calls `decide` or the projections; no rule lives here.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};
use serde_json::json;

use crate::cli::{print_json, BadUsage, Cli};
use crate::cli_cases::{parse_case, parse_group};
use crate::error::Error;
use crate::error::ExitClass;
use crate::events::{Event, GroupRef, InvalidReason, RefusalClass};
use crate::ledger::Ledger;
use crate::projections::{replay_scanning, replay_until, At, State};
use crate::timefmt::now_utc_ns;
use crate::verdict::{self, Verdict};

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

/// `feedback` verbs.
#[derive(Debug, Subcommand)]
pub enum FeedbackCommand {
    /// Record reward feedback applied to the policy database, once after an
    /// accepted r1 or r2 (LINEAGE-3), with the snapshots before and after.
    Record(FeedbackArgs),
}

/// Arguments of `feedback record`.
#[derive(Debug, Args)]
pub struct FeedbackArgs {
    /// The group: `LINEAGE/r1` or `LINEAGE/r2`.
    pub group: String,
    /// Digest of the policy snapshot before feedback (64 hex).
    #[arg(long, value_name = "HASH")]
    pub before: String,
    /// Digest of the policy snapshot after feedback (64 hex).
    #[arg(long, value_name = "HASH")]
    pub after: String,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `control` verbs.
#[derive(Debug, Subcommand)]
pub enum ControlCommand {
    /// Reuse another lineage's accepted control: exact control key only,
    /// artifact checksum re-derived from the log (LINEAGE-6, LINEAGE-9).
    Reuse(ControlReuseArgs),
    /// List the control catalog: accepted controls by key and their reusers.
    List(JsonArg),
}

/// Arguments of `control reuse`.
#[derive(Debug, Args)]
pub struct ControlReuseArgs {
    /// The lineage that reuses.
    pub lineage: String,
    /// The accepted control: `LINEAGE/control`.
    #[arg(long, value_name = "LINEAGE/control")]
    pub control: String,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `lineage` verbs.
#[derive(Debug, Subcommand)]
pub enum LineageCommand {
    /// Stop a lineage (VERDICT-3): it launches nothing more; evidence is kept.
    Stop(LineageStopArgs),
    /// The lineage projection: groups, next group, feedback, completion.
    Show(LineageShowArgs),
}

/// Arguments of `lineage stop`.
#[derive(Debug, Args)]
pub struct LineageStopArgs {
    /// The lineage (optional when the ledger holds one).
    pub lineage: Option<String>,
    /// Why.
    #[arg(long)]
    pub reason: String,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `lineage show`.
#[derive(Debug, Args)]
pub struct LineageShowArgs {
    /// The lineage (optional when the ledger holds one).
    pub lineage: Option<String>,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// A `--json` flag alone.
#[derive(Debug, Args)]
pub struct JsonArg {
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `gate`.
#[derive(Debug, Args)]
pub struct GateArgs {
    /// The group: `LINEAGE/GROUP`, or `GROUP` when the ledger holds one lineage.
    pub group: String,
    /// Print one JSON document on stdout (every row, case, request).
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// Replay up to and including this seq (default: the head).
    #[arg(long, value_name = "SEQ")]
    pub at: Option<u64>,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

fn hash_file(path: &PathBuf) -> anyhow::Result<(String, String)> {
    let bytes = std::fs::read(path)
        .map_err(|e| Error::input(format!("cannot read {}: {e}", path.display())))?;
    if let Ok(text) = std::str::from_utf8(&bytes) {
        for (i, line) in text.lines().enumerate() {
            if let Some(f) = crate::secrets::scan(line) {
                return Err(Error::Refused {
                    rule: "FREEZE-2",
                    message: format!(
                        "{} line {}: looks like a credential ({}); evidence must be sanitized, nothing was appended",
                        path.display(),
                        i + 1,
                        f.shape
                    ),
                }
                .into());
            }
        }
    }
    Ok((
        path.display().to_string(),
        hex::encode(blake3::hash(&bytes).as_bytes()),
    ))
}

fn group_ref(state: &State, spec: &str) -> anyhow::Result<GroupRef> {
    let (lineage, group) = parse_group(spec);
    let l = state.lineage(lineage.as_deref())?;
    Ok(GroupRef {
        lineage: l.frozen.lineage.clone(),
        group,
    })
}

/// Decides on a scanning replay (the verdict's secrets row needs it) and
/// appends under the writer lock.
fn decide_scanning(
    cli: &Cli,
    ledger: &Ledger,
    decide: impl FnOnce(&State) -> crate::Result<Vec<Event>>,
) -> anyhow::Result<Vec<crate::ledger::Appended>> {
    let state = replay_scanning(ledger)?;
    crate::cli::append_events(ledger, &cli.actor, now_utc_ns(), decide(&state)?)
}

fn report_appended(
    done: &[crate::ledger::Appended],
    as_json: bool,
    what: &str,
) -> anyhow::Result<()> {
    if as_json {
        print_json(&json!({
            "seqs": done.iter().map(|d| d.seq).collect::<Vec<_>>(),
            "head_hash": done.last().map(|d| hex::encode(d.hash)),
        }))?;
    } else {
        let seqs: Vec<String> = done.iter().map(|d| d.seq.to_string()).collect();
        println!("{what} at seq {}", seqs.join(", "));
    }
    Ok(())
}

/// `group seal`.
pub fn run_seal(cli: &Cli, spec: &str, as_json: bool, wait: Duration) -> anyhow::Result<ExitCode> {
    let ledger = Ledger::open(&cli.ledger, wait)?;
    let (lineage, group) = parse_group(spec);
    let mut sealed: Option<(String, Vec<String>)> = None;
    let done = decide_scanning(cli, &ledger, |s| {
        let events = crate::decide::seal(s, lineage.as_deref(), &group, now_utc_ns())?;
        if let Some(Event::GroupSealed(g)) = events.first() {
            sealed = Some((
                g.status.clone(),
                g.rows
                    .iter()
                    .filter(|r| !r.holds)
                    .map(|r| r.gate.clone())
                    .collect(),
            ));
        }
        Ok(events)
    })?;
    let (status, failing) = sealed.unwrap_or_default();
    if as_json {
        print_json(&json!({
            "seq": done[0].seq,
            "hash": hex::encode(done[0].hash),
            "status": status,
            "failing_rows": failing,
            "appended": done.iter().map(|d| d.seq).collect::<Vec<_>>(),
        }))?;
    } else {
        println!("sealed {group} {status} at seq {}", done[0].seq);
        if !failing.is_empty() {
            println!("failing rows: {}", failing.join(", "));
        }
        if done.len() > 1 {
            eprintln!(
                "also appended seqs {:?} (control catalog / lineage stop)",
                &done[1..].iter().map(|d| d.seq).collect::<Vec<_>>()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
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
    let done = crate::cli::decide_and_append(&ledger, &cli.actor, now_utc_ns(), |s| {
        let g = group_ref(s, &a.group).map_err(|e| Error::input(e.to_string()))?;
        crate::decide::security_refusal(
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
    let (path, blake3) = hash_file(&a.evidence)?;
    let reason = match a.reason {
        ReasonArg::EnvironmentDisconnect => InvalidReason::EnvironmentDisconnect,
        ReasonArg::MissingVerifierResult => InvalidReason::MissingVerifierResult,
        ReasonArg::CorruptOutput => InvalidReason::CorruptOutput,
        ReasonArg::AgentException => InvalidReason::AgentException,
        ReasonArg::ControllerCrash => InvalidReason::ControllerCrash,
    };
    let ledger = Ledger::open(&cli.ledger, wait)?;
    let done = crate::cli::decide_and_append(&ledger, &cli.actor, now_utc_ns(), |s| {
        let g = group_ref(s, &a.group).map_err(|e| Error::input(e.to_string()))?;
        crate::decide::case_invalidate(s, &g, &case, reason, path, blake3)
    })?;
    report_appended(&done, a.json, "case terminal_invalid")?;
    Ok(ExitCode::SUCCESS)
}

/// `feedback record`.
pub fn run_feedback(cli: &Cli, cmd: &FeedbackCommand, wait: Duration) -> anyhow::Result<ExitCode> {
    let FeedbackCommand::Record(a) = cmd;
    let (lineage, group) = parse_group(&a.group);
    let ledger = Ledger::open(&cli.ledger, wait)?;
    let done = crate::cli::decide_and_append(&ledger, &cli.actor, now_utc_ns(), |s| {
        crate::decide::feedback(s, lineage.as_deref(), &group, &a.before, &a.after)
    })?;
    report_appended(&done, a.json, "feedback recorded")?;
    Ok(ExitCode::SUCCESS)
}

/// `control reuse | list`.
pub fn run_control(cli: &Cli, cmd: &ControlCommand, wait: Duration) -> anyhow::Result<ExitCode> {
    let ledger = Ledger::open(&cli.ledger, wait)?;
    match cmd {
        ControlCommand::Reuse(a) => {
            let (Some(cl), cg) = parse_group(&a.control) else {
                return Err(
                    BadUsage(format!("--control {:?} is not LINEAGE/control", a.control)).into(),
                );
            };
            let control = GroupRef {
                lineage: cl,
                group: cg,
            };
            let done = crate::cli::decide_and_append(&ledger, &cli.actor, now_utc_ns(), |s| {
                crate::decide::control_reuse(s, &a.lineage, &control)
            })?;
            report_appended(&done, a.json, "control reuse recorded")?;
        }
        ControlCommand::List(a) => {
            let state = crate::cli::decide_state(&ledger)?;
            let cat = verdict::control_catalog(&state);
            if a.json {
                print_json(&json!({ "controls": cat }))?;
            } else if cat.is_empty() {
                println!("no accepted control in the catalog");
            } else {
                for e in cat {
                    println!(
                        "{}/{} key {} artifact {} (seq {}) reused by {:?}",
                        e.group.lineage,
                        e.group.group,
                        e.control_key,
                        e.artifact_blake3,
                        e.seq,
                        e.reused_by
                    );
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_lineage(v: &verdict::LineageView) {
    println!("lineage {}", v.lineage);
    for g in &v.groups {
        let sealed = g
            .sealed
            .as_ref()
            .map_or("unsealed".to_string(), |(seq, s)| {
                format!("sealed {s} at seq {seq}")
            });
        println!(
            "  {:<10} {:<24} now {:<22}{}",
            g.group,
            sealed,
            g.status_now,
            g.feedback_seq
                .map_or(String::new(), |s| format!(" feedback at seq {s}"))
        );
    }
    if let Some(c) = &v.control {
        println!("  control: {c}");
    }
    println!(
        "  next group: {}",
        v.next_group.as_deref().unwrap_or("none")
    );
    if !v.feedback_allowed.is_empty() {
        println!("  feedback allowed from: {}", v.feedback_allowed.join(", "));
    }
    if let Some((seq, rule, reason)) = &v.stopped {
        println!("  STOPPED at seq {seq} ({rule}): {reason}");
    }
    println!("  complete: {}", v.complete);
}

/// `lineage stop | show`.
pub fn run_lineage(cli: &Cli, cmd: &LineageCommand, wait: Duration) -> anyhow::Result<ExitCode> {
    let ledger = Ledger::open(&cli.ledger, wait)?;
    match cmd {
        LineageCommand::Stop(a) => {
            let done = crate::cli::decide_and_append(&ledger, &cli.actor, now_utc_ns(), |s| {
                crate::decide::lineage_stop(s, a.lineage.as_deref(), &a.reason)
            })?;
            report_appended(&done, a.json, "lineage stopped")?;
        }
        LineageCommand::Show(a) => {
            let state = replay_scanning(&ledger)?;
            let l = state.lineage(a.lineage.as_deref())?;
            let v = verdict::lineage_view(&state, l);
            if a.json {
                print_json(&serde_json::to_value(&v)?)?;
            } else {
                print_lineage(&v);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints a verdict as a table.
pub fn print_verdict(v: &Verdict) {
    println!(
        "{}/{}: {}  (passed {}/{}, projection v{})",
        v.group.lineage, v.group.group, v.status, v.passed, v.total, v.projection_version
    );
    for r in &v.rows {
        println!(
            "  {:<13} {:<6} {}",
            r.gate,
            if r.holds { "holds" } else { "FAILS" },
            r.evidence
        );
    }
    for s in &v.skipped_security_policy {
        println!(
            "  skipped_security_policy {}/{} ({:?}; evidence {}, {})",
            s.case.task, s.case.trial, s.class, s.evidence_blake3[0], s.evidence_blake3[1]
        );
    }
}

/// `gate GROUP`: the verdict table as the log gives it now. Exit 0 when the
/// verdict is `accepted`, 1 otherwise.
pub fn run_gate(cli: &Cli, a: &GateArgs, wait: Duration) -> anyhow::Result<ExitCode> {
    let ledger = Ledger::open(&cli.ledger, wait)?;
    let state = replay_scanning(&ledger)?;
    let (lineage, group) = parse_group(&a.group);
    let l = state.lineage(lineage.as_deref())?;
    if !l
        .frozen
        .manifest
        .public
        .group_names()
        .contains(&group.as_str())
    {
        return Err(Error::input(format!(
            "group {group:?} is not in the frozen target list {:?}",
            l.frozen.manifest.public.group_names()
        ))
        .into());
    }
    let v = verdict::group_verdict(&state, l, &group);
    let sealed = l
        .groups
        .get(&group)
        .and_then(|g| g.sealed.as_ref())
        .map(|(at, s)| json!({ "seq": at.seq, "status": s.status }));
    if a.json {
        let mut doc = serde_json::to_value(&v)?;
        doc["sealed"] = sealed.unwrap_or(serde_json::Value::Null);
        print_json(&doc)?;
    } else {
        print_verdict(&v);
        if let Some(s) = sealed {
            println!(
                "  sealed: {} at seq {}",
                s["status"].as_str().unwrap_or(""),
                s["seq"]
            );
        }
    }
    Ok(if v.status == verdict::ACCEPTED {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(ExitClass::CheckFailed.code())
    })
}

/// Every projection as one JSON document.
pub fn replay_document(state: &State) -> serde_json::Value {
    let lineages: Vec<serde_json::Value> = state
        .lineages
        .values()
        .map(|l| {
            let view = verdict::lineage_view(state, l);
            let verdicts: Vec<serde_json::Value> = l
                .frozen
                .manifest
                .public
                .group_names()
                .into_iter()
                .filter(|g| l.groups.contains_key(*g))
                .map(|g| {
                    let v = verdict::group_verdict(state, l, g);
                    json!({
                        "group": g,
                        "status": v.status,
                        "sealed": l.groups.get(g).and_then(|x| x.sealed.as_ref()).map(|(at, s)| json!({"seq": at.seq, "status": s.status})),
                        "passed": v.passed,
                        "total": v.total,
                        "rows": v.rows,
                        "skipped_security_policy": v.skipped_security_policy,
                        "cases": v.cases,
                        "settlement_states": v.settlement.states.iter().map(|(k, n)| (format!("{k:?}").to_lowercase(), *n)).collect::<std::collections::BTreeMap<_, _>>(),
                        "series_micro_usd": v.settlement.series_micro_usd.iter().map(|(k, n)| (serde_json::to_value(k).ok().and_then(|x| x.as_str().map(String::from)).unwrap_or_default(), *n)).collect::<std::collections::BTreeMap<_, _>>(),
                        "joins": v.joins,
                        "cleanup": v.cleanup,
                    })
                })
                .collect();
            json!({ "lineage": view, "verdicts": verdicts })
        })
        .collect();
    json!({
        "head_seq": state.head_seq,
        "projection_version": crate::projections::PROJECTION_VERSION,
        "lineages": lineages,
        "controls": verdict::control_catalog(state),
    })
}

/// `replay [--at SEQ]`.
pub fn run_replay(cli: &Cli, a: &ReplayArgs, wait: Duration) -> anyhow::Result<ExitCode> {
    let ledger = Ledger::open(&cli.ledger, wait)?;
    let head = ledger.head()?;
    let at = a.at.unwrap_or(head.seq);
    if at > head.seq {
        return Err(BadUsage(format!("--at {at} is past the head {}", head.seq)).into());
    }
    let state = replay_until(&ledger, State::scanning(), at)?;
    let doc = replay_document(&state);
    if a.json {
        print_json(&doc)?;
        return Ok(ExitCode::SUCCESS);
    }
    println!("replayed seqs 0..={at}");
    for l in state.lineages.values() {
        print_lineage(&verdict::lineage_view(&state, l));
        for g in l.frozen.manifest.public.group_names() {
            if l.groups.contains_key(g) {
                print_verdict(&verdict::group_verdict(&state, l, g));
            }
        }
    }
    for e in verdict::control_catalog(&state) {
        println!(
            "control catalog: {}/{} key {} (seq {}) reused by {:?}",
            e.group.lineage, e.group.group, e.control_key, e.seq, e.reused_by
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// One sealed verdict compared with its re-derivation.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AuditLine {
    /// The group.
    pub group: GroupRef,
    /// Seq of the seal.
    pub seq: u64,
    /// The attested status.
    pub attested: String,
    /// The re-derived status.
    pub derived: String,
    /// Rows whose holds/evidence differ, and other differences.
    pub differences: Vec<String>,
}

/// Re-derives every sealed verdict from the log: for each `group_sealed` at
/// seq s, the verdict of the state through s - 1 (what `group seal` saw
/// under the lock) is compared with the attested one, row by row; and every
/// registered control artifact is re-derived at its seq.
pub fn audit(ledger: &Ledger) -> crate::Result<Vec<AuditLine>> {
    let mut state = State::scanning();
    let mut out = Vec::new();
    for v in ledger.records()? {
        let v = v?;
        let r = &v.decoded.record;
        match &v.decoded.event {
            Event::GroupSealed(s) => {
                let mut diffs = Vec::new();
                let derived = match state.lineages.get(&s.group.lineage) {
                    None => {
                        diffs.push("sealed for a lineage that was never frozen".to_string());
                        String::new()
                    }
                    Some(l) => {
                        let d = verdict::group_verdict(&state, l, &s.group.group);
                        if d.projection_version != s.projection_version {
                            diffs.push(format!(
                                "projection version: attested {}, this build {}",
                                s.projection_version, d.projection_version
                            ));
                        }
                        for (i, row) in d.rows.iter().enumerate() {
                            match s.rows.iter().find(|x| x.gate == row.gate) {
                                None => diffs.push(format!(
                                    "row {:?} missing from the attested verdict",
                                    row.gate
                                )),
                                Some(x) if x.holds != row.holds => diffs.push(format!(
                                    "row {:?}: attested {}, derived {}",
                                    row.gate,
                                    if x.holds { "holds" } else { "fails" },
                                    if row.holds { "holds" } else { "fails" }
                                )),
                                Some(x) if x.evidence != row.evidence => diffs.push(format!(
                                    "row {:?} evidence: attested {:?}, derived {:?}",
                                    row.gate, x.evidence, row.evidence
                                )),
                                Some(_) => {}
                            }
                            let _ = i;
                        }
                        for x in &s.rows {
                            if !d.rows.iter().any(|row| row.gate == x.gate) {
                                diffs.push(format!(
                                    "attested row {:?} is not a row of this build",
                                    x.gate
                                ));
                            }
                        }
                        if d.skipped_cases() != s.skipped_security_policy {
                            diffs.push("skipped_security_policy differs".to_string());
                        }
                        if d.status != s.status {
                            diffs.push(format!(
                                "status: attested {}, derived {}",
                                s.status, d.status
                            ));
                        }
                        d.status
                    }
                };
                out.push(AuditLine {
                    group: s.group.clone(),
                    seq: r.seq,
                    attested: s.status.clone(),
                    derived,
                    differences: diffs,
                });
            }
            Event::ControlRegistered(c) => {
                if let Some(l) = state.lineages.get(&c.group.lineage) {
                    let art = verdict::control_artifact_blake3(l, &c.group.group);
                    if art != c.artifact_blake3 {
                        out.push(AuditLine {
                            group: c.group.clone(),
                            seq: r.seq,
                            attested: c.artifact_blake3.clone(),
                            derived: art,
                            differences: vec!["control artifact checksum differs".into()],
                        });
                    }
                }
            }
            _ => {}
        }
        state.apply(
            At {
                seq: r.seq,
                utc_ns: r.recorded_at_utc_ns,
            },
            &v.decoded.event,
        );
    }
    Ok(out)
}

/// `audit`: exit 0 when every sealed verdict re-derives exactly, 1 otherwise.
pub fn run_audit(cli: &Cli, as_json: bool, wait: Duration) -> anyhow::Result<ExitCode> {
    let ledger = Ledger::open(&cli.ledger, wait)?;
    let report = ledger.verify()?;
    if !report.ok() {
        let d = report
            .damage
            .as_ref()
            .map(|d| format!("seq {}: {}", d.seq, d.kind));
        eprintln!(
            "error: the ledger does not verify ({}); run `verify`",
            d.unwrap_or_default()
        );
        return Ok(ExitCode::from(ExitClass::CheckFailed.code()));
    }
    let lines = audit(&ledger)?;
    let bad = lines.iter().filter(|l| !l.differences.is_empty()).count();
    if as_json {
        print_json(
            &json!({ "ok": bad == 0, "sealed": lines.len(), "differing": bad, "verdicts": lines }),
        )?;
    } else {
        for l in &lines {
            if l.differences.is_empty() {
                println!(
                    "{}/{} seq {}: {} re-derived exactly",
                    l.group.lineage, l.group.group, l.seq, l.attested
                );
            } else {
                println!(
                    "{}/{} seq {}: DIFFERS",
                    l.group.lineage, l.group.group, l.seq
                );
                for d in &l.differences {
                    println!("  {d}");
                }
            }
        }
        println!("{} sealed verdicts, {} differ", lines.len(), bad);
    }
    Ok(if bad == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(ExitClass::CheckFailed.code())
    })
}
