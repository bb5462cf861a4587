//! `benchledger expect` (issue 33 items 5 and 9): every recorded scenario
//! of `replay-tests/scenarios/` has a hand-written expectation file
//! (`NAME.expect.toml` beside `NAME.toml`) that its ledger meets, checked
//! through the binary on the committed export; a planted wrong expectation
//! fails with a readable `expected ... / got ...` and exit 1, and a
//! malformed file exits 2 naming the field.

use std::path::{Path, PathBuf};

use super::Harness;

fn scenarios() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("replay-tests/scenarios");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|n| n.strip_suffix(".toml").map(str::to_string))
        .filter(|n| !n.contains('.'))
        .collect();
    names.sort();
    names
}

fn file(dir: &str, name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("replay-tests/{dir}/{name}"))
}

#[test]
fn every_recorded_scenario_meets_its_hand_written_expectations() {
    let h = Harness::new();
    let names = scenarios();
    assert!(names.len() >= 28, "{names:?}");
    for name in names {
        let expect = file("scenarios", &format!("{name}.expect.toml"));
        assert!(
            expect.is_file(),
            "{name}: no hand-written expectation file {}",
            expect.display()
        );
        let export = file("ledgers", &format!("{name}.jsonl"));
        let r = h.run(&["expect", export.to_str().unwrap(), expect.to_str().unwrap()]);
        assert_eq!(r.code, 0, "{name}: {}{}", r.stdout, r.stderr);
        assert!(
            r.stdout.ends_with("every expectation holds\n"),
            "{}",
            r.stdout
        );
    }
}

#[test]
fn a_planted_wrong_expectation_fails_with_a_readable_difference() {
    let h = Harness::new();
    let export = file("ledgers", "short13-accepted.jsonl");
    let planted = h.path("planted.toml");
    std::fs::write(
        &planted,
        "[groups.control]\nstatus = \"rejected_join\"\npassed = \"13/13\"\nrows = { requests = \"fails: JOIN-1\" }\n[groups.control.cases]\n\"fix-git/t1\" = { status = \"terminal_valid\", reward = \"0\" }\n",
    )
    .unwrap();
    let r = h.run(&[
        "expect",
        export.to_str().unwrap(),
        planted.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(
        lines[0],
        "control status: expected rejected_join / got accepted"
    );
    assert_eq!(lines[1], "control passed: expected 13/13 / got 10/13");
    assert!(
        lines[2].starts_with("control row requests: expected fails: JOIN-1 / got holds: "),
        "{}",
        lines[2]
    );
    assert_eq!(
        lines[3],
        "control case fix-git/t1 reward: expected 0 / got 1"
    );
    assert!(
        lines[4].ends_with("planted.toml: 4 difference(s)"),
        "{}",
        r.stdout
    );
    // The same as JSON.
    let j = h.run(&[
        "expect",
        export.to_str().unwrap(),
        planted.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(j.code, 1);
    let v: serde_json::Value = serde_json::from_str(&j.stdout).unwrap();
    assert_eq!(v["ok"], false);
    assert_eq!(v["differences"][1]["got"], "10/13");
    // A ledger directory is read in place, as an export is.
    h.ok(&["import", "--jsonl", export.to_str().unwrap()]);
    let ledger = h.ledger();
    let d = h.run(&[
        "expect",
        ledger.to_str().unwrap(),
        planted.to_str().unwrap(),
    ]);
    assert_eq!((d.code, d.stdout.clone()), (1, r.stdout.clone()));
}

#[test]
fn a_malformed_expectation_exits_2_naming_the_file_and_field() {
    let h = Harness::new();
    let export = file("ledgers", "short13-accepted.jsonl");
    let bad = h.path("bad.toml");
    std::fs::write(
        &bad,
        "[groups.control]\nrows = { settlement = \"maybe\" }\n",
    )
    .unwrap();
    let r = h.run(&["expect", export.to_str().unwrap(), bad.to_str().unwrap()]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("bad.toml: groups.control.rows.settlement"),
        "{}",
        r.stderr
    );
    assert!(r.stdout.is_empty());
    let r = h.run(&["expect", export.to_str().unwrap(), "/no/such.toml"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
}
