//! The verdict's vocabulary (method.md section 10, VERDICT-1): the terminal
//! status of a group and the names of its gate rows, one value each. The
//! stored `group_sealed.v1` payload keeps their text (`GroupSealed.status`,
//! `GateRow.gate` are `String`), so the conversion happens at that boundary
//! with `as_str`/`into` and no stored byte changes.

crate::schema::named::named_enum! {
    /// The terminal status of a group's verdict (VERDICT-1): `accepted`, or
    /// the rejection of the first failing gate row in precedence order.
    pub enum VerdictStatus {
        /// Every gate row holds.
        Accepted = "accepted",
        /// The manifest or secrets row fails.
        RejectedManifest = "rejected_manifest",
        /// The attempts, trial result or runtime row fails.
        RejectedRuntime = "rejected_runtime",
        /// A request, decision, cost, reward or replay join fails.
        RejectedJoin = "rejected_join",
        /// A request is not settled.
        RejectedSettlement = "rejected_settlement",
        /// The cleanup evidence does not hold.
        RejectedCleanup = "rejected_cleanup",
        /// The spend or severe-quality stop was crossed.
        RejectedSafetyLimit = "rejected_safety_limit",
    }
}

crate::schema::named::named_enum! {
    /// A gate row of method.md section 10, in the order the verdict shows
    /// them; the name is the text stored in `GateRow.gate`.
    pub enum VerdictRow {
        /// The launched configuration equals the frozen one (GATE-4, GATE-7).
        Manifest = "manifest",
        /// No credential anywhere in the group's evidence.
        Secrets = "secrets",
        /// Every identity was started once and belongs to the manifest.
        Attempts = "attempts",
        /// At most one TrialResult per case.
        TrialResult = "trial result",
        /// Every non-skipped started case is terminal_valid.
        Runtime = "runtime",
        /// T = U (= D, = R), each id once (JOIN-1).
        Requests = "requests",
        /// One decision per request.
        Decisions = "decisions",
        /// Each trace matches one usage row.
        CostJoin = "cost join",
        /// Outcomes join one-to-one with traces, task outcomes by case.
        RewardJoin = "reward join",
        /// The frozen route table reconstructs every decision (LINEAGE-8).
        Replay = "replay",
        /// Every request is computed or not_charged (SETTLE-4).
        Settlement = "settlement",
        /// Zero residue after the close, peak within concurrency (CLEAN-2).
        Cleanup = "cleanup",
        /// The spend and severe-quality stops (VERDICT-3).
        SafetyLimit = "safety limit",
    }
}

impl From<VerdictStatus> for String {
    fn from(s: VerdictStatus) -> String {
        s.as_str().to_string()
    }
}

impl From<VerdictRow> for String {
    fn from(r: VerdictRow) -> String {
        r.as_str().to_string()
    }
}

impl VerdictStatus {
    /// Whether the stored status text `stored` is this status.
    pub fn is(self, stored: &str) -> bool {
        self.as_str() == stored
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_str_is_the_serde_name() {
        crate::schema::named::assert_serde_names(VerdictStatus::ALL, VerdictStatus::as_str);
        crate::schema::named::assert_serde_names(VerdictRow::ALL, VerdictRow::as_str);
        assert!(VerdictStatus::Accepted.is("accepted"));
        assert!(!VerdictStatus::Accepted.is("rejected_join"));
        assert_eq!(String::from(VerdictRow::CostJoin), "cost join");
    }
}
