//! The AWS session of a lineage's one explicit selector, shared by
//! `identity`, `quota`, `cleanup` and `check residue` (feature `aws`).

use std::path::PathBuf;

use crate::error::Error;
use crate::gates::aws::Session;
use crate::gates::rules::{self, AwsError, Selector, Target};
use crate::method::freeze::PrivateToml;
use crate::method::projections::LineageState;

/// The endpoint override of every AWS call (never read from a manifest).
pub const ENDPOINT_VAR: &str = "BENCHLEDGER_AWS_ENDPOINT_URL";

/// The instance metadata endpoint override (tests; default 169.254.169.254).
pub const IMDS_ENDPOINT_VAR: &str = "BENCHLEDGER_AWS_IMDS_ENDPOINT_URL";

pub(crate) fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// The endpoint overrides in force, checked.
pub(crate) fn target(region: &str) -> anyhow::Result<Target> {
    let var = |name: &str| -> anyhow::Result<Option<String>> {
        match std::env::var(name) {
            Ok(v) if !v.is_empty() => Ok(Some(rules::check_endpoint(name, &v)?)),
            Ok(_) | Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(_)) => {
                Err(Error::input(format!("{name}: not utf-8")).into())
            }
        }
    };
    Ok(Target {
        region: region.to_string(),
        endpoint: var(ENDPOINT_VAR)?,
        imds_endpoint: var(IMDS_ENDPOINT_VAR)?,
    })
}

/// The private file checked against the frozen commitments: its role
/// ARN and commitment key.
pub(crate) struct Private {
    pub(crate) role_arn: Option<String>,
    pub(crate) key: [u8; 32],
}

pub(crate) fn read_private(l: &LineageState, path: &std::path::Path) -> anyhow::Result<Private> {
    let text = crate::cli::common::read_text(path)?;
    let source = path.display().to_string();
    crate::method::freeze::check_private(&l.frozen.manifest, &text, &source)?;
    let p: PrivateToml =
        toml::from_str(&text).map_err(|e| Error::input(format!("{source}: {}", e.message())))?;
    Ok(Private {
        role_arn: p.aws.role_arn.clone(),
        key: crate::schema::manifest::commitment_key(&p.commitment_key, &source)?,
    })
}

/// The session of the lineage's one selector.
pub(crate) fn open_session(
    l: &LineageState,
    private: Option<&Private>,
) -> anyhow::Result<(Session, Target)> {
    let m = &l.frozen.manifest.public;
    let files = rules::ProfileFiles::locate(
        env_path("AWS_CONFIG_FILE"),
        env_path("AWS_SHARED_CREDENTIALS_FILE"),
        env_path("HOME"),
    );
    let selector = Selector::of(m, private.and_then(|p| p.role_arn.as_deref()), files)?;
    let target = target(&m.aws.region)?;
    let session = Session::open(&selector, &target)?;
    Ok((session, target))
}

pub(crate) fn ambient() -> Vec<String> {
    rules::ambient_variables_present(std::env::vars_os().filter_map(|(k, _)| k.into_string().ok()))
}

/// The redacted principal the queries run as, after checking it is the
/// frozen identity: in full with the private key, else by the redacted
/// account (GATE-1: a query under another account proves nothing).
pub(crate) fn queried_identity(
    session: &Session,
    l: &LineageState,
    private: Option<&Private>,
) -> Result<String, AwsError> {
    let id = session.caller_identity()?;
    rules::queried_as_frozen(private.map(|p| &p.key), &l.frozen.manifest.private, &id)
}

pub(crate) use rules::identity_error;

pub(crate) fn optional_private(
    l: &LineageState,
    p: &Option<PathBuf>,
) -> anyhow::Result<Option<Private>> {
    p.as_ref().map(|p| read_private(l, p)).transpose()
}
