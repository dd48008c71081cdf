//! Azure's scale sets as kOps' protokube reads them: this VM from the instance metadata service
//! (its name is its gossip name; its cluster in its tags), a token for Azure Resource Manager
//! from the managed identity, and the cluster's control-plane scale sets in the VM's resource
//! group (every cluster tag, and the control-plane role tag), each one's network interfaces'
//! private addresses, every page (`release-1.36:protokube/pkg/gossip/azure/seed.go`).

use std::collections::BTreeMap;
use std::net::IpAddr;

use anyhow::{anyhow, bail, Context as _, Result};
use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::cloud::{tags, InstanceApi, InstanceInfo, InstanceMetadata, MetadataItem};
use crate::error::CredentialRejected;
use crate::providers::http::escape;
use crate::providers::member_only::checked_name;
use crate::providers::rest::{Calls, Rest, RestCloud, RestError};
use crate::wait::Deadline;

/// kOps' tag of the cluster (`cloudup/azure.TagClusterName`).
pub(crate) const CLUSTER_TAG: &str = "KubernetesCluster";
/// The tag a control-plane scale set carries (`TagNameRolePrefix` + `control-plane`).
const CONTROL_PLANE_TAG: &str = "k8s.io_role_control-plane";
/// The instance metadata service's version kOps asks for.
const METADATA_VERSION: &str = "2020-06-01";
/// The scale sets' API version.
const VMSS_VERSION: &str = "2024-07-01";
/// The scale sets' network interfaces' API version (served by Microsoft.Compute).
const VMSS_NIC_VERSION: &str = "2018-10-01";
/// The most pages read.
const MAX_PAGES: u32 = 1000;

/// The instance metadata, as far as kOps reads it.
#[derive(Debug, Deserialize)]
struct Instance {
    compute: Compute,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Compute {
    name: String,
    resource_group_name: String,
    subscription_id: String,
    location: String,
    #[serde(default)]
    zone: String,
    /// `key:value;key:value`.
    tags: String,
}

impl Compute {
    /// Its tags, as kOps splits them; a tag without `:` is an error, as in kOps.
    fn tags(&self) -> Result<BTreeMap<String, String>> {
        self.tags
            .split(';')
            .filter(|t| !t.is_empty())
            .map(|tag| {
                let (key, value) = tag.split_once(':').ok_or_else(|| {
                    anyhow!("the VM's tag `{}` is not `key:value`", tag.escape_debug())
                })?;
                Ok((key.to_owned(), value.to_owned()))
            })
            .collect()
    }
}

#[derive(Debug, Deserialize)]
struct Token {
    access_token: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Page<T> {
    value: Vec<T>,
    next_link: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ScaleSet {
    name: String,
    #[serde(default)]
    tags: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
struct Interface {
    properties: Option<InterfaceProperties>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct InterfaceProperties {
    #[serde(default)]
    ip_configurations: Vec<IpConfiguration>,
}

#[derive(Debug, Deserialize)]
struct IpConfiguration {
    properties: Option<IpConfigurationProperties>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct IpConfigurationProperties {
    #[serde(rename = "privateIPAddress")]
    private_ip_address: Option<IpAddr>,
}

/// Every IP configuration's private address of `interfaces`, as kOps collects them.
fn private_addresses(interfaces: &[Interface]) -> Vec<IpAddr> {
    interfaces
        .iter()
        .filter_map(|i| i.properties.as_ref())
        .flat_map(|p| &p.ip_configurations)
        .filter_map(|c| c.properties.as_ref()?.private_ip_address)
        .collect()
}

/// This VM and the cluster's, from the instance metadata service and Resource Manager.
pub(crate) struct Arm {
    metadata: Rest,
    /// Resource Manager in messages.
    words: &'static RestCloud,
    root: String,
    /// A user-assigned identity's client id (`AZURE_CLIENT_ID`), when the VM has several.
    client_id: Option<String>,
    deadline: Deadline,
    calls: Calls,
    me: tokio::sync::OnceCell<Compute>,
    api: tokio::sync::OnceCell<Rest>,
}

impl Arm {
    pub(crate) fn new(
        metadata: Rest,
        words: &'static RestCloud,
        root: String,
        client_id: Option<String>,
        deadline: Deadline,
        calls: Calls,
    ) -> Self {
        Self {
            metadata,
            words,
            root,
            client_id,
            deadline,
            calls,
            me: tokio::sync::OnceCell::new(),
            api: tokio::sync::OnceCell::new(),
        }
    }

    async fn me(&self) -> Result<&Compute> {
        self.me
            .get_or_try_init(|| async {
                let path = format!("metadata/instance?format=json&api-version={METADATA_VERSION}");
                let read: Instance = self.metadata.get_json("metadata.instance", &path).await?;
                checked_name("the VM's name", &read.compute.name)?;
                checked_name("the VM's resource group", &read.compute.resource_group_name)?;
                checked_name("the VM's subscription", &read.compute.subscription_id)?;
                Ok(read.compute)
            })
            .await
    }

    /// Resource Manager with the managed identity's token (asked once).
    async fn api(&self) -> Result<&Rest> {
        self.api
            .get_or_try_init(|| async {
                let mut path = format!(
                    "metadata/identity/oauth2/token?api-version=2018-02-01&resource={}",
                    escape(&self.root)
                );
                if let Some(id) = &self.client_id {
                    path.push_str(&format!("&client_id={}", escape(id)));
                }
                let identity = match &self.client_id {
                    Some(id) => format!("the user-assigned identity `{id}` (`AZURE_CLIENT_ID`)"),
                    None => "the system-assigned identity (no `AZURE_CLIENT_ID`)".to_owned(),
                };
                let token: Token = self
                    .metadata
                    .get_json("metadata.identity.token", &path)
                    .await
                    .map_err(|err| {
                        let what = format!("getting a token for Resource Manager from {identity}");
                        // The service answered that the identity is not there: the VM's
                        // settings, which waiting will not mend.
                        if err.chain().any(|c| c.downcast_ref::<RestError>().is_some()) {
                            CredentialRejected(format!("{what}: {}", crate::error::one_line(&err)))
                                .into()
                        } else {
                            err.context(what)
                        }
                    })?;
                Rest::new(
                    self.words,
                    &self.root,
                    &[("authorization", format!("Bearer {}", token.access_token))],
                    self.deadline,
                    self.calls.clone(),
                    false,
                )
            })
            .await
    }

    /// Every page of a list under Resource Manager's root, following `nextLink` only there (it
    /// carries the token).
    async fn list<T: DeserializeOwned>(&self, operation: &str, path: String) -> Result<Vec<T>> {
        let api = self.api().await?;
        let mut found = Vec::new();
        let mut next = Some(path);
        for _ in 0..MAX_PAGES {
            let Some(path) = next.take() else {
                return Ok(found);
            };
            let page: Page<T> = api.get_json(operation, &path).await?;
            found.extend(page.value);
            next = match page.next_link {
                Some(link) => Some(
                    link.strip_prefix(&self.root)
                        .ok_or_else(|| {
                            anyhow!(
                                "Azure's next page `{}` is not under `{}`",
                                link.escape_debug(),
                                self.root
                            )
                        })?
                        .to_owned(),
                ),
                None => None,
            };
        }
        bail!("Azure's `{operation}` runs past {MAX_PAGES} pages")
    }

    fn group_path(me: &Compute) -> String {
        format!(
            "subscriptions/{}/resourceGroups/{}/providers/Microsoft.Compute/virtualMachineScaleSets",
            escape(&me.subscription_id),
            escape(&me.resource_group_name)
        )
    }
}

#[async_trait]
impl InstanceMetadata for Arm {
    fn service(&self) -> &'static str {
        "the Azure instance metadata service"
    }

    fn path(&self, _item: MetadataItem) -> &'static str {
        "metadata/instance (compute)"
    }

    fn checks_its_names(&self) -> bool {
        true
    }

    /// The VM's name, its zone (else its location) and location; the addresses are not read.
    async fn get(&self, item: MetadataItem) -> Result<Option<String>> {
        let me = self.me().await?;
        Ok(match item {
            MetadataItem::InstanceId => Some(me.name.clone()),
            MetadataItem::Zone if !me.zone.is_empty() => {
                Some(checked_name("the VM's zone", &me.zone)?)
            }
            MetadataItem::Zone | MetadataItem::Region => {
                Some(checked_name("the VM's location", &me.location)?)
            }
            _ => None,
        })
    }
}

#[async_trait]
impl InstanceApi for Arm {
    async fn instance_tags(&self, instance_id: &str) -> Result<BTreeMap<String, String>> {
        let me = self.me().await?;
        if me.name != instance_id {
            bail!(
                "Azure's VM `{instance_id}` is not this VM (`{}`): only this VM's tags are read",
                me.name
            );
        }
        let found = me.tags()?;
        Ok(found
            .get(CLUSTER_TAG)
            .map(|c| (tags::CLUSTER.to_owned(), c.clone()))
            .into_iter()
            .collect())
    }

    async fn running_masters(&self, cluster: &str) -> Result<Vec<InstanceInfo>> {
        let me = self.me().await?;
        let group = Self::group_path(me);
        let sets: Vec<ScaleSet> = self
            .list(
                "compute.virtualMachineScaleSets.list",
                format!("{group}?api-version={VMSS_VERSION}"),
            )
            .await
            .with_context(|| format!("listing the scale sets of cluster `{cluster}`"))?;
        let mut found = Vec::new();
        for set in sets.iter().filter(|s| {
            s.tags.get(CLUSTER_TAG).map(String::as_str) == Some(cluster)
                && s.tags.contains_key(CONTROL_PLANE_TAG)
        }) {
            let path = format!(
                "{group}/{}/networkInterfaces?api-version={VMSS_NIC_VERSION}",
                escape(&set.name)
            );
            let interfaces: Vec<Interface> = self
                .list(
                    "network.networkInterfaces.listVirtualMachineScaleSetNetworkInterfaces",
                    path,
                )
                .await?;
            let addresses = private_addresses(&interfaces);
            found.extend(addresses.into_iter().map(|ip| InstanceInfo {
                id: set.name.clone(),
                private_ips: vec![ip],
                public_ips: Vec::new(),
                volumes: Vec::new(),
            }));
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_read_as_kops_splits_them() {
        let compute: Compute = serde_json::from_value(serde_json::json!({
            "name": "control-plane-eastus-1_0", "resourceGroupName": "rg", "subscriptionId": "s",
            "location": "eastus", "zone": "", "tags": "KubernetesCluster:c.k8s.local;k8s.io_role_control-plane:1;url:https://x",
        }))
        .unwrap();
        let found = compute.tags().unwrap();
        assert_eq!(found["KubernetesCluster"], "c.k8s.local");
        assert_eq!(found["url"], "https://x");
        let bad = Compute {
            tags: "novalue".to_owned(),
            ..compute
        };
        assert!(bad.tags().is_err());
    }

    #[test]
    fn an_interface_page_gives_every_configurations_private_address() {
        let page: Page<Interface> = serde_json::from_value(serde_json::json!({
            "value": [
                {"name": "nic0", "properties": {"ipConfigurations": [
                    {"name": "ipconfig1", "properties": {"privateIPAddress": "10.0.0.4", "primary": true}},
                    {"name": "ipconfig2", "properties": {"privateIPAddress": "10.0.0.5"}},
                ]}},
                {"name": "nic1", "properties": {"ipConfigurations": [{"name": "x", "properties": {}}]}},
                {"name": "nic2"},
            ],
            "nextLink": "https://management.azure.com/next",
        }))
        .unwrap();
        let addresses = private_addresses(&page.value);
        assert_eq!(
            addresses,
            [
                "10.0.0.4".parse::<IpAddr>().unwrap(),
                "10.0.0.5".parse().unwrap()
            ]
        );
        assert_eq!(
            page.next_link.as_deref(),
            Some("https://management.azure.com/next")
        );
        let sets: Page<ScaleSet> = serde_json::from_value(serde_json::json!({
            "value": [{"name": "cp", "tags": {"KubernetesCluster": "c.k8s.local", CONTROL_PLANE_TAG: "1"}}, {"name": "untagged"}],
        }))
        .unwrap();
        assert!(sets.value[0].tags.contains_key(CONTROL_PLANE_TAG));
        assert!(sets.value[1].tags.is_empty() && sets.next_link.is_none());
    }
}
