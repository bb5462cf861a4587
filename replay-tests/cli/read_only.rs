//! Issue 29 item 13: auditors with read-only copies. Every verb that only
//! reads a ledger works on a directory its user cannot write, and answers
//! exactly as on a writable copy; every verb that appends exits 4 saying it
//! needs write access; nothing is left behind (`log::read_copy`).
//!
//! Tests may run as root, where clearing write bits denies nothing, so the
//! directory is made really unwritable: a read-only bind mount in a private
//! user and mount namespace (`unshare -rm`, EROFS), and an unprivileged
//! user (root: `setpriv` to nobody; anyone else: the write bits cleared;
//! EACCES). Each way that this machine allows is tried; at least one must
//! be, or the test fails saying why.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::Run;

const BIN: &str = env!("CARGO_BIN_EXE_benchledger");
/// The uid and gid of the unprivileged user (`nobody`).
const NOBODY: u32 = 65534;

/// How a read-only run is denied writes.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Denial {
    /// A read-only bind mount of the ledger directory (EROFS).
    Mount,
    /// An unprivileged user: root drops to nobody (setpriv), anyone else
    /// has the write bits of the ledger cleared (EACCES).
    User,
}

/// A recorded lineage in a directory everyone may traverse, with the
/// directories the runs use.
struct World {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

fn is_root() -> bool {
    static ROOT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ROOT.get_or_init(|| {
        // The owner of a directory this process just created is its euid.
        let probe = tempfile::tempdir().unwrap();
        std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(probe.path()).unwrap()) == 0
    })
}

/// `r`, which must have succeeded.
fn must(r: Run, what: &str) -> Run {
    assert_eq!(r.code, 0, "{what}: {}", r.stderr);
    r
}

fn chmod(mode: &str, path: &Path) {
    let ok = Command::new("chmod")
        .args(["-R", mode])
        .arg(path)
        .status()
        .unwrap()
        .success();
    assert!(ok, "chmod {mode} {}", path.display());
}

impl World {
    fn new() -> World {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        for d in ["in", "scratch", "cwd"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        chmod("a+rwxt", &root.join("scratch"));
        chmod("a+rwxt", &root.join("cwd"));
        let w = World { _tmp: tmp, root };
        // The recorded corpus's accepted lineage, with two signed
        // checkpoints (TRUST-1) so the checkpoint and proof verbs have
        // something to read.
        let export = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/replay-tests/ledgers/short13-accepted.jsonl"
        );
        must(w.writable(&["import", "--jsonl", export]), "import");
        let key = w.root.join("in/alice.key");
        let alice = benchledger::testkit::examples::signer("alice");
        std::fs::write(&key, format!("{}\n", alice.encode())).unwrap();
        let key = key.display().to_string();
        let cp1 = w.path("in/cp1.note");
        must(
            w.writable(&["checkpoint", "sign", "--key", &key, "--out", &cp1]),
            "checkpoint sign",
        );
        must(w.writable(&["note", "between the checkpoints"]), "note");
        let cp2 = w.path("in/cp2.note");
        must(
            w.writable(&["checkpoint", "sign", "--key", &key, "--out", &cp2]),
            "checkpoint sign",
        );
        std::fs::create_dir_all(w.root.join("in/jobs")).unwrap();
        // What `expect` checks the ledger against: one holds, one does not.
        std::fs::write(
            w.root.join("in/expect.toml"),
            "[groups.control]\nstatus = \"accepted\"\npassed = \"10/13\"\n",
        )
        .unwrap();
        std::fs::write(
            w.root.join("in/wrong.toml"),
            "[groups.control]\npassed = \"13/13\"\n",
        )
        .unwrap();
        chmod("a+rX", &w.root);
        w
    }

    fn path(&self, rel: &str) -> String {
        self.root.join(rel).display().to_string()
    }

    fn ledger(&self) -> PathBuf {
        self.root.join("ledger")
    }

    /// A fresh working directory for one run (its output files land
    /// there, named alike for every run).
    fn cwd(&self, tag: &str) -> PathBuf {
        let dir = self.root.join("cwd").join(tag);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        chmod("a+rwx", &dir);
        dir
    }

    fn base(&self, program: &str, cwd: &Path) -> Command {
        let mut c = Command::new(program);
        c.current_dir(cwd)
            .env_remove("BENCHLEDGER_DIR")
            .env_remove("BENCHLEDGER_ACTOR")
            .env_remove("RUST_LOG")
            .env("BENCHLEDGER_AWS_GATES", "recorded")
            .env("TMPDIR", self.root.join("scratch"))
            // Each run's own auditor memory (TRUST-7), in its fresh
            // working directory: never the real configuration directory.
            .env("BENCHLEDGER_AUDITOR_STATE", "auditor-state.json")
            .stdin(Stdio::null());
        c
    }

    /// `args` on the ledger, writable.
    fn writable_in(&self, cwd: &Path, args: &[&str]) -> Command {
        let mut c = self.base(BIN, cwd);
        c.arg("--ledger").arg(self.ledger()).args(args);
        c
    }

    fn writable(&self, args: &[&str]) -> Run {
        let cwd = self.cwd("setup");
        self.writable_in(&cwd, args).output().unwrap().into()
    }

    /// `args` on the ledger, which this run cannot write.
    fn denied_in(&self, denial: Denial, cwd: &Path, args: &[&str]) -> Command {
        let ledger = self.ledger();
        let mut c = match denial {
            Denial::Mount => {
                let mut c = self.base("unshare", cwd);
                c.args([
                    "-rm",
                    "sh",
                    "-c",
                    r#"mount --bind -o ro "$0" "$0" && exec "$@""#,
                ])
                .arg(&ledger)
                .arg(BIN);
                c
            }
            Denial::User if is_root() => {
                let mut c = self.base("setpriv", cwd);
                c.arg(format!("--reuid={NOBODY}"))
                    .arg(format!("--regid={NOBODY}"))
                    .args(["--clear-groups", "--"])
                    .arg(BIN);
                c
            }
            // Not root: the write bits are cleared around the run (see
            // `Denied`), so the binary runs as it is.
            Denial::User => self.base(BIN, cwd),
        };
        c.arg("--ledger").arg(&ledger).args(args);
        c
    }

    /// Whether `denial` really denies writing the ledger directory here.
    fn denies(&self, denial: Denial) -> Result<(), String> {
        let cwd = self.cwd("probe");
        let probe = self.ledger().join("probe");
        let mut c = match denial {
            Denial::Mount => {
                let mut c = self.base("unshare", &cwd);
                c.args([
                    "-rm",
                    "sh",
                    "-c",
                    r#"mount --bind -o ro "$0" "$0" && exec touch "$1""#,
                ])
                .arg(self.ledger())
                .arg(&probe);
                c
            }
            Denial::User if is_root() => {
                let mut c = self.base("setpriv", &cwd);
                c.arg(format!("--reuid={NOBODY}"))
                    .arg(format!("--regid={NOBODY}"))
                    .args(["--clear-groups", "--", "touch"])
                    .arg(&probe);
                c
            }
            Denial::User => {
                let mut c = self.base("touch", &cwd);
                c.arg(&probe);
                c
            }
        };
        let _guard = Denied::new(self, denial);
        let out = c.output().map_err(|e| format!("{denial:?}: {e}"))?;
        let wrote = probe.exists();
        let _ = std::fs::remove_file(&probe);
        match (out.status.success(), wrote) {
            (false, false) => Ok(()),
            _ => Err(format!(
                "{denial:?} does not deny writes here: {}",
                String::from_utf8_lossy(&out.stderr)
            )),
        }
    }
}

/// For a tester who is not root, the ledger's write bits cleared while it
/// lives (a `Denial::User` run); nothing otherwise.
struct Denied<'a>(Option<&'a World>);

impl<'a> Denied<'a> {
    fn new(w: &'a World, denial: Denial) -> Denied<'a> {
        if denial == Denial::User && !is_root() {
            chmod("a-w", &w.ledger());
            Denied(Some(w))
        } else {
            Denied(None)
        }
    }
}

impl Drop for Denied<'_> {
    fn drop(&mut self) {
        if let Some(w) = self.0 {
            chmod("u+w", &w.ledger());
        }
    }
}

/// The verbs that only read, each with the command lines tried
/// (`{in}` is the directory of inputs every run may read).
const READS: &[(&str, &[&[&str]])] = &[
    ("verify", &[&["verify"], &["verify", "--json"]]),
    ("head", &[&["head"], &["head", "--json"]]),
    (
        "log",
        &[
            &["log"],
            &["log", "--from", "400", "--to", "405"],
            &[
                "log",
                "--kind",
                "group_sealed",
                "--kind",
                "operator_noted.v1",
            ],
        ],
    ),
    (
        "export",
        &[
            &["export", "--jsonl"],
            &["export", "--jsonl", "-o", "out.jsonl"],
            &["export", "--redacted", "-o", "bundle"],
            &["export", "--parquet", "-o", "tables"],
        ],
    ),
    ("audit", &[&["audit"], &["audit", "--json"]]),
    (
        "report show",
        &[
            &["report", "show"],
            &["report", "show", "--format", "json"],
            &["report", "show", "--out", "report"],
        ],
    ),
    ("report registry", &[&["report", "registry"]]),
    // `report [LINEAGE]` is `report show`
    ("report", &[&["report", "short13-kimi-2026-11"]]),
    (
        "replay",
        &[
            &["replay"],
            &["replay", "--json"],
            &["replay", "--at", "100"],
        ],
    ),
    (
        "expect",
        &[
            &["expect", "{ledger}", "{in}/expect.toml"],
            &["expect", "{ledger}", "{in}/wrong.toml", "--json"],
        ],
    ),
    (
        "gate",
        &[
            &["gate", "control"],
            &["gate", "r1", "--json"],
            &["gate", "nope"],
        ],
    ),
    (
        "lineage show",
        &[&["lineage", "show"], &["lineage", "show", "--json"]],
    ),
    (
        "control list",
        &[&["control", "list"], &["control", "list", "--json"]],
    ),
    (
        "manifest show",
        &[
            &["manifest", "show"],
            &["manifest", "show", "--redacted", "--json"],
        ],
    ),
    ("resume", &[&["resume", "r2", "--harbor-jobs", "{in}/jobs"]]),
    (
        "checkpoint show",
        &[&["checkpoint", "show"], &["checkpoint", "show", "--json"]],
    ),
    (
        "checkpoint verify",
        &[&["checkpoint", "verify", "--vkey", "{vkey}", "{in}/cp2.note"]],
    ),
    // the recorded lineage freezes no witnesses: refused (exit 2) on a
    // read copy as on the ledger, before any witness is asked or anything
    // appended (TRUST-6)
    ("checkpoint witness", &[&["checkpoint", "witness"]]),
    (
        "prove inclusion",
        &[&["prove", "inclusion", "--checkpoint", "{in}/cp1.note", "7"]],
    ),
    (
        "prove consistency",
        &[&["prove", "consistency", "{in}/cp1.note", "{in}/cp2.note"]],
    ),
    (
        "run",
        &[&["run", "r2", "--plan"], &["run", "r2", "--plan", "--json"]],
    ),
    // a probe appends nothing (RUN-6); the port is closed
    (
        "check daemon-health",
        &[&[
            "check",
            "daemon-health",
            "--group",
            "r2",
            "--probe",
            "--url",
            "http://127.0.0.1:9/health",
        ]],
    ),
];

/// Verbs that append, each with one command line that gets past its own
/// argument checks to the ledger (files named exist).
const APPENDS: &[(&str, &[&str])] = &[
    ("init", &["init"]),
    ("note", &["note", "x"]),
    (
        "checkpoint sign",
        &["checkpoint", "sign", "--key", "{in}/alice.key"],
    ),
    ("lineage stop", &["lineage", "stop", "--reason", "audit"]),
    (
        "control reuse",
        &[
            "control",
            "reuse",
            "other",
            "--control",
            "short13-kimi-2026-11/control",
        ],
    ),
    ("group close", &["group", "close", "r2"]),
    (
        "ingest usage",
        &["ingest", "usage", "r2", "{fix}/usage.jsonl"],
    ),
    (
        "feedback record",
        &[
            "feedback", "record", "r2", "--before", "{h64}", "--after", "{h64}",
        ],
    ),
];

/// `args` with `{in}`, `{ledger}`, `{fix}`, `{vkey}` and `{h64}` filled in.
fn filled(w: &World, args: &[&str]) -> Vec<String> {
    let vkey = benchledger::testkit::examples::signer("alice")
        .verifier()
        .encode();
    args.iter()
        .map(|a| {
            a.replace("{in}", &w.path("in"))
                .replace("{ledger}", &w.ledger().display().to_string())
                .replace(
                    "{fix}",
                    concat!(
                        env!("CARGO_MANIFEST_DIR"),
                        "/replay-tests/fixtures/bitrouter"
                    ),
                )
                .replace("{vkey}", &vkey)
                .replace("{h64}", &"ab".repeat(32))
        })
        .collect()
}

/// `r` with the time stamps of log lines (`2026-12-03T13:30:37.669666Z  WARN
/// ...`) and a probe's measured latency left out: two runs differ only
/// there.
fn untimed(r: Run) -> (i32, String, String) {
    let stdout = r
        .stdout
        .lines()
        .map(|l| match l.find("latency_ms") {
            Some(at) => l[..at].to_string(),
            None => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    let stderr = r
        .stderr
        .lines()
        .map(|l| match l.split_once("Z  ") {
            Some((stamp, rest)) if stamp.len() == 26 && stamp.as_bytes()[10] == b'T' => rest,
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n");
    (r.code, stdout, stderr)
}

/// Every file below `dir`, relative path -> bytes.
fn files_below(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().display().to_string();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

fn scratch_is_empty(w: &World) -> bool {
    std::fs::read_dir(w.root.join("scratch"))
        .unwrap()
        .next()
        .is_none()
}

#[test]
fn every_read_verb_works_on_a_ledger_it_cannot_write_and_appending_verbs_exit_4() {
    // Issue 29 item 13.
    let w = World::new();
    let head = w.writable(&["head", "--json"]).stdout;
    let mut denials = Vec::new();
    let mut unavailable = Vec::new();
    for d in [Denial::Mount, Denial::User] {
        match w.denies(d) {
            Ok(()) => denials.push(d),
            Err(why) => unavailable.push(why),
        }
    }
    assert!(
        !denials.is_empty(),
        "no way to make a directory unwritable is available here, so the read-only path cannot be tested: {unavailable:?}"
    );
    // Every leaf verb of the clap tree is classified: a new verb fails
    // here until it is.
    // No existing ledger is read.
    let others = ["key generate", "import", "completions", "man"];
    let leaves = super::argv_fuzz::leaf_verbs();
    println!("leaf verbs: {leaves:?}");
    for verb in leaves {
        let known = READS.iter().any(|(v, _)| *v == verb)
            || APPENDS
                .iter()
                .any(|(v, _)| verb.starts_with(v) || v.starts_with(&verb))
            || others.contains(&verb.as_str())
            || is_appending_family(&verb);
        assert!(
            known,
            "verb {verb:?} is neither a read nor an appending verb of this test"
        );
    }
    let mut runs = 0;
    for (verb, lines) in READS {
        for args in *lines {
            let args = filled(&w, args);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let cwd = w.cwd("writable");
            let want = untimed(w.writable_in(&cwd, &args).output().unwrap().into());
            let want_files = files_below(&cwd);
            for d in &denials {
                let cwd = w.cwd("denied");
                let _guard = Denied::new(&w, *d);
                let got = untimed(w.denied_in(*d, &cwd, &args).output().unwrap().into());
                drop(_guard);
                assert_eq!(
                    got, want,
                    "{verb} {args:?} under {d:?}: not what a writable copy answers"
                );
                assert_eq!(
                    files_below(&cwd),
                    want_files,
                    "{verb} {args:?} under {d:?}: other output files"
                );
                assert!(
                    scratch_is_empty(&w),
                    "{verb} {args:?} under {d:?}: a read copy is left"
                );
                runs += 1;
            }
        }
    }
    for (verb, args) in APPENDS {
        let args = filled(&w, args);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        for d in &denials {
            let cwd = w.cwd("denied");
            let _guard = Denied::new(&w, *d);
            let got: Run = w.denied_in(*d, &cwd, &args).output().unwrap().into();
            drop(_guard);
            assert_eq!(got.code, 4, "{verb} under {d:?}: {}", got.stderr);
            assert!(
                got.stderr.contains("cannot be written here")
                    && got.stderr.contains("needs write access"),
                "{verb} under {d:?}: the message says why: {}",
                got.stderr
            );
        }
    }
    assert_eq!(
        w.writable(&["head", "--json"]).stdout,
        head,
        "nothing appended"
    );
    assert!(scratch_is_empty(&w));
    println!(
        "read-only: {runs} read runs under {denials:?} equal to the writable copy; unavailable: {unavailable:?}"
    );
}

/// Verb families that append whatever their subcommand (gates and
/// evidence): `APPENDS` tries one of each kind.
fn is_appending_family(verb: &str) -> bool {
    [
        "manifest freeze",
        "manifest sign-off",
        "group ",
        "case ",
        "ingest ",
        "identity ",
        "quota ",
        "central ",
        "cleanup ",
        "check ",
    ]
    .iter()
    .any(|p| verb.starts_with(p))
}

#[test]
fn an_interrupted_read_removes_its_copy_and_a_killed_ones_goes_at_the_next_read() {
    // Issue 29 item 13: the private copy never outlives its reader.
    let w = World::new();
    let Some(d) = [Denial::Mount, Denial::User]
        .into_iter()
        .find(|d| w.denies(*d).is_ok())
    else {
        panic!("no way to make a directory unwritable is available here");
    };
    for (signal, code) in [("-INT", Some(130)), ("-KILL", None)] {
        let cwd = w.cwd("denied");
        let guard = Denied::new(&w, d);
        // `log` into a pipe nobody reads blocks once the pipe is full, with
        // its copy made.
        let mut child = w
            .denied_in(d, &cwd, &["log"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while scratch_is_empty(&w) {
            assert!(Instant::now() < deadline, "no read copy was made");
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(300));
        let ok = Command::new("kill")
            .arg(signal)
            .arg(child.id().to_string())
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill {signal}");
        let status = child.wait().unwrap();
        assert_eq!(status.code(), code, "{signal}");
        if code.is_some() {
            assert!(scratch_is_empty(&w), "Ctrl-C removes the copy");
        } else {
            assert!(!scratch_is_empty(&w), "SIGKILL leaves the copy");
            let r: Run = w.denied_in(d, &cwd, &["head"]).output().unwrap().into();
            assert_eq!(r.code, 0, "{}", r.stderr);
            assert!(
                scratch_is_empty(&w),
                "the next read removes a dead reader's copy"
            );
        }
        drop(guard);
    }
}
