//! Power-loss test: records every file operation of a CLI workload below
//! the process (an LD_PRELOAD layer, `tools/powerloss/shim.c`), then
//! rebuilds the ledger directory a power loss would leave at every sync
//! point of the trace, under several models of what the disk kept, and
//! checks the ledger there: it verifies, and it holds every acknowledged
//! append (in the spirit of CrashMonkey and ALICE; this machine's kernel has
//! no device-mapper, so dm-log-writes and dm-flakey are not available).
//!
//!     cargo build --no-default-features [--release]
//!     cargo run --no-default-features --example powerloss -- [--ops 60] [--seed S]
//!         [--subsets 2] [--big] [--bin PATH] [--keep DIR]
//!
//! The workload (each command a `benchledger` process under the shim):
//! `init`, `manifest freeze`, `group open canary-1` (the ingests bind only
//! to an opened group, GATE-4), then `--ops` commands drawn at random: notes
//! of 10..=6,000 bytes (so the open tail seals into segments every few
//! notes), notes with an idempotency key (some repeating an earlier key),
//! and `ingest usage|traces r1 FILE` of 1..=64 fixture rows; with `--big`
//! also one ingest of more than 4 MiB (the marker path). A command's JSON on
//! stdout, written after its append is durable, is its acknowledgement, and
//! the shim records it in the trace in order with the file operations.
//!
//! Crash points: after every `fsync`, `fdatasync`, `sync_file_range`,
//! rename and acknowledgement in the trace, and at its end. Models of what
//! survives a crash at a point:
//!
//! - `synced`: only what was made durable: a file's writes and truncations
//!   before its last `fsync`/`fdatasync` (`sync_file_range` flushes no
//!   device cache and no metadata, so it counts for nothing); directory
//!   entries (creations, renames, removals) up to the last sync of
//!   anything, in order (ext4's ordered journal commits every earlier
//!   metadata change at any fsync);
//! - `strict`: the same data, but a directory entry only once that
//!   directory itself was fsynced after it (POSIX's letter);
//! - `cache`: everything written (a process crash: the page cache
//!   survives);
//! - `subset-N`: `synced` plus a random half of the 4 KiB blocks written
//!   after each file's last sync, in order (reordered and torn writes).
//!
//! At every point and model the image must open and `verify` (exit 0), its
//! export must be a prefix of the final ledger's export (no record that was
//! never written, none changed), and it must hold every record acknowledged
//! before the point. Before `init` was acknowledged nothing is promised.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/replay-tests/fixtures/bitrouter"
);
const MANIFEST: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/ledger-schema/examples/manifest.toml"
);
const PRIVATE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/ledger-schema/examples/manifest.private.toml"
);
const SHIM: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tools/powerloss/shim.c");

const K_WRITE: u32 = 1;
const K_TRUNC: u32 = 2;
const K_SYNC: u32 = 3;
const K_SYNC_DIR: u32 = 4;
const K_SFR: u32 = 5;
const K_CREATE: u32 = 6;
const K_RENAME: u32 = 7;
const K_UNLINK: u32 = 8;
const K_MKDIR: u32 = 9;
const K_STDOUT: u32 = 10;
const K_RMDIR: u32 = 11;

/// The crate's one seeded generator.
type Rng = benchledger::rng::SplitMix64;

/// One traced operation.
#[derive(Debug, Clone)]
struct Op {
    kind: u32,
    offset: u64,
    path: String,
    path2: String,
    data: Vec<u8>,
}

fn parse_trace(bytes: &[u8]) -> Result<Vec<Op>, String> {
    let mut ops = Vec::new();
    let mut at = 0usize;
    let u32_at = |b: &[u8], i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4"));
    let u64_at = |b: &[u8], i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8"));
    while at < bytes.len() {
        if at + 32 > bytes.len() {
            return Err(format!("trace ends inside a header at byte {at}"));
        }
        let kind = u32_at(bytes, at);
        let offset = u64_at(bytes, at + 8);
        let len = u64_at(bytes, at + 16) as usize;
        let pl = u32_at(bytes, at + 24) as usize;
        let p2 = u32_at(bytes, at + 28) as usize;
        let end = at + 32 + pl + p2 + len;
        if end > bytes.len() {
            return Err(format!("trace ends inside a record at byte {at}"));
        }
        let s = |a: usize, b: usize| String::from_utf8_lossy(&bytes[a..b]).into_owned();
        ops.push(Op {
            kind,
            offset,
            path: s(at + 32, at + 32 + pl),
            path2: s(at + 32 + pl, at + 32 + pl + p2),
            data: bytes[at + 32 + pl + p2..end].to_vec(),
        });
        at = end;
    }
    Ok(ops)
}

// ---------------------------------------------------------------------------
// Images

#[derive(Clone, Copy, PartialEq, Debug)]
enum Model {
    Synced,
    Strict,
    Cache,
    Subset(u64),
}

impl Model {
    fn name(&self) -> String {
        match self {
            Model::Synced => "synced".into(),
            Model::Strict => "strict".into(),
            Model::Cache => "cache".into(),
            Model::Subset(n) => format!("subset-{n}"),
        }
    }
}

/// A file or directory of the model file system.
#[derive(Default, Clone)]
struct Obj {
    dir: bool,
    /// (op index, write or truncate) in trace order.
    data: Vec<usize>,
    /// Op indexes of syncs of this object.
    syncs: Vec<usize>,
}

/// The trace replayed once: objects, and the namespace operations with the
/// object each binds.
struct Replayed {
    objs: Vec<Obj>,
    /// (op index, kind, path, path2, object created or renamed)
    names: Vec<(usize, u32, String, String, usize)>,
}

fn parent(p: &str) -> String {
    Path::new(p)
        .parent()
        .map(|p| p.display().to_string())
        .unwrap_or_default()
}

fn replay_names(ops: &[Op], root: &str) -> Result<Replayed, String> {
    let mut objs: Vec<Obj> = vec![Obj {
        dir: true,
        ..Obj::default()
    }];
    let mut live: HashMap<String, usize> = HashMap::new();
    live.insert(root.to_string(), 0);
    let mut names = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        match op.kind {
            K_CREATE | K_MKDIR => {
                if op.path == root {
                    continue;
                }
                objs.push(Obj {
                    dir: op.kind == K_MKDIR,
                    ..Obj::default()
                });
                let id = objs.len() - 1;
                live.insert(op.path.clone(), id);
                names.push((i, op.kind, op.path.clone(), String::new(), id));
            }
            K_RENAME => {
                let id = *live
                    .get(&op.path)
                    .ok_or_else(|| format!("op {i}: rename of unknown {}", op.path))?;
                rename_tree(&mut live, &op.path, &op.path2);
                names.push((i, op.kind, op.path.clone(), op.path2.clone(), id));
            }
            K_UNLINK | K_RMDIR => {
                live.remove(&op.path);
                names.push((i, op.kind, op.path.clone(), String::new(), 0));
            }
            K_WRITE | K_TRUNC | K_SYNC | K_SYNC_DIR | K_SFR => {
                let Some(&id) = live.get(&op.path) else {
                    return Err(format!("op {i}: {} on unknown {}", op.kind, op.path));
                };
                match op.kind {
                    K_WRITE | K_TRUNC => objs[id].data.push(i),
                    K_SYNC | K_SYNC_DIR => objs[id].syncs.push(i),
                    _ => {}
                }
            }
            _ => {}
        }
    }
    Ok(Replayed { objs, names })
}

/// Moves `from` and everything under it to `to` (a rename of a file or of
/// a directory with its entries), replacing what `to` held.
fn rename_tree<M>(map: &mut M, from: &str, to: &str)
where
    M: NameMap,
{
    let prefix = format!("{from}/");
    let moved: Vec<(String, usize)> = map
        .entries()
        .into_iter()
        .filter(|(p, _)| p == from || p.starts_with(&prefix))
        .collect();
    let to_prefix = format!("{to}/");
    for (p, _) in map.entries() {
        if p == to || p.starts_with(&to_prefix) {
            map.drop_name(&p);
        }
    }
    for (p, id) in moved {
        map.drop_name(&p);
        map.bind(format!("{to}{}", &p[from.len()..]), id);
    }
}

/// The two name maps the replay keeps (live names while replaying, durable
/// names of an image).
trait NameMap {
    fn entries(&self) -> Vec<(String, usize)>;
    fn drop_name(&mut self, p: &str);
    fn bind(&mut self, p: String, id: usize);
}

impl NameMap for HashMap<String, usize> {
    fn entries(&self) -> Vec<(String, usize)> {
        self.iter().map(|(k, v)| (k.clone(), *v)).collect()
    }
    fn drop_name(&mut self, p: &str) {
        self.remove(p);
    }
    fn bind(&mut self, p: String, id: usize) {
        self.insert(p, id);
    }
}

impl NameMap for BTreeMap<String, usize> {
    fn entries(&self) -> Vec<(String, usize)> {
        self.iter().map(|(k, v)| (k.clone(), *v)).collect()
    }
    fn drop_name(&mut self, p: &str) {
        self.remove(p);
    }
    fn bind(&mut self, p: String, id: usize) {
        self.insert(p, id);
    }
}

/// The directory image at crash point `point` (ops `..point` happened)
/// under `model`: path (relative to the root) -> file bytes, or None for a
/// directory.
fn image(
    ops: &[Op],
    r: &Replayed,
    root: &str,
    point: usize,
    model: Model,
) -> BTreeMap<String, Option<Vec<u8>>> {
    let last_sync_any = ops[..point]
        .iter()
        .rposition(|o| o.kind == K_SYNC || o.kind == K_SYNC_DIR);
    let dir_synced_after = |dir: &str, i: usize| {
        ops[i + 1..point]
            .iter()
            .any(|o| o.kind == K_SYNC_DIR && o.path == dir)
    };
    let name_durable = |i: usize, path: &str, path2: &str| match model {
        Model::Cache => true,
        Model::Synced | Model::Subset(_) => last_sync_any.is_some_and(|s| s > i),
        Model::Strict => {
            dir_synced_after(&parent(path), i)
                && (path2.is_empty() || dir_synced_after(&parent(path2), i))
        }
    };
    let mut ns: BTreeMap<String, usize> = BTreeMap::new();
    ns.insert(root.to_string(), 0);
    for (i, kind, path, path2, id) in &r.names {
        if *i >= point || !name_durable(*i, path, path2) {
            continue;
        }
        match *kind {
            K_CREATE | K_MKDIR => {
                ns.insert(path.clone(), *id);
            }
            K_RENAME => {
                ns.insert(path.clone(), *id);
                rename_tree(&mut ns, path, path2);
            }
            _ => {
                ns.remove(path);
            }
        }
    }
    let mut rng = Rng::new(match model {
        Model::Subset(n) => n.wrapping_mul(1_000_003) ^ point as u64,
        _ => 0,
    });
    let mut out = BTreeMap::new();
    for (path, id) in ns {
        let Some(rel) = path.strip_prefix(root) else {
            continue;
        };
        let rel = rel.trim_start_matches('/').to_string();
        let obj = &r.objs[id];
        if obj.dir {
            out.insert(rel, None);
            continue;
        }
        let synced_upto = obj.syncs.iter().rev().find(|s| **s < point).copied();
        let mut bytes: Vec<u8> = Vec::new();
        for &i in obj.data.iter().filter(|i| **i < point) {
            let durable = synced_upto.is_some_and(|s| i < s);
            match model {
                Model::Cache => apply(&mut bytes, &ops[i], None),
                _ if durable => apply(&mut bytes, &ops[i], None),
                Model::Subset(_) => apply(&mut bytes, &ops[i], Some(&mut rng)),
                _ => {}
            }
        }
        out.insert(rel, Some(bytes));
    }
    out
}

/// Applies a write or truncation; with `rng`, keeps each 4 KiB block of a
/// write (and a truncation) with probability one half.
fn apply(bytes: &mut Vec<u8>, op: &Op, mut rng: Option<&mut Rng>) {
    match op.kind {
        K_TRUNC if rng.as_mut().is_none_or(|r| r.below(2) == 0) => {
            bytes.resize(op.offset as usize, 0);
        }
        K_WRITE => {
            let start = op.offset as usize;
            let end = start + op.data.len();
            let keep = |a: usize, b: usize, bytes: &mut Vec<u8>| {
                if bytes.len() < b {
                    bytes.resize(b, 0);
                }
                bytes[a..b].copy_from_slice(&op.data[a - start..b - start]);
            };
            match rng {
                None => keep(start, end, bytes),
                Some(r) => {
                    let mut a = start;
                    while a < end {
                        let b = ((a / 4096) + 1) * 4096;
                        let b = b.min(end);
                        if r.below(2) == 0 {
                            keep(a, b, bytes);
                        }
                        a = b;
                    }
                }
            }
        }
        _ => {}
    }
}

fn write_image(img: &BTreeMap<String, Option<Vec<u8>>>, dir: &Path) -> Result<(), String> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| e.to_string())?;
    for (rel, content) in img {
        let p = dir.join(rel);
        match content {
            None => std::fs::create_dir_all(&p).map_err(|e| e.to_string())?,
            Some(b) => {
                if let Some(par) = p.parent() {
                    std::fs::create_dir_all(par).map_err(|e| e.to_string())?;
                }
                std::fs::write(&p, b).map_err(|e| e.to_string())?;
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// The workload

struct Workload {
    bin: PathBuf,
    shim: PathBuf,
    ledger: PathBuf,
    trace: PathBuf,
    files: PathBuf,
}

impl Workload {
    fn run(&self, args: &[String]) -> Result<String, String> {
        let out = Command::new(&self.bin)
            .env("LD_PRELOAD", &self.shim)
            .env("PL_ROOT", &self.ledger)
            .env("PL_TRACE", &self.trace)
            // group open: the AWS gates are not what this harness tests
            .env("BENCHLEDGER_AWS_GATES", "recorded")
            .env_remove("RUST_LOG")
            .env_remove("BENCHLEDGER_DIR")
            .arg("--ledger")
            .arg(&self.ledger)
            .args(args)
            .output()
            .map_err(|e| format!("run {}: {e}", self.bin.display()))?;
        if !out.status.success() {
            return Err(format!(
                "{args:?} exited {:?}: {}",
                out.status.code(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn rows(kind: &str) -> Vec<String> {
        std::fs::read_to_string(format!("{FIXTURES}/{kind}.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(String::from)
            .collect()
    }

    /// The commands of the workload, run in order under the shim.
    fn drive(&self, ops: usize, big: bool, rng: &mut Rng) -> Result<usize, String> {
        self.run(&["init".into(), "--json".into()])?;
        self.run(&[
            "manifest".into(),
            "freeze".into(),
            MANIFEST.into(),
            "--private".into(),
            PRIVATE.into(),
            "--json".into(),
        ])?;
        // The ingests bind only to an opened group (GATE-4): canary-1's
        // daemon start as the frozen manifest has it.
        self.run(&benchledger::testkit::examples::group_open_args("canary-1"))?;
        let pools: Vec<(&str, Vec<String>)> = ["usage", "traces"]
            .iter()
            .map(|k| (*k, Self::rows(k)))
            .collect();
        let mut keys: Vec<(String, String)> = Vec::new();
        let mut commands = 3;
        let big_at = if big { ops / 2 } else { usize::MAX };
        for n in 0..ops {
            let op = rng.below(10);
            let args: Vec<String> = if n == big_at {
                self.ingest_file("usage", &pools[0].1, 7_600, n, rng)?
            } else if op < 5 {
                let len = if rng.below(3) == 0 {
                    10
                } else {
                    1_000 + rng.below(5_000)
                } as usize;
                let text = format!("pl-{n} {}", "p".repeat(len));
                let mut a = vec!["note".into(), text.clone(), "--json".into()];
                if rng.below(3) == 0 {
                    let key = format!("pl-key-{n}");
                    a.extend(["--idempotency-key".into(), key.clone()]);
                    keys.push((text, key));
                }
                a
            } else if op < 7 && !keys.is_empty() {
                let (text, key) = keys[rng.below(keys.len() as u64) as usize].clone();
                vec![
                    "note".into(),
                    text,
                    "--json".into(),
                    "--idempotency-key".into(),
                    key,
                ]
            } else {
                let (kind, pool) = &pools[rng.below(2) as usize];
                self.ingest_file(kind, pool, 1 + rng.below(64) as usize, n, rng)?
            };
            self.run(&args)?;
            commands += 1;
        }
        Ok(commands)
    }

    fn ingest_file(
        &self,
        kind: &str,
        pool: &[String],
        rows: usize,
        n: usize,
        rng: &mut Rng,
    ) -> Result<Vec<String>, String> {
        let mut text = String::new();
        for _ in 0..rows {
            text.push_str(&pool[rng.below(pool.len() as u64) as usize]);
            text.push('\n');
        }
        let path = self.files.join(format!("{n}-{kind}.jsonl"));
        std::fs::write(&path, text).map_err(|e| e.to_string())?;
        Ok(vec![
            "ingest".into(),
            kind.into(),
            "canary-1".into(),
            path.display().to_string(),
            "--json".into(),
        ])
    }
}

/// The highest seq an acknowledgement names (`seq`, `head_seq`, or an
/// ingest's `last_seq` plus its artifact record).
fn acked_seq(stdout: &[u8]) -> Option<u64> {
    let v: serde_json::Value = serde_json::from_slice(stdout).ok()?;
    let num = |k: &str| v.get(k).and_then(|x| x.as_u64());
    if v.get("appended").and_then(|a| a.as_u64()) == Some(0) {
        return None;
    }
    num("last_seq")
        .map(|s| s + 1)
        .or_else(|| num("seq"))
        .or_else(|| num("head_seq"))
}

// ---------------------------------------------------------------------------
// Checks

fn cli(bin: &Path, ledger: &Path, args: &[&str]) -> std::process::Output {
    Command::new(bin)
        .env_remove("RUST_LOG")
        .env_remove("BENCHLEDGER_DIR")
        .arg("--ledger")
        .arg(ledger)
        .args(["--lock-timeout", "5"])
        .args(args)
        .output()
        .expect("run benchledger")
}

/// Checks one image: verify exit 0, export a prefix of `final_lines`
/// holding at least `acked + 1` records.
fn check_image(
    bin: &Path,
    dir: &Path,
    final_lines: &[String],
    acked: Option<u64>,
) -> Result<usize, String> {
    let v = cli(bin, dir, &["verify", "--json"]);
    if !v.status.success() {
        return Err(format!(
            "verify exited {:?}: {}{}",
            v.status.code(),
            String::from_utf8_lossy(&v.stdout).trim(),
            String::from_utf8_lossy(&v.stderr).trim()
        ));
    }
    let out = dir.with_extension("jsonl");
    let e = cli(
        bin,
        dir,
        &["export", "--jsonl", "-o", &out.display().to_string()],
    );
    if !e.status.success() {
        return Err(format!(
            "export exited {:?}: {}",
            e.status.code(),
            String::from_utf8_lossy(&e.stderr).trim()
        ));
    }
    let text = std::fs::read_to_string(&out).map_err(|e| e.to_string())?;
    // the record lines; the trailer (issue 29) names this export's head
    let lines: Vec<&str> = text.lines().filter(|l| !is_trailer(l)).collect();
    if lines.len() > final_lines.len() || lines.iter().zip(final_lines).any(|(a, b)| *a != b) {
        return Err("the export is not a prefix of the final ledger's".into());
    }
    if let Some(a) = acked {
        if (lines.len() as u64) < a + 1 {
            return Err(format!(
                "{} records, but seq {a} was acknowledged before this point",
                lines.len()
            ));
        }
    }
    Ok(lines.len())
}

#[derive(Default)]
struct Tally {
    points: usize,
    images: BTreeMap<String, usize>,
    skipped_before_init: usize,
    failures: Vec<String>,
}

fn build_shim(out: &Path) -> Result<PathBuf, String> {
    std::fs::create_dir_all(out).map_err(|e| e.to_string())?;
    let so = out.join("shim.so");
    let st = Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-Wall", "-o"])
        .arg(&so)
        .arg(SHIM)
        .args(["-ldl", "-lpthread"])
        .status()
        .map_err(|e| format!("the power-loss recorder needs a C compiler (cc): {e}"))?;
    if !st.success() {
        return Err(format!("cc {SHIM} failed"));
    }
    Ok(so)
}

struct Opts {
    ops: usize,
    seed: u64,
    subsets: u64,
    big: bool,
    bin: PathBuf,
    keep: Option<PathBuf>,
}

fn run(o: &Opts) -> Result<Tally, String> {
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let work = o.keep.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    let work = work.canonicalize().map_err(|e| e.to_string())?;
    let shim = build_shim(&work.join("shim"))?;
    let w = Workload {
        bin: o.bin.clone(),
        shim,
        ledger: work.join("ledger"),
        trace: work.join("trace.bin"),
        files: work.join("files"),
    };
    let _ = std::fs::remove_dir_all(&w.ledger);
    let _ = std::fs::remove_file(&w.trace);
    std::fs::create_dir_all(&w.files).map_err(|e| e.to_string())?;
    let mut rng = Rng::new(o.seed);
    let t = Instant::now();
    let commands = w.drive(o.ops, o.big, &mut rng)?;
    let final_export = work.join("final.jsonl");
    let e = cli(
        &o.bin,
        &w.ledger,
        &[
            "export",
            "--jsonl",
            "-o",
            &final_export.display().to_string(),
        ],
    );
    if !e.status.success() {
        return Err("the final ledger does not export".into());
    }
    let final_lines: Vec<String> = std::fs::read_to_string(&final_export)
        .map_err(|e| e.to_string())?
        .lines()
        .filter(|l| !is_trailer(l))
        .map(String::from)
        .collect();
    let ops = parse_trace(&std::fs::read(&w.trace).map_err(|e| e.to_string())?)?;
    let root = w.ledger.display().to_string();
    let replayed = replay_names(&ops, &root)?;
    eprintln!(
        "powerloss: {commands} commands, {} records, {} traced operations ({} writes, {} syncs) in {:.1} s",
        final_lines.len(),
        ops.len(),
        ops.iter().filter(|o| o.kind == K_WRITE).count(),
        ops.iter().filter(|o| o.kind == K_SYNC || o.kind == K_SYNC_DIR).count(),
        t.elapsed().as_secs_f64()
    );
    let points: Vec<usize> = ops
        .iter()
        .enumerate()
        .filter(|(_, o)| matches!(o.kind, K_SYNC | K_SYNC_DIR | K_SFR | K_RENAME | K_STDOUT))
        .map(|(i, _)| i + 1)
        .chain([ops.len()])
        .collect();
    let mut models = vec![Model::Synced, Model::Strict, Model::Cache];
    models.extend((0..o.subsets).map(Model::Subset));
    let mut tally = Tally::default();
    let img_dir = work.join("image");
    let mut acked: Option<u64> = None;
    let mut next_ack = 0usize;
    for (n, &p) in points.iter().enumerate() {
        while next_ack < p {
            if ops[next_ack].kind == K_STDOUT {
                if let Some(s) = acked_seq(&ops[next_ack].data) {
                    acked = Some(acked.map_or(s, |a| a.max(s)));
                }
            }
            next_ack += 1;
        }
        tally.points += 1;
        if acked.is_none() {
            tally.skipped_before_init += 1;
            continue;
        }
        for m in &models {
            let img = image(&ops, &replayed, &root, p, *m);
            write_image(&img, &img_dir)?;
            *tally.images.entry(m.name()).or_default() += 1;
            if let Err(e) = check_image(&o.bin, &img_dir, &final_lines, acked) {
                let what = format!(
                    "point {n} (after op {p} of {}, {}), model {}: {e}",
                    ops.len(),
                    kind_name(ops[p - 1].kind),
                    m.name()
                );
                eprintln!("powerloss: FAILED: {what}");
                if let Some(keep) = &o.keep {
                    let _ = Command::new("cp")
                        .arg("-a")
                        .arg(&img_dir)
                        .arg(keep.join(format!("failed-{n}-{}", m.name())))
                        .status();
                }
                tally.failures.push(what);
            }
        }
        if (n + 1) % 50 == 0 {
            eprintln!(
                "powerloss: {} of {} points, {} failures, {:.0} s",
                n + 1,
                points.len(),
                tally.failures.len(),
                t.elapsed().as_secs_f64()
            );
        }
    }
    Ok(tally)
}

fn kind_name(k: u32) -> &'static str {
    match k {
        K_WRITE => "write",
        K_TRUNC => "truncate",
        K_SYNC => "fsync",
        K_SYNC_DIR => "fsync of a directory",
        K_SFR => "sync_file_range",
        K_CREATE => "create",
        K_RENAME => "rename",
        K_UNLINK => "unlink",
        K_MKDIR => "mkdir",
        K_STDOUT => "acknowledgement",
        K_RMDIR => "rmdir",
        _ => "?",
    }
}

fn default_bin() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let bin = exe.parent()?.parent()?.join("benchledger");
    bin.exists().then_some(bin)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut o = Opts {
        ops: 60,
        seed: benchledger::schema::time::now_utc_ns(),
        subsets: 2,
        big: false,
        bin: PathBuf::new(),
        keep: None,
    };
    let mut bin = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().unwrap_or_else(|| usage());
        match a.as_str() {
            "--ops" => o.ops = val().parse().unwrap_or_else(|_| usage()),
            "--seed" => o.seed = val().parse().unwrap_or_else(|_| usage()),
            "--subsets" => o.subsets = val().parse().unwrap_or_else(|_| usage()),
            "--big" => o.big = true,
            "--bin" => bin = Some(PathBuf::from(val())),
            "--keep" => o.keep = Some(PathBuf::from(val())),
            _ => usage(),
        }
    }
    o.bin = match bin.or_else(default_bin) {
        Some(b) => b,
        None => {
            eprintln!("powerloss: FAILED: no benchledger binary next to this example; build it first (cargo build --no-default-features) or pass --bin PATH");
            std::process::exit(1);
        }
    };
    eprintln!(
        "powerloss: seed {}, {} ops, binary {}",
        o.seed,
        o.ops,
        o.bin.display()
    );
    match run(&o) {
        Ok(t) => {
            let images: usize = t.images.values().sum();
            println!(
                "powerloss: seed {}: {} crash points ({} before init was acknowledged), {images} images ({}); {} failures",
                o.seed,
                t.points,
                t.skipped_before_init,
                t.images.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", "),
                t.failures.len()
            );
            for f in t.failures.iter().take(20) {
                println!("  {f}");
            }
            if !t.failures.is_empty() {
                std::process::exit(1);
            }
        }
        Err(e) => {
            eprintln!("powerloss: FAILED: {e}");
            std::process::exit(1);
        }
    }
}

fn usage() -> ! {
    eprintln!(
        "usage: powerloss [--ops N] [--seed S] [--subsets N] [--big] [--bin PATH] [--keep DIR]"
    );
    std::process::exit(2);
}

/// An export's trailer line (record count and head), not a record.
fn is_trailer(line: &str) -> bool {
    line.starts_with("{\"trailer\":")
}
