//! Projection checkpoints: a checkpointed replay equals the full replay,
//! anything unusable is ignored, every bound at and past its limit.

use std::path::Path;
use std::time::Duration;

use super::*;
use crate::limits::CHECKPOINT_BYTES_MAX;
use crate::log::checkpoint::{self as ckpt, *};
use crate::log::codec;
use crate::log::ledger::Ledger;
use crate::method::projections::{replay, replay_until, State};

const NEVER: Policy = Policy {
    events_min: u64::MAX,
    tail_events_max: u64::MAX,
    bytes_max: CHECKPOINT_BYTES_MAX,
};

/// A recorded lineage (replay-tests), imported into a fresh ledger.
fn imported(name: &str) -> (tempfile::TempDir, Ledger) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("replay-tests/ledgers")
        .join(format!("{name}.jsonl"));
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ledger");
    let mut input = std::io::BufReader::new(std::fs::File::open(&src).unwrap());
    crate::log::export::import_jsonl(
        &mut input,
        "test",
        &dir,
        Duration::ZERO,
        crate::log::export::TrailerRule::Optional,
    )
    .unwrap();
    let ledger = Ledger::open(&dir, Duration::ZERO).unwrap();
    (tmp, ledger)
}

/// Every recorded lineage export (replay-tests/ledgers/*.jsonl), sorted.
fn recorded_ledgers() -> Vec<std::path::PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("replay-tests/ledgers");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    names.sort();
    names
}

/// Writes the checkpoint of the replay up to `seq`.
fn checkpoint_at(ledger: &Ledger, seq: u64) {
    let state = replay_until(ledger, State::default(), seq).unwrap();
    let hash = ledger.read(seq).unwrap().hash;
    write(ledger.dir(), &state, seq, hash, Policy::DEFAULT).unwrap();
}

fn genesis_why(r: &Replayed<State>) -> &str {
    match &r.source {
        Source::Genesis { why } => why,
        other => panic!("expected a replay from genesis, got {other:?}"),
    }
}

#[test]
fn a_checkpointed_replay_equals_the_full_replay_from_any_seq() {
    let (_t, ledger) = imported("short13-accepted");
    let full = replay(&ledger).unwrap();
    let head = ledger.head().unwrap().seq;
    for seq in [0, 1, head / 3, head / 2, head - 1, head] {
        checkpoint_at(&ledger, seq);
        let r = ckpt::replay::<State>(&ledger, NEVER).unwrap();
        assert_eq!(
            r.source,
            Source::Checkpoint {
                seq,
                tail_events: head - seq
            }
        );
        assert!(
            r.state == full,
            "state from the checkpoint at {seq} differs"
        );
        assert_eq!(r.written, None);
    }
}

#[test]
fn every_recorded_lineage_replays_the_same_through_a_midway_checkpoint() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("replay-tests/ledgers");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            (p.extension()? == "jsonl").then(|| p.file_stem()?.to_str().map(String::from))?
        })
        .collect();
    names.sort();
    assert!(names.len() >= 14, "replay-tests ledgers: {names:?}");
    for name in names {
        let (_t, ledger) = imported(&name);
        let head = ledger.head().unwrap().seq;
        checkpoint_at(&ledger, head / 2);
        let r = ckpt::replay::<State>(&ledger, NEVER).unwrap();
        assert!(matches!(r.source, Source::Checkpoint { .. }), "{name}");
        assert!(r.state == replay(&ledger).unwrap(), "{name}: states differ");
    }
}

#[test]
fn a_first_checkpoint_is_written_at_events_min_and_not_below() {
    let (_t, ledger) = imported("short13-accepted");
    let events = ledger.head().unwrap().seq + 1;
    let below = Policy {
        events_min: events + 1,
        ..NEVER
    };
    let r = ckpt::replay::<State>(&ledger, below).unwrap();
    assert_eq!(genesis_why(&r), "no checkpoint");
    assert_eq!(r.written, None);
    assert!(!path(ledger.dir()).exists());

    let at = Policy {
        events_min: events,
        ..NEVER
    };
    let r = ckpt::replay::<State>(&ledger, at).unwrap();
    assert_eq!(r.written, Some(Ok(events - 1)));
    assert!(path(ledger.dir()).exists());
    // The next replay starts from it and folds nothing.
    let r = ckpt::replay::<State>(&ledger, at).unwrap();
    assert_eq!(
        r.source,
        Source::Checkpoint {
            seq: events - 1,
            tail_events: 0
        }
    );
}

#[test]
fn a_tail_of_tail_events_max_renews_the_checkpoint_and_a_shorter_one_does_not() {
    let (_t, ledger) = imported("short13-accepted");
    let head = ledger.head().unwrap().seq;
    checkpoint_at(&ledger, head - 10);
    let short = Policy {
        tail_events_max: 11,
        ..NEVER
    };
    assert_eq!(ckpt::replay::<State>(&ledger, short).unwrap().written, None);
    let at = Policy {
        tail_events_max: 10,
        ..NEVER
    };
    let r = ckpt::replay::<State>(&ledger, at).unwrap();
    assert_eq!(r.written, Some(Ok(head)));
    assert_eq!(
        ckpt::replay::<State>(&ledger, NEVER).unwrap().source,
        Source::Checkpoint {
            seq: head,
            tail_events: 0
        }
    );
}

#[test]
fn a_write_removes_the_temporaries_of_killed_writers_and_nothing_else() {
    let (_t, ledger) = imported("short13-accepted");
    let dir = ledger.dir().to_path_buf();
    let stale = dir.join(format!("{CHECKPOINT_FILE}.4242.tmp"));
    let other = dir.join("operator-notes.tmp");
    std::fs::write(&stale, b"half a checkpoint").unwrap();
    std::fs::write(&other, b"not ours").unwrap();
    checkpoint_at(&ledger, 5);
    assert!(!stale.exists(), "a killed writer's temporary is removed");
    assert!(other.exists(), "other files are left alone");
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(CHECKPOINT_FILE))
        .collect();
    assert_eq!(names, vec![CHECKPOINT_FILE.to_string()]);
}

#[test]
fn bytes_max_is_enforced_at_and_past_the_bound_on_write_and_read() {
    let (_t, ledger) = imported("short13-accepted");
    let head = ledger.head().unwrap();
    let state = replay(&ledger).unwrap();
    let len = encode(&state, head.seq, head.hash).unwrap().len();
    let at = Policy {
        bytes_max: len,
        ..NEVER
    };
    let past = Policy {
        bytes_max: len - 1,
        ..NEVER
    };
    let err = write(ledger.dir(), &state, head.seq, head.hash, past).unwrap_err();
    assert!(err.to_string().contains("over the limit"), "{err}");
    assert!(
        !path(ledger.dir()).exists(),
        "nothing written past the bound"
    );
    write(ledger.dir(), &state, head.seq, head.hash, at).unwrap();
    assert!(matches!(
        ckpt::replay::<State>(&ledger, at).unwrap().source,
        Source::Checkpoint { .. }
    ));
    let r = ckpt::replay::<State>(&ledger, past).unwrap();
    assert!(genesis_why(&r).contains("over the limit"), "{:?}", r.source);
    assert!(r.state == state);
}

#[test]
fn a_torn_flipped_or_foreign_checkpoint_is_ignored_and_the_state_is_replayed() {
    let (_t, ledger) = imported("short13-accepted");
    let full = replay(&ledger).unwrap();
    let head = ledger.head().unwrap();
    let good = encode(&full, head.seq, head.hash).unwrap();
    let p = path(ledger.dir());
    let mut flipped = good.clone();
    flipped[good.len() / 2] ^= 1;
    let mut bad_magic = good.clone();
    bad_magic[0] = b'X';
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("flipped byte", flipped, "checksum does not match"),
        ("truncated", good[..good.len() - 1].to_vec(), "checksum"),
        ("tiny", good[..10].to_vec(), "truncated"),
        ("empty", Vec::new(), "truncated"),
        ("magic", bad_magic, "not a checkpoint"),
    ];
    for (what, bytes, why) in cases {
        std::fs::write(&p, bytes).unwrap();
        let r = ckpt::replay::<State>(&ledger, NEVER).unwrap();
        assert!(genesis_why(&r).contains(why), "{what}: {:?}", r.source);
        assert!(r.state == full, "{what}");
    }
}

/// Builds checkpoint bytes with a chosen header (checksum recomputed).
fn forged(header: &Header, state: &State) -> Vec<u8> {
    let h = codec::encode_bulk(header).unwrap();
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&(h.len() as u32).to_be_bytes());
    out.extend_from_slice(&h);
    out.extend_from_slice(&codec::encode_bulk(state).unwrap());
    let sum = blake3::derive_key(CHECKSUM_CONTEXT, &out);
    out.extend_from_slice(&sum);
    out
}

#[test]
fn a_checkpoint_of_another_build_or_another_history_is_ignored() {
    let (_t, ledger) = imported("short13-accepted");
    let full = replay(&ledger).unwrap();
    let head = ledger.head().unwrap();
    let header = Header {
        format: CHECKPOINT_FORMAT,
        layout: STATE_LAYOUT_VERSION,
        projection_version: PROJECTION_VERSION,
        seq: head.seq,
        hash: head.hash,
    };
    let p = path(ledger.dir());
    let mut other_hash = head.hash;
    other_hash[0] ^= 1;
    let past_head = State {
        head_seq: Some(head.seq + 5),
        ..full.clone()
    };
    let cases: Vec<(&str, Header, &State, &str)> = vec![
        (
            "layout",
            Header {
                layout: STATE_LAYOUT_VERSION + 1,
                ..header.clone()
            },
            &full,
            "another build",
        ),
        (
            "projection version",
            Header {
                projection_version: PROJECTION_VERSION + 1,
                ..header.clone()
            },
            &full,
            "another build",
        ),
        (
            "format",
            Header {
                format: CHECKPOINT_FORMAT + 1,
                ..header.clone()
            },
            &full,
            "another build",
        ),
        (
            "other history",
            Header {
                hash: other_hash,
                ..header.clone()
            },
            &full,
            "does not have the checkpoint's hash",
        ),
        (
            "past the head",
            Header {
                seq: head.seq + 5,
                ..header.clone()
            },
            &past_head,
            "past the head",
        ),
        (
            "state not at its seq",
            Header {
                seq: head.seq - 1,
                hash: ledger.read(head.seq - 1).unwrap().hash,
                ..header.clone()
            },
            &full,
            "does not sit at its seq",
        ),
    ];
    for (what, h, state, why) in cases {
        std::fs::write(&p, forged(&h, state)).unwrap();
        let r = ckpt::replay::<State>(&ledger, NEVER).unwrap();
        assert!(genesis_why(&r).contains(why), "{what}: {:?}", r.source);
        assert!(r.state == full, "{what}");
        assert!(
            matches!(super::check(&ledger).unwrap(), Check::Ignored { .. }),
            "{what}"
        );
    }
}

#[test]
fn check_re_derives_the_checkpoint_and_names_a_forged_state() {
    let (_t, ledger) = imported("short13-accepted");
    assert_eq!(super::check(&ledger).unwrap(), Check::Absent);
    let head = ledger.head().unwrap();
    let seq = head.seq / 2;
    checkpoint_at(&ledger, seq);
    assert_eq!(super::check(&ledger).unwrap(), Check::Matches { seq });

    // A checkpoint with a valid checksum and hash but a state the log does
    // not give (one lineage's claims dropped): decide would trust it, so
    // verify must name it.
    let mut state = replay_until(&ledger, State::default(), seq).unwrap();
    assert!(!state.claims.is_empty());
    state.claims.clear();
    write(
        ledger.dir(),
        &state,
        seq,
        ledger.read(seq).unwrap().hash,
        NEVER,
    )
    .unwrap();
    assert_eq!(super::check(&ledger).unwrap(), Check::Differs { seq });
}

#[test]
fn the_state_layout_is_pinned() {
    // The encoded decide state of every recorded lineage, plus decisions
    // carrying both forms of ingress commitment (no recorded lineage has
    // one). If this fails because a projection type changed, raise
    // STATE_LAYOUT_VERSION (old checkpoints are then ignored, not misread)
    // and renew the hash; if the recorded ledgers were regenerated, renew
    // the hash.
    let names = recorded_ledgers();
    let mut all = blake3::Hasher::new();
    for p in names {
        let (_t, ledger) = imported(p.file_stem().unwrap().to_str().unwrap());
        let mut state = replay(&ledger).unwrap();
        let g = state
            .lineages
            .values_mut()
            .flat_map(|l| l.groups.values_mut())
            .next()
            .unwrap();
        for c in ["sha256:".to_string() + &"ab".repeat(32), "other".into()] {
            g.decisions.push((
                7,
                crate::method::projections::DecisionObs {
                    request_id: None,
                    commitment: Some(crate::method::projections::Commitment::parse(&c)),
                    reason: "r".into(),
                    selected_tier: None,
                    selected_model: Some("m".into()),
                },
            ));
        }
        all.update(&codec::encode_bulk(&state).unwrap());
    }
    assert_eq!(
        (STATE_LAYOUT_VERSION, all.finalize().to_hex().to_string()),
        (
            10,
            "6a38b597618db529dbcb0dac2c2ed53b9dbb74020efe1946f9b28cc2411facf2".to_string()
        ),
        "state layout changed"
    );
}

#[test]
fn the_kept_spend_equals_a_fresh_settlement_at_every_point_of_every_recorded_lineage() {
    let names = recorded_ledgers();
    let mut charged = 0;
    for p in names {
        let name = p.file_stem().unwrap().to_str().unwrap().to_string();
        let (_t, ledger) = imported(&name);
        let head = ledger.head().unwrap().seq;
        for seq in [head / 4, head / 2, head * 3 / 4, head - 1, head] {
            let state = replay_until(&ledger, State::default(), seq).unwrap();
            for l in state.lineages.values() {
                let m = &l.frozen.manifest.public;
                for (group, g) in &l.groups {
                    // SETTLE-6, RUN-7: the figure kept by the fold is the
                    // figure a settlement of the whole group gives.
                    assert!(
                        g.spend.matches_settlement(m, g),
                        "{name} at seq {seq}: {group} kept {}",
                        g.spend.total_micro_usd()
                    );
                    charged += u32::from(g.spend.total_micro_usd() > 0);
                }
            }
        }
    }
    assert!(charged > 0, "no recorded lineage has a charge to keep");
}
