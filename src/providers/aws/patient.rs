//! The EC2 client waiting for what is not there yet: each operation, named by the permission
//! it needs, is tried again while AWS cannot be reached (no endpoint, no credentials yet), up to
//! the run's deadline.

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::Result;
use async_trait::async_trait;

use super::ec2::Ec2;
use super::sdk::AwsSdk;
use crate::cloud::{AttachOutcome, CloudVolume, InstanceApi, InstanceInfo, VolumeApi, VolumeQuery};

/// [`Ec2`] with the run's patience.
pub(crate) struct PatientEc2 {
    pub(super) ec2: Ec2,
    pub(super) sdk: Arc<AwsSdk>,
}

#[async_trait]
impl VolumeApi for PatientEc2 {
    async fn find_volumes(&self, query: &VolumeQuery) -> Result<Vec<CloudVolume>> {
        self.sdk
            .wait("ec2:DescribeVolumes", || self.ec2.find_volumes(query))
            .await
    }

    async fn volumes_by_id(&self, volume_ids: &[String]) -> Result<Vec<CloudVolume>> {
        self.sdk
            .wait("ec2:DescribeVolumes", || self.ec2.volumes_by_id(volume_ids))
            .await
    }

    async fn attach_volume(
        &self,
        volume_id: &str,
        instance_id: &str,
        device: &str,
        dry_run: bool,
    ) -> Result<AttachOutcome> {
        self.sdk
            .wait("ec2:AttachVolume", || {
                self.ec2
                    .attach_volume(volume_id, instance_id, device, dry_run)
            })
            .await
    }

    async fn instance_device_names(&self, instance_id: &str) -> Result<Vec<String>> {
        self.sdk
            .wait("ec2:DescribeInstances", || {
                self.ec2.instance_device_names(instance_id)
            })
            .await
    }

    async fn tag_volume(&self, volume_id: &str, key: &str, value: &str) -> Result<()> {
        self.sdk
            .wait("ec2:CreateTags", || {
                self.ec2.tag_volume(volume_id, key, value)
            })
            .await
    }

    async fn detach_volume(&self, volume_id: &str, instance_id: &str, dry_run: bool) -> Result<()> {
        self.sdk
            .wait("ec2:DetachVolume", || {
                self.ec2.detach_volume(volume_id, instance_id, dry_run)
            })
            .await
    }
}

#[async_trait]
impl InstanceApi for PatientEc2 {
    async fn instance_tags(&self, instance_id: &str) -> Result<BTreeMap<String, String>> {
        self.sdk
            .wait("ec2:DescribeInstances", || {
                self.ec2.instance_tags(instance_id)
            })
            .await
    }

    async fn running_masters(&self, cluster: &str) -> Result<Vec<InstanceInfo>> {
        self.sdk
            .wait("ec2:DescribeInstances", || {
                self.ec2.running_masters(cluster)
            })
            .await
    }

    async fn seed_masters(&self, cluster: &str) -> Result<Vec<InstanceInfo>> {
        self.sdk
            .wait("ec2:DescribeInstances", || self.ec2.seed_masters(cluster))
            .await
    }
}
