//! Instance metadata over IMDSv2 (token first) through the SDK's metadata client.

use std::time::Duration;

use anyhow::{anyhow, Result};
use async_trait::async_trait;
use aws_config::imds::client::error::ImdsError;

use super::cause_chain;
use crate::cloud::InstanceMetadata;
use crate::error::Unreachable;

/// IMDSv2, one attempt per call: a metadata service that does not answer (yet) is
/// [`Unreachable`], and [`crate::cloud::patient`] waits for it up to `--timeout`. A connection
/// is made in 1 s or not at all (the service is link-local); an answer may take 10 s (a busy
/// host at boot). Honours `AWS_EC2_METADATA_SERVICE_ENDPOINT` and
/// `AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE=IPv6` (`http://[fd00:ec2::254]`).
#[derive(Clone, Debug)]
pub struct Imds {
    client: aws_config::imds::Client,
}

impl Imds {
    pub fn new() -> Self {
        Self {
            client: aws_config::imds::Client::builder()
                .connect_timeout(Duration::from_secs(1))
                .read_timeout(Duration::from_secs(10))
                .operation_timeout(Duration::from_secs(12))
                .max_attempts(1)
                .build(),
        }
    }
}

impl Default for Imds {
    fn default() -> Self {
        Self::new()
    }
}

/// Why a token request got no answer, when the cause is a timeout: the hop limit is one
/// possible reason among others, said as such.
const HOP_LIMIT_HINT: &str = "if protokube runs in a container without host networking, the \
     metadata hop limit of 1 that kOps sets in its launch templates drops the token's answer: \
     run with host networking or raise the hop limit to 2";

#[async_trait]
impl InstanceMetadata for Imds {
    async fn get(&self, path: &str) -> Result<Option<String>> {
        match self.client.get(format!("/latest/meta-data/{path}")).await {
            Ok(value) => Ok(Some(String::from(value))),
            Err(ImdsError::ErrorResponse(response)) => {
                let status = response.response().status().as_u16();
                match status {
                    404 => Ok(None),
                    // Busy, starting or throttling (IMDS throttles at 429): not there yet.
                    429 | 500..=599 => Err(Unreachable(format!(
                        "the metadata service answered HTTP {status}"
                    ))
                    .into()),
                    _ => Err(anyhow!("the metadata service answered HTTP {status}")),
                }
            }
            Err(err @ (ImdsError::FailedToLoadToken(_) | ImdsError::IoError(_))) => {
                let chain = cause_chain(&err);
                let message = if chain.contains("timed out") || chain.contains("timeout") {
                    // The SDK reports a token request that got no answer either way.
                    format!(
                        "the metadata service got no answer (IMDSv2: the token request PUT \
                         /latest/api/token first): {chain}; {HOP_LIMIT_HINT}"
                    )
                } else {
                    chain
                };
                Err(Unreachable(message).into())
            }
            Err(err) => Err(anyhow!("{}", cause_chain(&err))),
        }
    }
}
