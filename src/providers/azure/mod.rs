//! Azure, where protokube is the gossip member (DESIGN §14), in one folder: its [`Provider`]
//! value, the VM's identity and the cluster's control-plane scale sets as kOps' protokube reads
//! them ([`arm`]: `release-1.36:protokube/pkg/protokube/azure_volume.go`,
//! `protokube/pkg/gossip/azure/`), and [`connect`].

pub(crate) mod arm;

use std::sync::Arc;

use anyhow::Result;

use crate::cloud::provider::{Endpoint, Provider};
use crate::host::Files;
use crate::providers::connected::Connected;
use crate::providers::member_only::{connected, MemberWords};
use crate::providers::rest::{error_code_and_message, Calls, Rest, RestCloud};
use crate::settings::Settings;
use arm::Arm;

/// What is true of Azure for protokube: the gossip member only (kOps: alpha, behind a feature
/// flag); Resource Manager's root moves with `--azure-api-endpoint`, the instance metadata
/// service's with `--azure-metadata-endpoint`.
pub(crate) const PROVIDER: Provider = Provider {
    name: "azure",
    summary: "Azure: the gossip member (etcd-manager and dns-controller do the rest)",
    zone_service: "no DNS service (dns-controller's job on Azure)",
    zone_service_names: &[],
    region_variables: &[],
    labels_every_member: false,
    endpoints: &[
        Endpoint {
            flag: API_ENDPOINT_FLAG,
            variable: "PROTOKUBE_AZURE_API_ENDPOINT",
            what: "Azure Resource Manager's root, for tests and sovereign clouds",
            default: "https://management.azure.com/",
            sdk_variable: None,
        },
        Endpoint {
            flag: METADATA_ENDPOINT_FLAG,
            variable: "PROTOKUBE_AZURE_METADATA_ENDPOINT",
            what: "The Azure instance metadata service's root, for tests",
            default: "http://169.254.169.254/",
            sdk_variable: None,
        },
    ],
    member_only: true,
    names_left_by_spec: |_| None,
    denied_to: |_, _| {
        (
            "the VM's managed identity (a Reader role on its resource group)".to_owned(),
            "docs/clouds.md",
        )
    },
};

const API_ENDPOINT_FLAG: &str = "--azure-api-endpoint";
const METADATA_ENDPOINT_FLAG: &str = "--azure-metadata-endpoint";

/// Resource Manager in messages; its errors are `{"error": {"code", "message"}}`.
pub(crate) static ARM: RestCloud = RestCloud {
    name: "Azure Resource Manager",
    credential: "the token of the VM's managed identity",
    fix: "give the VM a managed identity (`AZURE_CLIENT_ID` picks a user-assigned one) with the \
          Reader role on its resource group",
    permission: "the managed identity's Reader role on the resource group \
                 (`Microsoft.Compute/virtualMachineScaleSets/read`, \
                 `…/virtualMachineScaleSets/networkInterfaces/read`)",
    read_error: error_code_and_message,
};

/// The instance metadata service in messages (its errors: `{"error", "error_description"}`).
pub(crate) static METADATA: RestCloud = RestCloud {
    name: "the Azure instance metadata service",
    credential: "the VM's managed identity",
    fix: "give the VM a managed identity, or run on an Azure VM",
    permission: "none",
    read_error: |body| {
        Some((
            body.get("error")?.as_str()?.to_owned(),
            body.get("error_description")?.as_str()?.to_owned(),
        ))
    },
};

/// kOps' Azure tags: the cluster's is `KubernetesCluster`.
static WORDS: MemberWords = MemberWords {
    noun: "tag",
    cluster_key: arm::CLUSTER_TAG,
};

/// The run's Azure: the instance metadata service (`Metadata: true`), which also gives the
/// managed identity's token, and Resource Manager.
pub(crate) fn connect(settings: &Settings, _files: &dyn Files) -> Result<Connected> {
    let calls = Calls::default();
    let metadata = Rest::new(
        &METADATA,
        &settings.api_root(METADATA_ENDPOINT_FLAG)?,
        &[("metadata", "true".to_owned())],
        settings.deadline,
        calls.clone(),
        true,
    )?;
    let client_id = std::env::var("AZURE_CLIENT_ID")
        .ok()
        .filter(|v| !v.is_empty());
    let arm = Arc::new(Arm::new(
        metadata,
        &ARM,
        settings.api_root(API_ENDPOINT_FLAG)?,
        client_id,
        settings.deadline,
        calls.clone(),
    ));
    Ok(connected(&PROVIDER, &WORDS, calls, arm))
}
