//! Instance metadata over IMDSv2 (token first) through the SDK's metadata client.

use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use anyhow::{anyhow, Result};
use async_trait::async_trait;
use aws_config::imds::client::error::ImdsError;

use super::sdk::cause_chain;
use crate::cloud::{InstanceMetadata, MetadataItem};
use crate::error::Unreachable;

/// IMDSv2, one attempt per call: a metadata service that does not answer (yet) is
/// [`Unreachable`], and [`crate::cloud::patient`] waits for it up to `--timeout`. A connection
/// is made in 1 s or not at all (the service is link-local); an answer may take 10 s (a busy
/// host at boot). Honours `AWS_EC2_METADATA_SERVICE_ENDPOINT` and
/// `AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE=IPv6` (`http://[fd00:ec2::254]`).
#[derive(Clone, Debug)]
pub(crate) struct Imds {
    client: aws_config::imds::Client,
}

impl Imds {
    pub(crate) fn new() -> Self {
        Self {
            client: aws_config::imds::Client::builder()
                // Never through a proxy: the SDK's default client would take the environment's.
                .configure(
                    &aws_config::provider_config::ProviderConfig::default()
                        .with_http_client(super::sdk::direct_http_client()),
                )
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

/// Where IMDS keeps `item`, relative to `/latest/meta-data/`.
pub(crate) fn path(item: MetadataItem) -> &'static str {
    match item {
        MetadataItem::InstanceId => "instance-id",
        MetadataItem::Zone => "placement/availability-zone",
        MetadataItem::Region => "placement/region",
        MetadataItem::InternalIpv4 => "local-ipv4",
        MetadataItem::InternalIpv6 => "ipv6",
        MetadataItem::ExternalIp => "public-ipv4",
    }
}

#[async_trait]
impl InstanceMetadata for Imds {
    fn service(&self) -> &'static str {
        "the EC2 instance metadata service"
    }

    fn path(&self, item: MetadataItem) -> &'static str {
        path(item)
    }

    async fn get(&self, item: MetadataItem) -> Result<Option<String>> {
        let path = path(item);
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
            Err(err @ ImdsError::FailedToLoadToken(_)) if is_bad_token_answer(&err) => {
                // The SDK reads the body and headers of any token answer but a 400 or 403 and
                // says only what it lacks: ask the service what it answered.
                Err(match token_request_status().await {
                    Some(status @ (429 | 500..=599)) => Unreachable(format!(
                        "the metadata service answered HTTP {status} to the IMDSv2 token request \
                         (`PUT /latest/api/token`): it is failing or still starting"
                    ))
                    .into(),
                    Some(status) if !(200..300).contains(&status) => anyhow!(
                        "the metadata service answered HTTP {status} to the IMDSv2 token request \
                         (`PUT /latest/api/token`)"
                    ),
                    _ => Unreachable(format!(
                        "the metadata service's answer to the IMDSv2 token request (`PUT \
                         /latest/api/token`) is not a token: {}; something between this node \
                         and the metadata service (a proxy) may be changing it",
                        cause_chain(&err)
                    ))
                    .into(),
                })
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

/// Whether a failed token request got an answer that is not a token (the SDK's "no TTL
/// header", "invalid token", "invalid TTL"), as opposed to no answer at all.
fn is_bad_token_answer(err: &ImdsError) -> bool {
    let chain = cause_chain(err);
    ["TTL", "invalid token"]
        .iter()
        .any(|said| chain.contains(said))
}

/// The metadata service's endpoint as the SDK's client finds it: `AWS_EC2_METADATA_SERVICE_
/// ENDPOINT`, else the IPv6 or IPv4 link-local address by `…_ENDPOINT_MODE`.
fn endpoint() -> String {
    let given = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    match given("AWS_EC2_METADATA_SERVICE_ENDPOINT") {
        Some(endpoint) => endpoint,
        None if given("AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE")
            .is_some_and(|mode| mode.eq_ignore_ascii_case("ipv6")) =>
        {
            "http://[fd00:ec2::254]".to_owned()
        }
        None => "http://169.254.169.254".to_owned(),
    }
}

/// The HTTP status the metadata service gives a token request now (`None`: no answer in 2 s,
/// or not an HTTP answer): one plain HTTP/1.1 request, read up to its status line.
async fn token_request_status() -> Option<u16> {
    let endpoint = endpoint();
    let authority = endpoint
        .strip_prefix("http://")?
        .split('/')
        .next()
        .filter(|a| !a.is_empty())?
        .to_owned();
    let address = if authority
        .rsplit_once(':')
        .is_some_and(|(_, port)| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()))
        && !authority.ends_with(']')
    {
        authority.clone()
    } else {
        format!("{authority}:80")
    };
    let ask = async {
        let mut stream = tokio::net::TcpStream::connect(address).await.ok()?;
        let request = format!(
            "PUT /latest/api/token HTTP/1.1\r\nHost: {authority}\r\n\
             X-aws-ec2-metadata-token-ttl-seconds: 21600\r\nContent-Length: 0\r\n\
             Connection: close\r\n\r\n"
        );
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut head = vec![0u8; 64];
        let read = stream.read(&mut head).await.ok()?;
        let line = std::str::from_utf8(&head[..read]).ok()?;
        line.strip_prefix("HTTP/1.")?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    tokio::time::timeout(Duration::from_secs(2), ask)
        .await
        .ok()
        .flatten()
}
