//! A named profile, resolved from the config and credentials files alone
//! (no environment, no default file location) into a [`ProfileChain`],
//! before any call: what would read ambient state or run a program is
//! refused (rule GATE-1).

use std::path::PathBuf;

use aws_credential_types::Credentials;

use super::{PROFILE_CHAIN_MAX, PROFILE_FILE_BYTES_MAX};
use crate::error::{Error, Result};
use crate::gates::rules::ProfileFiles;
use crate::schema::rule::Rule;

/// How a profile gets its credentials, resolved before any call.
#[derive(Debug, Clone, PartialEq)]
pub enum ProfileChain {
    /// Static keys in the profile (`Credentials` never prints its secret).
    Static(Credentials),
    /// `role_arn`, assumed from a source.
    AssumeRole {
        role_arn: String,
        /// `role_session_name`, or a fixed default.
        session_name: String,
        /// `external_id`, if any.
        external_id: Option<String>,
        /// Where the source credentials come from.
        source: Box<ProfileChain>,
    },
    /// `credential_source = Ec2InstanceMetadata`.
    InstanceMetadata,
}

fn gate1(message: String) -> Error {
    Error::Refused {
        rule: Rule::Gate1,
        message,
    }
}

fn read_profile_file(path: &Option<PathBuf>) -> Result<String> {
    let Some(path) = path else {
        return Ok(String::new());
    };
    // A missing file is an empty one (as the SDK reads it); anything else
    // is read through the bounded reader: a FIFO or a device is refused at
    // once, never read.
    if let Err(e) = std::fs::metadata(path) {
        if e.kind() == std::io::ErrorKind::NotFound {
            return Ok(String::new());
        }
    }
    let bytes = crate::error::read_regular(path, PROFILE_FILE_BYTES_MAX as u64)?;
    String::from_utf8(bytes).map_err(|_| Error::input(format!("{}: not utf-8", path.display())))
}

/// Reads the profile files and resolves profile `name` into a chain, with
/// no environment and no default file location: refusals (rule GATE-1)
/// name the profile and the files, never a value.
pub fn resolve_profile(name: &str, files: &ProfileFiles) -> Result<ProfileChain> {
    let config = read_profile_file(&files.config)?;
    let credentials = read_profile_file(&files.credentials)?;
    resolve_profile_text(name, &config, &credentials, &describe_files(files))
}

fn describe_files(files: &ProfileFiles) -> String {
    let show = |p: &Option<PathBuf>| {
        p.as_ref()
            .map_or("(none)".into(), |p| p.display().to_string())
    };
    format!(
        "config {} and credentials {}",
        show(&files.config),
        show(&files.credentials)
    )
}

/// `resolve_profile` on file contents (`where_` names them in messages).
#[allow(deprecated)]
pub fn resolve_profile_text(
    name: &str,
    config: &str,
    credentials: &str,
    where_: &str,
) -> Result<ProfileChain> {
    use aws_config::profile::profile_file::{ProfileFileKind, ProfileFiles as SdkFiles};
    use aws_types::os_shim_internal::{Env, Fs};
    let files = SdkFiles::builder()
        .with_contents(ProfileFileKind::Config, config)
        .with_contents(ProfileFileKind::Credentials, credentials)
        .build();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .map_err(|e| Error::io("start the async runtime", e))?;
    let set = rt
        .block_on(aws_config::profile::load(
            &Fs::from_slice(&[]),
            &Env::from_slice(&[]),
            &files,
            Some(name.to_string().into()),
        ))
        .map_err(|e| Error::input(format!("aws profile files ({where_}): {e}")))?;
    resolve_in(&set, name, where_, 0)
}

fn resolve_in(
    set: &aws_config::profile::ProfileSet,
    name: &str,
    where_: &str,
    depth: usize,
) -> Result<ProfileChain> {
    if depth > PROFILE_CHAIN_MAX {
        return Err(gate1(format!(
            "aws profile {name:?}: role chain longer than {PROFILE_CHAIN_MAX} (a source_profile loop?)"
        )));
    }
    let p = set.get_profile(name).ok_or_else(|| {
        gate1(format!(
            "aws.profile: profile {name:?} is not in {where_}; the ambient default is never used"
        ))
    })?;
    for key in [
        "credential_process",
        "sso_session",
        "sso_start_url",
        "sso_account_id",
        "web_identity_token_file",
    ] {
        if p.get(key).is_some() {
            return Err(gate1(format!(
                "aws profile {name:?} uses {key}, which this build does not follow; use static keys, or role_arn with source_profile or credential_source = Ec2InstanceMetadata"
            )));
        }
    }
    let static_keys = || -> Option<Credentials> {
        let ak = p.get("aws_access_key_id")?;
        let sk = p.get("aws_secret_access_key")?;
        Some(Credentials::new(
            ak,
            sk,
            p.get("aws_session_token").map(str::to_string),
            None,
            "benchledger-profile",
        ))
    };
    if let Some(role_arn) = p.get("role_arn") {
        let source = match (p.get("source_profile"), p.get("credential_source")) {
            (Some(_), Some(_)) => {
                return Err(gate1(format!(
                    "aws profile {name:?} sets both source_profile and credential_source"
                )))
            }
            (Some(src), None) if src == name => static_keys().ok_or_else(|| {
                gate1(format!(
                    "aws profile {name:?} is its own source_profile but has no static keys"
                ))
            })?,
            (Some(src), None) => return Ok(ProfileChain::AssumeRole {
                role_arn: role_arn.to_string(),
                session_name: p
                    .get("role_session_name")
                    .map_or_else(|| "benchledger-profile".to_string(), str::to_string),
                external_id: p.get("external_id").map(str::to_string),
                source: Box::new(resolve_in(set, src, where_, depth + 1)?),
            }),
            (None, Some(cs)) if cs.eq_ignore_ascii_case("Ec2InstanceMetadata") => {
                return Ok(ProfileChain::AssumeRole {
                    role_arn: role_arn.to_string(),
                    session_name: p
                        .get("role_session_name")
                        .map_or_else(|| "benchledger-profile".to_string(), str::to_string),
                    external_id: p.get("external_id").map(str::to_string),
                    source: Box::new(ProfileChain::InstanceMetadata),
                })
            }
            (None, Some(cs)) => {
                return Err(gate1(format!(
                    "aws profile {name:?}: credential_source = {cs} reads ambient state; only Ec2InstanceMetadata is followed"
                )))
            }
            (None, None) => {
                return Err(gate1(format!(
                    "aws profile {name:?} has role_arn without source_profile or credential_source"
                )))
            }
        };
        return Ok(ProfileChain::AssumeRole {
            role_arn: role_arn.to_string(),
            session_name: p
                .get("role_session_name")
                .map_or_else(|| "benchledger-profile".to_string(), str::to_string),
            external_id: p.get("external_id").map(str::to_string),
            source: Box::new(ProfileChain::Static(source)),
        });
    }
    static_keys().map(ProfileChain::Static).ok_or_else(|| {
        gate1(format!(
            "aws profile {name:?} in {where_} has no credentials (aws_access_key_id and aws_secret_access_key, or role_arn)"
        ))
    })
}
