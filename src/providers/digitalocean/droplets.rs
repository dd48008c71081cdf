//! DigitalOcean's droplets as kOps' protokube reads them, and as it should: this droplet's name
//! (its gossip name), region and tags from the metadata service; the cluster's control-plane
//! droplets, each by its private IPv4 address (`release-1.36:protokube/pkg/gossip/do/seeds.go`).
//! Beyond kOps: the cluster tag is matched exactly (kOps matches a substring, so cluster
//! `c.k8s.local`, tagged `KubernetesCluster:c-k8s-local`, would take the masters of
//! `c-k8s-local-2.k8s.local`), asked of the API as a filter, and every page is read (kOps reads
//! the first).

use std::collections::BTreeMap;
use std::net::IpAddr;

use anyhow::{anyhow, bail, Context as _, Result};
use async_trait::async_trait;
use serde::Deserialize;

use crate::cloud::{tags, InstanceApi, InstanceInfo, InstanceMetadata, MetadataItem};
use crate::providers::http::escape;
use crate::providers::member_only::{checked_name, Clients};

/// kOps' cluster tag: `KubernetesCluster:<cluster name, dots as dashes>`
/// (`cloudup/do.TagKubernetesClusterNamePrefix`).
pub(crate) const CLUSTER_TAG: &str = "KubernetesCluster";
/// kOps' role tag of a control-plane droplet (`TagKubernetesInstanceRole`).
const CONTROL_PLANE_TAG: &str = "kops-instance-role:ControlPlane";
/// Droplets per page: the API's most.
const PER_PAGE: u32 = 200;
/// The most pages read (200 000 droplets): a paging answer that never ends is an error.
const MAX_PAGES: u32 = 1000;

#[derive(Debug, Deserialize)]
struct DropletsPage {
    droplets: Vec<Droplet>,
    links: Links,
}

#[derive(Debug, Default, Deserialize)]
struct Links {
    #[serde(default)]
    pages: Pages,
}

#[derive(Debug, Default, Deserialize)]
struct Pages {
    next: Option<String>,
}

/// A droplet as the API gives it, as far as protokube reads it.
#[derive(Debug, Deserialize)]
struct Droplet {
    id: u64,
    name: String,
    tags: Vec<String>,
    networks: Networks,
}

#[derive(Debug, Deserialize)]
struct Networks {
    v4: Vec<Network>,
}

#[derive(Debug, Deserialize)]
struct Network {
    ip_address: IpAddr,
    #[serde(rename = "type")]
    kind: String,
}

/// The cluster tag of cluster `cluster`, as kOps writes it.
fn cluster_tag(cluster: &str) -> String {
    format!("{CLUSTER_TAG}:{}", cluster.replace('.', "-"))
}

/// `tags` under kOps' keys: the cluster's (as the tag has it, dots as dashes), and the control
/// plane's role.
fn kops_tags(found: &[String]) -> BTreeMap<String, String> {
    let mut kops = BTreeMap::new();
    for tag in found {
        if let Some(cluster) = tag
            .strip_prefix(CLUSTER_TAG)
            .and_then(|t| t.strip_prefix(':'))
        {
            kops.insert(tags::CLUSTER.to_owned(), cluster.to_owned());
        }
        if tag == CONTROL_PLANE_TAG {
            kops.insert(tags::CONTROL_PLANE_ROLE.to_owned(), "1".to_owned());
        }
    }
    kops
}

impl Droplet {
    /// As a seed: its first private IPv4 address (godo's `PrivateIPv4`), none without one.
    fn info(&self) -> Result<Option<InstanceInfo>> {
        let private = self
            .networks
            .v4
            .iter()
            .find(|n| n.kind == "private")
            .map(|n| n.ip_address);
        let Some(private) = private else {
            tracing::warn!(
                "DigitalOcean's droplet `{}` ({}) has no private address: not a seed",
                self.name.escape_debug(),
                self.id
            );
            return Ok(None);
        };
        Ok(Some(InstanceInfo {
            id: checked_name("DigitalOcean's droplet name", &self.name)?,
            private_ips: vec![private],
            public_ips: self
                .networks
                .v4
                .iter()
                .filter(|n| n.kind == "public")
                .map(|n| n.ip_address)
                .collect(),
            volumes: Vec::new(),
        }))
    }
}

/// This droplet as its metadata service says it.
#[derive(Debug)]
struct Me {
    name: String,
    region: String,
    tags: Vec<String>,
}

/// This droplet and the cluster's, from the metadata service and the API.
pub(crate) struct Droplets {
    clients: Clients,
    me: tokio::sync::OnceCell<Me>,
}

impl Droplets {
    pub(crate) fn new(clients: Clients) -> Self {
        Self {
            clients,
            me: tokio::sync::OnceCell::new(),
        }
    }

    /// This droplet (its metadata, asked once).
    async fn me(&self) -> Result<&Me> {
        self.me
            .get_or_try_init(|| async {
                let metadata = &self.clients.metadata;
                let name = metadata.get_text("metadata.hostname", "hostname").await?;
                let region = metadata.get_text("metadata.region", "region").await?;
                let tags = metadata.get_text("metadata.tags", "tags").await?;
                Ok(Me {
                    name: checked_name("the droplet's name", &name)?,
                    region: checked_name("the droplet's region", &region)?,
                    tags: tags
                        .lines()
                        .map(str::trim)
                        .filter(|t| !t.is_empty())
                        .map(str::to_owned)
                        .collect(),
                })
            })
            .await
    }

    /// The droplets `query` (`tag_name=…`, `name=…`) names, every page.
    async fn droplets(&self, query: &str) -> Result<Vec<Droplet>> {
        let api = self.clients.api()?;
        let mut found = Vec::new();
        for page in 1..=MAX_PAGES {
            let path = format!("droplets?{query}&per_page={PER_PAGE}&page={page}");
            let answer: DropletsPage = api.get_json("droplets.list", &path).await?;
            found.extend(answer.droplets);
            if answer.links.pages.next.is_none() {
                return Ok(found);
            }
        }
        bail!("DigitalOcean's droplets run past {MAX_PAGES} pages")
    }
}

#[async_trait]
impl InstanceMetadata for Droplets {
    fn service(&self) -> &'static str {
        "the droplet metadata service"
    }

    fn path(&self, item: MetadataItem) -> &'static str {
        match item {
            MetadataItem::InstanceId => "hostname",
            MetadataItem::Zone | MetadataItem::Region => "region",
            _ => "interfaces",
        }
    }

    /// The droplet's name, its region (zone and region alike); the addresses are not read (the
    /// member learns its own toward its seeds).
    fn checks_its_names(&self) -> bool {
        true
    }

    async fn get(&self, item: MetadataItem) -> Result<Option<String>> {
        let me = self.me().await?;
        Ok(match item {
            MetadataItem::InstanceId => Some(me.name.clone()),
            MetadataItem::Zone | MetadataItem::Region => Some(me.region.clone()),
            _ => None,
        })
    }
}

#[async_trait]
impl InstanceApi for Droplets {
    async fn instance_tags(&self, instance_id: &str) -> Result<BTreeMap<String, String>> {
        let me = self.me().await?;
        if me.name == instance_id {
            return Ok(kops_tags(&me.tags));
        }
        let named = self
            .droplets(&format!("name={}", escape(instance_id)))
            .await?;
        let droplet = named
            .iter()
            .find(|d| d.name == instance_id)
            .ok_or_else(|| anyhow!("no droplet is named `{instance_id}`"))?;
        Ok(kops_tags(&droplet.tags))
    }

    async fn running_masters(&self, cluster: &str) -> Result<Vec<InstanceInfo>> {
        let tag = cluster_tag(cluster);
        let droplets = self
            .droplets(&format!("tag_name={}", escape(&tag)))
            .await
            .with_context(|| {
                format!("listing the control-plane droplets of cluster `{cluster}`")
            })?;
        let mut found = Vec::new();
        for droplet in &droplets {
            // Exactly the cluster's tag (kOps matches a substring), and the control plane's role.
            let ours = droplet.tags.contains(&tag);
            let control_plane = droplet.tags.iter().any(|t| t == CONTROL_PLANE_TAG);
            if ours && control_plane {
                found.extend(droplet.info()?);
            }
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests;
