//! Argv and pipe fuzzing (issue 20): random command lines built from the
//! CLI's own clap tree (every verb, its options and positionals, with
//! values from a pool of hostile and plausible strings), run against a
//! recorded lineage, some with stdout closed before anything is written.
//! No verb may panic, every exit code is one the README lists, and a refusal
//! (exit 2, 3 or 4) leaves the ledger head byte-identical.
//!
//! `ARGV_FUZZ_CASES` (default 300) sets the number of command lines,
//! `ARGV_FUZZ_SEED` replays a run (the seed is printed).

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use benchledger::rng::SplitMix64;
use clap::CommandFactory;

use super::{Harness, Run};

/// The longest a fuzzed command may take before it counts as a hang.
const FUZZ_COMMAND_SEC_MAX: u64 = 60;

/// One verb: its path of subcommand names and its arguments.
struct Verb {
    path: Vec<String>,
    options: Vec<Opt>,
    positionals: usize,
}

/// An option: its long name and whether it takes a value (with its
/// possible values where clap lists them).
struct Opt {
    long: String,
    takes_value: bool,
    required: bool,
    possible: Vec<String>,
}

fn verbs_of(cmd: &clap::Command, path: &[String], out: &mut Vec<Verb>) {
    let mut here = path.to_vec();
    if !path.is_empty() || cmd.get_name() != "benchledger" {
        here.push(cmd.get_name().to_string());
    }
    let subs: Vec<&clap::Command> = cmd
        .get_subcommands()
        .filter(|c| c.get_name() != "help")
        .collect();
    for sub in &subs {
        verbs_of(sub, &here, out);
    }
    if !subs.is_empty() && cmd.is_subcommand_required_set() {
        return;
    }
    let mut options = Vec::new();
    let mut positionals = 0;
    for arg in cmd.get_arguments() {
        let id = arg.get_id().as_str();
        if matches!(id, "help" | "version" | "ledger") {
            continue;
        }
        if arg.is_positional() {
            positionals += 1;
        } else if let Some(long) = arg.get_long() {
            options.push(Opt {
                long: long.to_string(),
                takes_value: arg.get_action().takes_values(),
                required: arg.is_required_set(),
                possible: arg
                    .get_possible_values()
                    .iter()
                    .map(|p| p.get_name().to_string())
                    .collect(),
            });
        }
    }
    out.push(Verb {
        path: here,
        options,
        positionals,
    });
}

/// Every leaf verb of the CLI's clap tree, as its words joined by spaces
/// (`checkpoint sign`, `verify`): what a table of verbs in a test must
/// cover, so a verb added without an entry fails that test.
pub(super) fn leaf_verbs() -> Vec<String> {
    let mut verbs = Vec::new();
    verbs_of(&benchledger::cli::Cli::command(), &[], &mut verbs);
    verbs.into_iter().map(|v| v.path.join(" ")).collect()
}

/// The crate's one seeded generator, with the draws the fuzzer needs.
struct Rng(SplitMix64);

impl Rng {
    /// A draw in `0..n`, 0 when `n` is 0.
    fn below(&mut self, n: usize) -> usize {
        self.0.index(n.max(1))
    }

    fn pick<'a>(&mut self, items: &'a [String]) -> &'a str {
        &items[self.below(items.len())]
    }
}

/// Values a fuzzed argument takes: names the recorded lineage knows, files
/// that exist (evidence, a ledger export, a trial result: copies in the
/// harness's temp dir, since an output option may overwrite any file it is
/// given), and hostile strings. Every path is relative to the temp dir (the
/// commands' working directory) and never climbs out of it.
fn value_pool(h: &Harness) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pool: Vec<String> = [
        "canary-1",
        "control",
        "r1",
        "r2",
        "short13-kimi-2026-11",
        "hello-world/c1",
        "fix-git/t1",
        "fix-git/t1/replacement-01",
        "0",
        "1",
        "-1",
        "18446744073709551616",
        "1e309",
        "NaN",
        "",
        "-",
        "out.json",
        "missing/file.jsonl",
        "sub/dir",
        "é🙂\u{202e}",
        "a\tb\nc",
        "2026-13-45T99:99:99Z",
        "operator",
        "reviewer",
        "--",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    pool.push("x".repeat(5000));
    std::fs::create_dir_all(h.path("in")).unwrap();
    for file in [
        "replay-tests/fixtures/bitrouter/usage.jsonl",
        "replay-tests/fixtures/bitrouter/traces.jsonl",
        "replay-tests/ledgers/short13-accepted.jsonl",
        "../shared/fixtures/harbor-0.25.0/trial-result.pass.json",
    ] {
        let name = Path::new(file).file_name().unwrap().to_string_lossy();
        std::fs::copy(root.join(file), h.path(&format!("in/{name}"))).unwrap();
        pool.push(format!("in/{name}"));
    }
    pool
}

/// A random command line for one of `verbs`.
fn argv(rng: &mut Rng, verbs: &[Verb], pool: &[String]) -> Vec<String> {
    let verb = &verbs[rng.below(verbs.len())];
    let mut args = verb.path.clone();
    // Mostly as many positionals as the verb declares, sometimes any count.
    let count = if rng.below(4) == 0 {
        rng.below(verb.positionals + 2)
    } else {
        verb.positionals
    };
    for _ in 0..count {
        args.push(rng.pick(pool).to_string());
    }
    for opt in &verb.options {
        let include = if opt.required {
            rng.below(10) != 0
        } else {
            rng.below(3) == 0
        };
        if !include {
            continue;
        }
        args.push(format!("--{}", opt.long));
        if opt.takes_value {
            let value = if !opt.possible.is_empty() && rng.below(2) == 0 {
                rng.pick(&opt.possible).to_string()
            } else {
                rng.pick(pool).to_string()
            };
            args.push(value);
        }
    }
    args
}

/// Runs `args` with stdin empty, stdout closed before the command writes
/// when `close` (else drained), and a bound on its time.
fn run_bounded(h: &Harness, args: &[String], close: bool) -> Run {
    let mut child = h
        .cmd()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take();
    let out = std::thread::spawn(move || drain(stdout.filter(|_| !close)));
    let err = std::thread::spawn({
        let stderr = child.stderr.take();
        move || drain(stderr)
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(FUZZ_COMMAND_SEC_MAX) {
            let _ = child.kill();
            panic!("{args:?} did not finish in {FUZZ_COMMAND_SEC_MAX} s");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Run {
        code: status.code().unwrap_or(-1),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// Everything a pipe gives until it closes (nothing for no pipe).
fn drain(pipe: Option<impl std::io::Read>) -> String {
    let mut text = Vec::new();
    if let Some(mut pipe) = pipe {
        let _ = pipe.read_to_end(&mut text);
    }
    String::from_utf8_lossy(&text).into_owned()
}

fn seed() -> u64 {
    std::env::var("ARGV_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        })
}

/// Random argv over every verb, stdout open or closed: no panic, a listed
/// exit code, and a refusal never changes the head. rule LEDGER-1, LEDGER-2
#[test]
fn argv_fuzz_no_verb_panics_and_a_refusal_never_writes() {
    let cases: usize = super::env_number("ARGV_FUZZ_CASES", 300);
    let seed = seed();
    eprintln!("argv fuzz: {cases} cases, ARGV_FUZZ_SEED={seed}");
    let mut verbs = Vec::new();
    verbs_of(&benchledger::cli::Cli::command(), &[], &mut verbs);
    assert!(verbs.len() >= 40, "only {} verbs found", verbs.len());
    let h = super::pipes::recorded_harness();
    let pool = value_pool(&h);
    let mut rng = Rng(SplitMix64::new(seed));
    let mut codes = std::collections::BTreeMap::<i32, usize>::new();
    for case in 0..cases {
        let args = argv(&mut rng, &verbs, &pool);
        let before = h.head_bytes();
        let r = run_bounded(&h, &args, rng.below(3) == 0);
        let context = format!("case {case} (ARGV_FUZZ_SEED={seed}) {args:?}");
        assert!(
            !r.stderr.contains("panicked"),
            "{context}: panic\n{}",
            r.stderr
        );
        assert!(
            (0..=4).contains(&r.code),
            "{context}: exit {}\n{}",
            r.code,
            r.stderr
        );
        if r.code >= 2 {
            assert_eq!(
                h.head_bytes(),
                before,
                "{context}: refused and wrote\n{}",
                r.stderr
            );
        }
        *codes.entry(r.code).or_default() += 1;
    }
    eprintln!("argv fuzz: exit codes {codes:?}");
    h.ok(&["verify"]);
}
