//! The security-policy skip (CASE-6): an original identity and its
//! replacement-01 both ended terminal_invalid, each on its own sanitized
//! HTTP 403 evidence of the same class, in a manifest that enables the skip.

use serde::Serialize;

use crate::method::binding::case_status;
use crate::method::projections::{CaseState, CaseStatus, GroupState, LineageState};
use crate::schema::events::{CaseRef, RefusalClass};

/// A validated security-policy skip of one task x trial (CASE-6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skip {
    /// The original identity (replacement 0).
    pub case: CaseRef,
    /// The shared normalized class.
    pub class: RefusalClass,
    /// The two evidence hashes (original, replacement-01).
    pub evidence_blake3: [String; 2],
}

/// A case's first HTTP 403 refusal: its class and evidence hash.
fn forbidden_evidence(c: &CaseState) -> Option<(RefusalClass, String)> {
    c.refusals
        .iter()
        .find(|(_, r)| r.http_status == 403)
        .map(|(_, r)| (r.class, r.evidence_blake3.clone()))
}

/// The skip of `original` when its replacement-01 was started: `None`
/// without a started replacement-01, else the validated skip or why it is
/// not one.
pub(super) fn skip_check(
    l: &LineageState,
    group: &str,
    g: &GroupState,
    original: &CaseRef,
) -> Option<Result<Skip, String>> {
    let replacement = CaseRef {
        replacement: 1,
        ..original.clone()
    };
    let replacement_case = g.cases.get(&replacement).filter(|c| c.started.is_some())?;
    let Some(original_case) = g.cases.get(original) else {
        return Some(Err("replacement-01 without a recorded original".into()));
    };
    if !l.frozen.manifest.public.method.security_skip_enabled {
        return Some(Err("the frozen manifest does not enable the skip".into()));
    }
    for (who, id, c) in [
        ("original", original, original_case),
        ("replacement-01", &replacement, replacement_case),
    ] {
        if c.start_seqs.len() != 1 {
            return Some(Err(format!(
                "{who} was started {} times",
                c.start_seqs.len()
            )));
        }
        let status = case_status(l, group, id);
        if status != CaseStatus::TerminalInvalid {
            return Some(Err(format!("{who} is {status:?}, not terminal_invalid")));
        }
    }
    let (
        Some((original_class, original_evidence)),
        Some((replacement_class, replacement_evidence)),
    ) = (
        forbidden_evidence(original_case),
        forbidden_evidence(replacement_case),
    )
    else {
        return Some(Err(
            "each attempt needs its own sanitized HTTP 403 evidence".into(),
        ));
    };
    if original_class != replacement_class {
        return Some(Err(format!(
            "evidence classes differ: {original_class:?} vs {replacement_class:?}"
        )));
    }
    if original_evidence == replacement_evidence {
        return Some(Err(
            "both attempts cite the same evidence; each needs its own".into(),
        ));
    }
    Some(Ok(Skip {
        case: original.clone(),
        class: original_class,
        evidence_blake3: [original_evidence, replacement_evidence],
    }))
}
