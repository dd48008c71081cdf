//! A `Cloud` made of test doubles of protokube's own traits, for what the emulator cannot show;
//! identity comes from flags (the double has no metadata service), devices are named as EBS
//! names them, and no DNS service is there.

use std::sync::Arc;

use anyhow::{bail, Result};
use async_trait::async_trait;
use protokube::testing::EbsDevices;
use protokube::testing::{
    Cloud, CloudClients, DeviceNaming, InstanceApi, InstanceInfo, InstanceMetadata, MetadataItem,
    VolumeApi,
};
use protokube::testing::{ZoneApi, ZoneService};

/// The clients a test gives; the ones it leaves out fail when used.
pub(crate) struct DoubleCloud {
    clients: CloudClients,
}

impl DoubleCloud {
    pub(crate) fn with_volumes(volumes: Arc<dyn VolumeApi>) -> Self {
        Self {
            clients: CloudClients {
                volumes,
                instances: Arc::new(Absent),
            },
        }
    }
}

#[async_trait]
impl Cloud for DoubleCloud {
    fn metadata(&self) -> &dyn InstanceMetadata {
        &Absent
    }

    fn devices(&self) -> &dyn DeviceNaming {
        &EbsDevices
    }

    fn words(&self) -> &dyn protokube::testing::MetadataWords {
        &protokube::testing::KopsTags
    }

    async fn connect(&self, _placement: &protokube::testing::Placement) -> Result<CloudClients> {
        Ok(self.clients.clone())
    }
}

/// A client the test did not provide.
pub(crate) struct Absent;

#[async_trait]
impl InstanceMetadata for Absent {
    fn service(&self) -> &'static str {
        "no metadata service"
    }

    fn path(&self, _item: MetadataItem) -> &'static str {
        "-"
    }

    async fn get(&self, item: MetadataItem) -> Result<Option<String>> {
        bail!("no metadata service in this test (asked for {item:?})")
    }
}

#[async_trait]
impl ZoneService for Absent {
    async fn connect(&self, _region: &str) -> Result<Arc<dyn ZoneApi>> {
        bail!("no DNS service in this test")
    }
}

#[async_trait]
impl VolumeApi for Absent {
    async fn find_volumes(
        &self,
        _: &protokube::testing::VolumeQuery,
    ) -> Result<Vec<protokube::testing::CloudVolume>> {
        bail!("no volume API in this test")
    }
    async fn volumes_by_id(&self, _: &[String]) -> Result<Vec<protokube::testing::CloudVolume>> {
        bail!("no volume API in this test")
    }
    async fn attach_volume(
        &self,
        _: &str,
        _: &str,
        _: &str,
        _: bool,
    ) -> Result<protokube::testing::AttachOutcome> {
        bail!("no volume API in this test")
    }
    async fn instance_device_names(&self, _: &str) -> Result<Vec<String>> {
        bail!("no volume API in this test")
    }
    async fn tag_volume(&self, _: &str, _: &str, _: &str) -> Result<()> {
        bail!("no volume API in this test")
    }
    async fn detach_volume(&self, _: &str, _: &str, _: bool) -> Result<()> {
        bail!("no volume API in this test")
    }
}

#[async_trait]
impl InstanceApi for Absent {
    async fn instance_tags(&self, _: &str) -> Result<std::collections::BTreeMap<String, String>> {
        bail!("no instance API in this test")
    }
    async fn running_masters(&self, _: &str) -> Result<Vec<InstanceInfo>> {
        bail!("no instance API in this test")
    }
}
