//! The pure AWS judgements of the gates, always compiled (no SDK, no
//! feature): what the SDK calls in `crate::gates::aws` measure is judged
//! here, so every rule is tested in the fast loop.
//!
//! - GATE-1: the one explicit identity selector of a manifest ([`Selector`],
//!   [`selector_label`], [`session_name`]), the endpoint overrides
//!   ([`check_endpoint`], [`Target`]) and the ambient variables ignored;
//!   the principal forms of an STS answer and their comparison with the
//!   frozen commitments ([`judge_identity`]);
//! - GATE-2: the vCPU quota formula ([`quota_numbers`]);
//! - GATE-3: the residue count before a batch ([`residue_observation`]);
//! - CLEAN-1..3: the exact run tags ([`RunTags`]), what is excluded (only
//!   the central host, by its instance id) and in which order residue is
//!   terminated ([`termination_plan`]);
//! - the observations the CLI appends, and [`AwsError`], one bounded line
//!   that never carries a credential ([`clean`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::schema::events::{
    CheckKind, CheckRecorded, CleanupAudited, FoundResource, GroupRef, IdentityChecked,
    QuotaChecked, Status,
};
use crate::schema::manifest::{self, CentralMode, Committed, ManifestFile, PrivateCommitments};
use crate::schema::rule::Rule;

pub use crate::limits::AWS_ERROR_BYTES_MAX;
pub use crate::limits::ENDPOINT_URL_BYTES_MAX;
pub use crate::limits::ROLE_SESSION_NAME_BYTES_MAX;

/// Instance states a residue query covers (CLEAN-1): every state but
/// `terminated`.
pub const LIVE_INSTANCE_STATES: [&str; 5] =
    ["pending", "running", "shutting-down", "stopping", "stopped"];
/// Instance states that count against the vCPU quota (GATE-2).
pub const QUOTA_INSTANCE_STATES: [&str; 2] = ["pending", "running"];

/// Ambient variables that the SDK's default chain would honour and this
/// module ignores. Their presence (never their values) is recorded.
pub const AMBIENT_VARIABLES: &[&str] = &[
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_CREDENTIAL_EXPIRATION",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ENDPOINT_URL",
    "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
    "AWS_ROLE_ARN",
    "AWS_ROLE_SESSION_NAME",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
    "AWS_EC2_METADATA_SERVICE_ENDPOINT",
    "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE",
    "AWS_EC2_METADATA_DISABLED",
    "AWS_USE_FIPS_ENDPOINT",
    "AWS_USE_DUALSTACK_ENDPOINT",
    "AWS_STS_REGIONAL_ENDPOINTS",
    "AWS_CA_BUNDLE",
    "AWS_MAX_ATTEMPTS",
    "AWS_RETRY_MODE",
    "AWS_SDK_UA_APP_ID",
];

/// The names, sorted, of the ambient AWS variables present among `names`
/// (anything in `AMBIENT_VARIABLES` or starting with `AWS_ENDPOINT_URL_`).
pub fn ambient_variables_present<I, S>(names: I) -> Vec<String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let set: BTreeSet<String> = names
        .into_iter()
        .filter(|n| {
            let n = n.as_ref();
            AMBIENT_VARIABLES.contains(&n) || n.starts_with("AWS_ENDPOINT_URL_")
        })
        .map(|n| n.as_ref().to_string())
        .collect();
    set.into_iter().collect()
}

/// Checks an endpoint override (`BENCHLEDGER_AWS_ENDPOINT_URL` or the IMDS
/// one): http(s)://, no user info, no whitespace, bounded.
pub fn check_endpoint(var: &str, url: &str) -> Result<String> {
    let bad = |why: &str| Error::input(format!("{var}: {why}"));
    if url.len() > ENDPOINT_URL_BYTES_MAX {
        return Err(bad(&format!(
            "{} bytes, over the limit of {ENDPOINT_URL_BYTES_MAX}",
            url.len()
        )));
    }
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or_else(|| bad("must start with http:// or https://"))?;
    if url.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err(bad("contains a space or control character"));
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.is_empty() {
        return Err(bad("has no host"));
    }
    if authority.contains('@') {
        return Err(bad("must not contain user info"));
    }
    Ok(url.trim_end_matches('/').to_string())
}

// ---------------------------------------------------------------------------
// GATE-1: the selector and where calls go
// ---------------------------------------------------------------------------

/// Where the AWS config and credentials files are.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProfileFiles {
    /// The config file (`[profile NAME]` sections).
    pub config: Option<PathBuf>,
    /// The credentials file (`[NAME]` sections).
    pub credentials: Option<PathBuf>,
}

impl ProfileFiles {
    /// The standard locations: `AWS_CONFIG_FILE` / `AWS_SHARED_CREDENTIALS_FILE`
    /// when given, else `HOME/.aws/config` and `HOME/.aws/credentials`.
    pub fn locate(
        config_var: Option<PathBuf>,
        credentials_var: Option<PathBuf>,
        home: Option<PathBuf>,
    ) -> ProfileFiles {
        let under_home = |f: &str| home.as_ref().map(|h| h.join(".aws").join(f));
        ProfileFiles {
            config: config_var.or_else(|| under_home("config")),
            credentials: credentials_var.or_else(|| under_home("credentials")),
        }
    }
}

/// The one explicit identity selector of a manifest (GATE-1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// A named profile, read from these files.
    Profile {
        /// The profile name (never `default`: refused at freeze).
        name: String,
        /// Where the files are.
        files: ProfileFiles,
    },
    /// STS AssumeRole of this role, from the instance profile's credentials.
    AssumeRole {
        /// The role ARN (from the private manifest).
        role_arn: String,
        /// The session name (fixed per lineage, so the principal is stable).
        session_name: String,
    },
    /// The host's instance profile (IMDSv2).
    InstanceProfile,
}

impl Selector {
    /// The selector of a frozen manifest. `role_arn` is the private
    /// manifest's, required when the manifest selects `assume_role`.
    pub fn of(m: &ManifestFile, role_arn: Option<&str>, files: ProfileFiles) -> Result<Selector> {
        let a = &m.aws;
        if let Some(name) = &a.profile {
            if name.is_empty() || name == "default" {
                return Err(Error::Refused {
                    rule: Rule::Gate1,
                    message: "aws.profile: a named profile other than \"default\" is required"
                        .into(),
                });
            }
            return Ok(Selector::Profile {
                name: name.clone(),
                files,
            });
        }
        if a.assume_role {
            let role_arn = role_arn.ok_or_else(|| {
                Error::input(
                    "aws.assume_role: the role ARN is in the private manifest; pass --private FILE",
                )
            })?;
            return Ok(Selector::AssumeRole {
                role_arn: role_arn.to_string(),
                session_name: session_name(&m.lineage),
            });
        }
        if a.instance_profile {
            return Ok(Selector::InstanceProfile);
        }
        Err(Error::Refused {
            rule: Rule::Gate1,
            message:
                "aws: no explicit identity selector (profile, assume_role or instance_profile)"
                    .into(),
        })
    }
}

/// The recorded form of a selector: `profile:NAME`, `role:<redacted ARN>`,
/// `instance_profile`.
pub fn selector_label(m: &ManifestFile, private: &PrivateCommitments) -> String {
    if let Some(p) = &m.aws.profile {
        format!("profile:{p}")
    } else if m.aws.assume_role {
        format!(
            "role:{}",
            private
                .role_arn
                .as_ref()
                .map_or("arn:…", |r| r.redacted.as_str())
        )
    } else {
        "instance_profile".into()
    }
}

/// `benchledger-<lineage>`, cut to the STS limit, in STS's character set.
pub fn session_name(lineage: &str) -> String {
    let mut s: String = format!("benchledger-{lineage}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "+=,.@-_".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    s.truncate(ROLE_SESSION_NAME_BYTES_MAX);
    s
}

/// Where calls go: the region and the endpoint overrides in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The manifest's region.
    pub region: String,
    /// Every AWS API call goes here instead of AWS (`BENCHLEDGER_AWS_ENDPOINT_URL`).
    pub endpoint: Option<String>,
    /// The instance metadata service, when not `IMDS_ENDPOINT_DEFAULT`.
    pub imds_endpoint: Option<String>,
}

impl Target {
    /// The `endpoint_override` recorded in observations: the AWS endpoint,
    /// and the IMDS one when that is overridden too.
    pub fn endpoint_override(&self) -> Option<String> {
        match (&self.endpoint, &self.imds_endpoint) {
            (None, None) => None,
            (Some(e), None) => Some(e.clone()),
            (e, Some(i)) => Some(format!("{}; imds={i}", e.as_deref().unwrap_or("(aws)"))),
        }
    }
}

/// A failed AWS call: what was called and what came back, one line,
/// bounded, never a credential.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AwsError(pub String);

impl From<AwsError> for Error {
    fn from(e: AwsError) -> Error {
        Error::io("aws", e.0)
    }
}

/// One line, at most `AWS_ERROR_BYTES_MAX` bytes, and never something
/// shaped like a credential.
pub fn clean(text: &str) -> String {
    let mut s: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if s.len() > AWS_ERROR_BYTES_MAX {
        let mut cut = AWS_ERROR_BYTES_MAX;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push('…');
    }
    match crate::schema::secrets::scan(&s) {
        Some(f) => format!(
            "<error text withheld: it looks like a credential ({})>",
            f.shape
        ),
        None => s,
    }
}

// ---------------------------------------------------------------------------
// GATE-1: the identity proof
// ---------------------------------------------------------------------------

/// What STS answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallerIdentity {
    pub account: String,
    /// The caller's ARN.
    pub arn: String,
}

/// The principal forms compared with the frozen principal: the ARN STS
/// answered and, for an assumed-role session
/// (`arn:P:sts::A:assumed-role/ROLE/SESSION`), its role ARN
/// (`arn:P:iam::A:role/ROLE`; STS drops a role path, so a role with a path
/// must be frozen in its session form).
pub fn principal_forms(arn: &str) -> Vec<String> {
    let mut out = vec![arn.to_string()];
    let parts: Vec<&str> = arn.splitn(6, ':').collect();
    if let [arn_, partition, "sts", "", account, resource] = parts.as_slice() {
        if let Some(rest) = resource.strip_prefix("assumed-role/") {
            if let Some((role, _session)) = rest.split_once('/') {
                out.push(format!("{arn_}:{partition}:iam::{account}:role/{role}"));
            }
        }
    }
    out
}

/// The prefix an [`AwsError`] carries when the queries would run under
/// another identity than the frozen one (GATE-1): a refusal, not a failed
/// call.
const IDENTITY_REFUSED: &str = "GATE-1: ";

/// GATE-1 before any quota or EC2 call: the identity the queries run as
/// must be the frozen one, in full with the private key, else by its
/// redacted account (a query under another account proves nothing).
/// Returns the redacted principal the queries run as.
pub fn queried_as_frozen(
    key: Option<&[u8; 32]>,
    frozen: &PrivateCommitments,
    id: &CallerIdentity,
) -> std::result::Result<String, AwsError> {
    let ok = match key {
        Some(k) => judge_identity(k, frozen, id).status == Status::Pass,
        None => manifest::redact_account(&id.account) == frozen.account.redacted,
    };
    if !ok {
        return Err(AwsError(format!(
            "{IDENTITY_REFUSED}the queries would run as {} ({}), not the frozen identity; run identity prove",
            manifest::redact_arn(&id.arn),
            manifest::redact_account(&id.account)
        )));
    }
    let forms = principal_forms(&id.arn);
    Ok(manifest::redact_arn(forms.last().unwrap_or(&id.arn)))
}

/// Whether `e` is [`queried_as_frozen`]'s refusal rather than a failed call.
pub fn is_identity_refusal(e: &AwsError) -> bool {
    e.0.starts_with(IDENTITY_REFUSED)
}

/// A failed identity check as an error: a mismatch is refused by GATE-1
/// (exit 3, before any quota or EC2 call); a failed call is exit 4.
pub fn identity_error(e: AwsError) -> Error {
    match e.0.strip_prefix(IDENTITY_REFUSED) {
        Some(m) => Error::Refused {
            rule: Rule::Gate1,
            message: m.to_string(),
        },
        None => e.into(),
    }
}

/// The comparison of an STS answer with the frozen commitments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentityVerdict {
    /// The answered account, committed with the private key and redacted.
    pub account: Committed,
    /// The answered principal (the form that matched, else the raw ARN).
    pub principal: Committed,
    /// Pass when both equal the frozen commitments.
    pub status: Status,
    /// What differs, if anything (names fields, never values).
    pub error: Option<String>,
}

/// Recomputes the commitments of what STS answered with the private key
/// and compares them with the frozen ones (GATE-1).
pub fn judge_identity(
    key: &[u8; 32],
    frozen: &PrivateCommitments,
    id: &CallerIdentity,
) -> IdentityVerdict {
    let account = Committed {
        commitment: manifest::commit(key, "aws.account", &id.account),
        redacted: manifest::redact_account(&id.account),
    };
    let forms = principal_forms(&id.arn);
    let matched = forms
        .iter()
        .find(|f| manifest::commit(key, "aws.principal_arn", f) == frozen.principal_arn.commitment);
    let shown = matched.unwrap_or(&forms[0]);
    let principal = Committed {
        commitment: manifest::commit(key, "aws.principal_arn", shown),
        redacted: manifest::redact_arn(shown),
    };
    let mut problems = Vec::new();
    if account.commitment != frozen.account.commitment {
        problems.push("the account differs from the frozen aws.account");
    }
    if matched.is_none() {
        problems.push("the principal differs from the frozen aws.principal_arn");
    }
    IdentityVerdict {
        account,
        principal,
        status: if problems.is_empty() {
            Status::Pass
        } else {
            Status::Fail
        },
        error: (!problems.is_empty()).then(|| format!("{}: {}", Rule::Gate1, problems.join("; "))),
    }
}

/// The `identity_checked` observation of a proof attempt.
pub fn identity_observation(
    lineage: &str,
    selector: &str,
    target: &Target,
    ambient: Vec<String>,
    outcome: &Result<IdentityVerdict, AwsError>,
) -> IdentityChecked {
    let (account, principal, status, error) = match outcome {
        Ok(v) => (
            Some(v.account.clone()),
            Some(v.principal.clone()),
            v.status,
            v.error.clone(),
        ),
        Err(e) => (None, None, Status::Fail, Some(e.0.clone())),
    };
    IdentityChecked {
        lineage: lineage.to_string(),
        selector: selector.to_string(),
        region: target.region.clone(),
        endpoint_override: target.endpoint_override(),
        ambient_variables_ignored: ambient,
        account,
        principal,
        status,
        error,
    }
}

// ---------------------------------------------------------------------------
// GATE-2: the vCPU quota
// ---------------------------------------------------------------------------

/// One instance as DescribeInstances answered it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveInstance {
    pub id: String,
    /// Its type (`m5.large`).
    pub instance_type: String,
    pub state: String,
    pub tags: BTreeMap<String, String>,
}

/// The GATE-2 numbers, in vCPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaNumbers {
    /// The quota `L-1216C47A` (`EC2_VCPU_QUOTA_CODE`).
    pub quota_vcpu: u64,
    /// Regional use: running + pending.
    pub used_vcpu: u64,
    /// quota - used, 0 when used exceeds quota.
    pub available_vcpu: u64,
    /// slots to fill x sandbox vCPU + headroom (+ central vCPU when it is
    /// still to be provisioned).
    pub required_vcpu: u64,
    /// Whether a live central host was found (its vCPUs are in `used`).
    pub central_live: bool,
}

impl QuotaNumbers {
    /// Pass when available >= required.
    pub fn status(&self) -> Status {
        if self.available_vcpu >= self.required_vcpu {
            Status::Pass
        } else {
            Status::Fail
        }
    }
}

/// Whether one of `live` (pending/running instances) is the central host:
/// the manifest's instance id, or the run tag with the central role tag.
pub fn central_is_live(m: &ManifestFile, live: &[LiveInstance]) -> bool {
    live.iter().any(|i| {
        QUOTA_INSTANCE_STATES.contains(&i.state.as_str())
            && (m.central.instance_id.as_deref() == Some(i.id.as_str())
                || (i.tags.get(&m.tags.run_key) == Some(&m.tags.run_value)
                    && i.tags.get(&m.tags.role_key) == Some(&m.central.role_tag_value)))
    })
}

/// The GATE-2 arithmetic for a wave of `slots` sandboxes (RUN-1; 1 to the
/// frozen concurrency). `live` are the region's pending and running
/// instances, the run's own live sandboxes among them; `vcpus` maps their
/// types to vCPUs (an unknown type is an error: the use is never
/// under-counted).
pub fn quota_numbers(
    m: &ManifestFile,
    quota_vcpu: u64,
    live: &[LiveInstance],
    vcpus: &BTreeMap<String, u64>,
    slots: u32,
    central_to_come: bool,
) -> Result<QuotaNumbers, AwsError> {
    let mut used = 0u64;
    for i in live
        .iter()
        .filter(|i| QUOTA_INSTANCE_STATES.contains(&i.state.as_str()))
    {
        let v = vcpus.get(&i.instance_type).ok_or_else(|| {
            AwsError(format!(
                "no vcpu count for instance type {:?} of {}",
                i.instance_type, i.id
            ))
        })?;
        used = used.saturating_add(*v);
    }
    let central_live = central_is_live(m, live);
    let slots = slots.clamp(1, m.limits.concurrency.max(1));
    let mut required = u64::from(slots)
        .saturating_mul(m.sandbox.vcpu)
        .saturating_add(m.aws.quota_headroom_vcpu);
    // GATE-2: the central host's vCPUs only while it is still to be
    // provisioned (no observation of it recorded; `method::central`) and
    // not already live in the region's use.
    if m.central.mode == CentralMode::Provision && central_to_come && !central_live {
        required = required.saturating_add(m.central.vcpu);
    }
    Ok(QuotaNumbers {
        quota_vcpu,
        used_vcpu: used,
        available_vcpu: quota_vcpu.saturating_sub(used),
        required_vcpu: required,
        central_live,
    })
}

/// The `quota_checked` observation.
pub fn quota_observation(
    m: &ManifestFile,
    region: &str,
    outcome: &Result<QuotaNumbers, AwsError>,
) -> QuotaChecked {
    let (n, status, error) = match outcome {
        Ok(n) => (*n, n.status(), None),
        Err(e) => (
            QuotaNumbers {
                quota_vcpu: 0,
                used_vcpu: 0,
                available_vcpu: 0,
                required_vcpu: 0,
                central_live: false,
            },
            Status::Fail,
            Some(e.0.clone()),
        ),
    };
    QuotaChecked {
        lineage: m.lineage.clone(),
        region: region.to_string(),
        quota_code: m.aws.quota_code.clone(),
        quota_vcpu: n.quota_vcpu,
        used_vcpu: n.used_vcpu,
        available_vcpu: n.available_vcpu,
        required_vcpu: n.required_vcpu,
        status,
        error,
    }
}

// ---------------------------------------------------------------------------
// GATE-3 and CLEAN-1..3: residue
// ---------------------------------------------------------------------------

/// The live run-tagged sandboxes split into residue and the ones a started,
/// non-terminal case of the group owns (RUN-1): a sandbox is owned when its
/// trial tag names one of `owned_trials`. Both lists of ids are sorted.
pub fn split_owned(
    m: &ManifestFile,
    live: &[LiveInstance],
    owned_trials: &BTreeSet<String>,
) -> Residue {
    let mut r = Residue::default();
    for i in live {
        let owned = i
            .tags
            .get(&m.tags.trial_key)
            .is_some_and(|t| owned_trials.contains(t));
        if owned {
            r.owned.push(i.id.clone());
        } else {
            r.residue.push(i.id.clone());
        }
    }
    r.residue.sort();
    r.residue.dedup();
    r.owned.sort();
    r.owned.dedup();
    r
}

/// What a residue query found (GATE-3, RUN-1).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Residue {
    /// Run-tagged sandboxes no running case of the group owns.
    pub residue: Vec<String>,
    /// Run-tagged sandboxes of the group's running cases.
    pub owned: Vec<String>,
}

/// The residue observation: pass when the exact run-tag query found zero
/// live sandboxes that no running case of the group owns. `outcome` is
/// what it found, or why the query failed. Target: the run tag filter
/// (`key=value`). Details: `sandbox_count` and `instance_ids`
/// (comma-separated) of the residue, `owned_count` and `owned_instance_ids`
/// of the running cases' sandboxes, `region`, `identity`, or `error`.
pub fn residue_observation(
    lineage: &str,
    group: &str,
    run_tag: &str,
    region: &str,
    identity: &str,
    outcome: &Result<Residue, String>,
) -> CheckRecorded {
    let mut d = BTreeMap::new();
    d.insert("region".into(), region.to_string());
    d.insert("identity".into(), identity.to_string());
    let status = match outcome {
        Ok(found) => {
            let ids = &found.residue;
            d.insert("sandbox_count".into(), ids.len().to_string());
            d.insert("instance_ids".into(), ids.join(","));
            d.insert("owned_count".into(), found.owned.len().to_string());
            d.insert("owned_instance_ids".into(), found.owned.join(","));
            if ids.is_empty() {
                Status::Pass
            } else {
                Status::Fail
            }
        }
        Err(e) => {
            d.insert("error".into(), e.clone());
            Status::Fail
        }
    };
    CheckRecorded {
        lineage: lineage.to_string(),
        group: Some(group.to_string()),
        check: CheckKind::Residue,
        target: run_tag.to_string(),
        status,
        details: d,
    }
}

/// The exact tag filters of a run: the run tag, and the role tag with the
/// sandbox and central role values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunTags {
    /// Run tag key.
    pub run_key: String,
    /// Run tag value.
    pub run_value: String,
    /// Role tag key.
    pub role_key: String,
    /// Role values searched (sandbox first, then the central host's).
    pub role_values: Vec<String>,
}

impl RunTags {
    /// The audit's tags (sandbox and central roles).
    pub fn of(m: &ManifestFile) -> RunTags {
        let t = &m.tags;
        let mut role_values = vec![t.sandbox_role_value.clone()];
        if m.central.role_tag_value != t.sandbox_role_value {
            role_values.push(m.central.role_tag_value.clone());
        }
        RunTags {
            run_key: t.run_key.clone(),
            run_value: t.run_value.clone(),
            role_key: t.role_key.clone(),
            role_values,
        }
    }

    /// The sandbox-only tags (monitor and residue count).
    pub fn sandboxes(m: &ManifestFile) -> RunTags {
        RunTags {
            role_values: vec![m.tags.sandbox_role_value.clone()],
            ..RunTags::of(m)
        }
    }

    /// As recorded: `key=value` per filter, alternatives joined by `|`.
    pub fn recorded(&self) -> Vec<String> {
        vec![
            format!("{}={}", self.run_key, self.run_value),
            format!("{}={}", self.role_key, self.role_values.join("|")),
        ]
    }
}

/// Whether a found resource is the retained central host, which is excluded
/// only by the manifest's instance id (CLEAN-2): the instance itself, or a
/// volume or interface found attached to it.
pub fn is_excluded(r: &FoundResource, central_instance_id: Option<&str>) -> bool {
    r.is_central(central_instance_id)
}

/// Pass when everything found is excluded (CLEAN-2's zero tail).
pub fn audit_status(found: &[FoundResource], central_instance_id: Option<&str>) -> Status {
    if found.iter().all(|r| is_excluded(r, central_instance_id)) {
        Status::Pass
    } else {
        Status::Fail
    }
}

/// The `cleanup_audited` observation. `central` is the one instance it
/// may exclude (CLEAN-2: the frozen id of a reused host, or the recorded id
/// of a provisioned one, `method::central::excluded_id`). `identity` is the
/// redacted principal the queries ran as; on a failed query `found` is
/// empty and `error` says why.
pub fn audit_observation(
    group: GroupRef,
    m: &ManifestFile,
    central: Option<String>,
    region: &str,
    identity: &str,
    tracked: &BTreeSet<String>,
    outcome: &Result<Vec<FoundResource>, AwsError>,
) -> CleanupAudited {
    let (found, status, error) = match outcome {
        Ok(f) => (f.clone(), audit_status(f, central.as_deref()), None),
        Err(e) => (Vec::new(), Status::Fail, Some(e.0.clone())),
    };
    CleanupAudited {
        group,
        region: region.to_string(),
        identity: identity.to_string(),
        filters: RunTags::of(m).recorded(),
        tracked_instance_ids: tracked.iter().cloned().collect(),
        found,
        excluded_central_instance_id: central,
        status,
        error,
    }
}

/// One terminate or delete call and its answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Termination {
    /// The resource acted on.
    pub resource: FoundResource,
    /// `TerminateInstances`, `DeleteVolume` or `DeleteNetworkInterface`.
    pub action: String,
    /// `ok: <state>` or `error: <code>: <message>`.
    pub answer: String,
}

/// What `terminate` may act on: the audit's resources minus the excluded
/// central host, instances first, then volumes, then interfaces.
pub fn termination_plan(
    found: &[FoundResource],
    central_instance_id: Option<&str>,
) -> Vec<FoundResource> {
    let rank = |r: &FoundResource| match r.resource.as_str() {
        "instance" => 0,
        "volume" => 1,
        _ => 2,
    };
    let mut plan: Vec<FoundResource> = found
        .iter()
        .filter(|r| !is_excluded(r, central_instance_id))
        .cloned()
        .collect();
    plan.sort_by_key(|r| (rank(r), r.id.clone()));
    plan
}

#[cfg(test)]
#[path = "rules_tests.rs"]
pub(crate) mod tests;
