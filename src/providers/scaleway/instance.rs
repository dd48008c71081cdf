//! Scaleway's servers as kOps' protokube reads them: this server's id and zone from the
//! instance metadata API, the server itself (its gossip name `<name>-<id>`, its cluster tag),
//! the cluster's servers by their cluster tag in the zone, every page, the control plane's by
//! its role tag, each one's first private IPv4 address from IPAM
//! (`release-1.36:protokube/pkg/protokube/scaleway_volumes.go`,
//! `protokube/pkg/gossip/scaleway/seeds.go`, `cloudup/scaleway.GetServerIP`).

use std::collections::BTreeMap;
use std::net::IpAddr;

use anyhow::{anyhow, bail, Context as _, Result};
use async_trait::async_trait;
use serde::Deserialize;

use crate::cloud::{tags, InstanceApi, InstanceInfo, InstanceMetadata, MetadataItem};
use crate::providers::http::escape;
use crate::providers::member_only::{checked_name, Clients};

/// kOps' cluster tag: `noprefix=kops.k8s.io/cluster=<cluster>` (`cloudup/scaleway.TagClusterName`).
pub(crate) const CLUSTER_TAG: &str = "noprefix=kops.k8s.io/cluster";
/// kOps' role tag of a control-plane server (`TagNameRolePrefix` = `TagRoleControlPlane`).
const CONTROL_PLANE_TAG: &str = "noprefix=kops.k8s.io/role=ControlPlane";
/// Servers per page (the API's most is 100).
const PER_PAGE: u32 = 100;
/// The most pages read.
const MAX_PAGES: u32 = 1000;

/// The metadata API's `conf`, as far as kOps reads it.
#[derive(Debug, Deserialize)]
struct Conf {
    id: String,
    location: Location,
}

#[derive(Debug, Deserialize)]
struct Location {
    zone_id: String,
}

#[derive(Debug, Deserialize)]
struct ServerAnswer {
    server: Server,
}

#[derive(Debug, Deserialize)]
struct ServersPage {
    servers: Vec<Server>,
}

#[derive(Debug, Deserialize)]
struct Server {
    id: String,
    name: String,
    tags: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct IpsPage {
    ips: Vec<Ip>,
}

#[derive(Debug, Deserialize)]
struct Ip {
    /// `10.0.0.2/32`.
    address: String,
}

/// The region of zone `zone` (`fr-par-1` is in `fr-par`), as the SDK's `Zone.Region()`.
fn region_of(zone: &str) -> Result<&str> {
    let (region, number) = zone
        .rsplit_once('-')
        .ok_or_else(|| anyhow!("`{}` is not a Scaleway zone", zone.escape_debug()))?;
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) || !region.contains('-') {
        bail!("`{}` is not a Scaleway zone", zone.escape_debug());
    }
    Ok(region)
}

/// The address of IPAM's `10.0.0.2/32`.
fn address_of(cidr: &str) -> Result<IpAddr> {
    let ip = cidr.split('/').next().unwrap_or_default();
    ip.parse().map_err(|_| {
        anyhow!(
            "Scaleway's IPAM address `{}` is not an IP address",
            cidr.escape_debug()
        )
    })
}

/// Tags under kOps' keys: the cluster's, and the control plane's role.
fn kops_tags(found: &[String]) -> BTreeMap<String, String> {
    let mut kops = BTreeMap::new();
    for tag in found {
        if let Some(cluster) = tag
            .strip_prefix(CLUSTER_TAG)
            .and_then(|t| t.strip_prefix('='))
        {
            kops.insert(tags::CLUSTER.to_owned(), cluster.to_owned());
        }
        if tag == CONTROL_PLANE_TAG {
            kops.insert(tags::CONTROL_PLANE_ROLE.to_owned(), "1".to_owned());
        }
    }
    kops
}

impl Server {
    /// Its gossip name, as kOps' `InstanceID()`: `<name>-<id>`.
    fn gossip_name(&self) -> Result<String> {
        let name = checked_name("a Scaleway server's name", &self.name)?;
        let id = checked_name("a Scaleway server's id", &self.id)?;
        Ok(format!("{name}-{id}"))
    }
}

/// This server and the cluster's, from the metadata API, the instance API and IPAM.
pub(crate) struct Servers {
    clients: Clients,
    me: tokio::sync::OnceCell<(Conf, Server)>,
}

impl Servers {
    pub(crate) fn new(clients: Clients) -> Self {
        Self {
            clients,
            me: tokio::sync::OnceCell::new(),
        }
    }

    /// This server: its id and zone from the metadata API, then the server (asked once).
    async fn me(&self) -> Result<&(Conf, Server)> {
        self.me
            .get_or_try_init(|| async {
                let conf: Conf = self
                    .clients
                    .metadata
                    .get_json("metadata.conf", "conf?format=json")
                    .await?;
                checked_name("the server's id", &conf.id)?;
                region_of(&conf.location.zone_id)?;
                let path = format!(
                    "instance/v1/zones/{}/servers/{}",
                    escape(&conf.location.zone_id),
                    escape(&conf.id)
                );
                let read: ServerAnswer = self
                    .clients
                    .api()?
                    .get_json("instance.servers.get", &path)
                    .await?;
                Ok((conf, read.server))
            })
            .await
    }

    /// The servers of the zone tagged `tag`, every page.
    async fn tagged(&self, zone: &str, tag: &str) -> Result<Vec<Server>> {
        let api = self.clients.api()?;
        let mut found = Vec::new();
        for page in 1..=MAX_PAGES {
            let path = format!(
                "instance/v1/zones/{}/servers?tags={}&per_page={PER_PAGE}&page={page}",
                escape(zone),
                escape(tag)
            );
            let answer: ServersPage = api.get_json("instance.servers.list", &path).await?;
            let last = answer.servers.len() < PER_PAGE as usize;
            found.extend(answer.servers);
            if last {
                return Ok(found);
            }
        }
        bail!("Scaleway's servers run past {MAX_PAGES} pages")
    }

    /// The first private IPv4 address IPAM has for `server` in `zone`, if any.
    async fn address(&self, zone: &str, server: &Server) -> Result<Option<IpAddr>> {
        let path = format!(
            "ipam/v1/regions/{}/ips?resource_id={}&is_ipv6=false&zonal={}&page_size=100",
            escape(region_of(zone)?),
            escape(&server.id),
            escape(zone)
        );
        let answer: IpsPage = self.clients.api()?.get_json("ipam.ips.list", &path).await?;
        let Some(first) = answer.ips.first() else {
            return Ok(None);
        };
        address_of(&first.address).map(Some)
    }
}

#[async_trait]
impl InstanceMetadata for Servers {
    fn service(&self) -> &'static str {
        "the Scaleway instance metadata API"
    }

    fn path(&self, _item: MetadataItem) -> &'static str {
        "conf (and the server)"
    }

    fn checks_its_names(&self) -> bool {
        true
    }

    /// The gossip name, the zone and its region; the addresses are not read.
    async fn get(&self, item: MetadataItem) -> Result<Option<String>> {
        let (conf, server) = self.me().await?;
        Ok(match item {
            MetadataItem::InstanceId => Some(server.gossip_name()?),
            MetadataItem::Zone => Some(conf.location.zone_id.clone()),
            MetadataItem::Region => Some(region_of(&conf.location.zone_id)?.to_owned()),
            _ => None,
        })
    }
}

#[async_trait]
impl InstanceApi for Servers {
    async fn instance_tags(&self, instance_id: &str) -> Result<BTreeMap<String, String>> {
        let (_, server) = self.me().await?;
        if server.gossip_name()? != instance_id {
            bail!("Scaleway's server `{instance_id}` is not this server: only this server's tags are read");
        }
        Ok(kops_tags(&server.tags))
    }

    async fn running_masters(&self, cluster: &str) -> Result<Vec<InstanceInfo>> {
        let (conf, _) = self.me().await?;
        let zone = &conf.location.zone_id;
        let tag = format!("{CLUSTER_TAG}={cluster}");
        let servers = self
            .tagged(zone, &tag)
            .await
            .with_context(|| format!("listing the servers of cluster `{cluster}`"))?;
        let mut found = Vec::new();
        for server in &servers {
            // Exactly the cluster's tag, and the control plane's role.
            if !(server.tags.contains(&tag) && server.tags.iter().any(|t| t == CONTROL_PLANE_TAG)) {
                continue;
            }
            // kOps fails every seed for one server without an address; it is left out here.
            let Some(ip) = self.address(zone, server).await? else {
                tracing::warn!(
                    "Scaleway's IPAM has no private address for server `{}` ({}): not a seed",
                    server.name.escape_debug(),
                    server.id.escape_debug()
                );
                continue;
            };
            found.push(InstanceInfo {
                id: server.gossip_name()?,
                private_ips: vec![ip],
                public_ips: Vec::new(),
                volumes: Vec::new(),
            });
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zone_is_in_its_region_and_tags_are_kops_keys() {
        assert_eq!(region_of("fr-par-1").unwrap(), "fr-par");
        assert_eq!(region_of("nl-ams-3").unwrap(), "nl-ams");
        for bad in ["fr-par", "par-1", "fr-par-x", ""] {
            assert!(region_of(bad).is_err(), "{bad}");
        }
        let found = kops_tags(&[
            "noprefix=kops.k8s.io/cluster=c.k8s.local".to_owned(),
            "noprefix=kops.k8s.io/role=ControlPlane".to_owned(),
            "noprefix=kops.k8s.io/instance-group=control-plane-fr-par-1".to_owned(),
        ]);
        assert_eq!(found[tags::CLUSTER], "c.k8s.local");
        assert!(found.contains_key(tags::CONTROL_PLANE_ROLE));
        // Another cluster whose name begins with ours is not ours.
        let other = kops_tags(&["noprefix=kops.k8s.io/cluster=c.k8s.local-2".to_owned()]);
        assert_eq!(other[tags::CLUSTER], "c.k8s.local-2");
    }

    #[test]
    fn an_ipam_address_is_its_cidr_s_address() {
        assert_eq!(
            address_of("172.16.4.2/22").unwrap(),
            "172.16.4.2".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            address_of("10.0.0.9").unwrap(),
            "10.0.0.9".parse::<IpAddr>().unwrap()
        );
        assert!(address_of("10.0.0.9\n/32").is_err());
    }
}
