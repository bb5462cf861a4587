//! The projection checkpoint through the CLI (issue 9): a deciding verb
//! writes it once the ledger is large enough, later verbs fold only the
//! tail, `verify` re-derives it, and a forged one makes `verify` fail while
//! the log itself still verifies.

use super::Harness;
use benchledger::limits::CHECKPOINT_EVENTS_MIN;
use benchledger::log::checkpoint::{self, Policy, CHECKPOINT_FILE};
use benchledger::log::ledger::{Draft, Ledger};
use benchledger::method::projections::{replay_until, State};
use benchledger::schema::events::{Event, OperatorNoted};
use std::path::Path;
use std::time::Duration;

const LINEAGE: &str = "short13-kimi-2026-11";

/// short13 imported, then padded with notes to `CHECKPOINT_EVENTS_MIN`.
fn large() -> Harness {
    let h = Harness::new();
    let src =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("replay-tests/ledgers/short13-accepted.jsonl");
    h.ok(&["import", "--jsonl", src.to_str().unwrap()]);
    let ledger = Ledger::open(&h.ledger(), Duration::from_secs(5)).unwrap();
    let events = ledger.head().unwrap().seq + 1;
    let notes: Vec<Draft> = (events..CHECKPOINT_EVENTS_MIN)
        .map(|i| Draft {
            actor: "operator:alice".into(),
            event: Event::OperatorNoted(OperatorNoted {
                lineage: None,
                text: format!("padding {i}"),
            }),
            idempotency_key: None,
        })
        .collect();
    ledger.append(&notes, 1_796_000_000_000_000_000).unwrap();
    assert_eq!(ledger.head().unwrap().seq + 1, CHECKPOINT_EVENTS_MIN);
    h
}

#[test]
fn a_deciding_verb_writes_the_checkpoint_and_verify_re_derives_it() {
    let h = large();
    let file = h.ledger().join(CHECKPOINT_FILE);
    let v = h.ok(&["verify", "--json"]).json();
    assert_eq!(v["checkpoint"]["state"], "absent");
    assert!(!file.exists(), "verify never writes one");

    let shown = h.ok(&["manifest", "show", LINEAGE, "--json"]).stdout;
    assert!(
        file.exists(),
        "a replay of {CHECKPOINT_EVENTS_MIN} events writes it"
    );
    let v = h.ok(&["verify", "--json"]).json();
    assert_eq!(v["ok"], true);
    assert_eq!(v["checkpoint"]["state"], "matches");
    assert_eq!(v["checkpoint"]["seq"], CHECKPOINT_EVENTS_MIN - 1);

    // Later appends: the verb folds the tail after the checkpoint and says
    // the same as a replay from genesis.
    h.ok(&["note", "after the checkpoint"]);
    assert_eq!(h.ok(&["manifest", "show", LINEAGE, "--json"]).stdout, shown);
    let r = h.ok(&["verify"]);
    assert!(
        r.stdout.contains(&format!(
            "checkpoint at seq {} equals the replay",
            CHECKPOINT_EVENTS_MIN - 1
        )),
        "{}",
        r.stdout
    );
}

#[test]
fn a_forged_checkpoint_fails_verify_and_a_torn_one_is_ignored_and_rewritten() {
    let h = large();
    h.ok(&["manifest", "show", LINEAGE, "--json"]);
    let head = h.head_bytes();
    let seq = {
        let ledger = Ledger::open(&h.ledger(), Duration::from_secs(5)).unwrap();
        let seq = ledger.head().unwrap().seq;
        // Valid checksum, right seq and hash, a state the log does not give.
        let mut state = replay_until(&ledger, State::default(), seq).unwrap();
        state.claims.clear();
        let hash = ledger.read(seq).unwrap().hash;
        checkpoint::write(&h.ledger(), &state, seq, hash, Policy::DEFAULT).unwrap();
        seq
    };
    let r = h.run(&["verify"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        r.stdout
            .contains(&format!("checkpoint at seq {seq} differs")),
        "{}",
        r.stdout
    );
    let v = h.run(&["verify", "--json"]).json();
    assert_eq!(
        (v["ok"].clone(), v["checkpoint"]["state"].clone()),
        (false.into(), "differs".into())
    );
    assert_eq!(h.head_bytes(), head, "verify changed nothing");

    // Torn: ignored (verify passes and says why), and the next deciding
    // verb replays from genesis and writes a good one.
    let file = h.ledger().join(CHECKPOINT_FILE);
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..bytes.len() / 2]).unwrap();
    let r = h.ok(&["verify"]);
    assert!(
        r.stdout
            .contains("is ignored: checkpoint checksum does not match"),
        "{}",
        r.stdout
    );
    h.ok(&["manifest", "show", LINEAGE]);
    assert_eq!(
        h.ok(&["verify", "--json"]).json()["checkpoint"]["state"],
        "matches"
    );
}
