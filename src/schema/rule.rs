//! The rule ids of the method (`../shared/spec/method.md`) and of the
//! ledger (`ledger-schema/SPEC.md`, LEDGER-*), as one type: a refusal, a
//! gate row and a stop name their rule by value, so a misspelt id does not
//! compile. Stored payloads keep the id's text (`Rule::as_str`).

use std::str::FromStr;

crate::schema::named::named_enum! {
    /// A rule id, displayed as written in the method (`FREEZE-3`).
    pub enum Rule {
        /// Run classes: task and trial counts.
        Class1 = "CLASS-1",
        /// Run classes: the allowed claim.
        Class2 = "CLASS-2",
        /// Run classes.
        Class3 = "CLASS-3",
        /// Run classes.
        Class4 = "CLASS-4",
        /// Run classes: class-aware wording.
        Class5 = "CLASS-5",
        /// Freezing: every input frozen before the first launch.
        Freeze1 = "FREEZE-1",
        /// Freezing: no credential in any frozen input.
        Freeze2 = "FREEZE-2",
        /// Freezing: a lineage label is frozen once.
        Freeze3 = "FREEZE-3",
        /// Freezing: run-scoped paths, ports and tags are new per lineage.
        Freeze4 = "FREEZE-4",
        /// Freezing: the lineage key.
        Freeze5 = "FREEZE-5",
        /// Freezing: the narrower control key (no policy commit).
        Freeze6 = "FREEZE-6",
        /// Freezing: two sign-offs before scored work.
        Freeze7 = "FREEZE-7",
        /// Freezing: every route priced.
        Freeze8 = "FREEZE-8",
        /// Gates: the AWS identity.
        Gate1 = "GATE-1",
        /// Gates: the vCPU quota.
        Gate2 = "GATE-2",
        /// Gates: daemon health and sentinels.
        Gate3 = "GATE-3",
        /// Gates: the daemon binary and config.
        Gate4 = "GATE-4",
        /// Gates: an accepted canary before scored work.
        Gate5 = "GATE-5",
        /// Gates: a failed gate leaves the case `not_started`.
        Gate6 = "GATE-6",
        /// Gates: the validated TrialConfig.
        Gate7 = "GATE-7",
        /// Gates: preflights and canaries get fresh non-evaluation identities.
        Gate8 = "GATE-8",
        /// Gates: a multi-case canary at concurrency above 1.
        Gate9 = "GATE-9",
        /// Cases: the case states.
        Case1 = "CASE-1",
        /// Cases: an identity is consumed once.
        Case2 = "CASE-2",
        /// Cases: terminal validity.
        Case3 = "CASE-3",
        /// Cases: resume.
        Case4 = "CASE-4",
        /// Cases: Harbor retries 0.
        Case5 = "CASE-5",
        /// Cases: the security-policy skip.
        Case6 = "CASE-6",
        /// Cases: concurrency.
        Case7 = "CASE-7",
        /// Cases: a frozen identity; evidence of its own trial.
        Case8 = "CASE-8",
        /// Cases: no launch after the close.
        Case9 = "CASE-9",
        /// Lineage: the target groups and their order.
        Lineage1 = "LINEAGE-1",
        /// Lineage: the next group.
        Lineage2 = "LINEAGE-2",
        /// Lineage: feedback after an accepted round.
        Lineage3 = "LINEAGE-3",
        /// Lineage: completion.
        Lineage4 = "LINEAGE-4",
        /// Lineage: a rejected round stops the lineage.
        Lineage5 = "LINEAGE-5",
        /// Lineage: control reuse.
        Lineage6 = "LINEAGE-6",
        /// Lineage: the feedback schedule.
        Lineage7 = "LINEAGE-7",
        /// Lineage: policy-state snapshots.
        Lineage8 = "LINEAGE-8",
        /// Lineage: the control artifact.
        Lineage9 = "LINEAGE-9",
        /// Settlement: four buckets, missing is never zero.
        Settle1 = "SETTLE-1",
        /// Settlement: the charge formula, in decimal.
        Settle2 = "SETTLE-2",
        /// Settlement: precedence of charge sources.
        Settle3 = "SETTLE-3",
        /// Settlement: the states, and which are accepted.
        Settle4 = "SETTLE-4",
        /// Settlement: an authoritative receipt's charge must match the recomputed one.
        Settle5 = "SETTLE-5",
        /// Settlement: one cost basis.
        Settle6 = "SETTLE-6",
        /// Settlement: repricing reuses archived usage.
        Settle7 = "SETTLE-7",
        /// Settlement: the receipt grace and attempts.
        Settle8 = "SETTLE-8",
        /// Joins: by exact request id.
        Join1 = "JOIN-1",
        /// Joins: the persisted `request_id` is the only key.
        Join2 = "JOIN-2",
        /// Joins: verifier rewards join by case identity.
        Join3 = "JOIN-3",
        /// Joins: analytical rows.
        Join4 = "JOIN-4",
        /// Cleanup: exact-tag audit.
        Clean1 = "CLEAN-1",
        /// Cleanup: zero residue.
        Clean2 = "CLEAN-2",
        /// Cleanup: monitor peak.
        Clean3 = "CLEAN-3",
        /// Verdict: the gate rows and their order.
        Verdict1 = "VERDICT-1",
        /// Verdict: feedback only from an accepted verdict.
        Verdict2 = "VERDICT-2",
        /// Verdict: hard stops.
        Verdict3 = "VERDICT-3",
        /// Verdict: no evidence after the seal.
        Verdict4 = "VERDICT-4",
        /// Report: pass rates.
        Report1 = "REPORT-1",
        /// Report: cost deltas.
        Report2 = "REPORT-2",
        /// Report: cost per success.
        Report3 = "REPORT-3",
        /// Report: only identical case identities compared.
        Report4 = "REPORT-4",
        /// Report: request counts by reason kept apart.
        Report5 = "REPORT-5",
        /// Report: the sections.
        Report6 = "REPORT-6",
        /// Report: the registry entry.
        Report7 = "REPORT-7",
        /// Planes: reliability and semantic adequacy apart.
        Plane1 = "PLANE-1",
        /// Planes: per exact provider target.
        Plane2 = "PLANE-2",
        /// Postprocessing: a recovery step launches nothing.
        Post1 = "POST-1",
        /// Binding: a TrialResult matches its launch.
        Bind1 = "BIND-1",
        /// Binding: the reward.
        Bind2 = "BIND-2",
        /// Binding: accepted exceptions.
        Bind3 = "BIND-3",
        /// Binding: canaries prove the path.
        Bind4 = "BIND-4",
        /// Binding: the two planes.
        Bind5 = "BIND-5",
        /// Binding: observations count from their facts.
        Bind6 = "BIND-6",
        /// Binding: the frozen validator.
        Bind7 = "BIND-7",
        /// Binding: credentials in ingested files.
        Bind8 = "BIND-8",
        /// Binding: paths are checked.
        Bind9 = "BIND-9",
        /// Binding: untrusted text is inert on display.
        Bind10 = "BIND-10",
        /// Binding: every timestamp, the trial's own config, attempt counts.
        Bind11 = "BIND-11",
        /// Binding: a refused evidence file is kept.
        Bind12 = "BIND-12",
        /// Trust: checkpoints.
        Trust1 = "TRUST-1",
        /// Trust: proofs.
        Trust2 = "TRUST-2",
        /// Trust: signed sign-offs and seals.
        Trust3 = "TRUST-3",
        /// Trust: published reports carry their checkpoint.
        Trust4 = "TRUST-4",
        /// Trust: only listed operator keys sign checkpoints that count.
        Trust5 = "TRUST-5",
        /// Trust: witnesses and their quorum.
        Trust6 = "TRUST-6",
        /// Trust: an auditor remembers the largest checkpoint it accepted.
        Trust7 = "TRUST-7",
        /// Trust: publication as C2SP tiles and proofs.
        Trust8 = "TRUST-8",
        /// Driver: a worker pool within the gates.
        Run1 = "RUN-1",
        /// Driver: one driver per group (a lease, fencing).
        Run2 = "RUN-2",
        /// Driver: launch records and crash recovery.
        Run3 = "RUN-3",
        /// Driver: every external command has a deadline.
        Run4 = "RUN-4",
        /// Driver: what `run` records never depends on timing.
        Run5 = "RUN-5",
        /// Driver: a probe observes without recording.
        Run6 = "RUN-6",
        /// Driver: an incremental fold.
        Run7 = "RUN-7",
        /// Ledger: append-only.
        Ledger1 = "LEDGER-1",
        /// Ledger: idempotency keys.
        Ledger2 = "LEDGER-2",
        /// Ledger: the secret guard.
        Ledger3 = "LEDGER-3",
    }
}

impl From<Rule> for String {
    fn from(r: Rule) -> String {
        r.as_str().to_string()
    }
}

impl PartialEq<&str> for Rule {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<Rule> for &str {
    fn eq(&self, other: &Rule) -> bool {
        *self == other.as_str()
    }
}

/// A text that is not a rule id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a rule id of the method")]
pub struct UnknownRule(pub String);

impl FromStr for Rule {
    type Err = UnknownRule;
    fn from_str(s: &str) -> Result<Rule, UnknownRule> {
        Rule::ALL
            .iter()
            .copied()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| UnknownRule(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_str_is_the_serde_name_and_parses_back() {
        crate::schema::named::assert_serde_names(Rule::ALL, Rule::as_str);
        for r in Rule::ALL {
            assert_eq!(r.as_str().parse::<Rule>(), Ok(*r));
            assert_eq!(r.to_string(), r.as_str());
        }
        assert!("CASE-10".parse::<Rule>().is_err());
    }

    #[test]
    fn every_rule_of_the_method_is_a_variant() {
        // The method is beside the repository (a missing one is a failure,
        // never a quiet pass): its list and ours agree.
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/spec/method.md");
        let method = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("{path}: {e}: the method must be beside the repository"));
        for line in method.lines() {
            if let Some(rest) = line.strip_prefix("- ") {
                let id = rest.split_whitespace().next().unwrap_or("");
                let looks_like_rule = id.contains('-')
                    && id
                        .split('-')
                        .next()
                        .is_some_and(|p| p.chars().all(|c| c.is_ascii_uppercase()))
                    && id
                        .split('-')
                        .nth(1)
                        .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()) && !n.is_empty());
                if looks_like_rule {
                    assert!(
                        id.parse::<Rule>().is_ok(),
                        "{id} of method.md is not a Rule variant"
                    );
                }
            }
        }
        for r in Rule::ALL
            .iter()
            .filter(|r| !r.as_str().starts_with("LEDGER-"))
        {
            assert!(
                method.contains(&format!("- {} ", r.as_str())),
                "{r} is not in method.md"
            );
        }
    }
}
