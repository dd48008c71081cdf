//! The cloud as protokube sees it: one [`Cloud`] trait and narrow traits under it returning our
//! own, provider-neutral types (volumes, attachments, instances, device hints), so steps run
//! against any provider or against a stricter test double. Each provider lives in its own
//! folder, its device naming and its [`provider::Provider`] value included.

#[cfg(test)]
pub(crate) mod memory;
pub(crate) mod patient;
pub(crate) mod provider;
pub(crate) mod tags;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// A volume's state (the state file keeps these words).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VolumeState {
    Creating,
    Available,
    InUse,
    Deleting,
    Deleted,
    Error,
}

impl VolumeState {
    const ALL: [Self; 6] = [
        Self::Creating,
        Self::Available,
        Self::InUse,
        Self::Deleting,
        Self::Deleted,
        Self::Error,
    ];

    /// Its word (`in-use`).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Creating => "creating",
            Self::Available => "available",
            Self::InUse => "in-use",
            Self::Deleting => "deleting",
            Self::Deleted => "deleted",
            Self::Error => "error",
        }
    }

    /// From its word; another word is no volume state.
    pub(crate) fn parse(word: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == word)
    }
}

/// The state of an attachment of a volume to an instance, as the volume or the instance
/// reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AttachmentState {
    Attaching,
    Attached,
    Detaching,
    Detached,
    Busy,
}

impl AttachmentState {
    const ALL: [Self; 5] = [
        Self::Attaching,
        Self::Attached,
        Self::Detaching,
        Self::Detached,
        Self::Busy,
    ];

    /// Its word.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Attaching => "attaching",
            Self::Attached => "attached",
            Self::Detaching => "detaching",
            Self::Detached => "detached",
            Self::Busy => "busy",
        }
    }

    /// From its word; another word is no attachment state.
    pub(crate) fn parse(word: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == word)
    }

    /// On its way off the instance (a detach under way or done).
    pub(crate) fn is_leaving(self) -> bool {
        matches!(self, Self::Detaching | Self::Detached)
    }
}

/// A volume as the cloud reports it (kept in the state file as the last verified answer).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CloudVolume {
    pub id: String,
    pub zone: String,
    pub state: VolumeState,
    pub attachments: Vec<VolumeAttachment>,
    /// Its metadata under kOps' keys (`tags`): a provider whose labels are spelled otherwise
    /// maps them onto these.
    pub tags: BTreeMap<String, String>,
    /// What it was made from, if anything, in the provider's words (``snapshot `snap-1` ``):
    /// its data is not blank.
    #[serde(alias = "snapshot_id")]
    pub made_from: Option<String>,
    /// A volume of a region, replicated across its zones (`zone` then names the region); kOps
    /// makes none for etcd.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub regional: bool,
}

/// One attachment of a volume to an instance.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VolumeAttachment {
    pub instance_id: String,
    /// The device name given at attach time (the provider's [`DeviceNaming`]).
    pub device: String,
    pub state: AttachmentState,
    /// When the attachment began, if the cloud says.
    #[serde(default)]
    pub attach_time: Option<std::time::SystemTime>,
    /// The cloud says it is the instance's root (boot) device: never touched, whatever its
    /// tags and device name.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub root: bool,
    /// The cloud says it is attached read-only: its filesystem cannot be checked or mounted
    /// for etcd.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
}

impl VolumeAttachment {
    /// A read-write attachment of a data volume to `instance_id` as `device`, in `state`.
    pub fn new(instance_id: &str, device: &str, state: AttachmentState) -> Self {
        Self {
            instance_id: instance_id.to_owned(),
            device: device.to_owned(),
            state,
            attach_time: None,
            root: false,
            read_only: false,
        }
    }
}

/// Which volumes to ask for: a cluster's control-plane volumes in one zone, or in every zone of
/// the region when `zone` is `None`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VolumeQuery {
    pub(crate) cluster: String,
    pub(crate) zone: Option<String>,
}

/// A running instance: its addresses and the volumes attached to it (kept in the state file as
/// the last verified answer).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstanceInfo {
    pub(crate) id: String,
    /// Its private addresses: the primary private IPv4 and the primary interface's IPv6
    /// addresses (an instance in an IPv6-only subnet has only those), sorted.
    pub(crate) private_ips: Vec<std::net::IpAddr>,
    /// Its public addresses: the public IPv4 and its IPv6 addresses (globally routable), sorted.
    pub(crate) public_ips: Vec<std::net::IpAddr>,
    /// Its volumes, sorted by device name.
    #[serde(default)]
    pub(crate) volumes: Vec<InstanceVolume>,
}

/// A volume attached to an instance, as the instance reports it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub(crate) struct InstanceVolume {
    /// The device name given at attach time.
    pub(crate) device: String,
    pub(crate) volume_id: String,
    pub(crate) status: AttachmentState,
}

/// The answer to an attach request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AttachOutcome {
    /// The cloud accepted the request; the attachment is on its way.
    Requested,
    /// With dry run: the request would have been accepted.
    WouldSucceed,
    /// The volume is attached elsewhere or not available: another node won the race.
    VolumeTaken(String),
    /// The device name is already used on the instance: try the next name.
    DeviceNameTaken(String),
}

/// Volume operations.
#[async_trait]
pub trait VolumeApi: Send + Sync {
    /// The cluster's control-plane volumes in the zone: one server-side-filtered, paginated listing.
    async fn find_volumes(&self, query: &VolumeQuery) -> Result<Vec<CloudVolume>>;

    /// The current state of the given volumes (for waiting on attachments).
    async fn volumes_by_id(&self, volume_ids: &[String]) -> Result<Vec<CloudVolume>>;

    /// Asks to attach `volume_id` to `instance_id` as `device`. This is the lock between nodes:
    /// only one attach of a volume can succeed.
    async fn attach_volume(
        &self,
        volume_id: &str,
        instance_id: &str,
        device: &str,
        dry_run: bool,
    ) -> Result<AttachOutcome>;

    /// The device names already used on the instance.
    async fn instance_device_names(&self, instance_id: &str) -> Result<Vec<String>>;

    /// Sets tag `key` = `value` on the volume.
    async fn tag_volume(&self, volume_id: &str, key: &str, value: &str) -> Result<()>;

    /// Asks to detach `volume_id` from `instance_id` (not forced).
    async fn detach_volume(&self, volume_id: &str, instance_id: &str, dry_run: bool) -> Result<()>;
}

/// Instance facts.
#[async_trait]
pub trait InstanceApi: Send + Sync {
    /// The tags of instance `instance_id`, under kOps' keys.
    async fn instance_tags(&self, instance_id: &str) -> Result<BTreeMap<String, String>>;

    /// The cluster's running control-plane instances (of `cluster`, in a master or
    /// control-plane role): one filtered listing.
    async fn running_masters(&self, cluster: &str) -> Result<Vec<InstanceInfo>>;

    /// The cluster's control-plane instances a gossip member seeds from, by kOps' seed rules
    /// for the cloud (which states count is the provider's to say): by default the running
    /// ones.
    async fn seed_masters(&self, cluster: &str) -> Result<Vec<InstanceInfo>> {
        self.running_masters(cluster).await
    }
}

/// An item of the node's identity that the metadata service knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum MetadataItem {
    InstanceId,
    Zone,
    Region,
    /// The primary private IPv4 address.
    InternalIpv4,
    /// The primary interface's IPv6 address (an IPv6-only instance has no private IPv4).
    InternalIpv6,
    /// The public IPv4 address, when there is one.
    ExternalIp,
}

/// The instance's metadata service.
#[async_trait]
pub trait InstanceMetadata: Send + Sync {
    /// Its name, for messages (`the instance metadata service`).
    fn service(&self) -> &'static str;

    /// Where it keeps `item`, for messages (`placement/availability-zone`).
    fn path(&self, item: MetadataItem) -> &'static str;

    /// The value of `item`; `Ok(None)` when the service answers that it does not exist (the
    /// public address of a private instance).
    async fn get(&self, item: MetadataItem) -> Result<Option<String>>;

    /// Whether the instance id, zone and region it gives are the provider's own spelling,
    /// checked where they are read (kOps' server names on the clouds where protokube is the
    /// gossip member only: `master-1.c.k8s.local`, `RegionOne`), not `[a-z0-9-]`.
    fn checks_its_names(&self) -> bool {
        false
    }
}

#[async_trait]
impl<T: InstanceMetadata + ?Sized> InstanceMetadata for Arc<T> {
    fn service(&self) -> &'static str {
        (**self).service()
    }

    fn path(&self, item: MetadataItem) -> &'static str {
        (**self).path(item)
    }

    async fn get(&self, item: MetadataItem) -> Result<Option<String>> {
        (**self).get(item).await
    }

    fn checks_its_names(&self) -> bool {
        (**self).checks_its_names()
    }
}

/// A place a volume's block device can appear on the node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DeviceCandidate {
    /// A host path (under `--root`).
    pub(crate) path: PathBuf,
    /// A link named after the volume that must lead to an NVMe namespace.
    pub(crate) nvme_link: bool,
}

/// Where the block device of an attached volume appears, and how it is known to be that
/// volume's: the provider's naming ([`DeviceNaming::hint`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceHint {
    pub(crate) volume_id: String,
    /// Tried in order; the first that exists is the device.
    pub(crate) candidates: Vec<DeviceCandidate>,
    /// The serial an NVMe namespace must carry to be this volume; `None` where the provider's
    /// NVMe devices carry none that names it.
    pub(crate) nvme_serial: Option<String>,
}

/// How a provider names the devices of attached volumes.
pub trait DeviceNaming: Send + Sync + std::fmt::Debug {
    /// The device name to request for attaching `volume_id`, not one of `in_use` (the
    /// instance's names, as the cloud reports them); `None` when every name is used.
    fn free_name(&self, volume_id: &str, in_use: &[String]) -> Option<String>;

    /// The names [`free_name`](Self::free_name) chooses from, in words (for the error when
    /// none is free).
    fn names(&self) -> String;

    /// How many names [`free_name`](Self::free_name) chooses from.
    fn name_count(&self) -> usize;

    /// Whether a volume attached under `device` is the instance's root device (never touched).
    fn is_root_device(&self, device: &str) -> bool;

    /// Where the block device of `volume_id`, attached as `requested`, appears.
    fn hint(&self, volume_id: &str, requested: &str) -> DeviceHint;
}

/// How a provider's operators see kOps' metadata keys (the keys of `tags`) on its volumes and
/// instances, for the messages that tell them what to fix: the provider's noun and spelling.
pub trait MetadataWords: Send + Sync + std::fmt::Debug {
    /// What the provider calls them: `tag`, `label`.
    fn noun(&self) -> &'static str;

    /// The provider's key for kOps' key `key` (a prefix such as `k8s.io/etcd/` maps to the
    /// provider's prefix).
    fn key(&self, key: &str) -> String;

    /// The provider's value of `key` for kOps' value `value`, as it stands on the resource.
    fn value(&self, _key: &str, value: &str) -> String {
        value.to_owned()
    }

    /// The key in words: `` `k8s.io/etcd/main` tag ``.
    fn name(&self, key: &str) -> String {
        format!("`{}` {}", self.key(key), self.noun())
    }

    /// The key and value in words, the value also as kOps means it when the provider spells
    /// it otherwise: ``label `k8s-io-etcd-main` = `a-2fb` (`a/b`)``.
    fn pair(&self, key: &str, value: &str) -> String {
        let stored = self.value(key, value);
        let named = format!("{} `{}`", self.noun(), self.key(key));
        if stored == value {
            format!("{named} = `{}`", value.escape_debug())
        } else {
            format!(
                "{named} = `{}` (`{}`)",
                stored.escape_debug(),
                value.escape_debug()
            )
        }
    }
}

/// The cloud refused an operation for lack of a permission (exit 1). The message names the
/// permission, whatever the cloud said.
#[derive(Debug)]
pub(crate) struct AccessDenied {
    /// Who refused (`AWS`).
    pub(crate) cloud: &'static str,
    /// The permission in the provider's words.
    pub(crate) permission: String,
    /// The cloud's own code and message.
    pub(crate) detail: String,
}

impl AccessDenied {
    /// The refusal among `err`'s causes, if any.
    pub(crate) fn in_chain(err: &anyhow::Error) -> Option<&Self> {
        err.chain().find_map(|cause| cause.downcast_ref::<Self>())
    }
}

impl std::fmt::Display for AccessDenied {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} denied `{}` to the credentials in use ({})",
            self.cloud, self.permission, self.detail
        )
    }
}

impl std::error::Error for AccessDenied {}

/// Where the node runs, as its identity says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    pub(crate) region: String,
    pub(crate) zone: String,
}

/// The cloud APIs of one region, shared by every step of a run.
#[derive(Clone)]
pub struct CloudClients {
    pub volumes: Arc<dyn VolumeApi>,
    pub instances: Arc<dyn InstanceApi>,
}

/// Where the run's cloud comes from: the metadata service, the provider's device naming, and
/// clients for a region once the region is known. A provider in production (the composition
/// root picks it); doubles in tests.
#[async_trait]
pub trait Cloud: Send + Sync {
    /// This instance's metadata service.
    fn metadata(&self) -> &dyn InstanceMetadata;

    /// How the provider names the devices of attached volumes.
    fn devices(&self) -> &dyn DeviceNaming;

    /// How the provider's operators see kOps' metadata keys.
    fn words(&self) -> &dyn MetadataWords;

    /// Clients for a node at `placement`: one configuration, credentials resolved once for all
    /// of them.
    async fn connect(&self, placement: &Placement) -> Result<CloudClients>;

    /// The requests sent so far, by operation, retries included (for the metrics file).
    fn calls(&self) -> BTreeMap<String, u64> {
        BTreeMap::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_read_and_write_their_words() {
        for state in VolumeState::ALL {
            assert_eq!(VolumeState::parse(state.as_str()), Some(state));
            // The state file keeps these words, as before the types.
            assert_eq!(
                serde_json::to_string(&state).unwrap(),
                format!("\"{}\"", state.as_str())
            );
        }
        for state in AttachmentState::ALL {
            assert_eq!(AttachmentState::parse(state.as_str()), Some(state));
            assert_eq!(
                serde_json::to_string(&state).unwrap(),
                format!("\"{}\"", state.as_str())
            );
        }
        assert_eq!(VolumeState::parse("in-use"), Some(VolumeState::InUse));
        assert_eq!(VolumeState::parse("In-Use"), None);
        assert_eq!(AttachmentState::parse("gone"), None);
        assert!(AttachmentState::Detaching.is_leaving() && !AttachmentState::Busy.is_leaving());
    }
}
