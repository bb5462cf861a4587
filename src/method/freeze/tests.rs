//! Manifest validation: each refusal cites its rule id.

use super::validate::check_label;
use super::*;
use crate::testkit::examples::{frozen as example, EXAMPLE_MANIFEST as EXAMPLE, EXAMPLE_PRIVATE};

/// The example with one text substitution in the public file.
fn edited(from: &str, to: &str) -> Result<Frozen> {
    assert!(EXAMPLE.contains(from), "example lacks {from:?}");
    freeze(
        &EXAMPLE.replacen(from, to, 1),
        "manifest.toml",
        EXAMPLE_PRIVATE,
        "manifest.private.toml",
    )
}

fn edited_private(from: &str, to: &str) -> Result<Frozen> {
    assert!(
        EXAMPLE_PRIVATE.contains(from),
        "private example lacks {from:?}"
    );
    freeze(
        EXAMPLE,
        "manifest.toml",
        &EXAMPLE_PRIVATE.replacen(from, to, 1),
        "manifest.private.toml",
    )
}

fn refused_rule(r: Result<Frozen>) -> &'static str {
    match r {
        Err(Error::Refused { rule, .. }) => rule.as_str(),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn input_msg(r: Result<Frozen>) -> String {
    match r {
        Err(Error::Input(m)) => m,
        other => panic!("expected an input error, got {other:?}"),
    }
}

#[test]
fn the_example_freezes_with_stable_keys() {
    let f = example();
    assert_eq!(f.lineage, "short13-kimi-2026-11");
    assert_eq!(f.manifest.public.cases.tasks.len(), 13);
    assert_eq!(
        f.manifest.public.evaluation_groups(),
        ["control", "r1", "r2"]
    );
    // Deterministic: the same files give the same hashes and keys.
    assert_eq!(example(), f);
    for h in [
        &f.manifest_blake3,
        &f.task_manifest_blake3,
        &f.lineage_key,
        &f.control_key,
    ] {
        assert_eq!(h.len(), 64);
    }
}

#[test]
fn the_stored_manifest_round_trips_canonically() {
    let f = example();
    let e = crate::schema::events::Event::ManifestFrozenV2(Box::new(f));
    let bytes = crate::log::codec::encode_payload(&e).unwrap();
    assert_eq!(
        crate::log::codec::decode_payload(e.kind(), &bytes).unwrap(),
        e
    );
}

#[test]
fn private_values_are_only_committed_and_redacted() {
    // rule FREEZE-2
    let f = example();
    let stored = serde_json::to_string(&f).unwrap();
    for private in [
        "123456789012",
        "benchmark-runner",
        "ANTHROPIC_BENCH_KEY",
        "/run/secrets/ambient-key",
        "5f1e0c9a7b3d",
    ] {
        assert!(
            !stored.contains(private),
            "the frozen event holds the private value {private:?}"
        );
    }
    assert_eq!(f.manifest.private.account.redacted, "********9012");
    assert_eq!(
        f.manifest.private.principal_arn.redacted,
        "arn:aws:iam::********9012:role/…"
    );
    let checked = check_private(&f.manifest, EXAMPLE_PRIVATE, "p").unwrap();
    assert!(checked.len() >= 5, "{checked:?}");
    let wrong = EXAMPLE_PRIVATE.replace(
        "file:/run/secrets/ambient-key\"\neconomy",
        "file:/run/secrets/other\"\neconomy",
    );
    assert!(matches!(
        check_private(&f.manifest, &wrong, "p"),
        Err(Error::Refused {
            rule: crate::schema::rule::Rule::Freeze2,
            ..
        })
    ));
}

#[test]
fn control_key_ignores_policy_software_but_lineage_key_does_not() {
    // rule FREEZE-5, rule FREEZE-6
    let base = example();
    let other_policy = edited("commit = \"003f99ee\"", "commit = \"4b86a513\"").unwrap();
    assert_eq!(
        base.control_key, other_policy.control_key,
        "FREEZE-6: the control key ignores policy software"
    );
    assert_ne!(
        base.lineage_key, other_policy.lineage_key,
        "FREEZE-5: the lineage key covers it"
    );
    let other_strong = edited(
        "model = \"claude-sonnet-4-5\"\nprotocol",
        "model = \"claude-opus-4-1\"\nprotocol",
    );
    // The strong route's price must follow the model, so this is refused...
    assert_eq!(refused_rule(other_strong), "FREEZE-8");
    let other_sandbox = edited(
        "instance_type = \"m7i.large\"",
        "instance_type = \"m7i.xlarge\"",
    )
    .unwrap();
    assert_ne!(base.control_key, other_sandbox.control_key);
    assert_ne!(base.lineage_key, other_sandbox.lineage_key);
    let other_tasks = edited("trials = [\"t1\"]", "trials = [\"t2\"]").unwrap();
    assert_ne!(base.task_manifest_blake3, other_tasks.task_manifest_blake3);
    assert_ne!(
        base.control_key, other_tasks.control_key,
        "CLASS-3: other trials are another experiment"
    );
    let fewer = edited(
        "  { name = \"build-cython-ext\", content_sha256 = \"5b2fec373cc172534aacb4653c2ca1ca0a6d9658834042094a6887b0960596de\" },\n",
        "",
    )
    .unwrap();
    assert!(
        fewer.lineage_key != base.lineage_key && fewer.control_key != base.control_key,
        "CLASS-3: another task membership is another experiment"
    );
}

#[test]
fn harbor_retries_above_zero_are_refused() {
    // rule CASE-5
    assert_eq!(
        refused_rule(edited("retries = 0 ", "retries = 1 ")),
        "CASE-5"
    );
}

#[test]
fn class_task_and_trial_counts_must_fit() {
    // rule CLASS-1
    assert_eq!(
        refused_rule(edited("trials = [\"t1\"]", "trials = [\"t1\", \"t2\"]")),
        "CLASS-1"
    );
    assert_eq!(
        refused_rule(edited(
            "class = \"mechanism_iteration\"",
            "class = \"public_reproduction\""
        )),
        "CLASS-1"
    );
    assert_eq!(
        refused_rule(edited(
            "class = \"mechanism_iteration\"",
            "class = \"replicated_experiment\""
        )),
        "CLASS-1"
    );
    assert_eq!(
        refused_rule(edited(
            "class = \"mechanism_iteration\"",
            "class = \"canary\""
        )),
        "CLASS-1"
    );
    // A mechanism iteration of 7 tasks is a predeclared slice like any
    // other (CLASS-1 corrected): it freezes.
    let mut text = EXAMPLE.to_string();
    for t in [
        "polyglot-c-py",
        "heterogeneous-dates",
        "modernize-fortran-build",
        "password-recovery",
        "build-cython-ext",
        "sqlite-with-gcov",
    ] {
        let line = text
            .lines()
            .find(|l| l.contains(&format!("\"{t}\"")))
            .unwrap()
            .to_string();
        text = text.replace(&format!("{line}\n"), "");
    }
    let r = freeze(&text, "m", EXAMPLE_PRIVATE, "p");
    assert!(r.is_ok(), "CLASS-1: any slice, one trial: {:?}", r.err());
}

/// The published report's shape: 88 runnable tasks of 89 x 1 trial is a
/// mechanism iteration (CLASS-1 corrected, issue 31); as a public
/// reproduction it is refused, naming what the operator can run instead.
#[test]
fn a_refused_shape_names_the_legal_alternatives() {
    // rule CLASS-1, CLASS-3
    let public = crate::testkit::scenario::public_example();
    let last_task = public
        .lines()
        .find(|line| line.contains("name = \"task-88\""))
        .unwrap()
        .to_string();
    let report_001 = public.replace(&format!("{last_task}\n"), "").replace(
        "trials = [\"t1\", \"t2\", \"t3\", \"t4\", \"t5\"]",
        "trials = [\"t1\"]",
    );
    let as_mechanism = report_001.replace(
        "class = \"public_reproduction\"",
        "class = \"mechanism_iteration\"",
    );
    let frozen = freeze(&as_mechanism, "m", EXAMPLE_PRIVATE, "p");
    assert!(
        frozen.is_ok(),
        "CLASS-1: 88 x 1 is a mechanism iteration: {:?}",
        frozen.err()
    );
    let message = match freeze(&report_001, "m", EXAMPLE_PRIVATE, "p") {
        Err(Error::Refused { rule, message }) => {
            assert_eq!(rule.as_str(), "CLASS-1");
            message
        }
        other => panic!("expected a refusal, got {other:?}"),
    };
    for expected in [
        "got 88 tasks x 1 trials; instead: ",
        "a public reproduction of all 89 tasks (1 more; a task refused by security policy stays listed and becomes a validated skip, CASE-6, counting 0 of N) x exactly 5 trials",
        "or a replicated experiment of these 88 tasks x at least 3 trials",
        "or a mechanism iteration of these 88 tasks x exactly 1 trial",
    ] {
        assert!(message.contains(expected), "{expected:?} not in {message}");
    }
    // 13 tasks x 2 trials as a mechanism iteration: one trial, or three.
    match edited("trials = [\"t1\"]", "trials = [\"t1\", \"t2\"]") {
        Err(Error::Refused { message, .. }) => {
            assert!(
                message.contains("a replicated experiment of these 13 tasks x at least 3 trials"),
                "{message}"
            );
            assert!(
                message.contains("a mechanism iteration of these 13 tasks x exactly 1 trial"),
                "{message}"
            );
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn target_groups_must_be_control_r1_r2_in_order() {
    // rule LINEAGE-1
    assert_eq!(
        refused_rule(edited("name = \"r2\"", "name = \"r3\"")),
        "LINEAGE-1"
    );
    assert_eq!(
        refused_rule(edited("name = \"r1\"", "name = \"r4\"")),
        "LINEAGE-1"
    );
    assert_eq!(
        refused_rule(edited("name = \"control\"", "name = \"baseline\"")),
        "LINEAGE-1"
    );
}

#[test]
fn run_scoped_resources_are_unique_inside_a_lineage() {
    // rule FREEZE-4
    assert_eq!(
        refused_rule(edited("ports = [18721]", "ports = [18711]")),
        "FREEZE-4"
    );
    assert_eq!(
        refused_rule(edited(
            "job_name = \"short13-kimi-2026-11-r1\"",
            "job_name = \"short13-kimi-2026-11-r2\""
        )),
        "FREEZE-4"
    );
    assert_eq!(
        refused_rule(edited(
            "/srv/bench/short13-kimi-2026-11/r1/traces.jsonl",
            "/srv/bench/short13-kimi-2026-11/control/traces.jsonl"
        )),
        "FREEZE-4"
    );
}

#[test]
fn rounds_share_one_policy_database() {
    // rule LINEAGE-8
    let r = edited(
        "db_path = \"/srv/bench/short13-kimi-2026-11/policy/policy.db\"",
        "db_path = \"/srv/bench/short13-kimi-2026-11/r1/policy.db\"",
    );
    assert_eq!(refused_rule(r), "LINEAGE-8");
}

#[test]
fn the_identity_selector_is_explicit() {
    // rule GATE-1
    assert_eq!(
        refused_rule(edited(
            "profile = \"bench-operator\"",
            "profile = \"default\""
        )),
        "GATE-1"
    );
    assert_eq!(
        refused_rule(edited("profile = \"bench-operator\"\n", "")),
        "GATE-1"
    );
    assert_eq!(
        refused_rule(edited(
            "profile = \"bench-operator\"\n",
            "profile = \"x\"\ninstance_profile = true\n"
        )),
        "GATE-1"
    );
}

#[test]
fn canaries_use_tasks_outside_the_scored_list() {
    // rule GATE-8
    assert_eq!(
        refused_rule(edited("task = \"hello-world\"", "task = \"fix-git\"")),
        "GATE-8"
    );
}

#[test]
fn every_route_needs_a_price() {
    // rule FREEZE-8
    assert_eq!(
        refused_rule(edited(
            "model = \"qwen/qwen3-coder-30b\"\ncredential_class",
            "model = \"qwen/other\"\ncredential_class"
        )),
        "FREEZE-8"
    );
}

#[test]
fn labels_never_carry_the_account_id() {
    // rule FREEZE-4
    let r = edited(
        "job_name = \"short13-kimi-2026-11-r1\"",
        "job_name = \"short13-123456789012-r1\"",
    );
    assert_eq!(refused_rule(r), "FREEZE-4");
}

#[test]
fn a_secret_location_must_not_be_a_secret() {
    // rule FREEZE-2
    let r = edited_private(
        "strong = \"env:ANTHROPIC_BENCH_KEY\"",
        &format!("strong = \"{}{}\"", "sk-ant-api03-", "a".repeat(90)),
    );
    assert_eq!(refused_rule(r), "FREEZE-2");
}

#[test]
fn format_errors_name_the_file_and_field() {
    let m = input_msg(edited("manifest_version = 2", "manifest_version = 3"));
    assert!(m.contains("manifest.toml: field manifest_version"), "{m}");
    let m = input_msg(edited("vcpu = 2", "vcpu = \"two\""));
    assert!(m.contains("manifest.toml") && m.contains("vcpu"), "{m}");
    let m = input_msg(edited("[limits]", "[limits]\nsurprise = 1"));
    assert!(m.contains("surprise"), "unknown keys are named: {m}");
    let m = input_msg(edited(
        "uncached_input = \"0.84\"",
        "uncached_input = \"0.840\"",
    ));
    assert!(
        m.contains("0.84"),
        "non-canonical decimals are refused with the canonical form: {m}"
    );
    let m = input_msg(edited(
        "bitrouter_arch = \"x86_64\"",
        "bitrouter_arch = \"mips\"",
    ));
    assert!(m.contains("field software.bitrouter_arch"), "{m}");
    let m = input_msg(edited(
        "effective_from = \"2026-11-01\"",
        "effective_from = \"2026-13-01\"",
    ));
    assert!(m.contains("prices[0].effective_from"), "{m}");
    // A date of the right shape that is no day of the calendar (the check
    // before jiff took 2026-02-31 and 2026-02-29).
    for no_day in ["2026-02-31", "2026-02-29", "2026-04-31"] {
        let m = input_msg(edited(
            "effective_from = \"2026-11-01\"",
            &format!("effective_from = \"{no_day}\""),
        ));
        assert!(
            m.contains("prices[0].effective_from") && m.contains("is not a date"),
            "{m}"
        );
    }
    let m = input_msg(edited_private(
        "account = \"123456789012\"",
        "account = \"1234\"",
    ));
    assert!(
        m.contains("manifest.private.toml: field aws.account"),
        "{m}"
    );
    let m = input_msg(edited_private(
        "lineage = \"short13-kimi-2026-11\"",
        "lineage = \"other\"",
    ));
    assert!(m.contains("field lineage"), "{m}");
    let m = input_msg(edited_private(
        "commitment_key = \"5f",
        "commitment_key = \"zz",
    ));
    assert!(m.contains("commitment_key"), "{m}");
}

#[test]
fn manifest_file_size_limit_at_and_past_bound() {
    let pad = MANIFEST_FILE_BYTES_MAX - EXAMPLE.len() - 1;
    let at = format!("{EXAMPLE}#{}", "x".repeat(pad));
    assert_eq!(at.len(), MANIFEST_FILE_BYTES_MAX);
    assert!(freeze(&at, "m", EXAMPLE_PRIVATE, "p").is_ok());
    let past = format!("{at}x");
    assert!(input_msg(freeze(&past, "m", EXAMPLE_PRIVATE, "p")).contains("over the limit"));
}

#[test]
fn label_limit_at_and_past_bound() {
    assert!(check_label("m", "f", &"a".repeat(LABEL_BYTES_MAX)).is_ok());
    assert!(check_label("m", "f", &"a".repeat(LABEL_BYTES_MAX + 1)).is_err());
}

#[test]
fn groups_limit_at_and_past_bound() {
    let extra = |n: usize| -> String {
        (0..n).map(|i| format!(
            "[[groups]]\nname = \"preflight-{i}\"\nports = [{}]\ndb_path = \"/p{i}/db\"\nout_dir = \"/p{i}/o\"\ndaemon_log = \"/p{i}/l\"\ntrace_path = \"/p{i}/t\"\ndecision_path = \"/p{i}/d\"\noutcome_path = \"/p{i}/r\"\njob_name = \"p{i}\"\n\n",
            20000 + i)).collect()
    };
    let cfg = |n: usize| -> String {
        (0..n)
            .map(|i| format!("preflight-{i} = \"{}\"\n", "a".repeat(64)))
            .collect()
    };
    let build = |n: usize| {
        EXAMPLE
            .replacen("[aws]", &format!("{}[aws]", extra(n)), 1)
            .replacen("[harbor]", &format!("{}\n[harbor]", cfg(n)), 1)
    };
    let at = build(GROUPS_MAX - 4);
    assert!(
        freeze(&at, "m", EXAMPLE_PRIVATE, "p").is_ok(),
        "{:?}",
        freeze(&at, "m", EXAMPLE_PRIVATE, "p").err()
    );
    let past = build(GROUPS_MAX - 3);
    assert!(input_msg(freeze(&past, "m", EXAMPLE_PRIVATE, "p")).contains("groups"));
}

// --- manifest_version 2 -----------------------------------------------------

#[test]
fn a_v1_manifest_is_refused_with_the_way_to_v2() {
    let m = input_msg(edited("manifest_version = 2", "manifest_version = 1"));
    assert!(
        m.contains("field manifest_version")
            && m.contains("manifest_version = 2")
            && m.contains("[binding], [launch], [evidence] and [signers]"),
        "{m}"
    );
}

#[test]
fn every_v2_section_is_required_and_frozen() {
    for section in ["[binding.validator]", "[launch]", "[evidence]", "[signers]"] {
        let cut = EXAMPLE.replacen(section, "[unused_section_renamed]", 1);
        let r = freeze(
            &cut,
            "manifest.toml",
            EXAMPLE_PRIVATE,
            "manifest.private.toml",
        );
        assert!(matches!(r, Err(Error::Input(_))), "{section}: {r:?}");
    }
    let f = example();
    assert_eq!(f.plan.binding.reward_key, "reward");
    assert_eq!(f.plan.binding.validator.harbor_version, "0.25.0");
    assert_eq!(f.plan.launch.command[4], "{config}");
    assert_eq!(f.plan.signers.operators.len(), 1);
    // The manifest hash covers the plan: another launch command, another hash.
    let other = edited("timeout_sec = 7200", "timeout_sec = 7201").unwrap();
    assert_ne!(other.manifest_blake3, f.manifest_blake3);
}

#[test]
fn plan_fields_are_checked_naming_the_field() {
    for (from, to, field) in [
        (
            "reward_max = \"1\"",
            "reward_max = \"0\"",
            "binding.reward_max",
        ),
        (
            "reward_min = \"0\"",
            "reward_min = \"0.0\"",
            "binding.reward_min",
        ),
        (
            "clock_skew_sec = 300",
            "clock_skew_sec = 3601",
            "binding.clock_skew_sec",
        ),
        (
            "program_blake3 = \"02f7",
            "program_blake3 = \"XYZ7",
            "binding.validator.program_blake3",
        ),
        (
            "command = [\"harbor\", \"trial\", \"start\", \"-c\", \"{config}\"]",
            "command = [\"harbor\", \"trial\", \"start\"]",
            "launch.command",
        ),
        (
            "\"{config}\"]\ntimeout_sec",
            "\"{nope}\"]\ntimeout_sec",
            "launch.command[4]",
        ),
        (
            "timeout_sec = 7200",
            "timeout_sec = 0",
            "launch.timeout_sec",
        ),
        (
            "receipt_poll_sec = 30",
            "receipt_poll_sec = 0",
            "evidence.receipt_poll_sec",
        ),
        (
            "operators = [\"alice+",
            "operators = [\"alice+00",
            "signers.operators[0]",
        ),
    ] {
        let m = input_msg(edited(from, to));
        assert!(m.contains(&format!("field {field}")), "{from} -> {to}: {m}");
    }
}

// rule BIND-3: only AgentTimeoutError may be accepted; cancelled, crashed
// and disconnected trials never become terminal_valid.
#[test]
fn accepted_exceptions_outside_the_allowlist_are_refused() {
    for e in [
        "CancelledError",
        "NonZeroAgentExitCodeError",
        "RuntimeError",
    ] {
        let r = edited(
            "accepted_exceptions = [\"AgentTimeoutError\"]",
            &format!("accepted_exceptions = [\"AgentTimeoutError\", \"{e}\"]"),
        );
        assert_eq!(refused_rule(r), "BIND-3", "{e}");
    }
}

// rule BIND-7: the validator validates with the lineage's own Harbor.
#[test]
fn a_validator_of_another_harbor_version_is_refused() {
    let r = edited(
        "harbor_version = \"0.25.0\"\n\n# How `benchledger run`",
        "harbor_version = \"0.24.0\"\n\n# How `benchledger run`",
    );
    assert_eq!(refused_rule(r), "BIND-7");
}

// rule TRUST-3: the operator and reviewer sign-offs need two keys.
#[test]
fn one_key_in_both_roles_is_refused() {
    let alice = crate::testkit::examples::signer("alice")
        .verifier()
        .encode();
    let r = edited(
        "reviewers = [\"bob+66ac496e+Af9+5jMV0yE8gBeMrOZSqUUpDLJ5PhuVKbk+izAeszcM\"]",
        &format!("reviewers = [\"{alice}\"]"),
    );
    assert_eq!(refused_rule(r), "TRUST-3");
}

#[test]
fn the_example_signers_are_the_testkit_keys() {
    let f = example();
    assert_eq!(
        f.plan.signers.operators,
        [crate::testkit::examples::signer("alice")
            .verifier()
            .encode()]
    );
    assert_eq!(
        f.plan.signers.reviewers,
        [crate::testkit::examples::signer("bob").verifier().encode()]
    );
}
