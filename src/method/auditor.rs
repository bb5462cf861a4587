//! TRUST-7: an auditor's memory. `verify --against` and `checkpoint
//! verify` keep, per origin, the largest checkpoint they accepted; a
//! checkpoint presented later is judged against it here. Pure: the state
//! file's text in and out, and one judgement from the remembered
//! checkpoint, the presented one and a consistency proof the CLI computed
//! from the ledger being verified. The CLI reads and writes the file.
//!
//! The state file (JSON, ordered keys):
//!
//! ```text
//! {
//!   "format": "benchledger auditor state v1",
//!   "origins": {
//!     "<origin>": { "tree_size": 12, "root": "<64 hex>", "note": "<the signed note>" }
//!   }
//! }
//! ```
//!
//! The signed note is kept so that a fork found later has both signed
//! checkpoints at hand (the evidence of a log that signed two histories).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::log::tlog::merkle::empty_root;
use crate::log::tlog::{verify_consistency, Checkpoint, Hash, SignedNote};
use crate::schema::rule::Rule;

/// The `format` of every state file this build reads and writes.
pub const AUDITOR_STATE_FORMAT: &str = "benchledger auditor state v1";

/// The checkpoint remembered for one origin: the largest accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remembered {
    /// Its tree size.
    pub size: u64,
    pub root: Hash,
    /// Its signed note, verbatim.
    pub note: String,
}

/// Every origin's remembered checkpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditorState {
    origins: BTreeMap<String, Remembered>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Wire {
    format: String,
    origins: BTreeMap<String, WireEntry>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireEntry {
    tree_size: u64,
    root: String,
    note: String,
}

impl AuditorState {
    /// Parses a state file's text; the reason names the field or origin
    /// that does not hold. Each entry's note must be a signed checkpoint
    /// naming that origin, size and root (its signature is not checked
    /// again: it was when it was accepted).
    pub fn parse(text: &str) -> Result<Self, String> {
        let wire: Wire =
            serde_json::from_str(text).map_err(|e| format!("not a state file: {e}"))?;
        if wire.format != AUDITOR_STATE_FORMAT {
            return Err(format!(
                "format is {:?}, this build reads {AUDITOR_STATE_FORMAT:?}",
                wire.format
            ));
        }
        let mut origins = BTreeMap::new();
        for (origin, e) in wire.origins {
            let bad = |why: String| format!("origin {origin:?}: {why}");
            let root: Hash = hex::decode(&e.root)
                .ok()
                .filter(|_| e.root.bytes().all(|b| !b.is_ascii_uppercase()))
                .and_then(|b| b.try_into().ok())
                .ok_or_else(|| bad("root is not 64 lowercase hex digits".into()))?;
            let note = SignedNote::parse(&e.note).map_err(|err| bad(format!("note: {err}")))?;
            let body = Checkpoint::parse(note.text()).map_err(|err| bad(format!("note: {err}")))?;
            if body.origin() != origin || body.size() != e.tree_size || *body.root() != root {
                return Err(bad(
                    "the note's checkpoint is not this origin, tree_size and root".into(),
                ));
            }
            let remembered = Remembered {
                size: e.tree_size,
                root,
                note: e.note,
            };
            origins.insert(origin, remembered);
        }
        Ok(Self { origins })
    }

    /// The file's text (ends in a newline); `parse` reads it back equal.
    pub fn encode(&self) -> String {
        let wire = Wire {
            format: AUDITOR_STATE_FORMAT.to_string(),
            origins: self
                .origins
                .iter()
                .map(|(origin, r)| {
                    let entry = WireEntry {
                        tree_size: r.size,
                        root: hex::encode(r.root),
                        note: r.note.clone(),
                    };
                    (origin.clone(), entry)
                })
                .collect(),
        };
        let mut out = serde_json::to_string_pretty(&wire).expect("a map of strings and numbers");
        out.push('\n');
        out
    }

    /// The checkpoint remembered for `origin`.
    pub fn get(&self, origin: &str) -> Option<&Remembered> {
        self.origins.get(origin)
    }

    /// How many origins it remembers.
    pub fn len(&self) -> usize {
        self.origins.len()
    }

    /// Whether it remembers nothing.
    pub fn is_empty(&self) -> bool {
        self.origins.is_empty()
    }

    /// Remembers `checkpoint` for `origin` when it was accepted and is
    /// larger than what is remembered (the memory never moves back);
    /// returns whether anything changed.
    pub fn advance(&mut self, origin: &str, judgement: &Judgement, checkpoint: Remembered) -> bool {
        let larger = self
            .origins
            .get(origin)
            .is_none_or(|r| checkpoint.size > r.size);
        if !judgement.accepted() || !larger {
            return false;
        }
        self.origins.insert(origin.to_string(), checkpoint);
        true
    }
}

/// A presented checkpoint judged against the remembered one (TRUST-7).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judgement {
    /// Nothing is remembered for its origin: accepted, remembered.
    First,
    /// The remembered checkpoint itself (same size and root): accepted.
    Same,
    /// Larger, and the consistency proof from the remembered size holds:
    /// accepted, remembered instead.
    Extends {
        /// The remembered size it extends.
        from: u64,
    },
    /// Smaller than the remembered checkpoint: refused.
    Rollback {
        /// The remembered size.
        remembered: u64,
    },
    /// Not consistent with the remembered checkpoint: the same size with
    /// another root, or a larger tree whose proof from the remembered root
    /// does not hold. Refused.
    Fork {
        /// The remembered size.
        remembered: u64,
        /// What does not hold.
        why: String,
    },
}

impl Judgement {
    /// Whether the checkpoint is accepted.
    pub fn accepted(&self) -> bool {
        matches!(self, Self::First | Self::Same | Self::Extends { .. })
    }

    /// Its one-word name (the JSON `judgement`).
    pub fn name(&self) -> &'static str {
        match self {
            Self::First => "first",
            Self::Same => "same",
            Self::Extends { .. } => "extends",
            Self::Rollback { .. } => "rollback",
            Self::Fork { .. } => "fork",
        }
    }

    /// Why a refused checkpoint is refused, citing the rule (`None` when
    /// accepted). `size` and `root` are the presented checkpoint's.
    pub fn refusal(&self, origin: &str, size: u64, root: &Hash) -> Option<String> {
        let rule = Rule::Trust7;
        match self {
            Self::Rollback { remembered } => Some(format!(
                "rollback ({rule}): a checkpoint of {origin:?} of size {remembered} was accepted before; this one has size {size}, smaller"
            )),
            Self::Fork { remembered, why } => Some(format!(
                "fork ({rule}): this checkpoint of {origin:?} (size {size}, root {}) is not consistent with the one accepted before (size {remembered}): {why}",
                hex::encode(root)
            )),
            _ => None,
        }
    }
}

/// The consistency proof `judge` needs, as (old size, new size): from the
/// remembered size to the presented one, when the presented tree is the
/// larger and the remembered one not empty. `None`: no proof is needed.
pub fn proof_needed(remembered: Option<&Remembered>, size: u64) -> Option<(u64, u64)> {
    let r = remembered?;
    (r.size > 0 && size > r.size).then_some((r.size, size))
}

/// Judges a presented checkpoint (`size`, `root`) against the remembered
/// one (TRUST-7). `proof` is the consistency proof `proof_needed` names
/// (ignored, and may be empty, when it names none); it is checked against
/// the remembered root and the presented one, so a proof computed from a
/// ledger that does not hold the remembered root does not verify.
pub fn judge(remembered: Option<&Remembered>, size: u64, root: &Hash, proof: &[Hash]) -> Judgement {
    let Some(r) = remembered else {
        return Judgement::First;
    };
    let fork = |why: String| Judgement::Fork {
        remembered: r.size,
        why,
    };
    if size < r.size {
        return Judgement::Rollback { remembered: r.size };
    }
    if size == r.size {
        if *root == r.root {
            return Judgement::Same;
        }
        return fork(format!(
            "two checkpoints of size {size} with different roots (remembered {})",
            hex::encode(r.root)
        ));
    }
    if r.size == 0 {
        // The empty tree is a prefix of every tree; its root is fixed.
        if r.root != empty_root() {
            return fork(
                "the remembered size-0 checkpoint has a root other than the empty tree's".into(),
            );
        }
        return Judgement::Extends { from: 0 };
    }
    match verify_consistency(r.size, size, proof, &r.root, root) {
        Ok(()) => Judgement::Extends { from: r.size },
        Err(e) => fork(format!(
            "the consistency proof from size {} to {size} computed from this ledger does not lead from the remembered root {}: {e}",
            r.size,
            hex::encode(r.root)
        )),
    }
}

#[cfg(test)]
#[path = "auditor_tests.rs"]
mod tests;
