//! `manifest freeze` and `manifest sign-off` (FREEZE-3, FREEZE-4, FREEZE-7).

use crate::error::{Error, Result};
use crate::method::decide::refuse;
use crate::method::freeze::Frozen;
use crate::method::projections::State;
use crate::method::projections::{Claim, SignOff};
use crate::schema::events::{Event, ManifestSignedOff, ManifestSignedOffV2, SignOffRole};
use crate::schema::rule::Rule;

pub use crate::limits::SIGN_OFF_NAME_BYTES_MAX;

/// `manifest freeze`: appends the frozen manifest unless its lineage label
/// was frozen before (FREEZE-3) or it reuses any run-scoped path, port,
/// database, tag or job name of an earlier lineage (FREEZE-4).
pub fn freeze(state: &State, frozen: impl Into<Frozen>) -> Result<Vec<Event>> {
    let frozen: Frozen = frozen.into();
    if let Some(l) = state.lineages.get(&frozen.lineage) {
        return Err(refuse(
            Rule::Freeze3,
            format!(
            "lineage {:?} was frozen at seq {}; a changed input is a new lineage, never an edit",
            frozen.lineage, l.frozen_seq
        ),
        ));
    }
    for (key, field) in frozen.manifest.public.run_scoped_claims() {
        if let Some(Claim {
            lineage,
            field: first,
        }) = state.claims.get(&key)
        {
            return Err(refuse(Rule::Freeze4, format!(
                "{field} ({key}) was already used by lineage {lineage:?} ({first}); every run-scoped path, port, database, tag and job name must be new"
            )));
        }
    }
    Ok(vec![frozen.into_event()])
}

/// `manifest sign-off`: records an operator or reviewer sign-off, once per
/// role, by two distinct names (FREEZE-7).
pub fn sign_off(
    state: &State,
    lineage: Option<&str>,
    role: SignOffRole,
    name: &str,
) -> Result<Vec<Event>> {
    let l = state.lineage(lineage)?;
    let name = name.trim();
    if name.is_empty() || name.len() > SIGN_OFF_NAME_BYTES_MAX || name.chars().any(char::is_control)
    {
        return Err(Error::input(format!(
            "--name must be 1 to {SIGN_OFF_NAME_BYTES_MAX} printable bytes"
        )));
    }
    if l.plan.is_some() {
        return Err(refuse(
            Rule::Trust3,
            format!(
                "lineage {:?} lists its signers: a sign-off is a signature by a key the manifest lists for the role (`manifest sign-off --role {} --key FILE`); a bare name never counts",
                l.frozen.lineage,
                role.as_str()
            ),
        ));
    }
    if let Some(SignOff { name: who, seq }) = l.sign_offs.get(&role) {
        return Err(refuse(
            Rule::Freeze7,
            format!(
                "lineage {:?} was already signed off as {} by {who:?} at seq {seq}",
                l.frozen.lineage,
                role.as_str()
            ),
        ));
    }
    let other = match role {
        SignOffRole::Operator => SignOffRole::Reviewer,
        SignOffRole::Reviewer => SignOffRole::Operator,
    };
    if l.sign_offs.get(&other).is_some_and(|s| s.name == name) {
        return Err(refuse(Rule::Freeze7, format!("operator and reviewer must be two distinct names; {name:?} already signed off as {other:?}")));
    }
    Ok(vec![Event::ManifestSignedOff(ManifestSignedOff {
        lineage: l.frozen.lineage.clone(),
        manifest_blake3: l.frozen.manifest_blake3.clone(),
        role,
        name: name.to_string(),
    })])
}

/// How a TRUST-3 sign-off is signed: with the role's key here, or by a
/// signed note made elsewhere over `manifest show --sign-off-text`.
#[derive(Debug, Clone, Copy)]
pub enum SignedBy<'a> {
    /// The signer key file's key.
    Key(&'a crate::log::tlog::SignerKey),
    /// A signed note's text.
    Note(&'a str),
}

/// TRUST-3: the sign-off of `role` signed `by` a key or a note; a
/// signature that does not check is refused and appends nothing.
pub fn sign_off_by(
    state: &State,
    lineage: Option<&str>,
    role: SignOffRole,
    by: SignedBy<'_>,
) -> Result<Vec<Event>> {
    let l = state.lineage(lineage)?;
    let signed = match by {
        SignedBy::Key(k) => crate::method::trust::sign_sign_off(l, role, k),
        SignedBy::Note(n) => crate::method::trust::sign_off_from_note(l, role, n),
    };
    let signed = signed.map_err(|why| {
        refuse(
            Rule::Trust3,
            format!(
                "the {} sign-off does not count: {why}; nothing was appended",
                role.as_str()
            ),
        )
    })?;
    sign_off_signed(state, signed)
}

/// `manifest sign-off --key | --note`: records a signed sign-off of a v2
/// lineage, once per role (FREEZE-7); refused unless it counts: the key is
/// listed for the role, the signature verifies over the frozen manifest
/// hash, and the other role was signed with another key (TRUST-3).
pub fn sign_off_signed(state: &State, signed: ManifestSignedOffV2) -> Result<Vec<Event>> {
    let l = state.lineage(Some(&signed.lineage))?;
    if let (Some(key), Some(SignOff { seq, .. })) = (
        l.sign_off_keys.get(&signed.role),
        l.sign_offs.get(&signed.role),
    ) {
        let name = key.split('+').next().unwrap_or_default();
        return Err(refuse(
            Rule::Freeze7,
            format!(
                "lineage {:?} was already signed off as {} with key {name:?} at seq {seq}",
                l.frozen.lineage,
                signed.role.as_str()
            ),
        ));
    }
    if let Err(why) = crate::method::trust::check_sign_off(l, &signed) {
        return Err(refuse(
            Rule::Trust3,
            format!(
                "the {} sign-off of lineage {:?} does not count: {why}; nothing was appended",
                signed.role.as_str(),
                l.frozen.lineage
            ),
        ));
    }
    Ok(vec![Event::ManifestSignedOffV2(signed)])
}
