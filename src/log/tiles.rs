//! The ledger as C2SP `tlog-tiles` (TRUST-8; SPEC section 11.11): written
//! by `export --tiles -o DIR`, read back by `verify --tiles DIR|URL`.
//!
//! Layout under the prefix:
//!
//! - `checkpoint`: the signed checkpoint note, written last;
//! - `tile/<L>/<N>[.p/<W>]`: hash tiles (`tlog::tiles`);
//! - `tile/entries/<N>[.p/<W>]`: entry bundles; each entry is the record's
//!   leaf data, `u64_be(seq) || link hash` (40 bytes), whose RFC 6962 leaf
//!   hash is the level-0 tile hash: what any tiles client checks;
//! - `records/<N>[.p/<W>]`: benchledger's record bundles beside them (C2SP:
//!   entries in another format go at another URL), one per entry bundle:
//!   each record's canonical bytes (SPEC section 2) as `u32_be(len) ||
//!   bytes`. Each record's link hash, recomputed from the one before, must be
//!   the one in its entry: the chain walker re-checks every record.
//!
//! Writing streams the verified records; every file goes through a
//! temporary name and a rename, the file system is synced before the
//! checkpoint is written, and a full tile already there must be
//! byte-identical (a published full tile never changes). Reading goes top
//! down: the right edge against the signed root, then each full tile against
//! the hash the tile above holds for it, each entry bundle against its
//! level-0 tile, and each record against its entry; the first file that
//! does not hold is named.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::limits::{TILES_LEAVES_MAX, TILES_RECORD_BUNDLE_BYTES_MAX};
use crate::log::chain::{link_hash, Verified, Walker};
use crate::log::ledger::Ledger;
use crate::log::tlog::leaf::{leaf_data, LEAF_DATA_BYTES};
use crate::log::tlog::merkle::{leaf_hash, root_of_leaf_hashes, Hash, NodeSource};
use crate::log::tlog::note::NOTE_BYTES_MAX;
use crate::log::tlog::tiles::{
    decode_bundle, edge, edge_root, encode_bundle, full_tile_root, full_tiles, index_path, levels,
    tile_hashes, Tile, TILE_BYTES_MAX, TILE_WIDTH,
};
use crate::log::tlog::Checkpoint;
use crate::log::tlog::TlogError;

/// The checkpoint's path under the prefix.
pub const CHECKPOINT_PATH: &str = "checkpoint";
/// The folder of the record bundles under the prefix.
pub const RECORDS_DIR: &str = "records";
/// The tag of the temporary names (`.{name}.tiling-...`).
const STAGING_TAG: &str = "tiling";
/// Bytes of an entry bundle entry with its length prefix.
const ENTRY_BYTES: u64 = 2 + LEAF_DATA_BYTES as u64;

/// The path of the record bundle beside a level-0 tile.
pub fn records_path(tile: &Tile) -> String {
    format!("{RECORDS_DIR}/{}", index_path(tile.index, tile.width))
}

/// What `export_tiles` wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exported {
    /// Files written (the checkpoint included).
    pub written: u64,
    /// Full tiles and bundles already there, byte-identical, left as they were.
    pub kept: u64,
    /// Bytes written.
    pub bytes: u64,
}

/// Where the export goes, and what it wrote so far.
struct Target {
    dir: PathBuf,
    done: Exported,
}

impl Target {
    /// Writes `bytes` at `rel` through a temporary name; a full (immutable)
    /// file already there must hold the same bytes.
    fn put(&mut self, rel: &str, bytes: &[u8], immutable: bool) -> Result<()> {
        let path = self.dir.join(rel);
        if immutable && path.exists() {
            let there = crate::error::read_regular(&path, bytes.len() as u64 + 1)
                .map_err(|e| Error::input(format!("{rel}: {e}")))?;
            if there != bytes {
                return Err(Error::input(format!(
                    "{} holds another {rel}: a published full tile never changes; export into a new directory",
                    self.dir.display()
                )));
            }
            self.done.kept += 1;
            return Ok(());
        }
        let parent = path.parent().expect("a tile path has a folder");
        std::fs::create_dir_all(parent)
            .map_err(|e| Error::io(format!("create {}", parent.display()), e))?;
        let tmp = crate::log::staging::temp_beside(&path, STAGING_TAG)?;
        let written = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, &path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(Error::io(format!("write {}", path.display()), e));
        }
        self.done.written += 1;
        self.done.bytes += bytes.len() as u64;
        Ok(())
    }
}

/// The hashes of every level not yet in a full tile, and the bundles being
/// filled.
struct Builder {
    levels: Vec<Vec<Hash>>,
    entries: Vec<u8>,
    records: Vec<u8>,
}

impl Builder {
    fn tile_bytes(hashes: &[Hash]) -> Vec<u8> {
        hashes.iter().flatten().copied().collect()
    }

    /// Adds one record; writes every tile and bundle it fills.
    fn push(&mut self, t: &mut Target, seq: u64, link: &Hash, bytes: &[u8]) -> Result<()> {
        let data = leaf_data(seq, link);
        self.entries.extend(encode_bundle([&data[..]]));
        self.records
            .extend_from_slice(&(bytes.len() as u32).to_be_bytes());
        self.records.extend_from_slice(bytes);
        self.levels[0].push(leaf_hash(&data));
        if self.levels[0].len() as u64 == TILE_WIDTH {
            let tile = Tile {
                level: 0,
                index: seq / TILE_WIDTH,
                width: TILE_WIDTH,
            };
            t.put(
                &tile.entries_path(),
                &std::mem::take(&mut self.entries),
                true,
            )?;
            t.put(
                &records_path(&tile),
                &std::mem::take(&mut self.records),
                true,
            )?;
            self.carry(t, 0, seq / TILE_WIDTH)?;
        }
        Ok(())
    }

    /// Writes the full tile at `level`, index `index`, and carries its root
    /// up (and on, while the level above fills).
    fn carry(&mut self, t: &mut Target, mut level: usize, mut index: u64) -> Result<()> {
        while self.levels[level].len() as u64 == TILE_WIDTH {
            let hashes = std::mem::take(&mut self.levels[level]);
            let tile = Tile {
                level: level as u8,
                index,
                width: TILE_WIDTH,
            };
            t.put(&tile.path(), &Self::tile_bytes(&hashes), true)?;
            if self.levels.len() == level + 1 {
                self.levels.push(Vec::new());
            }
            self.levels[level + 1].push(full_tile_root(&hashes));
            level += 1;
            index /= TILE_WIDTH;
        }
        Ok(())
    }

    /// Writes the partial tiles and bundles of a tree of `size`; returns
    /// the root of its right edge.
    fn finish(self, t: &mut Target, size: u64) -> Result<Option<Hash>> {
        let mut edge_tiles = Vec::new();
        for tile in edge(size) {
            let hashes = &self.levels[usize::from(tile.level)];
            assert_eq!(hashes.len() as u64, tile.width, "the edge is what is left");
            t.put(&tile.path(), &Self::tile_bytes(hashes), false)?;
            if tile.level == 0 {
                t.put(&tile.entries_path(), &self.entries, false)?;
                t.put(&records_path(&tile), &self.records, false)?;
            }
            edge_tiles.push((tile, hashes.clone()));
        }
        Ok(edge_root(&edge_tiles))
    }
}

/// Checks that `dir` is new, empty, or an earlier tiles export of the same
/// log (its checkpoint names `origin`).
fn check_target(dir: &Path, origin: &str) -> Result<()> {
    let Ok(mut entries) = std::fs::read_dir(dir) else {
        if dir.exists() {
            return Err(Error::input(format!(
                "{} is not a directory",
                dir.display()
            )));
        }
        return Ok(());
    };
    if entries.next().is_none() {
        return Ok(());
    }
    let path = dir.join(CHECKPOINT_PATH);
    let earlier = crate::error::read_regular(&path, NOTE_BYTES_MAX as u64).map_err(|_| {
        Error::input(format!(
            "{} is not empty and holds no tiles checkpoint: export --tiles goes into a new or empty directory, or an earlier tiles export of this ledger",
            dir.display()
        ))
    })?;
    let text = String::from_utf8_lossy(&earlier);
    let body = text.split("\n\n").next().unwrap_or("");
    match Checkpoint::parse(&format!("{body}\n")) {
        Ok(cp) if cp.origin() == origin => Ok(()),
        Ok(cp) => Err(Error::input(format!(
            "{} holds the tiles of the log {:?}, this ledger is {origin:?}",
            dir.display(),
            cp.origin()
        ))),
        Err(e) => Err(Error::input(format!("{}: {e}", path.display()))),
    }
}

/// Writes the first `checkpoint.size()` records of `ledger` as tiles into
/// `dir`, then `note` (the signed checkpoint) as its `checkpoint`. The tree
/// the tiles give must have the checkpoint's root (else damage, and no
/// checkpoint is written).
pub fn export_tiles(
    ledger: &Ledger,
    checkpoint: &Checkpoint,
    note: &str,
    dir: &Path,
) -> Result<Exported> {
    let size = checkpoint.size();
    if size > TILES_LEAVES_MAX {
        return Err(Error::input(format!(
            "the checkpoint covers {size} records, more than the {TILES_LEAVES_MAX} a tiles export holds"
        )));
    }
    check_target(dir, checkpoint.origin())?;
    crate::log::staging::remove_stale(&dir.join(CHECKPOINT_PATH), STAGING_TAG);
    let mut t = Target {
        dir: dir.to_path_buf(),
        done: Exported {
            written: 0,
            kept: 0,
            bytes: 0,
        },
    };
    let mut b = Builder {
        levels: vec![Vec::new()],
        entries: Vec::new(),
        records: Vec::new(),
    };
    for v in ledger
        .records()?
        .take(usize::try_from(size).unwrap_or(usize::MAX))
    {
        let v: Verified = v?;
        let seq = v.decoded.record.seq;
        let bytes = v.decoded.record.encode()?;
        if link_hash(&v.prev, seq, &bytes) != v.hash {
            return Err(Error::Damage(format!(
                "seq {seq}: the record does not re-encode to its stored bytes: run verify"
            )));
        }
        b.push(&mut t, seq, &v.hash, &bytes)?;
    }
    let root = b.finish(&mut t, size)?;
    if root != Some(*checkpoint.root()) {
        return Err(Error::Damage(format!(
            "the tiles of the first {size} records do not have the checkpoint's root: run verify"
        )));
    }
    let dir_file =
        std::fs::File::open(dir).map_err(|e| Error::io(format!("open {}", dir.display()), e))?;
    rustix::fs::syncfs(&dir_file)
        .map_err(|e| Error::io(format!("sync {}", dir.display()), std::io::Error::from(e)))?;
    t.put(CHECKPOINT_PATH, note.as_bytes(), false)?;
    dir_file
        .sync_all()
        .map_err(|e| Error::io(format!("sync {}", dir.display()), e))?;
    Ok(t.done)
}

// ---------------------------------------------------------------------------
// Reading back
// ---------------------------------------------------------------------------

/// Where tiles are read from: a directory or an HTTP prefix.
pub trait TileSource {
    /// The prefix, for messages.
    fn prefix(&self) -> String;
    /// The bytes at `path` under the prefix, at most `max` bytes; a missing
    /// or longer file is an error naming it.
    fn fetch(&mut self, path: &str, max: u64) -> Result<Vec<u8>>;
}

/// Tiles in a directory.
pub struct DirSource {
    pub dir: PathBuf,
}

impl TileSource for DirSource {
    fn prefix(&self) -> String {
        self.dir.display().to_string()
    }

    fn fetch(&mut self, path: &str, max: u64) -> Result<Vec<u8>> {
        crate::error::read_regular(&self.dir.join(path), max).map_err(|e| match e {
            Error::Input(msg) => Error::NotHeld(msg),
            other => other,
        })
    }
}

/// What the read-back found: the records walked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Read {
    /// Records walked (the checkpoint's size).
    pub records: u64,
    /// Files read (the checkpoint not counted).
    pub files: u64,
}

fn damaged(src: &dyn TileSource, path: &str, what: impl std::fmt::Display) -> Error {
    Error::Damage(format!("{}/{path}: {what}", src.prefix()))
}

/// Reads one tile and splits it into hashes.
fn read_tile(src: &mut dyn TileSource, tile: &Tile, files: &mut u64) -> Result<Vec<Hash>> {
    let path = tile.path();
    let bytes = src.fetch(&path, TILE_BYTES_MAX as u64)?;
    *files += 1;
    tile_hashes(&bytes, tile.width).map_err(|e| damaged(src, &path, e))
}

/// Reads a tiles log of the size `checkpoint` names and checks it against
/// the checkpoint's root, top down (module doc); `each` sees every record
/// in seq order after the chain walker checked it. The checkpoint's
/// signature is the caller's to check.
pub fn read_tiles(
    src: &mut dyn TileSource,
    checkpoint: &Checkpoint,
    each: &mut dyn FnMut(&Verified) -> Result<()>,
) -> Result<Read> {
    let size = checkpoint.size();
    if size > TILES_LEAVES_MAX {
        return Err(Error::input(format!(
            "the checkpoint covers {size} records, more than the {TILES_LEAVES_MAX} verify --tiles reads"
        )));
    }
    let mut files = 0u64;
    let mut edge_tiles = Vec::new();
    for tile in edge(size) {
        let hashes = read_tile(src, &tile, &mut files)?;
        edge_tiles.push((tile, hashes));
    }
    if edge_root(&edge_tiles).is_some_and(|r| r != *checkpoint.root()) {
        let names: Vec<String> = edge_tiles.iter().map(|(t, _)| t.path()).collect();
        return Err(Error::Damage(format!(
            "{}: the tiles of the tree's right edge ({}) do not give the checkpoint's root",
            src.prefix(),
            names.join(", ")
        )));
    }
    // The authenticated roots of the full tiles of the level being read.
    let mut auth: Vec<Hash> = Vec::new();
    let mut walk = RecordWalk::new(each);
    for level in (0..levels(size)).rev() {
        let mut below: Vec<Hash> = Vec::new();
        for index in 0..full_tiles(size, level) {
            let tile = Tile {
                level,
                index,
                width: TILE_WIDTH,
            };
            let hashes = read_tile(src, &tile, &mut files)?;
            if full_tile_root(&hashes) != auth[index as usize] {
                return Err(damaged(
                    src,
                    &tile.path(),
                    "does not hash to what the tile above holds for it",
                ));
            }
            if level == 0 {
                walk.bundle(src, &tile, &hashes, &mut files)?;
            } else {
                below.extend(hashes);
            }
        }
        if let Some((tile, hashes)) = edge_tiles.iter().find(|(t, _)| t.level == level) {
            if level == 0 {
                walk.bundle(src, tile, hashes, &mut files)?;
            } else {
                below.extend(hashes);
            }
        }
        auth = below;
    }
    Ok(Read {
        records: walk.walker.next_seq(),
        files,
    })
}

/// The chain walk over the record bundles.
struct RecordWalk<'a> {
    walker: Walker,
    each: &'a mut dyn FnMut(&Verified) -> Result<()>,
}

impl<'a> RecordWalk<'a> {
    fn new(each: &'a mut dyn FnMut(&Verified) -> Result<()>) -> Self {
        RecordWalk {
            walker: Walker::from_genesis(),
            each,
        }
    }

    /// Checks the entry bundle of an authenticated level-0 tile, then its
    /// record bundle through the chain walker.
    fn bundle(
        &mut self,
        src: &mut dyn TileSource,
        tile: &Tile,
        leaves: &[Hash],
        files: &mut u64,
    ) -> Result<()> {
        let path = tile.entries_path();
        let bytes = src.fetch(&path, tile.width * ENTRY_BYTES)?;
        *files += 1;
        let entries = decode_bundle(&bytes, tile.width).map_err(|e| damaged(src, &path, e))?;
        let mut links = Vec::with_capacity(entries.len());
        for (i, entry) in entries.iter().enumerate() {
            if leaf_hash(entry) != leaves[i] {
                return Err(damaged(
                    src,
                    &path,
                    format_args!("entry {i} does not hash to {} hash {i}", tile.path()),
                ));
            }
            let seq = tile.start_leaf() + i as u64;
            let data: Option<[u8; LEAF_DATA_BYTES]> = (*entry).try_into().ok();
            match data {
                Some(d) if d[..8] == seq.to_be_bytes() => {
                    links.push(<Hash>::try_from(&d[8..]).expect("32 bytes"))
                }
                _ => {
                    return Err(damaged(
                        src,
                        &path,
                        format_args!("entry {i} is not the leaf data of seq {seq}"),
                    ))
                }
            }
        }
        self.records(src, tile, &links, files)
    }

    fn records(
        &mut self,
        src: &mut dyn TileSource,
        tile: &Tile,
        links: &[Hash],
        files: &mut u64,
    ) -> Result<()> {
        let path = records_path(tile);
        let bytes = src.fetch(&path, TILES_RECORD_BUNDLE_BYTES_MAX)?;
        *files += 1;
        let mut rest = &bytes[..];
        for (i, link) in links.iter().enumerate() {
            let seq = tile.start_leaf() + i as u64;
            let Some((len, tail)) = rest.split_first_chunk::<4>() else {
                return Err(damaged(
                    src,
                    &path,
                    format_args!("record {i} (seq {seq}) is missing"),
                ));
            };
            let len = u32::from_be_bytes(*len) as usize;
            if tail.len() < len {
                return Err(damaged(
                    src,
                    &path,
                    format_args!("record {i} (seq {seq}) is cut"),
                ));
            }
            let mut value = Vec::with_capacity(64 + len);
            value.extend_from_slice(&self.walker.prev_hash());
            value.extend_from_slice(link);
            value.extend_from_slice(&tail[..len]);
            let v = self
                .walker
                .step(&seq.to_be_bytes(), &value)
                .map_err(|d| damaged(src, &path, d))?;
            (self.each)(&v)?;
            rest = &tail[len..];
        }
        if !rest.is_empty() {
            return Err(damaged(
                src,
                &path,
                format_args!("{} bytes after its {} records", rest.len(), links.len()),
            ));
        }
        Ok(())
    }
}

/// The complete subtrees of a tiles log, read from its hash tiles on
/// demand (a [`NodeSource`] for the consistency proof TRUST-7 needs): the
/// subtree at binary level `l` and index `i` is the root of `2^(l mod 8)`
/// consecutive hashes of the tile level `l / 8`, so at most one tile per
/// proof node is fetched, and memory stays a few tiles whatever the size.
/// A tile fetched again is not trusted for being fetched before: a proof
/// built from bytes that changed does not verify against the roots.
pub struct TileNodes<'a> {
    src: std::cell::RefCell<&'a mut dyn TileSource>,
    size: u64,
}

impl<'a> TileNodes<'a> {
    /// The subtrees of the `size`-leaf log `src` serves.
    pub fn new(src: &'a mut dyn TileSource, size: u64) -> Self {
        TileNodes {
            src: std::cell::RefCell::new(src),
            size,
        }
    }
}

impl NodeSource for TileNodes<'_> {
    fn leaf_count(&self) -> std::result::Result<u64, TlogError> {
        Ok(self.size)
    }

    fn subtree(&self, level: u8, index: u64) -> std::result::Result<Option<Hash>, TlogError> {
        let (tile_level, within) = (level / 8, u32::from(level % 8));
        let entries_at_level = self
            .size
            .checked_shr(8 * u32::from(tile_level))
            .unwrap_or(0);
        let (first, count) = (index << within, 1u64 << within);
        if first.saturating_add(count) > entries_at_level {
            return Ok(None);
        }
        let tile_index = first / TILE_WIDTH;
        let tile = Tile {
            level: tile_level,
            index: tile_index,
            width: (entries_at_level - tile_index * TILE_WIDTH).min(TILE_WIDTH),
        };
        let mut files = 0;
        let mut src = self.src.borrow_mut();
        let hashes = read_tile(&mut **src, &tile, &mut files)
            .map_err(|e| TlogError::NodeSource(e.to_string()))?;
        let at = usize::try_from(first % TILE_WIDTH).expect("within a tile");
        let run = usize::try_from(count).expect("at most a tile");
        assert!(at + run <= hashes.len(), "a subtree lies within its tile");
        Ok(Some(root_of_leaf_hashes(&hashes[at..at + run])))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Empty;

    impl TileSource for Empty {
        fn prefix(&self) -> String {
            "empty".into()
        }
        fn fetch(&mut self, path: &str, _max: u64) -> Result<Vec<u8>> {
            Err(Error::NotHeld(format!("{path} is missing")))
        }
    }

    /// Hash tiles made from an in-memory tree: tile (L, N, W) holds the
    /// level-8L subtrees N*256 .. N*256+W.
    struct FromTree(crate::log::tlog::merkle::MemoryNodes, u64);

    impl TileSource for FromTree {
        fn prefix(&self) -> String {
            "tree".into()
        }
        fn fetch(&mut self, path: &str, _max: u64) -> Result<Vec<u8>> {
            self.1 += 1;
            // tile/<L>/<N as x001/x234/067>[.p/<W>]
            let rest = path.strip_prefix("tile/").unwrap();
            let (level, rest) = rest.split_once('/').unwrap();
            let level: u8 = level.parse().unwrap();
            let (index, width) = match rest.split_once(".p/") {
                Some((i, w)) => (i, w.parse().unwrap()),
                None => (rest, TILE_WIDTH),
            };
            let index: u64 = index.replace(['x', '/'], "").parse().unwrap();
            let mut out = Vec::new();
            for k in 0..width {
                let h = self
                    .0
                    .subtree(8 * level, index * TILE_WIDTH + k)
                    .unwrap()
                    .unwrap();
                out.extend_from_slice(&h);
            }
            Ok(out)
        }
    }

    #[test]
    fn tile_nodes_give_every_complete_subtree_the_tree_has() {
        // rule TRUST-7: the consistency proof of `verify --tiles` is read from
        // the hash tiles; each node must be the tree's own.
        let size: u64 = 65_536 + 300;
        let leaves = (0..size).map(|i| leaf_hash(&i.to_be_bytes()));
        let tree = crate::log::tlog::merkle::MemoryNodes::from_leaf_hashes(leaves).unwrap();
        let mut src = FromTree(tree.clone(), 0);
        {
            let nodes = TileNodes::new(&mut src, size);
            assert_eq!(nodes.leaf_count().unwrap(), size);
            let mut compared = 0;
            for level in 0..=17u8 {
                let complete = size >> level;
                let picks = [
                    0,
                    1,
                    complete / 2,
                    complete.saturating_sub(1),
                    complete,
                    complete + 1,
                ];
                for index in picks {
                    let want = tree.subtree(level, index).unwrap();
                    let got = nodes.subtree(level, index).unwrap();
                    assert_eq!(got, want, "TRUST-7: subtree at level {level} index {index}");
                    compared += usize::from(want.is_some());
                }
            }
            assert!(compared > 60, "{compared} complete subtrees compared");
        }
        assert!(src.1 > 0, "tiles were read");
    }

    /// `TILES_LEAVES_MAX`: a checkpoint at the bound is read (here: its
    /// first tile is missing), one past it is refused before any read.
    #[test]
    fn the_tree_size_bound_holds_at_and_past_it() {
        // rule TRUST-8
        let at = Checkpoint::new("o", TILES_LEAVES_MAX, [0; 32]).unwrap();
        let e = read_tiles(&mut Empty, &at, &mut |_| Ok(())).unwrap_err();
        assert!(matches!(e, Error::NotHeld(_)), "TRUST-8: {e}");
        let past = Checkpoint::new("o", TILES_LEAVES_MAX + 1, [0; 32]).unwrap();
        let e = read_tiles(&mut Empty, &past, &mut |_| Ok(())).unwrap_err();
        assert!(matches!(e, Error::Input(_)), "TRUST-8: {e}");
        assert!(e.to_string().contains("more than"), "{e}");
    }

    #[test]
    fn the_record_bundle_bound_holds_256_records_of_the_largest_size() {
        use crate::limits::RECORD_BYTES_MAX;
        assert_eq!(
            TILES_RECORD_BUNDLE_BYTES_MAX,
            TILE_WIDTH * (4 + RECORD_BYTES_MAX as u64)
        );
    }
}
