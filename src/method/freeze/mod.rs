//! Freezing a manifest (FREEZE-1..8, CLASS-1..5): the operator's two TOML
//! files in, the stored form the ledger records out.
//!
//! Two files: the public manifest (`manifest.toml`) and a private one
//! (`manifest.private.toml`) with the values that must not be published
//! (account id, principal ARN, role ARN, where each secret lives) and a
//! commitment key. The ledger stores the public manifest plus keyed-BLAKE3
//! commitments and redacted forms of the private values, so a ledger can be
//! published and a holder of the private file can still check every value.
//!
//! - `input`: the TOML input types and their conversion into the stored
//!   types of `crate::schema::manifest`.
//! - `validate`: every check, input errors apart from rule refusals.
//! - here: [`freeze`], [`check_private`], the commitments of the private
//!   values, the task-manifest hash, the lineage key and the control key.
//!
//! Everything here is pure: the CLI reads the files and passes their text in.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::schema::events::{Event, ManifestFrozenV2, ManifestFrozenV3};
use crate::schema::manifest::{
    commit, redact_account, redact_arn, redact_location, CentralLaunch, Committed, ExcludedTask,
    Harbor, Manifest, ManifestFile, PrivateCommitments, Tier, Witnessing,
};
use crate::schema::rule::Rule;

mod input;
pub mod plan;
pub mod secrets;
mod validate;

pub use input::*;
use validate::{refused, validate, validate_private};

/// The manifest format version this build reads.
pub const MANIFEST_VERSION: u16 = 2;
pub use crate::limits::GROUPS_MAX;
pub use crate::limits::LABEL_BYTES_MAX;
pub use crate::limits::MANIFEST_FILE_BYTES_MAX;
pub use crate::limits::TASKS_MAX;
pub use crate::limits::TRIALS_MAX;

/// A manifest that passed every check, with its plan and its derived
/// hashes and keys: what `manifest freeze` appends (`manifest_frozen.v2`,
/// or `.v3` when it also freezes how the central host is launched). It
/// reads as the v2 record.
#[derive(Debug, Clone, PartialEq)]
pub struct Frozen {
    /// The v2 record (its hash covers the launch when there is one).
    pub v2: ManifestFrozenV2,
    /// `[central.launch]`, when given.
    pub central_launch: Option<CentralLaunch>,
    /// `[[cases.excluded]]`: tasks left out before the freeze (CLASS-1).
    pub excluded_tasks: Vec<ExcludedTask>,
    /// `[witnessing]`: the frozen witnesses and quorum (TRUST-6).
    pub witnessing: Option<Witnessing>,
}

impl Frozen {
    /// The event that records it.
    pub fn into_event(self) -> Event {
        if self.central_launch.is_none()
            && self.excluded_tasks.is_empty()
            && self.witnessing.is_none()
        {
            return Event::ManifestFrozenV2(Box::new(self.v2));
        }
        Event::ManifestFrozenV3(Box::new(ManifestFrozenV3::join(
            self.v2,
            self.central_launch,
            self.excluded_tasks,
            self.witnessing,
        )))
    }
}

impl From<ManifestFrozenV2> for Frozen {
    fn from(v2: ManifestFrozenV2) -> Frozen {
        Frozen {
            v2,
            central_launch: None,
            excluded_tasks: Vec::new(),
            witnessing: None,
        }
    }
}

impl std::ops::Deref for Frozen {
    type Target = ManifestFrozenV2;
    fn deref(&self) -> &ManifestFrozenV2 {
        &self.v2
    }
}

impl std::ops::DerefMut for Frozen {
    fn deref_mut(&mut self) -> &mut ManifestFrozenV2 {
        &mut self.v2
    }
}

/// One manifest file parsed as `T`: bounded, and toml's message on one
/// line with any credential-shaped text withheld.
fn parse_toml<T: serde::de::DeserializeOwned>(text: &str, source: &str) -> Result<T> {
    if text.len() > MANIFEST_FILE_BYTES_MAX {
        return Err(Error::input(format!(
            "{source}: {} bytes, over the limit of {MANIFEST_FILE_BYTES_MAX}",
            text.len()
        )));
    }
    toml::from_str(text).map_err(|e| {
        // toml's message names the line, column and key; keep it on one line.
        let msg = e
            .to_string()
            .replace('\n', " ")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        Error::input(crate::schema::secrets::withhold(&format!(
            "{source}: {msg}"
        )))
    })
}

/// Validates both files and computes everything `manifest freeze` records.
/// Format problems are input errors (exit 2); violations of the method are
/// refusals naming the rule (exit 3). Pure: the caller reads the files.
pub fn freeze(
    public_text: &str,
    public_source: &str,
    private_text: &str,
    private_source: &str,
) -> Result<Frozen> {
    let public: ManifestToml = parse_toml(public_text, public_source)?;
    let private: PrivateToml = parse_toml(private_text, private_source)?;
    let (public, plan, central_launch, excluded, witnessing) = public.split();
    validate(&public, public_source)?;
    let central_launch = validate::central_launch(&public, central_launch, public_source)?;
    let excluded_tasks = validate::excluded_tasks(&public, excluded, public_source)?;
    let plan = plan::plan(plan, &public, public_source)?;
    let witnessing = plan::witnessing(witnessing, &plan, public_source)?;
    let key = validate_private(&public, &private, private_source)?;
    let commitments = commit_private(&key, &public, &private);
    refuse_private_values_in_public(&public, &private, public_source)?;
    let manifest = Manifest {
        public,
        private: commitments,
    };
    // The v2 manifest hash covers the manifest and its plan; v3's the
    // central launch and excluded tasks too, and its witnessing when given.
    let encoded = if let Some(w) = &witnessing {
        crate::log::codec::encode(&(&manifest, &plan, &central_launch, &excluded_tasks, w))
    } else if central_launch.is_none() && excluded_tasks.is_empty() {
        crate::log::codec::encode(&(&manifest, &plan))
    } else {
        crate::log::codec::encode(&(&manifest, &plan, &central_launch, &excluded_tasks))
    }
    .map_err(|e| Error::input(e.to_string()))?;
    let v2 = ManifestFrozenV2 {
        lineage: manifest.public.lineage.clone(),
        manifest_blake3: hex::encode(blake3::hash(&encoded).as_bytes()),
        source_file_blake3: hex::encode(blake3::hash(public_text.as_bytes()).as_bytes()),
        task_manifest_blake3: task_manifest_blake3(&manifest.public),
        lineage_key: lineage_key(&manifest.public),
        control_key: control_key(&manifest.public),
        manifest,
        plan,
    };
    Ok(Frozen {
        v2,
        central_launch,
        excluded_tasks,
        witnessing,
    })
}

/// FREEZE-4: no label, name or path of the public manifest may carry a
/// private value.
fn refuse_private_values_in_public(
    public: &ManifestFile,
    private: &PrivateToml,
    source: &str,
) -> Result<()> {
    let public_json = serde_json::to_string(public).map_err(|e| Error::input(e.to_string()))?;
    for (what, value) in [
        ("account id", &private.aws.account),
        ("principal arn", &private.aws.principal_arn),
    ] {
        if public_json.contains(value.as_str()) {
            return Err(refused(
                Rule::Freeze4,
                source,
                "(any)",
                format!("the public manifest contains the private {what}; labels and names carry no account id"),
            ));
        }
    }
    Ok(())
}

/// A keyed hash (BLAKE3 derive_key under `context`) of the canonical
/// encoding of `value`, hex.
fn derive(context: &str, value: &impl Serialize) -> String {
    // Manifest parts are plain structs: encoding cannot fail.
    let bytes = crate::log::codec::encode(value).expect("manifest parts encode");
    hex::encode(blake3::derive_key(context, &bytes))
}

/// BLAKE3 over the ordered tasks with content hashes, the trial identities
/// and the canary identities (FREEZE-1, CLASS-3).
pub fn task_manifest_blake3(m: &ManifestFile) -> String {
    derive(
        "benchledger v1 task manifest",
        &(&m.cases.trials, &m.cases.tasks, &m.cases.canaries),
    )
}

/// The lineage key (FREEZE-5): benchmark + task/trial manifest + Harbor and
/// Terminus config + every route + BitRouter software + sandbox shape +
/// policy-state lineage (the shared policy database) + prices + limits +
/// ordered target groups.
pub fn lineage_key(m: &ManifestFile) -> String {
    let policy_db: Vec<&str> = m
        .groups
        .iter()
        .filter(|g| g.name.starts_with('r'))
        .map(|g| g.db_path.as_str())
        .collect();
    derive(
        "benchledger v1 lineage key",
        &(
            &m.benchmark,
            task_manifest_blake3(m),
            &m.harbor,
            &m.software,
            &m.routes,
            (&m.sandbox, &m.aws.region),
            policy_db,
            &m.prices,
            &m.limits,
            m.group_names(),
        ),
    )
}

/// The control key (FREEZE-6): benchmark + exact case identities + Harbor
/// and Terminus config + the strong route + sandbox shape (AMI, type,
/// region, network). It leaves out the policy software, so many policy
/// revisions reuse one control.
pub fn control_key(m: &ManifestFile) -> String {
    // The Harbor/Terminus config without its run-scoped jobs directory:
    // FREEZE-4 makes that path new per lineage, so keeping it would make
    // every control key unique and reuse (LINEAGE-6) impossible.
    let harbor = Harbor {
        jobs_dir: String::new(),
        ..m.harbor.clone()
    };
    derive(
        "benchledger v1 control key",
        &(
            &m.benchmark,
            (&m.cases.trials, &m.cases.tasks),
            &harbor,
            &m.software.harbor_version,
            &m.software.terminus_version,
            m.route(Tier::Strong),
            (
                &m.sandbox.ami,
                &m.sandbox.instance_type,
                &m.sandbox.network,
                &m.aws.region,
            ),
        ),
    )
}

/// `value` committed under `key` as `field`, with its redacted form.
fn committed(key: &[u8; 32], field: &str, value: &str, redacted: String) -> Committed {
    Committed {
        commitment: commit(key, field, value),
        redacted,
    }
}

/// The commitments and redacted forms of the private values, under `key`:
/// the account, the principal ARN, the role ARN and the secret location of
/// each route's tier. The private file passed [`validate_private`].
fn commit_private(
    key: &[u8; 32],
    public: &ManifestFile,
    private: &PrivateToml,
) -> PrivateCommitments {
    let aws = &private.aws;
    let secret_locations: BTreeMap<Tier, Committed> = public
        .routes
        .iter()
        .map(|route| {
            let location = private
                .secret_locations
                .get(&route.tier)
                .expect("validate_private found a location for every route");
            let field = format!("secret_location.{:?}", route.tier);
            let redacted = redact_location(location);
            (route.tier, committed(key, &field, location, redacted))
        })
        .collect();
    PrivateCommitments {
        account: committed(
            key,
            "aws.account",
            &aws.account,
            redact_account(&aws.account),
        ),
        principal_arn: committed(
            key,
            "aws.principal_arn",
            &aws.principal_arn,
            redact_arn(&aws.principal_arn),
        ),
        role_arn: aws
            .role_arn
            .as_ref()
            .map(|arn| committed(key, "aws.role_arn", arn, redact_arn(arn))),
        secret_locations,
    }
}

/// The private file checked against `frozen` and committed again with its
/// own key, for [`check_private`].
fn recommit(frozen: &Manifest, private_text: &str, source: &str) -> Result<PrivateCommitments> {
    let private: PrivateToml = parse_toml(private_text, source)?;
    let key = validate_private(&frozen.public, &private, source)?;
    Ok(commit_private(&key, &frozen.public, &private))
}

/// Checks every commitment of a frozen manifest against a private file.
/// Returns the fields checked, or the first that differs.
pub fn check_private(frozen: &Manifest, private_text: &str, source: &str) -> Result<Vec<String>> {
    let again = recommit(frozen, private_text, source)?;
    let mut checked = vec!["aws.account".to_string(), "aws.principal_arn".to_string()];
    let pairs = [
        ("aws.account", &frozen.private.account, &again.account),
        (
            "aws.principal_arn",
            &frozen.private.principal_arn,
            &again.principal_arn,
        ),
    ];
    for (f, a, b) in pairs {
        if a != b {
            return Err(Error::Refused {
                rule: Rule::Freeze2,
                message: format!("{source}: field {f}: does not match the frozen commitment"),
            });
        }
    }
    if frozen.private.role_arn != again.role_arn {
        return Err(Error::Refused {
            rule: Rule::Freeze2,
            message: format!("{source}: field aws.role_arn: does not match the frozen commitment"),
        });
    }
    if frozen.private.role_arn.is_some() {
        checked.push("aws.role_arn".into());
    }
    for (tier, c) in &frozen.private.secret_locations {
        if again.secret_locations.get(tier) != Some(c) {
            return Err(Error::Refused { rule: Rule::Freeze2, message: format!("{source}: field secret_locations.{tier:?}: does not match the frozen commitment") });
        }
        checked.push(format!(
            "secret_locations.{}",
            format!("{tier:?}").to_lowercase()
        ));
    }
    Ok(checked)
}

#[cfg(test)]
mod tests;
