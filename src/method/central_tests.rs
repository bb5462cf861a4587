//! `method::central`: launch once, adopt by tags, check the frozen host,
//! count its vCPU only while it is to come, exclude only its id, tear down
//! after the last group or a hard stop.

use std::collections::BTreeMap;

use super::*;
use crate::method::projections::{At, State};
use crate::schema::central::{CentralAction, CentralInstance};
use crate::schema::events::{CheckRecorded, Event, LineageStopped, Status};
use crate::schema::rule::Rule;
use crate::testkit::examples::{replace_line, EXAMPLE_MANIFEST, EXAMPLE_PRIVATE};

const LAUNCH: &str = "daemon_host = \"10.20.0.10\"\n\n[central.launch]\nsubnet_id = \"subnet-0a\"\nsecurity_group_ids = [\"sg-0a\"]\nready_timeout_sec = 300";

fn frozen_with(edit: &[(&str, &str)]) -> crate::method::freeze::Frozen {
    let public = edit
        .iter()
        .fold(EXAMPLE_MANIFEST.to_string(), |m, (starts, with)| {
            replace_line(&m, starts, with)
        });
    crate::method::freeze::freeze(&public, "m", EXAMPLE_PRIVATE, "p").unwrap()
}

fn state_of(events: Vec<Event>) -> State {
    let mut s = State::default();
    for (i, e) in events.iter().enumerate() {
        let n = i as u64 + 1;
        s.apply(At { seq: n, utc_ns: n }, e);
    }
    s
}

fn host(id: &str) -> CentralInstance {
    CentralInstance {
        id: id.into(),
        ami: "ami-0abcdef1234567890".into(),
        instance_type: "c7i.xlarge".into(),
        state: "running".into(),
        tags: BTreeMap::from([
            ("benchledger:run".into(), "short13-kimi-2026-11".into()),
            ("benchledger:role".into(), "bitrouter-central".into()),
        ]),
        private_ip: Some("10.20.0.10".into()),
        ..CentralInstance::default()
    }
}

fn provisioned() -> Event {
    frozen_with(&[("daemon_host", LAUNCH)]).into_event()
}

fn seen(s: &State, action: CentralAction, h: &CentralInstance) -> Event {
    let l = s.lineage(None).unwrap();
    Event::CheckRecorded(observation(
        &l.frozen.manifest.public,
        action,
        &h.id,
        Ok(Some(h)),
        "us-east-1",
    ))
}

#[test]
fn a_frozen_launch_is_a_v3_manifest_whose_hash_covers_it() {
    let v2 = frozen_with(&[]);
    let v3 = frozen_with(&[("daemon_host", LAUNCH)]);
    assert!(matches!(
        v2.clone().into_event(),
        Event::ManifestFrozenV2(_)
    ));
    let Event::ManifestFrozenV3(e) = v3.clone().into_event() else {
        panic!("a [central.launch] freezes as manifest_frozen.v3");
    };
    assert_eq!(e.central_launch.as_ref().unwrap().subnet_id, "subnet-0a");
    // FREEZE-1: the launch is frozen, so another subnet is another manifest hash.
    let other = frozen_with(&[("daemon_host", &LAUNCH.replace("subnet-0a", "subnet-0b"))]);
    assert_ne!(
        v3.manifest_blake3, other.manifest_blake3,
        "FREEZE-1: the hash covers the launch"
    );
    assert_ne!(v3.manifest_blake3, v2.manifest_blake3, "FREEZE-1");
    // The lineage and control keys do not move (FREEZE-5, FREEZE-6 name no central host).
    assert_eq!(v3.lineage_key, v2.lineage_key);
    let s = state_of(vec![provisioned()]);
    assert!(
        managed(s.lineage(None).unwrap()),
        "FREEZE-8: a v3 lineage manages its host"
    );
    assert!(!managed(
        state_of(vec![v2.into_event()]).lineage(None).unwrap()
    ));
}

#[test]
fn a_launch_is_refused_for_a_reused_host_and_bounded() {
    let reuse = [
        (
            "mode = \"provision\"",
            "mode = \"reuse\"\ninstance_id = \"i-0abc\"",
        ),
        ("daemon_host", LAUNCH),
    ];
    let e = crate::method::freeze::freeze(
        &reuse
            .iter()
            .fold(EXAMPLE_MANIFEST.to_string(), |m, (a, b)| {
                replace_line(&m, a, b)
            }),
        "m",
        EXAMPLE_PRIVATE,
        "p",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("central.launch") && e.contains("never launched"),
        "{e}"
    );
    let groups = |n: usize| {
        let list: Vec<String> = (0..n).map(|i| format!("\"sg-{i}\"")).collect();
        LAUNCH.replace("[\"sg-0a\"]", &format!("[{}]", list.join(", ")))
    };
    let max = crate::limits::CENTRAL_SECURITY_GROUPS_MAX;
    let at = crate::method::freeze::freeze(
        &replace_line(EXAMPLE_MANIFEST, "daemon_host", &groups(max)),
        "m",
        EXAMPLE_PRIVATE,
        "p",
    );
    assert!(at.is_ok(), "{at:?}");
    for bad in [
        groups(max + 1),
        groups(0),
        LAUNCH.replace("300", "3601"),
        LAUNCH.replace("300", "0"),
    ] {
        let e = crate::method::freeze::freeze(
            &replace_line(EXAMPLE_MANIFEST, "daemon_host", &bad),
            "m",
            EXAMPLE_PRIVATE,
            "p",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("central.launch"), "{e}");
    }
    let limit = LAUNCH.replace(
        "300",
        &crate::limits::CENTRAL_READY_TIMEOUT_SEC_MAX.to_string(),
    );
    assert!(crate::method::freeze::freeze(
        &replace_line(EXAMPLE_MANIFEST, "daemon_host", &limit),
        "m",
        EXAMPLE_PRIVATE,
        "p"
    )
    .is_ok());
}

#[test]
fn up_launches_once_then_checks_the_recorded_host_and_adopts_a_lost_launch() {
    let mut events = vec![provisioned()];
    let s = state_of(events.clone());
    let l = s.lineage(None).unwrap();
    assert_eq!(up(l, &[]), Ok(Up::Launch));
    // A launch whose observation a kill lost: adopted, never a second (FREEZE-8).
    assert_eq!(up(l, &[host("i-lost")]), Ok(Up::Adopt("i-lost".into())));
    let two = up(l, &[host("i-a"), host("i-b")]).unwrap_err();
    assert_eq!(
        two.0,
        Rule::Verdict3,
        "VERDICT-3: two tagged central hosts: {}",
        two.1
    );
    // GATE-2: its vCPUs are still to come until an observation is recorded.
    assert!(still_to_come(l, None), "GATE-2");
    assert_eq!(
        excluded_id(l),
        None,
        "CLEAN-2: nothing excluded before it exists"
    );
    events.push(seen(&s, CentralAction::Launched, &host("i-0c")));
    let s = state_of(events.clone());
    let l = s.lineage(None).unwrap();
    assert_eq!(up(l, &[host("i-other")]), Ok(Up::Check("i-0c".into())));
    assert!(!still_to_come(l, None), "GATE-2: not counted once observed");
    assert!(
        still_to_come(l, Some(1)),
        "GATE-2: a quota taken before it still counted it"
    );
    assert_eq!(
        excluded_id(l).as_deref(),
        Some("i-0c"),
        "CLEAN-2: the recorded id only"
    );
    assert!(!teardown_due(l), "not before the last group");
}

#[test]
fn a_host_that_differs_from_the_frozen_one_fails_and_cannot_pass() {
    let s = state_of(vec![provisioned()]);
    let l = s.lineage(None).unwrap();
    let m = &l.frozen.manifest.public;
    let mut wrong = host("i-0c");
    wrong.ami = "ami-other".into();
    wrong.state = "stopped".into();
    wrong
        .tags
        .insert("benchledger:role".into(), "sandbox".into());
    let o = observation(
        m,
        CentralAction::Checked,
        "i-0c",
        Ok(Some(&wrong)),
        "us-east-1",
    );
    assert_eq!(o.status, Status::Fail, "FREEZE-8: {:?}", o.details);
    let why = &o.details["mismatches"];
    for part in ["AMI", "state", "role tag"] {
        assert!(why.contains(part), "FREEZE-8: {part} named: {why}");
    }
    let none = observation(m, CentralAction::Checked, "i-0c", Ok(None), "us-east-1");
    assert_eq!((none.status, none.target.as_str()), (Status::Fail, NO_HOST));
    // BIND-6: a pass its own details contradict is refused at append and
    // refuted against the frozen manifest when folded.
    let forged = CheckRecorded {
        status: Status::Pass,
        ..o.clone()
    };
    assert!(
        crate::schema::observation::flag_contradiction(&Event::CheckRecorded(forged.clone()))
            .is_some(),
        "BIND-6"
    );
    let mut quiet = forged;
    quiet.details.remove("mismatches");
    assert!(
        refutation(l, &quiet).is_some_and(|w| w.contains("AMI")),
        "BIND-6: refuted by its facts"
    );
}

#[test]
fn the_host_must_hold_the_address_every_sandbox_is_given() {
    let s = state_of(vec![provisioned()]);
    let l = s.lineage(None).unwrap();
    let m = &l.frozen.manifest.public;
    let mut elsewhere = host("i-0c");
    elsewhere.private_ip = Some("10.20.0.11".into());
    let o = observation(
        m,
        CentralAction::Checked,
        "i-0c",
        Ok(Some(&elsewhere)),
        "us-east-1",
    );
    assert_eq!(o.status, Status::Fail, "GATE-3: {:?}", o.details);
    assert!(
        o.details["mismatches"].contains("private address \"10.20.0.11\"")
            && o.details["mismatches"].contains("daemon_host 10.20.0.10"),
        "GATE-3: {:?}",
        o.details
    );
    // Refuted from its own details when a pass claims otherwise (BIND-6).
    let mut forged = o.clone();
    forged.status = Status::Pass;
    forged.details.remove("mismatches");
    assert!(
        refutation(l, &forged).is_some_and(|w| w.contains("private address")),
        "GATE-3, BIND-6"
    );
    let mut none = host("i-0c");
    none.private_ip = None;
    let o = observation(
        m,
        CentralAction::Checked,
        "i-0c",
        Ok(Some(&none)),
        "us-east-1",
    );
    assert_eq!(o.status, Status::Fail, "GATE-3: a host without an address");
    let at = observation(
        m,
        CentralAction::Checked,
        "i-0c",
        Ok(Some(&host("i-0c"))),
        "us-east-1",
    );
    assert_eq!(at.status, Status::Pass, "GATE-3: {:?}", at.details);
    // What a sandbox cannot be given for another host is not checked: a
    // loopback address (a test topology beside the daemon) or a name.
    use crate::schema::central::sandbox_address;
    assert_eq!(sandbox_address("127.0.0.1"), None);
    assert_eq!(sandbox_address("[::1]"), None);
    assert_eq!(sandbox_address("0.0.0.0"), None);
    assert_eq!(sandbox_address("bro.internal"), None);
    assert_eq!(
        sandbox_address("[fd00::10]")
            .map(|a| a.to_string())
            .as_deref(),
        Some("fd00::10")
    );
}

#[test]
fn teardown_is_due_after_the_last_group_or_a_hard_stop_and_only_once() {
    let s0 = state_of(vec![provisioned()]);
    let up_seen = seen(&s0, CentralAction::Launched, &host("i-0c"));
    let stop = Event::LineageStopped(LineageStopped {
        lineage: "short13-kimi-2026-11".into(),
        rule: Rule::Gate1.into(),
        reason: "x".into(),
        evidence_seq: None,
    });
    let s = state_of(vec![provisioned(), up_seen.clone(), stop.clone()]);
    let l = s.lineage(None).unwrap();
    assert!(
        teardown_due(l),
        "VERDICT-3: a hard stop still tears down what was provisioned"
    );
    assert!(up(l, &[]).is_err_and(|(r, _)| r == Rule::Verdict3));
    let down = Event::CheckRecorded(teardown(
        l,
        "i-0c",
        "i-0c: ok: shutting-down",
        Ok(0),
        "us-east-1",
    ));
    let s = state_of(vec![provisioned(), up_seen.clone(), stop, down]);
    let l = s.lineage(None).unwrap();
    assert!(torn_down(l).is_some() && !teardown_due(l), "CLEAN-3: once");
    assert_eq!(
        excluded_id(l).as_deref(),
        Some("i-0c"),
        "CLEAN-2: a sealed verdict never changes with the teardown"
    );
    // A teardown that found a host left does not count.
    let left = teardown(l, "i-0c", "x", Ok(1), "us-east-1");
    assert_eq!(left.status, Status::Fail, "CLEAN-1");
    // Without a launch frozen, nothing is benchledger's to tear down.
    let v2 = state_of(vec![frozen_with(&[]).into_event()]);
    assert!(!teardown_due(v2.lineage(None).unwrap()));
    assert_eq!(
        up(v2.lineage(None).unwrap(), &[]).unwrap_err().0,
        Rule::Freeze8
    );
}

#[test]
fn a_reused_host_is_checked_by_its_frozen_id_and_always_excluded() {
    let s = state_of(vec![frozen_with(&[(
        "mode = \"provision\"",
        "mode = \"reuse\"\ninstance_id = \"i-0reuse\"",
    )])
    .into_event()]);
    let l = s.lineage(None).unwrap();
    assert!(managed(l), "FREEZE-8");
    assert_eq!(up(l, &[host("i-x")]), Ok(Up::Check("i-0reuse".into())));
    assert!(
        !still_to_come(l, None),
        "GATE-2: a reused host is never to come"
    );
    assert_eq!(excluded_id(l).as_deref(), Some("i-0reuse"), "CLEAN-2");
    let m = &l.frozen.manifest.public;
    let other = observation(
        m,
        CentralAction::Checked,
        "i-0reuse",
        Ok(Some(&host("i-x"))),
        "r",
    );
    assert!(
        other.details["mismatches"].contains("instance id"),
        "FREEZE-8"
    );
    // A reused host carries no run tag of this lineage; only its role tag is frozen.
    let mut h = host("i-0reuse");
    h.tags.remove("benchledger:run");
    let ok = observation(m, CentralAction::Checked, "i-0reuse", Ok(Some(&h)), "r");
    assert_eq!(ok.status, Status::Pass, "{:?}", ok.details);
    assert!(
        !teardown_due(l),
        "CLEAN-2: a reused host is never torn down"
    );
}

/// CLASS-1: a task left out before the freeze is frozen with its reason
/// (a v3 manifest whose hash covers it), never also in the task list.
#[test]
fn a_task_excluded_before_the_run_is_frozen_with_its_reason() {
    let with = |extra: &str| {
        crate::method::freeze::freeze(
            &format!("{EXAMPLE_MANIFEST}\n{extra}"),
            "m",
            EXAMPLE_PRIVATE,
            "p",
        )
    };
    let one = "[[cases.excluded]]\ntask = \"sqlite-db-truncate\"\nreason = \"provider 502 in preflight\"\n";
    let frozen = with(one).unwrap();
    let Event::ManifestFrozenV3(e) = frozen.clone().into_event() else {
        panic!("CLASS-1: an exclusion freezes as manifest_frozen.v3");
    };
    assert_eq!(
        (
            e.excluded_tasks[0].task.as_str(),
            e.central_launch.is_none()
        ),
        ("sqlite-db-truncate", true)
    );
    let other = with(&one.replace("502", "503")).unwrap();
    assert_ne!(
        frozen.manifest_blake3, other.manifest_blake3,
        "FREEZE-1: the reason is frozen"
    );
    let s = state_of(vec![frozen.into_event()]);
    assert_eq!(s.lineage(None).unwrap().excluded_tasks.len(), 1, "CLASS-1");
    for (bad, field) in [
        (
            one.replace("sqlite-db-truncate", "fix-git"),
            "cases.excluded[0].task",
        ),
        (format!("{one}{one}"), "cases.excluded[1].task"),
        (
            one.replace("provider 502 in preflight", ""),
            "cases.excluded[0].reason",
        ),
        (
            one.replace(
                "provider 502 in preflight",
                &"x".repeat(crate::limits::EXCLUSION_REASON_BYTES_MAX + 1),
            ),
            "cases.excluded[0].reason",
        ),
    ] {
        let e = with(&bad).unwrap_err().to_string();
        assert!(e.contains(field), "CLASS-1: {field}: {e}");
    }
    let at_bound = one.replace(
        "provider 502 in preflight",
        &"x".repeat(crate::limits::EXCLUSION_REASON_BYTES_MAX),
    );
    assert!(with(&at_bound).is_ok(), "CLASS-1: a reason at the bound");
}
