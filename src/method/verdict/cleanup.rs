//! Cleanup (CLEAN-1..3): the group's latest cleanup audit after its close,
//! the residue it found, and the monitor's peak against the frozen
//! concurrency.

use serde::Serialize;

use crate::method::projections::{GroupState, LineageState};

/// A group's cleanup evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cleanup {
    /// Seq of the latest audit, if any.
    pub audit_seq: Option<u64>,
    /// Whether that audit came after the group was closed (CASE-9).
    pub after_close: bool,
    /// Whether the audit itself succeeded.
    pub audit_pass: bool,
    /// Resources found, minus the central host (CLEAN-2) and what is
    /// attached to it.
    pub residue: Vec<String>,
    /// The highest sampled sandbox count.
    pub monitor_peak: Option<u64>,
    /// The frozen concurrency.
    pub concurrency: u64,
}

impl Cleanup {
    /// CLEAN-2: peak <= concurrency and the final tail is zero.
    pub fn holds(&self) -> bool {
        self.audit_seq.is_some()
            && self.after_close
            && self.audit_pass
            && self.residue.is_empty()
            && self.monitor_peak.is_some_and(|p| p <= self.concurrency)
    }
}

/// The cleanup projection of a group.
pub fn cleanup(l: &LineageState, g: &GroupState) -> Cleanup {
    let m = &l.frozen.manifest.public;
    // CLEAN-2: only the frozen (reuse) or recorded (provision) central
    // host, and only when the audit itself named it.
    let allowed = crate::method::central::excluded_id(l);
    let central = g
        .cleanup
        .as_ref()
        .and_then(|(_, a)| a.excluded_central_instance_id.clone())
        .filter(|id| allowed.as_ref() == Some(id));
    let mut out = Cleanup {
        audit_seq: None,
        after_close: false,
        audit_pass: false,
        residue: Vec::new(),
        monitor_peak: g.monitor_peak,
        concurrency: u64::from(m.limits.concurrency),
    };
    if let Some((at, audit)) = &g.cleanup {
        out.audit_seq = Some(at.seq);
        out.after_close = g.closed.is_some_and(|c| c.seq < at.seq);
        out.audit_pass = audit.status == crate::schema::events::Status::Pass;
        out.residue = audit
            .found
            .iter()
            .filter(|f| !f.is_central(central.as_deref()))
            .map(|f| format!("{} {} ({})", f.resource, f.id, f.state))
            .collect();
    }
    out
}
