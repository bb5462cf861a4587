//! The method's side of TRUST-1 and TRUST-3: what a signed sign-off signs
//! and when it counts, and which key may sign a seal's checkpoint. Pure:
//! keys and signatures in, a verdict out.
//!
//! A sign-off signs, as the text of a C2SP signed note (Ed25519 over these
//! bytes), the lines
//!
//! ```text
//! benchledger manifest sign-off v1
//! lineage <label>
//! role <operator|reviewer>
//! manifest_blake3 <64 hex>
//! ```
//!
//! each ending in a newline. Its second line is not a decimal tree size,
//! so no signed sign-off is ever a well-formed checkpoint (an origin, the
//! first line, may hold spaces: C2SP says clients must not assume it has
//! none).

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;

use crate::log::tlog::note::NoteSignature;
use crate::log::tlog::{open_note, sign_note, KeyKind, SignedNote, SignerKey, VerifierKey};
use crate::log::tree::{self, Derived};
use crate::method::projections::{LineageState, State};
use crate::schema::events::{ManifestSignedOffV2, SignOffRole};
use crate::schema::plan::Plan;
use crate::schema::rule::Rule;

/// The first line of every sign-off text.
pub const SIGN_OFF_HEADER: &str = "benchledger manifest sign-off v1";

/// The text a sign-off signs (see the module documentation).
pub fn sign_off_text(lineage: &str, role: SignOffRole, manifest_blake3: &str) -> String {
    format!(
        "{SIGN_OFF_HEADER}\nlineage {lineage}\nrole {}\nmanifest_blake3 {manifest_blake3}\n",
        role.as_str()
    )
}

/// The verifier keys a frozen plan lists for a role, parsed (the freeze
/// refused any that does not parse, so none is dropped).
pub fn role_keys(plan: &Plan, role: SignOffRole) -> Vec<VerifierKey> {
    let listed = match role {
        SignOffRole::Operator => &plan.signers.operators,
        SignOffRole::Reviewer => &plan.signers.reviewers,
    };
    listed
        .iter()
        .filter_map(|k| VerifierKey::parse(k).ok())
        .collect()
}

/// The witness keys of a frozen plan, parsed.
pub fn witness_keys(plan: &Plan) -> Vec<VerifierKey> {
    plan.signers
        .witnesses
        .iter()
        .filter_map(|k| VerifierKey::parse(k).ok())
        .collect()
}

/// Signs the lineage's sign-off for `role` with `key` (which may or may not
/// count: `check_sign_off` decides).
pub fn sign_sign_off(
    l: &LineageState,
    role: SignOffRole,
    key: &SignerKey,
) -> Result<ManifestSignedOffV2, String> {
    sign_manifest(&l.frozen.lineage, &l.frozen.manifest_blake3, role, key)
}

/// Signs the sign-off of `lineage`'s manifest `manifest_blake3` for `role`
/// with `key`.
pub fn sign_manifest(
    lineage: &str,
    manifest_blake3: &str,
    role: SignOffRole,
    key: &SignerKey,
) -> Result<ManifestSignedOffV2, String> {
    let text = sign_off_text(lineage, role, manifest_blake3);
    if key.kind() != KeyKind::Ed25519 {
        return Err(format!(
            "key {} is {} key; a sign-off needs an ed25519 note key",
            key.name(),
            crate::schema::strings::with_article(key.kind().label())
        ));
    }
    let note = sign_note(&text, &[key]).map_err(|e| e.to_string())?;
    let parsed = SignedNote::parse(&note).map_err(|e| e.to_string())?;
    let line = &parsed.signatures()[0];
    Ok(ManifestSignedOffV2 {
        lineage: lineage.to_string(),
        manifest_blake3: manifest_blake3.to_string(),
        role,
        key_name: line.name.clone(),
        key_id: format!("{:08x}", line.key_id),
        signature: STANDARD.encode(&line.signature),
    })
}

/// A sign-off signed elsewhere: a C2SP signed note whose text is the
/// lineage's sign-off text for `role` and whose first signature line is
/// the signer's (any further lines are ignored).
pub fn sign_off_from_note(
    l: &LineageState,
    role: SignOffRole,
    note: &str,
) -> Result<ManifestSignedOffV2, String> {
    let parsed = SignedNote::parse(note).map_err(|e| e.to_string())?;
    let text = sign_off_text(&l.frozen.lineage, role, &l.frozen.manifest_blake3);
    if parsed.text() != text {
        return Err(format!(
            "the note's text is not the {} sign-off of lineage {:?} (manifest {})",
            role.as_str(),
            l.frozen.lineage,
            l.frozen.manifest_blake3
        ));
    }
    let line = &parsed.signatures()[0];
    Ok(ManifestSignedOffV2 {
        lineage: l.frozen.lineage.clone(),
        manifest_blake3: l.frozen.manifest_blake3.clone(),
        role,
        key_name: line.name.clone(),
        key_id: format!("{:08x}", line.key_id),
        signature: STANDARD.encode(&line.signature),
    })
}

/// The sign-off as a C2SP signed note (its text and its one signature
/// line), as any note verifier reads it.
pub fn sign_off_note(s: &ManifestSignedOffV2) -> Result<String, String> {
    let key_id = u32::from_str_radix(&s.key_id, 16)
        .ok()
        .filter(|_| s.key_id.len() == 8 && s.key_id == s.key_id.to_lowercase())
        .ok_or_else(|| format!("key id {:?} is not 8 lowercase hex digits", s.key_id))?;
    let signature = STANDARD
        .decode(&s.signature)
        .ok()
        .filter(|b| b.len() == 64)
        .ok_or("the signature is not 64 bytes of base64")?;
    let line = NoteSignature {
        name: s.key_name.clone(),
        key_id,
        signature,
    };
    let text = sign_off_text(&s.lineage, s.role, &s.manifest_blake3);
    Ok(format!("{text}\n{}", line.line()))
}

/// TRUST-3: a signed sign-off counts when the lineage is v2, it signs the
/// frozen manifest hash, its key is listed for its role, its signature
/// verifies, and the other role was not signed by the same public key.
/// Returns the verifier key (as listed) that signed, or why it does not
/// count.
pub fn check_sign_off(l: &LineageState, s: &ManifestSignedOffV2) -> Result<String, String> {
    let Some(plan) = &l.plan else {
        return Err(format!(
            "lineage {:?} was frozen as v1 and lists no signers",
            l.frozen.lineage
        ));
    };
    if s.manifest_blake3 != l.frozen.manifest_blake3 {
        return Err(format!(
            "it signs manifest {} but the frozen manifest is {}",
            s.manifest_blake3, l.frozen.manifest_blake3
        ));
    }
    let keys = role_keys(plan, s.role);
    let Some(key) = keys
        .iter()
        .find(|k| k.name() == s.key_name && format!("{:08x}", k.key_id()) == s.key_id)
    else {
        return Err(format!(
            "key {}+{} is not one of the frozen {} keys",
            s.key_name,
            s.key_id,
            s.role.as_str()
        ));
    };
    let note = sign_off_note(s)?;
    open_note(&note, std::slice::from_ref(key))
        .map_err(|e| format!("the signature does not verify: {e}"))?;
    let other = match s.role {
        SignOffRole::Operator => SignOffRole::Reviewer,
        SignOffRole::Reviewer => SignOffRole::Operator,
    };
    let same_key = l
        .sign_off_keys
        .get(&other)
        .and_then(|k| VerifierKey::parse(k).ok())
        .is_some_and(|k| k.public_key() == key.public_key());
    if same_key {
        return Err(format!(
            "key {} already signed off as {}: the two sign-offs need two keys",
            s.key_name,
            other.as_str()
        ));
    }
    Ok(key.encode())
}

/// TRUST-3 for a seal's checkpoint: the key must be one of the lineage's
/// frozen operator keys. Returns why not.
pub fn check_seal_signer(l: &LineageState, key: &VerifierKey) -> Result<(), String> {
    let Some(plan) = &l.plan else {
        return Err(format!(
            "lineage {:?} was frozen as v1 and lists no operator keys: seal without --key",
            l.frozen.lineage
        ));
    };
    let listed = role_keys(plan, SignOffRole::Operator)
        .iter()
        .any(|k| k == key);
    if !listed {
        return Err(format!(
            "key {}+{:08x} is not one of the frozen operator keys of lineage {:?}",
            key.name(),
            key.key_id(),
            l.frozen.lineage
        ));
    }
    Ok(())
}

/// The operator keys each v2 lineage lists, with the seq it was frozen at
/// (TRUST-5).
pub type OperatorLists = Vec<(u64, Vec<VerifierKey>)>;

/// The operator lists of a replayed state.
pub fn operator_lists(state: &State) -> OperatorLists {
    state
        .lineages
        .values()
        .filter_map(|l| {
            let plan = l.plan.as_ref()?;
            let keys = crate::method::trust::role_keys(plan, SignOffRole::Operator);
            Some((l.frozen_seq, keys))
        })
        .collect()
}

/// The operator keys in force at `seq` (TRUST-5): those every v2 lineage
/// frozen before it lists. Empty while no manifest lists operators: there
/// is then no list to hold a checkpoint's signer to.
pub fn operators_at(lists: &OperatorLists, seq: u64) -> Vec<VerifierKey> {
    let mut keys: Vec<VerifierKey> = Vec::new();
    for (_, listed) in lists.iter().filter(|(frozen, _)| *frozen < seq) {
        for k in listed {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
    }
    keys
}

/// Refuses a checkpoint signer the frozen manifests do not list as an
/// operator (TRUST-5), naming the key and the listed ones.
pub fn check_checkpoint_signer(state: &State, key: &VerifierKey) -> crate::error::Result<()> {
    let listed = operators_at(&operator_lists(state), u64::MAX);
    if listed.is_empty() || listed.contains(key) {
        return Ok(());
    }
    let names: Vec<String> = listed.iter().map(|k| k.encode()).collect();
    Err(crate::method::refuse(
        Rule::Trust5,
        format!(
            "the key {} is not an operator key a frozen manifest lists ({}); a checkpoint it signs would not count, nothing was appended",
            key.encode(),
            names.join(", ")
        ),
    ))
}

/// The checkpoint records signed by a key the operator list in force at
/// their seq does not list (TRUST-5): they do not count, `verify` fails on
/// them and no verb presents one as the signed checkpoint.
pub fn unlisted_signers(lists: &OperatorLists, derived: &Derived) -> Vec<tree::CheckpointProblem> {
    derived
        .checkpoints
        .iter()
        .filter_map(|c| {
            let signer = c.record.signer.as_deref()?;
            let listed = operators_at(lists, c.seq);
            let key = VerifierKey::parse(signer).ok();
            if listed.is_empty() || key.as_ref().is_some_and(|k| listed.contains(k)) {
                return None;
            }
            Some(tree::CheckpointProblem {
                seq: c.seq,
                detail: format!(
                    "signed by {signer}, a key no frozen manifest lists as an operator ({}): the checkpoint does not count",
                    Rule::Trust5
                ),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::examples::signer;

    #[test]
    fn the_sign_off_text_is_not_a_checkpoint() {
        let text = sign_off_text("l", SignOffRole::Reviewer, &"ab".repeat(32));
        assert_eq!(
            text,
            format!(
                "benchledger manifest sign-off v1\nlineage l\nrole reviewer\nmanifest_blake3 {}\n",
                "ab".repeat(32)
            )
        );
        assert!(crate::log::tlog::Checkpoint::parse(&text).is_err());
        let _ = signer("alice");
    }
}
