//! AWS, everything true of it in one folder: its [`Provider`] value, EC2 ([`ec2`]) behind the
//! [`Cloud`] trait on the run's one SDK configuration ([`sdk`]), instance metadata over IMDSv2
//! ([`imds`]), EBS device naming ([`devices`]), Route53 behind the zone seam ([`route53`]),
//! and [`connect`], which makes the run's cloud and zone service together.

pub(crate) mod devices;
pub(crate) mod ec2;
pub(crate) mod imds;
pub(crate) mod patient;
pub(crate) mod route53;
pub(crate) mod sdk;

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::Result;
use async_trait::async_trait;

use crate::cloud::patient::Patient;
use crate::cloud::provider::Provider;
use crate::cloud::tags::KopsTags;
use crate::cloud::{Cloud, CloudClients, DeviceNaming, InstanceMetadata, MetadataWords, Placement};
use crate::host::Files;
use crate::providers::connected::Connected;
use crate::settings::Settings;
use devices::EbsDevices;
use patient::PatientEc2;
use sdk::AwsSdk;

/// What is true of AWS for protokube: Route53 is its zone service (`--dns route53`, kOps'
/// `aws-route53`); the SDK's region variables count as `--region`; an IRSA cluster leaves its
/// names to dns-controller (the control-plane role has no Route53 permission); a refused call
/// names kOps' IAM role of the node.
pub(crate) const PROVIDER: Provider = Provider {
    name: "aws",
    summary: "Amazon Web Services: EC2 instances, EBS volumes, Route53",
    zone_service: "Route53",
    zone_service_names: &["route53", "aws-route53"],
    region_variables: &["AWS_REGION", "AWS_DEFAULT_REGION"],
    // kOps writes every member on each EBS volume, 1.36 included (`master_volumes.go`).
    labels_every_member: true,
    endpoints: &[],
    member_only: false,
    names_left_by_spec: |spec| {
        spec.uses_irsa().then_some(
            "IRSA cluster (spec.iam.useServiceAccountExternalPermissions): dns-controller owns \
             the DNS names under its own role and the control-plane role has no Route53 \
             permission; protokube publishes none (--dns none)",
        )
    },
    denied_to: |master, cluster| {
        let role = if master {
            format!("the control-plane role (kOps: `masters.{cluster}`)")
        } else {
            format!("the node role (kOps: `nodes.{cluster}`)")
        };
        (role, "docs/kops.md (IAM)")
    },
};

/// The run's AWS: EC2 and Route53 on one SDK configuration, every call ending by the run's
/// deadline. Credentials come from the SDK's chain (its own files under `$HOME`, not the
/// node's `--root`), so the node's files are not read here.
#[allow(
    clippy::unnecessary_wraps,
    reason = "the registry's signature, shared by every provider"
)]
pub(crate) fn connect(settings: &Settings, _files: &dyn Files) -> Result<Connected> {
    let sdk = AwsSdk::new(settings.deadline);
    Ok(Connected {
        cloud: Box::new(AwsCloud::new(sdk.clone())),
        zones: Box::new(route53::Route53Service::new(sdk)),
    })
}

/// AWS: IMDSv2 for the metadata, EC2 on the run's shared SDK configuration; each waits for a
/// metadata service, credentials or endpoint not there yet, up to the run's deadline.
pub(crate) struct AwsCloud {
    imds: Patient<imds::Imds>,
    sdk: Arc<AwsSdk>,
}

impl AwsCloud {
    /// AWS on `sdk` (shared with the run's other AWS clients).
    pub(crate) fn new(sdk: Arc<AwsSdk>) -> Self {
        Self {
            imds: Patient::new(imds::Imds::new(), sdk.deadline()),
            sdk,
        }
    }
}

#[async_trait]
impl Cloud for AwsCloud {
    fn metadata(&self) -> &dyn InstanceMetadata {
        &self.imds
    }

    fn devices(&self) -> &dyn DeviceNaming {
        &EbsDevices
    }

    /// kOps tags EC2 resources with its keys as they are.
    fn words(&self) -> &dyn MetadataWords {
        &KopsTags
    }

    async fn connect(&self, placement: &Placement) -> Result<CloudClients> {
        let config = self.sdk.config(&placement.region).await;
        let ec2 = Arc::new(PatientEc2 {
            ec2: ec2::Ec2::new(&config, self.sdk.counter()),
            sdk: self.sdk.clone(),
        });
        Ok(CloudClients {
            volumes: ec2.clone(),
            instances: ec2,
        })
    }

    fn calls(&self) -> BTreeMap<String, u64> {
        self.sdk.counter().counts()
    }
}
