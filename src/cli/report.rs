//! The CLI of the report and the publication exports: `report [show]
//! LINEAGE`, `report registry LINEAGE`, `export --redacted -o DIR` and
//! `export --parquet -o DIR`. Gathers the verified ledger, its head and the
//! output paths; every number comes from `crate::report`.

use crate::cli::out::{out, outln};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use crate::cli::common::*;
use crate::cli::Cli;
use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};

use crate::cli::progress::Progress;
use crate::cli::trust::{signed_head, SignedHead};
use crate::error::Error;
use crate::log::ledger::Ledger;
use crate::method::projections::{replay_until_observed, State};
use crate::report::{self, LedgerHead};

/// Arguments of `report`: `report [show] [LINEAGE] [--format md|json]
/// [--out DIR]`, or `report registry [LINEAGE]`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct ReportArgs {
    /// `show` (the default) or `registry`.
    #[command(subcommand)]
    pub command: Option<ReportCommand>,
    /// `report LINEAGE ...` is `report show LINEAGE ...`.
    #[command(flatten)]
    pub show: ShowArgs,
}

/// `report` verbs.
#[derive(Debug, Subcommand)]
pub enum ReportCommand {
    /// The report of a lineage: the twelve sections of REPORT-6 (markdown,
    /// or its JSON form); with --out, report.md, report.json and chart.svg
    /// written into DIR.
    Show(ShowArgs),
    /// The `terminal_bench_2_1` registry entry (YAML), only from accepted
    /// evidence of a public-reproduction lineage (REPORT-7, CLASS-2; other
    /// classes are refused with exit 3).
    Registry(RegistryArgs),
}

/// Output formats of `report show`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Markdown.
    Md,
    /// The JSON form (every number of the markdown is a field of it).
    Json,
}

/// Arguments of `report show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The lineage (optional when the ledger holds one).
    pub lineage: Option<String>,
    /// What to print on stdout (without --out); default md.
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Print one JSON document on stdout: the report's JSON form (as
    /// `--format json`), or with --out the files written.
    #[arg(long)]
    pub json: bool,
    /// Write report.md, report.json and chart.svg into this directory
    /// (created if missing) instead of printing.
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// Arguments of `report registry`.
#[derive(Debug, Args)]
pub struct RegistryArgs {
    /// The lineage (optional when the ledger holds one).
    pub lineage: Option<String>,
    /// The evaluation group the entry describes (default: the last
    /// predeclared round).
    #[arg(long)]
    pub group: Option<String>,
    /// Where the report and the ledger export are published (omitted from
    /// the entry when not given).
    #[arg(long, value_name = "URL")]
    pub source_url: Option<String>,
    /// Print the entry's JSON form instead of YAML.
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn head_of(ledger: &Ledger) -> anyhow::Result<LedgerHead> {
    let h = ledger.head()?;
    Ok(LedgerHead {
        head_seq: h.seq,
        head_hash: hex::encode(h.hash),
    })
}

/// Opens the ledger, verifies every link (a report is never rendered from a
/// damaged ledger) and folds it with the secret scan.
pub(crate) fn verified_state(
    cli: &Cli,
    wait: Duration,
) -> anyhow::Result<(Ledger, State, LedgerHead)> {
    let ledger = crate::cli::common::open_reading(&cli.ledger, wait)?;
    let verifying = Progress::spinner("verify", "checking every link from seq 0");
    let v = ledger.verify()?;
    verifying.finish();
    if !v.ok() {
        let d = v
            .damage
            .as_ref()
            .map(|d| format!("seq {}: {}", d.seq, d.kind))
            .unwrap_or_default();
        return Err(
            Error::Damage(format!("the ledger does not verify ({d}); run `verify`")).into(),
        );
    }
    let replaying = Progress::records("replay", ledger.head()?.seq + 1);
    let state = replay_until_observed(&ledger, State::scanning(), u64::MAX, &mut |seq| {
        replaying.set(seq + 1)
    })?;
    replaying.finish();
    let head = head_of(&ledger)?;
    Ok((ledger, state, head))
}

/// Writes `bytes` to `path` through a temporary file renamed into place.
fn write_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let tmp = path.with_extension("partial");
    std::fs::write(&tmp, bytes).with_context(|| format!("write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("rename to {}", path.display()))?;
    Ok(())
}

/// The three report files of a lineage: (name, bytes).
pub(crate) fn report_files(r: &report::Report) -> anyhow::Result<Vec<(&'static str, Vec<u8>)>> {
    let mut json = serde_json::to_vec_pretty(r)?;
    json.push(b'\n');
    Ok(vec![
        ("report.md", report::render_markdown(r).into_bytes()),
        ("report.json", json),
        (report::CHART_FILE, report::render_svg(r).into_bytes()),
    ])
}

/// The report of `lineage` at `head` with what TRUST-4 adds:
/// `signed` (`trust::signed_head`, the latest signed checkpoint of the log
/// and the inclusion proof of each seal in it) for the report's sealed
/// groups.
pub(crate) fn report_with_transparency(
    state: &State,
    lineage: &str,
    head: LedgerHead,
    signed: Option<&SignedHead>,
) -> anyhow::Result<report::Report> {
    let mut r = report::build(state, Some(lineage), head)?;
    let mut part = transparency(signed, &r.checksums.sealed);
    if let (Some(signed), Some(l)) = (signed, state.lineages.get(lineage)) {
        if let Some(witnessing) = &l.witnessing {
            for seal in &mut part.seals {
                let s = crate::method::witness::seal_witnessing(
                    witnessing,
                    signed.checkpoint.origin(),
                    &signed.recorded,
                    &l.cosigned,
                    seal.seq,
                );
                seal.witnessing = Some(report::SealWitnesses {
                    counts: s.counts(),
                    line: s.line(),
                    witnessed_by: s.witnessed_by,
                    quorum: s.quorum,
                    witnesses: s.witnesses,
                });
            }
        }
    }
    r.transparency = Some(part);
    Ok(r)
}

fn transparency(
    signed: Option<&SignedHead>,
    sealed: &[report::SealedLine],
) -> report::Transparency {
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine as _;
    use sha2::Digest as _;
    let Some(signed) = signed else {
        return report::Transparency {
            checkpoint: None,
            seals: Vec::new(),
        };
    };
    let checkpoint = report::SignedCheckpoint {
        seq: signed.seq,
        origin: signed.checkpoint.origin().to_string(),
        tree_size: signed.checkpoint.size(),
        root: hex::encode(signed.checkpoint.root()),
        signer: signed.signer.name().to_string(),
        key_id: format!("{:08x}", signed.signer.key_id()),
        note_sha256: hex::encode(sha2::Sha256::digest(signed.note.as_bytes())),
        note: signed.note.clone(),
    };
    let mut seals: Vec<report::SealInclusion> = sealed
        .iter()
        .map(|line| {
            let proof = signed.seals.iter().find(|p| p.leaf_index() == line.seq);
            report::SealInclusion {
                group: line.group.clone(),
                seq: line.seq,
                proof: proof.map(|p| report::SealProof {
                    link_hash: hex::encode(p.link_hash()),
                    hashes: p.hashes().iter().map(|h| STANDARD.encode(h)).collect(),
                }),
                witnessing: None,
            }
        })
        .collect();
    seals.sort_by_key(|s| s.seq);
    report::Transparency {
        checkpoint: Some(checkpoint),
        seals,
    }
}

/// `report [show] | registry`.
pub fn run_report(cli: &Cli, a: &ReportArgs, wait: Duration) -> anyhow::Result<ExitCode> {
    match &a.command {
        None => run_show(cli, &a.show, wait),
        Some(ReportCommand::Show(s)) => run_show(cli, s, wait),
        Some(ReportCommand::Registry(r)) => run_registry(cli, r, wait),
    }
}

fn run_show(cli: &Cli, a: &ShowArgs, wait: Duration) -> anyhow::Result<ExitCode> {
    let format = match (a.json, a.format) {
        (true, Some(Format::Md)) => {
            return Err(
                BadUsage("--json is --format json: it cannot go with --format md".into()).into(),
            )
        }
        (true, _) => Format::Json,
        (false, format) => format.unwrap_or(Format::Md),
    };
    let (ledger, state, head) = verified_state(cli, wait)?;
    let lineage = state.lineage(a.lineage.as_deref())?.frozen.lineage.clone();
    let signed = signed_head(&ledger, &state)?;
    let r = report_with_transparency(&state, &lineage, head, signed.as_ref())?;
    match &a.out {
        None => match format {
            Format::Md => out!("{}", report::render_markdown(&r))?,
            Format::Json => print_json(&serde_json::to_value(&r)?)?,
        },
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::io(format!("create {}", dir.display()), e))?;
            let mut files = Vec::new();
            for (name, bytes) in report_files(&r)? {
                write_file(&dir.join(name), &bytes)?;
                files.push(dir.join(name).display().to_string());
            }
            match a.json {
                true => print_json(&serde_json::json!({ "files": files }))?,
                false => outln!("{}", files.join("\n"))?,
            }
            eprintln!(
                "report of {} at head seq {}: {}",
                r.lineage, r.checksums.ledger.head_seq, r.go_no_go.line
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn run_registry(cli: &Cli, a: &RegistryArgs, wait: Duration) -> anyhow::Result<ExitCode> {
    let (_ledger, state, head) = verified_state(cli, wait)?;
    let r = report::registry(
        &state,
        a.lineage.as_deref(),
        a.group.as_deref(),
        head,
        a.source_url.as_deref(),
    )?;
    if a.json {
        print_json(&serde_json::to_value(&r)?)?;
    } else {
        out!("{}", report::render_registry_yaml(&r))?;
    }
    Ok(ExitCode::SUCCESS)
}
