//! The ledger's Merkle tree (TRUST-1, TRUST-2; SPEC section 11): one RFC
//! 6962 leaf per record, `u64_be(seq) || link hash` (`tlog::leaf`), in seq
//! order, always computed from the verified records.
//!
//! `derive` walks the verified log from genesis, writes every complete
//! subtree hash to a fresh file (post-order, so the walk writes it
//! sequentially) and checks every `checkpoint_recorded` record against the
//! tree at its own seq. Every root that is signed or compared comes from
//! it. The derived file, kept as `<ledger>/tlog.nodes`, is a cache: roots
//! and proofs read O(log n) hashes from it (`synced` brings it up to the
//! head through a verified walk of the tail), and a proof made from it is
//! checked against the signed root before anyone sees it. `verify`
//! re-derives it and reports a cache that differs from the log.
//!
//! File: a 128-byte header (`MAGIC`, format, leaf count, the link hash of the
//! last record covered, the root, a BLAKE3 checksum of those bytes), then
//! the 32-byte hash of complete subtree (level, index) at position
//! `2L - popcount(L) + level`, L = the subtree's last leaf.

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::log::chain::Hash as LinkHash;
use crate::log::ledger::Ledger;
use crate::log::tlog::checkpoint::Checkpoint;
use crate::log::tlog::merkle::{Hash, NodeSource, Subtree, TreeBuilder, TREE_SIZE_MAX};
use crate::log::tlog::{record_leaf_hash, verify_checkpoint_note, TlogError, VerifierKey};
use crate::schema::events::{CheckpointRecorded, Event};

/// The node cache's file name inside the ledger directory.
pub const NODES_FILE: &str = "tlog.nodes";
/// The host part of every ledger's origin line.
pub const ORIGIN_HOST: &str = "benchledger";

const MAGIC: &[u8; 16] = b"benchledger-tlog";
const FORMAT: u32 = 1;
const HEADER_BYTES: u64 = 128;
const HASH_BYTES: u64 = 32;
const CHECKSUM_CONTEXT: &str = "benchledger v1 tlog nodes header";

/// The origin line of the ledger with this id: `benchledger/ledger/<id>`.
pub fn origin_of(ledger_id: &str) -> String {
    format!("{ORIGIN_HOST}/ledger/{ledger_id}")
}

/// The origin line of `ledger`, from its genesis record.
pub fn ledger_origin(ledger: &Ledger) -> Result<String> {
    match ledger.read(0)?.decoded.event {
        Event::LedgerCreated(g) => Ok(origin_of(&g.ledger_id)),
        _ => Err(Error::Damage("seq 0: bad_genesis: run verify".into())),
    }
}

/// Where complete subtree (level, index) sits among the stored hashes.
pub fn node_position(level: u8, index: u64) -> u64 {
    let last_leaf = ((index + 1) << level) - 1;
    2 * last_leaf - u64::from(last_leaf.count_ones()) + u64::from(level)
}

/// How many complete subtrees a tree of `leaves` leaves has.
pub fn node_count(leaves: u64) -> u64 {
    2 * leaves - u64::from(leaves.count_ones())
}

fn tlog_error(e: TlogError) -> Error {
    Error::input(e.to_string())
}

fn io(context: &str, path: &Path, e: impl std::fmt::Display + 'static) -> Error {
    Error::io(format!("{context} {}", path.display()), e)
}

/// The header of a node file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Header {
    leaves: u64,
    last_link: LinkHash,
    root: Hash,
}

impl Header {
    fn encode(&self) -> [u8; HEADER_BYTES as usize] {
        let mut out = [0u8; HEADER_BYTES as usize];
        out[..16].copy_from_slice(MAGIC);
        out[16..20].copy_from_slice(&FORMAT.to_be_bytes());
        out[24..32].copy_from_slice(&self.leaves.to_be_bytes());
        out[32..64].copy_from_slice(&self.last_link);
        out[64..96].copy_from_slice(&self.root);
        let sum = blake3::derive_key(CHECKSUM_CONTEXT, &out[..96]);
        out[96..].copy_from_slice(&sum);
        out
    }

    fn decode(bytes: &[u8; HEADER_BYTES as usize]) -> std::result::Result<Header, String> {
        if &bytes[..16] != MAGIC {
            return Err("not a tlog node file".into());
        }
        if blake3::derive_key(CHECKSUM_CONTEXT, &bytes[..96])[..] != bytes[96..] {
            return Err("header checksum does not match".into());
        }
        let word = |range: std::ops::Range<usize>| bytes[range].to_vec();
        let format = u32::from_be_bytes(word(16..20).try_into().expect("4 bytes"));
        if format != FORMAT {
            return Err(format!(
                "node file format {format}, this build reads {FORMAT}"
            ));
        }
        let hash = |range: std::ops::Range<usize>| -> Hash { word(range).try_into().expect("32") };
        Ok(Header {
            leaves: u64::from_be_bytes(word(24..32).try_into().expect("8 bytes")),
            last_link: hash(32..64),
            root: hash(64..96),
        })
    }
}

/// A file of complete-subtree hashes: a [`NodeSource`] answering every
/// root and proof of its first `leaves` leaves in O(log n) reads.
#[derive(Debug)]
pub struct NodeFile {
    file: File,
    path: PathBuf,
    leaves: u64,
}

impl NodeFile {
    /// The leaves it covers.
    pub fn leaves(&self) -> u64 {
        self.leaves
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl NodeSource for NodeFile {
    fn leaf_count(&self) -> std::result::Result<u64, TlogError> {
        Ok(self.leaves)
    }

    fn subtree(&self, level: u8, index: u64) -> std::result::Result<Option<Hash>, TlogError> {
        if level > 48 || index >= TREE_SIZE_MAX || ((index + 1) << level) > self.leaves {
            return Ok(None);
        }
        let mut hash = [0u8; 32];
        let at = HEADER_BYTES + node_position(level, index) * HASH_BYTES;
        self.file
            .read_exact_at(&mut hash, at)
            .map_err(|e| TlogError::NodeSource(format!("read {}: {e}", self.path.display())))?;
        Ok(Some(hash))
    }
}

/// The node cache path of a ledger directory.
pub fn nodes_path(ledger_dir: &Path) -> PathBuf {
    ledger_dir.join(NODES_FILE)
}

/// A `checkpoint_recorded` record found by the walk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedCheckpoint {
    pub seq: u64,
    pub record: CheckpointRecorded,
}

/// A `group_sealed` record found by the walk (TRUST-4: a published report
/// and bundle carry an inclusion proof of each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordedSeal {
    /// Its seq (its leaf index).
    pub seq: u64,
    pub link: LinkHash,
}

/// A `checkpoint_recorded` record that does not hold (TRUST-1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointProblem {
    pub seq: u64,
    /// What does not hold.
    pub detail: String,
}

/// The tree of a verified walk from genesis, in a fresh file.
#[derive(Debug)]
pub struct Derived {
    /// Every complete subtree of the log (a temporary file until
    /// `install`).
    pub nodes: NodeFile,
    /// The builder at the head (to extend the tree past the log).
    pub builder: TreeBuilder,
    /// The ledger's origin line.
    pub origin: String,
    /// Every checkpoint record, in seq order.
    pub checkpoints: Vec<RecordedCheckpoint>,
    /// Checkpoint records that do not hold, in seq order.
    pub problems: Vec<CheckpointProblem>,
    /// Every group seal record, in seq order.
    pub seals: Vec<RecordedSeal>,
    header: Header,
}

/// What a present node cache is, against the derived tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheCheck {
    /// No node cache.
    Absent,
    /// Every hash it holds equals the derived one (it covers `leaves`).
    Matches {
        /// The leaves it covers.
        leaves: u64,
    },
    /// It cannot be read as a node file, or holds a hash the log does not
    /// give.
    Differs {
        /// How it differs, in words ("it holds hashes the log does not give").
        why: String,
    },
}

fn temp_path(ledger_dir: &Path) -> PathBuf {
    ledger_dir.join(format!("{NODES_FILE}.{}.tmp", std::process::id()))
}

/// Removes temporaries a killed writer left (`tlog.nodes.<pid>.tmp`).
fn remove_stale_temporaries(ledger_dir: &Path) {
    let Ok(entries) = fs::read_dir(ledger_dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(&format!("{NODES_FILE}.")) && name.ends_with(".tmp") {
            let _ = fs::remove_file(e.path());
        }
    }
}

/// Appends closed subtrees to a node file being written in post-order.
struct NodeWriter {
    out: BufWriter<File>,
    path: PathBuf,
}

impl NodeWriter {
    fn push(&mut self, closed: &[Subtree]) -> Result<()> {
        for node in closed {
            self.out
                .write_all(&node.hash)
                .map_err(|e| io("write", &self.path, e))?;
        }
        Ok(())
    }

    fn finish(self, header: Header) -> Result<File> {
        let file = self
            .out
            .into_inner()
            .map_err(|e| io("write", &self.path, e.into_error()))?;
        file.write_all_at(&header.encode(), 0)
            .map_err(|e| io("write", &self.path, e))?;
        Ok(file)
    }
}

/// Checks one checkpoint record against the tree of the records before it.
fn check_recorded(c: &CheckpointRecorded, seq: u64, origin: &str, root: &Hash) -> Option<String> {
    if c.tree_size != seq {
        return Some(format!(
            "tree size {} is not the record's own seq {seq}",
            c.tree_size
        ));
    }
    if c.origin != origin {
        return Some(format!(
            "origin {:?} is not this ledger's {origin:?}",
            c.origin
        ));
    }
    if c.root != hex::encode(root) {
        return Some(format!(
            "root {} is not the root of the records before it ({})",
            c.root,
            hex::encode(root)
        ));
    }
    let body = Checkpoint::new(origin, seq, *root).ok()?.body();
    match (&c.note, &c.signer) {
        (None, None) => None,
        (Some(note), Some(signer)) => {
            let key = match VerifierKey::parse(signer) {
                Ok(k) => k,
                Err(e) => return Some(format!("signer is not a verifier key: {e}")),
            };
            match verify_checkpoint_note(note, &key, &[]) {
                Err(e) => Some(format!("note: {e}")),
                Ok(v) if v.checkpoint.body() != body => {
                    Some("the note signs another checkpoint".into())
                }
                Ok(_) => None,
            }
        }
        _ => Some("a note needs its signer and a signer its note".into()),
    }
}

/// Walks the verified log from genesis: builds the tree into a fresh file
/// beside the cache and checks every checkpoint record (tree size = its
/// seq, this ledger's origin, the root of the records before it, and a
/// note that verifies with its signer and signs exactly that checkpoint).
pub fn derive(ledger: &Ledger) -> Result<Derived> {
    let dir = ledger.dir();
    remove_stale_temporaries(dir);
    let path = temp_path(dir);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .map_err(|e| io("create", &path, e))?;
    let mut writer = NodeWriter {
        out: BufWriter::with_capacity(1 << 20, file),
        path: path.clone(),
    };
    writer
        .out
        .write_all(&[0u8; HEADER_BYTES as usize])
        .map_err(|e| io("write", &path, e))?;
    let origin = ledger_origin(ledger)?;
    let mut builder = TreeBuilder::new();
    let (mut checkpoints, mut problems, mut seals) = (Vec::new(), Vec::new(), Vec::new());
    let mut last_link = [0u8; 32];
    for v in ledger.records()? {
        let v = v?;
        let seq = v.decoded.record.seq;
        if let Event::CheckpointRecorded(c) = &v.decoded.event {
            if let Some(detail) = check_recorded(c, seq, &origin, &builder.root()) {
                problems.push(CheckpointProblem { seq, detail });
            }
            checkpoints.push(RecordedCheckpoint {
                seq,
                record: c.clone(),
            });
        }
        if let Event::GroupSealed(_) = &v.decoded.event {
            seals.push(RecordedSeal { seq, link: v.hash });
        }
        let closed = builder
            .append(record_leaf_hash(seq, &v.hash))
            .map_err(tlog_error)?;
        writer.push(&closed)?;
        last_link = v.hash;
    }
    let header = Header {
        leaves: builder.size(),
        last_link,
        root: builder.root(),
    };
    let file = writer.finish(header)?;
    Ok(Derived {
        nodes: NodeFile {
            file,
            path,
            leaves: header.leaves,
        },
        builder,
        origin,
        checkpoints,
        problems,
        seals,
        header,
    })
}

impl Derived {
    /// The leaves: every record of the log.
    pub fn size(&self) -> u64 {
        self.header.leaves
    }

    /// The root of the whole log.
    pub fn root(&self) -> Hash {
        self.header.root
    }

    /// Compares the present node cache with this tree, hash for hash.
    pub fn check_cache(&self, ledger_dir: &Path) -> Result<CacheCheck> {
        let path = nodes_path(ledger_dir);
        let cache = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(CacheCheck::Absent),
            Err(e) => return Err(io("open", &path, e)),
        };
        let header = match read_header(&cache, &path)? {
            Ok(h) => h,
            Err(why) => return Ok(CacheCheck::Differs { why }),
        };
        if header.leaves > self.size() {
            let why = format!(
                "it covers {} leaves, the log has {}",
                header.leaves,
                self.size()
            );
            return Ok(CacheCheck::Differs { why });
        }
        let same = same_bytes(
            (&cache, &path),
            (&self.nodes.file, &self.nodes.path),
            node_count(header.leaves) * HASH_BYTES,
        )?;
        let root = crate::log::tlog::tree_root(&self.nodes, header.leaves).map_err(tlog_error)?;
        if !same || root != header.root || !self.link_matches(&header)? {
            let why = "it holds hashes the log does not give".to_string();
            return Ok(CacheCheck::Differs { why });
        }
        Ok(CacheCheck::Matches {
            leaves: header.leaves,
        })
    }

    fn link_matches(&self, header: &Header) -> Result<bool> {
        if header.leaves == 0 {
            return Ok(header.last_link == [0u8; 32]);
        }
        let leaf = self
            .nodes
            .subtree(0, header.leaves - 1)
            .map_err(tlog_error)?;
        Ok(leaf == Some(record_leaf_hash(header.leaves - 1, &header.last_link)))
    }

    /// Makes this tree the ledger's node cache (renamed over the old one).
    pub fn install(self, ledger_dir: &Path) -> Result<NodeFile> {
        let dst = nodes_path(ledger_dir);
        fs::rename(&self.nodes.path, &dst).map_err(|e| io("rename to", &dst, e))?;
        Ok(NodeFile {
            file: self.nodes.file,
            path: dst,
            leaves: self.header.leaves,
        })
    }

    /// Removes the temporary file (a read-only verb).
    pub fn discard(self) {
        let _ = fs::remove_file(&self.nodes.path);
    }
}

fn read_header(file: &File, path: &Path) -> Result<std::result::Result<Header, String>> {
    let mut bytes = [0u8; HEADER_BYTES as usize];
    let len = file.metadata().map_err(|e| io("stat", path, e))?.len();
    if len < HEADER_BYTES {
        return Ok(Err("it is shorter than its header".into()));
    }
    file.read_exact_at(&mut bytes, 0)
        .map_err(|e| io("read", path, e))?;
    let header = match Header::decode(&bytes) {
        Ok(h) => h,
        Err(why) => return Ok(Err(why)),
    };
    if header.leaves > TREE_SIZE_MAX {
        return Ok(Err(format!("it claims {} leaves", header.leaves)));
    }
    if len < HEADER_BYTES + node_count(header.leaves) * HASH_BYTES {
        return Ok(Err("it is shorter than its leaf count needs".into()));
    }
    Ok(Ok(header))
}

/// Whether two node files hold the same `len` body bytes (read in 1 MiB
/// chunks).
fn same_bytes(a: (&File, &Path), b: (&File, &Path), len: u64) -> Result<bool> {
    const CHUNK: u64 = 1 << 20;
    let (mut left, mut right) = (vec![0u8; CHUNK as usize], vec![0u8; CHUNK as usize]);
    let mut at = 0u64;
    while at < len {
        let n = (len - at).min(CHUNK) as usize;
        a.0.read_exact_at(&mut left[..n], HEADER_BYTES + at)
            .map_err(|e| io("read", a.1, e))?;
        b.0.read_exact_at(&mut right[..n], HEADER_BYTES + at)
            .map_err(|e| io("read", b.1, e))?;
        if left[..n] != right[..n] {
            return Ok(false);
        }
        at += n as u64;
    }
    Ok(true)
}

/// Opens the node cache when its header holds and the log's record at its
/// last leaf has the link hash it names; `None` otherwise.
fn open_cache(ledger: &Ledger, head_seq: u64) -> Result<Option<(NodeFile, Header)>> {
    let path = nodes_path(ledger.dir());
    let file = match OpenOptions::new().read(true).write(true).open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io("open", &path, e)),
    };
    let Ok(header) = read_header(&file, &path)? else {
        return Ok(None);
    };
    if header.leaves == 0 || header.leaves > head_seq + 1 {
        return Ok(None);
    }
    if ledger.read(header.leaves - 1)?.hash != header.last_link {
        return Ok(None);
    }
    let leaves = header.leaves;
    Ok(Some((NodeFile { file, path, leaves }, header)))
}

/// The node cache brought up to the head: extended through a verified walk
/// of the records it lacks, or derived afresh from genesis when it is
/// absent or its header does not match the log. Its hashes are not
/// re-checked: check whatever is read from it against a signed root.
pub fn synced(ledger: &Ledger) -> Result<NodeFile> {
    let head = ledger.head()?;
    let Some((mut nodes, header)) = open_cache(ledger, head.seq)? else {
        return derive(ledger)?.install(ledger.dir());
    };
    if header.leaves == head.seq + 1 {
        return Ok(nodes);
    }
    let mut builder = TreeBuilder::resume(&nodes, header.leaves).map_err(tlog_error)?;
    let body_end = HEADER_BYTES + node_count(header.leaves) * HASH_BYTES;
    let path = nodes.path.clone();
    nodes
        .file
        .set_len(body_end)
        .map_err(|e| io("truncate", &path, e))?;
    let mut at = body_end;
    let mut last_link = header.last_link;
    for v in ledger.records_from(header.leaves)? {
        let v = v?;
        let seq = v.decoded.record.seq;
        let closed = builder
            .append(record_leaf_hash(seq, &v.hash))
            .map_err(tlog_error)?;
        let bytes: Vec<u8> = closed.iter().flat_map(|n| n.hash).collect();
        nodes
            .file
            .write_all_at(&bytes, at)
            .map_err(|e| io("write", &path, e))?;
        at += bytes.len() as u64;
        last_link = v.hash;
    }
    let header = Header {
        leaves: builder.size(),
        last_link,
        root: builder.root(),
    };
    nodes
        .file
        .write_all_at(&header.encode(), 0)
        .map_err(|e| io("write", &path, e))?;
    nodes.leaves = header.leaves;
    Ok(nodes)
}

/// Where two histories part, from the roots one of them signed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Divergence {
    /// The largest signed size whose root this log reproduces (0 when none).
    pub agrees_through: u64,
    /// The smallest signed size whose root this log does not reproduce.
    pub differs_by: u64,
}

/// Bisects the sizes of `signed` (tree sizes with roots a history signed,
/// in any order) against this log: the histories agree at every size up
/// to some point and at none after it, so a binary search over the sorted
/// sizes finds the last that agrees and the first that does not (O(log k)
/// roots, each O(log n) reads). `None` when every signed root agrees.
pub fn bisect<S: NodeSource + ?Sized>(
    src: &S,
    signed: &[(u64, Hash)],
) -> std::result::Result<Option<Divergence>, TlogError> {
    let mut sizes: Vec<(u64, Hash)> = signed.to_vec();
    sizes.sort_unstable();
    sizes.dedup_by_key(|(size, _)| *size);
    let available = src.leaf_count()?;
    let agrees = |(size, root): &(u64, Hash)| -> std::result::Result<bool, TlogError> {
        Ok(*size <= available && crate::log::tlog::tree_root(src, *size)? == *root)
    };
    let (mut lo, mut hi) = (0usize, sizes.len());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if agrees(&sizes[mid])? {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    Ok(sizes.get(lo).map(|(size, _)| Divergence {
        agrees_through: lo.checked_sub(1).map_or(0, |i| sizes[i].0),
        differs_by: *size,
    }))
}

#[cfg(test)]
#[path = "tree_tests.rs"]
mod tests;
