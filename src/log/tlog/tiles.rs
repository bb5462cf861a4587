//! C2SP `tlog-tiles` (TRUST-8): the static layout of a log as tiles.
//!
//! A tile at level `L`, index `N` holds up to 256 consecutive hashes: at
//! level 0 the leaf hashes, at level `L > 0` the roots of the full tiles at
//! level `L - 1`. For a tree of size `s`, level `L` has `s >> 8(L+1)` full
//! tiles and, when `(s >> 8L) % 256` is not 0, one partial tile of that
//! width at index `s >> 8(L+1)`. The partial tiles form the tree's right
//! edge: their hashes are complete subtrees whose RFC 6962 fold is the root
//! ([`edge_root`]), so a reader authenticates the edge against the signed
//! checkpoint first and every full tile from the tile above it.
//!
//! Paths: `tile/<L>/<N>[.p/<W>]` and `tile/entries/<N>[.p/<W>]`, N in
//! zero-padded 3-digit groups, all but the last prefixed with `x`
//! (1234067 is `x001/x234/067`). An entry bundle is a sequence of
//! big-endian u16 length-prefixed entries; each entry's RFC 6962 leaf hash
//! is the matching level-0 tile hash. benchledger's entries are its leaf
//! data (`leaf::leaf_data`, 40 bytes).

use super::error::TlogError;
use super::merkle::{leaf_hash, node_hash, root_of_leaf_hashes, Hash};

/// Hashes in a full tile (C2SP: 256, tile height 8).
pub const TILE_WIDTH: u64 = 256;
/// log2 of [`TILE_WIDTH`].
pub const TILE_HEIGHT: u32 = 8;
/// Bytes of a full tile.
pub const TILE_BYTES_MAX: usize = 256 * 32;
/// The highest tile level C2SP allows.
pub const TILE_LEVEL_MAX: u8 = 63;

/// One tile of a tree: its level, index and width (256 when full).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tile {
    /// The level (0: leaf hashes).
    pub level: u8,
    /// The index within the level.
    pub index: u64,
    /// How many hashes it holds (1..=256).
    pub width: u64,
}

impl Tile {
    /// Whether it holds 256 hashes.
    pub fn is_full(&self) -> bool {
        self.width == TILE_WIDTH
    }

    /// Its path: `tile/<L>/<N>[.p/<W>]`.
    pub fn path(&self) -> String {
        format!("tile/{}/{}", self.level, index_path(self.index, self.width))
    }

    /// The path of the entry bundle of a level-0 tile:
    /// `tile/entries/<N>[.p/<W>]`.
    pub fn entries_path(&self) -> String {
        format!("tile/entries/{}", index_path(self.index, self.width))
    }

    /// The first leaf it covers.
    pub fn start_leaf(&self) -> u64 {
        self.index << (TILE_HEIGHT * (u32::from(self.level) + 1))
    }
}

/// `<N>[.p/<W>]`: N in 3-digit groups, all but the last prefixed with `x`;
/// `.p/W` when the width is below 256.
pub fn index_path(index: u64, width: u64) -> String {
    let mut groups = vec![format!("{:03}", index % 1000)];
    let mut rest = index / 1000;
    while rest > 0 {
        groups.push(format!("x{:03}", rest % 1000));
        rest /= 1000;
    }
    groups.reverse();
    let mut out = groups.join("/");
    if width < TILE_WIDTH {
        out.push_str(&format!(".p/{width}"));
    }
    out
}

/// How many levels a tree of `size` has tiles at (0 for the empty tree).
pub fn levels(size: u64) -> u8 {
    let mut l = 0u8;
    while l <= TILE_LEVEL_MAX && (size >> (TILE_HEIGHT * u32::from(l))) > 0 {
        l += 1;
        if TILE_HEIGHT * u32::from(l) >= 64 {
            break;
        }
    }
    l
}

/// Full tiles at `level` in a tree of `size`.
pub fn full_tiles(size: u64, level: u8) -> u64 {
    let shift = TILE_HEIGHT * (u32::from(level) + 1);
    if shift >= 64 {
        0
    } else {
        size >> shift
    }
}

/// The partial tile at `level` in a tree of `size`, if any.
pub fn partial_tile(size: u64, level: u8) -> Option<Tile> {
    let shift = TILE_HEIGHT * u32::from(level);
    if shift >= 64 {
        return None;
    }
    let width = (size >> shift) % TILE_WIDTH;
    (width > 0).then(|| Tile {
        level,
        index: full_tiles(size, level),
        width,
    })
}

/// The right edge of a tree of `size`: its partial tiles, top level first.
pub fn edge(size: u64) -> Vec<Tile> {
    (0..levels(size))
        .rev()
        .filter_map(|l| partial_tile(size, l))
        .collect()
}

/// The hashes of a tile's bytes (a multiple of 32 bytes, `width` hashes).
pub fn tile_hashes(bytes: &[u8], width: u64) -> Result<Vec<Hash>, TlogError> {
    if bytes.len() as u64 != width * 32 {
        return Err(TlogError::Tile(format!(
            "{} bytes, a tile of width {width} has {}",
            bytes.len(),
            width * 32
        )));
    }
    Ok(bytes
        .chunks_exact(32)
        .map(|c| c.try_into().expect("32 bytes"))
        .collect())
}

/// The Merkle tree hash of a full tile's hashes: the hash its tile above
/// holds for it.
pub fn full_tile_root(hashes: &[Hash]) -> Hash {
    assert_eq!(
        hashes.len() as u64,
        TILE_WIDTH,
        "a full tile has 256 hashes"
    );
    root_of_leaf_hashes(hashes)
}

/// The root of a tree from its right edge: each edge tile's hashes are
/// complete subtrees of `256^level` leaves, left to right; the tree's
/// binary decomposition takes aligned power-of-two runs of them, folded
/// from the right (RFC 6962). `edge` is `(tile, hashes)` top level first,
/// as [`edge`] lists them. The empty tree has no edge.
pub fn edge_root(edge: &[(Tile, Vec<Hash>)]) -> Option<Hash> {
    let mut parts: Vec<Hash> = Vec::new();
    for (tile, hashes) in edge {
        let mut pos = 0usize;
        let mut left = hashes.len();
        while left > 0 {
            let run = 1usize << (usize::BITS - 1 - left.leading_zeros());
            parts.push(root_of_leaf_hashes(&hashes[pos..pos + run]));
            pos += run;
            left -= run;
        }
        debug_assert_eq!(hashes.len() as u64, tile.width);
    }
    let mut acc = parts.pop()?;
    while let Some(l) = parts.pop() {
        acc = node_hash(&l, &acc);
    }
    Some(acc)
}

/// An entry bundle: each entry as a big-endian u16 length and its bytes.
pub fn encode_bundle<'a>(entries: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    for e in entries {
        let len = u16::try_from(e.len()).expect("an entry fits a u16 length");
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(e);
    }
    out
}

/// The entries of an entry bundle of `width` entries; a cut, long or short
/// bundle is an error naming the entry.
pub fn decode_bundle(bytes: &[u8], width: u64) -> Result<Vec<&[u8]>, TlogError> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let i = out.len();
        if rest.len() < 2 {
            return Err(TlogError::Tile(format!("entry {i}: a cut length prefix")));
        }
        let len = usize::from(u16::from_be_bytes([rest[0], rest[1]]));
        if rest.len() < 2 + len {
            return Err(TlogError::Tile(format!(
                "entry {i}: {len} bytes announced, {} left",
                rest.len() - 2
            )));
        }
        out.push(&rest[2..2 + len]);
        rest = &rest[2 + len..];
        if out.len() as u64 > width {
            return Err(TlogError::Tile(format!("more than {width} entries")));
        }
    }
    if (out.len() as u64) != width {
        return Err(TlogError::Tile(format!(
            "{} entries, the bundle of width {width} has {width}",
            out.len()
        )));
    }
    Ok(out)
}

/// The RFC 6962 leaf hashes of a bundle's entries.
pub fn bundle_leaf_hashes(entries: &[&[u8]]) -> Vec<Hash> {
    entries.iter().map(|e| leaf_hash(e)).collect()
}

/// Every tile of a tree of `size`, level by level from 0, full tiles in
/// index order and then the partial one.
pub fn all_tiles(size: u64) -> impl Iterator<Item = Tile> {
    (0..levels(size)).flat_map(move |level| {
        (0..full_tiles(size, level))
            .map(move |index| Tile {
                level,
                index,
                width: TILE_WIDTH,
            })
            .chain(partial_tile(size, level))
    })
}
