//! README.md's worked example, run (issue 33 item 7): every `$ ` line of
//! its `console` block is run in a fresh directory (the repository's
//! `replay-tests/` paths pointing at this checkout), and each command's
//! stdout and then its stderr must equal the lines shown under it, with
//! 64-hex-digit hashes masked and trailing blanks ignored (`doc_run.rs`).
//! The README stays a newcomer's page: at most 200 lines, the example at
//! most 40.

use std::path::Path;

use super::doc_run;

const README_LINES_MAX: usize = 200;
const EXAMPLE_LINES_MAX: usize = 40;

#[test]
fn the_readme_worked_example_runs_as_shown() {
    let root = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(Path::new(root).join("README.md")).unwrap();
    assert!(
        readme.lines().count() <= README_LINES_MAX,
        "README.md has {} lines; at most {README_LINES_MAX}",
        readme.lines().count()
    );
    let from = readme
        .find("## Worked example")
        .expect("the README has a worked example");
    let example = doc_run::blocks(&readme[from..])
        .into_iter()
        .find(|b| b.lang == "console")
        .expect("a console block under `## Worked example`");
    assert!(
        example.lines.len() <= EXAMPLE_LINES_MAX,
        "{} lines",
        example.lines.len()
    );
    assert!(example.attrs.is_empty(), "the example runs as it is");
    let steps = doc_run::steps(&example.lines);
    assert!(steps.len() >= 6, "{steps:?}");
    let dir = tempfile::tempdir().unwrap();
    for step in &steps {
        assert!(
            !step.shown.is_empty(),
            "every command of the example shows its output: {}",
            step.cmd
        );
        doc_run::run_step(step, dir.path(), "README worked example");
    }
}
