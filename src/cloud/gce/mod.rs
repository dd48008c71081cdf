//! Google Compute Engine behind the [`Cloud`] trait: identity and tokens from the metadata
//! server ([`metadata`]), Compute Engine v1 over its REST API ([`compute`], on the JSON-over-
//! HTTPS layer [`api`] that Cloud DNS in `dns/clouddns/` shares), kOps' GCE labels
//! ([`labels`]) and persistent disk device naming ([`devices`]).

pub mod api;
pub mod compute;
pub mod devices;
pub mod http;
pub mod labels;
pub mod metadata;

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::Result;
use async_trait::async_trait;

use crate::cloud::patient::Patient;
use crate::cloud::{Cloud, CloudClients, DeviceNaming, InstanceMetadata, MetadataWords, Placement};
use api::GoogleApi;
use compute::Compute;
use devices::PersistentDiskDevices;
use metadata::MetadataServer;

/// GCE: the metadata server waited for while it is not there, Compute Engine on `api`.
pub struct GceCloud {
    metadata: Patient<Arc<MetadataServer>>,
    api: Arc<GoogleApi>,
}

impl GceCloud {
    /// GCE on `api` (shared with Cloud DNS), its metadata server the one `api` takes tokens
    /// from.
    pub fn new(api: Arc<GoogleApi>) -> Self {
        Self {
            metadata: Patient::new(api.metadata().clone(), api.patience()),
            api,
        }
    }
}

#[async_trait]
impl Cloud for GceCloud {
    fn metadata(&self) -> &dyn InstanceMetadata {
        &self.metadata
    }

    fn devices(&self) -> &dyn DeviceNaming {
        &PersistentDiskDevices
    }

    fn words(&self) -> &dyn MetadataWords {
        &labels::GceLabels
    }

    async fn connect(&self, placement: &Placement) -> Result<CloudClients> {
        let project = self.api.project().await?;
        let compute = Arc::new(Compute::new(self.api.clone(), project, placement.clone()));
        Ok(CloudClients {
            volumes: compute.clone(),
            instances: compute,
        })
    }

    fn calls(&self) -> BTreeMap<String, u64> {
        self.api.calls()
    }
}
