//! `export --jsonl [-o FILE] | --redacted -o DIR | --parquet -o DIR |
//! --tiles -o DIR`: the canonical export and the publication bundles
//! (`--tiles`: `cli::tiles`).

use crate::cli::out::outln;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde_json::json;

use crate::cli::common::*;
use crate::cli::progress::{LineCountingWriter, Progress};
use crate::cli::report::{report_files, report_with_transparency, verified_state};
use crate::cli::trust::{signed_head, SignedHead};
use crate::cli::Cli;
use crate::error::Error;
use crate::log::ledger::Ledger;
use crate::report;
use anyhow::Context;
use sha2::Digest;
use std::io::BufWriter;

/// Arguments of `export`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("format").required(true).args(["jsonl", "redacted", "parquet", "tiles"])))]
pub struct ExportArgs {
    /// Export as JSON lines (on stdout, or into the file -o names).
    #[arg(long)]
    pub jsonl: bool,
    /// Write the export into this file (--jsonl; default stdout) or this
    /// directory (--redacted, --parquet and --tiles: required there).
    #[arg(long, short = 'o', value_name = "FILE|DIR")]
    pub out: Option<PathBuf>,
    /// The publication bundle into a new directory (-o DIR): redacted
    /// manifests, the ledger export, the reports, request/case tables, a
    /// secret scan of every file and SHA-256 + BLAKE3 checksums (refused,
    /// exit 3, when the scan finds a credential shape).
    #[arg(long)]
    pub redacted: bool,
    /// The request, case and group tables as a Parquet dataset partitioned
    /// by lineage (DIR/<table>/lineage_key=lineage-<label>/part-<head>.parquet,
    /// the lineage also a string column of every file), in a new or empty
    /// directory (-o DIR).
    #[arg(long, long_help = PARQUET_HELP, help = PARQUET_HELP)]
    pub parquet: bool,
    /// With --parquet: add this ledger's lineages to an existing dataset
    /// (refused for a lineage already in it), so one SQL statement queries
    /// many ledgers.
    #[arg(long, requires = "parquet")]
    pub append: bool,
    /// The log as C2SP tlog-tiles in -o DIR (new, empty, or an earlier tiles
    /// export of this ledger): `checkpoint` (the latest signed one, written
    /// last), hash tiles `tile/<L>/<N>[.p/<W>]`, entry bundles
    /// `tile/entries/<N>[.p/<W>]` (each record's leaf data) and the records
    /// beside them, `records/<N>[.p/<W>]`: static files any web server or
    /// object store can serve (TRUST-8). Read back with `verify --tiles`.
    #[arg(long)]
    pub tiles: bool,
    /// With --tiles: sign a checkpoint of every record with this key and
    /// append it first (as `checkpoint sign`); without it the tiles cover
    /// the latest signed checkpoint, and a ledger without one is refused.
    #[arg(long, value_name = "FILE", requires = "tiles")]
    pub key: Option<PathBuf>,
    /// With --tiles: print one JSON document on stdout.
    #[arg(long, requires = "tiles")]
    pub json: bool,
}

/// One file of a bundle: its path relative to the bundle and its bytes.
struct BundleFile {
    path: String,
    bytes: Vec<u8>,
}

/// A secret-scan finding: file, line (1-based), shape. Never the value.
#[derive(Debug, Clone, serde::Serialize)]
struct Finding {
    file: String,
    line: usize,
    shape: String,
}

fn scan_bytes(path: &str, bytes: &[u8]) -> (usize, Vec<Finding>) {
    // Invalid UTF-8 is scanned lossily: a credential shape is ASCII.
    let text = String::from_utf8_lossy(bytes);
    let mut lines = 0;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        lines += 1;
        if let Some(f) = crate::schema::secrets::scan(line) {
            out.push(Finding {
                file: path.to_string(),
                line: i + 1,
                shape: f.shape.to_string(),
            });
        }
    }
    (lines, out)
}

/// Scans every line of every file for credential shapes: the scan result
/// (JSON) when clean, else a FREEZE-2 refusal naming file, line and shape
/// (never the value).
fn secret_scan(files: &[BundleFile]) -> anyhow::Result<serde_json::Value> {
    let mut scanned = Vec::new();
    let mut findings = Vec::new();
    for f in files {
        let (lines, found) = scan_bytes(&f.path, &f.bytes);
        scanned.push(json!({ "path": f.path, "lines": lines, "findings": found.len() }));
        findings.extend(found);
    }
    let named: Vec<String> = findings
        .iter()
        .map(|f| format!("{} line {} ({})", f.file, f.line, f.shape))
        .collect();
    crate::method::freeze::secrets::bundle_clean(&named)?;
    Ok(json!({
        "scanner": "benchledger secrets::scan (credential shapes; values are never echoed)",
        "result": "clean",
        "findings": [],
        "files": scanned,
        "note": "this file and the checksum files were scanned before being written",
    }))
}

fn check_target(dir: &Path) -> anyhow::Result<()> {
    if let Ok(mut it) = std::fs::read_dir(dir) {
        if it.next().is_some() {
            return Err(BadUsage(format!(
                "{} exists and is not empty: the bundle goes into a new or empty directory",
                dir.display()
            ))
            .into());
        }
    } else if dir.exists() {
        return Err(BadUsage(format!("{} is not a directory", dir.display())).into());
    }
    Ok(())
}

/// Writes `files` into a staging directory beside `dir` and renames it into
/// place, so a refused or failed bundle leaves nothing behind.
fn write_bundle(dir: &Path, files: &[BundleFile]) -> anyhow::Result<()> {
    crate::log::staging::remove_stale(dir, BUNDLE_STAGING_TAG);
    let staging = crate::log::staging::temp_beside(dir, BUNDLE_STAGING_TAG)?;
    let result = (|| -> anyhow::Result<()> {
        for f in files {
            let p = staging.join(&f.path);
            if let Some(d) = p.parent() {
                std::fs::create_dir_all(d).with_context(|| format!("create {}", d.display()))?;
            }
            std::fs::write(&p, &f.bytes).with_context(|| format!("write {}", p.display()))?;
        }
        if dir.exists() {
            std::fs::remove_dir(dir).with_context(|| format!("replace empty {}", dir.display()))?;
        }
        std::fs::rename(&staging, dir).with_context(|| format!("rename to {}", dir.display()))?;
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    result
}

fn safe_name(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn jsonl<T: serde::Serialize>(rows: &[T]) -> anyhow::Result<Vec<u8>> {
    let mut out = Vec::new();
    for r in rows {
        serde_json::to_writer(&mut out, r)?;
        out.push(b'\n');
    }
    Ok(out)
}

/// `export --redacted -o DIR`: the publication bundle. The redacted manifest
/// of every lineage, the ledger export (JSONL, re-importable), the report
/// files of every lineage, the request and case tables (CSV and JSON
/// Lines), a secret-scan result over every file, and a checksum manifest
/// (SHA-256 and BLAKE3 of every file). Refused (exit 3, FREEZE-2) and
/// nothing written when the scan finds a credential shape.
pub fn run_export_redacted(cli: &Cli, dir: &Path, wait: Duration) -> anyhow::Result<ExitCode> {
    check_target(dir)?;
    let (ledger, state, head) = verified_state(cli, wait)?;
    let mut files: Vec<BundleFile> = Vec::new();
    let mut export = Vec::new();
    let exported = crate::log::export::export_jsonl_trailed(&ledger, &mut export)?;
    if exported.seq != head.head_seq {
        return Err(Error::input("the ledger head moved during the export").into());
    }
    files.push(BundleFile {
        path: "ledger.jsonl".into(),
        bytes: export,
    });
    let signed = signed_head(&ledger, &state)?;
    files.extend(transparency_files(signed.as_ref()));
    for l in state.lineages.values() {
        let name = safe_name(&l.frozen.lineage);
        let mut m = serde_json::to_vec_pretty(&l.frozen.manifest.redacted_json())?;
        m.push(b'\n');
        files.push(BundleFile {
            path: format!("manifests/{name}.redacted.json"),
            bytes: m,
        });
        let r = report_with_transparency(&state, &l.frozen.lineage, head.clone(), signed.as_ref())?;
        for (f, bytes) in report_files(&r)? {
            files.push(BundleFile {
                path: format!("reports/{name}/{f}"),
                bytes,
            });
        }
    }
    let (requests, cases) = report::tables(&state);
    files.push(BundleFile {
        path: "tables/requests.csv".into(),
        bytes: report::to_csv(&requests).into_bytes(),
    });
    files.push(BundleFile {
        path: "tables/requests.jsonl".into(),
        bytes: jsonl(&requests)?,
    });
    files.push(BundleFile {
        path: "tables/cases.csv".into(),
        bytes: report::to_csv(&cases).into_bytes(),
    });
    files.push(BundleFile {
        path: "tables/cases.jsonl".into(),
        bytes: jsonl(&cases)?,
    });

    // The secret scan over every file (FREEZE-2).
    let mut scan = serde_json::to_vec_pretty(&secret_scan(&files)?)?;
    scan.push(b'\n');
    files.push(BundleFile {
        path: "secret-scan.json".into(),
        bytes: scan,
    });

    let meta = checksum_files(&files, &head)?;
    // The scan result and the checksum files are scanned too, before any
    // byte is written.
    secret_scan(&meta)?;
    secret_scan(files.last().map(std::slice::from_ref).unwrap_or_default())?;
    files.extend(meta);
    write_bundle(dir, &files)?;
    for f in &files {
        outln!("{}", dir.join(&f.path).display())?;
    }
    eprintln!(
        "wrote {} files into {} (ledger head seq {}); the secret scan is clean",
        files.len(),
        dir.display(),
        head.head_seq
    );
    Ok(ExitCode::SUCCESS)
}

/// The checksum manifest over every file of the bundle: `checksums.json`
/// (size, SHA-256 and BLAKE3 of each, and the ledger head), `SHA256SUMS` and
/// `B3SUMS` (for `sha256sum -c` and `b3sum -c`).
fn checksum_files(
    files: &[BundleFile],
    head: &crate::report::LedgerHead,
) -> anyhow::Result<Vec<BundleFile>> {
    let mut entries = Vec::new();
    let (mut sha_sums, mut b3_sums) = (String::new(), String::new());
    for f in files {
        let sha = hex::encode(sha2::Sha256::digest(&f.bytes));
        let b3 = hex::encode(blake3::hash(&f.bytes).as_bytes());
        sha_sums.push_str(&format!("{sha}  {}\n", f.path));
        b3_sums.push_str(&format!("{b3}  {}\n", f.path));
        entries
            .push(json!({ "path": f.path, "bytes": f.bytes.len(), "sha256": sha, "blake3": b3 }));
    }
    let mut manifest = serde_json::to_vec_pretty(&json!({
        "ledger": { "head_seq": head.head_seq, "head_hash": head.head_hash },
        "files": entries,
    }))?;
    manifest.push(b'\n');
    let meta = [
        ("checksums.json", manifest),
        ("SHA256SUMS", sha_sums.into_bytes()),
        ("B3SUMS", b3_sums.into_bytes()),
    ];
    Ok(meta
        .into_iter()
        .map(|(path, bytes)| BundleFile {
            path: path.into(),
            bytes,
        })
        .collect())
}

/// TRUST-4: the latest signed checkpoint the log records
/// (`trust::signed_head`) as `transparency/checkpoint.note`, and an
/// inclusion proof in it of each group seal it covers,
/// `transparency/seals/<seq>.inclusion.json` (SPEC 11.6); nothing for a
/// ledger without a signed checkpoint.
fn transparency_files(signed: Option<&SignedHead>) -> Vec<BundleFile> {
    let Some(signed) = signed else {
        return Vec::new();
    };
    let mut files = vec![BundleFile {
        path: "transparency/checkpoint.note".into(),
        bytes: signed.note.clone().into_bytes(),
    }];
    files.extend(signed.seals.iter().map(|proof| BundleFile {
        path: format!("transparency/seals/{}.inclusion.json", proof.leaf_index()),
        bytes: proof.to_json().into_bytes(),
    }));
    files
}

/// `export --parquet`'s help, as this build has it.
#[cfg(feature = "parquet")]
const PARQUET_HELP: &str = "The request, case and group tables as a Parquet dataset partitioned by lineage (DIR/<table>/lineage_key=lineage-<label>/part-<head>.parquet; the lineage is also a string column of every file), in a new or empty directory (-o DIR)";
#[cfg(not(feature = "parquet"))]
const PARQUET_HELP: &str = "Not in this build (cargo feature `parquet` missing: exits 4; see --version): the request, case and group tables as a Parquet dataset partitioned by lineage";

/// `export --parquet -o DIR [--append]`: the request, case and group tables
/// as a Parquet dataset partitioned by lineage (`crate::cli::parquet`).
/// Needs the `parquet` cargo feature (on by default; the fast
/// `--no-default-features` build leaves it out).
pub fn run_export_parquet(
    cli: &Cli,
    dir: &Path,
    append: bool,
    wait: Duration,
) -> anyhow::Result<ExitCode> {
    #[cfg(feature = "parquet")]
    {
        if !append {
            check_target(dir)?;
        }
        let (_ledger, state, head) = verified_state(cli, wait)?;
        let files = crate::cli::parquet::dataset(&state, &head)?;
        crate::cli::parquet::write_dataset(dir, &files, append)?;
        for file in &files {
            outln!("{}", dir.join(&file.path).display())?;
        }
        eprintln!(
            "wrote {} lineages x {} tables into {} (ledger head seq {})",
            state.lineages.len(),
            crate::cli::parquet::TABLES.len(),
            dir.display(),
            head.head_seq
        );
        Ok(ExitCode::SUCCESS)
    }
    #[cfg(not(feature = "parquet"))]
    {
        let _ = (cli, dir, append, wait);
        // exit 4 as every verb a build lacks (`group open` without aws)
        Err(crate::cli::common::MissingFeature(
            "this build has no Parquet writer (cargo feature `parquet`, on by default and left out by --no-default-features: `cargo build --release --no-default-features --features parquet`); `export --redacted -o DIR` writes the same request and case tables as CSV and JSON Lines".into(),
        )
        .into())
    }
}

/// The tag of an `export -o FILE`'s partial file (`.{FILE}.partial-...`).
const PARTIAL_TAG: &str = "partial";
/// The tag of a bundle's staging directory (`.{DIR}.bundling-...`).
const BUNDLE_STAGING_TAG: &str = "bundling";

/// `export --jsonl -o FILE`: written under a name of its own beside FILE
/// (never another file's), synced and renamed into place; removed when the
/// export fails or is interrupted, and by the next export when a killed one
/// left it.
fn export_to_file(
    ledger: &Ledger,
    path: &Path,
    progress: &Progress,
) -> anyhow::Result<crate::log::chain::Head> {
    crate::log::staging::remove_stale(path, PARTIAL_TAG);
    let tmp = crate::log::staging::temp_beside(path, PARTIAL_TAG)?;
    let interrupt = crate::cli::interrupt::Interrupt::install();
    let result = (|| -> anyhow::Result<crate::log::chain::Head> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .with_context(|| format!("write {} (through {})", path.display(), tmp.display()))?;
        let file = crate::cli::interrupt::Interruptible::new(file, &interrupt);
        let mut w = LineCountingWriter::new(BufWriter::new(file), progress);
        let head = crate::log::export::export_jsonl_trailed(ledger, &mut w)?;
        w.into_inner()
            .into_inner()
            .map_err(|e| e.into_error())
            .and_then(|f| f.into_inner().sync_all())
            .with_context(|| format!("write {}", tmp.display()))?;
        std::fs::rename(&tmp, path).with_context(|| format!("rename to {}", path.display()))?;
        Ok(head)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// `export`: the canonical JSONL, or the publication bundles.
pub(crate) fn run_export(cli: &Cli, a: &ExportArgs, wait: Duration) -> anyhow::Result<ExitCode> {
    let dir = &cli.ledger;
    if !a.jsonl {
        let Some(d) = &a.out else {
            let form = [(a.redacted, "--redacted"), (a.parquet, "--parquet")]
                .into_iter()
                .find_map(|(on, name)| on.then_some(name))
                .unwrap_or("--tiles");
            return Err(BadUsage(format!(
                "export {form} writes a directory: name it with -o DIR (--out DIR)"
            ))
            .into());
        };
        if a.redacted {
            return run_export_redacted(cli, d, wait);
        }
        if a.parquet {
            return run_export_parquet(cli, d, a.append, wait);
        }
        return crate::cli::tiles::run_export_tiles(cli, d, a.key.as_deref(), a.json, wait);
    }
    let ledger = crate::cli::common::open_reading(dir, wait)?;
    // the records and the trailer
    let progress = Progress::records("export", ledger.head()?.seq + 2);
    let head = match &a.out {
        Some(path) => export_to_file(&ledger, path, &progress)?,
        None => {
            let mut w = LineCountingWriter::new(BufWriter::new(crate::cli::out::Out), &progress);
            crate::log::export::export_jsonl_trailed(&ledger, &mut w)?
        }
    };
    progress.finish();
    tracing::info!(
        "exported records 0..={} (head {})",
        head.seq,
        hex::encode(head.hash)
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, text: &str) -> BundleFile {
        BundleFile {
            path: path.into(),
            bytes: text.as_bytes().to_vec(),
        }
    }

    /// A bundle file holding a credential shape is refused, naming file,
    /// line and shape and never the value (FREEZE-2).
    #[test]
    fn the_bundle_scan_refuses_a_credential_shape() {
        // rule FREEZE-2
        let key = format!("{}{}", "AKIA", "Q3EGRXK2VBN7TW5Z");
        let files = [
            file("ledger.jsonl", "{\"seq\":0}\n"),
            file("reports/x/report.md", &format!("# r\nkey {key} here\n")),
        ];
        let e = secret_scan(&files).unwrap_err();
        let msg = e.to_string();
        assert!(
            matches!(
                e.downcast_ref::<Error>(),
                Some(e) if e.is_refused() && e.to_string().contains("FREEZE-2")
            ),
            "{msg}"
        );
        assert!(
            msg.contains("reports/x/report.md line 2 (aws_access_key_id)"),
            "{msg}"
        );
        assert!(!msg.contains(&key), "the value is never echoed");
        let clean = secret_scan(&files[..1]).unwrap();
        assert_eq!(clean["result"], "clean");
        assert_eq!(clean["files"][0]["lines"], 1);
    }

    #[test]
    fn a_refused_bundle_leaves_no_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("b");
        write_bundle(&dir, &[file("a/b.txt", "x")]).unwrap();
        assert_eq!(std::fs::read_to_string(dir.join("a/b.txt")).unwrap(), "x");
        assert!(check_target(&dir).is_err(), "a non-empty target is refused");
        let entries: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
        assert_eq!(entries.len(), 1, "no staging directory left behind");
    }
}
