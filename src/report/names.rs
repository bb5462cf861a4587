//! The names the report prints for values of enums defined outside the
//! report (in `schema` and `method`), in one place.
//!
//! Each name is the enum's serde name (the test below checks every
//! variant). This is a stopgap while those enums move to
//! `crate::schema::named::named_enum!`: once one has its own `as_str`, its
//! impl here becomes `self.as_str()` or goes away. The report's own
//! enumerations (`BasisKind`, `ChartMarker`, ...) are named enums in
//! [`super::model`] and need nothing here.

use crate::method::projections::CaseStatus;
use crate::method::verdict::{self, Series, SettlementState};
use crate::schema::events::{InvalidReason, RefusalClass, SignOffRole};
use crate::schema::manifest::{CentralMode, PriceBasis, RouteProtocol, RunClass, RunRole, Tier};

/// The name the report gives a value of an enum defined outside it.
pub(crate) trait ReportName: Copy {
    /// The value's serde name.
    fn report_name(self) -> &'static str;
}

impl ReportName for RunClass {
    fn report_name(self) -> &'static str {
        match self {
            RunClass::Canary => "canary",
            RunClass::MechanismIteration => "mechanism_iteration",
            RunClass::ReplicatedExperiment => "replicated_experiment",
            RunClass::PublicReproduction => "public_reproduction",
        }
    }
}

impl ReportName for RunRole {
    fn report_name(self) -> &'static str {
        match self {
            RunRole::Tuning => "tuning",
            RunRole::HeldOut => "held_out",
        }
    }
}

impl ReportName for Tier {
    fn report_name(self) -> &'static str {
        verdict::tier_name(self)
    }
}

impl ReportName for Series {
    fn report_name(self) -> &'static str {
        match self {
            Series::Actual => "actual",
            Series::Notional => "notional",
            Series::SubscriptionCounterfactual => "subscription_counterfactual",
            Series::Incomplete => "incomplete",
        }
    }
}

impl ReportName for SettlementState {
    fn report_name(self) -> &'static str {
        match self {
            SettlementState::Computed => "computed",
            SettlementState::NotCharged => "not_charged",
            SettlementState::Pending => "pending",
            SettlementState::Unknown => "unknown",
        }
    }
}

impl ReportName for CaseStatus {
    fn report_name(self) -> &'static str {
        match self {
            CaseStatus::NotStarted => "not_started",
            CaseStatus::Started => "started",
            CaseStatus::TerminalValid => "terminal_valid",
            CaseStatus::TerminalInvalid => "terminal_invalid",
        }
    }
}

impl ReportName for RouteProtocol {
    fn report_name(self) -> &'static str {
        match self {
            RouteProtocol::Openai => "openai",
            RouteProtocol::Anthropic => "anthropic",
        }
    }
}

impl ReportName for PriceBasis {
    fn report_name(self) -> &'static str {
        match self {
            PriceBasis::Actual => "actual",
            PriceBasis::Notional => "notional",
        }
    }
}

impl ReportName for CentralMode {
    fn report_name(self) -> &'static str {
        match self {
            CentralMode::Provision => "provision",
            CentralMode::Reuse => "reuse",
        }
    }
}

impl ReportName for SignOffRole {
    fn report_name(self) -> &'static str {
        match self {
            SignOffRole::Operator => "operator",
            SignOffRole::Reviewer => "reviewer",
        }
    }
}

impl ReportName for RefusalClass {
    fn report_name(self) -> &'static str {
        match self {
            RefusalClass::ProviderPolicyRefusal => "provider_policy_refusal",
            RefusalClass::NetworkSecurityPolicyDenied => "network_security_policy_denied",
        }
    }
}

impl ReportName for InvalidReason {
    fn report_name(self) -> &'static str {
        match self {
            InvalidReason::EnvironmentDisconnect => "environment_disconnect",
            InvalidReason::MissingVerifierResult => "missing_verifier_result",
            InvalidReason::CorruptOutput => "corrupt_output",
            InvalidReason::AgentException => "agent_exception",
            InvalidReason::ControllerCrash => "controller_crash",
        }
    }
}

/// The tier a request resolved to, or `unresolved`.
pub(crate) fn tier_or_unresolved(tier: Option<Tier>) -> String {
    tier.map_or("unresolved".to_string(), |tier| {
        tier.report_name().to_string()
    })
}

/// The verdict's gate rows the report names (method.md section 10; the
/// names of [`crate::method::verdict::ROWS`]).
pub(crate) mod gate {
    /// The cleanup row (section 9).
    pub(crate) const CLEANUP: &str = "cleanup";
    /// The join and settlement rows shown with the settlement audit
    /// (section 8), in the verdict's order.
    pub(crate) const JOIN_AND_SETTLEMENT: [&str; 6] = [
        "requests",
        "decisions",
        "cost join",
        "reward join",
        "replay",
        "settlement",
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every mapping equals the enum's serde name, variant by variant, so
    /// printing through [`ReportName`] is printing the serde name.
    fn check<T: ReportName + serde::Serialize>(all: &[T]) {
        for value in all {
            let json = serde_json::to_string(value).expect("a unit variant serializes");
            assert_eq!(json, format!("\"{}\"", value.report_name()));
        }
    }

    #[test]
    fn every_report_name_is_the_serde_name() {
        use RunClass::*;
        check(&[
            Canary,
            MechanismIteration,
            ReplicatedExperiment,
            PublicReproduction,
        ]);
        check(&[RunRole::Tuning, RunRole::HeldOut]);
        check(&[Tier::Strong, Tier::Balanced, Tier::Economy]);
        check(&[
            Series::Actual,
            Series::Notional,
            Series::SubscriptionCounterfactual,
            Series::Incomplete,
        ]);
        check(&[
            SettlementState::Computed,
            SettlementState::NotCharged,
            SettlementState::Pending,
            SettlementState::Unknown,
        ]);
        check(&[
            CaseStatus::NotStarted,
            CaseStatus::Started,
            CaseStatus::TerminalValid,
            CaseStatus::TerminalInvalid,
        ]);
        check(&[RouteProtocol::Openai, RouteProtocol::Anthropic]);
        check(&[PriceBasis::Actual, PriceBasis::Notional]);
        check(&[CentralMode::Provision, CentralMode::Reuse]);
        check(&[SignOffRole::Operator, SignOffRole::Reviewer]);
        check(&[
            RefusalClass::ProviderPolicyRefusal,
            RefusalClass::NetworkSecurityPolicyDenied,
        ]);
        check(&[
            InvalidReason::EnvironmentDisconnect,
            InvalidReason::MissingVerifierResult,
            InvalidReason::CorruptOutput,
            InvalidReason::AgentException,
            InvalidReason::ControllerCrash,
        ]);
    }

    #[test]
    fn the_gate_names_are_rows_of_the_verdict() {
        let rows: Vec<&str> = crate::method::verdict::ROWS
            .iter()
            .map(|(name, _)| *name)
            .collect();
        assert!(rows.contains(&gate::CLEANUP));
        for name in gate::JOIN_AND_SETTLEMENT {
            assert!(rows.contains(&name), "{name}");
        }
    }
}
