//! `export --jsonl | --redacted DIR | --parquet DIR`: the canonical export
//! and the publication bundle.

use crate::cli::out::outln;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde_json::json;

use crate::cli::common::*;
use crate::cli::report::{report_files, verified_state};
use crate::cli::Cli;
use crate::error::Error;
use crate::log::ledger::Ledger;
use crate::report;
use crate::schema::events::Event;
use crate::schema::rule::Rule;
use anyhow::Context;
use sha2::Digest;
use std::io::BufWriter;

/// Arguments of `export`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("format").required(true).args(["jsonl", "redacted", "parquet"])))]
pub struct ExportArgs {
    /// Export as JSON lines.
    #[arg(long)]
    pub jsonl: bool,
    /// Write to this file instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE", requires = "jsonl")]
    pub out: Option<PathBuf>,
    /// The publication bundle into a new directory: redacted manifests, the
    /// ledger export, the reports, request/case tables, a secret scan of
    /// every file and SHA-256 + BLAKE3 checksums (refused, exit 3, when the
    /// scan finds a credential shape).
    #[arg(long, value_name = "DIR")]
    pub redacted: Option<PathBuf>,
    /// Request-level and case-level tables as Parquet into a new directory
    /// (needs the `parquet` cargo feature).
    #[arg(long, value_name = "DIR")]
    pub parquet: Option<PathBuf>,
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
    if !findings.is_empty() {
        let named: Vec<String> = findings
            .iter()
            .map(|f| format!("{} line {} ({})", f.file, f.line, f.shape))
            .collect();
        return Err(Error::Refused {
            rule: Rule::Freeze2,
            message: format!(
                "the secret scan found credential shapes in the bundle, nothing was written: {}",
                crate::method::verdict::name_some(&named)
            ),
        }
        .into());
    }
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
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| "bundle".into());
    let staging = parent.join(format!(".{name}.partial-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
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

/// `export --redacted DIR`: the publication bundle. The redacted manifest
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
    let exported = crate::log::export::export_jsonl(&ledger, &mut export)?;
    if exported.seq != head.head_seq {
        return Err(Error::input("the ledger head moved during the export").into());
    }
    files.push(BundleFile {
        path: "ledger.jsonl".into(),
        bytes: export,
    });
    files.extend(transparency_files(&ledger, &files[0].bytes)?);
    for l in state.lineages.values() {
        let name = safe_name(&l.frozen.lineage);
        let mut m = serde_json::to_vec_pretty(&l.frozen.manifest.redacted_json())?;
        m.push(b'\n');
        files.push(BundleFile {
            path: format!("manifests/{name}.redacted.json"),
            bytes: m,
        });
        let r = report::build(&state, Some(&l.frozen.lineage), head.clone())?;
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

    // The checksum manifest over every file.
    let mut entries = Vec::new();
    let (mut sha_sums, mut b3_sums) = (String::new(), String::new());
    for f in &files {
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
    let meta: Vec<BundleFile> = meta
        .into_iter()
        .map(|(path, bytes)| BundleFile {
            path: path.into(),
            bytes,
        })
        .collect();
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

/// TRUST-4: the latest signed checkpoint the log records (every checkpoint
/// record re-derived from the records before it) as
/// `transparency/checkpoint.note`, and an inclusion proof in it of each
/// group seal it covers, `transparency/seals/<seq>.inclusion.json`
/// (SPEC 11.6); nothing for a ledger without a signed checkpoint.
fn transparency_files(ledger: &Ledger, export: &[u8]) -> anyhow::Result<Vec<BundleFile>> {
    let derived = crate::log::tree::derive(ledger)?;
    let made = seal_proofs(&derived, export);
    derived.discard();
    made
}

fn seal_proofs(
    derived: &crate::log::tree::Derived,
    export: &[u8],
) -> anyhow::Result<Vec<BundleFile>> {
    use crate::log::tlog::{prove_inclusion, InclusionProof};
    if let Some(p) = derived.problems.first() {
        return Err(Error::Damage(format!(
            "checkpoint record at seq {}: {}; run verify",
            p.seq, p.detail
        ))
        .into());
    }
    let Some((note, size)) = derived
        .checkpoints
        .iter()
        .rev()
        .find_map(|c| Some((c.record.note.clone()?, c.record.tree_size)))
    else {
        return Ok(Vec::new());
    };
    let mut files = vec![BundleFile {
        path: "transparency/checkpoint.note".into(),
        bytes: note.clone().into_bytes(),
    }];
    for line in String::from_utf8_lossy(export).lines() {
        let v: serde_json::Value = serde_json::from_str(line)?;
        let (Some(seq), Some(record), Some(link)) = (
            v["seq"].as_u64(),
            v["record_hex"].as_str().and_then(|h| hex::decode(h).ok()),
            v["hash"]
                .as_str()
                .and_then(|h| hex::decode(h).ok())
                .and_then(|b| <[u8; 32]>::try_from(b).ok()),
        ) else {
            return Err(Error::input("an export line lacks its seq, record or hash").into());
        };
        let decoded = crate::log::record::Record::decode(&record)
            .map_err(|e| Error::input(format!("export seq {seq}: {e}")))?;
        if seq >= size || !matches!(decoded.event, Event::GroupSealed(_)) {
            continue;
        }
        let hashes =
            prove_inclusion(&derived.nodes, seq, size).map_err(|e| Error::input(e.to_string()))?;
        let proof = InclusionProof::new(&note, seq, link, hashes)
            .map_err(|e| Error::input(e.to_string()))?;
        files.push(BundleFile {
            path: format!("transparency/seals/{seq}.inclusion.json"),
            bytes: proof.to_json().into_bytes(),
        });
    }
    Ok(files)
}

/// `export --parquet DIR`: the request-level and case-level tables as
/// Parquet files (`requests.parquet`, `cases.parquet`). Needs the `parquet`
/// cargo feature (off by default).
pub fn run_export_parquet(cli: &Cli, dir: &Path, wait: Duration) -> anyhow::Result<ExitCode> {
    #[cfg(feature = "parquet")]
    {
        check_target(dir)?;
        let (_ledger, state, _head) = verified_state(cli, wait)?;
        let (requests, cases) = report::tables(&state);
        let files = vec![
            BundleFile {
                path: "requests.parquet".into(),
                bytes: parquet_out::requests(&requests)?,
            },
            BundleFile {
                path: "cases.parquet".into(),
                bytes: parquet_out::cases(&cases)?,
            },
        ];
        write_bundle(dir, &files)?;
        for f in &files {
            outln!("{}", dir.join(&f.path).display())?;
        }
        Ok(ExitCode::SUCCESS)
    }
    #[cfg(not(feature = "parquet"))]
    {
        let _ = (cli, dir, wait);
        Err(BadUsage(
            "this build has no Parquet writer (cargo feature `parquet`, off by default: `cargo build --release --no-default-features --features parquet`); `export --redacted DIR` writes the same request and case tables as CSV and JSON Lines".into(),
        )
        .into())
    }
}

#[cfg(feature = "parquet")]
mod parquet_out {
    //! The two tables as Parquet through the `parquet` crate's low-level
    //! column writers (no Arrow): strings are UTF-8 byte arrays, counts
    //! INT64, optional columns have definition levels.

    use std::sync::Arc;

    use parquet::data_type::{BoolType, ByteArray, ByteArrayType, Int32Type, Int64Type};
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::parser::parse_message_type;

    use crate::report::{CaseRow, RequestRow};

    /// One column's values: (definition levels, present values).
    enum Col {
        Str(Vec<i16>, Vec<ByteArray>),
        I64(Vec<i16>, Vec<i64>),
        I32(Vec<i16>, Vec<i32>),
        Bool(Vec<i16>, Vec<bool>),
    }

    fn strs<'a>(it: impl Iterator<Item = Option<&'a str>>) -> Col {
        let (mut d, mut v) = (Vec::new(), Vec::new());
        for x in it {
            match x {
                Some(s) => {
                    d.push(1);
                    v.push(ByteArray::from(s));
                }
                None => d.push(0),
            }
        }
        Col::Str(d, v)
    }

    fn i64s(it: impl Iterator<Item = Option<u64>>) -> Col {
        let (mut d, mut v) = (Vec::new(), Vec::new());
        for x in it {
            match x {
                Some(n) => {
                    d.push(1);
                    v.push(i64::try_from(n).unwrap_or(i64::MAX));
                }
                None => d.push(0),
            }
        }
        Col::I64(d, v)
    }

    fn write(schema: &str, cols: Vec<Col>) -> anyhow::Result<Vec<u8>> {
        let schema = Arc::new(parse_message_type(schema)?);
        let props = Arc::new(WriterProperties::builder().build());
        let mut out = Vec::new();
        {
            let mut w = SerializedFileWriter::new(&mut out, schema, props)?;
            let mut rg = w.next_row_group()?;
            for col in cols {
                let mut cw = rg
                    .next_column()?
                    .ok_or_else(|| anyhow::anyhow!("schema has fewer columns"))?;
                match col {
                    Col::Str(d, v) => {
                        cw.typed::<ByteArrayType>()
                            .write_batch(&v, Some(&d), None)?;
                    }
                    Col::I64(d, v) => {
                        cw.typed::<Int64Type>().write_batch(&v, Some(&d), None)?;
                    }
                    Col::I32(d, v) => {
                        cw.typed::<Int32Type>().write_batch(&v, Some(&d), None)?;
                    }
                    Col::Bool(d, v) => {
                        cw.typed::<BoolType>().write_batch(&v, Some(&d), None)?;
                    }
                }
                cw.close()?;
            }
            rg.close()?;
            w.close()?;
        }
        Ok(out)
    }

    /// The request table.
    pub fn requests(rows: &[RequestRow]) -> anyhow::Result<Vec<u8>> {
        let s = |f: fn(&RequestRow) -> Option<&str>| strs(rows.iter().map(f));
        let n = |f: fn(&RequestRow) -> Option<u64>| i64s(rows.iter().map(f));
        write(
            "message request {
                optional binary lineage (UTF8); optional binary group (UTF8); optional binary group_status (UTF8);
                optional binary request_id (UTF8); optional binary tier (UTF8); optional binary provider (UTF8);
                optional binary model (UTF8); optional binary reason (UTF8); optional binary category (UTF8);
                optional binary selected_tier (UTF8);
                optional int64 uncached_input_tokens; optional int64 cache_read_tokens; optional int64 cache_write_tokens;
                optional int64 output_tokens; optional int64 reasoning_tokens;
                optional binary settlement_state (UTF8); optional binary series (UTF8);
                optional int64 charge_micro_usd; optional int64 recomputed_micro_usd; optional int32 http_status;
            }",
            vec![
                s(|r| Some(&r.lineage)),
                s(|r| Some(&r.group)),
                s(|r| Some(&r.group_status)),
                s(|r| Some(&r.request_id)),
                s(|r| Some(&r.tier)),
                s(|r| r.provider.as_deref()),
                s(|r| r.model.as_deref()),
                s(|r| r.reason.as_deref()),
                s(|r| Some(r.category.as_str())),
                s(|r| r.selected_tier.as_deref()),
                n(|r| r.uncached_input_tokens),
                n(|r| r.cache_read_tokens),
                n(|r| r.cache_write_tokens),
                n(|r| r.output_tokens),
                n(|r| r.reasoning_tokens),
                s(|r| Some(&r.settlement_state)),
                s(|r| Some(&r.series)),
                n(|r| r.charge_micro_usd),
                n(|r| r.recomputed_micro_usd),
                {
                    let d = rows.iter().map(|r| i16::from(r.http_status.is_some())).collect();
                    let v = rows.iter().filter_map(|r| r.http_status.map(i32::from)).collect();
                    Col::I32(d, v)
                },
            ],
        )
    }

    /// The case table.
    pub fn cases(rows: &[CaseRow]) -> anyhow::Result<Vec<u8>> {
        let s = |f: fn(&CaseRow) -> Option<&str>| strs(rows.iter().map(f));
        let b =
            |f: fn(&CaseRow) -> bool| Col::Bool(vec![1; rows.len()], rows.iter().map(f).collect());
        write(
            "message case {
                optional binary lineage (UTF8); optional binary group (UTF8); optional binary group_status (UTF8);
                optional binary task (UTF8); optional binary trial (UTF8); optional int32 replacement;
                optional binary status (UTF8); optional binary reward (UTF8); optional boolean passed;
                optional boolean skipped; optional int64 started_seq;
            }",
            vec![
                s(|r| Some(&r.lineage)),
                s(|r| Some(&r.group)),
                s(|r| Some(&r.group_status)),
                s(|r| Some(&r.task)),
                s(|r| Some(&r.trial)),
                Col::I32(vec![1; rows.len()], rows.iter().map(|r| i32::from(r.replacement)).collect()),
                s(|r| Some(&r.status)),
                s(|r| r.reward.as_deref()),
                b(|r| r.passed),
                b(|r| r.skipped),
                i64s(rows.iter().map(|r| r.started_seq)),
            ],
        )
    }

    #[cfg(test)]
    mod tests {
        use parquet::file::reader::{FileReader, SerializedFileReader};
        use parquet::record::RowAccessor;

        /// The written files read back with the parquet crate's own reader:
        /// one row per request and per case, values as in the tables.
        #[test]
        fn the_tables_read_back() {
            let text = std::fs::read_to_string(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/replay-tests/scenarios/short13-accepted.toml"
            ))
            .unwrap();
            let spec: crate::testkit::scenario::Scenario = toml::from_str(&text).unwrap();
            let state = crate::testkit::scenario::run(&spec).unwrap().0.state;
            let (requests, cases) = crate::report::tables(&state);
            let tmp = tempfile::tempdir().unwrap();
            for (name, bytes, n) in [
                (
                    "r.parquet",
                    super::requests(&requests).unwrap(),
                    requests.len(),
                ),
                ("c.parquet", super::cases(&cases).unwrap(), cases.len()),
            ] {
                let p = tmp.path().join(name);
                std::fs::write(&p, bytes).unwrap();
                let r = SerializedFileReader::new(std::fs::File::open(&p).unwrap()).unwrap();
                assert_eq!(
                    r.metadata().file_metadata().num_rows() as usize,
                    n,
                    "{name}"
                );
                let rows: Vec<_> = r.get_row_iter(None).unwrap().map(|x| x.unwrap()).collect();
                assert_eq!(rows.len(), n);
                if name == "r.parquet" {
                    let first = &rows[0];
                    assert_eq!(first.get_string(3).unwrap(), &requests[0].request_id);
                    assert_eq!(
                        first.get_long(10).unwrap(),
                        requests[0].uncached_input_tokens.unwrap() as i64
                    );
                    assert_eq!(
                        first.get_long(17).unwrap(),
                        requests[0].charge_micro_usd.unwrap() as i64
                    );
                    assert_eq!(first.get_int(19).unwrap(), 200);
                } else {
                    assert_eq!(rows[0].get_string(3).unwrap(), &cases[0].task);
                    assert_eq!(rows[0].get_bool(8).unwrap(), cases[0].passed);
                }
            }
        }
    }
}

/// `export`: the canonical JSONL, or the publication bundles.
pub(crate) fn run_export(cli: &Cli, a: &ExportArgs, wait: Duration) -> anyhow::Result<ExitCode> {
    let dir = &cli.ledger;
    if let Some(d) = &a.redacted {
        return run_export_redacted(&cli, d, wait);
    }
    if let Some(d) = &a.parquet {
        return run_export_parquet(&cli, d, wait);
    }
    let ledger = Ledger::open(dir, wait)?;
    let head = match &a.out {
        Some(path) => {
            let tmp = path.with_extension("partial");
            let file =
                std::fs::File::create(&tmp).with_context(|| format!("create {}", tmp.display()))?;
            let mut w = BufWriter::new(file);
            let head = crate::log::export::export_jsonl(&ledger, &mut w)?;
            w.into_inner()
                .map_err(|e| e.into_error())
                .and_then(|f| f.sync_all())
                .with_context(|| format!("write {}", tmp.display()))?;
            std::fs::rename(&tmp, path).with_context(|| format!("rename to {}", path.display()))?;
            head
        }
        None => {
            crate::log::export::export_jsonl(&ledger, &mut BufWriter::new(crate::cli::out::Out))?
        }
    };
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
                Some(Error::Refused {
                    rule: crate::schema::rule::Rule::Freeze2,
                    ..
                })
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
