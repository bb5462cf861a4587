//! `manifest freeze | sign-off | show`.

use crate::cli::out::{out, outln};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};
use serde_json::json;

use crate::cli::common::*;
use crate::cli::Cli;
use crate::error::Error;
use crate::log::ledger::Ledger;
use crate::schema::time::now_utc_ns;

/// `manifest` verbs.
#[derive(Debug, Subcommand)]
pub enum ManifestCommand {
    /// Validate a manifest and its private companion, compute the task
    /// manifest hash, the lineage key and the control key, and freeze it.
    ///
    /// Refused (exit 3, rule named): a lineage label already frozen
    /// (FREEZE-3); a path, port, database, tag or job name used before
    /// (FREEZE-4); task/trial counts that do not fit the class (CLASS-1);
    /// Harbor retries > 0 (CASE-5); target groups other than
    /// control+r1+r2[+r3] (LINEAGE-1). Only commitments and redacted forms
    /// of the private values are stored.
    Freeze(FreezeArgs),
    /// Record the operator's or the reviewer's sign-off (FREEZE-7): a
    /// signature of the frozen manifest hash with a key the manifest lists
    /// for the role (--key FILE, or --note FILE signed elsewhere), by two
    /// distinct keys (TRUST-3); both before any scored case starts. A key
    /// outside the list or a forged signature is refused (exit 3). A bare
    /// --name signs off only a lineage frozen as v1.
    SignOff(SignOffArgs),
    /// Print a frozen manifest as the ledger has it (TOML; --json for JSON).
    Show(ShowArgs),
}

/// Arguments of `manifest freeze`.
#[derive(Debug, Args)]
pub struct FreezeArgs {
    /// The public manifest (TOML).
    pub file: PathBuf,
    /// The private manifest (TOML): account, principal, secret locations,
    /// commitment key. Never stored.
    #[arg(long, value_name = "FILE")]
    pub private: PathBuf,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `manifest sign-off`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("signature").required(true).args(["key", "note", "name", "print_text"])))]
pub struct SignOffArgs {
    /// The lineage (optional when the ledger holds one).
    #[arg(long)]
    pub lineage: Option<String>,
    /// Who signs off.
    #[arg(long, value_enum)]
    pub role: RoleArg,
    /// Sign with this signer key file (`key generate`).
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// A C2SP signed note of the sign-off text, signed elsewhere (the text
    /// is what --print-text prints).
    #[arg(long, value_name = "FILE")]
    pub note: Option<PathBuf>,
    /// Print the text a sign-off signs (to sign it elsewhere) and append
    /// nothing.
    #[arg(long)]
    pub print_text: bool,
    /// A name instead of a signature: only for a lineage frozen as v1.
    #[arg(long)]
    pub name: Option<String>,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Sign-off roles on the command line.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum RoleArg {
    /// The operator who will run the lineage.
    Operator,
    /// A second person who reviewed the frozen manifest.
    Reviewer,
}

/// Arguments of `manifest show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The lineage (optional when the ledger holds one).
    pub lineage: Option<String>,
    /// The publication view: private values only in redacted form, no
    /// commitments.
    #[arg(long)]
    pub redacted: bool,
    /// Check every commitment against this private manifest.
    #[arg(long, value_name = "FILE")]
    pub private: Option<PathBuf>,
    /// Print JSON instead of TOML.
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn run_manifest(
    cli: &Cli,
    cmd: &ManifestCommand,
    wait: Duration,
) -> anyhow::Result<ExitCode> {
    let dir = &cli.ledger;
    match cmd {
        ManifestCommand::Freeze(a) => {
            let public = read_text(&a.file)?;
            let private = read_text(&a.private)?;
            let frozen = crate::method::freeze::freeze(
                &public,
                &a.file.display().to_string(),
                &private,
                &a.private.display().to_string(),
            )?;
            let summary = json!({
                "lineage": frozen.lineage,
                "manifest_blake3": frozen.manifest_blake3,
                "task_manifest_blake3": frozen.task_manifest_blake3,
                "lineage_key": frozen.lineage_key,
                "control_key": frozen.control_key,
            });
            let ledger = Ledger::open(dir, wait)?;
            let done = decide_and_append(&ledger, &cli.actor, now_utc_ns(), |s| {
                crate::method::decide::freeze(s, frozen)
            })?;
            let mut summary = summary;
            summary["seq"] = json!(done[0].seq);
            if a.json {
                print_json(&summary)?;
            } else {
                outln!(
                    "froze lineage {} at seq {}",
                    summary["lineage"].as_str().unwrap_or(""),
                    done[0].seq
                )?;
                for k in [
                    "manifest_blake3",
                    "task_manifest_blake3",
                    "lineage_key",
                    "control_key",
                ] {
                    outln!("  {k:<21} {}", summary[k].as_str().unwrap_or(""))?;
                }
                outln!("next: manifest sign-off --role operator --key OPERATOR.key, then --role reviewer --key REVIEWER.key (keys listed in [signers])")?;
            }
            Ok(ExitCode::SUCCESS)
        }
        ManifestCommand::SignOff(a) => run_sign_off(cli, a, wait),
        ManifestCommand::Show(a) => {
            let ledger = crate::cli::common::open_reading(dir, wait)?;
            let state = decide_state(&ledger)?;
            let l = state.lineage(a.lineage.as_deref())?;
            if let Some(p) = &a.private {
                let checked = crate::method::freeze::check_private(
                    &l.frozen.manifest,
                    &read_text(p)?,
                    &p.display().to_string(),
                )?;
                eprintln!(
                    "all {} private values match their commitments: {}",
                    checked.len(),
                    checked.join(", ")
                );
            }
            let mut value = if a.redacted {
                l.frozen.manifest.redacted_json()
            } else {
                serde_json::to_value(&l.frozen)?
            };
            // A v2 lineage's plan is public (commands, keys): shown in both.
            if let (Some(plan), Some(map)) = (&l.plan, value.as_object_mut()) {
                map.insert("plan".into(), serde_json::to_value(plan)?);
            }
            if a.json {
                print_json(&value)?;
            } else {
                out!(
                    "{}",
                    toml::to_string(&without_nulls(value))
                        .map_err(|e| Error::io("render toml", e))?
                )?;
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `manifest sign-off`: signed with a key file or a note made elsewhere,
/// or (v1 lineages only) a name; `--print-text` prints what is signed.
fn run_sign_off(cli: &Cli, a: &SignOffArgs, wait: Duration) -> anyhow::Result<ExitCode> {
    use crate::method::trust;
    use crate::schema::events::SignOffRole;
    let role = match a.role {
        RoleArg::Operator => SignOffRole::Operator,
        RoleArg::Reviewer => SignOffRole::Reviewer,
    };
    let key = a
        .key
        .as_deref()
        .map(crate::cli::trust::read_signer_key)
        .transpose()?;
    let note = a.note.as_deref().map(read_text).transpose()?;
    let ledger = Ledger::open(&cli.ledger, wait)?;
    if a.print_text {
        let state = decide_state(&ledger)?;
        let l = state.lineage(a.lineage.as_deref())?;
        out!(
            "{}",
            trust::sign_off_text(&l.frozen.lineage, role, &l.frozen.manifest_blake3)
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    let done = decide_and_append(&ledger, &cli.actor, now_utc_ns(), |s| {
        use crate::method::decide::{sign_off, sign_off_by, SignedBy};
        match (&key, &note, &a.name) {
            (Some(k), _, _) => sign_off_by(s, a.lineage.as_deref(), role, SignedBy::Key(k)),
            (_, Some(n), _) => sign_off_by(s, a.lineage.as_deref(), role, SignedBy::Note(n)),
            (_, _, Some(name)) => sign_off(s, a.lineage.as_deref(), role, name),
            _ => unreachable!("clap requires one of --key, --note, --name, --print-text"),
        }
    })?;
    if a.json {
        print_json(&json!({ "seq": done[0].seq, "hash": hex::encode(done[0].hash) }))?;
    } else {
        let by = key
            .as_ref()
            .map(|k| format!(" with key {}", k.verifier().encode()))
            .unwrap_or_default();
        outln!("signed off as {}{by} at seq {}", role.as_str(), done[0].seq)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// TOML has no null: drop absent optional fields before rendering.
fn without_nulls(v: serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Object(m) => serde_json::Value::Object(
            m.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, without_nulls(v)))
                .collect(),
        ),
        serde_json::Value::Array(a) => {
            serde_json::Value::Array(a.into_iter().map(without_nulls).collect())
        }
        other => other,
    }
}
