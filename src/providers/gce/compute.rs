//! Compute Engine v1 behind the volume and instance traits: the cluster's persistent disks (one
//! paged `disks.list`, or `disks.aggregatedList` for the region, filtered by kOps' cluster
//! label), `instances.attachDisk`/`detachDisk` and their zone operations, `disks.setLabels`
//! with the label fingerprint (a real compare-and-set), and the cluster's masters (one
//! `instances.aggregatedList`).

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{anyhow, bail, Context as _, Result};
use async_trait::async_trait;
use hyper::Method;
use serde::Deserialize;
use serde_json::json;

use super::api::{request_id, required, GoogleApi, GoogleError, GoogleService};
use super::labels::{self, CLUSTER_LABEL, ROLE_PREFIX};
use super::metadata::{last_part, region_of};
use crate::cloud::patient;
use crate::cloud::{
    tags, AttachOutcome, AttachmentState, CloudVolume, InstanceApi, InstanceInfo, InstanceVolume,
    Placement, VolumeApi, VolumeAttachment, VolumeQuery, VolumeState,
};
use crate::error::{caused_by, NotReady};
use crate::providers::http::escape;
use crate::wait::{retry_until, Backoff, Retry};

/// Largest page asked for; with the label filter one page is the normal case.
const PAGE_SIZE: &str = "500";
/// Attempts at a label change when another writer changed the labels in between (412).
const LABEL_ATTEMPTS: u32 = 3;

// The fields are Google's names for them (`sourceDisk`, `asyncPrimaryDisk`).
#[allow(clippy::struct_field_names)]
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Disk {
    name: Option<String>,
    zone: Option<String>,
    status: Option<String>,
    #[serde(default)]
    users: Vec<String>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    label_fingerprint: Option<String>,
    /// A regional disk's region (it has no zone).
    region: Option<String>,
    source_snapshot: Option<String>,
    source_image: Option<String>,
    source_disk: Option<String>,
    source_instant_snapshot: Option<String>,
    source_machine_image: Option<String>,
    async_primary_disk: Option<AsyncPrimaryDisk>,
    /// Every other field, for the `source…` fields Google has added (`sourceStorageObject`:
    /// a disk imported from Cloud Storage) and will add.
    #[serde(flatten)]
    other_fields: BTreeMap<String, serde_json::Value>,
}

/// The primary of an asynchronously replicated disk.
#[derive(Deserialize)]
struct AsyncPrimaryDisk {
    disk: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Page<T> {
    #[serde(default = "Vec::new")]
    items: Vec<T>,
    next_page_token: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AggregatedPage<T> {
    #[serde(default = "BTreeMap::new")]
    items: BTreeMap<String, T>,
    next_page_token: Option<String>,
}

#[derive(Deserialize, Default)]
struct ScopedDisks {
    #[serde(default)]
    disks: Vec<Disk>,
}

#[derive(Clone, Deserialize, Default)]
struct ScopedInstances {
    #[serde(default)]
    instances: Vec<Instance>,
}

#[derive(Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Instance {
    name: Option<String>,
    status: Option<String>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    network_interfaces: Vec<NetworkInterface>,
    #[serde(default)]
    disks: Vec<AttachedDisk>,
    metadata: Option<InstanceMetadataItems>,
    /// Its network tags (`tags.items`): kOps ≤ 1.22 says an instance's role only there.
    tags: Option<NetworkTags>,
}

#[derive(Clone, Deserialize)]
struct NetworkTags {
    #[serde(default)]
    items: Vec<String>,
}

impl Instance {
    /// Its metadata item `key`.
    fn metadata_item(&self, key: &str) -> Option<&str> {
        self.metadata
            .iter()
            .flat_map(|m| &m.items)
            .find(|entry| entry.key == key)
            .and_then(|entry| entry.value.as_deref())
    }

    /// Where its own cluster label and its metadata `cluster-name` name two clusters: what to
    /// say. Such a node must claim no disk and write no name, for either cluster.
    fn cluster_contradiction(&self) -> Option<String> {
        let label = self.labels.get(CLUSTER_LABEL)?;
        let named = self.metadata_item("cluster-name")?;
        (labels::cluster_value(named) != *label).then(|| {
            format!(
                "instance `{}` is labelled for another cluster than its metadata names: its \
                 label `{CLUSTER_LABEL}={label}` against its metadata `cluster-name={named}`; \
                 protokube claims no disk and writes no name for either: correct the one that \
                 is wrong",
                self.name.as_deref().unwrap_or_default()
            )
        })
    }

    /// Where its own cluster label names another cluster than `disk`'s: what to say. Such a
    /// node never claims the disk.
    fn foreign(&self, disk: &Disk, name: &str) -> Option<String> {
        let ours = self.labels.get(CLUSTER_LABEL)?;
        let theirs = disk.labels.get(CLUSTER_LABEL)?;
        (ours != theirs).then(|| {
            format!(
                "disk `{name}` is labelled `{CLUSTER_LABEL}={theirs}`, instance `{}` \
                 `{CLUSTER_LABEL}={ours}` (its metadata `cluster-name={}`): protokube claims no \
                 disk of another cluster than its instance's label names; correct the label or \
                 the metadata that is wrong",
                self.name.as_deref().unwrap_or_default(),
                self.metadata_item("cluster-name").unwrap_or("none")
            )
        })
    }

    /// Whether its own labels name `cluster` (kOps' cluster label, 1.23 and later).
    fn labelled_for(&self, cluster: &str) -> bool {
        self.labels.get(CLUSTER_LABEL) == Some(&labels::cluster_value(cluster))
    }

    /// Whether it is an instance of `cluster`: by its cluster label, or — kOps ≤ 1.22 labels
    /// no instance — by its metadata `cluster-name`, whatever other labels it carries.
    fn is_of(&self, cluster: &str) -> bool {
        self.labelled_for(cluster) || self.metadata_item("cluster-name") == Some(cluster)
    }

    /// Whether it is a control-plane instance of `cluster`: labelled for it with kOps' role
    /// labels (1.23 and later), or — kOps ≤ 1.22 labels no instance — its metadata
    /// `cluster-name` is the cluster and it carries a control-plane network tag, as kOps'
    /// gossip seeds and etcd-manager find masters (whatever labels an organisation or an agent
    /// put on it). During a roll from 1.22 to 1.23 both kinds are masters at once.
    fn is_master_of(&self, cluster: &str) -> bool {
        let roles = ["master", "control-plane"];
        let labelled = self.labelled_for(cluster)
            && roles
                .iter()
                .any(|role| self.labels.contains_key(&format!("{ROLE_PREFIX}{role}")));
        let tagged = self.metadata_item("cluster-name") == Some(cluster)
            && roles.iter().any(|role| {
                labels::role_tags(cluster, role)
                    .iter()
                    .any(|tag| self.tags.as_ref().is_some_and(|t| t.items.contains(tag)))
            });
        labelled || tagged
    }
}

#[derive(Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct NetworkInterface {
    #[serde(rename = "networkIP")]
    network_ip: Option<String>,
    ipv6_address: Option<String>,
    #[serde(default)]
    access_configs: Vec<AccessConfig>,
    #[serde(default)]
    ipv6_access_configs: Vec<AccessConfig>,
}

#[derive(Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AccessConfig {
    #[serde(rename = "natIP")]
    nat_ip: Option<String>,
    external_ipv6: Option<String>,
}

#[derive(Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AttachedDisk {
    device_name: Option<String>,
    source: Option<String>,
    #[serde(default)]
    boot: bool,
    /// `READ_WRITE` (the default) or `READ_ONLY`.
    mode: Option<String>,
}

#[derive(Clone, Deserialize)]
struct InstanceMetadataItems {
    #[serde(default)]
    items: Vec<MetadataEntry>,
}

#[derive(Clone, Deserialize)]
struct MetadataEntry {
    key: String,
    value: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Operation {
    name: Option<String>,
    status: Option<String>,
    error: Option<OperationError>,
}

#[derive(Deserialize)]
struct OperationError {
    #[serde(default)]
    errors: Vec<OperationErrorItem>,
}

#[derive(Deserialize)]
struct OperationErrorItem {
    code: Option<String>,
    message: Option<String>,
}

/// Compute Engine for a node at `placement` in `project`.
pub(crate) struct Compute {
    api: Arc<GoogleApi>,
    project: String,
    placement: Placement,
    /// The zone of each disk seen, for calls that name a disk only.
    disk_zones: Mutex<BTreeMap<String, String>>,
    /// The cluster's instances in the region, listed once per run: the masters and the
    /// attachments of the cluster's disks (a full check's two questions share the one call).
    cluster_instances: tokio::sync::OnceCell<Vec<Instance>>,
}

/// How each instance that uses a disk holds its disks: instance name → its attached disks.
type Attachments = BTreeMap<String, Vec<AttachedDisk>>;

impl Compute {
    pub(crate) fn new(api: Arc<GoogleApi>, project: String, placement: Placement) -> Self {
        Self {
            api,
            project,
            placement,
            disk_zones: Mutex::new(BTreeMap::new()),
            cluster_instances: tokio::sync::OnceCell::new(),
        }
    }

    /// `projects/<project>/zones/<zone>/` + `rest`.
    fn zonal(&self, zone: &str, rest: &str) -> String {
        format!(
            "projects/{}/zones/{}/{rest}",
            escape(&self.project),
            escape(zone)
        )
    }

    /// The zone disk `name` is in: as last seen, else this node's.
    fn zone_of(&self, name: &str) -> String {
        self.disk_zones
            .lock()
            .ok()
            .and_then(|zones| zones.get(name).cloned())
            .unwrap_or_else(|| self.placement.zone.clone())
    }

    /// A disk as the traits see it, under kOps' keys for `cluster`; `attachments` says how its
    /// users hold it (device name, boot disk, mode).
    fn volume(
        &self,
        disk: Disk,
        cluster: Option<&str>,
        attachments: &Attachments,
    ) -> Result<CloudVolume> {
        let answer = "compute.disks";
        let name = required(disk.name, "name", answer)?;
        // A regional disk has a region instead of a zone.
        let (zone, regional) = match (disk.zone, disk.region) {
            (Some(zone), _) => (last_part(&zone).to_owned(), false),
            (None, Some(region)) => (last_part(&region).to_owned(), true),
            (None, None) => anyhow::bail!("the `{answer}` answer has no `zone`"),
        };
        let status = required(disk.status, "status", answer)?;
        if let Ok(mut zones) = self.disk_zones.lock() {
            zones.insert(name.clone(), zone.clone());
        }
        let state = match (status.as_str(), disk.users.is_empty()) {
            ("READY", true) => VolumeState::Available,
            ("READY", false) => VolumeState::InUse,
            ("CREATING" | "RESTORING", _) => VolumeState::Creating,
            ("DELETING", _) => VolumeState::Deleting,
            ("FAILED" | "UNAVAILABLE", _) => VolumeState::Error,
            (other, _) => bail!(
                "disk `{name}` has status `{}`, none of Compute Engine's",
                other.escape_debug()
            ),
        };
        // A disk is attached under the device name it was given (the disk's own name as kOps
        // and protokube give it, `persistent-disk-<n>` when attached without one), as the
        // user's boot disk or not, read-write or read-only: the instance says. Compute Engine
        // has no `attaching` on the disk itself.
        let attachments = disk
            .users
            .iter()
            .map(|user| {
                let instance = last_part(user);
                let held = attachments.get(instance).into_iter().flatten().find(|d| {
                    d.source
                        .as_deref()
                        .is_some_and(|s| same_disk(s, user, &name))
                });
                VolumeAttachment {
                    instance_id: instance.to_owned(),
                    device: held
                        .and_then(|d| d.device_name.clone())
                        .unwrap_or_else(|| name.clone()),
                    state: AttachmentState::Attached,
                    attach_time: None,
                    root: held.is_some_and(|d| d.boot),
                    read_only: held.is_some_and(|d| d.mode.as_deref() == Some("READ_ONLY")),
                }
            })
            .collect();
        let made_from = [
            ("sourceSnapshot", disk.source_snapshot),
            ("sourceImage", disk.source_image),
            ("sourceDisk", disk.source_disk),
            ("sourceInstantSnapshot", disk.source_instant_snapshot),
            ("sourceMachineImage", disk.source_machine_image),
            (
                "asyncPrimaryDisk",
                disk.async_primary_disk.and_then(|p| p.disk),
            ),
        ]
        .into_iter()
        .map(|(field, source)| (field.to_owned(), source))
        .chain(disk.other_fields.iter().filter_map(|(field, value)| {
            let named = field.starts_with("source").then(|| match value {
                serde_json::Value::String(text) => text.clone(),
                serde_json::Value::Null => String::new(),
                other if other.as_object().is_some_and(serde_json::Map::is_empty) => String::new(),
                other => other.to_string(),
            })?;
            Some((field.clone(), Some(named)))
        }))
        .find_map(|(field, source)| {
            source
                .filter(|s| !s.is_empty())
                .map(|s| format!("`{s}` (its `{field}`)"))
        });
        Ok(CloudVolume {
            tags: labels::to_tags(&disk.labels, cluster),
            id: name,
            zone,
            state,
            attachments,
            made_from,
            regional,
        })
    }

    /// How the instances using `disks` hold them: from the cluster's instance listing where
    /// `listed` (the region's full check lists them anyway), else read one by one (a zone's
    /// disks are used by this node, or by a master of its zone).
    async fn attachments(
        &self,
        disks: &[Disk],
        listed: Option<&[Instance]>,
    ) -> Result<Attachments> {
        let mut out = Attachments::new();
        for instance in listed.unwrap_or_default() {
            if let Some(name) = &instance.name {
                out.insert(name.clone(), instance.disks.clone());
            }
        }
        let users: std::collections::BTreeSet<&str> = disks
            .iter()
            .flat_map(|d| &d.users)
            .map(String::as_str)
            .collect();
        for user in users {
            let name = last_part(user);
            if out.contains_key(name) {
                continue;
            }
            let zone = user_zone(user).unwrap_or(&self.placement.zone).to_owned();
            match self.instance_in(&zone, name).await {
                Ok(instance) => {
                    out.insert(name.to_owned(), instance.disks);
                }
                // Gone since the disk was read: nothing holds the disk there any more.
                Err(err) if GoogleError::in_chain(&err).is_some_and(|e| e.status == 404) => {}
                Err(err) => return Err(err),
            }
        }
        Ok(out)
    }

    /// The cluster's instances in every zone of the region, asked once per run: one
    /// `instances.aggregatedList` of the region's instances, kept where their cluster label or
    /// their metadata `cluster-name` names the cluster (kOps ≤ 1.22 labels no instance, and
    /// Compute Engine cannot filter on metadata; kOps' gossip seeds list the zones' instances
    /// unfiltered too). The union: labelled masters and masters found by metadata and network
    /// tags, whatever other labels they carry.
    async fn cluster_instances(&self, cluster: &str) -> Result<&[Instance]> {
        self.cluster_instances
            .get_or_try_init(|| async {
                let listed: Vec<Instance> = self
                    .aggregated::<ScopedInstances>("instances", None)
                    .await?
                    .into_iter()
                    .flat_map(|scoped| scoped.instances)
                    .collect();
                let own = self
                    .api
                    .metadata()
                    .get("instance/name")
                    .await
                    .ok()
                    .flatten();
                if let Some(said) = listed
                    .iter()
                    .filter(|i| own.as_deref().map(str::trim) == i.name.as_deref())
                    .find_map(Instance::cluster_contradiction)
                {
                    bail!(said);
                }
                Ok::<_, anyhow::Error>(listed.into_iter().filter(|i| i.is_of(cluster)).collect())
            })
            .await
            .map(Vec::as_slice)
    }

    async fn disk(&self, name: &str) -> Result<Option<Disk>> {
        let path = self.zonal(&self.zone_of(name), &format!("disks/{}", escape(name)));
        match self
            .api
            .call(
                GoogleService::Compute,
                "compute.disks.get",
                Method::GET,
                &path,
                &[],
                None,
            )
            .await
        {
            Ok(disk) => Ok(Some(disk)),
            Err(err) if GoogleError::in_chain(&err).is_some_and(|e| e.status == 404) => Ok(None),
            Err(err) => Err(err),
        }
    }

    async fn instance(&self, name: &str) -> Result<Instance> {
        self.instance_in(&self.placement.zone.clone(), name).await
    }

    async fn instance_in(&self, zone: &str, name: &str) -> Result<Instance> {
        let path = self.zonal(zone, &format!("instances/{}", escape(name)));
        self.api
            .call(
                GoogleService::Compute,
                "compute.instances.get",
                Method::GET,
                &path,
                &[],
                None,
            )
            .await
    }

    /// Waits for zone operation `operation` (of the node's zone; `what` it does, in words) to
    /// be `DONE`, within the run's deadline; its error, if any. An operation still running at
    /// the deadline is "not ready", saying so: Compute Engine finishes it on its own.
    async fn finish(&self, what: &str, operation: Operation) -> Result<Option<OperationErrorItem>> {
        let deadline = self.api.deadline();
        if operation.status.as_deref() == Some("DONE") {
            return Ok(operation.error.and_then(|e| e.errors.into_iter().next()));
        }
        let name = required(operation.name.clone(), "name", "compute.zoneOperations")?;
        let status = std::sync::Mutex::new(operation.status.clone());
        let still_running = || -> anyhow::Error {
            let status = status
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone();
            NotReady(format!(
                "the zone operation `{name}` ({what}) was still `{}` at the run's deadline \
                 (--timeout {}); Compute Engine finishes it on its own, the next run sees its \
                 outcome; retry later",
                status.as_deref().unwrap_or("PENDING"),
                deadline.timeout_text()
            ))
            .into()
        };
        let path = self.zonal(
            &self.placement.zone,
            &format!("operations/{}/wait", escape(&name)),
        );
        let pause = Backoff::new(Duration::from_millis(500), Duration::from_millis(500));
        let finished = retry_until(deadline, pause, u32::MAX, |_| async {
            // `wait` answers when the operation is done, or after up to two minutes.
            let waited: Result<Operation> = self
                .api
                .call(
                    GoogleService::Compute,
                    "compute.zoneOperations.wait",
                    Method::POST,
                    &path,
                    &[],
                    None,
                )
                .await;
            match waited {
                Ok(next) if next.status.as_deref() == Some("DONE") => Ok(Retry::Done(
                    next.error.and_then(|e| e.errors.into_iter().next()),
                )),
                Ok(next) => {
                    *status
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) = next.status;
                    Ok(Retry::Again(None))
                }
                // The deadline came while Compute Engine still held the wait.
                Err(err) if deadline.remaining().is_zero() && caused_by::<NotReady>(&err) => {
                    Err(still_running())
                }
                Err(err) => Err(err),
            }
        })
        .await?;
        finished.map_err(|_| still_running())
    }

    /// Every page of `path`, with the list `filter` when given.
    async fn pages<P: serde::de::DeserializeOwned + Paged>(
        &self,
        method_id: &str,
        path: &str,
        filter: Option<String>,
    ) -> Result<Vec<P>> {
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut query = vec![("maxResults", PAGE_SIZE)];
            if let Some(filter) = &filter {
                query.push(("filter", filter.as_str()));
            }
            if let Some(token) = &token {
                query.push(("pageToken", token.as_str()));
            }
            let page: P = self
                .api
                .call(
                    GoogleService::Compute,
                    method_id,
                    Method::GET,
                    path,
                    &query,
                    None,
                )
                .await?;
            token = page.next_token();
            out.push(page);
            if token.is_none() {
                return Ok(out);
            }
        }
    }

    /// The `resource`s (`disks`, `instances`) of this node's region matching `filter`: one
    /// `aggregatedList`, paged; the scopes of its zones (`zones/<zone>`) and of the region
    /// itself (`regions/<region>`: regional disks) kept, every other left out.
    async fn aggregated<S: serde::de::DeserializeOwned>(
        &self,
        resource: &str,
        filter: Option<String>,
    ) -> Result<Vec<S>> {
        let path = format!("projects/{}/aggregated/{resource}", escape(&self.project));
        let method_id = format!("compute.{resource}.aggregatedList");
        let pages: Vec<AggregatedPage<S>> = self.pages(&method_id, &path, filter).await?;
        let region = self.placement.region.as_str();
        Ok(pages
            .into_iter()
            .flat_map(|page| page.items)
            .filter(|(scope, _)| {
                scope.strip_prefix("regions/") == Some(region)
                    || scope.strip_prefix("zones/").and_then(region_of) == Some(region)
            })
            .map(|(_, scoped)| scoped)
            .collect())
    }
}

/// A page of a listing, and the token of the next one.
trait Paged {
    fn next_token(&self) -> Option<String>;
}

impl<T> Paged for Page<T> {
    fn next_token(&self) -> Option<String> {
        self.next_page_token.clone().filter(|t| !t.is_empty())
    }
}

impl<T> Paged for AggregatedPage<T> {
    fn next_token(&self) -> Option<String> {
        self.next_page_token.clone().filter(|t| !t.is_empty())
    }
}

fn instance_info(instance: Instance) -> Result<InstanceInfo> {
    let name = required(instance.name, "name", "compute.instances")?;
    let parse = |value: &Option<String>| value.as_deref().and_then(|v| v.parse::<IpAddr>().ok());
    let mut private_ips = Vec::new();
    let mut public_ips = Vec::new();
    for interface in &instance.network_interfaces {
        private_ips.extend(parse(&interface.network_ip));
        private_ips.extend(parse(&interface.ipv6_address));
        for config in interface
            .access_configs
            .iter()
            .chain(&interface.ipv6_access_configs)
        {
            public_ips.extend(parse(&config.nat_ip));
            public_ips.extend(parse(&config.external_ipv6));
        }
    }
    private_ips.sort();
    private_ips.dedup();
    public_ips.sort();
    public_ips.dedup();
    let mut volumes: Vec<InstanceVolume> = instance
        .disks
        .iter()
        .filter(|d| !d.boot)
        .filter_map(|d| {
            Some(InstanceVolume {
                device: d.device_name.clone()?,
                volume_id: last_part(d.source.as_deref()?).to_owned(),
                status: AttachmentState::Attached,
            })
        })
        .collect();
    volumes.sort();
    Ok(InstanceInfo {
        id: name,
        private_ips,
        public_ips,
        volumes,
    })
}

/// The zone of an instance's resource URL (`…/zones/<zone>/instances/<name>`).
fn user_zone(user: &str) -> Option<&str> {
    let mut parts = user.rsplit('/');
    let _name = parts.next()?;
    (parts.next()? == "instances").then_some(())?;
    parts.next()
}

/// Whether the attached disk `source` (a disk URL) is disk `name` of the zone of `user` (a disk
/// is zonal: one name can be another zone's disk).
fn same_disk(source: &str, user: &str, name: &str) -> bool {
    last_part(source) == name
        && match (disk_zone(source), user_zone(user)) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        }
}

/// The zone of a disk's resource URL (`…/zones/<zone>/disks/<name>`).
fn disk_zone(source: &str) -> Option<&str> {
    let mut parts = source.rsplit('/');
    let _name = parts.next()?;
    (parts.next()? == "disks").then_some(())?;
    parts.next()
}

#[async_trait]
impl VolumeApi for Compute {
    async fn find_volumes(&self, query: &VolumeQuery) -> Result<Vec<CloudVolume>> {
        let cluster = query.cluster.as_str();
        let disks: Vec<Disk> = if let Some(zone) = &query.zone {
            let path = self.zonal(zone, "disks");
            let filter = Some(labels::cluster_filter(cluster));
            let pages: Vec<Page<Disk>> = self.pages("compute.disks.list", &path, filter).await?;
            pages.into_iter().flat_map(|p| p.items).collect()
        } else {
            self.aggregated::<ScopedDisks>("disks", Some(labels::cluster_filter(cluster)))
                .await?
                .into_iter()
                .flat_map(|scoped| scoped.disks)
                .collect()
        };
        let listed = match query.zone {
            Some(_) => None,
            None => Some(self.cluster_instances(cluster).await?),
        };
        let attachments = self.attachments(&disks, listed).await?;
        disks
            .into_iter()
            .map(|disk| self.volume(disk, Some(cluster), &attachments))
            .collect()
    }

    async fn volumes_by_id(&self, volume_ids: &[String]) -> Result<Vec<CloudVolume>> {
        let mut disks = Vec::new();
        for id in volume_ids {
            disks.extend(self.disk(id).await?);
        }
        let attachments = self.attachments(&disks, None).await?;
        disks
            .into_iter()
            .map(|disk| self.volume(disk, None, &attachments))
            .collect()
    }

    async fn attach_volume(
        &self,
        volume_id: &str,
        instance_id: &str,
        device: &str,
        dry_run: bool,
    ) -> Result<AttachOutcome> {
        let zone = self.placement.zone.clone();
        // A node never claims a disk while its own label and its metadata name two clusters,
        // nor a disk labelled for another cluster than its own label names.
        let instance = self.instance(instance_id).await?;
        if let Some(said) = instance.cluster_contradiction() {
            bail!(said);
        }
        let Some(disk) = self.disk(volume_id).await? else {
            bail!("disk `{volume_id}` does not exist in zone `{zone}`");
        };
        if let Some(said) = instance.foreign(&disk, volume_id) {
            bail!(said);
        }
        if dry_run {
            // Compute Engine has no dry run: a disk nobody uses would be attached.
            return Ok(if disk.users.is_empty() {
                AttachOutcome::WouldSucceed
            } else {
                AttachOutcome::VolumeTaken(format!(
                    "`{volume_id}` is in use by `{}`",
                    disk.users
                        .iter()
                        .map(|u| last_part(u))
                        .collect::<Vec<_>>()
                        .join("`, `")
                ))
            });
        }
        let path = self.zonal(
            &zone,
            &format!("instances/{}/attachDisk", escape(instance_id)),
        );
        let body = json!({
            "source": format!("projects/{}/zones/{zone}/disks/{volume_id}", self.project),
            "deviceName": device,
            "mode": "READ_WRITE",
            "type": "PERSISTENT",
        });
        let id = request_id();
        let operation: Operation = match self
            .api
            .call(
                GoogleService::Compute,
                "compute.instances.attachDisk",
                Method::POST,
                &path,
                &[("requestId", id.as_str())],
                Some(body),
            )
            .await
        {
            Ok(operation) => operation,
            Err(err) => {
                return match GoogleError::in_chain(&err) {
                    Some(e) if e.reason == "resourceInUseByAnotherResource" => {
                        Ok(AttachOutcome::VolumeTaken(e.message.clone()))
                    }
                    _ => Err(err),
                }
            }
        };
        let what = format!("attaching disk `{volume_id}` to `{instance_id}`");
        match self.finish(&what, operation).await? {
            None => Ok(AttachOutcome::Requested),
            Some(error) if error.code.as_deref() == Some("RESOURCE_IN_USE_BY_ANOTHER_RESOURCE") => {
                Ok(AttachOutcome::VolumeTaken(
                    error.message.unwrap_or_default(),
                ))
            }
            Some(error) => bail!(
                "attaching disk `{volume_id}` to `{instance_id}` failed: {}: {}",
                error.code.unwrap_or_default(),
                error.message.unwrap_or_default()
            ),
        }
    }

    async fn instance_device_names(&self, instance_id: &str) -> Result<Vec<String>> {
        let instance = self.instance(instance_id).await?;
        Ok(instance
            .disks
            .into_iter()
            .filter_map(|d| d.device_name)
            .collect())
    }

    async fn tag_volume(&self, volume_id: &str, key: &str, value: &str) -> Result<()> {
        let (label, label_value) = labels::from_tag(key, value)
            .ok_or_else(|| anyhow!("protokube writes no label for `{key}`"))?;
        for attempt in 1..=LABEL_ATTEMPTS {
            let disk = self
                .disk(volume_id)
                .await?
                .ok_or_else(|| anyhow!("disk `{volume_id}` does not exist"))?;
            let fingerprint =
                required(disk.label_fingerprint, "labelFingerprint", "compute.disks")?;
            let mut labels = disk.labels;
            labels.insert(label.clone(), label_value.clone());
            let path = self.zonal(
                &self.zone_of(volume_id),
                &format!("disks/{}/setLabels", escape(volume_id)),
            );
            let body = json!({"labels": labels, "labelFingerprint": fingerprint});
            let id = request_id();
            match self
                .api
                .call::<Operation>(
                    GoogleService::Compute,
                    "compute.disks.setLabels",
                    Method::POST,
                    &path,
                    &[("requestId", id.as_str())],
                    Some(body),
                )
                .await
            {
                Ok(operation) => {
                    let what = format!("setting the label `{label}` of disk `{volume_id}`");
                    return match self.finish(&what, operation).await? {
                        None => Ok(()),
                        Some(error) => bail!(
                            "labelling disk `{volume_id}` failed: {}: {}",
                            error.code.unwrap_or_default(),
                            error.message.unwrap_or_default()
                        ),
                    };
                }
                // Someone changed the labels since they were read: read them again.
                Err(err)
                    if attempt < LABEL_ATTEMPTS
                        && GoogleError::in_chain(&err).is_some_and(|e| e.status == 412) =>
                {
                    tracing::info!("the labels of disk `{volume_id}` changed under protokube; reading them again");
                }
                Err(err) => return Err(err),
            }
        }
        Err(NotReady(format!(
            "the labels of disk `{volume_id}` keep changing under protokube; retry later"
        ))
        .into())
    }

    async fn detach_volume(&self, volume_id: &str, instance_id: &str, dry_run: bool) -> Result<()> {
        if dry_run {
            return Ok(());
        }
        let instance = self.instance(instance_id).await?;
        let Some(device) = instance
            .disks
            .iter()
            .find(|d| d.source.as_deref().map(last_part) == Some(volume_id))
            .and_then(|d| d.device_name.clone())
        else {
            // Not attached there (any more): nothing to detach.
            return Ok(());
        };
        let path = self.zonal(
            &self.placement.zone,
            &format!("instances/{}/detachDisk", escape(instance_id)),
        );
        let id = request_id();
        let operation: Operation = self
            .api
            .call(
                GoogleService::Compute,
                "compute.instances.detachDisk",
                Method::POST,
                &path,
                &[("deviceName", device.as_str()), ("requestId", id.as_str())],
                None,
            )
            .await?;
        let what = format!("detaching disk `{volume_id}` from `{instance_id}`");
        match self.finish(&what, operation).await? {
            None => Ok(()),
            Some(error) => bail!(
                "detaching disk `{volume_id}` from `{instance_id}` failed: {}: {}",
                error.code.unwrap_or_default(),
                error.message.unwrap_or_default()
            ),
        }
    }
}

#[async_trait]
impl InstanceApi for Compute {
    /// This instance's: its cluster from the metadata server's `instance/attributes/cluster-name`
    /// and its role from its network tags (`instance/tags`: kOps tags every version's
    /// control-plane instances `<cluster>-k8s-io-role-master`), both free of any IAM permission
    /// (kOps 1.36 gives its GCE workers no role at all). Another instance's, or one whose
    /// metadata names no cluster: its labels under kOps' keys (`compute.instances.get`).
    async fn instance_tags(&self, instance_id: &str) -> Result<BTreeMap<String, String>> {
        let metadata = self.api.metadata();
        let deadline = self.api.deadline();
        let read = |path: &'static str| async move {
            let what = format!("the GCE metadata server (`{path}`)");
            patient::until_reachable(&what, deadline, patient::backoff(), || metadata.get(path))
                .await
        };
        let own = read("instance/name").await?.map(|n| n.trim().to_owned());
        if own.as_deref() == Some(instance_id) {
            let cluster = read("instance/attributes/cluster-name")
                .await?
                .map(|c| c.trim().to_owned())
                .filter(|c| !c.is_empty());
            if let Some(cluster) = cluster {
                let network_tags: Vec<String> = match read("instance/tags").await? {
                    Some(text) => serde_json::from_str(&text).with_context(|| {
                        "reading the metadata server's `instance/tags` (a JSON list)"
                    })?,
                    None => Vec::new(),
                };
                let mut tags = BTreeMap::from([(tags::CLUSTER.to_owned(), cluster.clone())]);
                for (role, key) in [
                    ("master", tags::MASTER_ROLE),
                    ("control-plane", tags::CONTROL_PLANE_ROLE),
                ] {
                    if labels::role_tags(&cluster, role)
                        .iter()
                        .any(|tag| network_tags.contains(tag))
                    {
                        tags.insert(key.to_owned(), String::new());
                    }
                }
                return Ok(tags);
            }
        }
        let instance = self.instance(instance_id).await?;
        let cluster = instance.metadata_item("cluster-name").map(str::to_owned);
        let mut tags = labels::to_tags(&instance.labels, cluster.as_deref());
        if let Some(cluster) = cluster {
            tags.insert(tags::CLUSTER.to_owned(), cluster);
        }
        Ok(tags)
    }

    async fn running_masters(&self, cluster: &str) -> Result<Vec<InstanceInfo>> {
        self.cluster_instances(cluster)
            .await?
            .iter()
            .filter(|i| i.status.as_deref() == Some("RUNNING") && i.is_master_of(cluster))
            .cloned()
            .map(instance_info)
            .collect()
    }

    /// kOps' gossip seeds (`gcediscovery`'s `GetSeeds`): the masters in any status.
    async fn seed_masters(&self, cluster: &str) -> Result<Vec<InstanceInfo>> {
        self.cluster_instances(cluster)
            .await?
            .iter()
            .filter(|i| i.is_master_of(cluster))
            .cloned()
            .map(instance_info)
            .collect()
    }
}

#[cfg(test)]
mod tests;
