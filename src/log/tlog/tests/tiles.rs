//! C2SP tlog-tiles layout and the tlog-proof text form (TRUST-8).

use crate::log::tlog::leaf::leaf_data;
use crate::log::tlog::merkle::{leaf_hash, root_of_leaf_hashes, Hash};
use crate::log::tlog::tiles::{
    all_tiles, decode_bundle, edge, edge_root, encode_bundle, full_tile_root, full_tiles,
    index_path, partial_tile, Tile, TILE_WIDTH,
};
use crate::log::tlog::tlog_proof::{from_tlog_proof, to_tlog_proof};
use crate::log::tlog::{
    prove_inclusion, sign_note, Checkpoint, InclusionProof, KeyKind, MemoryNodes, SignerKey,
};

fn leaves(n: u64) -> Vec<Hash> {
    (0..n)
        .map(|i| leaf_hash(&leaf_data(i, &[i as u8; 32])))
        .collect()
}

#[test]
fn tile_paths_follow_the_c2sp_encoding() {
    // rule TRUST-8: C2SP's own example, 1234067 is x001/x234/067.
    assert_eq!(index_path(1_234_067, 256), "x001/x234/067", "TRUST-8");
    assert_eq!(index_path(0, 256), "000");
    assert_eq!(index_path(999, 256), "999");
    assert_eq!(index_path(1000, 256), "x001/000");
    assert_eq!(index_path(5, 112), "005.p/112");
    let t = Tile {
        level: 1,
        index: 1_234_067,
        width: 17,
    };
    assert_eq!(t.path(), "tile/1/x001/x234/067.p/17", "TRUST-8");
    let t = Tile {
        level: 0,
        index: 7,
        width: 256,
    };
    assert_eq!(t.entries_path(), "tile/entries/007", "TRUST-8");
}

#[test]
fn the_tiles_of_a_tree_are_the_ones_c2sp_lists() {
    // rule TRUST-8: "a tree of size 70,000 will be represented by 273 full
    // level 0 tiles, one partial level 0 tile of width 112, one full level
    // 1 tile, one partial level 1 tile of width 17, and one partial level 2
    // tile of width 1".
    let s = 70_000;
    assert_eq!(full_tiles(s, 0), 273, "TRUST-8");
    assert_eq!(partial_tile(s, 0).map(|t| t.width), Some(112), "TRUST-8");
    assert_eq!(full_tiles(s, 1), 1, "TRUST-8");
    assert_eq!(partial_tile(s, 1).map(|t| t.width), Some(17), "TRUST-8");
    assert_eq!(full_tiles(s, 2), 0, "TRUST-8");
    assert_eq!(partial_tile(s, 2).map(|t| t.width), Some(1), "TRUST-8");
    assert_eq!(all_tiles(s).count(), 273 + 1 + 1 + 1 + 1);
    // "a tree of size 256 will be represented by a full level 0 tile and a
    // partial level 1 tile of width 1".
    let tiles: Vec<Tile> = all_tiles(256).collect();
    assert_eq!(
        tiles,
        vec![
            Tile {
                level: 0,
                index: 0,
                width: 256
            },
            Tile {
                level: 1,
                index: 0,
                width: 1
            }
        ],
        "TRUST-8"
    );
    assert!(
        all_tiles(0).next().is_none(),
        "empty tiles are never served"
    );
}

/// The tiles of `hashes`, computed level by level from the definition.
fn tiles_of(size: u64, leaves: &[Hash]) -> Vec<(Tile, Vec<Hash>)> {
    let mut out = Vec::new();
    let mut level_hashes = leaves.to_vec();
    let mut level = 0u8;
    while !level_hashes.is_empty() {
        let mut up = Vec::new();
        for (i, chunk) in level_hashes.chunks(TILE_WIDTH as usize).enumerate() {
            let tile = Tile {
                level,
                index: i as u64,
                width: chunk.len() as u64,
            };
            if tile.is_full() {
                up.push(full_tile_root(chunk));
            }
            out.push((tile, chunk.to_vec()));
        }
        assert_eq!(up.len() as u64, full_tiles(size, level));
        level_hashes = up;
        level += 1;
    }
    out
}

#[test]
fn the_right_edge_gives_the_root() {
    // rule TRUST-8: a reader authenticates the partial tiles against the
    // checkpoint's root.
    for size in [
        1u64, 2, 3, 255, 256, 257, 511, 512, 513, 65_535, 65_536, 65_537, 70_000,
    ] {
        let l = leaves(size);
        let tiles = tiles_of(size, &l);
        let listed: Vec<Tile> = all_tiles(size).collect();
        let mut made: Vec<Tile> = tiles.iter().map(|(t, _)| *t).collect();
        made.sort_by_key(|t| (t.level, t.index));
        assert_eq!(made, listed, "size {size}");
        let e: Vec<(Tile, Vec<Hash>)> = edge(size)
            .into_iter()
            .map(|t| tiles.iter().find(|(x, _)| *x == t).unwrap().clone())
            .collect();
        assert_eq!(
            edge_root(&e),
            Some(root_of_leaf_hashes(&l)),
            "TRUST-8: size {size}"
        );
        let mut flipped = e.clone();
        flipped.last_mut().unwrap().1[0][0] ^= 1;
        assert_ne!(
            edge_root(&flipped),
            Some(root_of_leaf_hashes(&l)),
            "TRUST-8"
        );
    }
    assert_eq!(edge_root(&[]), None);
}

#[test]
fn entry_bundles_round_trip_and_refuse_cut_or_long_ones() {
    // rule TRUST-8
    let a = leaf_data(0, &[1; 32]);
    let b = leaf_data(1, &[2; 32]);
    let bundle = encode_bundle([&a[..], &b[..]]);
    assert_eq!(bundle.len(), 2 * 42);
    assert_eq!(&bundle[..2], &[0, 40]);
    assert_eq!(decode_bundle(&bundle, 2).unwrap(), vec![&a[..], &b[..]]);
    assert!(
        decode_bundle(&bundle, 1).is_err(),
        "TRUST-8: a long bundle is refused"
    );
    assert!(
        decode_bundle(&bundle, 3).is_err(),
        "TRUST-8: a short bundle is refused"
    );
    assert!(
        decode_bundle(&bundle[..83], 2).is_err(),
        "TRUST-8: a cut bundle is refused"
    );
}

#[test]
fn a_tlog_proof_round_trips_and_verifies() {
    // rule TRUST-8
    let key = SignerKey::generate("op", KeyKind::Ed25519).unwrap();
    let links: Vec<Hash> = (0..7u8).map(|i| [i; 32]).collect();
    let nodes = MemoryNodes::from_leaf_hashes(
        links
            .iter()
            .enumerate()
            .map(|(i, l)| leaf_hash(&leaf_data(i as u64, l))),
    )
    .unwrap();
    let cp = Checkpoint::new("benchledger/ledger/x y", 7, nodes.root()).unwrap();
    let note = sign_note(&cp.body(), &[&key]).unwrap();
    for seq in [0u64, 3, 6] {
        let hashes = prove_inclusion(&nodes, seq, 7).unwrap();
        let proof = InclusionProof::new(&note, seq, links[seq as usize], hashes).unwrap();
        let text = to_tlog_proof(&proof);
        assert!(text.starts_with("c2sp.org/tlog-proof@v1\nextra "), "{text}");
        assert!(text.contains(&format!("\nindex {seq}\n")), "{text}");
        assert!(text.ends_with(&note));
        let back = from_tlog_proof(&text).unwrap();
        assert_eq!(back, proof, "TRUST-8");
        back.verify(&key.verifier(), &[]).unwrap();
        // Another index with the same leaf data is refused.
        let moved = text.replace(
            &format!("\nindex {seq}\n"),
            &format!("\nindex {}\n", seq + 1),
        );
        assert!(from_tlog_proof(&moved).is_err(), "TRUST-8");
        let zeros = text.replace(&format!("\nindex {seq}\n"), &format!("\nindex 0{seq}\n"));
        assert!(from_tlog_proof(&zeros).is_err(), "TRUST-8: leading zeros");
    }
    // A flipped proof hash no longer verifies.
    let hashes = prove_inclusion(&nodes, 2, 7).unwrap();
    let proof = InclusionProof::new(&note, 2, links[2], hashes).unwrap();
    let text = to_tlog_proof(&proof);
    let line = text.lines().nth(3).unwrap().to_string();
    let other = if line.starts_with('A') {
        line.replacen('A', "B", 1)
    } else {
        format!("A{}", &line[1..])
    };
    let bad = from_tlog_proof(&text.replacen(&line, &other, 1)).unwrap();
    assert!(bad.verify(&key.verifier(), &[]).is_err(), "TRUST-8");
}
