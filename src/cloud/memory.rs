//! A cloud held in memory, for the steps' unit tests: EC2's volumes and instances as the
//! traits see them, filtered as EC2 filters them, attaches that take effect at once (and refuse
//! a volume attached elsewhere, as EC2 does), detaches that stay `detaching`, an empty Route53,
//! and a log of every call.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use anyhow::{anyhow, Result};
use async_trait::async_trait;

use super::{
    tags, AttachOutcome, AttachmentState, ChangeResult, Cloud, CloudClients, CloudVolume, DnsApi,
    HostedZone, InstanceApi, InstanceInfo, InstanceMetadata, RecordChange, RecordSet, VolumeApi,
    VolumeAttachment, VolumeQuery, VolumeState,
};

/// The cloud's state; tests build it and read it back.
#[derive(Clone, Debug, Default)]
pub struct World {
    pub volumes: Vec<CloudVolume>,
    /// Running instances and their tags.
    pub instances: Vec<(InstanceInfo, BTreeMap<String, String>)>,
    /// Instance metadata by path (`instance-id`, `placement/availability-zone`, …).
    pub metadata: BTreeMap<String, String>,
    /// Every call, as `Operation` or `Operation <volume>`, in order.
    pub calls: Vec<String>,
}

/// The in-memory cloud.
#[derive(Clone, Debug, Default)]
pub struct MemoryCloud {
    world: Arc<Mutex<World>>,
}

impl MemoryCloud {
    pub fn new(world: World) -> Self {
        Self {
            world: Arc::new(Mutex::new(world)),
        }
    }

    /// The cloud as it is now.
    pub fn world(&self) -> World {
        self.lock_world().clone()
    }

    /// Changes the cloud (a test's own doing, not logged as a call).
    pub fn change(&self, f: impl FnOnce(&mut World)) {
        f(&mut self.lock_world());
    }

    /// The calls that change the cloud (attach, detach, tag).
    pub fn mutations(&self) -> Vec<String> {
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
        // As EC2: the attachment is `detaching` for a while, its device name still taken.
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
impl DnsApi for MemoryCloud {
    async fn zone_by_id(&self, _id: &str) -> Result<Option<HostedZone>> {
        self.call("GetHostedZone".to_owned());
        Ok(None)
    }

    async fn all_zones(&self) -> Result<Vec<HostedZone>> {
        self.call("ListHostedZones".to_owned());
        Ok(Vec::new())
    }

    async fn records_under(&self, _zone_id: &str, _apex: &str) -> Result<Vec<RecordSet>> {
        self.call("ListResourceRecordSets".to_owned());
        Ok(Vec::new())
    }

    async fn change_records(
        &self,
        _zone_id: &str,
        _changes: &[RecordChange],
    ) -> Result<ChangeResult> {
        self.call("ChangeResourceRecordSets".to_owned());
        Ok(ChangeResult::Submitted {
            change_id: "c-1".to_owned(),
        })
    }

    async fn change_in_sync(&self, _change_id: &str) -> Result<bool> {
        Ok(true)
    }
}

#[async_trait]
impl InstanceMetadata for MemoryCloud {
    async fn get(&self, path: &str) -> Result<Option<String>> {
        Ok(self.lock_world().metadata.get(path).cloned())
    }
}

#[async_trait]
impl Cloud for MemoryCloud {
    fn metadata(&self) -> &dyn InstanceMetadata {
        self
    }

    async fn connect(&self, _region: &str) -> Result<CloudClients> {
        Ok(CloudClients {
            volumes: Arc::new(self.clone()),
            instances: Arc::new(self.clone()),
            dns: Arc::new(self.clone()),
        })
    }
}
