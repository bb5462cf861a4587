//! The pure AWS judgements: every test runs in the fast loop (no SDK).
//! The helpers are shared with the SDK tests of `crate::gates::aws`.

use super::*;
use crate::testkit::examples::{EXAMPLE_MANIFEST as EXAMPLE, EXAMPLE_PRIVATE};

pub(crate) const MOTO_ACCOUNT: &str = "123456789012";

pub(crate) const MOTO_PRINCIPAL: &str = "arn:aws:sts::123456789012:user/moto";

const KEY_HEX: &str = "5f1e0c9a7b3d2e4f60718293a4b5c6d7e8f90112233445566778899aabbccdde";

pub(crate) fn key() -> [u8; 32] {
    manifest::commitment_key(KEY_HEX, "test").unwrap()
}

/// The example manifest with text substitutions in each file.
pub(crate) fn frozen(
    public: &[(&str, &str)],
    private: &[(&str, &str)],
) -> crate::schema::events::ManifestFrozenV2 {
    let mut p = EXAMPLE.to_string();
    for (a, b) in public {
        assert!(p.contains(a), "example lacks {a:?}");
        p = p.replacen(a, b, 1);
    }
    let mut q = EXAMPLE_PRIVATE.to_string();
    for (a, b) in private {
        assert!(q.contains(a), "private example lacks {a:?}");
        q = q.replacen(a, b, 1);
    }
    crate::method::freeze::freeze(&p, "manifest.toml", &q, "manifest.private.toml")
        .unwrap()
        .v2
}

pub(crate) fn moto_principal() -> crate::schema::events::ManifestFrozenV2 {
    frozen(
        &[],
        &[(
            "arn:aws:iam::123456789012:role/benchmark-runner",
            MOTO_PRINCIPAL,
        )],
    )
}

#[test]
fn ambient_names_are_found_never_values() {
    let found = ambient_variables_present([
        "PATH",
        "AWS_SESSION_TOKEN",
        "AWS_ACCESS_KEY_ID",
        "AWS_ENDPOINT_URL_EC2",
        "AWS_CONFIG_FILE",
        "AWS_SHARED_CREDENTIALS_FILE",
        "BENCHLEDGER_AWS_ENDPOINT_URL",
        "AWS_ACCESS_KEY_ID",
    ]);
    assert_eq!(
        found,
        [
            "AWS_ACCESS_KEY_ID",
            "AWS_ENDPOINT_URL_EC2",
            "AWS_SESSION_TOKEN"
        ]
    );
}

#[test]
fn endpoint_overrides_are_checked_and_bounded() {
    assert_eq!(
        check_endpoint("V", "http://127.0.0.1:5000/").unwrap(),
        "http://127.0.0.1:5000"
    );
    for bad in [
        "127.0.0.1:5000",
        "ftp://x",
        "http://",
        "http://a:b@h",
        "http://h/ x",
    ] {
        let e = check_endpoint("BENCHLEDGER_AWS_ENDPOINT_URL", bad).unwrap_err();
        assert!(
            e.to_string().starts_with("BENCHLEDGER_AWS_ENDPOINT_URL: "),
            "{e}"
        );
    }
    let at = format!("http://h/{}", "a".repeat(ENDPOINT_URL_BYTES_MAX - 9));
    assert_eq!(at.len(), ENDPOINT_URL_BYTES_MAX);
    assert!(check_endpoint("V", &at).is_ok());
    assert!(check_endpoint("V", &format!("{at}a"))
        .unwrap_err()
        .to_string()
        .contains("over the limit"));
}

#[test]
fn session_names_fit_sts() {
    assert_eq!(session_name("short13"), "benchledger-short13");
    let long = session_name(&"x".repeat(100));
    assert_eq!(long.len(), ROLE_SESSION_NAME_BYTES_MAX);
    assert_eq!(session_name("a/b c"), "benchledger-a-b-c");
}

#[test]
fn assumed_role_sessions_also_match_their_role_arn() {
    assert_eq!(
        principal_forms("arn:aws:sts::123456789012:assumed-role/runner/benchledger-x"),
        [
            "arn:aws:sts::123456789012:assumed-role/runner/benchledger-x",
            "arn:aws:iam::123456789012:role/runner"
        ]
    );
    assert_eq!(principal_forms(MOTO_PRINCIPAL), [MOTO_PRINCIPAL]);
    assert_eq!(principal_forms("garbage"), ["garbage"]);
}

// rule GATE-1: account and principal are compared through the frozen commitments.
#[test]
fn identity_is_judged_through_the_commitments() {
    let f = moto_principal();
    let p = &f.manifest.private;
    let ok = judge_identity(
        &key(),
        p,
        &CallerIdentity {
            account: MOTO_ACCOUNT.into(),
            arn: MOTO_PRINCIPAL.into(),
        },
    );
    assert_eq!(ok.status, Status::Pass);
    assert_eq!(ok.account, p.account);
    assert_eq!(ok.principal, p.principal_arn);
    assert_eq!(ok.error, None);
    let other = judge_identity(
        &key(),
        p,
        &CallerIdentity {
            account: "111122223333".into(),
            arn: "arn:aws:sts::111122223333:user/moto".into(),
        },
    );
    assert_eq!(other.status, Status::Fail);
    let e = other.error.unwrap();
    assert_eq!(
        e,
        "GATE-1: the account differs from the frozen aws.account; \
         the principal differs from the frozen aws.principal_arn"
    );
    assert_eq!(other.account.redacted, "********3333");
    // The example's role principal matches an assumed-role session of it.
    let role = frozen(&[], &[]);
    let session = judge_identity(
        &key(),
        &role.manifest.private,
        &CallerIdentity {
            account: MOTO_ACCOUNT.into(),
            arn: "arn:aws:sts::123456789012:assumed-role/benchmark-runner/benchledger-s".into(),
        },
    );
    assert_eq!(session.status, Status::Pass);
    assert_eq!(session.principal, role.manifest.private.principal_arn);
    // A wrong key never matches.
    let wrong = judge_identity(
        &[7u8; 32],
        p,
        &CallerIdentity {
            account: MOTO_ACCOUNT.into(),
            arn: MOTO_PRINCIPAL.into(),
        },
    );
    assert_eq!(wrong.status, Status::Fail);
}

#[test]
fn identity_observation_keeps_no_credential_and_names_ambient_variables() {
    let f = moto_principal();
    let target = Target {
        region: "us-east-1".into(),
        endpoint: Some("http://127.0.0.1:5000".into()),
        imds_endpoint: None,
    };
    let v = judge_identity(
        &key(),
        &f.manifest.private,
        &CallerIdentity {
            account: MOTO_ACCOUNT.into(),
            arn: MOTO_PRINCIPAL.into(),
        },
    );
    let obs = identity_observation(
        "l",
        "profile:bench-operator",
        &target,
        vec!["AWS_ACCESS_KEY_ID".into()],
        &Ok(v),
    );
    assert_eq!(
        obs.endpoint_override.as_deref(),
        Some("http://127.0.0.1:5000")
    );
    assert_eq!(obs.ambient_variables_ignored, ["AWS_ACCESS_KEY_ID"]);
    // No string of it looks like a credential (the append guard's check).
    for (field, value) in crate::schema::events::Event::IdentityChecked(obs.clone()).strings() {
        assert_eq!(crate::schema::secrets::scan(&value), None, "{field}");
    }
    let failed = identity_observation("l", "s", &target, vec![], &Err(AwsError("down".into())));
    assert_eq!(failed.status, Status::Fail);
    assert_eq!(failed.account, None);
    assert_eq!(failed.error.as_deref(), Some("down"));
    let both = Target {
        imds_endpoint: Some("http://127.0.0.1:9".into()),
        ..target
    };
    assert_eq!(
        both.endpoint_override().unwrap(),
        "http://127.0.0.1:5000; imds=http://127.0.0.1:9"
    );
}

#[test]
fn profile_files_are_located_from_the_two_file_variables_or_home() {
    let f = ProfileFiles::locate(None, None, Some("/home/u".into()));
    assert_eq!(f.config.unwrap(), PathBuf::from("/home/u/.aws/config"));
    assert_eq!(
        f.credentials.unwrap(),
        PathBuf::from("/home/u/.aws/credentials")
    );
    let f = ProfileFiles::locate(Some("/c".into()), Some("/k".into()), None);
    assert_eq!(f.config.unwrap(), PathBuf::from("/c"));
    assert_eq!(f.credentials.unwrap(), PathBuf::from("/k"));
}

#[test]
fn selectors_come_from_the_manifest_only() {
    let f = frozen(&[], &[]);
    let m = &f.manifest.public;
    assert!(matches!(
        Selector::of(m, None, ProfileFiles::default()).unwrap(),
        Selector::Profile { name, .. } if name == "bench-operator"
    ));
    assert_eq!(
        selector_label(m, &f.manifest.private),
        "profile:bench-operator"
    );
    let role = frozen(
        &[("profile = \"bench-operator\"", "assume_role = true")],
        &[(
            "principal_arn = ",
            "role_arn = \"arn:aws:iam::123456789012:role/benchmark-runner\"\nprincipal_arn = ",
        )],
    );
    let m = &role.manifest.public;
    let e = Selector::of(m, None, ProfileFiles::default()).unwrap_err();
    assert!(e.to_string().contains("--private"), "{e}");
    let s = Selector::of(
        m,
        Some("arn:aws:iam::123456789012:role/benchmark-runner"),
        ProfileFiles::default(),
    )
    .unwrap();
    assert_eq!(
        s,
        Selector::AssumeRole {
            role_arn: "arn:aws:iam::123456789012:role/benchmark-runner".into(),
            session_name: "benchledger-short13-kimi-2026-11".into()
        }
    );
    assert_eq!(
        selector_label(m, &role.manifest.private),
        "role:arn:aws:iam::********9012:role/…"
    );
    let ip = frozen(
        &[("profile = \"bench-operator\"", "instance_profile = true")],
        &[],
    );
    assert_eq!(
        Selector::of(&ip.manifest.public, None, ProfileFiles::default()).unwrap(),
        Selector::InstanceProfile
    );
}

fn inst(id: &str, ty: &str, state: &str, tags: &[(&str, &str)]) -> LiveInstance {
    LiveInstance {
        id: id.into(),
        instance_type: ty.into(),
        state: state.into(),
        tags: tags
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    }
}

// rule GATE-2: available = quota - (running + pending); the central host counts once.
#[test]
fn quota_arithmetic() {
    let f = frozen(&[], &[]);
    let mut m = f.manifest.public.clone();
    // Example: concurrency 1 x sandbox 2 + headroom 4 (+ central 4 to provision).
    let vcpus: BTreeMap<String, u64> =
        [("m5.large".to_string(), 2), ("c7i.xlarge".to_string(), 4)].into();
    let live = vec![
        inst("i-1", "m5.large", "running", &[]),
        inst("i-2", "m5.large", "pending", &[]),
    ];
    let n = quota_numbers(&m, 14, &live, &vcpus, 1, true).unwrap();
    assert_eq!(
        (n.used_vcpu, n.available_vcpu, n.required_vcpu),
        (4, 10, 10)
    );
    assert_eq!(n.status(), Status::Pass, "available == required passes");
    let n = quota_numbers(&m, 13, &live, &vcpus, 1, true).unwrap();
    assert_eq!(n.status(), Status::Fail, "one below fails");
    // A live central host (run tag + central role) is in the use, not added again.
    let central = inst(
        "i-c",
        "c7i.xlarge",
        "running",
        &[
            ("benchledger:run", "short13-kimi-2026-11"),
            ("benchledger:role", "bitrouter-central"),
        ],
    );
    let with_central = [live.clone(), vec![central]].concat();
    let n = quota_numbers(&m, 14, &with_central, &vcpus, 1, true).unwrap();
    assert!(n.central_live);
    assert_eq!((n.used_vcpu, n.required_vcpu, n.available_vcpu), (8, 6, 6));
    // Reuse never adds the central host.
    m.central.mode = CentralMode::Reuse;
    m.central.instance_id = Some("i-other".into());
    assert_eq!(
        quota_numbers(&m, 14, &live, &vcpus, 1, true)
            .unwrap()
            .required_vcpu,
        6
    );
    // Stopped instances are not in the use; an unknown type is an error.
    let stopped = vec![inst("i-3", "zz.huge", "stopped", &[])];
    assert_eq!(
        quota_numbers(&m, 14, &stopped, &vcpus, 1, true)
            .unwrap()
            .used_vcpu,
        0
    );
    let unknown = vec![inst("i-4", "zz.huge", "running", &[])];
    assert!(quota_numbers(&m, 14, &unknown, &vcpus, 1, true)
        .unwrap_err()
        .0
        .contains("zz.huge"));
    // Use past the quota leaves 0 available, never a wrap.
    assert_eq!(
        quota_numbers(&m, 1, &live, &vcpus, 1, true)
            .unwrap()
            .available_vcpu,
        0
    );
    let obs = quota_observation(&m, "us-east-1", &Err(AwsError("x".into())));
    assert_eq!(
        (obs.status, obs.error.as_deref()),
        (Status::Fail, Some("x"))
    );
}

fn found(resource: &str, id: &str, by: &str) -> FoundResource {
    FoundResource {
        resource: resource.into(),
        id: id.into(),
        state: "s".into(),
        found_by: by.into(),
    }
}

// rule CLEAN-2: the retained central host is excluded only by its instance id.
#[test]
fn only_the_central_instance_and_what_is_attached_to_it_are_excluded() {
    let c = Some("i-central");
    let central = found("instance", "i-central", "run_tag");
    let root = found("volume", "vol-c", "attachment_of:i-central");
    let both = found(
        "network_interface",
        "eni-c",
        "run_tag,attachment_of:i-central",
    );
    let sandbox = found("instance", "i-s", "run_tag");
    assert!(is_excluded(&central, c) && is_excluded(&root, c) && is_excluded(&both, c));
    assert!(!is_excluded(&sandbox, c));
    assert!(!is_excluded(&central, None));
    assert!(!is_excluded(&found("volume", "i-central", "run_tag"), c));
    assert_eq!(
        audit_status(&[central.clone(), root.clone()], c),
        Status::Pass
    );
    assert_eq!(
        audit_status(&[central.clone(), sandbox.clone()], c),
        Status::Fail
    );
    assert_eq!(audit_status(&[], None), Status::Pass);
    let plan = termination_plan(
        &[
            found("network_interface", "eni-1", "run_tag"),
            found("volume", "vol-1", "run_tag"),
            sandbox.clone(),
            central,
            root,
        ],
        c,
    );
    let order: Vec<&str> = plan.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(order, ["i-s", "vol-1", "eni-1"]);
}

#[test]
fn residue_queries_cover_every_non_terminated_state() {
    for s in ["pending", "running", "shutting-down", "stopping", "stopped"] {
        assert!(LIVE_INSTANCE_STATES.contains(&s));
    }
    assert!(!LIVE_INSTANCE_STATES.contains(&"terminated"));
    assert_eq!(QUOTA_INSTANCE_STATES, ["pending", "running"]);
    let f = frozen(&[], &[]);
    let t = RunTags::of(&f.manifest.public);
    assert_eq!(
        t.recorded(),
        [
            "benchledger:run=short13-kimi-2026-11",
            "benchledger:role=sandbox|bitrouter-central"
        ]
    );
    assert_eq!(
        RunTags::sandboxes(&f.manifest.public).role_values,
        ["sandbox"]
    );
}

#[test]
fn error_text_is_one_bounded_line_and_never_a_credential() {
    assert_eq!(clean("a\nb"), "a b");
    let long = "é".repeat(AWS_ERROR_BYTES_MAX);
    let c = clean(&long);
    assert!(c.len() <= AWS_ERROR_BYTES_MAX + '…'.len_utf8());
    let at = "a".repeat(AWS_ERROR_BYTES_MAX);
    assert_eq!(clean(&at), at);
    assert!(clean(&format!("{at}b")).ends_with('…'));
    assert!(clean("token AKIAIOSFODNN7EXAMPLE in text").contains("withheld"));
}

#[test]
fn residue_passes_only_at_zero() {
    let found = |residue: &[&str], owned: &[&str]| {
        Ok(Residue {
            residue: residue.iter().map(|s| s.to_string()).collect(),
            owned: owned.iter().map(|s| s.to_string()).collect(),
        })
    };
    let zero = residue_observation("l", "r1", "run=x", "us-east-1", "arn:…", &found(&[], &[]));
    assert_eq!(zero.status, Status::Pass);
    assert_eq!(zero.details["sandbox_count"], "0");
    let one = residue_observation(
        "l",
        "r1",
        "run=x",
        "us-east-1",
        "arn:…",
        &found(&["i-1"], &[]),
    );
    assert_eq!(one.status, Status::Fail);
    assert_eq!(one.details["instance_ids"], "i-1");
    // RUN-1: the sandboxes of the group's running cases are not residue.
    let owned = residue_observation(
        "l",
        "r1",
        "run=x",
        "us-east-1",
        "arn:…",
        &found(&[], &["i-2"]),
    );
    assert_eq!(
        owned.status,
        Status::Pass,
        "RUN-1: owned sandboxes are not residue"
    );
    assert_eq!(owned.details["owned_instance_ids"], "i-2");
    assert_eq!(owned.details["sandbox_count"], "0");
    let err = residue_observation(
        "l",
        "r1",
        "run=x",
        "us-east-1",
        "arn:…",
        &Err("unreachable".into()),
    );
    assert_eq!(err.status, Status::Fail);
    assert_eq!(err.details["error"], "unreachable");
}

#[test]
fn a_sandbox_is_owned_only_when_its_trial_tag_names_a_running_case() {
    let f = frozen(&[], &[]);
    let m = f.manifest.public.clone();
    let trial = m.tags.trial_key.clone();
    let live = vec![
        inst(
            "i-run",
            "m5.large",
            "running",
            &[(trial.as_str(), "fix-git__r1-t1")],
        ),
        inst(
            "i-done",
            "m5.large",
            "running",
            &[(trial.as_str(), "fix-git__r1-t2")],
        ),
        inst("i-untagged", "m5.large", "pending", &[]),
    ];
    let running: BTreeSet<String> = ["fix-git__r1-t1".to_string()].into();
    let r = split_owned(&m, &live, &running);
    // rule RUN-1: residue is a run-tagged sandbox no running case owns.
    assert_eq!(r.owned, vec!["i-run".to_string()], "RUN-1");
    assert_eq!(
        r.residue,
        vec!["i-done".to_string(), "i-untagged".to_string()],
        "RUN-1"
    );
    // rule RUN-1: a wave of k slots needs k x vCPU + headroom, not c x vCPU.
    let mut m3 = m.clone();
    m3.limits.concurrency = 3;
    let vcpus: BTreeMap<String, u64> = [("m5.large".to_string(), 2)].into();
    let two = quota_numbers(&m3, 100, &[], &vcpus, 2, true).unwrap();
    let three = quota_numbers(&m3, 100, &[], &vcpus, 9, true).unwrap();
    assert_eq!(
        three.required_vcpu - two.required_vcpu,
        2,
        "RUN-1: one slot more is one sandbox more"
    );
    assert_eq!(
        three.required_vcpu,
        quota_numbers(&m3, 100, &[], &vcpus, 3, true)
            .unwrap()
            .required_vcpu,
        "slots are clamped to the concurrency"
    );
}
