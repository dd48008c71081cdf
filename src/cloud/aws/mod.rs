//! The AWS implementation of the cloud traits: one SDK configuration built in one place, shared
//! by EC2 ([`ec2`]) and Route53 ([`route53`]); instance metadata over IMDSv2 ([`imds`]).

pub mod ec2;
pub mod imds;
pub mod route53;

use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Result};
use async_trait::async_trait;
use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_ec2::error::{ProvideErrorMetadata, SdkError};

use super::{Cloud, CloudClients, InstanceMetadata};

/// Attempts per AWS call (the first try included); throttling and 5xx are retried with backoff.
const MAX_ATTEMPTS: u32 = 6;

/// AWS: IMDSv2 for the metadata, EC2 and Route53 clients sharing one SDK configuration.
#[derive(Debug, Default)]
pub struct AwsCloud {
    imds: imds::Imds,
}

impl AwsCloud {
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl Cloud for AwsCloud {
    fn metadata(&self) -> &dyn InstanceMetadata {
        &self.imds
    }

    async fn connect(&self, region: &str) -> Result<CloudClients> {
        let config = load_sdk_config(region).await;
        let ec2 = Arc::new(ec2::Ec2::new(&config));
        Ok(CloudClients {
            volumes: ec2.clone(),
            instances: ec2,
            dns: Arc::new(route53::Route53::new(&config)),
        })
    }
}

/// Loads the one SDK configuration every AWS client of a run shares: region from the node's
/// identity, standard retries, bounded timeouts, no stalled-stream ticking. Endpoint and
/// credentials come from the SDK's standard chain, so `AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`,
/// profiles and instance roles work.
pub async fn load_sdk_config(region: &str) -> SdkConfig {
    aws_config::defaults(BehaviorVersion::latest())
        .region(Region::new(region.to_owned()))
        .retry_config(
            RetryConfig::standard()
                .with_max_attempts(MAX_ATTEMPTS)
                .with_initial_backoff(Duration::from_millis(200))
                .with_max_backoff(Duration::from_secs(10)),
        )
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(Duration::from_secs(5))
                .operation_attempt_timeout(Duration::from_secs(30))
                .build(),
        )
        // Stalled-stream protection watches streaming bodies (large downloads) with a 25 ms
        // tick; protokube's answers are small and bounded by the attempt timeout above, and the
        // tick costs CPU for as long as an answer takes.
        .stalled_stream_protection(
            aws_config::stalled_stream_protection::StalledStreamProtectionConfig::disabled(),
        )
        .load()
        .await
}

/// Turns an SDK error into one readable line: the service's error code and message when the
/// service answered, else the chain of causes (connection refused, timeout, …).
pub(crate) fn sdk_error<E, R>(err: SdkError<E, R>) -> anyhow::Error
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    if let Some(code) = err.code() {
        let message = err.message().unwrap_or("no message");
        return anyhow!("{code}: {message}");
    }
    anyhow!("{}", cause_chain(&err))
}

/// The `Display` of an error and its sources, joined with `: `, leaving out a cause whose text
/// the previous one already contains.
pub(crate) fn cause_chain(err: &dyn std::error::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut current: Option<&dyn std::error::Error> = Some(err);
    while let Some(e) = current {
        let text = e.to_string();
        if !text.is_empty() && !parts.last().is_some_and(|last| last.contains(&text)) {
            parts.push(text);
        }
        current = e.source();
    }
    parts.join(": ")
}

/// A field the cloud must send: its absence is an error naming the field and the answer.
pub(crate) fn required<T>(value: Option<T>, field: &str, answer: &str) -> Result<T> {
    value.ok_or_else(|| anyhow!("the {answer} answer has no `{field}`"))
}
