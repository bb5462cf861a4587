//! The control's artifact checksum and the control catalog (LINEAGE-6,
//! LINEAGE-9, FREEZE-6): what an accepted control registers, and which
//! lineages reuse it.

use serde::Serialize;

use crate::method::projections::{GroupState, LineageState, State};
use crate::method::verdict::settlement::settlement;
use crate::schema::events::GroupRef;

/// The control artifact checksum (LINEAGE-6, LINEAGE-9): BLAKE3 over the
/// canonical JSON of the control's case results and request settlements,
/// re-derivable from the log at any later seq.
pub fn control_artifact_blake3(l: &LineageState, group: &str) -> String {
    let m = &l.frozen.manifest.public;
    let empty = GroupState::default();
    let g = l.groups.get(group).unwrap_or(&empty);
    let cases: Vec<serde_json::Value> = g
        .cases
        .iter()
        .map(|(k, c)| {
            serde_json::json!({
                "case": k,
                "status": crate::method::binding::case_status(l, group, k),
                "result_blake3": c.result.as_ref().map(|(_, r)| r.result_blake3.clone()),
            })
        })
        .collect();
    let s = settlement(m, g);
    let doc = serde_json::json!({
        "control_key": l.frozen.control_key,
        "task_manifest_blake3": l.frozen.task_manifest_blake3,
        "cases": cases,
        "requests": s.requests,
    });
    let bytes = serde_json::to_vec(&doc).expect("json values serialize");
    hex::encode(blake3::hash(&bytes).as_bytes())
}

/// One entry of the control catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CatalogEntry {
    pub control_key: String,
    /// The accepted control group.
    pub group: GroupRef,
    /// Its artifact checksum as registered.
    pub artifact_blake3: String,
    /// Seq of the registration.
    pub seq: u64,
    /// Lineages that reuse it.
    pub reused_by: Vec<String>,
}

/// The control catalog: accepted controls by key, and who reuses them.
pub fn control_catalog(state: &State) -> Vec<CatalogEntry> {
    let mut out = Vec::new();
    for (key, regs) in &state.controls {
        for (at, r) in regs {
            let reused_by = state
                .lineages
                .values()
                .filter(|l| {
                    l.control_reused
                        .as_ref()
                        .is_some_and(|(_, u)| u.control == r.group)
                })
                .map(|l| l.frozen.lineage.clone())
                .collect();
            out.push(CatalogEntry {
                control_key: key.clone(),
                group: r.group.clone(),
                artifact_blake3: r.artifact_blake3.clone(),
                seq: at.seq,
                reused_by,
            });
        }
    }
    out
}
