//! The cloud as protokube sees it: narrow traits returning our own types, so steps can run
//! against AWS or against a stricter test double. The AWS implementation lives in [`aws`].

pub mod aws;
#[cfg(test)]
pub mod memory;
pub mod patient;
pub mod tags;

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::Result;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// An EBS volume's state, as EC2 reports it.
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

    /// EC2's own word for it (`in-use`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Creating => "creating",
            Self::Available => "available",
            Self::InUse => "in-use",
            Self::Deleting => "deleting",
            Self::Deleted => "deleted",
            Self::Error => "error",
        }
    }

    /// From EC2's word; another word is none of EC2's volume states.
    pub fn parse(word: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == word)
    }
}

/// The state of an attachment: of a volume to an instance (`DescribeVolumes`), or of an
/// instance's EBS block device mapping (`DescribeInstances`).
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

    /// EC2's own word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Attaching => "attaching",
            Self::Attached => "attached",
            Self::Detaching => "detaching",
            Self::Detached => "detached",
            Self::Busy => "busy",
        }
    }

    /// From EC2's word; another word is none of EC2's attachment states.
    pub fn parse(word: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == word)
    }

    /// On its way off the instance (a detach under way or done).
    pub fn is_leaving(self) -> bool {
        matches!(self, Self::Detaching | Self::Detached)
    }
}

/// An EBS volume as the cloud reports it (kept in the state file as the last verified answer).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CloudVolume {
    pub id: String,
    pub zone: String,
    pub state: VolumeState,
    pub attachments: Vec<VolumeAttachment>,
    pub tags: BTreeMap<String, String>,
    /// The snapshot it was created from, if any (its data is not blank).
    pub snapshot_id: Option<String>,
}

/// One attachment of a volume to an instance.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VolumeAttachment {
    pub instance_id: String,
    /// The device name given at attach time, e.g. `/dev/xvdu`.
    pub device: String,
    pub state: AttachmentState,
    /// When the attachment began, if the cloud says.
    #[serde(default)]
    pub attach_time: Option<std::time::SystemTime>,
}

/// Which volumes to ask for: a cluster's control-plane volumes in one availability zone, or in
/// every zone of the region when `zone` is `None`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VolumeQuery {
    pub cluster: String,
    pub zone: Option<String>,
}

/// A running instance: its addresses and the EBS volumes attached to it, as `DescribeInstances`
/// reports them (kept in the state file as the last verified answer).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstanceInfo {
    pub id: String,
    /// Its private addresses: the primary private IPv4 and the primary interface's IPv6
    /// addresses (an instance in an IPv6-only subnet has only those), sorted.
    pub private_ips: Vec<std::net::IpAddr>,
    /// Its public addresses: the public IPv4 and its IPv6 addresses (globally routable), sorted.
    pub public_ips: Vec<std::net::IpAddr>,
    /// Its EBS volumes (block device mappings), sorted by device name.
    #[serde(default)]
    pub volumes: Vec<InstanceVolume>,
}

/// An EBS volume in an instance's block device mappings.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct InstanceVolume {
    /// E.g. `/dev/xvdu`.
    pub device: String,
    pub volume_id: String,
    pub status: AttachmentState,
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

/// EBS volume operations.
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

    /// The device names already used on the instance (its block device mappings).
    async fn instance_device_names(&self, instance_id: &str) -> Result<Vec<String>>;

    /// Sets tag `key` = `value` on the volume.
    async fn tag_volume(&self, volume_id: &str, key: &str, value: &str) -> Result<()>;

    /// Asks to detach `volume_id` from `instance_id` (not forced).
    async fn detach_volume(&self, volume_id: &str, instance_id: &str, dry_run: bool) -> Result<()>;
}

/// EC2 instance facts.
#[async_trait]
pub trait InstanceApi: Send + Sync {
    /// The tags of instance `instance_id` (read with `DescribeInstances`: kOps' worker role has
    /// no `DescribeTags`).
    async fn instance_tags(&self, instance_id: &str) -> Result<BTreeMap<String, String>>;

    /// The cluster's running control-plane instances (tagged `KubernetesCluster=<cluster>` and
    /// `k8s.io/role/master` or `k8s.io/role/control-plane`): one filtered listing.
    async fn running_masters(&self, cluster: &str) -> Result<Vec<InstanceInfo>>;
}

/// A Route53 hosted zone. Names are lowercase, without the trailing dot.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostedZone {
    /// Without the `/hostedzone/` prefix.
    pub id: String,
    pub name: String,
    pub private: bool,
}

/// A record set. Names are lowercase, without the trailing dot; TXT values keep their quotes.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct RecordSet {
    pub name: String,
    pub record_type: String,
    pub ttl: Option<i64>,
    pub values: Vec<String>,
    /// A Route53 alias (to a load balancer, …): it has no values of its own.
    pub alias: bool,
}

/// `CREATE` (fails if the record exists) or `UPSERT`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordAction {
    Create,
    Upsert,
    /// Removes a record set; its values and TTL must be the ones Route53 holds.
    Delete,
}

/// One change of a change batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordChange {
    pub action: RecordAction,
    pub record: RecordSet,
}

/// The answer to a change batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChangeResult {
    /// Accepted; poll its id to see it `INSYNC`.
    Submitted { change_id: String },
    /// Rejected because a record to CREATE exists already (another writer was first).
    Conflict(String),
}

/// Route53 operations.
#[async_trait]
pub trait DnsApi: Send + Sync {
    async fn zone_by_id(&self, id: &str) -> Result<Option<HostedZone>>;
    /// Every hosted zone (`ListHostedZones`, which kOps grants; `ListHostedZonesByName` it
    /// does not).
    async fn all_zones(&self) -> Result<Vec<HostedZone>>;
    /// The record sets at or below `apex` in the zone, read from `apex` on (Route53 lists by
    /// reversed labels, so a subtree is contiguous): cost does not grow with the rest of the zone.
    /// A zone that does not exist (any more) is the error [`ZoneGone`].
    async fn records_under(&self, zone_id: &str, apex: &str) -> Result<Vec<RecordSet>>;
    async fn change_records(&self, zone_id: &str, changes: &[RecordChange])
        -> Result<ChangeResult>;
    /// Whether the change is `INSYNC`.
    async fn change_in_sync(&self, change_id: &str) -> Result<bool>;
}

/// Instance metadata (IMDS): `path` is relative to `/latest/meta-data/`; `Ok(None)` when the
/// service answers that the item does not exist (e.g. `public-ipv4` on a private instance).
#[async_trait]
pub trait InstanceMetadata: Send + Sync {
    async fn get(&self, path: &str) -> Result<Option<String>>;
}

/// The cloud refused an operation for lack of a permission (exit 1). The message names the
/// permission, whatever the cloud said.
#[derive(Debug)]
pub struct AccessDenied {
    /// E.g. `ec2:AttachVolume`.
    pub permission: String,
    /// The cloud's own code and message.
    pub detail: String,
}

impl std::fmt::Display for AccessDenied {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "AWS denied `{}` to the credentials in use ({})",
            self.permission, self.detail
        )
    }
}

impl std::error::Error for AccessDenied {}

/// A hosted zone protokube remembered does not exist any more (`NoSuchHostedZone`): the zones
/// are looked up again.
#[derive(Debug)]
pub struct ZoneGone {
    pub zone_id: String,
}

impl std::fmt::Display for ZoneGone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "hosted zone `{}` does not exist", self.zone_id)
    }
}

impl std::error::Error for ZoneGone {}

/// The cloud APIs of one region, shared by every step of a run.
#[derive(Clone)]
pub struct CloudClients {
    pub volumes: Arc<dyn VolumeApi>,
    pub instances: Arc<dyn InstanceApi>,
    pub dns: Arc<dyn DnsApi>,
}

/// Where the run's cloud comes from: the metadata service, and clients for a region once the
/// region is known. AWS in production ([`aws::AwsCloud`]); doubles in tests.
#[async_trait]
pub trait Cloud: Send + Sync {
    /// This instance's metadata service.
    fn metadata(&self) -> &dyn InstanceMetadata;

    /// Clients for `region`: one configuration, credentials resolved once for all of them.
    async fn connect(&self, region: &str) -> Result<CloudClients>;

    /// The requests sent so far, by operation, retries included (for the metrics file).
    fn aws_calls(&self) -> BTreeMap<String, u64> {
        BTreeMap::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_read_and_write_ec2_s_words() {
        for state in VolumeState::ALL {
            assert_eq!(VolumeState::parse(state.as_str()), Some(state));
            // The state file keeps EC2's words, as before the types.
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
