//! OpenStack's servers as kOps' protokube reads them: this server from the metadata service's
//! `openstack/latest/meta_data.json` (its name is its gossip name; its cluster and role in its
//! metadata), and the cluster's control-plane servers from Nova's `servers/detail`, every page,
//! each by its fixed address on the cluster's network (`KopsNetwork`, else the cluster's name;
//! `release-1.36:protokube/pkg/gossip/openstack/seeds.go`, `cloudup/openstack.GetServerFixedIP`).

use std::collections::BTreeMap;
use std::net::IpAddr;

use anyhow::{anyhow, bail, Context as _, Result};
use async_trait::async_trait;
use serde::Deserialize;

use super::keystone::{self, Session};
use crate::cloud::{tags, InstanceApi, InstanceInfo, InstanceMetadata, MetadataItem};
use crate::providers::http::escape;
use crate::providers::member_only::checked_name;
use crate::providers::rest::{Calls, Rest, RestCloud};
use crate::wait::Deadline;

/// kOps' metadata key of a server's cluster (`cloudup/openstack.TagClusterName`).
pub(crate) const CLUSTER_KEY: &str = "KubernetesCluster";
/// Its role (`TagKopsRole`), `ControlPlane` on the control plane.
const ROLE_KEY: &str = "KopsRole";
/// The network its address is on (`TagKopsNetwork`), else the cluster's name.
const NETWORK_KEY: &str = "KopsNetwork";
const CONTROL_PLANE: &str = "ControlPlane";
/// Servers per page.
const LIMIT: u32 = 200;
/// The most pages read (200 000 servers).
const MAX_PAGES: u32 = 1000;

/// The metadata service's `meta_data.json`, as far as kOps reads it.
#[derive(Debug, Deserialize)]
struct MetaData {
    name: String,
    project_id: String,
    availability_zone: String,
    #[serde(default)]
    meta: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
struct ServersPage {
    servers: Vec<Server>,
    #[serde(default)]
    servers_links: Vec<Link>,
}

#[derive(Debug, Deserialize)]
struct Link {
    rel: String,
    href: String,
}

#[derive(Debug, Deserialize)]
struct Server {
    id: String,
    name: String,
    metadata: BTreeMap<String, String>,
    addresses: BTreeMap<String, Vec<Address>>,
}

#[derive(Debug, Deserialize)]
struct Address {
    addr: IpAddr,
    #[serde(rename = "OS-EXT-IPS:type")]
    kind: Option<String>,
}

/// kOps' metadata under kOps' keys: the cluster's, and the control plane's role.
fn kops_tags(metadata: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    if let Some(cluster) = metadata.get(CLUSTER_KEY) {
        found.insert(tags::CLUSTER.to_owned(), cluster.trim().to_owned());
    }
    if metadata.get(ROLE_KEY).map(String::as_str) == Some(CONTROL_PLANE) {
        found.insert(tags::CONTROL_PLANE_ROLE.to_owned(), "1".to_owned());
    }
    found
}

impl Server {
    /// As a seed: its fixed address on the cluster's network (kOps' rule: the last one listed),
    /// none when it is not on that network.
    fn info(&self, cluster: &str) -> Result<Option<InstanceInfo>> {
        let network = self
            .metadata
            .get(NETWORK_KEY)
            .map_or(cluster, String::as_str);
        let fixed = self.addresses.get(network).and_then(|addresses| {
            addresses
                .iter()
                .filter(|a| a.kind.as_deref() == Some("fixed"))
                .map(|a| a.addr)
                .next_back()
        });
        let Some(fixed) = fixed else {
            tracing::warn!(
                "OpenStack server `{}` ({}) has no fixed address on network `{network}`: not a seed",
                self.name.escape_debug(),
                self.id.escape_debug()
            );
            return Ok(None);
        };
        Ok(Some(InstanceInfo {
            id: checked_name("an OpenStack server's name", &self.name)?,
            private_ips: vec![fixed],
            public_ips: Vec::new(),
            volumes: Vec::new(),
        }))
    }
}

/// The marker of a `next` link (`…/servers/detail?limit=…&marker=<id>`).
fn next_marker(links: &[Link]) -> Option<String> {
    let next = links.iter().find(|l| l.rel == "next")?;
    let query = next.href.split_once('?')?.1;
    query.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=')?;
        (key == "marker").then(|| value.to_owned())
    })
}

/// This server and the cluster's: the metadata service, Keystone, then Nova.
pub(crate) struct Nova {
    metadata: Rest,
    keystone: Rest,
    /// Nova in messages.
    words: &'static RestCloud,
    /// What `POST /auth/tokens` is sent, or why there is nothing to send.
    credential: std::result::Result<serde_json::Value, String>,
    region: Option<String>,
    deadline: Deadline,
    calls: Calls,
    me: tokio::sync::OnceCell<MetaData>,
    compute: tokio::sync::OnceCell<Rest>,
}

impl Nova {
    pub(crate) fn new(
        metadata: Rest,
        keystone: Rest,
        words: &'static RestCloud,
        credential: std::result::Result<serde_json::Value, String>,
        region: Option<String>,
        deadline: Deadline,
        calls: Calls,
    ) -> Self {
        Self {
            metadata,
            keystone,
            words,
            credential,
            region,
            deadline,
            calls,
            me: tokio::sync::OnceCell::new(),
            compute: tokio::sync::OnceCell::new(),
        }
    }

    async fn me(&self) -> Result<&MetaData> {
        self.me
            .get_or_try_init(|| async {
                let read: MetaData = self
                    .metadata
                    .get_json("metadata.meta_data", "openstack/latest/meta_data.json")
                    .await?;
                checked_name("the server's name", &read.name)?;
                checked_name("the server's availability zone", &read.availability_zone)?;
                Ok(read)
            })
            .await
    }

    /// Nova, with a token Keystone gave (asked once).
    async fn compute(&self) -> Result<&Rest> {
        self.compute
            .get_or_try_init(|| async {
                let body = self
                    .credential
                    .clone()
                    .map_err(|why| anyhow::Error::from(crate::error::UsageError(why)))?;
                let Session { token, compute } =
                    keystone::authenticate(&self.keystone, body, self.region.as_deref()).await?;
                Rest::new(
                    self.words,
                    &compute,
                    &[("x-auth-token", token)],
                    self.deadline,
                    self.calls.clone(),
                    false,
                )
            })
            .await
    }

    /// The project's servers (`name` filtered when given), every page.
    async fn servers(&self, name: Option<&str>) -> Result<Vec<Server>> {
        let project = self.me().await?.project_id.clone();
        let compute = self.compute().await?;
        let mut found = Vec::new();
        let mut marker: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let mut path = format!(
                "servers/detail?limit={LIMIT}&tenant_id={}",
                escape(&project)
            );
            if let Some(name) = name {
                path.push_str(&format!("&name={}", escape(&format!("^{name}$"))));
            }
            if let Some(marker) = &marker {
                path.push_str(&format!("&marker={}", escape(marker)));
            }
            let page: ServersPage = compute.get_json("compute.servers.list", &path).await?;
            found.extend(page.servers);
            match next_marker(&page.servers_links) {
                Some(next) if marker.as_deref() != Some(next.as_str()) => marker = Some(next),
                Some(_) => bail!("Nova's next page of servers is the page it answered"),
                None => return Ok(found),
            }
        }
        bail!("OpenStack's servers run past {MAX_PAGES} pages")
    }
}

#[async_trait]
impl InstanceMetadata for Nova {
    fn service(&self) -> &'static str {
        "the OpenStack metadata service"
    }

    fn path(&self, _item: MetadataItem) -> &'static str {
        "openstack/latest/meta_data.json"
    }

    /// The server's name, its availability zone, and the region `OS_REGION_NAME` names (else
    /// the zone); the addresses are not read (the member learns its own toward its seeds).
    fn checks_its_names(&self) -> bool {
        true
    }

    async fn get(&self, item: MetadataItem) -> Result<Option<String>> {
        let me = self.me().await?;
        Ok(match item {
            MetadataItem::InstanceId => Some(checked_name("the server's name", &me.name)?),
            MetadataItem::Zone => Some(me.availability_zone.clone()),
            MetadataItem::Region => Some(
                self.region
                    .clone()
                    .unwrap_or_else(|| me.availability_zone.clone()),
            ),
            _ => None,
        })
    }
}

#[async_trait]
impl InstanceApi for Nova {
    async fn instance_tags(&self, instance_id: &str) -> Result<BTreeMap<String, String>> {
        let me = self.me().await?;
        if me.name.trim() == instance_id {
            return Ok(kops_tags(&me.meta));
        }
        let named = self.servers(Some(instance_id)).await?;
        let server = named
            .iter()
            .find(|s| s.name == instance_id)
            .ok_or_else(|| anyhow!("no OpenStack server is named `{instance_id}`"))?;
        Ok(kops_tags(&server.metadata))
    }

    async fn running_masters(&self, cluster: &str) -> Result<Vec<InstanceInfo>> {
        let servers = self
            .servers(None)
            .await
            .with_context(|| format!("listing the control-plane servers of cluster `{cluster}`"))?;
        let mut found = Vec::new();
        for server in &servers {
            let tags = kops_tags(&server.metadata);
            if tags.get(tags::CLUSTER).map(String::as_str) == Some(cluster)
                && tags.contains_key(tags::CONTROL_PLANE_ROLE)
            {
                found.extend(server.info(cluster)?);
            }
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_seed_is_the_last_fixed_address_on_the_clusters_network() {
        let server: Server = serde_json::from_value(json!({
            "id": "u1", "name": "master-1",
            "metadata": {"KubernetesCluster": "c.k8s.local", "KopsRole": "ControlPlane"},
            "addresses": {
                "c.k8s.local": [
                    {"addr": "10.0.0.4", "version": 4, "OS-EXT-IPS:type": "fixed"},
                    {"addr": "10.0.0.5", "version": 4, "OS-EXT-IPS:type": "fixed"},
                    {"addr": "203.0.113.4", "version": 4, "OS-EXT-IPS:type": "floating"},
                ],
                "other": [{"addr": "10.9.0.4", "version": 4, "OS-EXT-IPS:type": "fixed"}],
            },
        }))
        .unwrap();
        let info = server.info("c.k8s.local").unwrap().unwrap();
        assert_eq!(info.private_ips, ["10.0.0.5".parse::<IpAddr>().unwrap()]);
        let mut on_its_own: Server = server;
        on_its_own
            .metadata
            .insert(NETWORK_KEY.to_owned(), "other".to_owned());
        assert_eq!(
            on_its_own.info("c.k8s.local").unwrap().unwrap().private_ips,
            ["10.9.0.4".parse::<IpAddr>().unwrap()]
        );
        on_its_own
            .metadata
            .insert(NETWORK_KEY.to_owned(), "gone".to_owned());
        assert!(on_its_own.info("c.k8s.local").unwrap().is_none());
    }

    #[test]
    fn the_next_page_is_the_links_marker() {
        let links: Vec<Link> = serde_json::from_value(json!([
            {"rel": "next", "href": "https://nova/v2.1/servers/detail?limit=200&marker=u9"}
        ]))
        .unwrap();
        assert_eq!(next_marker(&links).as_deref(), Some("u9"));
        assert_eq!(next_marker(&[]), None);
    }
}
