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
    AttachOutcome, ChangeResult, CloudVolume, DnsApi, HostedZone, InstanceApi, InstanceInfo,
    InstanceMetadata, RecordAction, RecordChange, RecordSet, VolumeApi, VolumeAttachment,
    VolumeQuery,
};
use crate::volumes::{CLUSTER_TAG, CONTROL_PLANE_ROLE_TAG, MASTER_ROLE_TAG};

/// Attempts per AWS call (the first try included); throttling and 5xx are retried with backoff.
const MAX_ATTEMPTS: u32 = 6;
/// Largest page `DescribeVolumes` allows; with server-side filters one page is the normal case.
const VOLUME_PAGE_SIZE: i32 = 500;
/// Records per `ListResourceRecordSets` page: a cluster's own subtree (A and TXT for its etcd
/// and API names) fits in one; a small page keeps the read from carrying the names that follow
/// it in a large zone.
const RECORD_PAGE_SIZE: i32 = 64;

/// Loads the one SDK configuration every AWS client of a run shares: region from the node's
/// identity, standard retries, bounded timeouts, no stalled-stream ticking. Endpoint and credentials come from the SDK's
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
        // Stalled-stream protection watches streaming bodies (large downloads) with a 25 ms
        // tick; protokube's answers are small and bounded by the attempt timeout above, and the
        // tick costs CPU for as long as an answer takes.
        .stalled_stream_protection(
            aws_config::stalled_stream_protection::StalledStreamProtectionConfig::disabled(),
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
        let mut request = self
            .client
            .describe_volumes()
            .filters(filter(format!("tag:{CLUSTER_TAG}"), &query.cluster))
            .filters(filter("tag-key", MASTER_ROLE_TAG))
            .max_results(VOLUME_PAGE_SIZE);
        if let Some(zone) = &query.zone {
            request = request.filters(filter("availability-zone", zone));
        }
        let where_ = query.zone.as_deref().unwrap_or("every zone");
        let mut pages = request.into_paginator().send();
        let mut volumes = Vec::new();
        while let Some(page) = pages.next().await {
            let page = page.map_err(sdk_error).with_context(|| {
                format!(
                    "listing the volumes of cluster `{}` in `{where_}` (ec2:DescribeVolumes)",
                    query.cluster
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

    async fn running_masters(&self, cluster: &str) -> Result<Vec<InstanceInfo>> {
        let mut pages = self
            .client
            .describe_instances()
            .filters(filter(format!("tag:{CLUSTER_TAG}"), cluster))
            .filters(
                Filter::builder()
                    .name("tag-key")
                    .values(MASTER_ROLE_TAG)
                    .values(CONTROL_PLANE_ROLE_TAG)
                    .build(),
            )
            .filters(filter("instance-state-name", "running"))
            .max_results(1000)
            .into_paginator()
            .send();
        let mut masters = Vec::new();
        while let Some(page) = pages.next().await {
            let page = page.map_err(sdk_error).with_context(|| {
                format!("listing the masters of cluster `{cluster}` (ec2:DescribeInstances)")
            })?;
            for instance in page.reservations().iter().flat_map(|r| r.instances()) {
                let ip = |s: Option<&str>| s.and_then(|s| s.parse().ok());
                masters.push(InstanceInfo {
                    id: instance.instance_id().unwrap_or_default().to_owned(),
                    private_ip: ip(instance.private_ip_address()),
                    public_ip: ip(instance.public_ip_address()),
                });
            }
        }
        masters.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(masters)
    }
}

/// Route53 through the AWS SDK.
#[derive(Clone, Debug)]
pub struct Route53 {
    client: aws_sdk_route53::Client,
}

impl Route53 {
    pub fn new(config: &SdkConfig) -> Self {
        Self {
            client: aws_sdk_route53::Client::new(config),
        }
    }
}

/// A DNS name as protokube compares them: lowercase, no trailing dot, `\052` for `*` undone.
pub fn normalize_name(name: &str) -> String {
    name.trim_end_matches('.')
        .replace("\\052", "*")
        .to_ascii_lowercase()
}

fn zone_from_sdk(zone: &aws_sdk_route53::types::HostedZone) -> HostedZone {
    HostedZone {
        id: zone.id().trim_start_matches("/hostedzone/").to_owned(),
        name: normalize_name(zone.name()),
        private: zone.config().is_some_and(|c| c.private_zone()),
    }
}

/// True when `name` is `apex` or below it.
pub fn is_within(name: &str, apex: &str) -> bool {
    name == apex || name.ends_with(&format!(".{apex}"))
}

#[async_trait]
impl DnsApi for Route53 {
    async fn zone_by_id(&self, id: &str) -> Result<Option<HostedZone>> {
        match self.client.get_hosted_zone().id(id).send().await {
            Ok(output) => Ok(output.hosted_zone().map(zone_from_sdk)),
            Err(err) if err.code() == Some("NoSuchHostedZone") => Ok(None),
            Err(err) => Err(sdk_error(err))
                .with_context(|| format!("reading hosted zone `{id}` (route53:GetHostedZone)")),
        }
    }

    async fn zones_named(&self, name: &str) -> Result<Vec<HostedZone>> {
        let output = self
            .client
            .list_hosted_zones_by_name()
            .dns_name(name)
            .max_items(10)
            .send()
            .await
            .map_err(sdk_error)
            .with_context(|| {
                format!("finding hosted zone `{name}` (route53:ListHostedZonesByName)")
            })?;
        Ok(output
            .hosted_zones()
            .iter()
            .map(zone_from_sdk)
            .filter(|z| z.name == normalize_name(name))
            .collect())
    }

    async fn all_zones(&self) -> Result<Vec<HostedZone>> {
        let mut zones = Vec::new();
        let mut marker: Option<String> = None;
        loop {
            let output = self
                .client
                .list_hosted_zones()
                .set_marker(marker.clone())
                .send()
                .await
                .map_err(sdk_error)
                .context("listing hosted zones (route53:ListHostedZones)")?;
            zones.extend(output.hosted_zones().iter().map(zone_from_sdk));
            match output.next_marker() {
                Some(next) if output.is_truncated() => marker = Some(next.to_owned()),
                _ => break,
            }
        }
        Ok(zones)
    }

    async fn records_under(&self, zone_id: &str, apex: &str) -> Result<Vec<RecordSet>> {
        let mut records = Vec::new();
        let mut start: Option<(String, aws_sdk_route53::types::RrType)> = None;
        loop {
            let mut request = self
                .client
                .list_resource_record_sets()
                .hosted_zone_id(zone_id)
                .max_items(RECORD_PAGE_SIZE);
            request = match &start {
                Some((name, record_type)) => request
                    .start_record_name(name)
                    .start_record_type(record_type.clone()),
                None => request.start_record_name(apex),
            };
            let output = request.send().await.map_err(sdk_error).with_context(|| {
                format!(
                    "reading the records under `{apex}` in zone `{zone_id}` \
                     (route53:ListResourceRecordSets)"
                )
            })?;
            for set in output.resource_record_sets() {
                let name = normalize_name(set.name());
                if !is_within(&name, apex) {
                    // Sorted by reversed labels: past the subtree, nothing more of ours follows.
                    return Ok(records);
                }
                records.push(RecordSet {
                    name,
                    record_type: set.r#type().as_str().to_owned(),
                    ttl: set.ttl(),
                    values: set
                        .resource_records()
                        .iter()
                        .map(|r| r.value().to_owned())
                        .collect(),
                });
            }
            match (
                output.is_truncated(),
                output.next_record_name(),
                output.next_record_type(),
            ) {
                (true, Some(name), Some(record_type)) => {
                    start = Some((name.to_owned(), record_type.clone()))
                }
                _ => return Ok(records),
            }
        }
    }

    async fn change_records(
        &self,
        zone_id: &str,
        changes: &[RecordChange],
    ) -> Result<ChangeResult> {
        use aws_sdk_route53::types::{
            Change, ChangeAction, ChangeBatch, ResourceRecord, ResourceRecordSet, RrType,
        };
        let mut batch = ChangeBatch::builder().comment("protokube");
        for change in changes {
            let mut set = ResourceRecordSet::builder()
                .name(&change.record.name)
                .r#type(RrType::from(change.record.record_type.as_str()));
            if let Some(ttl) = change.record.ttl {
                set = set.ttl(ttl);
            }
            for value in &change.record.values {
                set = set.resource_records(ResourceRecord::builder().value(value).build()?);
            }
            batch = batch.changes(
                Change::builder()
                    .action(match change.action {
                        RecordAction::Create => ChangeAction::Create,
                        RecordAction::Upsert => ChangeAction::Upsert,
                    })
                    .resource_record_set(set.build()?)
                    .build()?,
            );
        }
        let result = self
            .client
            .change_resource_record_sets()
            .hosted_zone_id(zone_id)
            .change_batch(batch.build()?)
            .send()
            .await;
        match result {
            Ok(output) => Ok(ChangeResult::Submitted {
                change_id: output
                    .change_info()
                    .map(|c| c.id().trim_start_matches("/change/").to_owned())
                    .unwrap_or_default(),
            }),
            Err(err)
                if err.code() == Some("InvalidChangeBatch")
                    && err.message().is_some_and(|m| m.contains("already exists")) =>
            {
                Ok(ChangeResult::Conflict(
                    err.message().unwrap_or_default().to_owned(),
                ))
            }
            Err(err) => Err(sdk_error(err)).with_context(|| {
                format!("changing records in zone `{zone_id}` (route53:ChangeResourceRecordSets)")
            }),
        }
    }

    async fn change_in_sync(&self, change_id: &str) -> Result<bool> {
        let output = self
            .client
            .get_change()
            .id(change_id)
            .send()
            .await
            .map_err(sdk_error)
            .with_context(|| format!("reading change `{change_id}` (route53:GetChange)"))?;
        Ok(output
            .change_info()
            .is_some_and(|c| c.status() == &aws_sdk_route53::types::ChangeStatus::Insync))
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
