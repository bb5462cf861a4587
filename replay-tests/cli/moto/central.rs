//! `central up` / `central down` and `run`'s central-host gate on the moto
//! server (issue 30): a provisioned host launched once, adopted after a lost
//! launch, counted by the quota gate only until it exists, excluded from
//! cleanup by its recorded id and torn down to zero; a reused host checked
//! against the frozen one before any case. Included in `run.rs`'s `moto`
//! module (its helpers and its lock).

use super::*;

const ROLE_KEY: &str = "benchledger:role";
const RUN_KEY: &str = "benchledger:run";
const CENTRAL_ROLE: &str = "bitrouter-central";
const CENTRAL_AMI: &str = "ami-0abcdef1234567890";
const CENTRAL_TYPE: &str = "c7i.xlarge";

/// The text between the first `<tag>` and `</tag>` of each element.
fn xml_all(body: &str, tag: &str) -> Vec<String> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    body.split(&open)
        .skip(1)
        .filter_map(|t| t.split_once(&close).map(|(v, _)| v.to_string()))
        .collect()
}

/// moto's default subnet and security group in us-east-1.
fn default_network() -> (String, String) {
    let subnets = ec2("Action=DescribeSubnets&Filter.1.Name=default-for-az&Filter.1.Value.1=true");
    let groups =
        ec2("Action=DescribeSecurityGroups&Filter.1.Name=group-name&Filter.1.Value.1=default");
    (
        xml_all(&subnets, "subnetId").remove(0),
        xml_all(&groups, "groupId").remove(0),
    )
}

/// Address `k` of that subnet (its CIDR's first three octets, then `k`):
/// each test's central host its own, the one its lineage gives sandboxes.
fn address(k: u8) -> String {
    let subnets = ec2("Action=DescribeSubnets&Filter.1.Name=default-for-az&Filter.1.Value.1=true");
    let cidr = xml_all(&subnets, "cidrBlock").remove(0);
    let prefix: Vec<&str> = cidr.split('.').take(3).collect();
    format!("{}.{k}", prefix.join("."))
}

/// Instances a test made or caused, terminated when it ends.
struct Hosts(std::cell::RefCell<Vec<String>>);

impl Hosts {
    fn new() -> Hosts {
        Hosts(std::cell::RefCell::new(Vec::new()))
    }

    /// One instance with these tags at this private address in the
    /// default subnet, as a host the operator made.
    fn make(&self, ami: &str, instance_type: &str, tags: &[(&str, &str)], at: &str) -> String {
        let (subnet, _) = default_network();
        let mut q = format!(
            "Action=RunInstances&ImageId={ami}&InstanceType={instance_type}&MinCount=1&MaxCount=1&SubnetId={subnet}&PrivateIpAddress={at}&TagSpecification.1.ResourceType=instance"
        );
        for (i, (k, v)) in tags.iter().enumerate() {
            q.push_str(&format!(
                "&TagSpecification.1.Tag.{n}.Key={k}&TagSpecification.1.Tag.{n}.Value={v}",
                n = i + 1
            ));
        }
        let id = xml_all(&ec2(&q), "instanceId").remove(0);
        self.0.borrow_mut().push(id.clone());
        id
    }

    fn adopt(&self, ids: &[String]) {
        self.0.borrow_mut().extend(ids.iter().cloned());
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for id in self.0.borrow().iter() {
            ec2(&format!("Action=TerminateInstances&InstanceId.1={id}"));
        }
    }
}

/// Live (pending or running) central hosts carrying `run` as run tag.
fn tagged(run: &str) -> Vec<String> {
    xml_all(
        &ec2(&format!(
            "Action=DescribeInstances&Filter.1.Name=tag:{RUN_KEY}&Filter.1.Value.1={run}&Filter.2.Name=tag:{ROLE_KEY}&Filter.2.Value.1={CENTRAL_ROLE}&Filter.3.Name=instance-state-name&Filter.3.Value.1=pending&Filter.3.Value.2=running"
        )),
        "instanceId",
    )
}

fn state_of(id: &str) -> String {
    let body = ec2(&format!("Action=DescribeInstances&InstanceId.1={id}"));
    let state = body.split("<instanceState>").nth(1).unwrap_or_default();
    xml_all(state, "name").remove(0)
}

/// A test manifest whose run tag is `run` (no other test's audit sees its
/// hosts) and that freezes `[central.launch]` in moto's default network,
/// the daemon at `at` (the address sandboxes are given).
fn provision_manifest(run: &str, at: &str) -> impl Fn(&str) -> String {
    let (subnet, sg) = default_network();
    let (run, at) = (run.to_string(), at.to_string());
    move |m: &str| {
        let m = replace_line(m, "run_value", &format!("run_value = \"{run}\""));
        replace_line(
            &m,
            "daemon_host",
            &format!("daemon_host = \"{at}\"\n\n[central.launch]\nsubnet_id = \"{subnet}\"\nsecurity_group_ids = [\"{sg}\"]\nready_timeout_sec = 60"),
        )
    }
}

fn json_of(r: &Run) -> Value {
    serde_json::from_str(r.stdout.lines().last().unwrap_or("null")).unwrap_or(Value::Null)
}

fn central_checks(h: &Harness, kind: &str) -> Vec<Value> {
    records(h, "check_recorded.v1")
        .into_iter()
        .filter(|r| r["payload"]["check"] == kind)
        .collect()
}

#[test]
#[ignore = "needs the moto server: tools/moto/test-aws.sh"]
fn moto_central_is_launched_once_counted_until_it_exists_and_torn_down_to_zero() {
    let _moto = shared();
    let hosts = Hosts::new();
    let run = "central-provision-1";
    let at = address(21);
    let (h, _, p) = on_moto_edited(1, 1, MOTO_PRINCIPAL, &provision_manifest(run, &at));
    // GATE-2: before the host exists its 4 vCPUs are in the need.
    let before = json_of(&aws(&h, &["quota", "check", "--private", &p, "--json"]));
    let up = aws(&h, &["central", "up", "--private", &p, "--json"]);
    assert_eq!(up.code, 0, "FREEZE-8: {}\n{}", up.stderr, up.stdout);
    let obs = json_of(&up);
    let id = obs["target"].as_str().unwrap().to_string();
    hosts.adopt(std::slice::from_ref(&id));
    assert_eq!(obs["details"]["action"], "launched", "{obs}");
    assert_eq!(
        obs["details"]["ami"], CENTRAL_AMI,
        "FREEZE-8: the frozen AMI"
    );
    assert_eq!(
        obs["details"]["instance_type"], CENTRAL_TYPE,
        "FREEZE-8: the frozen type"
    );
    assert_eq!(
        obs["details"]["role_tag"], CENTRAL_ROLE,
        "FREEZE-8: the frozen role tag"
    );
    assert_eq!(obs["details"]["run_tag"], run, "CLEAN-1: the run tag");
    assert_eq!(
        obs["details"]["private_ip"],
        at.as_str(),
        "GATE-3: launched at the address every sandbox is given"
    );
    assert!(obs["details"]["launch_time"].is_string(), "{obs}");
    assert_eq!(
        tagged(run),
        vec![id.clone()],
        "one host with the exact tags"
    );
    // A second `up` checks the recorded host; it never launches another.
    let again = aws(&h, &["central", "up", "--private", &p, "--json"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    let again = json_of(&again);
    assert_eq!(
        (
            again["details"]["action"].as_str(),
            again["target"].as_str()
        ),
        (Some("checked"), Some(id.as_str()))
    );
    assert_eq!(tagged(run).len(), 1, "FREEZE-8: never a second host");
    // GATE-2: once observed, the host is in the region's use, not the need.
    let after = json_of(&aws(&h, &["quota", "check", "--private", &p, "--json"]));
    assert_eq!(
        before["required_vcpu"].as_u64().unwrap() - after["required_vcpu"].as_u64().unwrap(),
        4,
        "GATE-2: the central vCPUs leave the need once it exists: {before} {after}"
    );
    // CLEAN-2: the group's audit finds it and excludes it by the recorded id.
    let audit = aws(
        &h,
        &["cleanup", "audit", "canary-1", "--private", &p, "--json"],
    );
    assert_eq!(audit.code, 0, "CLEAN-2: {}\n{}", audit.stderr, audit.stdout);
    let a = json_of(&audit);
    assert_eq!(
        a["excluded_central_instance_id"],
        id.as_str(),
        "CLEAN-2: {a}"
    );
    // Teardown: terminated and audited by exact tags to zero (CLEAN-1, CLEAN-3).
    let down = aws(&h, &["central", "down", "--private", &p, "--json"]);
    assert_eq!(down.code, 0, "CLEAN-3: {}\n{}", down.stderr, down.stdout);
    let d = json_of(&down);
    assert_eq!(
        (d["check"].as_str(), d["details"]["live_count"].as_str()),
        (Some("central_teardown"), Some("0")),
        "CLEAN-3: {d}"
    );
    assert!(
        tagged(run).is_empty(),
        "CLEAN-1: nothing left by the exact tags"
    );
    assert!(["terminated", "shutting-down"].contains(&state_of(&id).as_str()));
    // Torn down once: `up` is refused, never a relaunch.
    let relaunch = aws(&h, &["central", "up", "--private", &p]);
    assert_eq!(relaunch.code, 3, "FREEZE-8: {}", relaunch.stderr);
    assert!(relaunch.stderr.contains("torn down"), "{}", relaunch.stderr);
}

#[test]
#[ignore = "needs the moto server: tools/moto/test-aws.sh"]
fn moto_a_launch_lost_to_a_killed_run_is_adopted_never_launched_twice() {
    let _moto = shared();
    let hosts = Hosts::new();
    let run = "central-adopt-1";
    let at = address(22);
    let (h, url, p) = on_moto_edited(1, 1, MOTO_PRINCIPAL, &provision_manifest(run, &at));
    // What a `run` killed after RunInstances and before its observation
    // leaves: a host with the run and central role tags, nothing recorded.
    let lost = hosts.make(
        CENTRAL_AMI,
        CENTRAL_TYPE,
        &[(RUN_KEY, run), (ROLE_KEY, CENTRAL_ROLE)],
        &at,
    );
    assert!(central_checks(&h, "central_host").is_empty());
    let r = aws_run(&h, &url, &p);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let checks = central_checks(&h, "central_host");
    assert_eq!(
        checks[0]["payload"]["details"]["action"], "adopted",
        "FREEZE-8: {checks:?}"
    );
    assert_eq!(checks[0]["payload"]["target"], lost.as_str());
    assert_eq!(
        tagged(run),
        vec![lost.clone()],
        "FREEZE-8: the rerun never launched a second host"
    );
    // The gate was taken before the case started (RUN-1 order, VERDICT-3).
    let started = records(&h, "case_started.v1");
    assert!(checks[0]["seq"].as_u64() < started[0]["seq"].as_u64());
    assert_eq!(sealed_status(&h), "accepted");
}

/// moto holds its answer to the RunInstances calls carrying `run` (the
/// instance exists, the launcher still waits) for the life of the guard.
struct HeldLaunches(String);

impl HeldLaunches {
    fn hold(run: &str) -> HeldLaunches {
        let body = json!({ "match": run, "ms": 20_000 }).to_string();
        moto_http("PUT", "/_benchledger/holds/RunInstances", &[], &body);
        HeldLaunches(run.to_string())
    }
}

impl Drop for HeldLaunches {
    fn drop(&mut self) {
        let body = json!({ "match": self.0, "ms": 0 }).to_string();
        moto_http("PUT", "/_benchledger/holds/RunInstances", &[], &body);
    }
}

#[test]
#[ignore = "needs the moto server: tools/moto/test-aws.sh"]
fn moto_a_run_killed_between_launch_and_its_observation_is_adopted_on_rerun() {
    let _moto = shared();
    let hosts = Hosts::new();
    let run = "central-kill-1";
    let at = address(24);
    let (h, url, p) = on_moto_edited(1, 1, MOTO_PRINCIPAL, &provision_manifest(run, &at));
    let held = HeldLaunches::hold(run);
    let mut child = run_cmd(&h, &url, &["--private", &p])
        .env("HOME", h.path(""))
        .env_remove("AWS_CONFIG_FILE")
        .env_remove("AWS_SHARED_CREDENTIALS_FILE")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // EC2 launched the host; `run` still waits for RunInstances' answer.
    await_until("the launched central host", || tagged(run).len() == 1);
    let launched = tagged(run);
    hosts.adopt(&launched);
    child.kill().unwrap();
    await_until("the killed run to be reaped", || {
        child.try_wait().unwrap().is_some()
    });
    drop(held);
    assert!(
        central_checks(&h, "central_host").is_empty(),
        "FREEZE-8: killed before its observation was recorded"
    );
    let r = aws_run(&h, &url, &p);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let checks = central_checks(&h, "central_host");
    assert_eq!(
        checks[0]["payload"]["details"]["action"], "adopted",
        "FREEZE-8: the rerun adopts the launched host: {checks:?}"
    );
    assert_eq!(checks[0]["payload"]["target"], launched[0].as_str());
    assert_eq!(
        checks[0]["payload"]["details"]["private_ip"],
        at.as_str(),
        "GATE-3: at the sandboxes' daemon address"
    );
    assert_eq!(
        tagged(run),
        launched,
        "FREEZE-8: the rerun never launched a second host"
    );
    assert_eq!(sealed_status(&h), "accepted");
}

#[test]
#[ignore = "needs the moto server: tools/moto/test-aws.sh"]
fn moto_a_provisioned_host_lost_mid_lineage_stops_it_and_is_still_torn_down() {
    let _moto = shared();
    let hosts = Hosts::new();
    let run = "central-lost-1";
    // Two cases one at a time: the host is checked again before the second
    // wave (FREEZE-8 before every wave).
    // Each case ends once the test releases it (`go`), under a launch
    // timeout past that wait.
    let provision = provision_manifest(run, &address(23));
    let timeout = format!("timeout_sec = {AWAITED_LAUNCH_TIMEOUT_SEC}");
    let (h, url, p) = on_moto_edited(2, 1, MOTO_PRINCIPAL, &|m| {
        replace_line(&provision(m), "timeout_sec = 4", &timeout)
    });
    let go = h.path("go");
    write_launch(&h, &format!("await_file '{}'\n", go.display()));
    let child = run_cmd(&h, &url, &["--private", &p])
        .env("HOME", h.path(""))
        .env_remove("AWS_CONFIG_FILE")
        .env_remove("AWS_SHARED_CREDENTIALS_FILE")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The first case started: the host was launched and observed before it.
    await_until("the first case to start", || {
        !records(&h, "case_started.v1").is_empty()
    });
    let id = central_checks(&h, "central_host")[0]["payload"]["target"]
        .as_str()
        .unwrap()
        .to_string();
    hosts.adopt(std::slice::from_ref(&id));
    // Someone stops the host behind the lineage's back, then the case ends.
    ec2(&format!("Action=StopInstances&InstanceId.1={id}"));
    std::fs::write(&go, "").unwrap();
    let r: Run = child.wait_with_output().unwrap().into();
    assert_ne!(r.code, 0, "VERDICT-3: {}", r.stdout);
    let stops = records(&h, "lineage_stopped.v1");
    assert_eq!(stops.len(), 1, "VERDICT-3: {stops:?}\n{}", r.stderr);
    assert_eq!(stops[0]["payload"]["rule"], "VERDICT-3");
    assert_eq!(
        records(&h, "case_started.v1").len(),
        1,
        "VERDICT-3: no case after the failed host check"
    );
    let checks = central_checks(&h, "central_host");
    assert_eq!(
        checks.last().unwrap()["payload"]["status"],
        "fail",
        "FREEZE-8: {checks:?}"
    );
    // A hard stop still tears down what the lineage provisioned (CLEAN-3).
    let down = central_checks(&h, "central_teardown");
    assert_eq!(down.len(), 1, "CLEAN-3: {}", r.stderr);
    assert_eq!(down[0]["payload"]["status"], "pass", "CLEAN-3: {down:?}");
    assert!(tagged(run).is_empty());
}

/// A reused host made in moto with one thing wrong (or nothing) at
/// address `(host, frozen)`'s first, and the lineage that freezes the
/// right values, that host's id and the second as the daemon's address.
fn reused(
    hosts: &Hosts,
    ami: &str,
    instance_type: &str,
    role: &str,
    (at, frozen_at): (u8, u8),
) -> (Harness, String, String, String) {
    let id = hosts.make(ami, instance_type, &[(ROLE_KEY, role)], &address(at));
    let frozen_id = id.clone();
    let daemon = address(frozen_at);
    let (h, url, p) = on_moto_edited(1, 1, MOTO_PRINCIPAL, &move |m: &str| {
        let m = replace_line(m, "run_value", "run_value = \"central-reuse\"");
        let m = replace_line(&m, "daemon_host", &format!("daemon_host = \"{daemon}\""));
        replace_line(
            &m,
            "mode = \"provision\"",
            &format!("mode = \"reuse\"\ninstance_id = \"{frozen_id}\""),
        )
    });
    (h, url, p, id)
}

#[test]
#[ignore = "needs the moto server: tools/moto/test-aws.sh"]
fn moto_a_reused_host_that_differs_from_the_frozen_one_stops_the_lineage_before_any_case() {
    let _moto = shared();
    let hosts = Hosts::new();
    // The fifth: the right host, but sandboxes are given another address.
    let cases: [(&str, &str, &str, bool, &str); 5] = [
        (CENTRAL_AMI, CENTRAL_TYPE, "sandbox", false, "role tag"),
        (
            "ami-0000000000000000b",
            CENTRAL_TYPE,
            CENTRAL_ROLE,
            false,
            "AMI",
        ),
        (
            CENTRAL_AMI,
            "m5.large",
            CENTRAL_ROLE,
            false,
            "instance type",
        ),
        (CENTRAL_AMI, CENTRAL_TYPE, CENTRAL_ROLE, true, "state"),
        (
            CENTRAL_AMI,
            CENTRAL_TYPE,
            CENTRAL_ROLE,
            false,
            "private address",
        ),
    ];
    for (k, (ami, instance_type, role, stop, what)) in (31u8..).zip(cases) {
        let frozen_at = if what == "private address" { k + 10 } else { k };
        let (h, url, p, id) = reused(&hosts, ami, instance_type, role, (k, frozen_at));
        if stop {
            ec2(&format!("Action=StopInstances&InstanceId.1={id}"));
        }
        let r = aws_run(&h, &url, &p);
        assert_ne!(r.code, 0, "VERDICT-3: a wrong {what}: {}", r.stdout);
        let check = central_checks(&h, "central_host");
        assert_eq!(check[0]["payload"]["status"], "fail", "FREEZE-8: {what}");
        let why = check[0]["payload"]["details"]["mismatches"]
            .as_str()
            .unwrap_or_default();
        assert!(why.contains(what), "FREEZE-8: the {what} is named: {why}");
        let stops = records(&h, "lineage_stopped.v1");
        assert_eq!(stops.len(), 1, "VERDICT-3: {what}");
        assert!(
            records(&h, "case_started.v1").is_empty(),
            "VERDICT-3: no case before a wrong {what}"
        );
        // A reused host is never terminated, even after a hard stop (CLEAN-2).
        assert!(central_checks(&h, "central_teardown").is_empty(), "CLEAN-2");
        assert_eq!(state_of(&id), if stop { "stopped" } else { "running" });
    }
    // The same check holds for the frozen host itself: the canary runs.
    let (h, url, p, id) = reused(&hosts, CENTRAL_AMI, CENTRAL_TYPE, CENTRAL_ROLE, (37, 37));
    let r = aws_run(&h, &url, &p);
    assert_eq!(r.code, 0, "FREEZE-8: the frozen host passes: {}", r.stderr);
    assert_eq!(
        central_checks(&h, "central_host")[0]["payload"]["status"],
        "pass"
    );
    assert_eq!(sealed_status(&h), "accepted");
    let audit = records(&h, "cleanup_audited.v1");
    assert_eq!(
        audit.last().unwrap()["payload"]["excluded_central_instance_id"],
        id.as_str(),
        "CLEAN-2: excluded by id"
    );
    let down = aws(&h, &["central", "down", "--private", &p]);
    assert_eq!(down.code, 0, "{}", down.stderr);
    assert!(
        down.stdout.contains("never terminated"),
        "CLEAN-2: {}",
        down.stdout
    );
    assert_eq!(
        state_of(&id),
        "running",
        "CLEAN-2: a reused host is never terminated"
    );
}
