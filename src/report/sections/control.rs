//! Section 4: which control the rounds compare to, and each round's exact
//! case intersection with it (LINEAGE-6, LINEAGE-9).

use super::{excluded_of, Ctx};
use crate::report::model::{ControlResolution, IntersectionLine};

/// The control's registration in the control catalog.
struct Registration {
    seq: u64,
    artifact_blake3: String,
}

fn registration(ctx: &Ctx<'_>) -> Option<Registration> {
    let control = ctx.control()?;
    let source = control.source_lineage?;
    ctx.state
        .controls
        .get(&source.frozen.control_key)?
        .iter()
        .find(|(_, registered)| {
            registered.group.lineage == source.frozen.lineage
                && registered.group.group == control.source_group
        })
        .map(|(at, registered)| Registration {
            seq: at.seq,
            artifact_blake3: registered.artifact_blake3.clone(),
        })
}

/// Section 4.
pub(super) fn control_resolution(ctx: &Ctx<'_>) -> ControlResolution {
    let control = ctx.control();
    let registration = registration(ctx);
    ControlResolution {
        source: control.map(|control| control.source()),
        reused: control.is_some_and(|control| control.reused),
        reuse_seq: ctx.lineage.control_reused.as_ref().map(|(at, _)| at.seq),
        status: control.map_or("no control in the target list".into(), |control| {
            control.status()
        }),
        registered_seq: registration.as_ref().map(|registration| registration.seq),
        artifact_blake3: registration.map(|registration| registration.artifact_blake3),
        control_key: ctx.lineage.frozen.control_key.clone(),
        intersections: ctx
            .rounds()
            .filter_map(|round| {
                let intersection = ctx.intersections.get(&round.name)?;
                Some(IntersectionLine {
                    round: round.name.clone(),
                    included: intersection.included.len() as u64,
                    predeclared: (intersection.included.len() + intersection.excluded.len()) as u64,
                    excluded: excluded_of(intersection),
                })
            })
            .collect(),
    }
}
