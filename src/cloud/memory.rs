//! A cloud held in memory, for the steps' unit tests: volumes and instances as the traits see
//! them, filtered by kOps' keys, attaches that take effect at once (and refuse a volume attached
//! elsewhere, as clouds do), detaches that stay `detaching`, devices named `/dev/vdb` …
//! `/dev/vdg`, and a log of every call (named by the operation, `AttachVolume <volume>`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use anyhow::{anyhow, Result};
use async_trait::async_trait;

use super::{
    tags, AttachOutcome, AttachmentState, Cloud, CloudClients, CloudVolume, DeviceCandidate,
    DeviceHint, DeviceNaming, InstanceApi, InstanceInfo, InstanceMetadata, MetadataItem, Placement,
    VolumeApi, VolumeAttachment, VolumeQuery, VolumeState,
};

/// The cloud's state; tests build it and read it back.
#[derive(Clone, Debug, Default)]
pub(crate) struct World {
    pub(crate) volumes: Vec<CloudVolume>,
    /// Running instances and their tags.
    pub(crate) instances: Vec<(InstanceInfo, BTreeMap<String, String>)>,
    /// Instance metadata by item.
    pub(crate) metadata: BTreeMap<MetadataItem, String>,
    /// Every call, as `Operation` or `Operation <volume>`, in order.
    pub(crate) calls: Vec<String>,
}

/// The in-memory cloud.
#[derive(Clone, Debug, Default)]
pub(crate) struct MemoryCloud {
    world: Arc<Mutex<World>>,
}

impl MemoryCloud {
    pub(crate) fn new(world: World) -> Self {
        Self {
            world: Arc::new(Mutex::new(world)),
        }
    }

    /// The cloud as it is now.
    pub(crate) fn world(&self) -> World {
        self.lock_world().clone()
    }

    /// Changes the cloud (a test's own doing, not logged as a call).
    pub(crate) fn change(&self, f: impl FnOnce(&mut World)) {
        f(&mut self.lock_world());
    }

    /// The calls that change the cloud (attach, detach, tag).
    pub(crate) fn mutations(&self) -> Vec<String> {
        self.world()
            .calls
            .into_iter()
            .filter(|c| {
                ["AttachVolume", "DetachVolume", "CreateTags"]
                    .iter()
                    .any(|op| c.starts_with(op))
            })
            .collect()
    }

    fn lock_world(&self) -> std::sync::MutexGuard<'_, World> {
        self.world
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn call(&self, what: String) {
        self.lock_world().calls.push(what);
    }
}

#[async_trait]
impl VolumeApi for MemoryCloud {
    async fn find_volumes(&self, query: &VolumeQuery) -> Result<Vec<CloudVolume>> {
        self.call("DescribeVolumes".to_owned());
        Ok(self
            .lock_world()
            .volumes
            .iter()
            .filter(|v| v.tags.get(tags::CLUSTER) == Some(&query.cluster))
            .filter(|v| v.tags.contains_key(tags::MASTER_ROLE))
            .filter(|v| query.zone.as_ref().is_none_or(|zone| &v.zone == zone))
            .cloned()
            .collect())
    }

    async fn volumes_by_id(&self, volume_ids: &[String]) -> Result<Vec<CloudVolume>> {
        self.call("DescribeVolumes".to_owned());
        Ok(self
            .lock_world()
            .volumes
            .iter()
            .filter(|v| volume_ids.contains(&v.id))
            .cloned()
            .collect())
    }

    async fn attach_volume(
        &self,
        volume_id: &str,
        instance_id: &str,
        device: &str,
        dry_run: bool,
    ) -> Result<AttachOutcome> {
        let mut world = self.lock_world();
        world.calls.push(format!("AttachVolume {volume_id}"));
        let volume = world
            .volumes
            .iter_mut()
            .find(|v| v.id == volume_id)
            .ok_or_else(|| anyhow!("no volume `{volume_id}`"))?;
        if volume.state != VolumeState::Available {
            return Ok(AttachOutcome::VolumeTaken(format!(
                "`{volume_id}` is {}",
                volume.state.as_str()
            )));
        }
        if dry_run {
            return Ok(AttachOutcome::WouldSucceed);
        }
        volume.state = VolumeState::InUse;
        volume.attachments = vec![VolumeAttachment {
            instance_id: instance_id.to_owned(),
            device: device.to_owned(),
            state: AttachmentState::Attached,
            attach_time: Some(std::time::SystemTime::now()),
            root: false,
            read_only: false,
        }];
        Ok(AttachOutcome::Requested)
    }

    async fn instance_device_names(&self, instance_id: &str) -> Result<Vec<String>> {
        let mut world = self.lock_world();
        world.calls.push("DescribeInstances".to_owned());
        Ok(world
            .volumes
            .iter()
            .flat_map(|v| &v.attachments)
            .filter(|a| a.instance_id == instance_id)
            .map(|a| a.device.clone())
            .collect())
    }

    async fn tag_volume(&self, volume_id: &str, key: &str, value: &str) -> Result<()> {
        let mut world = self.lock_world();
        world.calls.push(format!("CreateTags {volume_id}"));
        let volume = world
            .volumes
            .iter_mut()
            .find(|v| v.id == volume_id)
            .ok_or_else(|| anyhow!("no volume `{volume_id}`"))?;
        volume.tags.insert(key.to_owned(), value.to_owned());
        Ok(())
    }

    async fn detach_volume(&self, volume_id: &str, instance_id: &str, dry_run: bool) -> Result<()> {
        let mut world = self.lock_world();
        world.calls.push(format!("DetachVolume {volume_id}"));
        if dry_run {
            return Ok(());
        }
        // As a cloud does: the attachment is `detaching` for a while, its device name still taken.
        if let Some(volume) = world.volumes.iter_mut().find(|v| v.id == volume_id) {
            for attachment in &mut volume.attachments {
                if attachment.instance_id == instance_id {
                    attachment.state = AttachmentState::Detaching;
                }
            }
        }
        Ok(())
    }
}

#[async_trait]
impl InstanceApi for MemoryCloud {
    async fn instance_tags(&self, instance_id: &str) -> Result<BTreeMap<String, String>> {
        let mut world = self.lock_world();
        world.calls.push("DescribeInstances".to_owned());
        world
            .instances
            .iter()
            .find(|(i, _)| i.id == instance_id)
            .map(|(_, tags)| tags.clone())
            .ok_or_else(|| anyhow!("no instance `{instance_id}`"))
    }

    async fn running_masters(&self, cluster: &str) -> Result<Vec<InstanceInfo>> {
        let mut world = self.lock_world();
        world.calls.push("DescribeInstances".to_owned());
        let volumes = world.volumes.clone();
        Ok(world
            .instances
            .iter()
            .filter(|(_, t)| t.get(tags::CLUSTER).map(String::as_str) == Some(cluster))
            .filter(|(_, t)| {
                t.contains_key(tags::MASTER_ROLE) || t.contains_key(tags::CONTROL_PLANE_ROLE)
            })
            .map(|(instance, _)| {
                let mut instance = instance.clone();
                instance.volumes = volumes
                    .iter()
                    .flat_map(|v| v.attachments.iter().map(move |a| (v, a)))
                    .filter(|(_, a)| a.instance_id == instance.id)
                    .map(|(v, a)| super::InstanceVolume {
                        device: a.device.clone(),
                        volume_id: v.id.clone(),
                        status: a.state,
                    })
                    .collect();
                instance.volumes.sort();
                instance
            })
            .collect())
    }
}

#[async_trait]
impl InstanceMetadata for MemoryCloud {
    fn service(&self) -> &'static str {
        "the in-memory metadata service"
    }

    fn path(&self, item: MetadataItem) -> &'static str {
        match item {
            MetadataItem::InstanceId => "instance-id",
            MetadataItem::Zone => "zone",
            MetadataItem::Region => "region",
            MetadataItem::InternalIpv4 => "ipv4",
            MetadataItem::InternalIpv6 => "ipv6",
            MetadataItem::ExternalIp => "external-ip",
        }
    }

    async fn get(&self, item: MetadataItem) -> Result<Option<String>> {
        Ok(self.lock_world().metadata.get(&item).cloned())
    }
}

/// Device names of the in-memory cloud, in order: `/dev/vdb` … `/dev/vdg`; `/dev/vda` is the
/// root device. The device appears under its requested name.
pub(crate) const DEVICE_NAMES: [&str; 6] = [
    "/dev/vdb", "/dev/vdc", "/dev/vdd", "/dev/vde", "/dev/vdf", "/dev/vdg",
];

/// The in-memory cloud's device naming.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct MemoryDevices;

impl DeviceNaming for MemoryDevices {
    fn free_name(&self, _volume_id: &str, in_use: &[String]) -> Option<String> {
        DEVICE_NAMES
            .iter()
            .find(|name| !in_use.iter().any(|used| used == *name))
            .map(|name| (*name).to_owned())
    }

    fn names(&self) -> String {
        "/dev/vdb to /dev/vdg".to_owned()
    }

    fn name_count(&self) -> usize {
        DEVICE_NAMES.len()
    }

    fn is_root_device(&self, device: &str) -> bool {
        device == "/dev/vda"
    }

    fn hint(&self, volume_id: &str, requested: &str) -> DeviceHint {
        DeviceHint {
            volume_id: volume_id.to_owned(),
            candidates: vec![DeviceCandidate {
                path: requested.into(),
                nvme_link: false,
            }],
            nvme_serial: None,
        }
    }
}

#[async_trait]
impl Cloud for MemoryCloud {
    fn metadata(&self) -> &dyn InstanceMetadata {
        self
    }

    fn words(&self) -> &dyn super::MetadataWords {
        &tags::KopsTags
    }

    fn devices(&self) -> &dyn DeviceNaming {
        &MemoryDevices
    }

    async fn connect(&self, _placement: &Placement) -> Result<CloudClients> {
        Ok(CloudClients {
            volumes: Arc::new(self.clone()),
            instances: Arc::new(self.clone()),
        })
    }
}
