//! Given events / when command / then events or refusal. No store.

use super::*;
use crate::error::Error;
use crate::method::projections::{At, CaseStatus, State};
use crate::schema::events::{Event, ManifestFrozenV2, ManifestSignedOff, SignOffRole};
use crate::schema::verdict::VerdictStatus;
use crate::testkit::examples::{frozen as example, EXAMPLE_MANIFEST as EXAMPLE, EXAMPLE_PRIVATE};

fn given(events: &[Event]) -> State {
    let mut s = State::default();
    for (i, e) in events.iter().enumerate() {
        s.apply(
            At {
                seq: i as u64 + 1,
                utc_ns: 1_000 * (i as u64 + 1),
            },
            e,
        );
    }
    s
}

fn frozen_event() -> Event {
    Event::ManifestFrozenV2(Box::new(example()))
}

/// A second, fully separate lineage (new label, tag, paths, ports, job names).
fn other_lineage(extra_from: &str, extra_to: &str) -> ManifestFrozenV2 {
    let public = EXAMPLE
        .replace("short13-kimi-2026-11", "short13-kimi-2026-12")
        .replace("= [187", "= [197")
        .replacen(extra_from, extra_to, 1);
    let private = EXAMPLE_PRIVATE.replace("short13-kimi-2026-11", "short13-kimi-2026-12");
    crate::method::freeze::freeze(&public, "m2", &private, "p2")
        .unwrap()
        .v2
}

fn rule(r: Result<Vec<Event>>) -> &'static str {
    match r {
        Err(Error::Refused { rule, .. }) => rule.as_str(),
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

/// The example lineage's sign-off for `role` signed with the example key
/// `who` (`alice` is the frozen operator, `bob` the reviewer).
fn signed_by(
    s: &State,
    role: SignOffRole,
    who: &str,
) -> crate::schema::events::ManifestSignedOffV2 {
    let key = crate::testkit::examples::signer(who);
    crate::method::trust::sign_sign_off(s.lineage(None).unwrap(), role, &key).unwrap()
}

#[test]
fn operator_and_reviewer_sign_off_once_each_with_their_listed_keys() {
    // rule FREEZE-7, rule TRUST-3
    let s = given(&[frozen_event()]);
    let op = sign_off_signed(&s, signed_by(&s, SignOffRole::Operator, "alice")).unwrap();
    let s = given(&[frozen_event(), op[0].clone()]);
    assert!(!s.lineage(None).unwrap().signed_off());
    assert_eq!(
        rule(sign_off_signed(
            &s,
            signed_by(&s, SignOffRole::Operator, "alice")
        )),
        "FREEZE-7"
    );
    let rev = sign_off_signed(&s, signed_by(&s, SignOffRole::Reviewer, "bob")).unwrap();
    let s = given(&[frozen_event(), op[0].clone(), rev[0].clone()]);
    assert!(s.lineage(None).unwrap().signed_off());
    let Event::ManifestSignedOffV2(e) = &rev[0] else {
        panic!()
    };
    assert_eq!(e.manifest_blake3, example().manifest_blake3);
    assert_eq!((e.key_name.as_str(), e.key_id.len()), ("bob", 8));
}

#[test]
fn a_key_outside_the_list_a_forged_signature_or_one_key_in_both_roles_never_counts() {
    // rule TRUST-3, rule FREEZE-7
    let s = given(&[frozen_event()]);
    // The reviewer's key as operator, an unlisted key, a forged signature.
    assert_eq!(
        rule(sign_off_signed(
            &s,
            signed_by(&s, SignOffRole::Operator, "bob")
        )),
        "TRUST-3"
    );
    assert_eq!(
        rule(sign_off_signed(
            &s,
            signed_by(&s, SignOffRole::Operator, "carol")
        )),
        "TRUST-3"
    );
    let mut forged = signed_by(&s, SignOffRole::Operator, "alice");
    forged.signature = signed_by(&s, SignOffRole::Reviewer, "alice").signature;
    assert_eq!(rule(sign_off_signed(&s, forged.clone())), "TRUST-3");
    let mut other_hash = signed_by(&s, SignOffRole::Operator, "alice");
    other_hash.manifest_blake3 = "00".repeat(32);
    assert_eq!(rule(sign_off_signed(&s, other_hash)), "TRUST-3");
    // A forged record in the log is ignored by the fold.
    let s = given(&[frozen_event(), Event::ManifestSignedOffV2(forged)]);
    assert!(s.lineage(None).unwrap().sign_off_keys.is_empty());
    // One key listed in both roles (a manifest the freeze would refuse):
    // the second role's sign-off with it does not count.
    let mut both = example();
    both.plan.signers.reviewers = both.plan.signers.operators.clone();
    let both = Event::ManifestFrozenV2(Box::new(both));
    let s = given(std::slice::from_ref(&both));
    let op = sign_off_signed(&s, signed_by(&s, SignOffRole::Operator, "alice")).unwrap();
    let s = given(&[both, op[0].clone()]);
    let r = sign_off_signed(&s, signed_by(&s, SignOffRole::Reviewer, "alice"));
    assert_eq!(rule(r), "TRUST-3");
}

#[test]
fn a_bare_name_never_signs_off_a_lineage_that_lists_signers() {
    // rule TRUST-3
    let s = given(&[frozen_event()]);
    assert_eq!(
        rule(sign_off(&s, None, SignOffRole::Operator, "alice")),
        "TRUST-3"
    );
    // A name-only record (as ledgers before signed sign-offs hold it) is
    // still read, and listed, but never satisfies FREEZE-7 for v2.
    let s = given(&[
        frozen_event(),
        Event::ManifestSignedOff(ManifestSignedOff {
            lineage: "short13-kimi-2026-11".into(),
            manifest_blake3: example().manifest_blake3,
            role: SignOffRole::Operator,
            name: "alice".into(),
        }),
        Event::ManifestSignedOff(ManifestSignedOff {
            lineage: "short13-kimi-2026-11".into(),
            manifest_blake3: example().manifest_blake3,
            role: SignOffRole::Reviewer,
            name: "bob".into(),
        }),
    ]);
    let l = s.lineage(None).unwrap();
    assert_eq!(l.sign_offs.len(), 2);
    assert!(!l.signed_off());
}

#[test]
fn sign_off_needs_a_frozen_lineage() {
    assert!(matches!(
        sign_off(&given(&[]), None, SignOffRole::Operator, "a"),
        Err(Error::Input(_))
    ));
    let s = given(&[frozen_event()]);
    assert!(matches!(
        sign_off(&s, Some("nope"), SignOffRole::Operator, "a"),
        Err(Error::Input(_))
    ));
    let mut elsewhere = signed_by(&s, SignOffRole::Operator, "alice");
    elsewhere.lineage = "nope".into();
    assert!(matches!(
        sign_off_signed(&s, elsewhere),
        Err(Error::Input(_))
    ));
}

#[test]
fn with_two_lineages_a_label_is_required() {
    let s = given(&[
        frozen_event(),
        Event::ManifestFrozenV2(Box::new(other_lineage("", ""))),
    ]);
    assert!(matches!(
        sign_off(&s, None, SignOffRole::Operator, "a"),
        Err(Error::Input(_))
    ));
    assert_eq!(
        rule(sign_off(
            &s,
            Some("short13-kimi-2026-12"),
            SignOffRole::Operator,
            "a"
        )),
        "TRUST-3"
    );
}

// --- groups and cases (issue: case lifecycle) -------------------------------

mod lifecycle {
    use super::*;
    use crate::schema::events::*;
    use std::collections::BTreeMap;

    const L: &str = "short13-kimi-2026-11";
    const CFG: &str = "c0nf";

    fn gref(g: &str) -> GroupRef {
        GroupRef {
            lineage: L.into(),
            group: g.into(),
        }
    }

    fn case(task: &str, trial: &str, replacement: u8) -> CaseRef {
        CaseRef {
            task: task.into(),
            trial: trial.into(),
            replacement,
        }
    }

    fn signed() -> Vec<Event> {
        let s = given(&[frozen_event()]);
        vec![
            frozen_event(),
            Event::ManifestSignedOffV2(signed_by(&s, SignOffRole::Operator, "alice")),
            Event::ManifestSignedOffV2(signed_by(&s, SignOffRole::Reviewer, "bob")),
        ]
    }

    fn open_cmd(group: &str) -> GroupOpen {
        let m = example().manifest.public;
        let g = m.groups.iter().find(|g| g.name == group).unwrap().clone();
        GroupOpen {
            lineage: None,
            group: group.into(),
            binary_sha256: m.software.bitrouter_binary_sha256.clone(),
            config_sha256: m.software.bitrouter_config_sha256[group].clone(),
            ports: g.ports,
            db_path: g.db_path,
            out_dir: g.out_dir,
        }
    }

    fn opened(group: &str) -> Event {
        let c = open_cmd(group);
        Event::GroupOpened(GroupOpened {
            group: gref(group),
            binary_sha256: c.binary_sha256,
            config_sha256: c.config_sha256,
            ports: c.ports,
            db_path: c.db_path,
            out_dir: c.out_dir,
        })
    }

    /// GATE-2's frozen requirement (BIND-6 re-derives it): concurrency x
    /// sandbox vCPU + headroom.
    fn required_vcpu() -> u64 {
        let m = example().manifest.public;
        u64::from(m.limits.concurrency) * m.sandbox.vcpu + m.aws.quota_headroom_vcpu
    }

    /// A check with the numbers that earn its status (BIND-6, BIND-7).
    fn check(kind: CheckKind, group: Option<&str>, target: &str, status: Status) -> Event {
        let mut details = BTreeMap::new();
        let mut put = |k: &str, v: String| {
            details.insert(k.to_string(), v);
        };
        match kind {
            CheckKind::Residue => put("sandbox_count", "0".into()),
            CheckKind::DaemonHealth | CheckKind::ProviderSentinel => {
                put("http_status", "200".into());
            }
            CheckKind::ConfigValidated => {
                if let Event::ManifestFrozenV2(f) = frozen_event() {
                    let v = f.plan.binding.validator;
                    put("program_blake3", v.program_blake3);
                }
                put("exit_code", "0".into());
            }
            _ => {}
        }
        Event::CheckRecorded(CheckRecorded {
            lineage: L.into(),
            group: group.map(Into::into),
            check: kind,
            target: target.into(),
            status,
            details,
        })
    }

    /// Every gate a start of `group` needs, passing.
    fn gates(group: &str) -> Vec<Event> {
        let mut v = vec![
            Event::IdentityChecked(IdentityChecked {
                lineage: L.into(),
                selector: "profile:bench-operator".into(),
                region: "us-east-1".into(),
                endpoint_override: None,
                ambient_variables_ignored: vec![],
                account: Some(example().manifest.private.account),
                principal: Some(example().manifest.private.principal_arn),
                status: Status::Pass,
                error: None,
            }),
            Event::QuotaChecked(QuotaChecked {
                lineage: L.into(),
                region: "us-east-1".into(),
                quota_code: "L-1216C47A".into(),
                quota_vcpu: 64,
                used_vcpu: 0,
                available_vcpu: 64,
                required_vcpu: required_vcpu(),
                status: Status::Pass,
                error: None,
            }),
            check(CheckKind::Residue, Some(group), "run-tag", Status::Pass),
            check(
                CheckKind::DaemonHealth,
                Some(group),
                "http://10.20.0.10/health",
                Status::Pass,
            ),
            check(CheckKind::ConfigValidated, None, CFG, Status::Pass),
        ];
        for r in example().manifest.public.routes {
            v.push(check(
                CheckKind::ProviderSentinel,
                None,
                &r.gate_target,
                Status::Pass,
            ));
        }
        v
    }

    fn sealed(group: &str, status: VerdictStatus) -> Event {
        Event::GroupSealed(GroupSealed {
            group: gref(group),
            status: status.into(),
            rows: vec![],
            skipped_security_policy: vec![],
            projection_version: 1,
        })
    }

    fn feedback(group: &str) -> Event {
        Event::FeedbackApplied(FeedbackApplied {
            group: gref(group),
            policy_snapshot_before: "a".into(),
            policy_snapshot_after: "b".into(),
        })
    }

    /// The frozen rendering of a case's TrialConfig: its BLAKE3 and its
    /// content digest (BIND-1 compares a result's embedded config with it).
    fn rendered(group: &str, c: &CaseRef) -> (String, String) {
        let m = example().manifest.public;
        let r = crate::method::trial_config::render(&m, group, c).unwrap();
        let content = crate::schema::trial_content::content_blake3(&r.config);
        (r.blake3, content)
    }

    /// A result that binds to its launch (BIND-1): the frozen task checksum,
    /// the launched config's content, timestamps inside the launch window.
    fn result(group: &str, c: CaseRef, reward: Option<&str>, exception: Option<&str>) -> Event {
        let Event::TrialResultRecorded(v1) = result_v1(group, c.clone(), reward, exception) else {
            unreachable!()
        };
        let mut r = v1.to_v2();
        let m = example().manifest.public;
        r.task_checksum = crate::method::binding::frozen_task_checksum(&m, group, &c.task)
            .unwrap()
            .into();
        r.config_content_blake3 = rendered(group, &c).1;
        r.started_at = Some("1970-01-01T00:00:00Z".into());
        r.finished_at = Some("1970-01-01T00:00:00Z".into());
        Event::TrialResultRecordedV2(Box::new(r))
    }

    fn started(group: &str, c: CaseRef) -> Event {
        let trial_config_blake3 = rendered(group, &c).0;
        Event::CaseStarted(CaseStarted {
            group: gref(group),
            case: c,
            trial_name: "t".into(),
            trial_config_blake3,
            gate_seqs: vec![],
            command: vec![],
        })
    }

    /// A `trial_result_recorded.v1` as ingest wrote it before BIND-1.
    fn result_v1(group: &str, c: CaseRef, reward: Option<&str>, exception: Option<&str>) -> Event {
        Event::TrialResultRecorded(Box::new(TrialResultRecorded {
            group: gref(group),
            case: c,
            trial_name: "t".into(),
            attempt_id: "a".into(),
            task_name: "x".into(),
            task_id: HarborTaskId {
                git_url: None,
                git_commit_id: None,
                path: Some("x".into()),
                org: None,
                name: None,
                git_ref: None,
            },
            source: None,
            task_checksum: "c".into(),
            agent: "terminus-2@2.0.0".into(),
            model: None,
            rewards: reward.map(|r| {
                [("reward".to_string(), r.to_string())]
                    .into_iter()
                    .collect()
            }),
            exception_type: exception.map(Into::into),
            exception_message_blake3: None,
            started_at: None,
            finished_at: None,
            n_input_tokens: None,
            n_cache_tokens: None,
            n_output_tokens: None,
            config_blake3: "c".into(),
            result_path: "r".into(),
            result_blake3: "r".into(),
        }))
    }

    fn refusal(group: &str, c: CaseRef, class: RefusalClass, http_status: u16) -> Event {
        Event::SecurityRefusalRecorded(SecurityRefusalRecorded {
            group: gref(group),
            case: c,
            class,
            http_status,
            request_id: None,
            evidence_blake3: "e".into(),
        })
    }

    fn start_cmd(group: &str, c: CaseRef, now_seq: u64) -> CaseStart {
        CaseStart {
            lineage: None,
            group: group.into(),
            case: c,
            trial_name: "t".into(),
            trial_config_blake3: CFG.into(),
            command: vec![],
            now_utc_ns: 1_000 * now_seq,
        }
    }

    /// A lineage whose canary is accepted and whose control is open with
    /// every gate passing.
    fn control_ready() -> Vec<Event> {
        let mut e = signed();
        e.push(opened("canary-1"));
        e.push(sealed("canary-1", VerdictStatus::Accepted));
        e.push(opened("control"));
        e.extend(gates("control"));
        e
    }

    fn start(events: &[Event], group: &str, c: CaseRef) -> Result<Vec<Event>> {
        let now = events.len() as u64 + 1;
        case_start(&given(events), start_cmd(group, c, now))
    }

    #[test]
    fn case_start_rejudges_a_quota_pass_from_its_numbers_bind_6() {
        // rule BIND-6 (issue 16 item 9): a quota observation recorded as
        // pass with 11 vCPUs required and available, when the frozen GATE-2
        // formula needs 12, does not count at case start.
        let c = case("fix-git", "t1", 0);
        let mut e = control_ready();
        assert!(start(&e, "control", c.clone()).is_ok());
        let short = required_vcpu() - 1;
        e.push(Event::QuotaChecked(QuotaChecked {
            lineage: L.into(),
            region: "us-east-1".into(),
            quota_code: "L-1216C47A".into(),
            quota_vcpu: short,
            used_vcpu: 0,
            available_vcpu: short,
            required_vcpu: short,
            status: Status::Pass,
            error: None,
        }));
        assert_eq!(rule(start(&e, "control", c)), "BIND-6");
    }

    #[test]
    fn a_canary_starts_once_every_gate_holds_without_sign_off() {
        // rule GATE-6, rule FREEZE-7 (sign-off is for scored groups)
        let mut e = vec![frozen_event(), opened("canary-1")];
        e.extend(gates("canary-1"));
        let out = start(&e, "canary-1", case("hello-world", "c1", 0)).unwrap();
        let Event::CaseStarted(s) = &out[0] else {
            panic!("{out:?}")
        };
        assert_eq!(s.group, gref("canary-1"));
        assert_eq!(
            s.gate_seqs.len(),
            8,
            "identity, quota, residue, health, config, three sentinels"
        );
    }

    #[test]
    fn a_scored_case_needs_both_sign_offs() {
        // rule FREEZE-7
        let mut e = control_ready();
        e.remove(2); // the reviewer's sign-off
        assert_eq!(
            rule(start(&e, "control", case("fix-git", "t1", 0))),
            "FREEZE-7"
        );
        assert!(start(&control_ready(), "control", case("fix-git", "t1", 0)).is_ok());
    }

    #[test]
    fn the_group_must_be_targeted_open_and_not_closed() {
        // rule LINEAGE-1, rule GATE-4, rule CASE-9
        let e = control_ready();
        assert_eq!(rule(start(&e, "r3", case("fix-git", "t1", 0))), "LINEAGE-1");
        let mut not_open = signed();
        not_open.push(opened("canary-1"));
        not_open.push(sealed("canary-1", VerdictStatus::Accepted));
        not_open.extend(gates("control"));
        assert_eq!(
            rule(start(&not_open, "control", case("fix-git", "t1", 0))),
            "GATE-4"
        );
        let mut closed = control_ready();
        closed.push(Event::GroupClosed(GroupClosed {
            group: gref("control"),
        }));
        assert_eq!(
            rule(start(&closed, "control", case("fix-git", "t1", 0))),
            "CASE-9"
        );
    }

    #[test]
    fn only_identities_of_the_frozen_manifest_start() {
        // rule CASE-8
        let e = control_ready();
        assert_eq!(
            rule(start(&e, "control", case("not-a-task", "t1", 0))),
            "CASE-8"
        );
        assert_eq!(
            rule(start(&e, "control", case("fix-git", "t9", 0))),
            "CASE-8"
        );
        assert_eq!(
            rule(start(&e, "control", case("hello-world", "c1", 0))),
            "CASE-8",
            "canary identities never enter a scored group"
        );
    }

    #[test]
    fn a_started_identity_is_consumed_forever() {
        // rule CASE-2, rule CASE-1
        let mut e = control_ready();
        e.push(started("control", case("fix-git", "t1", 0)));
        assert_eq!(
            rule(start(&e, "control", case("fix-git", "t1", 0))),
            "CASE-2"
        );
        e.push(result(
            "control",
            case("fix-git", "t1", 0),
            None,
            Some("RuntimeError"),
        ));
        assert_eq!(
            rule(start(&e, "control", case("fix-git", "t1", 0))),
            "CASE-2",
            "a failed case is still consumed"
        );
    }

    #[test]
    fn every_gate_must_be_recorded_passing_and_fresh() {
        // rule GATE-1, rule GATE-2, rule GATE-3, rule GATE-6, rule GATE-7
        let base = control_ready();
        let gate_at = |rule_id: &str| -> Vec<usize> {
            base.iter()
                .enumerate()
                .filter(|(_, e)| match (rule_id, e) {
                    ("GATE-1", Event::IdentityChecked(_)) | ("GATE-2", Event::QuotaChecked(_)) => {
                        true
                    }
                    // Control needs only the strong route's sentinel (LINEAGE-8).
                    ("GATE-3", Event::CheckRecorded(c)) => {
                        c.check != CheckKind::ConfigValidated
                            && c.group.as_deref() != Some("canary-1")
                            && (c.check != CheckKind::ProviderSentinel
                                || c.target == "anthropic:claude-sonnet-4-5")
                    }
                    ("GATE-7", Event::CheckRecorded(c)) => c.check == CheckKind::ConfigValidated,
                    _ => false,
                })
                .map(|(i, _)| i)
                .collect()
        };
        for r in ["GATE-1", "GATE-2", "GATE-3", "GATE-7"] {
            for i in gate_at(r) {
                // Missing.
                let mut e = base.clone();
                e.remove(i);
                assert_eq!(
                    rule(start(&e, "control", case("fix-git", "t1", 0))),
                    r,
                    "missing gate {i}"
                );
                // Failed: a later failing observation of the same gate wins.
                let mut e = base.clone();
                let failed = match &base[i] {
                    Event::IdentityChecked(x) => Event::IdentityChecked(IdentityChecked {
                        status: Status::Fail,
                        ..x.clone()
                    }),
                    Event::QuotaChecked(x) => Event::QuotaChecked(QuotaChecked {
                        status: Status::Fail,
                        ..x.clone()
                    }),
                    Event::CheckRecorded(x) => Event::CheckRecorded(CheckRecorded {
                        status: Status::Fail,
                        ..x.clone()
                    }),
                    _ => unreachable!(),
                };
                e.push(failed);
                assert_eq!(
                    rule(start(&e, "control", case("fix-git", "t1", 0))),
                    r,
                    "failed gate {i}"
                );
            }
        }
        // Stale: everything older than the 1800 s window.
        let mut cmd = start_cmd("control", case("fix-git", "t1", 0), 0);
        cmd.now_utc_ns = 1_801 * 1_000_000_000 + 1_000 * base.len() as u64;
        assert_eq!(rule(case_start(&given(&base), cmd)), "GATE-1");
        // A config other than the validated one.
        let mut cmd = start_cmd("control", case("fix-git", "t1", 0), base.len() as u64 + 1);
        cmd.trial_config_blake3 = "other".into();
        assert_eq!(rule(case_start(&given(&base), cmd)), "GATE-7");
        // A sentinel for one exact target never stands in for another (PLANE-2).
        let mut e = base.clone();
        e.push(check(
            CheckKind::ProviderSentinel,
            None,
            "anthropic:claude-sonnet-4-5",
            Status::Fail,
        ));
        assert_eq!(
            rule(start(&e, "control", case("fix-git", "t1", 0))),
            "GATE-3"
        );
    }

    #[test]
    fn concurrency_counts_started_cases_that_are_not_terminal() {
        // rule CASE-7
        let mut e = control_ready();
        e.push(started("control", case("fix-git", "t1", 0)));
        assert_eq!(
            rule(start(&e, "control", case("regex-log", "t1", 0))),
            "CASE-7"
        );
        e.push(result(
            "control",
            case("fix-git", "t1", 0),
            Some("1.0"),
            None,
        ));
        assert!(start(&e, "control", case("regex-log", "t1", 0)).is_ok());
    }

    #[test]
    fn scored_work_needs_an_accepted_canary() {
        // rule GATE-5
        let mut e = signed();
        e.push(opened("canary-1"));
        e.push(sealed("canary-1", VerdictStatus::Accepted));
        e.push(opened("control"));
        e.extend(gates("control"));
        // The projection ignores a rejection recorded after acceptance
        // (VERDICT-4: the first seal is final), so build the rejected case
        // afresh.
        let mut rejected = signed();
        rejected.push(opened("canary-1"));
        rejected.push(sealed("canary-1", VerdictStatus::RejectedCleanup));
        rejected.extend(gates("control"));
        let s = given(&rejected);
        assert_eq!(
            rule(group_open(&s, open_cmd("control"))),
            "GATE-5",
            "control opens only after an accepted canary"
        );
        assert!(start(&e, "control", case("fix-git", "t1", 0)).is_ok());
    }

    #[test]
    fn rounds_open_in_order_after_acceptance_and_feedback() {
        // rule LINEAGE-2, rule LINEAGE-5
        let mut e = control_ready();
        assert_eq!(
            rule(group_open(&given(&e), open_cmd("r1"))),
            "LINEAGE-2",
            "control not sealed"
        );
        e.push(sealed("control", VerdictStatus::RejectedJoin));
        assert_eq!(
            rule(group_open(&given(&e), open_cmd("r1"))),
            "LINEAGE-2",
            "control rejected"
        );
        let mut e = control_ready();
        e.push(sealed("control", VerdictStatus::Accepted));
        assert_eq!(group_open(&given(&e), open_cmd("r1")).unwrap().len(), 1);
        e.push(opened("r1"));
        e.push(sealed("r1", VerdictStatus::Accepted));
        assert_eq!(
            rule(group_open(&given(&e), open_cmd("r2"))),
            "LINEAGE-2",
            "r2 needs r1's feedback"
        );
        e.push(feedback("r1"));
        assert_eq!(group_open(&given(&e), open_cmd("r2")).unwrap().len(), 1);
    }

    #[test]
    fn group_open_values_must_equal_the_frozen_manifest() {
        // rule GATE-4, rule FREEZE-4
        let mut e = signed();
        e.push(opened("canary-1"));
        e.push(sealed("canary-1", VerdictStatus::Accepted));
        let s = given(&e);
        assert_eq!(
            rule(group_open(
                &s,
                GroupOpen {
                    binary_sha256: "0".repeat(64),
                    ..open_cmd("control")
                }
            )),
            "GATE-4"
        );
        assert_eq!(
            rule(group_open(
                &s,
                GroupOpen {
                    config_sha256: "0".repeat(64),
                    ..open_cmd("control")
                }
            )),
            "GATE-4"
        );
        assert_eq!(
            rule(group_open(
                &s,
                GroupOpen {
                    ports: vec![9999],
                    ..open_cmd("control")
                }
            )),
            "FREEZE-4"
        );
        assert_eq!(
            rule(group_open(
                &s,
                GroupOpen {
                    db_path: "/tmp/x".into(),
                    ..open_cmd("control")
                }
            )),
            "FREEZE-4"
        );
        assert_eq!(
            rule(group_open(&s, open_cmd("canary-1"))),
            "FREEZE-4",
            "opened twice"
        );
        assert_eq!(group_open(&s, open_cmd("control")).unwrap().len(), 1);
    }

    #[test]
    fn group_close_once_after_open() {
        // rule CASE-9
        let e = control_ready();
        assert_eq!(group_close(&given(&e), None, "control").unwrap().len(), 1);
        assert_eq!(rule(group_close(&given(&e), None, "r1")), "CASE-9");
        let mut closed = e.clone();
        closed.push(Event::GroupClosed(GroupClosed {
            group: gref("control"),
        }));
        assert_eq!(
            rule(group_close(&given(&closed), None, "control")),
            "CASE-9"
        );
    }

    #[test]
    fn a_stopped_lineage_launches_nothing() {
        // rule VERDICT-3
        let mut e = control_ready();
        e.push(Event::LineageStopped(LineageStopped {
            lineage: L.into(),
            rule: crate::schema::rule::Rule::Gate4.into(),
            reason: "binary differs".into(),
            evidence_seq: None,
        }));
        assert_eq!(
            rule(start(&e, "control", case("fix-git", "t1", 0))),
            "VERDICT-3"
        );
        assert_eq!(rule(group_open(&given(&e), open_cmd("r1"))), "VERDICT-3");
    }

    #[test]
    fn replacement_01_only_after_a_refused_original_and_never_a_third() {
        // rule CASE-6
        let c0 = case("password-recovery", "t1", 0);
        let c1 = case("password-recovery", "t1", 1);
        let mut e = control_ready();
        assert_eq!(
            rule(start(&e, "control", c1.clone())),
            "CASE-6",
            "original not started"
        );
        e.push(started("control", c0.clone()));
        e.push(result("control", c0.clone(), None, Some("RuntimeError")));
        assert_eq!(
            rule(start(&e, "control", c1.clone())),
            "CASE-6",
            "no 403 evidence"
        );
        let mut with_429 = e.clone();
        with_429.push(refusal(
            "control",
            c0.clone(),
            RefusalClass::ProviderPolicyRefusal,
            429,
        ));
        assert_eq!(
            rule(start(&with_429, "control", c1.clone())),
            "CASE-6",
            "429 is never a security refusal"
        );
        e.push(refusal(
            "control",
            c0.clone(),
            RefusalClass::ProviderPolicyRefusal,
            403,
        ));
        assert!(start(&e, "control", c1.clone()).is_ok());
        assert_eq!(
            rule(start(&e, "control", case("password-recovery", "t1", 2))),
            "CASE-6"
        );
        // A valid original result never allows a replacement.
        let mut valid = control_ready();
        valid.push(started("control", c0.clone()));
        valid.push(result("control", c0.clone(), Some("0.0"), None));
        valid.push(refusal(
            "control",
            c0,
            RefusalClass::ProviderPolicyRefusal,
            403,
        ));
        assert_eq!(rule(start(&valid, "control", c1.clone())), "CASE-6");
        // And only when the frozen manifest enables the skip.
        let disabled = crate::method::freeze::freeze(
            &EXAMPLE.replace(
                "security_skip_enabled = true",
                "security_skip_enabled = false",
            ),
            "m",
            EXAMPLE_PRIVATE,
            "p",
        )
        .unwrap();
        let disabled = Event::ManifestFrozenV2(Box::new(disabled.v2));
        let s = given(std::slice::from_ref(&disabled));
        let mut d = vec![
            disabled,
            Event::ManifestSignedOffV2(signed_by(&s, SignOffRole::Operator, "alice")),
            Event::ManifestSignedOffV2(signed_by(&s, SignOffRole::Reviewer, "bob")),
        ];
        d.extend(e.into_iter().skip(3));
        assert_eq!(rule(start(&d, "control", c1)), "CASE-6");
    }

    #[test]
    fn terminal_validity_follows_the_trial_result() {
        // rule CASE-3
        let accepted = vec!["AgentTimeoutError".to_string()];
        let status = |reward: Option<&str>, exception: Option<&str>| {
            let s = given(&[
                frozen_event(),
                started("control", case("fix-git", "t1", 0)),
                result("control", case("fix-git", "t1", 0), reward, exception),
            ]);
            s.lineages[L].groups["control"].cases[&case("fix-git", "t1", 0)].status(&accepted)
        };
        assert_eq!(status(Some("1.0"), None), CaseStatus::TerminalValid);
        assert_eq!(
            status(Some("0"), None),
            CaseStatus::TerminalValid,
            "a failed task is a valid result"
        );
        assert_eq!(
            status(Some("1.0"), Some("AgentTimeoutError")),
            CaseStatus::TerminalValid
        );
        assert_eq!(
            status(Some("1.0"), Some("RuntimeError")),
            CaseStatus::TerminalInvalid
        );
        assert_eq!(
            status(None, None),
            CaseStatus::TerminalInvalid,
            "no verifier result"
        );
        assert_eq!(
            status(None, Some("EnvironmentStartTimeoutError")),
            CaseStatus::TerminalInvalid
        );
        let s = given(&[frozen_event(), started("control", case("fix-git", "t1", 0))]);
        assert_eq!(
            s.lineages[L].groups["control"].cases[&case("fix-git", "t1", 0)].status(&accepted),
            CaseStatus::Started
        );
    }

    #[test]
    fn resume_lists_only_not_started_identities_without_a_harbor_directory() {
        // rule CASE-4, rule CASE-2
        let mut e = control_ready();
        e.push(started("control", case("fix-git", "t1", 0)));
        e.push(result(
            "control",
            case("regex-log", "t1", 0),
            Some("1.0"),
            None,
        )); // a result never started through the ledger
        let dirs: std::collections::BTreeSet<String> = ["crack-7z-hash__control-t1".to_string()]
            .into_iter()
            .collect();
        let rows = resume(&given(&e), None, "control", &dirs).unwrap();
        assert_eq!(rows.len(), 13, "every frozen identity of control is listed");
        let blocked: Vec<(&str, &str)> = rows
            .iter()
            .filter_map(|r| r.blocked.as_deref().map(|b| (r.case.task.as_str(), b)))
            .collect();
        assert_eq!(blocked.len(), 2, "{blocked:?}");
        assert!(blocked
            .iter()
            .any(|(t, b)| *t == "fix-git" && b.starts_with("started at seq")));
        assert!(blocked
            .iter()
            .any(|(t, b)| *t == "crack-7z-hash" && b.contains("Harbor trial directory")));
        assert_eq!(
            rule(resume(&given(&e), None, "r9", &dirs).map(|_| vec![])),
            "LINEAGE-1"
        );
    }

    fn offered(case: Option<CaseRef>) -> OfferedFile {
        OfferedFile {
            role: "harbor_trial_result".into(),
            path: "jobs/j/fix-git__control-t1/result.json".into(),
            case,
            bytes: 10,
            blake3: "ab".repeat(32),
        }
    }

    #[test]
    fn a_rule_refusing_an_offered_file_is_kept_once_and_nothing_else_is() {
        // rule BIND-12: a method rule's refusal of an evidence file is
        // recorded (path, size, BLAKE3, rule, reason); bad input, the
        // environment, a ledger rule and a sealed group record nothing.
        let mut e = control_ready();
        e.push(started("control", case("fix-git", "t1", 0)));
        let s = given(&e);
        let g = gref("control");
        let file = offered(Some(case("fix-git", "t1", 0)));
        let refusal = |rule: Rule| Error::Refused {
            rule,
            message: "result.json names another trial".into(),
        };
        let (event, key) = evidence_refused(&s, &g, &file, &refusal(Rule::Case8))
            .expect("BIND-12: a CASE-8 refusal of a file is kept");
        let Event::EvidenceRefused(kept) = &event else {
            panic!("BIND-12: {event:?}")
        };
        assert_eq!(
            (kept.rule.as_str(), kept.path.as_str(), kept.bytes),
            ("CASE-8", file.path.as_str(), 10),
            "BIND-12: path, size and rule are kept"
        );
        assert_eq!(
            evidence_refused(&s, &g, &file, &refusal(Rule::Case8)).map(|(_, k)| k),
            Some(key.clone()),
            "BIND-12: the same offer refused the same way has one key"
        );
        let elsewhere = OfferedFile {
            path: "copy/result.json".into(),
            ..file.clone()
        };
        assert_ne!(
            evidence_refused(&s, &g, &elsewhere, &refusal(Rule::Case8)).map(|(_, k)| k),
            Some(key),
            "BIND-12: another path is another offer"
        );
        for not_kept in [
            Error::input("line 1: field id: missing"),
            refusal(Rule::Ledger2),
            Error::io("read", std::io::Error::other("gone")),
        ] {
            assert!(
                evidence_refused(&s, &g, &file, &not_kept).is_none(),
                "BIND-12: only a method rule's refusal is kept, not {not_kept:?}"
            );
        }
        let mut sealed_too = e.clone();
        sealed_too.push(sealed("control", VerdictStatus::RejectedRuntime));
        assert!(
            evidence_refused(&given(&sealed_too), &g, &file, &refusal(Rule::Case8)).is_none(),
            "BIND-12, VERDICT-4: a sealed group takes no evidence, refused or not"
        );
    }

    #[test]
    fn a_refusal_reason_is_kept_whole_at_its_bound_and_cut_past_it() {
        // rule BIND-12: EVIDENCE_REFUSAL_REASON_BYTES_MAX
        let max = crate::limits::EVIDENCE_REFUSAL_REASON_BYTES_MAX;
        let s = given(&control_ready());
        let reason_of = |message: String| {
            let refusal = Error::Refused {
                rule: Rule::Freeze2,
                message,
            };
            match evidence_refused(&s, &gref("control"), &offered(None), &refusal) {
                Some((Event::EvidenceRefused(e), _)) => e.reason,
                other => panic!("BIND-12: {other:?}"),
            }
        };
        let at = "r".repeat(max);
        assert_eq!(reason_of(at.clone()), at, "BIND-12: at the bound, whole");
        // past the bound, with a multi-byte character across the cut
        let past = format!("{}\u{e9}{}", "r".repeat(max - 7), "r".repeat(8));
        let cut = reason_of(past);
        assert!(
            cut.len() <= max && cut.ends_with(" [cut]"),
            "BIND-12: past the bound, cut and marked: {} bytes",
            cut.len()
        );
    }
}

/// `launchable` (what `run` asks before a wave) is exactly `resume`'s
/// unblocked rows (CASE-4), before and after starts and with a trial
/// directory on disk.
#[test]
fn launchable_is_resumes_unblocked_rows() {
    use crate::schema::events::CaseRef;
    use crate::testkit::scenario::World;
    use std::collections::BTreeSet;
    let mut w = World::new();
    w.freeze(
        crate::testkit::examples::EXAMPLE_MANIFEST,
        crate::testkit::examples::EXAMPLE_PRIVATE,
    )
    .expect("the example freezes");
    let l = w.lineage.clone();
    let rows = |w: &World, dirs: &BTreeSet<String>| -> (Vec<CaseRef>, Vec<CaseRef>) {
        let r: Vec<CaseRef> = super::resume(&w.state, Some(&l), "canary-1", dirs)
            .expect("resume")
            .into_iter()
            .filter(|r| r.blocked.is_none())
            .map(|r| r.case)
            .collect();
        let fast = super::launchable(&w.state, Some(&l), "canary-1", dirs).expect("launchable");
        (r, fast)
    };
    let (slow, fast) = rows(&w, &BTreeSet::new());
    assert_eq!(slow, fast, "CASE-4");
    assert_eq!(fast.len(), 1, "CASE-4: the example's one canary identity");
    let dirs: BTreeSet<String> = [crate::schema::names::trial_name(
        "hello-world",
        "canary-1",
        &fast[0],
    )]
    .into();
    let (slow, fast) = rows(&w, &dirs);
    assert_eq!(slow, fast, "CASE-4");
    assert!(
        fast.is_empty(),
        "CASE-4: a trial directory blocks the identity"
    );
    w.open("canary-1").expect("open");
    let case = slow.first().cloned().unwrap_or(CaseRef {
        task: "hello-world".into(),
        trial: "c1".into(),
        replacement: 0,
    });
    w.start("canary-1", &case, None).expect("start");
    let (slow, fast) = rows(&w, &BTreeSet::new());
    assert_eq!(slow, fast, "CASE-4");
    assert!(
        fast.is_empty(),
        "CASE-4: a started identity never launches again"
    );
}

/// GATE-9: at concurrency c > 1, scored work waits for an accepted canary
/// of at least c cases that ran at exactly c; the example's one-case
/// canary cannot prove c = 2, a two-case canary at 2 does.
#[test]
fn concurrency_above_one_needs_a_canary_that_ran_at_it() {
    let canary = "  { group = \"canary-1\", task = \"hello-world\", trial = \"c1\", content_sha256 = \"f4fceaf0b943cec699335755c38caa916a9223b7058fa70f6a0dfaebf2d0a393\" },\n";
    let run = |edits: &[[&str; 2]]| {
        let spec = crate::testkit::scenario::Scenario {
            description: "t".into(),
            lineages: vec![crate::testkit::scenario::LineageSpec {
                edits: edits
                    .iter()
                    .map(|[a, b]| [a.to_string(), b.to_string()])
                    .collect(),
                groups: Some(vec!["canary-1".into(), "control".into()]),
                ..Default::default()
            }],
        };
        crate::testkit::scenario::run(&spec).unwrap()
    };
    let (_, log) = run(&[["concurrency = 1", "concurrency = 2"]]);
    assert_eq!(
        log.refusals
            .iter()
            .map(|(step, rule)| (
                step.split(' ').take(3).collect::<Vec<_>>().join(" "),
                rule.as_str()
            ))
            .collect::<Vec<_>>(),
        [(
            "case start short13-kimi-2026-11/control".to_string(),
            "GATE-9"
        )],
        "GATE-9: a one-case canary does not prove concurrency 2"
    );
    let two = format!("{canary}{}", canary.replace("\"c1\"", "\"c2\""));
    let (w, log) = run(&[["concurrency = 1", "concurrency = 2"], [canary, &two]]);
    assert!(log.refusals.is_empty(), "GATE-9: {:?}", log.refusals);
    let control = &w.state.lineage(None).unwrap().groups["control"];
    assert_eq!(
        control.cases.len(),
        13,
        "GATE-9: scored work ran after the canary at 2"
    );
}
