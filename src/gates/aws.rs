//! The AWS side of the gates (feature `aws`): the STS identity proof
//! (GATE-1), the vCPU quota (GATE-2), the run-tag residue count (GATE-3)
//! and the exact-tag cleanup audit, monitor and termination (CLEAN-1..3).
//!
//! One credentials provider is built explicitly from the manifest's one
//! selector, never the SDK's default chain (in that chain ambient
//! `AWS_ACCESS_KEY_ID`/`AWS_SESSION_TOKEN` win over a named profile and
//! `AWS_ENDPOINT_URL` redirects every call: the silent fallback GATE-1
//! forbids):
//!
//! - `profile`: the named profile is read from the config and credentials
//!   files whose paths the caller passes in (the CLI honours
//!   `AWS_CONFIG_FILE`/`AWS_SHARED_CREDENTIALS_FILE`, else `~/.aws/...`);
//!   the files are read here and parsed with an empty environment. Static
//!   keys and `role_arn` with `source_profile` or
//!   `credential_source = Ec2InstanceMetadata` are supported; anything that
//!   would read ambient state (`credential_source = Environment`) or run a
//!   program (`credential_process`, SSO, web identity) is refused before
//!   any call. A missing profile is refused before any call.
//! - `assume_role`: STS AssumeRole of the private manifest's role ARN, with
//!   the host's instance-profile credentials as the source.
//! - `instance_profile`: the instance metadata service (IMDSv2) at an
//!   explicit endpoint.
//!
//! The SdkConfig is built field by field (region, HTTP client, timeouts,
//! retries, endpoint): no environment variable or profile key is consulted.
//! The only endpoint override is the caller's (the CLI reads
//! `BENCHLEDGER_AWS_ENDPOINT_URL`, never a manifest) and it is recorded in
//! every observation.
//!
//! Every call is bounded: connect, attempt and operation timeouts, a fixed
//! attempt count, and page counts for paginated queries.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use aws_config::imds;
use aws_config::imds::credentials::ImdsCredentialsProvider;
use aws_config::provider_config::ProviderConfig;
use aws_config::retry::RetryConfig;
use aws_config::sts::AssumeRoleProvider;
use aws_config::timeout::TimeoutConfig;
use aws_config::BehaviorVersion;
use aws_credential_types::provider::SharedCredentialsProvider;
use aws_credential_types::Credentials;
use aws_sdk_ec2::error::ProvideErrorMetadata;
use aws_sdk_ec2::types::Filter;
use aws_smithy_async::rt::sleep::TokioSleep;
use aws_smithy_async::time::SystemTimeSource;
use aws_smithy_http_client::tls;
use aws_types::region::Region;
use aws_types::SdkConfig;

use crate::error::{Error, Result};
use crate::schema::events::{
    CleanupAudited, FoundResource, GroupRef, IdentityChecked, QuotaChecked, Status,
};
use crate::schema::manifest::{self, CentralMode, Committed, ManifestFile, PrivateCommitments};
use crate::schema::rule::Rule;

/// Longest wait for one TCP connect to an AWS endpoint, in milliseconds.
pub const AWS_CONNECT_TIMEOUT_MS: u64 = 5_000;
/// Longest wait for one attempt of one API call, in milliseconds.
pub const AWS_ATTEMPT_TIMEOUT_MS: u64 = 20_000;
/// Longest wait for one API call with its retries, in milliseconds.
pub const AWS_OPERATION_TIMEOUT_MS: u64 = 60_000;
/// Attempts per API call (1 = no retry).
pub const AWS_ATTEMPTS_MAX: u32 = 3;
/// Longest wait for one instance metadata (IMDS) request, in milliseconds.
pub const IMDS_TIMEOUT_MS: u64 = 2_000;
/// The instance metadata service on an EC2 host.
pub const IMDS_ENDPOINT_DEFAULT: &str = "http://169.254.169.254";
/// Pages one paginated Describe* query may read; more is an error (the
/// query is never silently truncated).
pub const DESCRIBE_PAGES_MAX: usize = 100;
/// Results asked per DescribeInstances page.
pub const INSTANCES_PER_PAGE: i32 = 1000;
/// Results asked per DescribeVolumes / DescribeNetworkInterfaces page.
pub const VOLUMES_PER_PAGE: i32 = 500;
/// Values one EC2 filter may carry (AWS allows 200).
pub const FILTER_VALUES_MAX: usize = 200;
/// Instance types per DescribeInstanceTypes call (AWS allows 100).
pub const INSTANCE_TYPES_PER_CALL: usize = 100;
/// Largest AWS config or credentials file read, in bytes.
pub const PROFILE_FILE_BYTES_MAX: usize = 1024 * 1024;
/// Longest `role_arn` -> `source_profile` chain followed.
pub const PROFILE_CHAIN_MAX: usize = 4;
/// Longest STS role session name, in bytes (an AWS limit).
pub const ROLE_SESSION_NAME_BYTES_MAX: usize = 64;
/// Longest error text kept in an observation, in bytes.
pub const AWS_ERROR_BYTES_MAX: usize = 512;
/// Longest endpoint override accepted, in bytes.
pub const ENDPOINT_URL_BYTES_MAX: usize = 2048;
/// How long `terminate` waits for terminated instances before deleting
/// their volumes and interfaces, in milliseconds.
pub const TERMINATE_WAIT_MS: u64 = 600_000;
/// Poll interval of that wait, in milliseconds.
pub const TERMINATE_POLL_MS: u64 = 5_000;

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
// Selector and credentials
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

/// How a profile gets its credentials, resolved before any call.
#[derive(Debug, Clone, PartialEq)]
pub enum ProfileChain {
    /// Static keys in the profile (`Credentials` never prints its secret).
    Static(Credentials),
    /// `role_arn`, assumed from a source.
    AssumeRole {
        /// The role.
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
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(String::new()),
        Err(e) => return Err(Error::input(format!("cannot read {}: {e}", path.display()))),
        Ok(m) if m.len() > PROFILE_FILE_BYTES_MAX as u64 => {
            return Err(Error::input(format!(
                "{}: {} bytes, over the limit of {PROFILE_FILE_BYTES_MAX}",
                path.display(),
                m.len()
            )))
        }
        Ok(_) => {}
    }
    let bytes = std::fs::read(path)
        .map_err(|e| Error::input(format!("cannot read {}: {e}", path.display())))?;
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

// ---------------------------------------------------------------------------
// Session
// ---------------------------------------------------------------------------

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

impl AwsError {
    fn of(op: &str, e: impl std::error::Error + 'static) -> AwsError {
        AwsError(clean(&format!(
            "{op}: {}",
            aws_sdk_ec2::error::DisplayErrorContext(&e)
        )))
    }
}

impl From<AwsError> for Error {
    fn from(e: AwsError) -> Error {
        Error::io("aws", e.0)
    }
}

/// One line, at most `AWS_ERROR_BYTES_MAX` bytes, and never something
/// shaped like a credential.
fn clean(text: &str) -> String {
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

/// An authenticated connection to one region: the explicit provider, the
/// three clients and the runtime they run on. Calls block.
pub struct Session {
    sts: aws_sdk_sts::Client,
    ec2: aws_sdk_ec2::Client,
    quotas: aws_sdk_servicequotas::Client,
    /// The region.
    pub region: String,
    // Last: the clients (and their connection pools) drop before their runtime.
    rt: tokio::runtime::Runtime,
}

fn timeouts() -> TimeoutConfig {
    TimeoutConfig::builder()
        .connect_timeout(Duration::from_millis(AWS_CONNECT_TIMEOUT_MS))
        .read_timeout(Duration::from_millis(AWS_ATTEMPT_TIMEOUT_MS))
        .operation_attempt_timeout(Duration::from_millis(AWS_ATTEMPT_TIMEOUT_MS))
        .operation_timeout(Duration::from_millis(AWS_OPERATION_TIMEOUT_MS))
        .build()
}

impl Session {
    /// Builds the selector's one provider and the clients. Profile problems
    /// are refused (GATE-1) here, before any call.
    pub fn open(selector: &Selector, target: &Target) -> Result<Session> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::io("start the async runtime", e))?;
        let http = aws_smithy_http_client::Builder::new()
            .tls_provider(tls::Provider::Rustls(
                tls::rustls_provider::CryptoMode::Ring,
            ))
            .build_https();
        let region = Region::new(target.region.clone());
        let mut base = SdkConfig::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(region.clone())
            .http_client(http.clone())
            .time_source(SystemTimeSource::new())
            .sleep_impl(TokioSleep::new())
            .timeout_config(timeouts())
            .retry_config(RetryConfig::standard().with_max_attempts(AWS_ATTEMPTS_MAX));
        base.set_endpoint_url(target.endpoint.clone());
        let base = base.build();
        let imds_endpoint = target
            .imds_endpoint
            .clone()
            .unwrap_or_else(|| IMDS_ENDPOINT_DEFAULT.to_string());
        let provider_config = ProviderConfig::empty()
            .with_http_client(http)
            .with_sleep_impl(TokioSleep::new())
            .with_time_source(SystemTimeSource::new())
            .with_region(Some(region));
        let imds = || -> Result<SharedCredentialsProvider> {
            let client = imds::Client::builder()
                .configure(&provider_config)
                .endpoint(&imds_endpoint)
                .map_err(|e| Error::input(format!("imds endpoint {imds_endpoint:?}: {e}")))?
                .connect_timeout(Duration::from_millis(IMDS_TIMEOUT_MS))
                .read_timeout(Duration::from_millis(IMDS_TIMEOUT_MS))
                .operation_timeout(Duration::from_millis(IMDS_TIMEOUT_MS * 3))
                .build();
            Ok(SharedCredentialsProvider::new(
                ImdsCredentialsProvider::builder()
                    .configure(&provider_config)
                    .imds_client(client)
                    .build(),
            ))
        };
        let provider = match selector {
            Selector::Profile { name, files } => {
                let chain = resolve_profile(name, files)?;
                build_chain(&rt, &base, &chain, &imds)?
            }
            Selector::AssumeRole {
                role_arn,
                session_name,
            } => {
                let source = imds()?;
                SharedCredentialsProvider::new(
                    rt.block_on(
                        AssumeRoleProvider::builder(role_arn.clone())
                            .session_name(session_name.clone())
                            .configure(&base)
                            .build_from_provider(source),
                    ),
                )
            }
            Selector::InstanceProfile => imds()?,
        };
        let conf = base.into_builder().credentials_provider(provider).build();
        Ok(Session {
            sts: aws_sdk_sts::Client::new(&conf),
            ec2: aws_sdk_ec2::Client::new(&conf),
            quotas: aws_sdk_servicequotas::Client::new(&conf),
            region: target.region.clone(),
            rt,
        })
    }

    /// STS GetCallerIdentity.
    pub fn caller_identity(&self) -> Result<CallerIdentity, AwsError> {
        let out = self
            .rt
            .block_on(self.sts.get_caller_identity().send())
            .map_err(|e| AwsError::of("sts GetCallerIdentity", e))?;
        match (out.account(), out.arn()) {
            (Some(a), Some(arn)) => Ok(CallerIdentity {
                account: a.to_string(),
                arn: arn.to_string(),
            }),
            _ => Err(AwsError(
                "sts GetCallerIdentity answered without account or arn".into(),
            )),
        }
    }

    /// Service Quotas GetServiceQuota(ec2, `code`), floored to whole vCPUs.
    pub fn vcpu_quota(&self, code: &str) -> Result<u64, AwsError> {
        let out = self
            .rt
            .block_on(
                self.quotas
                    .get_service_quota()
                    .service_code("ec2")
                    .quota_code(code)
                    .send(),
            )
            .map_err(|e| AwsError::of(&format!("service-quotas GetServiceQuota ec2 {code}"), e))?;
        let v = out.quota().and_then(|q| q.value()).ok_or_else(|| {
            AwsError(format!(
                "service-quotas GetServiceQuota ec2 {code} answered no value"
            ))
        })?;
        if !v.is_finite() || v < 0.0 || v > u64::MAX as f64 {
            return Err(AwsError(format!(
                "service-quotas GetServiceQuota ec2 {code} answered {v}, not a vcpu count"
            )));
        }
        Ok(v.floor() as u64)
    }

    /// Every page of a paginated Describe call, at most `DESCRIBE_PAGES_MAX`:
    /// `page` fetches one page from a token and returns its items and the
    /// next token. A longer answer is refused, never truncated.
    fn all_pages<T>(
        op: &str,
        mut page: impl FnMut(Option<String>) -> Result<(Vec<T>, Option<String>), AwsError>,
    ) -> Result<Vec<T>, AwsError> {
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        for _ in 0..DESCRIBE_PAGES_MAX {
            let (items, next) = page(token.take())?;
            out.extend(items);
            match next.filter(|t| !t.is_empty()) {
                Some(t) => token = Some(t),
                None => return Ok(out),
            }
        }
        Err(AwsError(format!(
            "{op}: more than {DESCRIBE_PAGES_MAX} pages; refusing a truncated answer"
        )))
    }

    /// DescribeInstances with these filters, every page.
    pub fn instances(&self, filters: &[Filter]) -> Result<Vec<LiveInstance>, AwsError> {
        const OP: &str = "ec2 DescribeInstances";
        Self::all_pages(OP, |token| {
            let page = self
                .rt
                .block_on(
                    self.ec2
                        .describe_instances()
                        .set_filters(Some(filters.to_vec()))
                        .max_results(INSTANCES_PER_PAGE)
                        .set_next_token(token)
                        .send(),
                )
                .map_err(|e| AwsError::of(OP, e))?;
            let items = page
                .reservations()
                .iter()
                .flat_map(|r| r.instances())
                .filter_map(|i| {
                    Some(LiveInstance {
                        id: i.instance_id()?.to_string(),
                        instance_type: i
                            .instance_type()
                            .map(|t| t.as_str().to_string())
                            .unwrap_or_default(),
                        state: i
                            .state()
                            .and_then(|s| s.name())
                            .map(|n| n.as_str().to_string())
                            .unwrap_or_default(),
                        tags: i
                            .tags()
                            .iter()
                            .filter_map(|t| Some((t.key()?.to_string(), t.value()?.to_string())))
                            .collect(),
                    })
                })
                .collect();
            Ok((items, page.next_token().map(str::to_string)))
        })
    }

    /// DescribeVolumes with these filters: (id, state, attached instance ids).
    pub fn volumes(&self, filters: &[Filter]) -> Result<Vec<Attachable>, AwsError> {
        const OP: &str = "ec2 DescribeVolumes";
        Self::all_pages(OP, |token| {
            let page = self
                .rt
                .block_on(
                    self.ec2
                        .describe_volumes()
                        .set_filters(Some(filters.to_vec()))
                        .max_results(VOLUMES_PER_PAGE)
                        .set_next_token(token)
                        .send(),
                )
                .map_err(|e| AwsError::of(OP, e))?;
            let items = page
                .volumes()
                .iter()
                .filter_map(|v| {
                    Some(Attachable {
                        id: v.volume_id()?.to_string(),
                        state: v
                            .state()
                            .map(|s| s.as_str().to_string())
                            .unwrap_or_default(),
                        attached_to: v
                            .attachments()
                            .iter()
                            .filter_map(|a| a.instance_id().map(str::to_string))
                            .collect(),
                    })
                })
                .collect();
            Ok((items, page.next_token().map(str::to_string)))
        })
    }

    /// DescribeNetworkInterfaces with these filters.
    pub fn network_interfaces(&self, filters: &[Filter]) -> Result<Vec<Attachable>, AwsError> {
        const OP: &str = "ec2 DescribeNetworkInterfaces";
        Self::all_pages(OP, |token| {
            let page = self
                .rt
                .block_on(
                    self.ec2
                        .describe_network_interfaces()
                        .set_filters(Some(filters.to_vec()))
                        .max_results(VOLUMES_PER_PAGE)
                        .set_next_token(token)
                        .send(),
                )
                .map_err(|e| AwsError::of(OP, e))?;
            let items = page
                .network_interfaces()
                .iter()
                .filter_map(|n| {
                    Some(Attachable {
                        id: n.network_interface_id()?.to_string(),
                        state: n
                            .status()
                            .map(|s| s.as_str().to_string())
                            .unwrap_or_default(),
                        attached_to: n
                            .attachment()
                            .and_then(|a| a.instance_id())
                            .map(str::to_string)
                            .into_iter()
                            .collect(),
                    })
                })
                .collect();
            Ok((items, page.next_token().map(str::to_string)))
        })
    }

    /// vCPUs of each instance type (DescribeInstanceTypes `DefaultVCpus`).
    pub fn vcpus_by_type(
        &self,
        types: &BTreeSet<String>,
    ) -> Result<BTreeMap<String, u64>, AwsError> {
        let mut out = BTreeMap::new();
        let all: Vec<&String> = types.iter().collect();
        for chunk in all.chunks(INSTANCE_TYPES_PER_CALL) {
            let page = self
                .rt
                .block_on(
                    self.ec2
                        .describe_instance_types()
                        .set_instance_types(Some(
                            chunk
                                .iter()
                                .map(|t| aws_sdk_ec2::types::InstanceType::from(t.as_str()))
                                .collect(),
                        ))
                        .send(),
                )
                .map_err(|e| AwsError::of("ec2 DescribeInstanceTypes", e))?;
            for t in page.instance_types() {
                if let (Some(name), Some(v)) = (
                    t.instance_type(),
                    t.v_cpu_info().and_then(|v| v.default_v_cpus()),
                ) {
                    out.insert(name.as_str().to_string(), u64::try_from(v).unwrap_or(0));
                }
            }
        }
        Ok(out)
    }

    /// TerminateInstances of one instance: its new state.
    pub fn terminate_instance(&self, id: &str) -> Result<String, AwsError> {
        let out = self
            .rt
            .block_on(self.ec2.terminate_instances().instance_ids(id).send())
            .map_err(|e| AwsError(clean(&format!("ec2 TerminateInstances: {}", sdk_code(&e)))))?;
        Ok(out
            .terminating_instances()
            .iter()
            .find(|c| c.instance_id() == Some(id))
            .and_then(|c| c.current_state())
            .and_then(|s| s.name())
            .map_or("unknown".into(), |n| n.as_str().to_string()))
    }

    /// DeleteVolume.
    pub fn delete_volume(&self, id: &str) -> Result<(), AwsError> {
        self.rt
            .block_on(self.ec2.delete_volume().volume_id(id).send())
            .map(|_| ())
            .map_err(|e| AwsError(clean(&format!("ec2 DeleteVolume: {}", sdk_code(&e)))))
    }

    /// DeleteNetworkInterface.
    pub fn delete_network_interface(&self, id: &str) -> Result<(), AwsError> {
        self.rt
            .block_on(
                self.ec2
                    .delete_network_interface()
                    .network_interface_id(id)
                    .send(),
            )
            .map(|_| ())
            .map_err(|e| {
                AwsError(clean(&format!(
                    "ec2 DeleteNetworkInterface: {}",
                    sdk_code(&e)
                )))
            })
    }

    /// The EC2 client, for tests that set resources up.
    #[cfg(test)]
    pub(crate) fn ec2(&self) -> &aws_sdk_ec2::Client {
        &self.ec2
    }

    /// The STS client, for tests.
    #[cfg(test)]
    pub(crate) fn sts(&self) -> &aws_sdk_sts::Client {
        &self.sts
    }

    /// Runs a future on the session's runtime, for tests.
    #[cfg(test)]
    pub(crate) fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }
}

/// `code: message` of a service error, else the error context.
fn sdk_code<E, R>(e: &aws_sdk_ec2::error::SdkError<E, R>) -> String
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    match (e.code(), e.message()) {
        (Some(c), Some(m)) => format!("{c}: {m}"),
        (Some(c), None) => c.to_string(),
        _ => format!("{}", aws_sdk_ec2::error::DisplayErrorContext(e)),
    }
}

fn build_chain(
    rt: &tokio::runtime::Runtime,
    base: &SdkConfig,
    chain: &ProfileChain,
    imds: &dyn Fn() -> Result<SharedCredentialsProvider>,
) -> Result<SharedCredentialsProvider> {
    Ok(match chain {
        ProfileChain::Static(c) => SharedCredentialsProvider::new(c.clone()),
        ProfileChain::InstanceMetadata => imds()?,
        ProfileChain::AssumeRole {
            role_arn,
            session_name,
            external_id,
            source,
        } => {
            let source = build_chain(rt, base, source, imds)?;
            let mut b = AssumeRoleProvider::builder(role_arn.clone())
                .session_name(session_name.clone())
                .configure(base);
            if let Some(x) = external_id {
                b = b.external_id(x.clone());
            }
            SharedCredentialsProvider::new(rt.block_on(b.build_from_provider(source)))
        }
    })
}

// ---------------------------------------------------------------------------
// GATE-1: the identity proof
// ---------------------------------------------------------------------------

/// What STS answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallerIdentity {
    /// The account id.
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
        error: (!problems.is_empty()).then(|| format!("GATE-1: {}", problems.join("; "))),
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
    /// Its id.
    pub id: String,
    /// Its type (`m5.large`).
    pub instance_type: String,
    /// Its state name.
    pub state: String,
    /// Its tags.
    pub tags: BTreeMap<String, String>,
}

/// A volume or network interface: id, state/status, attached instances.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachable {
    /// Its id.
    pub id: String,
    /// Its state (volumes) or status (interfaces).
    pub state: String,
    /// Instance ids it is attached to.
    pub attached_to: Vec<String>,
}

/// The GATE-2 numbers, in vCPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaNumbers {
    /// The quota.
    pub quota_vcpu: u64,
    /// Regional use: running + pending.
    pub used_vcpu: u64,
    /// quota - used, 0 when used exceeds quota.
    pub available_vcpu: u64,
    /// concurrency x sandbox vCPU + headroom (+ central vCPU when it is
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

/// The GATE-2 arithmetic. `live` are the region's pending and running
/// instances; `vcpus` maps their types to vCPUs (an unknown type is an
/// error: the use is never under-counted).
pub fn quota_numbers(
    m: &ManifestFile,
    quota_vcpu: u64,
    live: &[LiveInstance],
    vcpus: &BTreeMap<String, u64>,
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
    let mut required = u64::from(m.limits.concurrency)
        .saturating_mul(m.sandbox.vcpu)
        .saturating_add(m.aws.quota_headroom_vcpu);
    if m.central.mode == CentralMode::Provision && !central_live {
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

fn filter(name: &str, values: impl IntoIterator<Item = impl Into<String>>) -> Filter {
    Filter::builder()
        .name(name)
        .set_values(Some(values.into_iter().map(Into::into).collect()))
        .build()
}

/// Measures GATE-2 in the session's region.
pub fn measure_quota(session: &Session, m: &ManifestFile) -> Result<QuotaNumbers, AwsError> {
    let quota = session.vcpu_quota(&m.aws.quota_code)?;
    let live = session.instances(&[filter("instance-state-name", QUOTA_INSTANCE_STATES)])?;
    let types: BTreeSet<String> = live.iter().map(|i| i.instance_type.clone()).collect();
    let vcpus = session.vcpus_by_type(&types)?;
    quota_numbers(m, quota, &live, &vcpus)
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
// CLEAN-1..3: residue
// ---------------------------------------------------------------------------

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

    fn filters(&self) -> Vec<Filter> {
        vec![
            filter(&format!("tag:{}", self.run_key), [self.run_value.clone()]),
            filter(&format!("tag:{}", self.role_key), self.role_values.clone()),
        ]
    }
}

/// Live run-tagged sandboxes (the monitor's and the residue gate's count):
/// (id, state), sorted.
pub fn live_sandboxes(
    session: &Session,
    m: &ManifestFile,
) -> Result<Vec<(String, String)>, AwsError> {
    let mut f = RunTags::sandboxes(m).filters();
    f.push(filter("instance-state-name", LIVE_INSTANCE_STATES));
    let mut out: Vec<(String, String)> = session
        .instances(&f)?
        .into_iter()
        .map(|i| (i.id, i.state))
        .collect();
    out.sort();
    out.dedup();
    Ok(out)
}

fn add_found(
    found: &mut BTreeMap<(String, String), (String, BTreeSet<String>)>,
    resource: &str,
    id: &str,
    state: &str,
    how: String,
) {
    found
        .entry((resource.to_string(), id.to_string()))
        .or_insert_with(|| (state.to_string(), BTreeSet::new()))
        .1
        .insert(how);
}

/// The exact-tag residue audit (CLEAN-1): instances in every non-terminated
/// state, volumes and network interfaces carrying the run tag AND a role
/// tag of the run; the tracked instance ids; and the volumes and interfaces
/// attached to every tracked or found instance (tag propagation differs by
/// resource type). `found_by` lists every way a resource was found, joined
/// by `,`: `run_tag`, `tracked_id`, `attachment_of:<instance id>`.
pub fn audit(
    session: &Session,
    tags: &RunTags,
    tracked: &BTreeSet<String>,
) -> Result<Vec<FoundResource>, AwsError> {
    let mut found = BTreeMap::new();
    let states = filter("instance-state-name", LIVE_INSTANCE_STATES);
    let mut by_tag = tags.filters();
    by_tag.push(states.clone());
    let mut instances: BTreeSet<String> = tracked.clone();
    for i in session.instances(&by_tag)? {
        add_found(&mut found, "instance", &i.id, &i.state, "run_tag".into());
        instances.insert(i.id);
    }
    let tracked_list: Vec<&String> = tracked.iter().collect();
    for chunk in tracked_list.chunks(FILTER_VALUES_MAX) {
        let f = [
            filter("instance-id", chunk.iter().map(|s| s.to_string())),
            states.clone(),
        ];
        for i in session.instances(&f)? {
            add_found(&mut found, "instance", &i.id, &i.state, "tracked_id".into());
        }
    }
    for v in session.volumes(&tags.filters())? {
        if v.state != "deleted" {
            add_found(&mut found, "volume", &v.id, &v.state, "run_tag".into());
        }
    }
    for n in session.network_interfaces(&tags.filters())? {
        add_found(
            &mut found,
            "network_interface",
            &n.id,
            &n.state,
            "run_tag".into(),
        );
    }
    let followed: Vec<&String> = instances.iter().collect();
    for chunk in followed.chunks(FILTER_VALUES_MAX) {
        let ids: Vec<String> = chunk.iter().map(|s| s.to_string()).collect();
        let f = [filter("attachment.instance-id", ids.clone())];
        for v in session.volumes(&f)? {
            for i in v.attached_to.iter().filter(|i| ids.contains(i)) {
                add_found(
                    &mut found,
                    "volume",
                    &v.id,
                    &v.state,
                    format!("attachment_of:{i}"),
                );
            }
        }
        for n in session.network_interfaces(&f)? {
            for i in n.attached_to.iter().filter(|i| ids.contains(i)) {
                add_found(
                    &mut found,
                    "network_interface",
                    &n.id,
                    &n.state,
                    format!("attachment_of:{i}"),
                );
            }
        }
    }
    Ok(found
        .into_iter()
        .map(|((resource, id), (state, how))| FoundResource {
            resource,
            id,
            state,
            found_by: how.into_iter().collect::<Vec<_>>().join(","),
        })
        .collect())
}

/// Whether a found resource is the retained central host, which is excluded
/// only by the manifest's instance id (CLEAN-2): the instance itself, or a
/// volume or interface found attached to it.
pub fn is_excluded(r: &FoundResource, central_instance_id: Option<&str>) -> bool {
    let Some(c) = central_instance_id else {
        return false;
    };
    if r.resource == "instance" {
        return r.id == c;
    }
    let attached = format!("attachment_of:{c}");
    r.found_by.split(',').any(|h| h == attached)
}

/// Pass when everything found is excluded (CLEAN-2's zero tail).
pub fn audit_status(found: &[FoundResource], central_instance_id: Option<&str>) -> Status {
    if found.iter().all(|r| is_excluded(r, central_instance_id)) {
        Status::Pass
    } else {
        Status::Fail
    }
}

/// The `cleanup_audited` observation. `identity` is the redacted principal
/// the queries ran as; on a failed query `found` is empty and `error` says
/// why.
pub fn audit_observation(
    group: GroupRef,
    m: &ManifestFile,
    region: &str,
    identity: &str,
    tracked: &BTreeSet<String>,
    outcome: &Result<Vec<FoundResource>, AwsError>,
) -> CleanupAudited {
    let central = m.central.instance_id.clone();
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

/// Terminates or deletes each planned resource, calling `record` after each
/// call with its answer (so every call is recorded as it happens). Between
/// instances and the rest it waits (bounded by `wait`) until the
/// terminated instances are gone, so their volumes and interfaces detach.
pub fn terminate(
    session: &Session,
    plan: &[FoundResource],
    wait: Duration,
    record: &mut dyn FnMut(&Termination) -> Result<()>,
) -> Result<Vec<Termination>> {
    let mut done = Vec::new();
    let mut instances = Vec::new();
    for r in plan.iter().filter(|r| r.resource == "instance") {
        let t = Termination {
            resource: r.clone(),
            action: "TerminateInstances".into(),
            answer: match session.terminate_instance(&r.id) {
                Ok(state) => format!("ok: {state}"),
                Err(e) => format!("error: {}", e.0),
            },
        };
        record(&t)?;
        instances.push(r.id.clone());
        done.push(t);
    }
    if !instances.is_empty() && plan.iter().any(|r| r.resource != "instance") {
        let deadline = Instant::now() + wait;
        loop {
            // Live instances left; a failed query ends the wait (the deletes
            // below then answer for themselves, and the audit that follows
            // is the truth).
            let left: Result<usize, AwsError> = instances
                .chunks(FILTER_VALUES_MAX)
                .map(|chunk| {
                    session
                        .instances(&[
                            filter("instance-id", chunk.to_vec()),
                            filter("instance-state-name", LIVE_INSTANCE_STATES),
                        ])
                        .map(|l| l.len())
                })
                .sum();
            if !matches!(left, Ok(n) if n > 0) || Instant::now() >= deadline {
                break;
            }
            let poll = Duration::from_millis(TERMINATE_POLL_MS)
                .min(deadline.saturating_duration_since(Instant::now()));
            std::thread::sleep(poll);
        }
    }
    for r in plan.iter().filter(|r| r.resource != "instance") {
        let (action, result) = match r.resource.as_str() {
            "volume" => ("DeleteVolume", session.delete_volume(&r.id)),
            _ => (
                "DeleteNetworkInterface",
                session.delete_network_interface(&r.id),
            ),
        };
        let t = Termination {
            resource: r.clone(),
            action: action.into(),
            answer: match result {
                Ok(()) => "ok: deleted".into(),
                Err(e) => format!("error: {}", e.0),
            },
        };
        record(&t)?;
        done.push(t);
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    //! Pure tests run everywhere. Tests named `moto_*` talk to the moto
    //! server on 127.0.0.1 and are `#[ignore]`d unless
    //! `tools/moto/test-aws.sh` runs them (it starts moto and sets
    //! `BENCHLEDGER_AWS_ENDPOINT_URL`).

    use super::*;
    use crate::gates::checks::testhttp::{response, Server};
    use crate::testkit::examples::{EXAMPLE_MANIFEST as EXAMPLE, EXAMPLE_PRIVATE};

    const MOTO_ACCOUNT: &str = "123456789012";
    const MOTO_PRINCIPAL: &str = "arn:aws:sts::123456789012:user/moto";
    const KEY_HEX: &str = "5f1e0c9a7b3d2e4f60718293a4b5c6d7e8f90112233445566778899aabbccdde";

    fn key() -> [u8; 32] {
        manifest::commitment_key(KEY_HEX, "test").unwrap()
    }

    /// The example manifest with text substitutions in each file.
    fn frozen(
        public: &[(&str, &str)],
        private: &[(&str, &str)],
    ) -> crate::schema::events::ManifestFrozen {
        let mut p = EXAMPLE.to_string();
        for (a, b) in public {
            assert!(p.contains(a), "example lacks {a:?}");
            p = p.replacen(a, b, 1);
        }
        let mut q = EXAMPLE_PRIVATE.to_string();
        for (a, b) in private {
            assert!(q.contains(a), "private example lacks {a:?}");
            q = q.replacen(a, b, 1);
        }
        crate::method::freeze::freeze(&p, "manifest.toml", &q, "manifest.private.toml").unwrap()
    }

    fn moto_principal() -> crate::schema::events::ManifestFrozen {
        frozen(
            &[],
            &[(
                "arn:aws:iam::123456789012:role/benchmark-runner",
                MOTO_PRINCIPAL,
            )],
        )
    }

    #[test]
    fn ambient_names_are_found_never_values() {
        let found = ambient_variables_present([
            "PATH",
            "AWS_SESSION_TOKEN",
            "AWS_ACCESS_KEY_ID",
            "AWS_ENDPOINT_URL_EC2",
            "AWS_CONFIG_FILE",
            "AWS_SHARED_CREDENTIALS_FILE",
            "BENCHLEDGER_AWS_ENDPOINT_URL",
            "AWS_ACCESS_KEY_ID",
        ]);
        assert_eq!(
            found,
            [
                "AWS_ACCESS_KEY_ID",
                "AWS_ENDPOINT_URL_EC2",
                "AWS_SESSION_TOKEN"
            ]
        );
    }

    #[test]
    fn endpoint_overrides_are_checked_and_bounded() {
        assert_eq!(
            check_endpoint("V", "http://127.0.0.1:5000/").unwrap(),
            "http://127.0.0.1:5000"
        );
        for bad in [
            "127.0.0.1:5000",
            "ftp://x",
            "http://",
            "http://a:b@h",
            "http://h/ x",
        ] {
            let e = check_endpoint("BENCHLEDGER_AWS_ENDPOINT_URL", bad).unwrap_err();
            assert!(
                e.to_string().starts_with("BENCHLEDGER_AWS_ENDPOINT_URL: "),
                "{e}"
            );
        }
        let at = format!("http://h/{}", "a".repeat(ENDPOINT_URL_BYTES_MAX - 9));
        assert_eq!(at.len(), ENDPOINT_URL_BYTES_MAX);
        assert!(check_endpoint("V", &at).is_ok());
        assert!(check_endpoint("V", &format!("{at}a"))
            .unwrap_err()
            .to_string()
            .contains("over the limit"));
    }

    #[test]
    fn session_names_fit_sts() {
        assert_eq!(session_name("short13"), "benchledger-short13");
        let long = session_name(&"x".repeat(100));
        assert_eq!(long.len(), ROLE_SESSION_NAME_BYTES_MAX);
        assert_eq!(session_name("a/b c"), "benchledger-a-b-c");
    }

    #[test]
    fn assumed_role_sessions_also_match_their_role_arn() {
        assert_eq!(
            principal_forms("arn:aws:sts::123456789012:assumed-role/runner/benchledger-x"),
            [
                "arn:aws:sts::123456789012:assumed-role/runner/benchledger-x",
                "arn:aws:iam::123456789012:role/runner"
            ]
        );
        assert_eq!(principal_forms(MOTO_PRINCIPAL), [MOTO_PRINCIPAL]);
        assert_eq!(principal_forms("garbage"), ["garbage"]);
    }

    // rule GATE-1: account and principal are compared through the frozen commitments.
    #[test]
    fn identity_is_judged_through_the_commitments() {
        let f = moto_principal();
        let p = &f.manifest.private;
        let ok = judge_identity(
            &key(),
            p,
            &CallerIdentity {
                account: MOTO_ACCOUNT.into(),
                arn: MOTO_PRINCIPAL.into(),
            },
        );
        assert_eq!(ok.status, Status::Pass);
        assert_eq!(ok.account, p.account);
        assert_eq!(ok.principal, p.principal_arn);
        assert_eq!(ok.error, None);
        let other = judge_identity(
            &key(),
            p,
            &CallerIdentity {
                account: "111122223333".into(),
                arn: "arn:aws:sts::111122223333:user/moto".into(),
            },
        );
        assert_eq!(other.status, Status::Fail);
        let e = other.error.unwrap();
        assert!(
            e.contains("aws.account") && e.contains("aws.principal_arn"),
            "{e}"
        );
        assert_eq!(other.account.redacted, "********3333");
        // The example's role principal matches an assumed-role session of it.
        let role = frozen(&[], &[]);
        let session = judge_identity(
            &key(),
            &role.manifest.private,
            &CallerIdentity {
                account: MOTO_ACCOUNT.into(),
                arn: "arn:aws:sts::123456789012:assumed-role/benchmark-runner/benchledger-s".into(),
            },
        );
        assert_eq!(session.status, Status::Pass);
        assert_eq!(session.principal, role.manifest.private.principal_arn);
        // A wrong key never matches.
        let wrong = judge_identity(
            &[7u8; 32],
            p,
            &CallerIdentity {
                account: MOTO_ACCOUNT.into(),
                arn: MOTO_PRINCIPAL.into(),
            },
        );
        assert_eq!(wrong.status, Status::Fail);
    }

    #[test]
    fn identity_observation_keeps_no_credential_and_names_ambient_variables() {
        let f = moto_principal();
        let target = Target {
            region: "us-east-1".into(),
            endpoint: Some("http://127.0.0.1:5000".into()),
            imds_endpoint: None,
        };
        let v = judge_identity(
            &key(),
            &f.manifest.private,
            &CallerIdentity {
                account: MOTO_ACCOUNT.into(),
                arn: MOTO_PRINCIPAL.into(),
            },
        );
        let obs = identity_observation(
            "l",
            "profile:bench-operator",
            &target,
            vec!["AWS_ACCESS_KEY_ID".into()],
            &Ok(v),
        );
        assert_eq!(
            obs.endpoint_override.as_deref(),
            Some("http://127.0.0.1:5000")
        );
        assert_eq!(obs.ambient_variables_ignored, ["AWS_ACCESS_KEY_ID"]);
        assert!(
            crate::log::guard::check_event(&crate::schema::events::Event::IdentityChecked(
                obs.clone()
            ))
            .is_ok()
        );
        let failed = identity_observation("l", "s", &target, vec![], &Err(AwsError("down".into())));
        assert_eq!(failed.status, Status::Fail);
        assert_eq!(failed.account, None);
        assert_eq!(failed.error.as_deref(), Some("down"));
        let both = Target {
            imds_endpoint: Some("http://127.0.0.1:9".into()),
            ..target
        };
        assert_eq!(
            both.endpoint_override().unwrap(),
            "http://127.0.0.1:5000; imds=http://127.0.0.1:9"
        );
    }

    fn resolve(name: &str, config: &str, credentials: &str) -> Result<ProfileChain> {
        resolve_profile_text(name, config, credentials, "test files")
    }

    // rule GATE-1: a profile is resolved from its files alone; a missing one is refused before any call.
    #[test]
    fn profiles_resolve_from_the_files_alone() {
        let creds = "[bench]\naws_access_key_id = ak-1\naws_secret_access_key = sk-1\n";
        let ProfileChain::Static(c) = resolve("bench", "", creds).unwrap() else {
            panic!("static expected");
        };
        assert_eq!(c.access_key_id(), "ak-1");
        let config = "[profile runner]\nrole_arn = arn:aws:iam::123456789012:role/r\nsource_profile = bench\nrole_session_name = s1\n";
        match resolve("runner", config, creds).unwrap() {
            ProfileChain::AssumeRole {
                role_arn,
                session_name,
                source,
                ..
            } => {
                assert_eq!(role_arn, "arn:aws:iam::123456789012:role/r");
                assert_eq!(session_name, "s1");
                assert!(matches!(*source, ProfileChain::Static(_)));
            }
            other => panic!("{other:?}"),
        }
        let imds = "[profile i]\nrole_arn = arn:aws:iam::1:role/r\ncredential_source = Ec2InstanceMetadata\n";
        assert!(matches!(
            resolve("i", imds, "").unwrap(),
            ProfileChain::AssumeRole { source, .. } if *source == ProfileChain::InstanceMetadata
        ));
        let refused = |name: &str, config: &str, creds: &str, what: &str| {
            let e = resolve(name, config, creds).unwrap_err();
            assert!(
                matches!(
                    e,
                    Error::Refused {
                        rule: crate::schema::rule::Rule::Gate1,
                        ..
                    }
                ),
                "{e}"
            );
            assert!(e.to_string().contains(what), "{e}");
            assert!(!e.to_string().contains("sk-1"), "{e}");
        };
        refused("missing", "", creds, "is not in test files");
        refused(
            "e",
            "[profile e]\nrole_arn = arn:aws:iam::1:role/r\ncredential_source = Environment\n",
            "",
            "reads ambient state",
        );
        refused(
            "p",
            "[profile p]\ncredential_process = /bin/creds\n",
            "",
            "credential_process",
        );
        refused("s", "[profile s]\nsso_session = x\n", "", "sso_session");
        refused(
            "n",
            "[profile n]\nregion = us-east-1\n",
            "",
            "has no credentials",
        );
        refused(
            "r",
            "[profile r]\nrole_arn = arn:aws:iam::1:role/r\n",
            "",
            "without source_profile",
        );
    }

    #[test]
    fn profile_chains_are_bounded() {
        // a -> b -> a ... is cut at PROFILE_CHAIN_MAX.
        let config = "[profile a]\nrole_arn = arn:aws:iam::1:role/a\nsource_profile = b\n[profile b]\nrole_arn = arn:aws:iam::1:role/b\nsource_profile = a\n";
        let e = resolve("a", config, "").unwrap_err();
        assert!(e.to_string().contains("longer than"), "{e}");
        // A chain of exactly PROFILE_CHAIN_MAX hops resolves.
        let mut config = String::new();
        for i in 0..PROFILE_CHAIN_MAX {
            config.push_str(&format!(
                "[profile p{i}]\nrole_arn = arn:aws:iam::1:role/r{i}\nsource_profile = p{}\n",
                i + 1
            ));
        }
        let creds =
            format!("[p{PROFILE_CHAIN_MAX}]\naws_access_key_id = a\naws_secret_access_key = s\n");
        assert!(resolve("p0", &config, &creds).is_ok());
        let creds = format!(
            "[p{}]\naws_access_key_id = a\naws_secret_access_key = s\n",
            PROFILE_CHAIN_MAX + 1
        );
        config.push_str(&format!(
            "[profile p{PROFILE_CHAIN_MAX}]\nrole_arn = arn:aws:iam::1:role/x\nsource_profile = p{}\n",
            PROFILE_CHAIN_MAX + 1
        ));
        assert!(resolve("p0", &config, &creds)
            .unwrap_err()
            .to_string()
            .contains("longer than"));
    }

    #[test]
    fn profile_file_bound_is_exact() {
        let dir = tempfile::tempdir().unwrap();
        let at = dir.path().join("at");
        let mut text =
            "[profile x]\naws_access_key_id = a\naws_secret_access_key = s\n".to_string();
        text.push_str(&"#".repeat(PROFILE_FILE_BYTES_MAX - text.len()));
        std::fs::write(&at, &text).unwrap();
        let files = ProfileFiles {
            config: Some(at),
            credentials: Some(dir.path().join("absent")),
        };
        assert!(resolve_profile("x", &files).is_ok());
        let past = dir.path().join("past");
        std::fs::write(&past, format!("{text}#")).unwrap();
        let files = ProfileFiles {
            config: Some(past),
            credentials: None,
        };
        let e = resolve_profile("x", &files).unwrap_err();
        assert!(e.to_string().contains("over the limit"), "{e}");
    }

    #[test]
    fn profile_files_are_located_from_the_two_file_variables_or_home() {
        let f = ProfileFiles::locate(None, None, Some("/home/u".into()));
        assert_eq!(f.config.unwrap(), PathBuf::from("/home/u/.aws/config"));
        assert_eq!(
            f.credentials.unwrap(),
            PathBuf::from("/home/u/.aws/credentials")
        );
        let f = ProfileFiles::locate(Some("/c".into()), Some("/k".into()), None);
        assert_eq!(f.config.unwrap(), PathBuf::from("/c"));
        assert_eq!(f.credentials.unwrap(), PathBuf::from("/k"));
    }

    #[test]
    fn selectors_come_from_the_manifest_only() {
        let f = frozen(&[], &[]);
        let m = &f.manifest.public;
        assert!(matches!(
            Selector::of(m, None, ProfileFiles::default()).unwrap(),
            Selector::Profile { name, .. } if name == "bench-operator"
        ));
        assert_eq!(
            selector_label(m, &f.manifest.private),
            "profile:bench-operator"
        );
        let role = frozen(
            &[("profile = \"bench-operator\"", "assume_role = true")],
            &[(
                "principal_arn = ",
                "role_arn = \"arn:aws:iam::123456789012:role/benchmark-runner\"\nprincipal_arn = ",
            )],
        );
        let m = &role.manifest.public;
        let e = Selector::of(m, None, ProfileFiles::default()).unwrap_err();
        assert!(e.to_string().contains("--private"), "{e}");
        let s = Selector::of(
            m,
            Some("arn:aws:iam::123456789012:role/benchmark-runner"),
            ProfileFiles::default(),
        )
        .unwrap();
        assert_eq!(
            s,
            Selector::AssumeRole {
                role_arn: "arn:aws:iam::123456789012:role/benchmark-runner".into(),
                session_name: "benchledger-short13-kimi-2026-11".into()
            }
        );
        assert_eq!(
            selector_label(m, &role.manifest.private),
            "role:arn:aws:iam::********9012:role/…"
        );
        let ip = frozen(
            &[("profile = \"bench-operator\"", "instance_profile = true")],
            &[],
        );
        assert_eq!(
            Selector::of(&ip.manifest.public, None, ProfileFiles::default()).unwrap(),
            Selector::InstanceProfile
        );
    }

    fn inst(id: &str, ty: &str, state: &str, tags: &[(&str, &str)]) -> LiveInstance {
        LiveInstance {
            id: id.into(),
            instance_type: ty.into(),
            state: state.into(),
            tags: tags
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    // rule GATE-2: available = quota - (running + pending); the central host counts once.
    #[test]
    fn quota_arithmetic() {
        let f = frozen(&[], &[]);
        let mut m = f.manifest.public.clone();
        // Example: concurrency 1 x sandbox 2 + headroom 4 (+ central 4 to provision).
        let vcpus: BTreeMap<String, u64> =
            [("m5.large".to_string(), 2), ("c7i.xlarge".to_string(), 4)].into();
        let live = vec![
            inst("i-1", "m5.large", "running", &[]),
            inst("i-2", "m5.large", "pending", &[]),
        ];
        let n = quota_numbers(&m, 14, &live, &vcpus).unwrap();
        assert_eq!(
            (n.used_vcpu, n.available_vcpu, n.required_vcpu),
            (4, 10, 10)
        );
        assert_eq!(n.status(), Status::Pass, "available == required passes");
        let n = quota_numbers(&m, 13, &live, &vcpus).unwrap();
        assert_eq!(n.status(), Status::Fail, "one below fails");
        // A live central host (run tag + central role) is in the use, not added again.
        let central = inst(
            "i-c",
            "c7i.xlarge",
            "running",
            &[
                ("benchledger:run", "short13-kimi-2026-11"),
                ("benchledger:role", "bitrouter-central"),
            ],
        );
        let with_central = [live.clone(), vec![central]].concat();
        let n = quota_numbers(&m, 14, &with_central, &vcpus).unwrap();
        assert!(n.central_live);
        assert_eq!((n.used_vcpu, n.required_vcpu, n.available_vcpu), (8, 6, 6));
        // Reuse never adds the central host.
        m.central.mode = CentralMode::Reuse;
        m.central.instance_id = Some("i-other".into());
        assert_eq!(
            quota_numbers(&m, 14, &live, &vcpus).unwrap().required_vcpu,
            6
        );
        // Stopped instances are not in the use; an unknown type is an error.
        let stopped = vec![inst("i-3", "zz.huge", "stopped", &[])];
        assert_eq!(
            quota_numbers(&m, 14, &stopped, &vcpus).unwrap().used_vcpu,
            0
        );
        let unknown = vec![inst("i-4", "zz.huge", "running", &[])];
        assert!(quota_numbers(&m, 14, &unknown, &vcpus)
            .unwrap_err()
            .0
            .contains("zz.huge"));
        // Use past the quota leaves 0 available, never a wrap.
        assert_eq!(
            quota_numbers(&m, 1, &live, &vcpus).unwrap().available_vcpu,
            0
        );
        let obs = quota_observation(&m, "us-east-1", &Err(AwsError("x".into())));
        assert_eq!(
            (obs.status, obs.error.as_deref()),
            (Status::Fail, Some("x"))
        );
    }

    fn found(resource: &str, id: &str, by: &str) -> FoundResource {
        FoundResource {
            resource: resource.into(),
            id: id.into(),
            state: "s".into(),
            found_by: by.into(),
        }
    }

    // rule CLEAN-2: the retained central host is excluded only by its instance id.
    #[test]
    fn only_the_central_instance_and_what_is_attached_to_it_are_excluded() {
        let c = Some("i-central");
        let central = found("instance", "i-central", "run_tag");
        let root = found("volume", "vol-c", "attachment_of:i-central");
        let both = found(
            "network_interface",
            "eni-c",
            "run_tag,attachment_of:i-central",
        );
        let sandbox = found("instance", "i-s", "run_tag");
        assert!(is_excluded(&central, c) && is_excluded(&root, c) && is_excluded(&both, c));
        assert!(!is_excluded(&sandbox, c));
        assert!(!is_excluded(&central, None));
        assert!(!is_excluded(&found("volume", "i-central", "run_tag"), c));
        assert_eq!(
            audit_status(&[central.clone(), root.clone()], c),
            Status::Pass
        );
        assert_eq!(
            audit_status(&[central.clone(), sandbox.clone()], c),
            Status::Fail
        );
        assert_eq!(audit_status(&[], None), Status::Pass);
        let plan = termination_plan(
            &[
                found("network_interface", "eni-1", "run_tag"),
                found("volume", "vol-1", "run_tag"),
                sandbox.clone(),
                central,
                root,
            ],
            c,
        );
        let order: Vec<&str> = plan.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(order, ["i-s", "vol-1", "eni-1"]);
    }

    #[test]
    fn residue_queries_cover_every_non_terminated_state() {
        for s in ["pending", "running", "shutting-down", "stopping", "stopped"] {
            assert!(LIVE_INSTANCE_STATES.contains(&s));
        }
        assert!(!LIVE_INSTANCE_STATES.contains(&"terminated"));
        assert_eq!(QUOTA_INSTANCE_STATES, ["pending", "running"]);
        let f = frozen(&[], &[]);
        let t = RunTags::of(&f.manifest.public);
        assert_eq!(
            t.recorded(),
            [
                "benchledger:run=short13-kimi-2026-11",
                "benchledger:role=sandbox|bitrouter-central"
            ]
        );
        assert_eq!(
            RunTags::sandboxes(&f.manifest.public).role_values,
            ["sandbox"]
        );
    }

    #[test]
    fn error_text_is_one_bounded_line_and_never_a_credential() {
        assert_eq!(clean("a\nb"), "a b");
        let long = "é".repeat(AWS_ERROR_BYTES_MAX);
        let c = clean(&long);
        assert!(c.len() <= AWS_ERROR_BYTES_MAX + '…'.len_utf8());
        let at = "a".repeat(AWS_ERROR_BYTES_MAX);
        assert_eq!(clean(&at), at);
        assert!(clean(&format!("{at}b")).ends_with('…'));
        assert!(clean("token AKIAIOSFODNN7EXAMPLE in text").contains("withheld"));
    }

    fn closed_port() -> u16 {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    }

    fn profile_files(
        dir: &std::path::Path,
        profiles: &[(&str, &str, &str, Option<&str>)],
    ) -> ProfileFiles {
        let mut creds = String::new();
        for (name, ak, sk, token) in profiles {
            creds.push_str(&format!(
                "[{name}]\naws_access_key_id = {ak}\naws_secret_access_key = {sk}\n"
            ));
            if let Some(t) = token {
                creds.push_str(&format!("aws_session_token = {t}\n"));
            }
        }
        let path = dir.join("credentials");
        std::fs::write(&path, creds).unwrap();
        ProfileFiles {
            config: Some(dir.join("config-absent")),
            credentials: Some(path),
        }
    }

    // An unreachable endpoint fails within the bounds, as an error (exit 4 in the CLI).
    #[test]
    fn an_unreachable_endpoint_is_a_bounded_error() {
        let dir = tempfile::tempdir().unwrap();
        let files = profile_files(dir.path(), &[("bench", "k", "s", None)]);
        let s = Session::open(
            &Selector::Profile {
                name: "bench".into(),
                files,
            },
            &Target {
                region: "us-east-1".into(),
                endpoint: Some(format!("http://127.0.0.1:{}", closed_port())),
                imds_endpoint: None,
            },
        )
        .unwrap();
        let t0 = Instant::now();
        let e = s.caller_identity().unwrap_err();
        assert!(e.0.starts_with("sts GetCallerIdentity: "), "{e}");
        assert!(t0.elapsed() < Duration::from_millis(AWS_OPERATION_TIMEOUT_MS));
        let e: Error = e.into();
        assert_eq!(e.class(), crate::error::ExitClass::Environment);
    }

    #[test]
    fn a_missing_profile_is_refused_before_any_call() {
        let dir = tempfile::tempdir().unwrap();
        let files = profile_files(dir.path(), &[("bench", "k", "s", None)]);
        let e = Session::open(
            &Selector::Profile {
                name: "bench-operator".into(),
                files,
            },
            &Target {
                region: "us-east-1".into(),
                endpoint: None,
                imds_endpoint: None,
            },
        )
        .err()
        .unwrap();
        assert!(
            matches!(
                e,
                Error::Refused {
                    rule: crate::schema::rule::Rule::Gate1,
                    ..
                }
            ),
            "{e}"
        );
    }

    // -----------------------------------------------------------------------
    // Against the moto server (tools/moto/test-aws.sh)
    // -----------------------------------------------------------------------

    fn moto_url() -> String {
        std::env::var("BENCHLEDGER_AWS_ENDPOINT_URL")
            .expect("moto tests need BENCHLEDGER_AWS_ENDPOINT_URL: run tools/moto/test-aws.sh")
    }

    struct Moto {
        session: Session,
        _dir: tempfile::TempDir,
        files: ProfileFiles,
    }

    /// A session on moto through the `profile` selector, with a temporary
    /// credentials file (no process environment is changed).
    fn moto(region: &str) -> Moto {
        let dir = tempfile::tempdir().unwrap();
        let files = profile_files(
            dir.path(),
            &[(
                "bench-test",
                "benchledger-test-key",
                "benchledger-test-secret",
                None,
            )],
        );
        let session = Session::open(
            &Selector::Profile {
                name: "bench-test".into(),
                files: files.clone(),
            },
            &moto_target(region),
        )
        .unwrap();
        Moto {
            session,
            _dir: dir,
            files,
        }
    }

    fn moto_target(region: &str) -> Target {
        Target {
            region: region.into(),
            endpoint: Some(moto_url()),
            imds_endpoint: None,
        }
    }

    fn unique(prefix: &str) -> String {
        format!("{prefix}-{}", crate::schema::time::now_utc_ns())
    }

    fn tag(k: &str, v: &str) -> aws_sdk_ec2::types::Tag {
        aws_sdk_ec2::types::Tag::builder().key(k).value(v).build()
    }

    fn tag_spec(
        kind: aws_sdk_ec2::types::ResourceType,
        tags: &[(&str, &str)],
    ) -> aws_sdk_ec2::types::TagSpecification {
        aws_sdk_ec2::types::TagSpecification::builder()
            .resource_type(kind)
            .set_tags(Some(tags.iter().map(|(k, v)| tag(k, v)).collect()))
            .build()
    }

    fn launch(s: &Session, ty: &str, tags: &[(&str, &str)]) -> String {
        use aws_sdk_ec2::types::{InstanceType, ResourceType};
        let out = s
            .block_on(
                s.ec2()
                    .run_instances()
                    .image_id("ami-0fedcba9876543210")
                    .instance_type(InstanceType::from(ty))
                    .min_count(1)
                    .max_count(1)
                    .tag_specifications(tag_spec(ResourceType::Instance, tags))
                    .tag_specifications(tag_spec(ResourceType::Volume, tags))
                    .tag_specifications(tag_spec(ResourceType::NetworkInterface, tags))
                    .send(),
            )
            .unwrap();
        out.instances()[0].instance_id().unwrap().to_string()
    }

    fn create_volume(s: &Session, tags: &[(&str, &str)]) -> String {
        use aws_sdk_ec2::types::ResourceType;
        s.block_on(
            s.ec2()
                .create_volume()
                .availability_zone(format!("{}a", s.region))
                .size(1)
                .tag_specifications(tag_spec(ResourceType::Volume, tags))
                .send(),
        )
        .unwrap()
        .volume_id()
        .unwrap()
        .to_string()
    }

    fn create_interface(s: &Session, tags: &[(&str, &str)]) -> String {
        use aws_sdk_ec2::types::ResourceType;
        let subnets = s.block_on(s.ec2().describe_subnets().send()).unwrap();
        let subnet = subnets.subnets()[0].subnet_id().unwrap().to_string();
        s.block_on(
            s.ec2()
                .create_network_interface()
                .subnet_id(subnet)
                .tag_specifications(tag_spec(ResourceType::NetworkInterface, tags))
                .send(),
        )
        .unwrap()
        .network_interface()
        .unwrap()
        .network_interface_id()
        .unwrap()
        .to_string()
    }

    /// The example manifest with its own run tag value and region.
    fn run_manifest(region: &str, run_value: &str) -> ManifestFile {
        let mut m = frozen(&[], &[]).manifest.public;
        m.tags.run_value = run_value.into();
        m.aws.region = region.into();
        m
    }

    fn ids(found: &[FoundResource], resource: &str) -> BTreeSet<String> {
        found
            .iter()
            .filter(|r| r.resource == resource)
            .map(|r| r.id.clone())
            .collect()
    }

    // rule GATE-1: STS GetCallerIdentity through the explicit profile; match and mismatch.
    #[test]
    #[ignore = "needs the moto server: tools/moto/test-aws.sh"]
    fn moto_sts_match_and_mismatch() {
        let t = moto("us-east-1");
        let id = t.session.caller_identity().unwrap();
        assert_eq!(id.account, MOTO_ACCOUNT);
        assert_eq!(id.arn, MOTO_PRINCIPAL);
        let good = moto_principal();
        let v = judge_identity(&key(), &good.manifest.private, &id);
        assert_eq!(v.status, Status::Pass);
        let other = frozen(
            &[],
            &[
                ("account = \"123456789012\"", "account = \"999999999999\""),
                (
                    "arn:aws:iam::123456789012:role/benchmark-runner",
                    "arn:aws:iam::999999999999:role/benchmark-runner",
                ),
            ],
        );
        let v = judge_identity(&key(), &other.manifest.private, &id);
        assert_eq!(v.status, Status::Fail);
        assert_eq!(v.account.redacted, "********9012");
        let obs = identity_observation(
            "l",
            "profile:bench-test",
            &moto_target("us-east-1"),
            vec![],
            &Ok(v),
        );
        assert_eq!(obs.endpoint_override, Some(moto_url()));
        assert!(obs.error.unwrap().contains("GATE-1"));
    }

    /// A fake IMDSv2 handing out `key` for role `bench-instance-role`.
    fn fake_imds(key: &'static str) -> Server {
        Server::start(move |r| match (r.method.as_str(), r.path.as_str()) {
            ("PUT", "/latest/api/token") => response(
                200,
                &[("x-aws-ec2-metadata-token-ttl-seconds", "21600")],
                b"imds-token",
            ),
            ("GET", "/latest/meta-data/iam/security-credentials/") => {
                response(200, &[], b"bench-instance-role")
            }
            ("GET", "/latest/meta-data/iam/security-credentials/bench-instance-role") => {
                let body = format!(
                    r#"{{"Code":"Success","LastUpdated":"2026-01-01T00:00:00Z","Type":"AWS-HMAC","AccessKeyId":"{key}","SecretAccessKey":"imds-secret","Token":"imds-token-value","Expiration":"2099-01-01T00:00:00Z"}}"#
                );
                response(200, &[], body.as_bytes())
            }
            _ => response(404, &[], b""),
        })
    }

    // rule GATE-1: the instance_profile and assume_role selectors, each its one provider.
    #[test]
    #[ignore = "needs the moto server: tools/moto/test-aws.sh"]
    fn moto_instance_profile_and_assume_role_selectors() {
        let imds = fake_imds("benchledger-imds-key");
        let target = Target {
            imds_endpoint: Some(imds.url()),
            ..moto_target("us-east-1")
        };
        let s = Session::open(&Selector::InstanceProfile, &target).unwrap();
        let id = s.caller_identity().unwrap();
        assert_eq!(id.account, MOTO_ACCOUNT);
        assert!(imds
            .requests
            .lock()
            .unwrap()
            .iter()
            .any(|r| r.path.ends_with("/bench-instance-role")));
        let role = frozen(
            &[("profile = \"bench-operator\"", "assume_role = true")],
            &[(
                "principal_arn = ",
                "role_arn = \"arn:aws:iam::123456789012:role/benchmark-runner\"\nprincipal_arn = ",
            )],
        );
        let sel = Selector::of(
            &role.manifest.public,
            Some("arn:aws:iam::123456789012:role/benchmark-runner"),
            ProfileFiles::default(),
        )
        .unwrap();
        let s = Session::open(&sel, &target).unwrap();
        let id = s.caller_identity().unwrap();
        assert_eq!(
            id.arn,
            "arn:aws:sts::123456789012:assumed-role/benchmark-runner/benchledger-short13-kimi-2026-11"
        );
        let v = judge_identity(&key(), &role.manifest.private, &id);
        assert_eq!(v.status, Status::Pass, "{v:?}");
    }

    // rule GATE-1: ambient AWS_ACCESS_KEY_ID (another account), AWS_PROFILE and
    // AWS_ENDPOINT_URL do not change the proven identity. The check runs in a
    // child process so this process's environment is never changed.
    #[test]
    #[ignore = "needs the moto server: tools/moto/test-aws.sh"]
    fn moto_ambient_credentials_do_not_change_the_identity() {
        let t = moto("us-east-1");
        let assumed = t
            .session
            .block_on(
                t.session
                    .sts()
                    .assume_role()
                    .role_arn("arn:aws:iam::111122223333:role/elsewhere")
                    .role_session_name("ambient")
                    .send(),
            )
            .unwrap();
        let c = assumed.credentials().unwrap();
        let (ak, sk, tok) = (
            c.access_key_id().to_string(),
            c.secret_access_key().to_string(),
            c.session_token().to_string(),
        );
        // Those keys really are another account's.
        let dir = tempfile::tempdir().unwrap();
        let files = profile_files(dir.path(), &[("other", &ak, &sk, Some(&tok))]);
        let other = Session::open(
            &Selector::Profile {
                name: "other".into(),
                files,
            },
            &moto_target("us-east-1"),
        )
        .unwrap();
        assert_eq!(other.caller_identity().unwrap().account, "111122223333");
        let exe = std::env::current_exe().unwrap();
        let out = std::process::Command::new(exe)
            .args([
                "aws::tests::moto_ambient_child",
                "--exact",
                "--include-ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("BENCHLEDGER_AMBIENT_CHILD", "1")
            .env(
                "BENCHLEDGER_AMBIENT_CREDENTIALS",
                t.files.credentials.as_ref().unwrap(),
            )
            .env("AWS_ACCESS_KEY_ID", &ak)
            .env("AWS_SECRET_ACCESS_KEY", &sk)
            .env("AWS_SESSION_TOKEN", &tok)
            .env("AWS_PROFILE", "other")
            .env("AWS_REGION", "eu-west-1")
            .env(
                "AWS_ENDPOINT_URL",
                format!("http://127.0.0.1:{}", closed_port()),
            )
            .env(
                "AWS_ENDPOINT_URL_STS",
                format!("http://127.0.0.1:{}", closed_port()),
            )
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{text}");
        assert!(
            text.contains("1 passed"),
            "the child test did not run: {text}"
        );
    }

    /// The child half of the ambient test (does nothing unless spawned by it).
    #[test]
    #[ignore = "spawned by moto_ambient_credentials_do_not_change_the_identity"]
    fn moto_ambient_child() {
        if std::env::var("BENCHLEDGER_AMBIENT_CHILD").as_deref() != Ok("1") {
            return;
        }
        let ambient = ambient_variables_present(std::env::vars().map(|(k, _)| k));
        for v in [
            "AWS_ACCESS_KEY_ID",
            "AWS_ENDPOINT_URL",
            "AWS_ENDPOINT_URL_STS",
            "AWS_PROFILE",
            "AWS_REGION",
            "AWS_SESSION_TOKEN",
        ] {
            assert!(
                ambient.contains(&v.to_string()),
                "{v} missing from {ambient:?}"
            );
        }
        let files = ProfileFiles {
            config: None,
            credentials: Some(
                std::env::var("BENCHLEDGER_AMBIENT_CREDENTIALS")
                    .unwrap()
                    .into(),
            ),
        };
        let s = Session::open(
            &Selector::Profile {
                name: "bench-test".into(),
                files,
            },
            &moto_target("us-east-1"),
        )
        .unwrap();
        let id = s.caller_identity().unwrap();
        assert_eq!(id.account, MOTO_ACCOUNT);
        let v = judge_identity(&key(), &moto_principal().manifest.private, &id);
        assert_eq!(v.status, Status::Pass);
    }

    fn set_moto_quota(value: u64) {
        let url = crate::gates::checks::parse_http_url(&format!(
            "{}/_benchledger/quotas/ec2/{}",
            moto_url(),
            manifest::EC2_VCPU_QUOTA_CODE
        ))
        .unwrap();
        let r = crate::gates::checks::http_exchange(
            "PUT",
            &url,
            &[("Content-Type".into(), "application/json".into())],
            format!("{{\"value\": {value}}}").as_bytes(),
            Duration::from_secs(10),
        )
        .unwrap();
        assert_eq!(r.status, 200, "{:?}", String::from_utf8_lossy(&r.body));
    }

    // rule GATE-2: quota sufficient at the bound, insufficient one below; a live central host counts once.
    #[test]
    #[ignore = "needs the moto server: tools/moto/test-aws.sh"]
    fn moto_quota_sufficient_and_insufficient() {
        // Its own region: the regional use is what this test launched.
        let region = "eu-north-1";
        let t = moto(region);
        let run = unique("quota");
        let m = run_manifest(region, &run);
        set_moto_quota(1_000);
        let base = measure_quota(&t.session, &m).unwrap().used_vcpu;
        let a = launch(&t.session, "m5.large", &[("project", "other")]);
        let b = launch(&t.session, "m5.large", &[("project", "other")]);
        // used = base + 4; required = 1 x 2 + 4 headroom + 4 central to provision = 10.
        set_moto_quota(base + 4 + 10);
        let n = measure_quota(&t.session, &m).unwrap();
        assert_eq!(n.used_vcpu, base + 4);
        assert_eq!(n.required_vcpu, 10);
        assert_eq!(n.status(), Status::Pass, "{n:?}");
        let obs = quota_observation(&m, region, &Ok(n));
        assert_eq!(
            (obs.quota_vcpu, obs.available_vcpu, obs.status),
            (base + 14, 10, Status::Pass)
        );
        set_moto_quota(base + 4 + 9);
        let n = measure_quota(&t.session, &m).unwrap();
        assert_eq!(n.status(), Status::Fail, "{n:?}");
        // A live central host (m5.xlarge, 4 vCPU) is in the use and not required again.
        let c = launch(
            &t.session,
            "m5.xlarge",
            &[
                ("benchledger:run", &run),
                ("benchledger:role", "bitrouter-central"),
            ],
        );
        set_moto_quota(base + 8 + 6);
        let n = measure_quota(&t.session, &m).unwrap();
        assert!(n.central_live);
        assert_eq!(
            (n.used_vcpu, n.required_vcpu, n.status()),
            (base + 8, 6, Status::Pass)
        );
        set_moto_quota(64);
        for id in [a, b, c] {
            t.session.terminate_instance(&id).unwrap();
        }
    }

    // rule CLEAN-1: exact run tag AND role tag, every live state, tracked ids and
    // their attachments; a project tag alone is never residue.
    #[test]
    #[ignore = "needs the moto server: tools/moto/test-aws.sh"]
    fn moto_audit_finds_every_run_resource_and_nothing_else() {
        let t = moto("us-west-2");
        let s = &t.session;
        let run = unique("audit");
        let m = run_manifest("us-west-2", &run);
        let tags = [
            ("benchledger:run", run.as_str()),
            ("benchledger:role", "sandbox"),
        ];
        let running = launch(s, "m5.large", &tags);
        let stopped = launch(s, "m5.large", &tags);
        s.block_on(s.ec2().stop_instances().instance_ids(&stopped).send())
            .unwrap();
        let gone = launch(s, "m5.large", &tags);
        s.terminate_instance(&gone).unwrap();
        let stray = create_volume(s, &tags);
        let orphan = create_interface(s, &tags);
        let project_only = create_volume(s, &[("project", "benchledger")]);
        let run_only = create_volume(s, &[("benchledger:run", run.as_str())]);
        let other_run = create_volume(
            s,
            &[
                ("benchledger:run", "another-run"),
                ("benchledger:role", "sandbox"),
            ],
        );
        let tracked: BTreeSet<String> = [running.clone()].into();
        let found = audit(s, &RunTags::of(&m), &tracked).unwrap();
        let instances = ids(&found, "instance");
        assert_eq!(
            instances,
            [running.clone(), stopped.clone()].into(),
            "{found:?}"
        );
        let states: BTreeMap<&str, &str> = found
            .iter()
            .filter(|r| r.resource == "instance")
            .map(|r| (r.id.as_str(), r.state.as_str()))
            .collect();
        assert_eq!(states[running.as_str()], "running");
        assert_eq!(states[stopped.as_str()], "stopped");
        let running_row = found.iter().find(|r| r.id == running).unwrap();
        assert_eq!(running_row.found_by, "run_tag,tracked_id");
        let volumes = ids(&found, "volume");
        assert!(volumes.contains(&stray), "{found:?}");
        for not in [&project_only, &run_only, &other_run] {
            assert!(!volumes.contains(not), "{not} must not be found: {found:?}");
        }
        let interfaces = ids(&found, "network_interface");
        assert!(interfaces.contains(&orphan), "{found:?}");
        // moto drops launch interface tags: only the tracked instance's
        // attachment finds its interface.
        let launch_eni = found.iter().find(|r| {
            r.resource == "network_interface" && r.found_by == format!("attachment_of:{running}")
        });
        assert!(launch_eni.is_some(), "{found:?}");
        let obs = audit_observation(
            GroupRef {
                lineage: "l".into(),
                group: "r1".into(),
            },
            &m,
            "us-west-2",
            "arn:aws:sts::********9012:user/…",
            &tracked,
            &Ok(found.clone()),
        );
        assert_eq!(obs.status, Status::Fail);
        assert_eq!(obs.tracked_instance_ids, std::slice::from_ref(&running));
        assert!(
            crate::log::guard::check_event(&crate::schema::events::Event::CleanupAudited(obs))
                .is_ok()
        );
        // Clean up what this test made.
        let plan = termination_plan(&found, None);
        terminate(s, &plan, Duration::from_secs(30), &mut |_| Ok(())).unwrap();
        for v in [project_only, run_only, other_run] {
            s.delete_volume(&v).unwrap();
        }
    }

    // rule CLEAN-2: the central host is excluded by its instance id only.
    #[test]
    #[ignore = "needs the moto server: tools/moto/test-aws.sh"]
    fn moto_central_host_excluded_by_id() {
        let t = moto("eu-west-2");
        let s = &t.session;
        let run = unique("central");
        let mut m = run_manifest("eu-west-2", &run);
        let central_tags = [
            ("benchledger:run", run.as_str()),
            ("benchledger:role", "bitrouter-central"),
        ];
        let central = launch(s, "m5.large", &central_tags);
        // Not the manifest's instance id: a run-tagged central host is residue.
        let found = audit(s, &RunTags::of(&m), &BTreeSet::new()).unwrap();
        assert_eq!(ids(&found, "instance"), [central.clone()].into());
        assert_eq!(
            audit_status(&found, m.central.instance_id.as_deref()),
            Status::Fail
        );
        // Named by id in the manifest: excluded, with its attached volume and interface.
        m.central.instance_id = Some(central.clone());
        let found = audit(s, &RunTags::of(&m), &BTreeSet::new()).unwrap();
        assert!(
            found
                .iter()
                .any(|r| r.found_by.contains(&format!("attachment_of:{central}"))),
            "{found:?}"
        );
        let obs = audit_observation(
            GroupRef {
                lineage: "l".into(),
                group: "r1".into(),
            },
            &m,
            "eu-west-2",
            "id",
            &BTreeSet::new(),
            &Ok(found.clone()),
        );
        assert_eq!(obs.status, Status::Pass, "{found:?}");
        assert_eq!(obs.excluded_central_instance_id, Some(central.clone()));
        assert!(termination_plan(&found, Some(&central)).is_empty());
        // A sandbox next to it is residue.
        let sandbox = launch(
            s,
            "m5.large",
            &[
                ("benchledger:run", run.as_str()),
                ("benchledger:role", "sandbox"),
            ],
        );
        let found = audit(s, &RunTags::of(&m), &BTreeSet::new()).unwrap();
        assert_eq!(audit_status(&found, Some(&central)), Status::Fail);
        let plan = termination_plan(&found, Some(&central));
        assert!(plan.iter().all(|r| r.id != central));
        assert!(plan.iter().any(|r| r.id == sandbox));
        m.central.instance_id = None;
        let found = audit(s, &RunTags::of(&m), &[sandbox].into()).unwrap();
        terminate(
            s,
            &termination_plan(&found, None),
            Duration::from_secs(30),
            &mut |_| Ok(()),
        )
        .unwrap();
    }

    // rule CLEAN-1, CLEAN-2: terminate what the audit proved, then the audit reaches zero.
    #[test]
    #[ignore = "needs the moto server: tools/moto/test-aws.sh"]
    fn moto_terminate_then_audit_reaches_zero() {
        let t = moto("ap-southeast-2");
        let s = &t.session;
        let run = unique("terminate");
        let m = run_manifest("ap-southeast-2", &run);
        let tags = [
            ("benchledger:run", run.as_str()),
            ("benchledger:role", "sandbox"),
        ];
        let a = launch(s, "m5.large", &tags);
        let b = launch(s, "m5.large", &tags);
        let stray = create_volume(s, &tags);
        let orphan = create_interface(s, &tags);
        let keep = create_volume(s, &[("project", "benchledger")]);
        assert_eq!(live_sandboxes(s, &m).unwrap().len(), 2);
        let tracked: BTreeSet<String> = [a.clone(), b.clone()].into();
        let found = audit(s, &RunTags::of(&m), &tracked).unwrap();
        assert_eq!(audit_status(&found, None), Status::Fail);
        let plan = termination_plan(&found, None);
        let mut recorded = Vec::new();
        let calls = terminate(s, &plan, Duration::from_secs(30), &mut |t| {
            recorded.push(t.clone());
            Ok(())
        })
        .unwrap();
        assert_eq!(calls, recorded, "every call is recorded as it happens");
        assert_eq!(calls.len(), plan.len());
        let answer = |id: &str| {
            calls
                .iter()
                .find(|c| c.resource.id == id)
                .unwrap()
                .answer
                .clone()
        };
        assert_eq!(answer(&a), "ok: shutting-down");
        assert_eq!(answer(&stray), "ok: deleted");
        assert_eq!(answer(&orphan), "ok: deleted");
        assert_eq!(calls[0].action, "TerminateInstances");
        // The tracked ids are followed again: the tail is zero.
        let after = audit(s, &RunTags::of(&m), &tracked).unwrap();
        assert_eq!(after, vec![], "tail not zero");
        assert_eq!(audit_status(&after, None), Status::Pass);
        assert_eq!(live_sandboxes(s, &m).unwrap(), vec![]);
        // The project-tagged volume was never touched.
        let still = s.volumes(&[filter("volume-id", [keep.clone()])]).unwrap();
        assert_eq!(still.len(), 1);
        s.delete_volume(&keep).unwrap();
    }

    // The monitor's count: live run-tagged sandboxes only (not the central host).
    #[test]
    #[ignore = "needs the moto server: tools/moto/test-aws.sh"]
    fn moto_live_sandbox_count() {
        let t = moto("sa-east-1");
        let s = &t.session;
        let run = unique("monitor");
        let m = run_manifest("sa-east-1", &run);
        assert_eq!(live_sandboxes(s, &m).unwrap(), vec![]);
        let a = launch(
            s,
            "m5.large",
            &[
                ("benchledger:run", run.as_str()),
                ("benchledger:role", "sandbox"),
            ],
        );
        let c = launch(
            s,
            "m5.large",
            &[
                ("benchledger:run", run.as_str()),
                ("benchledger:role", "bitrouter-central"),
            ],
        );
        assert_eq!(
            live_sandboxes(s, &m).unwrap(),
            vec![(a.clone(), "running".to_string())]
        );
        s.terminate_instance(&a).unwrap();
        s.terminate_instance(&c).unwrap();
        assert_eq!(live_sandboxes(s, &m).unwrap(), vec![]);
    }
}
