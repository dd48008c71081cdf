//! Google Compute Engine, everything true of it in one folder: its [`Provider`] value, identity
//! and tokens from the metadata server ([`metadata`]), Compute Engine v1 behind the [`Cloud`]
//! trait ([`compute`]) and Cloud DNS behind the zone seam ([`clouddns`]), both on one
//! JSON-over-HTTPS layer ([`api`], on `providers::http`), kOps' GCE labels ([`labels`]),
//! persistent disk device naming ([`devices`]), and [`connect`], which makes the run's cloud and
//! zone service.

pub(crate) mod api;
pub(crate) mod clouddns;
pub(crate) mod compute;
pub(crate) mod devices;
pub(crate) mod labels;
pub(crate) mod metadata;

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::Result;
use async_trait::async_trait;

use crate::cloud::patient::Patient;
use crate::cloud::provider::{Endpoint, Provider};
use crate::cloud::{Cloud, CloudClients, DeviceNaming, InstanceMetadata, MetadataWords, Placement};
use crate::host::Files;
use crate::providers::connected::Connected;
use crate::settings::Settings;
use api::{GceEndpoints, GoogleApi};
use compute::Compute;
use devices::PersistentDiskDevices;
use metadata::MetadataServer;

/// What is true of GCE for protokube: Cloud DNS is its zone service (`--dns clouddns`, kOps'
/// `google-clouddns`); Compute Engine's and Cloud DNS' API roots move with
/// `--gce-compute-endpoint` and `--gce-dns-endpoint`; a refused call names the instance's
/// service account.
pub(crate) const PROVIDER: Provider = Provider {
    name: "gce",
    summary: "Google Compute Engine: instances, persistent disks, Cloud DNS",
    zone_service: "Cloud DNS",
    zone_service_names: &["clouddns", "google-clouddns"],
    region_variables: &[],
    // kOps ≥ 1.36 labels each disk with itself only (`master_volumes.go`, kops#17630).
    labels_every_member: false,
    endpoints: &[
        Endpoint {
            flag: COMPUTE_ENDPOINT_FLAG,
            variable: "PROTOKUBE_GCE_COMPUTE_ENDPOINT",
            what: "Compute Engine's API root, for tests and private endpoints",
            default: "https://compute.googleapis.com/compute/v1/",
            sdk_variable: None,
        },
        Endpoint {
            flag: DNS_ENDPOINT_FLAG,
            variable: "PROTOKUBE_GCE_DNS_ENDPOINT",
            what: "Cloud DNS' API root, for tests and private endpoints",
            default: "https://dns.googleapis.com/dns/v1/",
            sdk_variable: None,
        },
    ],
    member_only: false,
    names_left_by_spec: |_| None,
    denied_to: |_, _| {
        (
            "the instance's service account and its access scopes".to_owned(),
            "docs/gce.md",
        )
    },
};

/// The flag that moves Compute Engine's API root.
pub(crate) const COMPUTE_ENDPOINT_FLAG: &str = "--gce-compute-endpoint";
/// The flag that moves Cloud DNS' API root.
pub(crate) const DNS_ENDPOINT_FLAG: &str = "--gce-dns-endpoint";

/// The run's GCE: Compute Engine and Cloud DNS on one Google API layer, tokens from the
/// metadata server, every call ending by the run's deadline (the registry's way of making
/// GCE's cloud and zone service). The metadata server holds the credentials: no file of the
/// node is read.
pub(crate) fn connect(settings: &Settings, _files: &dyn Files) -> Result<Connected> {
    let endpoints = GceEndpoints {
        compute: settings.api_root(COMPUTE_ENDPOINT_FLAG)?,
        dns: settings.api_root(DNS_ENDPOINT_FLAG)?,
    };
    let metadata = Arc::new(MetadataServer::from_env()?);
    let api = GoogleApi::new(endpoints, metadata, settings.deadline)?;
    Ok(Connected {
        cloud: Box::new(GceCloud::new(api.clone())),
        zones: Box::new(clouddns::CloudDnsService::new(api)),
    })
}

/// GCE: the metadata server waited for while it is not there, Compute Engine on `api`.
pub(crate) struct GceCloud {
    metadata: Patient<Arc<MetadataServer>>,
    api: Arc<GoogleApi>,
}

impl GceCloud {
    /// GCE on `api` (shared with Cloud DNS), its metadata server the one `api` takes tokens
    /// from.
    pub(crate) fn new(api: Arc<GoogleApi>) -> Self {
        Self {
            metadata: Patient::new(api.metadata().clone(), api.deadline()),
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
