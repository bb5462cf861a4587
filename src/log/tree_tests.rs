use std::time::Duration;

use super::*;
use crate::log::ledger::{Draft, Ledger};
use crate::log::tlog::merkle::MemoryNodes;
use crate::log::tlog::{prove_consistency, prove_inclusion, tree_root, verify_consistency};
use crate::schema::events::{CheckpointRecorded, Event, OperatorNoted};

const WAIT: Duration = Duration::from_secs(5);

fn note(text: &str) -> Draft {
    Draft {
        actor: "test".into(),
        event: Event::OperatorNoted(OperatorNoted {
            lineage: None,
            text: text.into(),
        }),
        idempotency_key: None,
    }
}

/// A ledger of genesis and `notes` notes.
fn ledger(notes: usize) -> (tempfile::TempDir, Ledger) {
    let tmp = tempfile::tempdir().unwrap();
    let (ledger, _) = Ledger::create(&tmp.path().join("l"), WAIT, [7; 16], "test", 1).unwrap();
    let drafts: Vec<Draft> = (0..notes).map(|i| note(&format!("note {i}"))).collect();
    if !drafts.is_empty() {
        ledger.append(&drafts, 2).unwrap();
    }
    (tmp, ledger)
}

/// The reference tree over the ledger's leaves, in memory.
fn memory(ledger: &Ledger) -> MemoryNodes {
    MemoryNodes::from_leaf_hashes(ledger.records().unwrap().map(|v| {
        let v = v.unwrap();
        record_leaf_hash(v.decoded.record.seq, &v.hash)
    }))
    .unwrap()
}

#[test]
fn positions_are_the_post_order_the_builder_emits() {
    let mut builder = TreeBuilder::new();
    let mut next = 0u64;
    for leaf in 0..300u64 {
        for node in builder.append([leaf as u8; 32]).unwrap() {
            assert_eq!(node_position(node.level, node.index), next, "{node:?}");
            next += 1;
        }
        assert_eq!(node_count(leaf + 1), next);
    }
}

#[test]
fn the_derived_file_holds_every_subtree_and_checks_no_record() {
    for notes in [0, 1, 6, 62] {
        let (_t, ledger) = ledger(notes);
        let reference = memory(&ledger);
        let derived = derive(&ledger).unwrap();
        assert_eq!(derived.size(), notes as u64 + 1);
        assert_eq!(derived.root(), reference.root());
        assert_eq!(derived.origin, origin_of(&"07".repeat(16)));
        assert!(derived.checkpoints.is_empty() && derived.problems.is_empty());
        for level in 0..8u8 {
            for index in 0..70u64 {
                assert_eq!(
                    derived.nodes.subtree(level, index).unwrap(),
                    reference.subtree(level, index).unwrap(),
                    "{notes} notes: level {level} index {index}"
                );
            }
        }
        let n = derived.size();
        for size in 1..=n {
            assert_eq!(
                tree_root(&derived.nodes, size).unwrap(),
                tree_root(&reference, size).unwrap()
            );
            assert_eq!(
                prove_inclusion(&derived.nodes, size - 1, n).unwrap(),
                prove_inclusion(&reference, size - 1, n).unwrap()
            );
            assert_eq!(
                prove_consistency(&derived.nodes, size, n).unwrap(),
                prove_consistency(&reference, size, n).unwrap()
            );
        }
        derived.discard();
    }
}

#[test]
fn the_cache_is_extended_through_the_tail_and_rebuilt_when_it_does_not_match() {
    let (_t, ledger) = ledger(5);
    assert_eq!(
        derive(&ledger).unwrap().check_cache(ledger.dir()).unwrap(),
        CacheCheck::Absent
    );
    let nodes = synced(&ledger).unwrap();
    assert_eq!(nodes.leaves(), 6);
    drop(nodes);
    ledger
        .append(
            &(0..11)
                .map(|i| note(&format!("more {i}")))
                .collect::<Vec<_>>(),
            3,
        )
        .unwrap();
    let nodes = synced(&ledger).unwrap();
    assert_eq!(nodes.leaves(), 17);
    let reference = memory(&ledger);
    for size in 1..=17 {
        assert_eq!(
            tree_root(&nodes, size).unwrap(),
            tree_root(&reference, size).unwrap()
        );
    }
    drop(nodes);
    let derived = derive(&ledger).unwrap();
    assert_eq!(
        derived.check_cache(ledger.dir()).unwrap(),
        CacheCheck::Matches { leaves: 17 }
    );
    // One flipped hash in the body: `verify` reports it; `synced` trusts
    // the header (proofs are checked against signed roots).
    let path = nodes_path(ledger.dir());
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[HEADER_BYTES as usize + 5] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    assert!(matches!(
        derived.check_cache(ledger.dir()).unwrap(),
        CacheCheck::Differs { .. }
    ));
    // A torn header: rebuilt from genesis.
    bytes[20] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    assert!(matches!(
        derived.check_cache(ledger.dir()).unwrap(),
        CacheCheck::Differs { .. }
    ));
    derived.discard();
    let rebuilt = synced(&ledger).unwrap();
    assert_eq!(tree_root(&rebuilt, 17).unwrap(), reference.root());
    let leftovers: Vec<_> = std::fs::read_dir(ledger.dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

fn checkpoint_at(ledger: &Ledger, root: &Hash) -> CheckpointRecorded {
    CheckpointRecorded {
        origin: ledger_origin(ledger).unwrap(),
        tree_size: ledger.head().unwrap().seq + 1,
        root: hex::encode(root),
        note: None,
        signer: None,
        sealed: None,
    }
}

#[test]
fn checkpoint_records_are_checked_against_the_records_before_them() {
    // rule TRUST-1
    let (_t, ledger) = ledger(3);
    let append = |c: CheckpointRecorded| {
        let d = Draft {
            actor: "test".into(),
            event: Event::CheckpointRecorded(c),
            idempotency_key: None,
        };
        ledger.append(&[d], 4).unwrap();
    };
    let good = checkpoint_at(&ledger, &memory(&ledger).root());
    append(good.clone());
    let mut wrong_root = checkpoint_at(&ledger, &memory(&ledger).root());
    wrong_root.root = "00".repeat(32);
    append(wrong_root);
    let key =
        crate::log::tlog::SignerKey::from_seed("op", crate::log::tlog::KeyKind::Ed25519, [9; 32])
            .unwrap();
    let mut signed = checkpoint_at(&ledger, &memory(&ledger).root());
    // A valid note, but of the first checkpoint (size 4), not this one.
    let root4 = hex::decode(&good.root).unwrap().try_into().unwrap();
    let body = Checkpoint::new(&signed.origin, 4, root4).unwrap().body();
    signed.note = Some(crate::log::tlog::sign_note(&body, &[&key]).unwrap());
    signed.signer = Some(key.verifier().encode());
    append(signed);
    let mut wrong_size = checkpoint_at(&ledger, &memory(&ledger).root());
    wrong_size.tree_size -= 1;
    append(wrong_size);
    let derived = derive(&ledger).unwrap();
    assert_eq!(derived.checkpoints.len(), 4);
    let problems: Vec<(u64, &str)> = derived
        .problems
        .iter()
        .map(|p| (p.seq, p.detail.as_str()))
        .collect();
    assert_eq!(problems.len(), 3, "TRUST-1: {problems:?}");
    assert_eq!(problems[0].0, 5);
    assert!(problems[0].1.starts_with("root 0000"), "{problems:?}");
    assert_eq!(problems[1].0, 6);
    assert!(
        problems[1].1.contains("signs another checkpoint"),
        "{problems:?}"
    );
    assert_eq!(problems[2].0, 7);
    assert!(problems[2].1.contains("tree size 6"), "{problems:?}");
    derived.discard();
}

#[test]
fn bisection_finds_the_last_signed_size_that_agrees() {
    let (_t, ledger) = ledger(20);
    let ours = memory(&ledger);
    let (_t2, other) = ledger_with_rewrite(20, 9);
    let theirs = memory(&other);
    let signed: Vec<(u64, Hash)> = [3u64, 8, 9, 10, 15, 21]
        .iter()
        .map(|&s| (s, tree_root(&theirs, s).unwrap()))
        .collect();
    assert_eq!(
        bisect(&ours, &signed).unwrap(),
        Some(Divergence {
            agrees_through: 9,
            differs_by: 10
        })
    );
    assert_eq!(bisect(&ours, &signed[..3]).unwrap(), None);
    assert_eq!(
        bisect(&ours, &signed[3..]).unwrap(),
        Some(Divergence {
            agrees_through: 0,
            differs_by: 10
        })
    );
    let past = [(30u64, [0u8; 32])];
    assert_eq!(
        bisect(&ours, &past).unwrap(),
        Some(Divergence {
            agrees_through: 0,
            differs_by: 30
        })
    );
    // Consistency holds only while the histories agree.
    let (r9, r21) = (
        tree_root(&theirs, 9).unwrap(),
        tree_root(&theirs, 21).unwrap(),
    );
    let proof = prove_consistency(&ours, 9, 21).unwrap();
    assert!(verify_consistency(9, 21, &proof, &r9, &ours.root()).is_ok());
    assert!(verify_consistency(9, 21, &proof, &r9, &r21).is_err());
}

/// A ledger of genesis and `notes` notes whose record at seq `at` has
/// another text: the same history as `ledger(notes)` up to size `at`.
fn ledger_with_rewrite(notes: usize, at: usize) -> (tempfile::TempDir, Ledger) {
    let tmp = tempfile::tempdir().unwrap();
    let (ledger, _) = Ledger::create(&tmp.path().join("l"), WAIT, [7; 16], "test", 1).unwrap();
    let drafts: Vec<Draft> = (0..notes)
        .map(|i| {
            note(&if i + 1 == at {
                "rewritten".into()
            } else {
                format!("note {i}")
            })
        })
        .collect();
    ledger.append(&drafts, 2).unwrap();
    (tmp, ledger)
}
