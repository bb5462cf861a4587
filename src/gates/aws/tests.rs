//! The SDK tests. Tests named `moto_*` talk to the moto server on
//! 127.0.0.1 and are `#[ignore]`d unless `tools/moto/test-aws.sh` runs them
//! (it starts moto and sets `BENCHLEDGER_AWS_ENDPOINT_URL`). The pure
//! judgements are tested in `crate::gates::rules` (fast loop); their
//! helpers are shared.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use super::*;
use crate::error::{Error, Result};
use crate::gates::rules::tests::{frozen, key, moto_principal, MOTO_ACCOUNT, MOTO_PRINCIPAL};
use crate::gates::rules::{
    ambient_variables_present, audit_observation, audit_status, identity_observation,
    judge_identity, quota_observation, termination_plan, ProfileFiles, RunTags, Selector, Target,
};
use crate::schema::events::{FoundResource, GroupRef, Status};
use crate::schema::manifest::{self, ManifestFile};
use crate::testkit::http_server::{response, Server};

fn resolve(name: &str, config: &str, credentials: &str) -> Result<ProfileChain> {
    resolve_profile_text(name, config, credentials, "test files")
}

// rule GATE-1: a profile is resolved from its files alone; a missing one is refused before any call.
#[test]
fn profiles_resolve_from_the_files_alone() {
    let creds = "[bench]\naws_access_key_id = ak-1\naws_secret_access_key = sk-1\n";
    let ProfileChain::Static(c) = resolve("bench", "", creds).unwrap() else {
        panic!("static expected");
    };
    assert_eq!(c.access_key_id(), "ak-1");
    let config = "[profile runner]\nrole_arn = arn:aws:iam::123456789012:role/r\nsource_profile = bench\nrole_session_name = s1\n";
    match resolve("runner", config, creds).unwrap() {
        ProfileChain::AssumeRole {
            role_arn,
            session_name,
            source,
            ..
        } => {
            assert_eq!(role_arn, "arn:aws:iam::123456789012:role/r");
            assert_eq!(session_name, "s1");
            assert!(matches!(*source, ProfileChain::Static(_)));
        }
        other => panic!("{other:?}"),
    }
    let imds =
        "[profile i]\nrole_arn = arn:aws:iam::1:role/r\ncredential_source = Ec2InstanceMetadata\n";
    assert!(matches!(
        resolve("i", imds, "").unwrap(),
        ProfileChain::AssumeRole { source, .. } if *source == ProfileChain::InstanceMetadata
    ));
    let refused = |name: &str, config: &str, creds: &str, what: &str| {
        let e = resolve(name, config, creds).unwrap_err();
        assert!(
            matches!(
                e,
                Error::Refused {
                    rule: crate::schema::rule::Rule::Gate1,
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains(what), "{e}");
        assert!(!e.to_string().contains("sk-1"), "{e}");
    };
    refused("missing", "", creds, "is not in test files");
    refused(
        "e",
        "[profile e]\nrole_arn = arn:aws:iam::1:role/r\ncredential_source = Environment\n",
        "",
        "reads ambient state",
    );
    refused(
        "p",
        "[profile p]\ncredential_process = /bin/creds\n",
        "",
        "credential_process",
    );
    refused("s", "[profile s]\nsso_session = x\n", "", "sso_session");
    refused(
        "n",
        "[profile n]\nregion = us-east-1\n",
        "",
        "has no credentials",
    );
    refused(
        "r",
        "[profile r]\nrole_arn = arn:aws:iam::1:role/r\n",
        "",
        "without source_profile",
    );
}

#[test]
fn profile_chains_are_bounded() {
    // a -> b -> a ... is cut at PROFILE_CHAIN_MAX.
    let config = "[profile a]\nrole_arn = arn:aws:iam::1:role/a\nsource_profile = b\n[profile b]\nrole_arn = arn:aws:iam::1:role/b\nsource_profile = a\n";
    let e = resolve("a", config, "").unwrap_err();
    assert!(e.to_string().contains("longer than"), "{e}");
    // A chain of exactly PROFILE_CHAIN_MAX hops resolves.
    let mut config = String::new();
    for i in 0..PROFILE_CHAIN_MAX {
        config.push_str(&format!(
            "[profile p{i}]\nrole_arn = arn:aws:iam::1:role/r{i}\nsource_profile = p{}\n",
            i + 1
        ));
    }
    let creds =
        format!("[p{PROFILE_CHAIN_MAX}]\naws_access_key_id = a\naws_secret_access_key = s\n");
    assert!(resolve("p0", &config, &creds).is_ok());
    let creds = format!(
        "[p{}]\naws_access_key_id = a\naws_secret_access_key = s\n",
        PROFILE_CHAIN_MAX + 1
    );
    config.push_str(&format!(
        "[profile p{PROFILE_CHAIN_MAX}]\nrole_arn = arn:aws:iam::1:role/x\nsource_profile = p{}\n",
        PROFILE_CHAIN_MAX + 1
    ));
    assert!(resolve("p0", &config, &creds)
        .unwrap_err()
        .to_string()
        .contains("longer than"));
}

#[test]
fn profile_file_bound_is_exact() {
    let dir = tempfile::tempdir().unwrap();
    let at = dir.path().join("at");
    let mut text = "[profile x]\naws_access_key_id = a\naws_secret_access_key = s\n".to_string();
    text.push_str(&"#".repeat(PROFILE_FILE_BYTES_MAX - text.len()));
    std::fs::write(&at, &text).unwrap();
    let files = ProfileFiles {
        config: Some(at),
        credentials: Some(dir.path().join("absent")),
    };
    assert!(resolve_profile("x", &files).is_ok());
    let past = dir.path().join("past");
    std::fs::write(&past, format!("{text}#")).unwrap();
    let files = ProfileFiles {
        config: Some(past),
        credentials: None,
    };
    let e = resolve_profile("x", &files).unwrap_err();
    assert!(e.to_string().contains("longer than the limit"), "{e}");
}

#[test]
fn a_profile_file_that_is_a_fifo_is_refused_at_once() {
    // Issue 29 item 12: the AWS config and credentials files are read only
    // when regular (GATE-1's profile never waits on a FIFO or reads a
    // device without end); the read runs on a thread so a regression fails
    // here instead of hanging.
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("config");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    for config in [fifo, std::path::PathBuf::from("/dev/zero")] {
        let files = ProfileFiles {
            config: Some(config.clone()),
            credentials: None,
        };
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(resolve_profile("x", &files).map_err(|e| e.to_string()));
        });
        let got = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("{} still being read after 10 s", config.display()));
        let e = got.unwrap_err();
        assert!(
            e.contains("not a regular file"),
            "{}: {e}",
            config.display()
        );
    }
}

fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

fn profile_files(
    dir: &std::path::Path,
    profiles: &[(&str, &str, &str, Option<&str>)],
) -> ProfileFiles {
    let mut creds = String::new();
    for (name, ak, sk, token) in profiles {
        creds.push_str(&format!(
            "[{name}]\naws_access_key_id = {ak}\naws_secret_access_key = {sk}\n"
        ));
        if let Some(t) = token {
            creds.push_str(&format!("aws_session_token = {t}\n"));
        }
    }
    let path = dir.join("credentials");
    std::fs::write(&path, creds).unwrap();
    ProfileFiles {
        config: Some(dir.join("config-absent")),
        credentials: Some(path),
    }
}

// An unreachable endpoint fails within the bounds, as an error (exit 4 in the CLI).
#[test]
fn an_unreachable_endpoint_is_a_bounded_error() {
    let dir = tempfile::tempdir().unwrap();
    let files = profile_files(dir.path(), &[("bench", "k", "s", None)]);
    let s = Session::open(
        &Selector::Profile {
            name: "bench".into(),
            files,
        },
        &Target {
            region: "us-east-1".into(),
            endpoint: Some(format!("http://127.0.0.1:{}", closed_port())),
            imds_endpoint: None,
        },
    )
    .unwrap();
    let t0 = Instant::now();
    let e = s.caller_identity().unwrap_err();
    assert!(e.0.starts_with("sts GetCallerIdentity: "), "{e}");
    assert!(t0.elapsed() < Duration::from_millis(AWS_OPERATION_TIMEOUT_MS));
    let e: Error = e.into();
    assert_eq!(e.class(), crate::error::ExitClass::Environment);
}

#[test]
fn a_missing_profile_is_refused_before_any_call() {
    let dir = tempfile::tempdir().unwrap();
    let files = profile_files(dir.path(), &[("bench", "k", "s", None)]);
    let e = Session::open(
        &Selector::Profile {
            name: "bench-operator".into(),
            files,
        },
        &Target {
            region: "us-east-1".into(),
            endpoint: None,
            imds_endpoint: None,
        },
    )
    .err()
    .unwrap();
    assert!(
        matches!(
            e,
            Error::Refused {
                rule: crate::schema::rule::Rule::Gate1,
                ..
            }
        ),
        "{e}"
    );
}

fn moto_url() -> String {
    std::env::var("BENCHLEDGER_AWS_ENDPOINT_URL")
        .expect("moto tests need BENCHLEDGER_AWS_ENDPOINT_URL: run tools/moto/test-aws.sh")
}

struct Moto {
    session: Session,
    _dir: tempfile::TempDir,
    files: ProfileFiles,
}

/// A session on moto through the `profile` selector, with a temporary
/// credentials file (no process environment is changed).
fn moto(region: &str) -> Moto {
    let dir = tempfile::tempdir().unwrap();
    let files = profile_files(
        dir.path(),
        &[(
            "bench-test",
            "benchledger-test-key",
            "benchledger-test-secret",
            None,
        )],
    );
    let session = Session::open(
        &Selector::Profile {
            name: "bench-test".into(),
            files: files.clone(),
        },
        &moto_target(region),
    )
    .unwrap();
    Moto {
        session,
        _dir: dir,
        files,
    }
}

fn moto_target(region: &str) -> Target {
    Target {
        region: region.into(),
        endpoint: Some(moto_url()),
        imds_endpoint: None,
    }
}

fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", crate::schema::time::now_utc_ns())
}

fn tag(k: &str, v: &str) -> aws_sdk_ec2::types::Tag {
    aws_sdk_ec2::types::Tag::builder().key(k).value(v).build()
}

fn tag_spec(
    kind: aws_sdk_ec2::types::ResourceType,
    tags: &[(&str, &str)],
) -> aws_sdk_ec2::types::TagSpecification {
    aws_sdk_ec2::types::TagSpecification::builder()
        .resource_type(kind)
        .set_tags(Some(tags.iter().map(|(k, v)| tag(k, v)).collect()))
        .build()
}

fn launch(s: &Session, ty: &str, tags: &[(&str, &str)]) -> String {
    use aws_sdk_ec2::types::{InstanceType, ResourceType};
    let out = s
        .block_on(
            s.ec2()
                .run_instances()
                .image_id("ami-0fedcba9876543210")
                .instance_type(InstanceType::from(ty))
                .min_count(1)
                .max_count(1)
                .tag_specifications(tag_spec(ResourceType::Instance, tags))
                .tag_specifications(tag_spec(ResourceType::Volume, tags))
                .tag_specifications(tag_spec(ResourceType::NetworkInterface, tags))
                .send(),
        )
        .unwrap();
    out.instances()[0].instance_id().unwrap().to_string()
}

fn create_volume(s: &Session, tags: &[(&str, &str)]) -> String {
    use aws_sdk_ec2::types::ResourceType;
    s.block_on(
        s.ec2()
            .create_volume()
            .availability_zone(format!("{}a", s.region))
            .size(1)
            .tag_specifications(tag_spec(ResourceType::Volume, tags))
            .send(),
    )
    .unwrap()
    .volume_id()
    .unwrap()
    .to_string()
}

fn create_interface(s: &Session, tags: &[(&str, &str)]) -> String {
    use aws_sdk_ec2::types::ResourceType;
    let subnets = s.block_on(s.ec2().describe_subnets().send()).unwrap();
    let subnet = subnets.subnets()[0].subnet_id().unwrap().to_string();
    s.block_on(
        s.ec2()
            .create_network_interface()
            .subnet_id(subnet)
            .tag_specifications(tag_spec(ResourceType::NetworkInterface, tags))
            .send(),
    )
    .unwrap()
    .network_interface()
    .unwrap()
    .network_interface_id()
    .unwrap()
    .to_string()
}

/// The example manifest with its own run tag value and region.
fn run_manifest(region: &str, run_value: &str) -> ManifestFile {
    let mut m = frozen(&[], &[]).manifest.public;
    m.tags.run_value = run_value.into();
    m.aws.region = region.into();
    m
}

fn ids(found: &[FoundResource], resource: &str) -> BTreeSet<String> {
    found
        .iter()
        .filter(|r| r.resource == resource)
        .map(|r| r.id.clone())
        .collect()
}

// rule GATE-1: STS GetCallerIdentity through the explicit profile; match and mismatch.
#[test]
#[ignore = "needs the moto server: tools/moto/test-aws.sh"]
fn moto_sts_match_and_mismatch() {
    let t = moto("us-east-1");
    let id = t.session.caller_identity().unwrap();
    assert_eq!(id.account, MOTO_ACCOUNT);
    assert_eq!(id.arn, MOTO_PRINCIPAL);
    let good = moto_principal();
    let v = judge_identity(&key(), &good.manifest.private, &id);
    assert_eq!(v.status, Status::Pass);
    let other = frozen(
        &[],
        &[
            ("account = \"123456789012\"", "account = \"999999999999\""),
            (
                "arn:aws:iam::123456789012:role/benchmark-runner",
                "arn:aws:iam::999999999999:role/benchmark-runner",
            ),
        ],
    );
    let v = judge_identity(&key(), &other.manifest.private, &id);
    assert_eq!(v.status, Status::Fail);
    assert_eq!(v.account.redacted, "********9012");
    let obs = identity_observation(
        "l",
        "profile:bench-test",
        &moto_target("us-east-1"),
        vec![],
        &Ok(v),
    );
    assert_eq!(obs.endpoint_override, Some(moto_url()));
    assert!(obs.error.unwrap().contains("GATE-1"));
}

/// A fake IMDSv2 handing out `key` for role `bench-instance-role`.
fn fake_imds(key: &'static str) -> Server {
    Server::start(move |r| match (r.method.as_str(), r.path.as_str()) {
        ("PUT", "/latest/api/token") => response(
            200,
            &[("x-aws-ec2-metadata-token-ttl-seconds", "21600")],
            b"imds-token",
        ),
        ("GET", "/latest/meta-data/iam/security-credentials/") => {
            response(200, &[], b"bench-instance-role")
        }
        ("GET", "/latest/meta-data/iam/security-credentials/bench-instance-role") => {
            let body = format!(
                r#"{{"Code":"Success","LastUpdated":"2026-01-01T00:00:00Z","Type":"AWS-HMAC","AccessKeyId":"{key}","SecretAccessKey":"imds-secret","Token":"imds-token-value","Expiration":"2099-01-01T00:00:00Z"}}"#
            );
            response(200, &[], body.as_bytes())
        }
        _ => response(404, &[], b""),
    })
}

// rule GATE-1: the instance_profile and assume_role selectors, each its one provider.
#[test]
#[ignore = "needs the moto server: tools/moto/test-aws.sh"]
fn moto_instance_profile_and_assume_role_selectors() {
    let imds = fake_imds("benchledger-imds-key");
    let target = Target {
        imds_endpoint: Some(imds.url()),
        ..moto_target("us-east-1")
    };
    let s = Session::open(&Selector::InstanceProfile, &target).unwrap();
    let id = s.caller_identity().unwrap();
    assert_eq!(id.account, MOTO_ACCOUNT);
    assert!(imds
        .requests
        .lock()
        .unwrap()
        .iter()
        .any(|r| r.path.ends_with("/bench-instance-role")));
    let role = frozen(
        &[("profile = \"bench-operator\"", "assume_role = true")],
        &[(
            "principal_arn = ",
            "role_arn = \"arn:aws:iam::123456789012:role/benchmark-runner\"\nprincipal_arn = ",
        )],
    );
    let sel = Selector::of(
        &role.manifest.public,
        Some("arn:aws:iam::123456789012:role/benchmark-runner"),
        ProfileFiles::default(),
    )
    .unwrap();
    let s = Session::open(&sel, &target).unwrap();
    let id = s.caller_identity().unwrap();
    assert_eq!(
        id.arn,
        "arn:aws:sts::123456789012:assumed-role/benchmark-runner/benchledger-short13-kimi-2026-11"
    );
    let v = judge_identity(&key(), &role.manifest.private, &id);
    assert_eq!(v.status, Status::Pass, "{v:?}");
}

// rule GATE-1: ambient AWS_ACCESS_KEY_ID (another account), AWS_PROFILE and
// AWS_ENDPOINT_URL do not change the proven identity. The check runs in a
// child process so this process's environment is never changed.
#[test]
#[ignore = "needs the moto server: tools/moto/test-aws.sh"]
fn moto_ambient_credentials_do_not_change_the_identity() {
    let t = moto("us-east-1");
    let assumed = t
        .session
        .block_on(
            t.session
                .sts()
                .assume_role()
                .role_arn("arn:aws:iam::111122223333:role/elsewhere")
                .role_session_name("ambient")
                .send(),
        )
        .unwrap();
    let c = assumed.credentials().unwrap();
    let (ak, sk, tok) = (
        c.access_key_id().to_string(),
        c.secret_access_key().to_string(),
        c.session_token().to_string(),
    );
    // Those keys really are another account's.
    let dir = tempfile::tempdir().unwrap();
    let files = profile_files(dir.path(), &[("other", &ak, &sk, Some(&tok))]);
    let other = Session::open(
        &Selector::Profile {
            name: "other".into(),
            files,
        },
        &moto_target("us-east-1"),
    )
    .unwrap();
    assert_eq!(other.caller_identity().unwrap().account, "111122223333");
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args([
            "gates::aws::tests::moto_ambient_child",
            "--exact",
            "--include-ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("BENCHLEDGER_AMBIENT_CHILD", "1")
        .env(
            "BENCHLEDGER_AMBIENT_CREDENTIALS",
            t.files.credentials.as_ref().unwrap(),
        )
        .env("AWS_ACCESS_KEY_ID", &ak)
        .env("AWS_SECRET_ACCESS_KEY", &sk)
        .env("AWS_SESSION_TOKEN", &tok)
        .env("AWS_PROFILE", "other")
        .env("AWS_REGION", "eu-west-1")
        .env(
            "AWS_ENDPOINT_URL",
            format!("http://127.0.0.1:{}", closed_port()),
        )
        .env(
            "AWS_ENDPOINT_URL_STS",
            format!("http://127.0.0.1:{}", closed_port()),
        )
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("1 passed"),
        "the child test did not run: {text}"
    );
}

/// The child half of the ambient test (does nothing unless spawned by it).
#[test]
#[ignore = "spawned by moto_ambient_credentials_do_not_change_the_identity"]
fn moto_ambient_child() {
    if std::env::var("BENCHLEDGER_AMBIENT_CHILD").as_deref() != Ok("1") {
        return;
    }
    let ambient = ambient_variables_present(std::env::vars().map(|(k, _)| k));
    for v in [
        "AWS_ACCESS_KEY_ID",
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_STS",
        "AWS_PROFILE",
        "AWS_REGION",
        "AWS_SESSION_TOKEN",
    ] {
        assert!(
            ambient.contains(&v.to_string()),
            "{v} missing from {ambient:?}"
        );
    }
    let files = ProfileFiles {
        config: None,
        credentials: Some(
            std::env::var("BENCHLEDGER_AMBIENT_CREDENTIALS")
                .unwrap()
                .into(),
        ),
    };
    let s = Session::open(
        &Selector::Profile {
            name: "bench-test".into(),
            files,
        },
        &moto_target("us-east-1"),
    )
    .unwrap();
    let id = s.caller_identity().unwrap();
    assert_eq!(id.account, MOTO_ACCOUNT);
    let v = judge_identity(&key(), &moto_principal().manifest.private, &id);
    assert_eq!(v.status, Status::Pass);
}

fn set_moto_quota(value: u64) {
    let url = crate::gates::http::parse_http_url(&format!(
        "{}/_benchledger/quotas/ec2/{}",
        moto_url(),
        manifest::EC2_VCPU_QUOTA_CODE
    ))
    .unwrap();
    let r = crate::gates::http::exchange(
        crate::gates::http::Method::Put,
        &url,
        &[("Content-Type".into(), "application/json".into())],
        format!("{{\"value\": {value}}}").as_bytes(),
        Duration::from_secs(10),
    )
    .unwrap();
    assert_eq!(r.status, 200, "{:?}", String::from_utf8_lossy(&r.body));
}

// rule GATE-2: quota sufficient at the bound, insufficient one below; a live central host counts once.
#[test]
#[ignore = "needs the moto server: tools/moto/test-aws.sh"]
fn moto_quota_sufficient_and_insufficient() {
    // Its own region: the regional use is what this test launched.
    let region = "eu-north-1";
    let t = moto(region);
    let run = unique("quota");
    let m = run_manifest(region, &run);
    set_moto_quota(1_000);
    let base = measure_quota(&t.session, &m, m.limits.concurrency, true)
        .unwrap()
        .used_vcpu;
    let a = launch(&t.session, "m5.large", &[("project", "other")]);
    let b = launch(&t.session, "m5.large", &[("project", "other")]);
    // used = base + 4; required = 1 x 2 + 4 headroom + 4 central to provision = 10.
    set_moto_quota(base + 4 + 10);
    let n = measure_quota(&t.session, &m, m.limits.concurrency, true).unwrap();
    assert_eq!(n.used_vcpu, base + 4);
    assert_eq!(n.required_vcpu, 10);
    assert_eq!(n.status(), Status::Pass, "{n:?}");
    let obs = quota_observation(&m, region, &Ok(n));
    assert_eq!(
        (obs.quota_vcpu, obs.available_vcpu, obs.status),
        (base + 14, 10, Status::Pass)
    );
    set_moto_quota(base + 4 + 9);
    let n = measure_quota(&t.session, &m, m.limits.concurrency, true).unwrap();
    assert_eq!(n.status(), Status::Fail, "{n:?}");
    // A live central host (m5.xlarge, 4 vCPU) is in the use and not required again.
    let c = launch(
        &t.session,
        "m5.xlarge",
        &[
            ("benchledger:run", &run),
            ("benchledger:role", "bitrouter-central"),
        ],
    );
    set_moto_quota(base + 8 + 6);
    let n = measure_quota(&t.session, &m, m.limits.concurrency, true).unwrap();
    assert!(n.central_live);
    assert_eq!(
        (n.used_vcpu, n.required_vcpu, n.status()),
        (base + 8, 6, Status::Pass)
    );
    set_moto_quota(64);
    for id in [a, b, c] {
        t.session.terminate_instance(&id).unwrap();
    }
}

// rule CLEAN-1: exact run tag AND role tag, every live state, tracked ids and
// their attachments; a project tag alone is never residue.
#[test]
#[ignore = "needs the moto server: tools/moto/test-aws.sh"]
fn moto_audit_finds_every_run_resource_and_nothing_else() {
    let t = moto("us-west-2");
    let s = &t.session;
    let run = unique("audit");
    let m = run_manifest("us-west-2", &run);
    let tags = [
        ("benchledger:run", run.as_str()),
        ("benchledger:role", "sandbox"),
    ];
    let running = launch(s, "m5.large", &tags);
    let stopped = launch(s, "m5.large", &tags);
    s.block_on(s.ec2().stop_instances().instance_ids(&stopped).send())
        .unwrap();
    let gone = launch(s, "m5.large", &tags);
    s.terminate_instance(&gone).unwrap();
    let stray = create_volume(s, &tags);
    let orphan = create_interface(s, &tags);
    let project_only = create_volume(s, &[("project", "benchledger")]);
    let run_only = create_volume(s, &[("benchledger:run", run.as_str())]);
    let other_run = create_volume(
        s,
        &[
            ("benchledger:run", "another-run"),
            ("benchledger:role", "sandbox"),
        ],
    );
    let tracked: BTreeSet<String> = [running.clone()].into();
    let found = audit(s, &RunTags::of(&m), &tracked).unwrap();
    let instances = ids(&found, "instance");
    assert_eq!(
        instances,
        [running.clone(), stopped.clone()].into(),
        "{found:?}"
    );
    let states: BTreeMap<&str, &str> = found
        .iter()
        .filter(|r| r.resource == "instance")
        .map(|r| (r.id.as_str(), r.state.as_str()))
        .collect();
    assert_eq!(states[running.as_str()], "running");
    assert_eq!(states[stopped.as_str()], "stopped");
    let running_row = found.iter().find(|r| r.id == running).unwrap();
    assert_eq!(running_row.found_by, "run_tag,tracked_id");
    let volumes = ids(&found, "volume");
    assert!(volumes.contains(&stray), "{found:?}");
    for not in [&project_only, &run_only, &other_run] {
        assert!(!volumes.contains(not), "{not} must not be found: {found:?}");
    }
    let interfaces = ids(&found, "network_interface");
    assert!(interfaces.contains(&orphan), "{found:?}");
    // moto drops launch interface tags: only the tracked instance's
    // attachment finds its interface.
    let launch_eni = found.iter().find(|r| {
        r.resource == "network_interface" && r.found_by == format!("attachment_of:{running}")
    });
    assert!(launch_eni.is_some(), "{found:?}");
    let obs = audit_observation(
        GroupRef {
            lineage: "l".into(),
            group: "r1".into(),
        },
        &m,
        m.central.instance_id.clone(),
        "us-west-2",
        "arn:aws:sts::********9012:user/…",
        &tracked,
        &Ok(found.clone()),
    );
    assert_eq!(obs.status, Status::Fail);
    assert_eq!(obs.tracked_instance_ids, std::slice::from_ref(&running));
    // No string of it looks like a credential (the append guard's check).
    for (field, value) in crate::schema::events::Event::CleanupAudited(obs).strings() {
        assert_eq!(crate::schema::secrets::scan(&value), None, "{field}");
    }
    // Clean up what this test made.
    let plan = termination_plan(&found, None);
    terminate(s, &plan, Duration::from_secs(30), &mut |_| Ok(())).unwrap();
    for v in [project_only, run_only, other_run] {
        s.delete_volume(&v).unwrap();
    }
}

// rule CLEAN-2: the central host is excluded by its instance id only.
#[test]
#[ignore = "needs the moto server: tools/moto/test-aws.sh"]
fn moto_central_host_excluded_by_id() {
    let t = moto("eu-west-2");
    let s = &t.session;
    let run = unique("central");
    let mut m = run_manifest("eu-west-2", &run);
    let central_tags = [
        ("benchledger:run", run.as_str()),
        ("benchledger:role", "bitrouter-central"),
    ];
    let central = launch(s, "m5.large", &central_tags);
    // Not the manifest's instance id: a run-tagged central host is residue.
    let found = audit(s, &RunTags::of(&m), &BTreeSet::new()).unwrap();
    assert_eq!(ids(&found, "instance"), [central.clone()].into());
    assert_eq!(
        audit_status(&found, m.central.instance_id.as_deref()),
        Status::Fail
    );
    // Named by id in the manifest: excluded, with its attached volume and interface.
    m.central.instance_id = Some(central.clone());
    let found = audit(s, &RunTags::of(&m), &BTreeSet::new()).unwrap();
    assert!(
        found
            .iter()
            .any(|r| r.found_by.contains(&format!("attachment_of:{central}"))),
        "{found:?}"
    );
    let obs = audit_observation(
        GroupRef {
            lineage: "l".into(),
            group: "r1".into(),
        },
        &m,
        m.central.instance_id.clone(),
        "eu-west-2",
        "id",
        &BTreeSet::new(),
        &Ok(found.clone()),
    );
    assert_eq!(obs.status, Status::Pass, "{found:?}");
    assert_eq!(obs.excluded_central_instance_id, Some(central.clone()));
    assert!(termination_plan(&found, Some(&central)).is_empty());
    // A sandbox next to it is residue.
    let sandbox = launch(
        s,
        "m5.large",
        &[
            ("benchledger:run", run.as_str()),
            ("benchledger:role", "sandbox"),
        ],
    );
    let found = audit(s, &RunTags::of(&m), &BTreeSet::new()).unwrap();
    assert_eq!(audit_status(&found, Some(&central)), Status::Fail);
    let plan = termination_plan(&found, Some(&central));
    assert!(plan.iter().all(|r| r.id != central));
    assert!(plan.iter().any(|r| r.id == sandbox));
    m.central.instance_id = None;
    let found = audit(s, &RunTags::of(&m), &[sandbox].into()).unwrap();
    terminate(
        s,
        &termination_plan(&found, None),
        Duration::from_secs(30),
        &mut |_| Ok(()),
    )
    .unwrap();
}

// rule CLEAN-1, CLEAN-2: terminate what the audit proved, then the audit reaches zero.
#[test]
#[ignore = "needs the moto server: tools/moto/test-aws.sh"]
fn moto_terminate_then_audit_reaches_zero() {
    let t = moto("ap-southeast-2");
    let s = &t.session;
    let run = unique("terminate");
    let m = run_manifest("ap-southeast-2", &run);
    let tags = [
        ("benchledger:run", run.as_str()),
        ("benchledger:role", "sandbox"),
    ];
    let a = launch(s, "m5.large", &tags);
    let b = launch(s, "m5.large", &tags);
    let stray = create_volume(s, &tags);
    let orphan = create_interface(s, &tags);
    let keep = create_volume(s, &[("project", "benchledger")]);
    assert_eq!(live_sandboxes(s, &m).unwrap().len(), 2);
    let tracked: BTreeSet<String> = [a.clone(), b.clone()].into();
    let found = audit(s, &RunTags::of(&m), &tracked).unwrap();
    assert_eq!(audit_status(&found, None), Status::Fail);
    let plan = termination_plan(&found, None);
    let mut recorded = Vec::new();
    let calls = terminate(s, &plan, Duration::from_secs(30), &mut |t| {
        recorded.push(t.clone());
        Ok(())
    })
    .unwrap();
    assert_eq!(calls, recorded, "every call is recorded as it happens");
    assert_eq!(calls.len(), plan.len());
    let answer = |id: &str| {
        calls
            .iter()
            .find(|c| c.resource.id == id)
            .unwrap()
            .answer
            .clone()
    };
    assert_eq!(answer(&a), "ok: shutting-down");
    assert_eq!(answer(&stray), "ok: deleted");
    assert_eq!(answer(&orphan), "ok: deleted");
    assert_eq!(calls[0].action, "TerminateInstances");
    // The tracked ids are followed again: the tail is zero.
    let after = audit(s, &RunTags::of(&m), &tracked).unwrap();
    assert_eq!(after, vec![], "tail not zero");
    assert_eq!(audit_status(&after, None), Status::Pass);
    assert_eq!(live_sandboxes(s, &m).unwrap(), vec![]);
    // The project-tagged volume was never touched.
    let still = s.volumes(&[filter("volume-id", [keep.clone()])]).unwrap();
    assert_eq!(still.len(), 1);
    s.delete_volume(&keep).unwrap();
}

// The monitor's count: live run-tagged sandboxes only (not the central host).
#[test]
#[ignore = "needs the moto server: tools/moto/test-aws.sh"]
fn moto_live_sandbox_count() {
    let t = moto("sa-east-1");
    let s = &t.session;
    let run = unique("monitor");
    let m = run_manifest("sa-east-1", &run);
    assert_eq!(live_sandboxes(s, &m).unwrap(), vec![]);
    let a = launch(
        s,
        "m5.large",
        &[
            ("benchledger:run", run.as_str()),
            ("benchledger:role", "sandbox"),
        ],
    );
    let c = launch(
        s,
        "m5.large",
        &[
            ("benchledger:run", run.as_str()),
            ("benchledger:role", "bitrouter-central"),
        ],
    );
    assert_eq!(
        live_sandboxes(s, &m).unwrap(),
        vec![(a.clone(), "running".to_string())]
    );
    s.terminate_instance(&a).unwrap();
    s.terminate_instance(&c).unwrap();
    assert_eq!(live_sandboxes(s, &m).unwrap(), vec![]);
}
