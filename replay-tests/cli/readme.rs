//! README.md's worked example, run (issue 33 item 7): every `$ ` line of
//! its `console` block is run in a fresh directory (the repository's
//! `replay-tests/` paths pointing at this checkout), and each command's
//! stdout and then its stderr must equal the lines shown under it, with
//! 64-hex-digit hashes masked and trailing blanks ignored. The README stays
//! a newcomer's page: at most 200 lines, the example at most 40.

use std::path::Path;
use std::process::Command;

const README_LINES_MAX: usize = 200;
const EXAMPLE_LINES_MAX: usize = 40;

/// The `console` block under `## Worked example`.
fn example(readme: &str) -> Vec<&str> {
    let from = readme
        .find("## Worked example")
        .expect("the README has a worked example");
    let block = &readme[from..];
    let start = block.find("```console\n").expect("a console block") + "```console\n".len();
    let end = start + block[start..].find("```").expect("the block ends");
    block[start..end].lines().collect()
}

/// A shell word split of one command line: blanks separate words, double
/// quotes group them (the example needs nothing more).
fn words(line: &str) -> Vec<String> {
    let (mut out, mut word, mut quoted, mut any) = (Vec::new(), String::new(), false, false);
    for c in line.chars() {
        match c {
            '"' => (quoted, any) = (!quoted, true),
            ' ' if !quoted => {
                if any {
                    out.push(std::mem::take(&mut word));
                }
                any = false;
            }
            c => (word.push(c), any = true).1,
        }
    }
    assert!(!quoted, "an unterminated quote in {line:?}");
    if any {
        out.push(word);
    }
    out
}

/// Hashes masked, trailing blanks dropped, the checkout's path removed.
fn normal(text: &str, root: &str) -> String {
    text.replace(root, "")
        .lines()
        .map(|l| {
            l.split(' ')
                .map(|w| {
                    if w.len() == 64 && w.chars().all(|c| c.is_ascii_hexdigit()) {
                        "<hash>"
                    } else {
                        w
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
                .trim_end()
                .to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_readme_worked_example_runs_as_shown() {
    let root = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(Path::new(root).join("README.md")).unwrap();
    assert!(
        readme.lines().count() <= README_LINES_MAX,
        "README.md has {} lines; at most {README_LINES_MAX}",
        readme.lines().count()
    );
    let lines = example(&readme);
    assert!(lines.len() <= EXAMPLE_LINES_MAX, "{} lines", lines.len());
    let mut steps: Vec<(&str, Vec<&str>)> = Vec::new();
    for line in lines {
        match line.strip_prefix("$ ") {
            Some(cmd) => steps.push((cmd, Vec::new())),
            None => steps
                .last_mut()
                .expect("output after a command")
                .1
                .push(line),
        }
    }
    assert!(steps.len() >= 6, "{steps:?}");
    let dir = tempfile::tempdir().unwrap();
    let prefix = format!("{root}/");
    for (cmd, shown) in steps {
        let argv = words(cmd);
        assert_eq!(argv[0], "benchledger", "{cmd}");
        let args: Vec<String> = argv[1..]
            .iter()
            .map(|a| match a.strip_prefix("replay-tests/") {
                Some(rest) => format!("{prefix}replay-tests/{rest}"),
                None => a.clone(),
            })
            .collect();
        let out = Command::new(env!("CARGO_BIN_EXE_benchledger"))
            .args(&args)
            .current_dir(dir.path())
            .env_remove("BENCHLEDGER_DIR")
            .env_remove("RUST_LOG")
            .env("BENCHLEDGER_AUDITOR_STATE", dir.path().join("auditor.json"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{cmd}: {out:?}");
        let got = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            normal(&got, &prefix),
            normal(&shown.join("\n"), &prefix),
            "README worked example: {cmd}"
        );
    }
}
