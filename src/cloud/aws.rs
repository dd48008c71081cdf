//! The AWS implementation of the cloud traits: one SDK configuration built in one place, EC2 for
//! volumes and instances, IMDSv2 for instance metadata.

use std::time::Duration;

use anyhow::{anyhow, Context as _, Result};
use async_trait::async_trait;
use aws_config::imds::client::error::ImdsError;
use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_ec2::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_ec2::types::Filter;

use super::{
    AttachOutcome, CloudVolume, InstanceApi, InstanceMetadata, VolumeApi, VolumeAttachment,
    VolumeQuery,
};
use crate::volumes::{CLUSTER_TAG, MASTER_ROLE_TAG};

/// Attempts per AWS call (the first try included); throttling and 5xx are retried with backoff.
const MAX_ATTEMPTS: u32 = 6;
/// Largest page `DescribeVolumes` allows; with server-side filters one page is the normal case.
const VOLUME_PAGE_SIZE: i32 = 500;

/// Loads the one SDK configuration every AWS client of a run shares: region from the node's
/// identity, standard retries, bounded timeouts. Endpoint and credentials come from the SDK's
/// standard chain, so `AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, profiles and instance roles work.
pub async fn load_sdk_config(region: &str) -> SdkConfig {
    aws_config::defaults(BehaviorVersion::latest())
        .region(Region::new(region.to_owned()))
        .retry_config(
            RetryConfig::standard()
                .with_max_attempts(MAX_ATTEMPTS)
                .with_initial_backoff(Duration::from_millis(200))
                .with_max_backoff(Duration::from_secs(10)),
        )
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(Duration::from_secs(5))
                .operation_attempt_timeout(Duration::from_secs(30))
                .build(),
        )
        .load()
        .await
}

/// Turns an SDK error into one readable line: the service's error code and message when the
/// service answered, else the chain of causes (connection refused, timeout, …).
pub(crate) fn sdk_error<E, R>(err: SdkError<E, R>) -> anyhow::Error
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    if let Some(code) = err.code() {
        let message = err.message().unwrap_or("no message");
        return anyhow!("{code}: {message}");
    }
    anyhow!("{}", cause_chain(&err))
}

/// The `Display` of an error and its sources, joined with `: `, leaving out a cause whose text
/// the previous one already contains.
pub(crate) fn cause_chain(err: &dyn std::error::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut current: Option<&dyn std::error::Error> = Some(err);
    while let Some(e) = current {
        let text = e.to_string();
        if !text.is_empty() && !parts.last().is_some_and(|last| last.contains(&text)) {
            parts.push(text);
        }
        current = e.source();
    }
    parts.join(": ")
}

/// EC2 through the AWS SDK.
#[derive(Clone, Debug)]
pub struct Ec2 {
    client: aws_sdk_ec2::Client,
}

impl Ec2 {
    pub fn new(config: &SdkConfig) -> Self {
        Self {
            client: aws_sdk_ec2::Client::new(config),
        }
    }
}

fn filter(name: impl Into<String>, value: impl Into<String>) -> Filter {
    Filter::builder().name(name).values(value).build()
}

fn volume_from_sdk(volume: &aws_sdk_ec2::types::Volume) -> CloudVolume {
    CloudVolume {
        id: volume.volume_id().unwrap_or_default().to_owned(),
        zone: volume.availability_zone().unwrap_or_default().to_owned(),
        state: volume
            .state()
            .map(|s| s.as_str().to_owned())
            .unwrap_or_default(),
        attachments: volume
            .attachments()
            .iter()
            .map(|a| VolumeAttachment {
                instance_id: a.instance_id().unwrap_or_default().to_owned(),
                device: a.device().unwrap_or_default().to_owned(),
                state: a.state().map(|s| s.as_str().to_owned()).unwrap_or_default(),
            })
            .collect(),
        tags: volume
            .tags()
            .iter()
            .filter_map(|t| {
                Some((
                    t.key()?.to_owned(),
                    t.value().unwrap_or_default().to_owned(),
                ))
            })
            .collect(),
    }
}

#[async_trait]
impl VolumeApi for Ec2 {
    async fn find_volumes(&self, query: &VolumeQuery) -> Result<Vec<CloudVolume>> {
        let mut pages = self
            .client
            .describe_volumes()
            .filters(filter(format!("tag:{CLUSTER_TAG}"), &query.cluster))
            .filters(filter("tag-key", MASTER_ROLE_TAG))
            .filters(filter("availability-zone", &query.zone))
            .max_results(VOLUME_PAGE_SIZE)
            .into_paginator()
            .send();
        let mut volumes = Vec::new();
        while let Some(page) = pages.next().await {
            let page = page.map_err(sdk_error).with_context(|| {
                format!(
                    "listing the volumes of cluster `{}` in zone `{}` (ec2:DescribeVolumes)",
                    query.cluster, query.zone
                )
            })?;
            volumes.extend(page.volumes().iter().map(volume_from_sdk));
        }
        Ok(volumes)
    }

    async fn volumes_by_id(&self, volume_ids: &[String]) -> Result<Vec<CloudVolume>> {
        let output = self
            .client
            .describe_volumes()
            .set_volume_ids(Some(volume_ids.to_vec()))
            .send()
            .await
            .map_err(sdk_error)
            .with_context(|| {
                format!(
                    "reading the state of `{}` (ec2:DescribeVolumes)",
                    volume_ids.join("`, `")
                )
            })?;
        Ok(output.volumes().iter().map(volume_from_sdk).collect())
    }

    async fn attach_volume(
        &self,
        volume_id: &str,
        instance_id: &str,
        device: &str,
        dry_run: bool,
    ) -> Result<AttachOutcome> {
        let result = self
            .client
            .attach_volume()
            .volume_id(volume_id)
            .instance_id(instance_id)
            .device(device)
            .dry_run(dry_run)
            .send()
            .await;
        let err = match result {
            Ok(_) => return Ok(AttachOutcome::Requested),
            Err(err) => err,
        };
        let code = err.code().unwrap_or_default().to_owned();
        let message = err.message().unwrap_or_default().to_owned();
        Ok(match code.as_str() {
            "DryRunOperation" => AttachOutcome::WouldSucceed,
            "VolumeInUse" | "IncorrectState" => {
                AttachOutcome::VolumeTaken(format!("{code}: {message}"))
            }
            "InvalidParameterValue" if message.contains("already in use") => {
                AttachOutcome::DeviceNameTaken(format!("{code}: {message}"))
            }
            _ => {
                return Err(sdk_error(err)).with_context(|| {
                    format!(
                    "attaching `{volume_id}` to `{instance_id}` as `{device}` (ec2:AttachVolume)"
                )
                })
            }
        })
    }

    async fn instance_device_names(&self, instance_id: &str) -> Result<Vec<String>> {
        let output = self
            .client
            .describe_instances()
            .instance_ids(instance_id)
            .send()
            .await
            .map_err(sdk_error)
            .with_context(|| {
                format!("reading the block devices of `{instance_id}` (ec2:DescribeInstances)")
            })?;
        Ok(output
            .reservations()
            .iter()
            .flat_map(|r| r.instances())
            .flat_map(|i| i.block_device_mappings())
            .filter_map(|m| m.device_name().map(str::to_owned))
            .collect())
    }
}

#[async_trait]
impl InstanceApi for Ec2 {
    async fn instance_tag(&self, instance_id: &str, key: &str) -> Result<Option<String>> {
        let output = self
            .client
            .describe_tags()
            .filters(filter("resource-id", instance_id))
            .filters(filter("key", key))
            .send()
            .await
            .map_err(sdk_error)
            .with_context(|| {
                format!("reading tag `{key}` of instance `{instance_id}` (ec2:DescribeTags)")
            })?;
        Ok(output
            .tags()
            .iter()
            .find(|t| t.key() == Some(key))
            .and_then(|t| t.value().map(str::to_owned)))
    }
}

/// IMDSv2 through the SDK's metadata client (token first), with short timeouts and one retry so
/// that a node without a metadata service fails within a few seconds. Honours
/// `AWS_EC2_METADATA_SERVICE_ENDPOINT`.
#[derive(Clone, Debug)]
pub struct Imds {
    client: aws_config::imds::Client,
}

impl Imds {
    pub fn new() -> Self {
        Self {
            client: aws_config::imds::Client::builder()
                .connect_timeout(Duration::from_secs(1))
                .read_timeout(Duration::from_secs(1))
                .operation_timeout(Duration::from_secs(4))
                .max_attempts(2)
                .build(),
        }
    }
}

impl Default for Imds {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl InstanceMetadata for Imds {
    async fn get(&self, path: &str) -> Result<Option<String>> {
        match self.client.get(format!("/latest/meta-data/{path}")).await {
            Ok(value) => Ok(Some(String::from(value))),
            Err(ImdsError::ErrorResponse(response))
                if response.response().status().as_u16() == 404 =>
            {
                Ok(None)
            }
            Err(err) => Err(anyhow!("{}", cause_chain(&err))),
        }
    }
}
