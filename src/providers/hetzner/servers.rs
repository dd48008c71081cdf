//! Hetzner Cloud's servers as kOps' protokube reads them: this server's id from the metadata
//! service and the server itself from the API (its gossip name `<name>-<id>`, its cluster
//! label), and the cluster's control-plane servers by label selector, every page, each by its
//! first private network address (`release-1.36:protokube/pkg/gossip/hetzner/seeds.go`).

use std::collections::BTreeMap;
use std::net::IpAddr;

use anyhow::{anyhow, bail, Context as _, Result};
use async_trait::async_trait;
use serde::Deserialize;

use crate::cloud::{tags, InstanceApi, InstanceInfo, InstanceMetadata, MetadataItem};
use crate::providers::http::escape;
use crate::providers::member_only::{checked_name, Clients};

/// kOps' label of the cluster a server belongs to (`cloudup/hetzner.TagKubernetesClusterName`).
pub(crate) const CLUSTER_LABEL: &str = "kops.k8s.io/cluster";
/// kOps' label of a server's role (`TagKubernetesInstanceRole`).
pub(crate) const ROLE_LABEL: &str = "kops.k8s.io/instance-role";
/// The role of the control plane's servers.
const CONTROL_PLANE: &str = "ControlPlane";
/// Servers per page, as kOps asks.
const PER_PAGE: u32 = 50;
/// The most pages read (50 000 servers): a paging answer that never ends is an error.
const MAX_PAGES: u64 = 1000;

#[derive(Debug, Deserialize)]
struct ServerAnswer {
    server: Server,
}

#[derive(Debug, Deserialize)]
struct ServersPage {
    servers: Vec<Server>,
    meta: Meta,
}

#[derive(Debug, Deserialize)]
struct Meta {
    pagination: Pagination,
}

#[derive(Debug, Deserialize)]
struct Pagination {
    next_page: Option<u64>,
}

/// A server as the API gives it, as far as protokube reads it.
#[derive(Clone, Debug, Deserialize)]
pub(crate) struct Server {
    id: u64,
    name: String,
    labels: BTreeMap<String, String>,
    private_net: Vec<PrivateNet>,
    public_net: PublicNet,
    /// Where it runs (the API's `datacenter` before it, deprecated, is not read).
    location: Location,
}

#[derive(Clone, Debug, Deserialize)]
struct PrivateNet {
    ip: IpAddr,
}

#[derive(Clone, Debug, Deserialize)]
struct PublicNet {
    ipv4: Option<PublicIpv4>,
}

#[derive(Clone, Debug, Deserialize)]
struct PublicIpv4 {
    ip: IpAddr,
}

#[derive(Clone, Debug, Deserialize)]
struct Location {
    name: String,
    network_zone: String,
}

impl Server {
    /// Its gossip name, as kOps' `InstanceID()`: `<name>-<id>`, the name checked as a host
    /// name.
    fn gossip_name(&self) -> Result<String> {
        let name = checked_name(
            &format!("Hetzner Cloud's server {}'s name", self.id),
            &self.name,
        )?;
        Ok(format!("{name}-{}", self.id))
    }

    /// Its labels under kOps' keys: the cluster's, and the control plane's role.
    fn kops_tags(&self) -> BTreeMap<String, String> {
        let mut found = BTreeMap::new();
        if let Some(cluster) = self.labels.get(CLUSTER_LABEL) {
            found.insert(tags::CLUSTER.to_owned(), cluster.clone());
        }
        if self.labels.get(ROLE_LABEL).map(String::as_str) == Some(CONTROL_PLANE) {
            found.insert(tags::CONTROL_PLANE_ROLE.to_owned(), "1".to_owned());
        }
        found
    }

    /// As a seed: its first private network address (kOps' rule), none without one.
    fn info(&self) -> Result<Option<InstanceInfo>> {
        let Some(private) = self.private_net.first() else {
            tracing::warn!(
                "Hetzner Cloud's server `{}` ({}) has no private network: not a seed",
                self.name.escape_debug(),
                self.id
            );
            return Ok(None);
        };
        Ok(Some(InstanceInfo {
            id: self.gossip_name()?,
            private_ips: vec![private.ip],
            public_ips: self.public_net.ipv4.iter().map(|v4| v4.ip).collect(),
            volumes: Vec::new(),
        }))
    }
}

/// This server and the cluster's, from the metadata service and the API.
pub(crate) struct Servers {
    clients: Clients,
    me: tokio::sync::OnceCell<Server>,
}

impl Servers {
    pub(crate) fn new(clients: Clients) -> Self {
        Self {
            clients,
            me: tokio::sync::OnceCell::new(),
        }
    }

    /// This server: its id from the metadata service, then the server (asked once).
    async fn me(&self) -> Result<&Server> {
        self.me
            .get_or_try_init(|| async {
                let said = self
                    .clients
                    .metadata
                    .get_text("metadata.instance-id", "instance-id")
                    .await?;
                let id: u64 = said.trim().parse().map_err(|_| {
                    anyhow!(
                        "the Hetzner metadata service's `instance-id` is `{}`, not a server id",
                        said.trim().escape_debug()
                    )
                })?;
                self.server(id).await
            })
            .await
    }

    async fn server(&self, id: u64) -> Result<Server> {
        let answer: ServerAnswer = self
            .clients
            .api()?
            .get_json("servers.get", &format!("servers/{id}"))
            .await?;
        Ok(answer.server)
    }

    /// The servers `selector` names, every page.
    async fn servers(&self, selector: &str) -> Result<Vec<Server>> {
        let api = self.clients.api()?;
        let mut found = Vec::new();
        let mut page = 1;
        loop {
            let path = format!(
                "servers?label_selector={}&per_page={PER_PAGE}&page={page}",
                escape(selector)
            );
            let answer: ServersPage = api.get_json("servers.list", &path).await?;
            found.extend(answer.servers);
            match answer.meta.pagination.next_page {
                Some(next) if next > page && next <= MAX_PAGES => page = next,
                Some(next) if next > page => {
                    bail!("Hetzner Cloud's servers run past {MAX_PAGES} pages")
                }
                Some(next) => {
                    bail!("Hetzner Cloud's page {page} of servers names page {next} as the next")
                }
                None => return Ok(found),
            }
        }
    }
}

#[async_trait]
impl InstanceMetadata for Servers {
    fn service(&self) -> &'static str {
        "the Hetzner metadata service and API"
    }

    fn path(&self, item: MetadataItem) -> &'static str {
        match item {
            MetadataItem::InstanceId => "instance-id (and the server's name)",
            MetadataItem::Zone | MetadataItem::Region => "the server's location",
            _ => "the server's networks",
        }
    }

    fn checks_its_names(&self) -> bool {
        true
    }

    async fn get(&self, item: MetadataItem) -> Result<Option<String>> {
        let me = self.me().await?;
        Ok(match item {
            MetadataItem::InstanceId => Some(me.gossip_name()?),
            MetadataItem::Zone => Some(checked_name("the server's location", &me.location.name)?),
            MetadataItem::Region => Some(checked_name(
                "the server's network zone",
                &me.location.network_zone,
            )?),
            MetadataItem::InternalIpv4 => me
                .private_net
                .iter()
                .map(|n| n.ip)
                .find(IpAddr::is_ipv4)
                .map(|ip| ip.to_string()),
            MetadataItem::InternalIpv6 => None,
            MetadataItem::ExternalIp => me.public_net.ipv4.as_ref().map(|v4| v4.ip.to_string()),
        })
    }
}

#[async_trait]
impl InstanceApi for Servers {
    async fn instance_tags(&self, instance_id: &str) -> Result<BTreeMap<String, String>> {
        let me = self.me().await?;
        if me.gossip_name()? == instance_id {
            return Ok(me.kops_tags());
        }
        // Another server, by its gossip name's id.
        let id = instance_id
            .rsplit('-')
            .next()
            .and_then(|id| id.parse().ok())
            .ok_or_else(|| {
                anyhow!("`{instance_id}` is not a Hetzner gossip name (`<server name>-<id>`)")
            })?;
        Ok(self.server(id).await?.kops_tags())
    }

    async fn running_masters(&self, cluster: &str) -> Result<Vec<InstanceInfo>> {
        let selector = format!("{CLUSTER_LABEL}={cluster},{ROLE_LABEL}={CONTROL_PLANE}");
        let servers = self
            .servers(&selector)
            .await
            .with_context(|| format!("listing the control-plane servers of cluster `{cluster}`"))?;
        let mut found = Vec::new();
        for server in &servers {
            // The selector is the API's to apply; a server it lets through that is not the
            // cluster's is never a seed.
            let tags = server.kops_tags();
            if tags.get(tags::CLUSTER).map(String::as_str) == Some(cluster)
                && tags.contains_key(tags::CONTROL_PLANE_ROLE)
            {
                found.extend(server.info()?);
            }
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests;
