//! The GCE metadata server (`http://169.254.169.254/computeMetadata/v1/`: by address, as
//! Google's Go client that kOps and etcd-manager use reaches it, so no resolver is needed; header
//! `Metadata-Flavor: Google`; `GCE_METADATA_HOST` overrides host and port as in Google's own
//! libraries): the node's identity, its project and cluster name, and the default service
//! account's access token, renewed before it expires. One attempt per call: a server that does
//! not answer (yet) is [`Unreachable`], waited for by the caller's patience.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context as _, Result};
use async_trait::async_trait;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use hyper::Request;
use tokio::sync::Mutex;

use crate::cloud::{InstanceMetadata, MetadataItem};
use crate::error::Unreachable;
use crate::providers::http::{http_client, HttpClient};
use crate::proxy::EgressProxies;

/// Where the server is unless `GCE_METADATA_HOST` says otherwise: its link-local address, not
/// `metadata.google.internal`, which needs the VPC's resolver (a DNS server policy or an image's
/// own resolv.conf may not reach it); Google's Go client does the same
/// (`cloud.google.com/go/compute/metadata`: `metadataIP`).
pub(crate) const DEFAULT_HOST: &str = "169.254.169.254";
/// A token is renewed this long before it expires.
const TOKEN_MARGIN: Duration = Duration::from_mins(1);
/// The largest answer read (a token is about 1 KiB).
const MAX_ANSWER_BYTES: usize = 64 << 10;

/// The metadata server of this instance.
pub(crate) struct MetadataServer {
    http: HttpClient,
    root: String,
    token: Mutex<Option<(String, Instant)>>,
}

/// The token endpoint's answer.
#[derive(serde::Deserialize)]
struct TokenAnswer {
    access_token: String,
    expires_in: u64,
}

impl MetadataServer {
    /// The server at `GCE_METADATA_HOST` (`host:port`), else `169.254.169.254`.
    pub(crate) fn from_env() -> Result<Self> {
        let host = std::env::var("GCE_METADATA_HOST")
            .ok()
            .filter(|h| !h.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_HOST.to_owned());
        if host.contains(['/', '@', ' ']) {
            bail!(
                "GCE_METADATA_HOST: `{}` is not a host or host:port",
                host.escape_debug()
            );
        }
        Ok(Self {
            // The server is link-local: a connection is made at once or not at all.
            http: http_client(Duration::from_secs(1), Arc::new(EgressProxies::none()))?,
            root: format!("http://{host}/computeMetadata/v1/"),
            token: Mutex::new(None),
        })
    }

    /// The server whose `computeMetadata/v1/` is at `root` (a local answer in tests).
    #[cfg(test)]
    pub(crate) fn at(root: &str) -> Result<Self> {
        Ok(Self {
            http: http_client(Duration::from_secs(1), Arc::new(EgressProxies::none()))?,
            root: root.to_owned(),
            token: Mutex::new(None),
        })
    }

    /// The value at `path` (relative to `computeMetadata/v1/`), `None` when the server says it
    /// does not exist.
    pub(crate) async fn get(&self, path: &str) -> Result<Option<String>> {
        let request = Request::get(format!("{}{path}", self.root))
            .header("metadata-flavor", "Google")
            .body(Full::new(Bytes::new()))?;
        let answer = tokio::time::timeout(Duration::from_secs(10), self.http.request(request))
            .await
            .map_err(|_| Unreachable("the GCE metadata server did not answer within 10s".into()))?
            .map_err(|err| {
                Unreachable(format!(
                    "cannot reach the GCE metadata server at `{}`: {}",
                    self.root,
                    crate::error::one_line(&anyhow::Error::from(err))
                ))
            })?;
        let status = answer.status();
        let flavored = answer
            .headers()
            .get("metadata-flavor")
            .is_some_and(|v| v == "Google");
        let body = http_body_util::Limited::new(answer.into_body(), MAX_ANSWER_BYTES)
            .collect()
            .await
            .map_err(|err| Unreachable(format!("reading the metadata server's answer: {err}")))?
            .to_bytes();
        match status.as_u16() {
            200 if !flavored => bail!(
                "`{}{path}` answered without `Metadata-Flavor: Google`: not the GCE metadata \
                 server (a proxy?)",
                self.root
            ),
            200 => String::from_utf8(body.to_vec())
                .map(Some)
                .map_err(|_| anyhow!("the metadata server's `{path}` is not UTF-8")),
            404 => Ok(None),
            // Busy or starting: not there yet.
            429 | 500..=599 => Err(Unreachable(format!(
                "the GCE metadata server answered HTTP {status} for `{path}`"
            ))
            .into()),
            _ => bail!("the GCE metadata server answered HTTP {status} for `{path}`"),
        }
    }

    /// A value that must exist.
    async fn required(&self, path: &str) -> Result<String> {
        let value = self
            .get(path)
            .await?
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty());
        value.ok_or_else(|| anyhow!("the GCE metadata server has no `{path}`"))
    }

    /// The project this instance runs in.
    pub(crate) async fn project_id(&self) -> Result<String> {
        self.required("project/project-id").await
    }

    /// Forgets the access token (Google rejected it): the next call fetches a new one.
    pub(crate) async fn forget_token(&self) {
        *self.token.lock().await = None;
    }

    /// The default service account's access token, fetched again shortly before it expires.
    pub(crate) async fn token(&self) -> Result<String> {
        let mut cached = self.token.lock().await;
        if let Some((token, renew_at)) = cached.as_ref() {
            if Instant::now() < *renew_at {
                return Ok(token.clone());
            }
        }
        let path = "instance/service-accounts/default/token";
        let text = self
            .get(path)
            .await?
            .ok_or_else(|| anyhow!("this instance has no default service account (`{path}`)"))?;
        let answer: TokenAnswer = serde_json::from_str(&text)
            .with_context(|| format!("reading the metadata server's `{path}`"))?;
        let lasts = Duration::from_secs(answer.expires_in).saturating_sub(TOKEN_MARGIN);
        *cached = Some((answer.access_token.clone(), Instant::now() + lasts));
        Ok(answer.access_token)
    }
}

/// The last `/`-separated part of a resource URL or path (`projects/1/zones/us-test1-a` →
/// `us-test1-a`).
pub(crate) fn last_part(value: &str) -> &str {
    value.rsplit('/').next().unwrap_or(value)
}

/// The region of zone `zone`: all before its last `-` (`us-central1-b` → `us-central1`).
pub(crate) fn region_of(zone: &str) -> Option<&str> {
    zone.rsplit_once('-').map(|(region, _)| region)
}

/// Where the server keeps each item.
fn path(item: MetadataItem) -> &'static str {
    match item {
        MetadataItem::InstanceId => "instance/name",
        MetadataItem::Zone | MetadataItem::Region => "instance/zone",
        MetadataItem::InternalIpv4 => "instance/network-interfaces/0/ip",
        MetadataItem::InternalIpv6 => "instance/network-interfaces/0/ipv6s",
        MetadataItem::ExternalIp => "instance/network-interfaces/0/access-configs/0/external-ip",
    }
}

#[async_trait]
impl InstanceMetadata for MetadataServer {
    fn service(&self) -> &'static str {
        "the GCE metadata server"
    }

    fn path(&self, item: MetadataItem) -> &'static str {
        path(item)
    }

    /// The instance's name (not its hostname) is its id; the zone is the last part of
    /// `instance/zone`, the region all of it before its last `-`; an empty address is none.
    async fn get(&self, item: MetadataItem) -> Result<Option<String>> {
        let value = self
            .get(path(item))
            .await?
            .map(|v| v.lines().next().unwrap_or_default().trim().to_owned())
            .filter(|v| !v.is_empty());
        Ok(match (item, value) {
            (MetadataItem::Zone, Some(zone)) => Some(last_part(&zone).to_owned()),
            (MetadataItem::Region, Some(zone)) => {
                let zone = last_part(&zone);
                Some(
                    region_of(zone)
                        .ok_or_else(|| {
                            anyhow!("the metadata server's zone `{zone}` has no region")
                        })?
                        .to_owned(),
                )
            }
            (_, value) => value,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zones_and_regions_read_from_resource_paths() {
        assert_eq!(last_part("projects/123456/zones/us-test1-a"), "us-test1-a");
        assert_eq!(last_part("us-test1-a"), "us-test1-a");
        assert_eq!(region_of("us-central1-b"), Some("us-central1"));
        assert_eq!(region_of("nowhere"), None);
    }
}
