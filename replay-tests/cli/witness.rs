//! TRUST-6 through the CLI: a lineage whose manifest freezes two witnesses
//! and a quorum of 2, `checkpoint witness` against two test witnesses
//! (tools/witness/witness.py, written from the C2SP tlog-witness and
//! tlog-cosignature texts alone), and what `report` says of each seal.
//! The tests start the witness processes and end them by their pid.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use benchledger::log::ledger::{Draft, Ledger};
use benchledger::log::record::Record;
use benchledger::log::tlog::{KeyKind, SignerKey};
use benchledger::schema::events::{Event, ManifestFrozenV3};
use benchledger::schema::manifest::{Witness, Witnessing};
use serde_json::Value;

use super::Harness;

/// A witness process, killed (by its pid) when dropped.
struct WitnessProcess {
    child: Child,
}

impl Drop for WitnessProcess {
    fn drop(&mut self) {
        // Killed by its pid, then reaped within a bound (never a panic in
        // a drop).
        let _ = self.child.kill();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while matches!(self.child.try_wait(), Ok(None)) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}

fn witness_key(name: &str) -> SignerKey {
    let seed = blake3::derive_key("benchledger cli witness test", name.as_bytes());
    SignerKey::from_seed(&format!("w.example/{name}"), KeyKind::CosignatureV1, seed).unwrap()
}

/// A free local port (bound, read, released).
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// Starts the test witness `name` on `port` for the log `origin` signed by
/// `log_vkey`, with its state in `state`; returns once it listens.
fn start_witness(
    h: &Harness,
    name: &str,
    port: u16,
    origin: &str,
    log_vkey: &str,
    state: &Path,
) -> WitnessProcess {
    let key = h.path(&format!("{name}.witness.key"));
    std::fs::write(&key, witness_key(name).encode() + "\n").unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/witness/witness.py");
    let mut child = Command::new("python3")
        .arg(&script)
        .args(["--key", key.to_str().unwrap()])
        .args(["--origin", origin, "--log-vkey", log_vkey])
        .args(["--state", state.to_str().unwrap()])
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 runs tools/witness/witness.py");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(
        line.trim(),
        format!("listening http://127.0.0.1:{port}"),
        "the test witness did not start (python3 with the cryptography package?)"
    );
    WitnessProcess { child }
}

/// short13-accepted with its manifest frozen as v3 with two witnesses
/// (`a`, `b` on `ports`) and quorum 2: imported up to its freeze, the
/// rewritten freeze, then every later record as recorded (four seals).
fn witnessed_lineage(h: &Harness, ports: [u16; 2]) {
    let src =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("replay-tests/ledgers/short13-accepted.jsonl");
    let text = std::fs::read_to_string(src).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("record_hex")).collect();
    let at = lines
        .iter()
        .position(|l| l.contains("\"kind\":\"manifest_frozen.v2\""))
        .unwrap();
    let prefix = h.path("prefix.jsonl");
    std::fs::write(&prefix, lines[..at].join("\n") + "\n").unwrap();
    h.ok(&["import", "--jsonl", prefix.to_str().unwrap(), "--untrailed"]);
    let ledger = Ledger::open(&h.ledger(), Duration::from_secs(10)).unwrap();
    for (i, line) in lines[at..].iter().enumerate() {
        let v: Value = serde_json::from_str(line).unwrap();
        let d = Record::decode(&hex::decode(v["record_hex"].as_str().unwrap()).unwrap()).unwrap();
        let event = match d.event {
            Event::ManifestFrozenV2(v2) if i == 0 => {
                let mut v2 = *v2;
                let witnesses: Vec<Witness> = ["a", "b"]
                    .iter()
                    .zip(ports)
                    .map(|(n, port)| Witness {
                        name: (*n).into(),
                        key: witness_key(n).verifier().encode(),
                        url: format!("http://127.0.0.1:{port}"),
                    })
                    .collect();
                v2.plan.signers.witnesses = witnesses.iter().map(|w| w.key.clone()).collect();
                Event::ManifestFrozenV3(Box::new(ManifestFrozenV3::join(
                    v2,
                    None,
                    Vec::new(),
                    Some(Witnessing {
                        quorum: 2,
                        witnesses,
                    }),
                )))
            }
            other => other,
        };
        let draft = Draft {
            actor: d.record.actor.clone(),
            event,
            idempotency_key: d.record.idempotency_key.clone(),
        };
        ledger
            .append(&[draft], d.record.recorded_at_utc_ns)
            .unwrap();
    }
}

/// Signs a checkpoint with the example operator key; returns its JSON.
fn sign(h: &Harness, ledger: &Path) -> Value {
    let alice = h.example_key("alice");
    let out = h
        .cmd_at(ledger)
        .args(["checkpoint", "sign", "--key", &alice, "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

fn witness_run(h: &Harness, ledger: &Path) -> (i32, Value, String) {
    let out = h
        .cmd_at(ledger)
        .args(["checkpoint", "witness", "--json"])
        .output()
        .unwrap();
    let json = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (
        out.status.code().unwrap_or(-1),
        json,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The TRUST-6 part of each seal of `report --format json`.
fn seal_witnessing(h: &Harness, ledger: &Path) -> Vec<Value> {
    let out = h
        .cmd_at(ledger)
        .args(["report", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    j["transparency"]["seals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["witnessing"].clone())
        .collect()
}

fn report_md(h: &Harness, ledger: &Path) -> String {
    let out = h.cmd_at(ledger).args(["report"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target: PathBuf = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

#[test]
fn seals_count_once_two_frozen_witnesses_cosigned_and_a_rollback_is_refused() {
    let h = Harness::new();
    let ports = [free_port(), free_port()];
    witnessed_lineage(&h, ports);
    let ledger = h.ledger();
    let first = sign(&h, &ledger);
    let origin = first["origin"].as_str().unwrap().to_string();
    let log_vkey = benchledger::testkit::examples::signer("alice")
        .verifier()
        .encode();
    // A copy of the ledger as it is now, for the rollback below.
    let copy = h.path("copy");
    copy_dir(&ledger, &copy);

    // Witness b is down: a cosigns, b does not; the seals stay pending.
    let a = start_witness(&h, "a", ports[0], &origin, &log_vkey, &h.path("a.state"));
    let (code, j, stderr) = witness_run(&h, &ledger);
    assert_eq!(
        code, 1,
        "TRUST-6: fewer than k cosigned exits 1: {j} {stderr}"
    );
    assert_eq!(
        (j["cosigned"].as_u64(), j["quorum"].as_u64()),
        (Some(1), Some(2)),
        "{j}"
    );
    let rows = j["witnesses"].as_array().unwrap();
    assert_eq!(
        rows[0]["cosigned"], true,
        "TRUST-6: witness a cosigned: {j}"
    );
    assert_eq!(rows[0]["old_size"], 0, "TRUST-6: from size 0 at first");
    assert_eq!(
        rows[1]["cosigned"], false,
        "TRUST-6: witness b is down: {j}"
    );
    assert!(
        rows[1]["message"]
            .as_str()
            .unwrap()
            .contains("did not answer"),
        "{j}"
    );
    assert!(stderr.contains("stay pending"), "{stderr}");
    let seals = seal_witnessing(&h, &ledger);
    assert_eq!(seals.len(), 4);
    for s in &seals {
        assert_eq!(s["counts"], false, "TRUST-6: one of two never counts: {s}");
        assert_eq!(s["line"], "pending: 1 of 2 witnesses cosigned (quorum 2)");
    }
    let md = report_md(&h, &ledger);
    assert!(
        md.contains("pending: 1 of 2 witnesses cosigned (quorum 2) (TRUST-6)"),
        "TRUST-6: the report says the seal is pending: {md}"
    );
    assert!(!md.contains("witnessed by"), "{md}");

    // Both up, a later checkpoint: a from the size it cosigned (a
    // consistency proof), b from 0; every seal counts.
    h.ok(&["note", "after the first witnessing"]);
    let second = sign(&h, &ledger);
    let b = start_witness(&h, "b", ports[1], &origin, &log_vkey, &h.path("b.state"));
    let (code, j, stderr) = witness_run(&h, &ledger);
    assert_eq!(code, 0, "TRUST-6: both cosigned: {j} {stderr}");
    let rows = j["witnesses"].as_array().unwrap();
    assert_eq!(
        (rows[0]["old_size"].as_u64(), rows[1]["old_size"].as_u64()),
        (first["tree_size"].as_u64(), Some(0)),
        "TRUST-6: each witness is sent a proof from the size it last cosigned: {j}"
    );
    assert_eq!(j["tree_size"], second["tree_size"]);
    for s in seal_witnessing(&h, &ledger) {
        assert_eq!(s["counts"], true, "TRUST-6: k = 2 witnesses cosigned: {s}");
        assert_eq!(s["line"], "witnessed by a, b (quorum 2)");
    }
    let md = report_md(&h, &ledger);
    assert!(
        md.contains("witnessed by a, b (quorum 2) (TRUST-6)"),
        "TRUST-6: the report names the witnesses: {md}"
    );
    let log = h.ok(&["log", "--kind", "checkpoint_cosigned"]).stdout;
    assert_eq!(log.lines().count(), 3, "{log}");
    let failed = h.ok(&["log", "--kind", "checkpoint_witness_failed"]).stdout;
    assert_eq!(
        failed.lines().count(),
        1,
        "TRUST-6: the down witness is recorded: {failed}"
    );

    // The copy signs a smaller tree of the same log: both witnesses saw a
    // larger one and refuse it (409 with their size); nothing counts.
    h.cmd_at(&copy)
        .args(["note", "a rolled-back history"])
        .output()
        .unwrap();
    let rolled = sign(&h, &copy);
    assert!(rolled["tree_size"].as_u64() < second["tree_size"].as_u64());
    let (code, j, _) = witness_run(&h, &copy);
    assert_eq!(
        code, 1,
        "TRUST-6: a refused checkpoint is not cosigned: {j}"
    );
    for row in j["witnesses"].as_array().unwrap() {
        assert_eq!(row["cosigned"], false, "{j}");
        assert_eq!(row["http_status"], 409, "{j}");
        assert!(
            row["message"].as_str().unwrap().contains("rolled-back"),
            "TRUST-6: benchledger reports the witness's refusal of a rollback: {j}"
        );
    }
    for s in seal_witnessing(&h, &copy) {
        assert_eq!(s["counts"], false, "TRUST-6: {s}");
        assert_eq!(s["line"], "pending: 0 of 2 witnesses cosigned (quorum 2)");
    }

    // The copy grows past the witnesses' size: their 409 names it, the
    // retry from it carries a proof of the copy's (other) history, and
    // each witness refuses it as a fork (422); still nothing counts.
    let second_size = second["tree_size"].as_u64().unwrap();
    let mut forked = rolled;
    while forked["tree_size"].as_u64().unwrap() <= second_size {
        h.cmd_at(&copy)
            .args(["note", "the other history"])
            .output()
            .unwrap();
        forked = sign(&h, &copy);
    }
    let (code, j, _) = witness_run(&h, &copy);
    assert_eq!(code, 1, "TRUST-6: a fork is not cosigned: {j}");
    for row in j["witnesses"].as_array().unwrap() {
        assert_eq!(
            (row["cosigned"].as_bool(), row["http_status"].as_u64()),
            (Some(false), Some(422)),
            "{j}"
        );
        assert!(
            row["message"]
                .as_str()
                .unwrap()
                .contains(&format!("from size {second_size}")),
            "TRUST-6: retried from the witness's size after its 409: {j}"
        );
    }
    for s in seal_witnessing(&h, &copy) {
        assert_eq!(s["counts"], false, "TRUST-6: {s}");
    }
    drop((a, b));
}

#[test]
fn the_test_witness_passes_its_check_against_the_specs_examples() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/witness/witness.py");
    let out = Command::new("python3")
        .arg(script)
        .arg("--self-check")
        .output()
        .unwrap();
    assert_eq!(
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).trim()
        ),
        (Some(0), "self-check: ok"),
        "TRUST-6: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The run test manifest with witnesses `a` and `b` (on `ports`) listed in
/// `[signers]` and frozen with quorum 2.
#[cfg(not(feature = "aws"))]
fn with_witnesses(manifest: &str, ports: [u16; 2]) -> String {
    let keys: Vec<String> = ["a", "b"]
        .iter()
        .map(|n| witness_key(n).verifier().encode())
        .collect();
    let listed = manifest.replacen(
        "witnesses = []",
        &format!("witnesses = [{:?}, {:?}]", keys[0], keys[1]),
        1,
    );
    assert_ne!(listed, manifest, "the run manifest lists no witnesses");
    let mut table = "\n[witnessing]\nquorum = 2\n".to_string();
    for ((name, key), port) in ["a", "b"].iter().zip(&keys).zip(ports) {
        table += &format!(
            "\n[[witnessing.witnesses]]\nname = \"{name}\"\nkey = \"{key}\"\nurl = \"http://127.0.0.1:{port}\"\n"
        );
    }
    listed + &table
}

#[test]
#[cfg(not(feature = "aws"))]
fn run_sends_the_seal_to_the_witnesses_and_a_missing_cosignature_leaves_it_pending() {
    let ports = [free_port(), free_port()];
    let (h, url) =
        super::run::ready_edited(1, 1, super::PRIVATE, true, &|m| with_witnesses(m, ports));
    let genesis: Value =
        serde_json::from_str(h.ok(&["log", "--to", "0"]).stdout.lines().next().unwrap()).unwrap();
    let origin =
        benchledger::log::tree::origin_of(genesis["payload"]["ledger_id"].as_str().unwrap());
    let log_vkey = benchledger::testkit::examples::signer("alice")
        .verifier()
        .encode();
    let alice = h.example_key("alice");
    let a = start_witness(&h, "a", ports[0], &origin, &log_vkey, &h.path("a.state"));
    let r = super::run::run_once(&h, &url, &["--key", &alice]);
    assert_eq!(r.code, 4, "the cleanup audit needs AWS: {}", r.stderr);
    super::run::audit_clean(&h);
    // b is down: the seal is made, a cosigns its checkpoint, b does not.
    let r = super::run::run_once(&h, &url, &["--key", &alice]);
    assert_eq!(
        r.code, 1,
        "TRUST-6: a seal without its quorum does not count: {}",
        r.stderr
    );
    assert!(
        r.stderr.contains(
            "sealed accepted, but its seal is pending: 1 of 2 witnesses cosigned (quorum 2)"
        ),
        "TRUST-6: run says the seal is pending: {}",
        r.stderr
    );
    let seal = super::run::records(&h, "group_sealed.v1");
    assert_eq!(seal.len(), 1);
    let cosigned = super::run::records(&h, "checkpoint_cosigned.v1");
    assert_eq!(cosigned.len(), 1, "TRUST-6: run sent the seal's checkpoint");
    assert!(
        cosigned[0]["payload"]["tree_size"].as_u64() > seal[0]["seq"].as_u64(),
        "TRUST-6: the cosigned checkpoint covers the seal"
    );
    let md = h.ok(&["report"]).stdout;
    assert!(
        md.contains("pending: 1 of 2 witnesses cosigned (quorum 2) (TRUST-6)"),
        "{md}"
    );
    // b up: `checkpoint witness` completes the quorum.
    let b = start_witness(&h, "b", ports[1], &origin, &log_vkey, &h.path("b.state"));
    let r = h.ok(&["checkpoint", "witness"]);
    assert!(
        r.stdout.contains("2 of 2 witnesses cosigned"),
        "TRUST-6: {}",
        r.stdout
    );
    let md = h.ok(&["report"]).stdout;
    assert!(
        md.contains("witnessed by a, b (quorum 2) (TRUST-6)"),
        "TRUST-6: the seal counts once both cosigned: {md}"
    );
    drop((a, b));
}
