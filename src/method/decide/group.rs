//! `group open` and `group close` (GATE-4, GATE-5, FREEZE-4, LINEAGE-1,
//! LINEAGE-2, LINEAGE-6, CASE-9).

use crate::error::Result;
use crate::method::decide::{manifest_group, not_stopped, refuse};
use crate::method::lineage::earlier_groups_done;
use crate::method::projections::{GroupState, LineageState, State};
use crate::schema::events::{Event, GroupClosed, GroupOpened, GroupRef};
use crate::schema::manifest::{is_non_evaluation, Group};
use crate::schema::rule::Rule;

/// The facts `group open` records: what the operator started the group's
/// daemon with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupOpen {
    /// The lineage (optional when the ledger holds one).
    pub lineage: Option<String>,
    pub group: String,
    /// SHA-256 of the daemon binary started, hex.
    pub binary_sha256: String,
    /// SHA-256 of its config, hex.
    pub config_sha256: String,
    pub ports: Vec<u16>,
    /// Its database path.
    pub db_path: String,
    /// Its output directory.
    pub out_dir: String,
}

/// GATE-5: the accepted canary groups of a lineage; at least one is required
/// before scored work.
pub(super) fn accepted_canaries(l: &LineageState) -> Result<Vec<&GroupState>> {
    let canaries: Vec<&GroupState> = l
        .groups
        .iter()
        .filter(|(name, g)| name.starts_with("canary") && g.accepted())
        .map(|(_, g)| g)
        .collect();
    if canaries.is_empty() {
        return Err(refuse(
            Rule::Gate5,
            "an accepted canary is required before scored work",
        ));
    }
    Ok(canaries)
}

/// GATE-4, FREEZE-4: the daemon's binary, config, ports and paths equal the
/// frozen manifest's for the group.
fn daemon_matches_frozen(l: &LineageState, frozen_group: &Group, cmd: &GroupOpen) -> Result<()> {
    let software = &l.frozen.manifest.public.software;
    if cmd.binary_sha256 != software.bitrouter_binary_sha256 {
        return Err(refuse(
            Rule::Gate4,
            format!(
            "daemon binary sha256 {} is not the frozen {}; nothing is hot-swapped inside a lineage",
            cmd.binary_sha256, software.bitrouter_binary_sha256
        ),
        ));
    }
    let frozen_config = software
        .bitrouter_config_sha256
        .get(&cmd.group)
        .map(String::as_str)
        .unwrap_or("");
    if cmd.config_sha256 != frozen_config {
        return Err(refuse(
            Rule::Gate4,
            format!(
                "daemon config sha256 {} is not the frozen {frozen_config}",
                cmd.config_sha256
            ),
        ));
    }
    for (what, got, want) in [
        (
            "ports",
            format!("{:?}", cmd.ports),
            format!("{:?}", frozen_group.ports),
        ),
        ("db path", cmd.db_path.clone(), frozen_group.db_path.clone()),
        (
            "output directory",
            cmd.out_dir.clone(),
            frozen_group.out_dir.clone(),
        ),
    ] {
        if got != want {
            return Err(refuse(
                Rule::Freeze4,
                format!(
                    "{what} {got} differ from the frozen {want} of group {:?}",
                    cmd.group
                ),
            ));
        }
    }
    Ok(())
}

/// `group open`: records the group's daemon start, refused unless every
/// value equals the frozen manifest (GATE-4, FREEZE-4), the group was never
/// opened, and it is next in the lineage's order (LINEAGE-1, LINEAGE-2).
pub fn group_open(state: &State, cmd: GroupOpen) -> Result<Vec<Event>> {
    let l = state.lineage(cmd.lineage.as_deref())?;
    not_stopped(l)?;
    let frozen_group = manifest_group(l, &cmd.group)?;
    if let (Some((at, r)), "control") = (&l.control_reused, cmd.group.as_str()) {
        return Err(refuse(
            Rule::Lineage6,
            format!(
                "lineage {:?} reuses control {}/{} (seq {}); control is never rerun",
                l.frozen.lineage, r.control.lineage, r.control.group, at.seq
            ),
        ));
    }
    if let Some((at, _)) = l.groups.get(&cmd.group).and_then(|g| g.opened.as_ref()) {
        return Err(refuse(
            Rule::Freeze4,
            format!(
                "group {:?} was opened at seq {}; a group's daemon starts once",
                cmd.group, at.seq
            ),
        ));
    }
    daemon_matches_frozen(l, frozen_group, &cmd)?;
    earlier_groups_done(l, &cmd.group)?;
    if !is_non_evaluation(&cmd.group) {
        accepted_canaries(l)?;
    }
    Ok(vec![Event::GroupOpened(GroupOpened {
        group: GroupRef {
            lineage: l.frozen.lineage.clone(),
            group: cmd.group,
        },
        binary_sha256: cmd.binary_sha256,
        config_sha256: cmd.config_sha256,
        ports: cmd.ports,
        db_path: cmd.db_path,
        out_dir: cmd.out_dir,
    })])
}

/// `group close`: no more launches for an open group.
pub fn group_close(state: &State, lineage: Option<&str>, group: &str) -> Result<Vec<Event>> {
    let l = state.lineage(lineage)?;
    manifest_group(l, group)?;
    let g = l.groups.get(group);
    if g.is_none_or(|g| g.opened.is_none()) {
        return Err(refuse(
            Rule::Case9,
            format!("group {group:?} was never opened"),
        ));
    }
    if let Some(at) = g.and_then(|g| g.closed) {
        return Err(refuse(
            Rule::Case9,
            format!("group {group:?} was closed at seq {}", at.seq),
        ));
    }
    Ok(vec![Event::GroupClosed(GroupClosed {
        group: GroupRef {
            lineage: l.frozen.lineage.clone(),
            group: group.to_string(),
        },
    })])
}
