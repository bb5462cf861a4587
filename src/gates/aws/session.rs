//! The session of a selector: its one explicit credentials provider, the
//! STS, EC2 and Service Quotas clients, and the runtime they block on. The
//! SdkConfig is built field by field; nothing is read from the environment.

use std::time::Duration;

use aws_config::imds;
use aws_config::imds::credentials::ImdsCredentialsProvider;
use aws_config::provider_config::ProviderConfig;
use aws_config::retry::RetryConfig;
use aws_config::sts::AssumeRoleProvider;
use aws_config::timeout::TimeoutConfig;
use aws_config::BehaviorVersion;
use aws_credential_types::provider::SharedCredentialsProvider;
use aws_smithy_async::rt::sleep::TokioSleep;
use aws_smithy_async::time::SystemTimeSource;
use aws_smithy_http_client::tls;
use aws_types::region::Region;
use aws_types::SdkConfig;

use super::profile::{resolve_profile, ProfileChain};
use super::{
    AWS_ATTEMPTS_MAX, AWS_ATTEMPT_TIMEOUT_MS, AWS_CONNECT_TIMEOUT_MS, AWS_OPERATION_TIMEOUT_MS,
    IMDS_ENDPOINT_DEFAULT, IMDS_TIMEOUT_MS,
};
use crate::error::{Error, Result};
use crate::gates::rules::{Selector, Target};

/// An authenticated connection to one region: the explicit provider, the
/// three clients and the runtime they run on. Calls block.
pub struct Session {
    pub(super) sts: aws_sdk_sts::Client,
    pub(super) ec2: aws_sdk_ec2::Client,
    pub(super) quotas: aws_sdk_servicequotas::Client,
    pub region: String,
    // Last: the clients (and their connection pools) drop before their runtime.
    pub(super) rt: tokio::runtime::Runtime,
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
