//! RFC 6962 Merkle tree hashing, and inclusion and consistency proofs with
//! the verification algorithms of RFC 9162 sections 2.1.3.2 and 2.1.4.2.
//!
//! Proofs are generated from a [`NodeSource`]: a store of the hashes of
//! complete subtrees (2^level leaves starting at leaf `index * 2^level`).
//! Every proof and every root of any size needs O(log n) reads from it.
//! [`TreeBuilder`] appends leaves and emits the complete subtrees each append
//! closes, so a store can persist them; [`MemoryNodes`] keeps them in memory.

use sha2::{Digest, Sha256};

use super::error::TlogError;

/// A SHA-256 output.
pub type Hash = [u8; 32];

/// The largest tree, in leaves. Bounds every size read from the outside;
/// 2^48 keeps every size an exact JSON number and every level below 49.
pub const TREE_SIZE_MAX: u64 = 1 << 48;
/// The highest level of a complete subtree (2^48 leaves).
pub const SUBTREE_LEVEL_MAX: u8 = 48;
/// The most hashes a proof may carry, in hashes (inclusion needs at most 48,
/// consistency at most 49 for trees up to [`TREE_SIZE_MAX`]).
pub const PROOF_HASHES_MAX: usize = 64;

/// RFC 6962 leaf hash: SHA-256(0x00 || data).
pub fn leaf_hash(data: &[u8]) -> Hash {
    let mut h = Sha256::new();
    h.update([0x00]);
    h.update(data);
    h.finalize().into()
}

/// RFC 6962 interior node hash: SHA-256(0x01 || left || right).
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update([0x01]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// The root of the empty tree: SHA-256 of the empty string.
pub fn empty_root() -> Hash {
    Sha256::digest([]).into()
}

/// The largest power of two strictly below `n` (n >= 2).
fn split_point(n: u64) -> u64 {
    assert!(n >= 2, "split_point needs at least two leaves");
    1 << (63 - (n - 1).leading_zeros())
}

/// MTH over a list of leaf hashes, by the recursive definition (reference
/// implementation; O(n) hashing).
pub fn root_of_leaf_hashes(leaves: &[Hash]) -> Hash {
    match leaves.len() {
        0 => empty_root(),
        1 => leaves[0],
        n => {
            let k = split_point(n as u64) as usize;
            node_hash(
                &root_of_leaf_hashes(&leaves[..k]),
                &root_of_leaf_hashes(&leaves[k..]),
            )
        }
    }
}

/// A store of complete-subtree hashes.
///
/// `subtree(level, index)` is the root of the 2^level leaves starting at leaf
/// `index * 2^level`; level 0 is the leaf hashes. A source must hold every
/// complete subtree inside its first `leaf_count()` leaves.
pub trait NodeSource {
    /// How many leaves the source covers.
    fn leaf_count(&self) -> Result<u64, TlogError>;
    /// The hash of one complete subtree, or `None` when it is not stored.
    fn subtree(&self, level: u8, index: u64) -> Result<Option<Hash>, TlogError>;
}

fn read_node<S: NodeSource + ?Sized>(src: &S, level: u8, index: u64) -> Result<Hash, TlogError> {
    src.subtree(level, index)?
        .ok_or(TlogError::MissingNode { level, index })
}

fn check_tree_size(size: u64) -> Result<(), TlogError> {
    if size > TREE_SIZE_MAX {
        return Err(TlogError::TreeSizeTooLarge { size });
    }
    Ok(())
}

fn check_source_size<S: NodeSource + ?Sized>(src: &S, size: u64) -> Result<(), TlogError> {
    check_tree_size(size)?;
    let available = src.leaf_count()?;
    if size > available {
        return Err(TlogError::SizeBeyondSource { size, available });
    }
    Ok(())
}

/// MTH of leaves `[start, end)` where `start` is a multiple of a power of two
/// at least `end - start` (true of every range the RFC recursion visits):
/// the hashes of the complete subtrees of the size's binary decomposition,
/// folded from the right. At most 49 reads.
fn range_root<S: NodeSource + ?Sized>(src: &S, start: u64, end: u64) -> Result<Hash, TlogError> {
    assert!(start < end, "range_root needs a non-empty range");
    let mut parts: Vec<Hash> = Vec::with_capacity(64);
    let mut pos = start;
    while pos < end {
        let level = (63 - (end - pos).leading_zeros()) as u8;
        assert!(
            pos.is_multiple_of(1u64 << level),
            "range_root needs an aligned range"
        );
        parts.push(read_node(src, level, pos >> level)?);
        pos += 1 << level;
    }
    let mut acc = parts.pop().expect("a non-empty range has a part");
    while let Some(left) = parts.pop() {
        acc = node_hash(&left, &acc);
    }
    Ok(acc)
}

/// The root of the first `size` leaves of `src`, in O(log size) reads.
pub fn tree_root<S: NodeSource + ?Sized>(src: &S, size: u64) -> Result<Hash, TlogError> {
    check_source_size(src, size)?;
    if size == 0 {
        return Ok(empty_root());
    }
    range_root(src, 0, size)
}

/// The RFC 6962 `PATH(index, D[size])`: sibling hashes from the leaf upwards.
pub fn prove_inclusion<S: NodeSource + ?Sized>(
    src: &S,
    index: u64,
    size: u64,
) -> Result<Vec<Hash>, TlogError> {
    check_source_size(src, size)?;
    if index >= size {
        return Err(TlogError::IndexOutOfRange { index, size });
    }
    let mut top_down = Vec::new();
    let (mut start, mut end) = (0u64, size);
    while end - start > 1 {
        let k = split_point(end - start);
        if index < start + k {
            top_down.push(range_root(src, start + k, end)?);
            end = start + k;
        } else {
            let level = k.trailing_zeros() as u8;
            top_down.push(read_node(src, level, start >> level)?);
            start += k;
        }
    }
    top_down.reverse();
    Ok(top_down)
}

/// The RFC 6962 `PROOF(old, D[new]) = SUBPROOF(old, D[new], true)`. Empty when
/// `old` is 0 or equals `new`.
pub fn prove_consistency<S: NodeSource + ?Sized>(
    src: &S,
    old: u64,
    new: u64,
) -> Result<Vec<Hash>, TlogError> {
    check_source_size(src, new)?;
    if old > new {
        return Err(TlogError::OldSizeAboveNewSize { old, new });
    }
    let mut out = Vec::new();
    if old != 0 && old != new {
        subproof(src, old, 0, new, true, &mut out)?;
    }
    Ok(out)
}

/// SUBPROOF(m, D[start:end], whole_is_known) appended to `out`; `m` counts
/// from `start`. Recursion depth is at most 48.
fn subproof<S: NodeSource + ?Sized>(
    src: &S,
    m: u64,
    start: u64,
    end: u64,
    whole_is_known: bool,
    out: &mut Vec<Hash>,
) -> Result<(), TlogError> {
    let n = end - start;
    if m == n {
        if !whole_is_known {
            out.push(range_root(src, start, end)?);
        }
        return Ok(());
    }
    let k = split_point(n);
    if m <= k {
        subproof(src, m, start, start + k, whole_is_known, out)?;
        out.push(range_root(src, start + k, end)?);
    } else {
        subproof(src, m - k, start + k, end, false, out)?;
        let level = k.trailing_zeros() as u8;
        out.push(read_node(src, level, start >> level)?);
    }
    Ok(())
}

fn check_proof_len(proof: &[Hash]) -> Result<(), TlogError> {
    if proof.len() > PROOF_HASHES_MAX {
        return Err(TlogError::ProofTooLong { count: proof.len() });
    }
    Ok(())
}

/// Shift `f` and `s` right together until `f` is odd or zero.
fn shift_to_odd(f: &mut u64, s: &mut u64) {
    while *f & 1 == 0 && *f != 0 {
        *f >>= 1;
        *s >>= 1;
    }
}

/// RFC 9162 2.1.3.2: the root an inclusion proof leads to.
pub fn root_from_inclusion(
    leaf: &Hash,
    index: u64,
    size: u64,
    proof: &[Hash],
) -> Result<Hash, TlogError> {
    check_tree_size(size)?;
    check_proof_len(proof)?;
    if index >= size {
        return Err(TlogError::IndexOutOfRange { index, size });
    }
    let wrong_length = || TlogError::InclusionProofLength { count: proof.len() };
    let (mut f, mut s) = (index, size - 1);
    let mut r = *leaf;
    for p in proof {
        if s == 0 {
            return Err(wrong_length());
        }
        if f & 1 == 1 || f == s {
            r = node_hash(p, &r);
            shift_to_odd(&mut f, &mut s);
        } else {
            r = node_hash(&r, p);
        }
        f >>= 1;
        s >>= 1;
    }
    if s != 0 {
        return Err(wrong_length());
    }
    Ok(r)
}

/// RFC 9162 2.1.3.2: verify that `leaf` (a leaf hash) is at `index` in the
/// tree of `size` leaves with root `root`.
pub fn verify_inclusion(
    leaf: &Hash,
    index: u64,
    size: u64,
    proof: &[Hash],
    root: &Hash,
) -> Result<(), TlogError> {
    if root_from_inclusion(leaf, index, size, proof)? != *root {
        return Err(TlogError::InclusionRootMismatch);
    }
    Ok(())
}

/// RFC 9162 2.1.4.2: verify that the tree (`old`, `old_root`) is a prefix of
/// the tree (`new`, `new_root`). Equal sizes need an empty proof and equal
/// roots (size 0: the empty-tree root); a proof from size 0 to a larger
/// size is refused (it proves nothing; transparency-dev/merkle refuses it).
pub fn verify_consistency(
    old: u64,
    new: u64,
    proof: &[Hash],
    old_root: &Hash,
    new_root: &Hash,
) -> Result<(), TlogError> {
    check_tree_size(new)?;
    check_proof_len(proof)?;
    if old > new {
        return Err(TlogError::OldSizeAboveNewSize { old, new });
    }
    let wrong_length = || TlogError::ConsistencyProofLength { count: proof.len() };
    if old == 0 && new > 0 {
        // Every tree extends the empty one: such a proof says nothing, and
        // transparency-dev/merkle's vectors expect it refused.
        return Err(TlogError::ConsistencyFromEmptyTree { new });
    }
    if old == new {
        if !proof.is_empty() {
            return Err(wrong_length());
        }
        if old == 0 && *old_root != empty_root() {
            return Err(TlogError::EmptyTreeRootMismatch);
        }
        if old_root != new_root {
            return Err(TlogError::SameSizeRootsDiffer { size: old });
        }
        return Ok(());
    }
    if proof.is_empty() {
        return Err(wrong_length());
    }
    let (first, rest) = if old.is_power_of_two() {
        (*old_root, proof)
    } else {
        (proof[0], &proof[1..])
    };
    let (mut f, mut s) = (old - 1, new - 1);
    while f & 1 == 1 {
        f >>= 1;
        s >>= 1;
    }
    let (mut fr, mut sr) = (first, first);
    for c in rest {
        if s == 0 {
            return Err(wrong_length());
        }
        if f & 1 == 1 || f == s {
            fr = node_hash(c, &fr);
            sr = node_hash(c, &sr);
            shift_to_odd(&mut f, &mut s);
        } else {
            sr = node_hash(&sr, c);
        }
        f >>= 1;
        s >>= 1;
    }
    if s != 0 {
        return Err(wrong_length());
    }
    if fr != *old_root {
        return Err(TlogError::ConsistencyOldRootMismatch);
    }
    if sr != *new_root {
        return Err(TlogError::ConsistencyNewRootMismatch);
    }
    Ok(())
}

/// One complete subtree closed by an append: the hash of the 2^level leaves
/// starting at leaf `index * 2^level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subtree {
    /// log2 of the number of leaves (0 for a leaf).
    pub level: u8,
    /// Position among the subtrees of this level.
    pub index: u64,
    /// The subtree's root hash.
    pub hash: Hash,
}

/// Appends leaves one at a time, keeping only the right edge of the tree
/// (at most 49 complete subtrees), and reports every complete subtree each
/// append closes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TreeBuilder {
    size: u64,
    /// (level, hash) of the complete subtrees of `size`'s binary
    /// decomposition, highest level first.
    frontier: Vec<(u8, Hash)>,
}

impl TreeBuilder {
    /// An empty tree.
    pub fn new() -> Self {
        Self::default()
    }

    /// Resume at `size` leaves, reading the O(log n) frontier from `src`.
    pub fn resume<S: NodeSource + ?Sized>(src: &S, size: u64) -> Result<Self, TlogError> {
        check_source_size(src, size)?;
        let mut frontier = Vec::new();
        let mut pos = 0u64;
        for level in (0..=SUBTREE_LEVEL_MAX).rev() {
            if size & (1u64 << level) != 0 {
                frontier.push((level, read_node(src, level, pos >> level)?));
                pos += 1 << level;
            }
        }
        Ok(Self { size, frontier })
    }

    /// The number of leaves appended.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Append one leaf hash; returns the complete subtrees it closes, the
    /// leaf itself (level 0) first.
    pub fn append(&mut self, leaf: Hash) -> Result<Vec<Subtree>, TlogError> {
        if self.size >= TREE_SIZE_MAX {
            return Err(TlogError::TreeSizeTooLarge {
                size: self.size + 1,
            });
        }
        let mut index = self.size;
        let (mut level, mut hash) = (0u8, leaf);
        let mut closed = vec![Subtree { level, index, hash }];
        while let Some(&(top_level, top_hash)) = self.frontier.last() {
            if top_level != level {
                break;
            }
            self.frontier.pop();
            hash = node_hash(&top_hash, &hash);
            level += 1;
            index >>= 1;
            closed.push(Subtree { level, index, hash });
        }
        self.frontier.push((level, hash));
        self.size += 1;
        Ok(closed)
    }

    /// The root of the tree appended so far.
    pub fn root(&self) -> Hash {
        let mut iter = self.frontier.iter().rev();
        let Some(&(_, mut acc)) = iter.next() else {
            return empty_root();
        };
        for (_, left) in iter {
            acc = node_hash(left, &acc);
        }
        acc
    }
}

/// An in-memory [`NodeSource`]: every complete subtree, by level.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryNodes {
    levels: Vec<Vec<Hash>>,
    builder: TreeBuilder,
}

impl MemoryNodes {
    /// An empty tree.
    pub fn new() -> Self {
        Self::default()
    }

    /// A tree over the given leaf hashes.
    pub fn from_leaf_hashes<I: IntoIterator<Item = Hash>>(leaves: I) -> Result<Self, TlogError> {
        let mut nodes = Self::new();
        for leaf in leaves {
            nodes.append_leaf_hash(leaf)?;
        }
        Ok(nodes)
    }

    /// Append one leaf hash.
    pub fn append_leaf_hash(&mut self, leaf: Hash) -> Result<(), TlogError> {
        for node in self.builder.append(leaf)? {
            let level = usize::from(node.level);
            if self.levels.len() <= level {
                self.levels.resize_with(level + 1, Vec::new);
            }
            let row = &mut self.levels[level];
            assert_eq!(row.len() as u64, node.index, "subtrees close in order");
            row.push(node.hash);
        }
        Ok(())
    }

    /// The number of leaves.
    pub fn size(&self) -> u64 {
        self.builder.size()
    }

    /// The root of the whole tree.
    pub fn root(&self) -> Hash {
        self.builder.root()
    }
}

impl NodeSource for MemoryNodes {
    fn leaf_count(&self) -> Result<u64, TlogError> {
        Ok(self.builder.size())
    }

    fn subtree(&self, level: u8, index: u64) -> Result<Option<Hash>, TlogError> {
        let row = self.levels.get(usize::from(level));
        let index = usize::try_from(index).ok();
        Ok(row.zip(index).and_then(|(row, i)| row.get(i).copied()))
    }
}
