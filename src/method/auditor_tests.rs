//! TRUST-7's decision and the state file, without files.

use super::*;
use crate::log::tlog::merkle::{leaf_hash, MemoryNodes};
use crate::log::tlog::{prove_consistency, sign_note, tree_root, KeyKind, SignerKey};

const ORIGIN: &str = "benchledger.example/ledger/auditor-test";

fn tree(n: u64, salt: u8) -> MemoryNodes {
    let leaves = (0..n).map(|i| {
        // `salt` changes the leaves from the fourth on: another history
        // that shares the first three records.
        let tag = if i >= 3 { salt } else { 0 };
        leaf_hash(&[&i.to_be_bytes()[..], &[tag]].concat())
    });
    MemoryNodes::from_leaf_hashes(leaves).expect("small tree")
}

fn key() -> SignerKey {
    SignerKey::from_seed(ORIGIN, KeyKind::Ed25519, [7; 32]).unwrap()
}

fn remembered(t: &MemoryNodes, size: u64) -> Remembered {
    let root = tree_root(t, size).unwrap();
    let body = Checkpoint::new(ORIGIN, size, root).unwrap().body();
    Remembered {
        size,
        root,
        note: sign_note(&body, &[&key()]).unwrap(),
    }
}

#[test]
fn nothing_remembered_is_a_first_checkpoint() {
    let t = tree(8, 0);
    let j = judge(None, 8, &tree_root(&t, 8).unwrap(), &[]);
    assert_eq!(j, Judgement::First);
    assert!(
        j.accepted(),
        "TRUST-7: the first checkpoint of an origin is accepted"
    );
    assert_eq!(proof_needed(None, 8), None);
}

#[test]
fn the_same_checkpoint_again_is_accepted() {
    let t = tree(8, 0);
    let r = remembered(&t, 8);
    assert_eq!(proof_needed(Some(&r), 8), None);
    assert_eq!(judge(Some(&r), 8, &r.root, &[]), Judgement::Same);
}

#[test]
fn a_smaller_checkpoint_is_a_rollback() {
    let t = tree(8, 0);
    let r = remembered(&t, 8);
    // Even one that is a true prefix of the remembered tree.
    let j = judge(Some(&r), 5, &tree_root(&t, 5).unwrap(), &[]);
    assert_eq!(j, Judgement::Rollback { remembered: 8 });
    assert!(
        !j.accepted(),
        "TRUST-7: a smaller checkpoint is refused as a rollback"
    );
    let why = j.refusal(ORIGIN, 5, &tree_root(&t, 5).unwrap()).unwrap();
    assert!(why.starts_with("rollback (TRUST-7)"), "{why}");
}

#[test]
fn one_size_with_two_roots_is_a_fork() {
    let (ours, theirs) = (tree(8, 0), tree(8, 1));
    let r = remembered(&ours, 8);
    let other = tree_root(&theirs, 8).unwrap();
    let j = judge(Some(&r), 8, &other, &[]);
    assert!(
        matches!(j, Judgement::Fork { remembered: 8, .. }),
        "TRUST-7: two checkpoints of one size with different roots are a fork: {j:?}"
    );
    assert!(j
        .refusal(ORIGIN, 8, &other)
        .unwrap()
        .starts_with("fork (TRUST-7)"));
}

#[test]
fn a_larger_consistent_checkpoint_extends_and_advances_the_memory() {
    let t = tree(20, 0);
    let r = remembered(&t, 8);
    assert_eq!(proof_needed(Some(&r), 20), Some((8, 20)));
    let proof = prove_consistency(&t, 8, 20).unwrap();
    let j = judge(Some(&r), 20, &tree_root(&t, 20).unwrap(), &proof);
    assert_eq!(
        j,
        Judgement::Extends { from: 8 },
        "TRUST-7: an extension is accepted"
    );
    let mut state = AuditorState::default();
    assert!(state.advance(ORIGIN, &Judgement::First, r.clone()));
    assert!(state.advance(ORIGIN, &j, remembered(&t, 20)));
    assert_eq!(state.get(ORIGIN).unwrap().size, 20);
    // Never back: a smaller accepted checkpoint leaves the memory as it is.
    assert!(!state.advance(ORIGIN, &Judgement::Same, r));
    assert_eq!(state.get(ORIGIN).unwrap().size, 20);
}

#[test]
fn a_larger_tree_of_another_history_is_a_fork() {
    // The remembered checkpoint is of one history; the larger tree shares
    // only its first three leaves. The proof computed from that tree does
    // not lead from the remembered root.
    let (ours, theirs) = (tree(8, 0), tree(20, 1));
    let r = remembered(&ours, 8);
    let proof = prove_consistency(&theirs, 8, 20).unwrap();
    let j = judge(Some(&r), 20, &tree_root(&theirs, 20).unwrap(), &proof);
    assert!(
        matches!(j, Judgement::Fork { remembered: 8, .. }),
        "TRUST-7: a larger checkpoint not consistent with the remembered one is a fork: {j:?}"
    );
    assert!(!j.accepted());
    // No proof at all is not consistency either.
    let j = judge(Some(&r), 20, &tree_root(&theirs, 20).unwrap(), &[]);
    assert!(matches!(j, Judgement::Fork { .. }), "{j:?}");
}

#[test]
fn a_refused_checkpoint_never_advances_the_memory() {
    let (ours, theirs) = (tree(8, 0), tree(20, 1));
    let mut state = AuditorState::default();
    state.advance(ORIGIN, &Judgement::First, remembered(&ours, 8));
    let fork = Judgement::Fork {
        remembered: 8,
        why: "test".into(),
    };
    assert!(!state.advance(ORIGIN, &fork, remembered(&theirs, 20)));
    assert_eq!(
        state.get(ORIGIN).unwrap().size,
        8,
        "TRUST-7: a fork is not remembered"
    );
}

#[test]
fn the_state_file_reads_back_what_it_wrote() {
    let t = tree(8, 0);
    let mut state = AuditorState::default();
    state.advance(ORIGIN, &Judgement::First, remembered(&t, 8));
    state.advance("go.sum database tree", &Judgement::First, {
        let root = tree_root(&t, 3).unwrap();
        let body = Checkpoint::new("go.sum database tree", 3, root)
            .unwrap()
            .body();
        let k = SignerKey::from_seed("sum.example", KeyKind::Ed25519, [9; 32]).unwrap();
        Remembered {
            size: 3,
            root,
            note: sign_note(&body, &[&k]).unwrap(),
        }
    });
    let text = state.encode();
    assert!(text.ends_with('\n'));
    assert_eq!(AuditorState::parse(&text), Ok(state.clone()));
    assert_eq!(state.len(), 2);
}

#[test]
fn a_corrupt_state_file_is_refused_naming_what_is_wrong() {
    let t = tree(8, 0);
    let mut state = AuditorState::default();
    state.advance(ORIGIN, &Judgement::First, remembered(&t, 8));
    let good = state.encode();
    let root = hex::encode(tree_root(&t, 8).unwrap());
    let cases = [
        ("", "not a state file"),
        ("{}", "not a state file"),
        (&good[..good.len() / 2], "not a state file"),
        (
            &good.replace(AUDITOR_STATE_FORMAT, "benchledger auditor state v9"),
            "format",
        ),
        (
            &good.replace("\"tree_size\": 8", "\"tree_size\": 9"),
            "tree_size",
        ),
        (&good.replace(&root, &root.to_uppercase()), "root"),
        (&good.replace(&root, &root[2..]), "root"),
        (
            &good.replace("\"origins\"", "\"extra\": 1, \"origins\""),
            "unknown field",
        ),
    ];
    for (text, named) in cases {
        let err = AuditorState::parse(text).expect_err(text);
        assert!(
            err.contains(named),
            "TRUST-7: a corrupt state is refused, never reset: {err}"
        );
    }
}
