use std::cell::Cell;

use proptest::prelude::*;
use sha2::{Digest, Sha256};

use super::super::error::TlogError;
use super::super::merkle::*;

fn leaves(n: u64) -> Vec<Hash> {
    (0..n).map(|i| leaf_hash(&i.to_be_bytes())).collect()
}

fn tree(n: u64) -> MemoryNodes {
    MemoryNodes::from_leaf_hashes(leaves(n)).expect("small tree")
}

#[test]
fn empty_and_single_leaf_roots() {
    let empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    assert_eq!(super::super::text::hex_encode(&empty_root()), empty);
    assert_eq!(tree_root(&MemoryNodes::new(), 0), Ok(empty_root()));
    let mut h = Sha256::new();
    h.update([0u8]);
    h.update(b"abc");
    assert_eq!(leaf_hash(b"abc"), <[u8; 32]>::from(h.finalize()));
    assert_eq!(tree_root(&tree(1), 1), Ok(leaves(1)[0]));
}

/// The worked example of C2SP merkle-tree (derived from RFC 6962 2.1.3).
#[test]
fn c2sp_seven_leaf_example() {
    let l = leaves(7);
    let (a, b, c, d, e, f, g) = (l[0], l[1], l[2], l[3], l[4], l[5], l[6]);
    let (h, i, j) = (node_hash(&a, &b), node_hash(&c, &d), node_hash(&e, &f));
    let (k, ll) = (node_hash(&h, &i), node_hash(&j, &g));
    let root = node_hash(&k, &ll);
    let t = tree(7);
    assert_eq!(tree_root(&t, 7), Ok(root));
    assert_eq!(root_of_leaf_hashes(&l), root);
    assert_eq!(prove_inclusion(&t, 0, 7), Ok(vec![b, i, ll]));
    assert_eq!(prove_inclusion(&t, 3, 7), Ok(vec![c, h, ll]));
    assert_eq!(prove_inclusion(&t, 4, 7), Ok(vec![f, g, k]));
    assert_eq!(prove_inclusion(&t, 6, 7), Ok(vec![j, k]));
    assert_eq!(prove_consistency(&t, 3, 7), Ok(vec![c, d, h, ll]));
    assert_eq!(prove_consistency(&t, 4, 7), Ok(vec![ll]));
    assert_eq!(prove_consistency(&t, 6, 7), Ok(vec![j, g, k]));
}

fn ceil_log2(n: u64) -> usize {
    (64 - (n - 1).leading_zeros()) as usize
}

/// Every inclusion and consistency proof of every tree up to 300 leaves
/// verifies, within the RFC length bounds, and every root agrees with MTH.
#[test]
fn every_proof_up_to_300_leaves_verifies() {
    const N: u64 = 300;
    let all = leaves(N);
    let t = tree(N);
    let roots: Vec<Hash> = (0..=N).map(|n| tree_root(&t, n).unwrap()).collect();
    for n in 1..=N {
        assert_eq!(
            roots[n as usize],
            root_of_leaf_hashes(&all[..n as usize]),
            "root {n}"
        );
        for i in 0..n {
            let proof = prove_inclusion(&t, i, n).unwrap();
            assert!(proof.len() <= ceil_log2(n));
            assert_eq!(
                verify_inclusion(&all[i as usize], i, n, &proof, &roots[n as usize]),
                Ok(())
            );
        }
        for m in 1..=n {
            let proof = prove_consistency(&t, m, n).unwrap();
            assert!(proof.len() <= ceil_log2(n) + 1);
            let (old, new) = (&roots[m as usize], &roots[n as usize]);
            assert_eq!(
                verify_consistency(m, n, &proof, old, new),
                Ok(()),
                "{m} -> {n}"
            );
        }
    }
}

#[test]
fn builder_emits_every_complete_subtree_and_resumes() {
    let all = leaves(130);
    let mut builder = TreeBuilder::new();
    let mut emitted = Vec::new();
    let t = tree(130);
    for (i, leaf) in all.iter().enumerate() {
        emitted.extend(builder.append(*leaf).unwrap());
        let size = i as u64 + 1;
        assert_eq!(builder.root(), root_of_leaf_hashes(&all[..=i]));
        assert_eq!(TreeBuilder::resume(&t, size).unwrap(), builder);
    }
    // 130 leaves close 130 + 65 + 32 + 16 + 8 + 4 + 2 + 1 subtrees.
    assert_eq!(emitted.len(), 130 + 65 + 32 + 16 + 8 + 4 + 2 + 1);
    for node in emitted {
        assert_eq!(t.subtree(node.level, node.index), Ok(Some(node.hash)));
        let start = (node.index << node.level) as usize;
        let span = &all[start..start + (1usize << node.level)];
        assert_eq!(node.hash, root_of_leaf_hashes(span));
    }
    assert_eq!(TreeBuilder::new().root(), empty_root());
}

/// Counts the reads a proof makes.
struct Counting<'a> {
    inner: &'a MemoryNodes,
    reads: Cell<usize>,
}

impl NodeSource for Counting<'_> {
    fn leaf_count(&self) -> Result<u64, TlogError> {
        self.inner.leaf_count()
    }
    fn subtree(&self, level: u8, index: u64) -> Result<Option<Hash>, TlogError> {
        self.reads.set(self.reads.get() + 1);
        self.inner.subtree(level, index)
    }
}

#[test]
fn proofs_read_logarithmically_many_nodes() {
    let t = tree(5000);
    let src = Counting {
        inner: &t,
        reads: Cell::new(0),
    };
    let bound = 3 * ceil_log2(5000) + 2;
    for (i, n) in [(0, 5000), (4999, 5000), (2047, 4097), (1234, 3333)] {
        src.reads.set(0);
        prove_inclusion(&src, i, n).unwrap();
        assert!(
            src.reads.get() <= bound,
            "inclusion {i} {n}: {}",
            src.reads.get()
        );
    }
    for (m, n) in [(1, 5000), (4999, 5000), (2048, 4097), (1234, 3333)] {
        src.reads.set(0);
        prove_consistency(&src, m, n).unwrap();
        assert!(
            src.reads.get() <= bound,
            "consistency {m} {n}: {}",
            src.reads.get()
        );
    }
    src.reads.set(0);
    tree_root(&src, 4095).unwrap();
    assert_eq!(src.reads.get(), 12);
}

/// A huge tree whose leaves are all equal: subtree hashes depend on the
/// level only, so any size up to TREE_SIZE_MAX + 1 is cheap and consistent.
struct Uniform {
    leaves: u64,
}

impl NodeSource for Uniform {
    fn leaf_count(&self) -> Result<u64, TlogError> {
        Ok(self.leaves)
    }
    fn subtree(&self, level: u8, _index: u64) -> Result<Option<Hash>, TlogError> {
        let mut h = leaf_hash(b"uniform");
        for _ in 0..level {
            h = node_hash(&h, &h);
        }
        Ok(Some(h))
    }
}

#[test]
fn tree_size_max_at_and_past_the_bound() {
    let src = Uniform {
        leaves: TREE_SIZE_MAX + 1,
    };
    let max = TREE_SIZE_MAX;
    let root = tree_root(&src, max).unwrap();
    let proof = prove_inclusion(&src, max - 1, max).unwrap();
    assert_eq!(proof.len(), 48);
    assert_eq!(
        verify_inclusion(&leaf_hash(b"uniform"), max - 1, max, &proof, &root),
        Ok(())
    );
    let old = max - 12345;
    let proof = prove_consistency(&src, old, max).unwrap();
    let old_root = tree_root(&src, old).unwrap();
    assert_eq!(
        verify_consistency(old, max, &proof, &old_root, &root),
        Ok(())
    );
    let too_big = TlogError::TreeSizeTooLarge { size: max + 1 };
    assert_eq!(tree_root(&src, max + 1), Err(too_big.clone()));
    assert_eq!(prove_inclusion(&src, 0, max + 1), Err(too_big.clone()));
    assert_eq!(prove_consistency(&src, 1, max + 1), Err(too_big.clone()));
    assert_eq!(
        verify_inclusion(&root, 0, max + 1, &[], &root),
        Err(too_big.clone())
    );
    assert_eq!(
        verify_consistency(1, max + 1, &[root], &root, &root),
        Err(too_big.clone())
    );
    // 2^SUBTREE_LEVEL_MAX leaves are one complete subtree of the top level.
    assert_eq!(1u64 << SUBTREE_LEVEL_MAX, TREE_SIZE_MAX);
    assert_eq!(TreeBuilder::resume(&src, max).map(|b| b.root()), Ok(root));
    assert_eq!(src.subtree(SUBTREE_LEVEL_MAX, 0).unwrap(), Some(root));
    let mut builder = TreeBuilder::resume(&src, max - 1).unwrap();
    assert!(builder.append(leaf_hash(b"uniform")).is_ok());
    assert_eq!(builder.root(), root);
    assert_eq!(builder.append(root), Err(too_big.clone()));
    assert_eq!(TreeBuilder::resume(&src, max + 1), Err(too_big));
}

#[test]
fn proof_hashes_max_at_and_past_the_bound() {
    let h = leaf_hash(b"x");
    let at = vec![h; PROOF_HASHES_MAX];
    let past = vec![h; PROOF_HASHES_MAX + 1];
    let size = TREE_SIZE_MAX;
    let long = Err(TlogError::ProofTooLong {
        count: PROOF_HASHES_MAX + 1,
    });
    let wrong = Err(TlogError::InclusionProofLength {
        count: PROOF_HASHES_MAX,
    });
    assert_eq!(verify_inclusion(&h, 0, size, &at, &h), wrong);
    assert_eq!(verify_inclusion(&h, 0, size, &past, &h), long);
    let wrong = Err(TlogError::ConsistencyProofLength {
        count: PROOF_HASHES_MAX,
    });
    assert_eq!(verify_consistency(3, size, &at, &h, &h), wrong);
    assert_eq!(verify_consistency(3, size, &past, &h, &h), long);
}

#[test]
fn bad_requests_are_errors_not_panics() {
    let t = tree(10);
    assert_eq!(
        prove_inclusion(&t, 10, 10),
        Err(TlogError::IndexOutOfRange {
            index: 10,
            size: 10
        })
    );
    assert_eq!(
        prove_inclusion(&t, 0, 0),
        Err(TlogError::IndexOutOfRange { index: 0, size: 0 })
    );
    assert_eq!(
        prove_inclusion(&t, 0, 11),
        Err(TlogError::SizeBeyondSource {
            size: 11,
            available: 10
        })
    );
    assert_eq!(
        prove_consistency(&t, 5, 4),
        Err(TlogError::OldSizeAboveNewSize { old: 5, new: 4 })
    );
    let r = tree_root(&t, 10).unwrap();
    assert_eq!(
        verify_inclusion(&r, 10, 10, &[], &r),
        Err(TlogError::IndexOutOfRange {
            index: 10,
            size: 10
        })
    );
    assert_eq!(
        verify_consistency(5, 4, &[], &r, &r),
        Err(TlogError::OldSizeAboveNewSize { old: 5, new: 4 })
    );
    // A source that lost a node reports it.
    struct Lossy(MemoryNodes);
    impl NodeSource for Lossy {
        fn leaf_count(&self) -> Result<u64, TlogError> {
            self.0.leaf_count()
        }
        fn subtree(&self, level: u8, index: u64) -> Result<Option<Hash>, TlogError> {
            if level == 3 {
                return Err(TlogError::NodeSource("disk on fire".into()));
            }
            Ok(if level == 1 {
                None
            } else {
                self.0.subtree(level, index)?
            })
        }
    }
    let lossy = Lossy(t);
    assert_eq!(
        prove_inclusion(&lossy, 0, 4),
        Err(TlogError::MissingNode { level: 1, index: 1 })
    );
    assert_eq!(
        tree_root(&lossy, 8),
        Err(TlogError::NodeSource("disk on fire".into()))
    );
}

#[test]
fn edge_sizes_of_consistency() {
    let t = tree(8);
    let (r4, r8) = (tree_root(&t, 4).unwrap(), tree_root(&t, 8).unwrap());
    assert_eq!(verify_consistency(4, 4, &[], &r4, &r4), Ok(()));
    assert_eq!(
        verify_consistency(4, 4, &[r4], &r4, &r4),
        Err(TlogError::ConsistencyProofLength { count: 1 })
    );
    assert_eq!(
        verify_consistency(4, 4, &[], &r4, &r8),
        Err(TlogError::SameSizeRootsDiffer { size: 4 })
    );
    // From the empty tree to a larger one: refused whatever the proof
    // (transparency-dev/merkle's vectors expect an error).
    for proof in [&[][..], &[r4][..]] {
        for old_root in [empty_root(), r4] {
            assert_eq!(
                verify_consistency(0, 8, proof, &old_root, &r8),
                Err(TlogError::ConsistencyFromEmptyTree { new: 8 })
            );
        }
    }
    let e = empty_root();
    assert_eq!(verify_consistency(0, 0, &[], &e, &e), Ok(()));
    assert_eq!(
        verify_consistency(0, 0, &[], &r4, &r4),
        Err(TlogError::EmptyTreeRootMismatch)
    );
    assert_eq!(
        verify_consistency(3, 8, &[], &r4, &r8),
        Err(TlogError::ConsistencyProofLength { count: 0 })
    );
    assert_eq!(prove_consistency(&t, 0, 8), Ok(vec![]));
    assert_eq!(prove_consistency(&t, 8, 8), Ok(vec![]));
}

fn flip(hash: &Hash, bit: usize) -> Hash {
    let mut out = *hash;
    out[bit / 8 % 32] ^= 1 << (bit % 8);
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn tampered_inclusion_fails(n in 1u64..300, i_seed in any::<u64>(), other in any::<u64>(), bit in 0usize..256) {
        let i = i_seed % n;
        let t = tree(n);
        let root = tree_root(&t, n).unwrap();
        let leaf = leaves(n)[i as usize];
        let proof = prove_inclusion(&t, i, n).unwrap();
        prop_assert!(verify_inclusion(&flip(&leaf, bit), i, n, &proof, &root).is_err());
        prop_assert!(verify_inclusion(&leaf, i, n, &proof, &flip(&root, bit)).is_err());
        if !proof.is_empty() {
            let mut bad = proof.clone();
            let k = (other as usize) % bad.len();
            bad[k] = flip(&bad[k], bit);
            prop_assert!(verify_inclusion(&leaf, i, n, &bad, &root).is_err());
            prop_assert!(verify_inclusion(&leaf, i, n, &proof[..proof.len() - 1], &root).is_err());
        }
        let mut longer = proof.clone();
        longer.push(root);
        prop_assert!(verify_inclusion(&leaf, i, n, &longer, &root).is_err());
        let wrong_index = other % n;
        if wrong_index != i {
            prop_assert!(verify_inclusion(&leaf, wrong_index, n, &proof, &root).is_err());
        }
        let big = tree(300);
        let wrong_size = i + 1 + other % (300 - i);
        if wrong_size != n {
            let wrong_root = tree_root(&big, wrong_size).unwrap();
            prop_assert!(verify_inclusion(&leaf, i, wrong_size, &proof, &wrong_root).is_err());
        }
    }

    #[test]
    fn tampered_consistency_fails(n in 2u64..300, m_seed in any::<u64>(), other in any::<u64>(), bit in 0usize..256) {
        let m = 1 + m_seed % (n - 1);
        let t = tree(300);
        let (old, new) = (tree_root(&t, m).unwrap(), tree_root(&t, n).unwrap());
        let proof = prove_consistency(&t, m, n).unwrap();
        prop_assert!(verify_consistency(m, n, &proof, &old, &new).is_ok());
        prop_assert!(verify_consistency(m, n, &proof, &flip(&old, bit), &new).is_err());
        prop_assert!(verify_consistency(m, n, &proof, &old, &flip(&new, bit)).is_err());
        let mut bad = proof.clone();
        let k = (other as usize) % bad.len();
        bad[k] = flip(&bad[k], bit);
        prop_assert!(verify_consistency(m, n, &bad, &old, &new).is_err());
        prop_assert!(verify_consistency(m, n, &proof[..proof.len() - 1], &old, &new).is_err());
        let wrong_old = 1 + other % n;
        if wrong_old != m {
            let r = tree_root(&t, wrong_old).unwrap();
            prop_assert!(verify_consistency(wrong_old, n, &proof, &r, &new).is_err());
        }
        let wrong_new = m + 1 + other % (300 - m);
        if wrong_new != n {
            let r = tree_root(&t, wrong_new).unwrap();
            prop_assert!(verify_consistency(m, wrong_new, &proof, &old, &r).is_err());
        }
    }
}
