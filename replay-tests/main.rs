//! Replay tests: the committed contract files and recorded ledgers, checked
//! against the code.
//!
//! - `ledger-schema/vectors/`: the committed chain and must-fail cases must
//!   equal what the code generates, the chain must import and verify, and
//!   every must-fail case (read from the committed file, as a second
//!   implementation would) must fail as declared.

use std::path::{Path, PathBuf};
use std::time::Duration;

use benchledger::testkit::vectors;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn vectors_dir() -> PathBuf {
    root().join("ledger-schema/vectors")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn committed_vectors_match_the_code() {
    let hint = "the committed vectors drifted from the code: if the change is intended, run `cargo run --example gen-vectors` and review the diff";
    assert_eq!(
        read(&vectors_dir().join(vectors::CHAIN_FILE)),
        vectors::chain_jsonl(),
        "{hint}"
    );
    assert_eq!(
        read(&vectors_dir().join(vectors::MUST_FAIL_FILE)),
        vectors::must_fail_jsonl(),
        "{hint}"
    );
    assert_eq!(
        read(&vectors_dir().join(benchledger::testkit::tlog_vectors::TLOG_FILE)),
        benchledger::testkit::tlog_vectors::tlog_json(),
        "{hint}"
    );
}

/// `vectors/tlog.json`, read as a second implementation would: every root
/// recomputed from the committed chain's link hashes, every note's
/// signature, every proof checked against the notes alone (and a tampered
/// proof refused). TRUST-1, TRUST-2.
#[test]
fn committed_tlog_vectors_verify_against_the_committed_chain() {
    use benchledger::log::tlog::{
        record_leaf_hash, verify_checkpoint_note, ConsistencyProof, InclusionProof, MemoryNodes,
        VerifierKey,
    };
    let chain = read(&vectors_dir().join(vectors::CHAIN_FILE));
    let lines: Vec<serde_json::Value> = chain
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let links: Vec<[u8; 32]> = lines
        .iter()
        .map(|l| {
            hex::decode(l["hash"].as_str().unwrap())
                .unwrap()
                .try_into()
                .unwrap()
        })
        .collect();
    let t: serde_json::Value = serde_json::from_str(&read(
        &vectors_dir().join(benchledger::testkit::tlog_vectors::TLOG_FILE),
    ))
    .unwrap();
    let vkey = VerifierKey::parse(t["log_vkey"].as_str().unwrap()).unwrap();
    // The roots of every prefix, from the chain's link hashes.
    let mut nodes = MemoryNodes::new();
    let roots = t["roots"].as_array().unwrap();
    assert_eq!(roots.len(), links.len());
    for (seq, link) in links.iter().enumerate() {
        nodes
            .append_leaf_hash(record_leaf_hash(seq as u64, link))
            .unwrap();
        assert_eq!(roots[seq]["size"], seq as u64 + 1);
        assert_eq!(
            roots[seq]["root"],
            hex::encode(nodes.root()),
            "size {}",
            seq + 1
        );
    }
    let root_at =
        |size: u64| -> String { roots[size as usize - 1]["root"].as_str().unwrap().into() };
    let check_note = |note: &str| -> u64 {
        let v = verify_checkpoint_note(note, &vkey, &[]).unwrap();
        assert_eq!(v.checkpoint.origin(), t["origin"].as_str().unwrap());
        assert_eq!(
            hex::encode(v.checkpoint.root()),
            root_at(v.checkpoint.size())
        );
        v.checkpoint.size()
    };
    // The checkpoint the chain records is the one in the file, and holds.
    let rec = &t["recorded_checkpoint"];
    let seq = rec["seq"].as_u64().unwrap();
    assert_eq!(lines[seq as usize]["kind"], "checkpoint_recorded.v1");
    assert_eq!(lines[seq as usize]["payload"]["note"], rec["note"]);
    assert_eq!(check_note(rec["note"].as_str().unwrap()), seq);
    let head = t["head_note"].as_str().unwrap();
    assert_eq!(check_note(head), links.len() as u64);
    for p in t["inclusion_proofs"].as_array().unwrap() {
        let proof = InclusionProof::from_json(p.as_str().unwrap()).unwrap();
        assert_eq!(proof.checkpoint(), head);
        assert_eq!(proof.link_hash(), &links[proof.leaf_index() as usize]);
        proof.verify(&vkey, &[]).unwrap();
        let mut bad: serde_json::Value = serde_json::from_str(p.as_str().unwrap()).unwrap();
        bad["leaf_index"] = (proof.leaf_index() ^ 1).into();
        let bad = InclusionProof::from_json(&bad.to_string()).unwrap();
        assert!(bad.verify(&vkey, &[]).is_err(), "a moved leaf is refused");
    }
    for c in t["consistency_proofs"].as_array().unwrap() {
        let (old, new) = (
            c["old_note"].as_str().unwrap(),
            c["new_note"].as_str().unwrap(),
        );
        let proof = ConsistencyProof::from_json(c["proof_json"].as_str().unwrap()).unwrap();
        assert_eq!(
            (check_note(old), check_note(new)),
            (proof.old_size(), proof.new_size())
        );
        proof.verify(old, new, &vkey, &[]).unwrap();
        assert!(
            proof.verify(new, old, &vkey, &[]).is_err(),
            "swapped notes are refused"
        );
    }
}

#[test]
fn committed_chain_imports_and_verifies() {
    let tmp = tempfile::tempdir().unwrap();
    let text = read(&vectors_dir().join(vectors::CHAIN_FILE));
    let dir = tmp.path().join("l");
    let head = benchledger::log::export::import_jsonl(
        &mut text.as_bytes(),
        "chain.jsonl",
        &dir,
        Duration::from_secs(5),
        benchledger::log::export::TrailerRule::Optional,
    )
    .unwrap();
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(hex::encode(head.hash), last["hash"].as_str().unwrap());
}

#[test]
fn committed_must_fail_cases_fail_as_declared() {
    let text = read(&vectors_dir().join(vectors::MUST_FAIL_FILE));
    let mut n = 0;
    for line in text.lines() {
        let c: serde_json::Value = serde_json::from_str(line).unwrap();
        let case = vectors::MustFail {
            name: "committed".into(),
            walk_seq: c["walk_seq"].as_u64().unwrap(),
            walk_prev_hash: c["walk_prev_hash"].as_str().unwrap().into(),
            key_hex: c["key_hex"].as_str().unwrap().into(),
            value_hex: c["value_hex"].as_str().unwrap().into(),
            expect: serde_json::from_value(c["expect"].clone()).unwrap(),
            expect_seq: c["expect_seq"].as_u64().unwrap(),
        };
        let d = vectors::run_case(&case).unwrap_or_else(|| panic!("{}: accepted", c["name"]));
        assert_eq!(
            (d.kind, d.seq),
            (case.expect, case.expect_seq),
            "{}",
            c["name"]
        );
        n += 1;
    }
    assert!(n >= 10, "only {n} must-fail cases");
}

/// `ledger-schema/EVENTS.md` documents every kind with exactly its payload's
/// top-level fields: a heading "### `kind`" and a table whose rows start
/// with "| `field` |", in encoding order.
#[test]
fn every_kind_is_documented_with_exactly_its_fields() {
    let doc = read(&root().join("ledger-schema/EVENTS.md"));
    let mut documented: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    let mut current: Option<String> = None;
    for line in doc.lines() {
        if let Some(rest) = line.strip_prefix("### `") {
            let kind = rest.split('`').next().unwrap_or_default().to_string();
            documented.insert(kind.clone(), Vec::new());
            current = Some(kind);
        } else if line.starts_with("## ") {
            current = None;
        } else if let (Some(k), Some(rest)) = (&current, line.strip_prefix("| `")) {
            let field = rest.split('`').next().unwrap_or_default().to_string();
            documented.get_mut(k).expect("current kind").push(field);
        }
    }
    for (event, _) in vectors::example_events() {
        let kind = event.kind();
        let fields = documented
            .get(kind)
            .unwrap_or_else(|| panic!("EVENTS.md lacks a section for {kind}"));
        let json = event.payload_json();
        let actual: Vec<String> = match &json {
            serde_json::Value::Object(m) => m.keys().cloned().collect(),
            _ => panic!("{kind} payload is not an object"),
        };
        let mut sorted_doc = fields.clone();
        sorted_doc.sort();
        let mut sorted_actual = actual.clone();
        sorted_actual.sort();
        assert_eq!(
            sorted_doc, sorted_actual,
            "EVENTS.md fields of {kind} differ from the payload"
        );
    }
    assert_eq!(
        documented.len(),
        benchledger::schema::events::Event::KINDS.len(),
        "EVENTS.md documents kinds that do not exist"
    );
}

// ---------------------------------------------------------------------------
// The recorded-ledger corpus (`replay-tests/ledgers/`, built from
// `replay-tests/scenarios/` by `cargo run --example gen-replay`).
// ---------------------------------------------------------------------------

mod corpus {
    use super::*;
    use benchledger::log::ledger::Ledger;
    use benchledger::method::audit::audit;
    use benchledger::method::projections::{replay_scanning, State};
    use benchledger::method::verdict;
    use benchledger::schema::events::{CaseRef, Event, GroupRef};

    pub(super) fn ledgers() -> Vec<(String, PathBuf)> {
        let mut v: Vec<_> = std::fs::read_dir(root().join("replay-tests/ledgers"))
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .map(|p| (p.file_stem().unwrap().to_string_lossy().to_string(), p))
            .collect();
        v.sort();
        v
    }

    /// Imports a committed ledger (verifying every line) into a temp dir.
    pub(super) fn import(name: &str) -> (tempfile::TempDir, Ledger) {
        let path = root().join(format!("replay-tests/ledgers/{name}.jsonl"));
        let text = read(&path);
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("l");
        benchledger::log::export::import_jsonl(
            &mut text.as_bytes(),
            name,
            &dir,
            Duration::from_secs(5),
            benchledger::log::export::TrailerRule::Optional,
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        let ledger = Ledger::open(&dir, Duration::from_secs(5)).unwrap();
        (tmp, ledger)
    }

    /// What a reader checks first: every status, row and reason.
    fn summary(state: &State) -> serde_json::Value {
        let lineages: Vec<serde_json::Value> = state
            .lineages
            .values()
            .map(|l| {
                let view = verdict::lineage_view(state, l);
                let groups: Vec<serde_json::Value> = view
                    .groups
                    .iter()
                    .filter(|g| l.groups.contains_key(&g.group))
                    .map(|g| {
                        let v = verdict::group_verdict(state, l, &g.group);
                        serde_json::json!({
                            "group": g.group,
                            "sealed": g.sealed,
                            "status_now": v.status,
                            "passed": format!("{}/{}", v.passed, v.total),
                            "rows": v.rows.iter().map(|r| format!("{} {}: {}", r.gate, if r.holds { "holds" } else { "FAILS" }, r.evidence)).collect::<Vec<_>>(),
                            "skipped_security_policy": v.skipped_security_policy,
                            "settlement_states": v.settlement.states,
                            "series_micro_usd": v.settlement.series_micro_usd,
                            "feedback_seq": g.feedback_seq,
                        })
                    })
                    .collect();
                serde_json::json!({
                    "lineage": view.lineage,
                    "next_group": view.next_group,
                    "feedback_allowed": view.feedback_allowed,
                    "complete": view.complete,
                    "stopped": view.stopped,
                    "control": view.control,
                    "groups": groups,
                })
            })
            .collect();
        serde_json::json!({
            "head_seq": state.head_seq,
            "lineages": lineages,
            "controls": verdict::control_catalog(state),
        })
    }

    /// Every recorded ledger imports and verifies, `audit` re-derives exactly
    /// the attested verdicts (VERDICT-4), and the projections equal the
    /// reviewed snapshot.
    #[test]
    fn every_recorded_ledger_verifies_audits_and_replays_to_its_snapshot() {
        let all = ledgers();
        assert!(all.len() >= 14, "only {} recorded ledgers", all.len());
        for (name, _) in all {
            let (_t, ledger) = import(&name);
            assert!(ledger.verify().unwrap().ok(), "{name}");
            let lines = audit(&ledger).unwrap();
            assert!(!lines.is_empty(), "{name}: nothing sealed");
            for l in &lines {
                assert!(l.differences.is_empty(), "{name}: {l:?}");
            }
            let state = replay_scanning(&ledger).unwrap();
            insta::assert_json_snapshot!(name.clone(), summary(&state));
        }
    }

    /// The sealed verdict of `group` in ledger `name`, replayed.
    fn replayed_verdict(name: &str, group: &str) -> verdict::Verdict {
        let (_t, ledger) = import(name);
        let state = replay_scanning(&ledger).unwrap();
        let l = state.lineages.values().next().unwrap();
        verdict::group_verdict(&state, l, group)
    }

    /// The failing rows of a verdict, as `gate: evidence`.
    fn failing(v: &verdict::Verdict) -> Vec<String> {
        v.rows
            .iter()
            .filter(|r| !r.holds)
            .map(|r| format!("{}: {}", r.gate, r.evidence))
            .collect()
    }

    /// Issue 16: each evidence-binding scenario (built through the real
    /// decisions by gen-replay) ends with the rule's rejection, the failing
    /// row naming the rule.
    #[test]
    fn evidence_binding_scenarios_reject_with_the_rule_named() {
        let cases: [(&str, &str, &str, &str, &str); 10] = [
            // item 1: another task version (BIND-1)
            (
                "rejected-bind-checksum",
                "control",
                "rejected_manifest",
                "manifest",
                "BIND-1 fix-git/t1: task checksum",
            ),
            // item 2: another model, no api_base (BIND-1)
            (
                "rejected-bind-config",
                "control",
                "rejected_manifest",
                "manifest",
                "embedded TrialConfig",
            ),
            // item 4: Harbor retries in the job's files (BIND-1, CASE-5)
            (
                "rejected-bind-retries",
                "control",
                "rejected_manifest",
                "manifest",
                "Harbor retries",
            ),
            // item 5: a reward file without the frozen key (BIND-2)
            (
                "rejected-bind-reward-key",
                "control",
                "rejected_runtime",
                "runtime",
                "no reward under the frozen key",
            ),
            // item 6: timestamps before the launch (BIND-1)
            (
                "rejected-bind-window",
                "control",
                "rejected_runtime",
                "trial result",
                "BIND-1 outside the launch window",
            ),
            // item 7: a canary whose only case was skipped (BIND-4)
            (
                "rejected-bind-canary-skip",
                "canary-1",
                "rejected_runtime",
                "trial result",
                "BIND-4",
            ),
            // item 7: a canary without a settled, joined request (BIND-4)
            (
                "rejected-bind-canary-unsettled",
                "canary-1",
                "rejected_join",
                "requests",
                "BIND-4",
            ),
            // item 7: cases that ran with no request (BIND-4)
            (
                "rejected-bind-no-requests",
                "control",
                "rejected_join",
                "requests",
                "BIND-4",
            ),
            // item 8: a reward joined to a 429'd request (BIND-5, PLANE-1)
            (
                "rejected-bind-outcome-429",
                "r1",
                "rejected_join",
                "reward join",
                "BIND-5, PLANE-1",
            ),
            // item 11: a credential in an exception message (BIND-8)
            (
                "rejected-bind-credential",
                "control",
                "rejected_manifest",
                "secrets",
                "BIND-8",
            ),
        ];
        for (name, group, status, row, needle) in cases {
            let v = replayed_verdict(name, group);
            let status_text = serde_json::to_value(v.status).unwrap();
            assert_eq!(
                status_text.as_str().unwrap(),
                status,
                "{name}/{group}: {status_text} {:?}",
                failing(&v)
            );
            let rows = failing(&v);
            assert!(
                rows.iter()
                    .any(|r| r.starts_with(row) && r.contains(needle)),
                "{name}/{group}: no failing {row:?} row naming {needle:?}: {rows:?}"
            );
        }
        // The canary rule by name (the table carries it as data).
        let canary = failing(&replayed_verdict(
            "rejected-bind-canary-unsettled",
            "canary-1",
        ));
        assert!(
            canary
                .iter()
                .any(|r| r.starts_with("requests") && r.contains("BIND-4")),
            "BIND-4: a canary without a settled, joined request: {canary:?}"
        );
    }

    /// BIND-5, PLANE-1: after a weak 429 and a strong fallback that solved
    /// the task, the reliability plane counts the 429 under the weak
    /// provider + model, and the semantic plane credits only the completed
    /// request.
    #[test]
    fn a_429_counts_in_reliability_and_earns_no_semantic_credit() {
        let v = replayed_verdict("rejected-bind-outcome-429", "r1");
        let lines = v.planes.lines();
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("reliability ") && l.contains("1 rate_limited")),
            "{lines:#?}"
        );
        assert!(
            v.planes
                .outcomes_on_incomplete
                .iter()
                .any(|id| id.ends_with("-429")),
            "{:?}",
            v.planes
        );
        assert!(
            v.planes
                .withheld
                .iter()
                .any(|w| w.request_id.ends_with("-429")),
            "{:?}",
            v.planes.withheld
        );
        assert!(
            lines.iter().any(|l| l.starts_with("semantic ")),
            "{lines:#?}"
        );
    }

    fn statuses(name: &str) -> Vec<(String, String)> {
        let (_t, ledger) = import(name);
        let state = replay_scanning(&ledger).unwrap();
        state
            .lineages
            .values()
            .flat_map(|l| {
                l.groups.iter().filter_map(|(g, gs)| {
                    gs.sealed
                        .as_ref()
                        .map(|(_, s)| (format!("{}/{g}", l.frozen.lineage), s.status.clone()))
                })
            })
            .collect()
    }

    /// Each scenario seals the status its fault maps to (VERDICT-1).
    #[test]
    fn each_fault_seals_the_status_of_its_first_failing_row() {
        let l = "short13-kimi-2026-11";
        let cases = [
            ("short13-accepted", "r2", "accepted"),
            ("rejected-runtime-stops-lineage", "r1", "rejected_runtime"), // rule CASE-3
            (
                "rejected-settlement-pending",
                "control",
                "rejected_settlement",
            ), // rule SETTLE-4
            (
                "rejected-settlement-charge-mismatch",
                "control",
                "rejected_settlement",
            ), // rule SETTLE-5
            ("rejected-join-duplicate-id", "control", "rejected_join"),   // rule JOIN-1
            ("rejected-join-extra-usage", "control", "rejected_join"),    // rule JOIN-1
            (
                "rejected-cleanup-stray-volume",
                "control",
                "rejected_cleanup",
            ), // rule CLEAN-2
            (
                "rejected-cleanup-monitor-peak",
                "control",
                "rejected_cleanup",
            ), // rule CLEAN-2
            ("rejected-manifest-config", "control", "rejected_manifest"), // rule GATE-7
            ("rejected-safety-low-scores", "r1", "rejected_safety_limit"), // rule VERDICT-1
            ("skip-valid", "r1", "accepted"),                             // rule CASE-6
            ("skip-invalid", "control", "rejected_runtime"),              // rule CASE-6
            ("crash-resume", "control", "rejected_runtime"),              // rule CASE-3
        ];
        for (name, group, want) in cases {
            let got = statuses(name);
            let key = format!("{l}/{group}");
            let status = got.iter().find(|(k, _)| *k == key).map(|(_, s)| s.as_str());
            assert_eq!(status, Some(want), "{name}: {got:?}");
        }
    }

    /// A rejected round stops the lineage: r2 never opens (LINEAGE-5,
    /// LINEAGE-2, VERDICT-2), and no feedback comes from the rejected r1.
    #[test]
    fn a_rejected_r1_stops_the_lineage_and_r2_is_refused() {
        // rule LINEAGE-5
        let (_t, ledger) = import("rejected-runtime-stops-lineage");
        let state = replay_scanning(&ledger).unwrap();
        let l = state.lineage(None).unwrap();
        assert_eq!(l.stopped.as_ref().unwrap().1.rule, "LINEAGE-5");
        let m = &l.frozen.manifest.public;
        let g = m.groups.iter().find(|g| g.name == "r2").unwrap();
        let open = benchledger::method::decide::group_open(
            &state,
            benchledger::method::decide::GroupOpen {
                lineage: None,
                group: "r2".into(),
                binary_sha256: m.software.bitrouter_binary_sha256.clone(),
                config_sha256: m.software.bitrouter_config_sha256["r2"].clone(),
                ports: g.ports.clone(),
                db_path: g.db_path.clone(),
                out_dir: g.out_dir.clone(),
            },
        );
        assert!(
            matches!(
                open,
                Err(benchledger::Error::Refused {
                    rule: benchledger::schema::rule::Rule::Verdict3,
                    ..
                })
            ),
            "{open:?}"
        );
        // rule VERDICT-2, LINEAGE-3
        let fb = benchledger::method::decide::feedback(
            &state,
            None,
            "r1",
            &"a".repeat(64),
            &"b".repeat(64),
        );
        assert!(
            matches!(
                fb,
                Err(benchledger::Error::Refused {
                    rule: benchledger::schema::rule::Rule::Verdict2,
                    ..
                })
            ),
            "{fb:?}"
        );
        let view = verdict::lineage_view(&state, l);
        assert_eq!((view.next_group, view.complete), (None, false));
    }

    /// The crashed case stays consumed: terminal_invalid, refused by
    /// `case start` and never listed by `resume` (CASE-2, CASE-4).
    #[test]
    fn a_crashed_case_is_terminal_invalid_and_never_relaunched() {
        // rule CASE-2, CASE-4
        let (_t, ledger) = import("crash-resume");
        let state = replay_scanning(&ledger).unwrap();
        let l = state.lineage(None).unwrap();
        let case = CaseRef {
            task: "fix-git".into(),
            trial: "t1".into(),
            replacement: 0,
        };
        let c = &l.groups["control"].cases[&case];
        assert!(c.invalidated.is_some());
        assert_eq!(
            c.status(&l.frozen.manifest.public.harbor.accepted_exceptions),
            benchledger::method::projections::CaseStatus::TerminalInvalid
        );
        let rows =
            benchledger::method::decide::resume(&state, None, "control", &Default::default())
                .unwrap();
        let row = rows.iter().find(|r| r.case == case).unwrap();
        assert!(
            row.blocked
                .as_deref()
                .unwrap()
                .starts_with("terminal_invalid"),
            "{row:?}"
        );
        assert!(rows.iter().all(|r| r.blocked.is_some()));
    }

    /// Reuse needs the exact control key (LINEAGE-6, FREEZE-6): lineage B
    /// reuses A's control, C (another sandbox shape) is refused, and B's
    /// round compares against A's control identities (LINEAGE-9).
    #[test]
    fn control_reuse_needs_the_exact_key() {
        // rule LINEAGE-6, LINEAGE-9, FREEZE-6
        let (_t, ledger) = import("control-reuse");
        let state = replay_scanning(&ledger).unwrap();
        let b = state.lineage(Some("short13-kimi-2026-12")).unwrap();
        assert_eq!(
            b.control_reused.as_ref().unwrap().1.control,
            GroupRef {
                lineage: "short13-kimi-2026-11".into(),
                group: "control".into()
            }
        );
        assert!(!b.groups.contains_key("control"), "control is never rerun");
        assert!(verdict::VerdictStatus::Accepted.is(&b.groups["r1"]
            .sealed
            .as_ref()
            .unwrap()
            .1
            .status));
        let cmp = verdict::intersection(&state, b, "r1");
        assert_eq!(cmp.included.len(), 13, "{cmp:?}");
        let c = state.lineage(Some("short13-kimi-2027-01")).unwrap();
        assert!(c.control_reused.is_none());
        let control = GroupRef {
            lineage: "short13-kimi-2026-11".into(),
            group: "control".into(),
        };
        let again =
            benchledger::method::decide::control_reuse(&state, "short13-kimi-2027-01", &control);
        assert!(
            matches!(
                again,
                Err(benchledger::Error::Refused {
                    rule: benchledger::schema::rule::Rule::Lineage6,
                    ..
                })
            ),
            "{again:?}"
        );
        let cat = verdict::control_catalog(&state);
        assert_eq!(cat.len(), 1);
        assert_eq!(cat[0].reused_by, vec!["short13-kimi-2026-12".to_string()]);
    }

    /// Editing a recorded verdict, even with its own hash recomputed, makes
    /// `verify` fail at that record (VERDICT-4).
    #[test]
    fn an_edited_verdict_fails_verify_at_its_seq() {
        // rule VERDICT-4
        let (_t, ledger) = import("rejected-join-duplicate-id");
        let seq = ledger
            .records()
            .unwrap()
            .map(|v| v.unwrap())
            .find(|v| matches!(v.decoded.event, Event::GroupSealed(_)) && v.decoded.record.seq > 30)
            .map(|v| v.decoded.record.seq)
            .unwrap();
        let v = ledger.read(seq).unwrap();
        let Event::GroupSealed(mut s) = v.decoded.event.clone() else {
            unreachable!()
        };
        s.status = verdict::VerdictStatus::Accepted.into();
        for r in &mut s.rows {
            r.holds = true;
        }
        let mut rec = v.decoded.record.clone();
        rec.payload = benchledger::log::codec::encode_payload(&Event::GroupSealed(s)).unwrap();
        let forged = benchledger::log::chain::Sealed::new(v.prev, seq, rec.encode().unwrap());
        ledger
            .store()
            .damage_put(
                benchledger::log::store::DamageTree::Records,
                &seq.to_be_bytes(),
                &forged.value(),
            )
            .unwrap();
        let report = ledger.verify().unwrap();
        assert_eq!(
            report.damage.as_ref().map(|d| d.seq),
            Some(seq),
            "{report:?}"
        );
    }

    /// A verdict attested by different projection logic (here: a control
    /// seal whose cleanup row was computed to hold although the volume was
    /// found) is reported by `audit`, naming group and row.
    #[test]
    fn audit_reports_a_verdict_the_projection_does_not_re_derive() {
        // rule VERDICT-4, CLEAN-2
        let text = read(&root().join("replay-tests/scenarios/rejected-cleanup-stray-volume.toml"));
        let spec: benchledger::testkit::scenario::Scenario = toml::from_str(&text).unwrap();
        let (mut world, _) = benchledger::testkit::scenario::run(&spec).unwrap();
        let mut changed = 0;
        for (_, e) in &mut world.records {
            if let Event::GroupSealed(s) = e {
                if s.group.group == "control" {
                    for r in &mut s.rows {
                        if r.gate == verdict::VerdictRow::Cleanup.as_str() {
                            r.holds = true;
                            changed += 1;
                        }
                    }
                    s.status = verdict::VerdictStatus::Accepted.into();
                }
            }
        }
        assert_eq!(changed, 1);
        let tmp = tempfile::tempdir().unwrap();
        let ledger = world.write(&tmp.path().join("l")).unwrap();
        assert!(ledger.verify().unwrap().ok());
        let lines = audit(&ledger).unwrap();
        let bad: Vec<_> = lines.iter().filter(|l| !l.differences.is_empty()).collect();
        assert_eq!(bad.len(), 1, "{lines:?}");
        assert_eq!(bad[0].group.group, "control");
        assert!(
            bad[0].differences.iter().any(|d| d.contains("\"cleanup\"")),
            "{:?}",
            bad[0]
        );
        assert!(
            bad[0].differences.iter().any(|d| d.contains("status")),
            "{:?}",
            bad[0]
        );
    }

    /// `replay --at SEQ` is every projection as of that seq: before r1's
    /// seal, r1 is unsealed and its verdict is computed from what exists.
    #[test]
    fn replay_at_a_seq_sees_only_the_prefix() {
        let (_t, ledger) = import("short13-accepted");
        let full = replay_scanning(&ledger).unwrap();
        let r1_seal = full.lineage(None).unwrap().groups["r1"]
            .sealed
            .as_ref()
            .unwrap()
            .0
            .seq;
        let before =
            benchledger::method::projections::replay_until(&ledger, State::scanning(), r1_seal - 1)
                .unwrap();
        let l = before.lineage(None).unwrap();
        assert!(l.groups["r1"].sealed.is_none());
        assert_eq!(
            verdict::group_verdict(&before, l, "r1").status,
            verdict::VerdictStatus::Accepted
        );
        assert_eq!(verdict::lineage_view(&before, l).next_group, None);
        assert_eq!(before.head_seq, Some(r1_seal - 1));
    }
}

/// The rule ids an assertion names: every `PREFIX-N` or `Rule::PrefixN`
/// inside the arguments of an `assert!`, `assert_eq!`, `assert_ne!` (or
/// their `prop_` and `debug_` forms) in `text`, comments left out. A rule
/// named only in a comment, a doc line or a helper's name is not tested
/// by that mention (issue 33 item 2).
fn asserted_rules(text: &str) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    let mut at = 0;
    while let Some(i) = text[at..].find("assert") {
        let start = at + i;
        at = start + "assert".len();
        let word_start = text[..start]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(0, |j| j + 1);
        let rest = &text[at..];
        let name_end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
        let Some(name_end) = name_end else { break };
        let prefix = &text[word_start..start];
        let macro_like = ["", "prop_", "debug_"].contains(&prefix)
            && ["", "_eq", "_ne"].contains(&&rest[..name_end])
            && rest[name_end..].starts_with("!(");
        if !macro_like {
            continue;
        }
        let args = macro_args(&text[at + name_end + 1..]);
        collect_rule_ids(&args, &mut out);
    }
    out
}

/// The text of a macro call's arguments from its opening parenthesis to
/// the matching close, string literals kept, `//` comments dropped.
fn macro_args(from: &str) -> String {
    delimited(from, '(', ')')
}

/// The text from an opening `open` to its matching `close` (a macro's
/// arguments, a function's body), string literals kept, `//` comments
/// dropped.
fn delimited(from: &str, open: char, close: char) -> String {
    let b: Vec<char> = from.chars().collect();
    let mut out = String::new();
    let (mut depth, mut i) = (0usize, 0usize);
    while i < b.len() {
        let c = b[i];
        // A char literal ('{', '\'') is one token, never a delimiter.
        let literal = match (c, b.get(i + 1), b.get(i + 2), b.get(i + 3)) {
            ('\'', Some('\\'), Some(_), Some('\'')) => 4,
            ('\'', Some(x), Some('\''), _) if *x != '\\' => 3,
            _ => 0,
        };
        if literal > 0 {
            out.extend(&b[i..i + literal]);
            i += literal;
            continue;
        }
        if c == '"' {
            // A string literal, kept whole.
            out.push(c);
            i += 1;
            while i < b.len() {
                out.push(b[i]);
                if b[i] == '\\' && i + 1 < b.len() {
                    out.push(b[i + 1]);
                    i += 2;
                    continue;
                }
                i += 1;
                if b[i - 1] == '"' {
                    break;
                }
            }
            continue;
        }
        if c == '/' && b.get(i + 1) == Some(&'/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return out;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

/// Every rule id in `text`, written `PREFIX-N` or `Rule::PrefixN`.
fn collect_rule_ids(text: &str, out: &mut std::collections::BTreeSet<String>) {
    let words =
        text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == ':' || c == '_'));
    for word in words {
        let word = word.trim_matches(|c: char| c == '-' || c == ':');
        let id = match word.strip_prefix("Rule::") {
            Some(variant) => {
                let digits = variant.trim_start_matches(|c: char| c.is_ascii_alphabetic());
                let name = &variant[..variant.len() - digits.len()];
                if digits.is_empty() || name.is_empty() {
                    continue;
                }
                format!("{}-{digits}", name.to_uppercase())
            }
            None => word.to_string(),
        };
        let Some((prefix, n)) = id.split_once('-') else {
            continue;
        };
        if !prefix.is_empty()
            && prefix.chars().all(|c| c.is_ascii_uppercase())
            && !n.is_empty()
            && n.chars().all(|c| c.is_ascii_digit())
        {
            out.insert(id);
        }
    }
}

/// The text of every test: `*_tests.rs` and `tests.rs` files, what follows
/// `#[cfg(test)]` elsewhere in `src/`, and all of `replay-tests/`.
fn test_text() -> String {
    let mut text = String::new();
    let mut stack = vec![root().join("src"), root().join("replay-tests")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().filter_map(|e| e.ok()) {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let t = read(&p);
                let name = p.file_name().unwrap().to_string_lossy();
                let whole = name == "tests.rs"
                    || name.ends_with("_tests.rs")
                    || !p.starts_with(root().join("src"));
                if whole {
                    text.push_str(&t);
                } else if let Some(i) = t.find("#[cfg(test)]") {
                    text.push_str(&t[i..]);
                }
            }
        }
    }
    text
}

/// Every rule of the method (each `- PREFIX-N` line of method.md) is
/// named by an assertion of a test (`asserted_rules`: in its message or
/// its compared values, never only in a comment). The method must be
/// beside the repository: without it the list cannot be read, and that is
/// a failure.
#[test]
fn every_rule_of_the_method_is_named_by_an_assertion() {
    let path = root().join("../shared/spec/method.md");
    let method = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}: the rule list is read from the method, which must be beside the repository",
            path.display()
        )
    });
    let mut ids = std::collections::BTreeSet::new();
    for line in method.lines() {
        if let Some(first) = line
            .strip_prefix("- ")
            .and_then(|l| l.split_whitespace().next())
        {
            collect_rule_ids(first, &mut ids);
        }
    }
    assert!(ids.len() >= 96, "the method's rules: {ids:?}");
    for prefix in ["LINEAGE", "SETTLE", "BIND", "TRUST", "RUN", "POST"] {
        assert!(
            ids.iter().any(|id| id.starts_with(prefix)),
            "{prefix} rules read"
        );
    }
    let asserted = asserted_rules(&test_text());
    let missing: Vec<&String> = ids.iter().filter(|id| !asserted.contains(*id)).collect();
    assert!(
        missing.is_empty(),
        "rules no assertion names (a comment does not count): {missing:?}"
    );
}

/// The tests (`#[test]` functions, not `#[ignore]`d) whose body can
/// `return;` before its first assertion: a test that passes by doing
/// nothing (issue 33 item 1). Each as `name`.
fn early_returns(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices("#[test]") {
        let rest = &text[at..];
        let Some(fn_at) = rest.find("fn ") else {
            continue;
        };
        if rest[..fn_at].contains("#[ignore") {
            continue;
        }
        let name: String = rest[fn_at + 3..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let Some(open) = rest[fn_at..].find('{') else {
            continue;
        };
        let body = delimited(&rest[fn_at + open..], '{', '}');
        let first_assert = body.find("assert").unwrap_or(usize::MAX);
        let returns = body
            .match_indices("return")
            .filter(|(i, _)| {
                let before = body[..*i].chars().last().unwrap_or(' ');
                !(before.is_alphanumeric() || before == '_')
                    && body[i + "return".len()..].trim_start().starts_with(';')
            })
            .map(|(i, _)| i)
            .next();
        if returns.is_some_and(|r| r < first_assert) {
            out.push(name);
        }
    }
    out
}

/// No test passes by returning before its first assertion (issue 33 item
/// 1): one that cannot run in a configuration is compiled out or ignored
/// with its reason.
#[test]
fn no_test_returns_before_its_first_assertion() {
    let found = early_returns(&test_text());
    assert!(
        found.is_empty(),
        "tests that can pass by returning early: {found:?}"
    );
    let planted = r#"
        #[TEST]
        fn skips_quietly() {
            let Ok(x) = std::fs::read_to_string("f") else {
                return;
            };
            assert_eq!(x, "y");
        }
        #[TEST]
        fn asserts_first() {
            assert!(true);
            if cfg!(feature = "aws") {
                return;
            }
        }
        #[TEST]
        fn unwraps_only() {
            let _ = std::fs::read_to_string("f").unwrap();
        }
        fn helper() {
            return;
        }
        #[TEST]
        #[ignore = "spawned by another test"]
        fn child() {
            if std::env::var("X").is_err() { return; }
            assert!(true);
        }
    "#
    .replace("#[TEST]", "#[test]");
    assert_eq!(early_returns(&planted), ["skips_quietly"]);
}

/// A rule cited only in a comment, a doc line or a function's name is not
/// counted; in an assertion's message or its compared values it is.
#[test]
fn a_rule_cited_only_in_a_comment_does_not_count() {
    let planted = r#"
        /// Proves JOIN-4.
        #[test]
        fn join_4_holds() {
            // rule JOIN-4
            assert!(x, "the join holds"); // JOIN-4
            assert_eq!(a, b, "see (JOIN-3) and \"quoted\" text"); // not CLEAN-2
            prop_assert_eq!(r, Rule::Bind7);
            assert_ne!(c, d, "{}", format!("SETTLE-5 {}", 1));
            assertion_helper("VERDICT-4");
            debug_assert!(ok, "PLANE-2: kept");
        }
    "#;
    let got: Vec<String> = asserted_rules(planted).into_iter().collect();
    assert_eq!(got, ["BIND-7", "JOIN-3", "PLANE-2", "SETTLE-5"]);
}

#[path = "real_bitrouter.rs"]
mod real_bitrouter;
#[path = "report.rs"]
mod report;
#[path = "report_001.rs"]
mod report_001;
#[path = "sim.rs"]
mod sim;
#[path = "tidy.rs"]
mod tidy;

/// The control artifact (LINEAGE-9) is BLAKE3 over `serde_json` text built
/// with `json!`, whose objects are maps: their key order is the hash's. It
/// is sorted only while `serde_json`'s `preserve_order` feature is off; a
/// dependency that turned it on (features unify across the build) would
/// silently change every registered artifact. This guard fails first.
#[test]
fn json_objects_sort_their_keys_so_the_control_artifact_is_stable() {
    let v = serde_json::json!({ "zeta": 1, "alpha": 2, "mid": { "b": 1, "a": 2 } });
    assert_eq!(
        serde_json::to_string(&v).unwrap(),
        r#"{"alpha":2,"mid":{"a":2,"b":1},"zeta":1}"#,
        "serde_json preserve_order is on: the control artifact hash would change"
    );
    // And the recorded control's artifact re-derives to the registered one.
    let (_dir, ledger) = corpus::import("short13-accepted");
    let state = benchledger::method::projections::replay(&ledger).unwrap();
    let (_, registered) = state.controls.values().next().unwrap()[0].clone();
    let l = &state.lineages[&registered.group.lineage];
    assert_eq!(
        benchledger::method::verdict::control_artifact_blake3(l, "control"),
        registered.artifact_blake3
    );
}
