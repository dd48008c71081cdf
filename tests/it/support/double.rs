//! A `Cloud` made of test doubles of protokube's own traits, for what the emulator cannot show;
//! identity comes from flags (the double has no metadata service).

use std::sync::Arc;

use anyhow::{bail, Result};
use async_trait::async_trait;
use protokube::cloud::{
    ChangeResult, Cloud, CloudClients, DnsApi, HostedZone, InstanceApi, InstanceInfo,
    InstanceMetadata, RecordChange, RecordSet, VolumeApi,
};

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
                dns: Arc::new(Absent),
            },
        }
    }

    pub(crate) fn with_dns(dns: Arc<dyn DnsApi>) -> Self {
        Self {
            clients: CloudClients {
                volumes: Arc::new(Absent),
                instances: Arc::new(Absent),
                dns,
            },
        }
    }
}

#[async_trait]
impl Cloud for DoubleCloud {
    fn metadata(&self) -> &dyn InstanceMetadata {
        &Absent
    }

    async fn connect(&self, _region: &str) -> Result<CloudClients> {
        Ok(self.clients.clone())
    }
}

/// A client the test did not provide.
struct Absent;

#[async_trait]
impl InstanceMetadata for Absent {
    async fn get(&self, path: &str) -> Result<Option<String>> {
        bail!("no metadata service in this test (asked for `{path}`)")
    }
}

#[async_trait]
impl VolumeApi for Absent {
    async fn find_volumes(
        &self,
        _: &protokube::cloud::VolumeQuery,
    ) -> Result<Vec<protokube::cloud::CloudVolume>> {
        bail!("no volume API in this test")
    }
    async fn volumes_by_id(&self, _: &[String]) -> Result<Vec<protokube::cloud::CloudVolume>> {
        bail!("no volume API in this test")
    }
    async fn attach_volume(
        &self,
        _: &str,
        _: &str,
        _: &str,
        _: bool,
    ) -> Result<protokube::cloud::AttachOutcome> {
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

#[async_trait]
impl DnsApi for Absent {
    async fn zone_by_id(&self, _: &str) -> Result<Option<HostedZone>> {
        bail!("no DNS API in this test")
    }
    async fn all_zones(&self) -> Result<Vec<HostedZone>> {
        bail!("no DNS API in this test")
    }
    async fn records_under(&self, _: &str, _: &str) -> Result<Vec<RecordSet>> {
        bail!("no DNS API in this test")
    }
    async fn change_records(&self, _: &str, _: &[RecordChange]) -> Result<ChangeResult> {
        bail!("no DNS API in this test")
    }
    async fn change_in_sync(&self, _: &str) -> Result<bool> {
        bail!("no DNS API in this test")
    }
}
