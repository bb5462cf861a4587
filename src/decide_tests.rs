//! Given events / when command / then events or refusal. No store.

use super::*;
use crate::manifest::tests::{example, EXAMPLE, EXAMPLE_PRIVATE};
use crate::projections::State;

fn given(events: &[Event]) -> State {
    let mut s = State::default();
    for (i, e) in events.iter().enumerate() {
        s.apply(i as u64 + 1, e);
    }
    s
}

fn frozen_event() -> Event {
    Event::ManifestFrozen(example())
}

/// A second, fully separate lineage (new label, tag, paths, ports, job names).
fn other_lineage(extra_from: &str, extra_to: &str) -> ManifestFrozen {
    let public = EXAMPLE
        .replace("short13-kimi-2026-11", "short13-kimi-2026-12")
        .replace("= [187", "= [197")
        .replacen(extra_from, extra_to, 1);
    let private = EXAMPLE_PRIVATE.replace("short13-kimi-2026-11", "short13-kimi-2026-12");
    crate::manifest::freeze(&public, "m2", &private, "p2").unwrap()
}

fn rule(r: Result<Vec<Event>>) -> &'static str {
    match r {
        Err(Error::Refused { rule, .. }) => rule,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn freezing_into_an_empty_ledger_appends_the_manifest() {
    let events = freeze(&given(&[]), example()).unwrap();
    assert_eq!(events, vec![frozen_event()]);
}

#[test]
fn a_frozen_lineage_is_never_edited() {
    // rule FREEZE-3
    assert_eq!(
        rule(freeze(&given(&[frozen_event()]), example())),
        "FREEZE-3"
    );
}

#[test]
fn a_new_lineage_with_new_resources_freezes() {
    // rule FREEZE-4
    let s = given(&[frozen_event()]);
    assert_eq!(freeze(&s, other_lineage("", "")).unwrap().len(), 1);
}

#[test]
fn reusing_a_port_path_or_job_name_of_an_earlier_lineage_is_refused() {
    // rule FREEZE-4
    let s = given(&[frozen_event()]);
    assert_eq!(
        rule(freeze(
            &s,
            other_lineage("ports = [19711]", "ports = [18711]")
        )),
        "FREEZE-4"
    );
    let path = "/srv/bench/short13-kimi-2026-12/r2/daemon.log";
    assert_eq!(
        rule(freeze(
            &s,
            other_lineage(path, "/srv/bench/short13-kimi-2026-11/r2/daemon.log")
        )),
        "FREEZE-4"
    );
    let job = "job_name = \"short13-kimi-2026-12-control\"";
    assert_eq!(
        rule(freeze(
            &s,
            other_lineage(job, "job_name = \"short13-kimi-2026-11-control\"")
        )),
        "FREEZE-4"
    );
    let tag = "run_value = \"short13-kimi-2026-12\"";
    assert_eq!(
        rule(freeze(
            &s,
            other_lineage(tag, "run_value = \"short13-kimi-2026-11\"")
        )),
        "FREEZE-4"
    );
}

#[test]
fn operator_and_reviewer_sign_off_once_each() {
    // rule FREEZE-7
    let s = given(&[frozen_event()]);
    let op = sign_off(&s, None, SignOffRole::Operator, "alice").unwrap();
    let s = given(&[frozen_event(), op[0].clone()]);
    assert!(!s.lineage(None).unwrap().signed_off());
    assert_eq!(
        rule(sign_off(&s, None, SignOffRole::Operator, "carol")),
        "FREEZE-7"
    );
    let rev = sign_off(
        &s,
        Some("short13-kimi-2026-11"),
        SignOffRole::Reviewer,
        "bob",
    )
    .unwrap();
    let s = given(&[frozen_event(), op[0].clone(), rev[0].clone()]);
    assert!(s.lineage(None).unwrap().signed_off());
    let Event::ManifestSignedOff(e) = &rev[0] else {
        panic!()
    };
    assert_eq!(e.manifest_blake3, example().manifest_blake3);
}

#[test]
fn operator_and_reviewer_are_two_distinct_names() {
    // rule FREEZE-7
    let op = sign_off(
        &given(&[frozen_event()]),
        None,
        SignOffRole::Operator,
        "alice",
    )
    .unwrap();
    let s = given(&[frozen_event(), op[0].clone()]);
    assert_eq!(
        rule(sign_off(&s, None, SignOffRole::Reviewer, "alice")),
        "FREEZE-7"
    );
}

#[test]
fn sign_off_needs_a_frozen_lineage_and_a_name() {
    assert!(matches!(
        sign_off(&given(&[]), None, SignOffRole::Operator, "a"),
        Err(Error::Input(_))
    ));
    let s = given(&[frozen_event()]);
    assert!(matches!(
        sign_off(&s, Some("nope"), SignOffRole::Operator, "a"),
        Err(Error::Input(_))
    ));
    assert!(matches!(
        sign_off(&s, None, SignOffRole::Operator, "  "),
        Err(Error::Input(_))
    ));
    let at = "n".repeat(SIGN_OFF_NAME_BYTES_MAX);
    assert!(sign_off(&s, None, SignOffRole::Operator, &at).is_ok());
    assert!(matches!(
        sign_off(&s, None, SignOffRole::Operator, &format!("{at}n")),
        Err(Error::Input(_))
    ));
}

#[test]
fn with_two_lineages_a_label_is_required() {
    let s = given(&[frozen_event(), Event::ManifestFrozen(other_lineage("", ""))]);
    assert!(matches!(
        sign_off(&s, None, SignOffRole::Operator, "a"),
        Err(Error::Input(_))
    ));
    assert!(sign_off(&s, Some("short13-kimi-2026-12"), SignOffRole::Operator, "a").is_ok());
}
