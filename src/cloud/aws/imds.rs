//! Instance metadata over IMDSv2 (token first) through the SDK's metadata client.

use std::time::Duration;

use anyhow::{anyhow, Result};
use async_trait::async_trait;
use aws_config::imds::client::error::ImdsError;

use super::cause_chain;
use crate::cloud::InstanceMetadata;

/// IMDSv2 with short timeouts and one retry, so that a node without a metadata service fails
/// within a few seconds. Honours `AWS_EC2_METADATA_SERVICE_ENDPOINT` and
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
                .read_timeout(Duration::from_secs(1))
                .operation_timeout(Duration::from_secs(4))
                .max_attempts(2)
                .build(),
        }
    }
}

impl Default for Imds {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl InstanceMetadata for Imds {
    async fn get(&self, path: &str) -> Result<Option<String>> {
        match self.client.get(format!("/latest/meta-data/{path}")).await {
            Ok(value) => Ok(Some(String::from(value))),
            Err(ImdsError::ErrorResponse(response))
                if response.response().status().as_u16() == 404 =>
            {
                Ok(None)
            }
            Err(err @ ImdsError::FailedToLoadToken(_)) => {
                let chain = cause_chain(&err);
                if chain.contains("timed out") || chain.contains("timeout") {
                    Err(anyhow!(
                        "the IMDSv2 token request (PUT /latest/api/token) got no answer: {chain}; \
                         from a container without host networking the answer is dropped by the \
                         metadata hop limit of 1 that kOps sets in its launch templates: run with \
                         host networking or raise the hop limit to 2"
                    ))
                } else {
                    Err(anyhow!("{chain}"))
                }
            }
            Err(err) => Err(anyhow!("{}", cause_chain(&err))),
        }
    }
}
