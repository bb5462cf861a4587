//! `method::expect` over the recorded corpus: each kind of expectation
//! holds where the ledger agrees and names the difference where it does not.

use super::*;

fn observed(name: &str) -> (tempfile::TempDir, Observed) {
    let dir = tempfile::tempdir().unwrap();
    let export = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("replay-tests/ledgers/{name}.jsonl"));
    let ledger = crate::log::export::import_file(
        &export,
        &dir.path().join("l"),
        std::time::Duration::from_secs(5),
    )
    .unwrap();
    let got = observe(&ledger).unwrap();
    (dir, got)
}

fn diff(got: &Observed, file: &str) -> Vec<String> {
    check(got, &parse(file, "t").unwrap())
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn rows_cases_and_series_are_compared_and_differences_named() {
    let (_d, got) = observed("rejected-settlement-pending");
    assert!(diff(
        &got,
        "[groups.control]\nstatus = \"rejected_settlement\"\nrows = { settlement = \"fails: pending\", requests = \"holds\" }\n"
    )
    .is_empty());
    assert_eq!(
        diff(
            &got,
            "[groups.control]\nstatus = \"accepted\"\nrows = { settlement = \"holds\" }\n"
        ),
        [
            "control status: expected accepted / got rejected_settlement",
            "control row settlement: expected holds / got fails"
        ],
        "VERDICT-1: the status and the failing row named"
    );
    let case = diff(
        &got,
        "[groups.control.cases]\n\"fix-git/t1\" = { status = \"terminal_invalid\", reward = \"0\" }\n\"no-such/t1\" = { status = \"started\" }\n",
    );
    assert_eq!(case.len(), 3, "{case:?}");
    assert!(case[0].starts_with(
        "control case fix-git/t1 status: expected terminal_invalid / got terminal_valid"
    ));
    assert_eq!(
        case[2],
        "control case no-such/t1: expected started / got no such case"
    );
    let series = diff(
        &got,
        "[groups.canary-1.settlement_micro_usd]\nactual = 1\nsubscription_counterfactual = 0\n",
    );
    assert_eq!(
        series,
        ["canary-1 settlement actual micro-USD: expected 1 / got 35831"]
    );
}

#[test]
fn refusals_and_the_stop_are_compared_at_their_seqs() {
    // The BIND-6 quota pass and the BIND-7 validation, refuted when folded.
    let (_d, got) = observed("refused-bind-gate-numbers");
    let rules: Vec<&str> = got.refusals.iter().map(|(_, r)| r.as_str()).collect();
    assert_eq!(
        rules,
        ["BIND-6", "BIND-7"],
        "BIND-6, BIND-7: {:?}",
        got.refusals
    );
    let (a, b) = (got.refusals[0].0, got.refusals[1].0);
    let file = format!("refusals = [{{ seq = {a}, rule = \"BIND-6\" }}, {{ seq = {b}, rule = \"BIND-7\" }}]\nstopped = false\n");
    assert!(diff(&got, &file).is_empty());
    assert_eq!(
        diff(&got, "refusals = []\n"),
        [format!(
            "refusals: expected none / got BIND-6 at seq {a}, BIND-7 at seq {b}"
        )]
    );
    let (_d, stopped) = observed("rejected-runtime-stops-lineage");
    let (at, s) = stopped
        .state
        .lineage(None)
        .unwrap()
        .stopped
        .clone()
        .unwrap();
    assert!(diff(
        &stopped,
        &format!("stopped = {{ seq = {}, rule = \"{}\" }}\n", at.seq, s.rule)
    )
    .is_empty());
    assert_eq!(
        diff(&stopped, "stopped = false\n"),
        [format!(
            "stopped: expected not stopped / got stopped at seq {} by {}",
            at.seq, s.rule
        )],
        "LINEAGE-5"
    );
}

#[test]
fn a_malformed_file_names_the_field() {
    let e = parse(
        "[groups.control]\nrows = { settlement = \"maybe\" }\n",
        "x.toml",
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("x.toml: groups.control.rows.settlement"),
        "{e}"
    );
    let e = parse("[groups.control]\nstatuz = \"accepted\"\n", "x.toml").unwrap_err();
    assert!(
        e.to_string().contains("x.toml") && e.to_string().contains("statuz"),
        "{e}"
    );
}
