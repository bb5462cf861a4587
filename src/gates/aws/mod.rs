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
//!
//! Files: [`profile`] (a named profile resolved from its files alone),
//! [`session`] (the one provider and the clients), [`sts`] (GetCallerIdentity),
//! [`quota`] (GetServiceQuota and vCPUs per instance type), [`ec2`]
//! (Describe* queries, the residue audit, termination). What the answers
//! mean is judged in `crate::gates::rules`, compiled without this feature.

use aws_sdk_ec2::error::ProvideErrorMetadata;
use aws_sdk_ec2::types::Filter;

use crate::gates::rules::{clean, AwsError};

pub mod central;
pub mod ec2;
pub mod profile;
pub mod quota;
pub mod session;
pub mod sts;

pub use ec2::{audit, live_sandbox_instances, live_sandboxes, terminate, Attachable};
pub use profile::{resolve_profile, resolve_profile_text, ProfileChain};
pub use quota::measure_quota;
pub use session::Session;

/// Longest wait for one TCP connect to an AWS endpoint, in milliseconds.
pub const AWS_CONNECT_TIMEOUT_MS: u64 = 5_000;
/// Longest wait for one attempt of one API call, in milliseconds.
pub const AWS_ATTEMPT_TIMEOUT_MS: u64 = 20_000;
/// Longest wait for one API call with its retries, in milliseconds.
pub const AWS_OPERATION_TIMEOUT_MS: u64 = 60_000;
pub use crate::limits::AWS_ATTEMPTS_MAX;
/// Longest wait for one instance metadata (IMDS) request, in milliseconds.
pub const IMDS_TIMEOUT_MS: u64 = 2_000;
/// The instance metadata service on an EC2 host.
pub const IMDS_ENDPOINT_DEFAULT: &str = "http://169.254.169.254";
pub use crate::limits::DESCRIBE_PAGES_MAX;
/// Results asked per DescribeInstances page.
pub const INSTANCES_PER_PAGE: i32 = 1000;
/// Results asked per DescribeVolumes / DescribeNetworkInterfaces page.
pub const VOLUMES_PER_PAGE: i32 = 500;
pub use crate::limits::FILTER_VALUES_MAX;
/// Instance types per DescribeInstanceTypes call (AWS allows 100).
pub const INSTANCE_TYPES_PER_CALL: usize = 100;
pub use crate::limits::PROFILE_CHAIN_MAX;
pub use crate::limits::PROFILE_FILE_BYTES_MAX;
/// How long `terminate` waits for terminated instances before deleting
/// their volumes and interfaces, in milliseconds.
pub const TERMINATE_WAIT_MS: u64 = 600_000;
/// Poll interval of that wait, in milliseconds.
pub const TERMINATE_POLL_MS: u64 = 5_000;

impl AwsError {
    fn of(op: &str, e: impl std::error::Error + 'static) -> AwsError {
        AwsError(clean(&format!(
            "{op}: {}",
            aws_sdk_ec2::error::DisplayErrorContext(&e)
        )))
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

fn filter(name: &str, values: impl IntoIterator<Item = impl Into<String>>) -> Filter {
    Filter::builder()
        .name(name)
        .set_values(Some(values.into_iter().map(Into::into).collect()))
        .build()
}

#[cfg(test)]
mod tests;
