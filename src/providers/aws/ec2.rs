//! EC2 through the AWS SDK: the cluster's volumes, attaching them, and the cluster's instances.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use anyhow::{anyhow, Context as _, Result};
use async_trait::async_trait;
use aws_config::SdkConfig;
use aws_sdk_ec2::config::interceptors::BeforeDeserializationInterceptorContextRef;
use aws_sdk_ec2::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_ec2::error::ProvideErrorMetadata;
use aws_sdk_ec2::primitives::{DateTime, DateTimeFormat};
use aws_sdk_ec2::types::Filter;
use aws_smithy_runtime_api::box_error::BoxError;

use super::sdk::{aws_error, required, CallCounter};
use crate::cloud::{
    tags, AttachOutcome, AttachmentState, CloudVolume, InstanceApi, InstanceInfo, InstanceVolume,
    VolumeApi, VolumeAttachment, VolumeQuery, VolumeState,
};

/// Largest page `DescribeVolumes` allows; with server-side filters one page is the normal case.
const VOLUME_PAGE_SIZE: i32 = 500;

/// EC2 through the AWS SDK.
#[derive(Clone, Debug)]
pub(crate) struct Ec2 {
    client: aws_sdk_ec2::Client,
    answered: AnswerClock,
}

impl Ec2 {
    /// A client on `config`; every request it sends is counted by `counter`.
    pub(crate) fn new(config: &SdkConfig, counter: &CallCounter) -> Self {
        let answered = AnswerClock::default();
        let config = aws_sdk_ec2::config::Builder::from(config)
            .interceptor(counter.clone())
            .interceptor(answered.clone())
            .build();
        Self {
            client: aws_sdk_ec2::Client::from_conf(config),
            answered,
        }
    }

    /// `volume` from EC2's answer, an `attaching` attachment's start moved onto this node's
    /// clock: EC2 stamps it on its own clock, and a node's clock may be minutes off at first
    /// boot. The answer's `Date` (EC2's clock) tells how long ago it began; that is subtracted
    /// from the node's time of the answer.
    fn volume(&self, volume: &aws_sdk_ec2::types::Volume) -> Result<CloudVolume> {
        let mut volume = volume_from_sdk(volume)?;
        if let Some((cloud_now, node_now)) = self.answered.last() {
            for attachment in &mut volume.attachments {
                if attachment.state != AttachmentState::Attaching {
                    continue;
                }
                if let Some(begun) = attachment.attach_time {
                    let ago = cloud_now.duration_since(begun).unwrap_or_default();
                    attachment.attach_time = Some(node_now - ago);
                }
            }
        }
        Ok(volume)
    }

    /// One instance, with `DescribeInstances` (the call every kOps role may make).
    async fn instance(&self, instance_id: &str) -> Result<aws_sdk_ec2::types::Instance> {
        let output = self
            .client
            .describe_instances()
            .instance_ids(instance_id)
            .send()
            .await
            .map_err(|e| aws_error(e, "ec2:DescribeInstances"))
            .context("ec2:DescribeInstances")?;
        output
            .reservations()
            .iter()
            .flat_map(aws_sdk_ec2::types::Reservation::instances)
            .find(|i| i.instance_id() == Some(instance_id))
            .cloned()
            .ok_or_else(|| {
                anyhow::anyhow!("the ec2:DescribeInstances answer has no instance `{instance_id}`")
            })
    }
}

/// The `Date` of EC2's last answer (EC2's clock) and this node's time when it came: an SDK
/// interceptor on the EC2 client. Calls are made one at a time, so the last answer is the one
/// being read.
#[derive(Clone, Debug, Default)]
struct AnswerClock(Arc<Mutex<Option<(SystemTime, SystemTime)>>>);

impl AnswerClock {
    fn last(&self) -> Option<(SystemTime, SystemTime)> {
        self.0.lock().ok().and_then(|last| *last)
    }
}

impl Intercept for AnswerClock {
    fn name(&self) -> &'static str {
        "protokube-answer-clock"
    }

    fn read_before_deserialization(
        &self,
        context: &BeforeDeserializationInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        // The last `Date` (AWS sends one; a proxy may put its own after the server's).
        let date = context
            .response()
            .headers()
            .get_all("date")
            .last()
            .and_then(|text| DateTime::from_str(text, DateTimeFormat::HttpDate).ok())
            .and_then(|date| SystemTime::try_from(date).ok());
        if let Ok(mut last) = self.0.lock() {
            *last = date.map(|date| (date, SystemTime::now()));
        }
        Ok(())
    }
}

fn filter(name: impl Into<String>, value: impl Into<String>) -> Filter {
    Filter::builder().name(name).values(value).build()
}

/// An attachment state from EC2's word in `answer`; another word is an error.
fn attachment_state(word: &str, answer: &str) -> Result<AttachmentState> {
    AttachmentState::parse(word)
        .ok_or_else(|| anyhow!("{answer} gave the attachment state `{word}`, none of EC2's"))
}

fn volume_from_sdk(volume: &aws_sdk_ec2::types::Volume) -> Result<CloudVolume> {
    const ANSWER: &str = "ec2:DescribeVolumes";
    let id = required(volume.volume_id(), "VolumeId", ANSWER)?;
    let answer = format!("{ANSWER} (volume `{id}`)");
    let attachments = volume
        .attachments()
        .iter()
        .map(|a| {
            Ok(VolumeAttachment {
                instance_id: required(a.instance_id(), "InstanceId", &answer)?.to_owned(),
                device: required(a.device(), "Device", &answer)?.to_owned(),
                state: attachment_state(required(a.state(), "State", &answer)?.as_str(), &answer)?,
                attach_time: a
                    .attach_time()
                    .and_then(|t| std::time::SystemTime::try_from(*t).ok()),
                root: false,
                read_only: false,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(CloudVolume {
        id: id.to_owned(),
        zone: required(volume.availability_zone(), "AvailabilityZone", &answer)?.to_owned(),
        state: {
            let word = required(volume.state(), "State", &answer)?.as_str();
            VolumeState::parse(word)
                .ok_or_else(|| anyhow!("{answer} gave the volume state `{word}`, none of EC2's"))?
        },
        attachments,
        made_from: volume
            .snapshot_id()
            .filter(|s| !s.is_empty())
            .map(|snapshot| format!("snapshot `{snapshot}`")),
        regional: false,
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
    })
}

#[async_trait]
impl VolumeApi for Ec2 {
    async fn find_volumes(&self, query: &VolumeQuery) -> Result<Vec<CloudVolume>> {
        let mut request = self
            .client
            .describe_volumes()
            .filters(filter(format!("tag:{}", tags::CLUSTER), &query.cluster))
            .filters(filter("tag-key", tags::MASTER_ROLE))
            .max_results(VOLUME_PAGE_SIZE);
        if let Some(zone) = &query.zone {
            request = request.filters(filter("availability-zone", zone));
        }
        let where_ = query.zone.as_deref().unwrap_or("every zone");
        let context = || {
            format!(
                "listing the volumes of cluster `{}` in `{where_}` (ec2:DescribeVolumes)",
                query.cluster
            )
        };
        let mut pages = request.into_paginator().send();
        let mut volumes = Vec::new();
        while let Some(page) = pages.next().await {
            let page = page
                .map_err(|e| aws_error(e, "ec2:DescribeVolumes"))
                .with_context(context)?;
            for volume in page.volumes() {
                volumes.push(self.volume(volume).with_context(context)?);
            }
        }
        Ok(volumes)
    }

    async fn volumes_by_id(&self, volume_ids: &[String]) -> Result<Vec<CloudVolume>> {
        let context = || {
            format!(
                "reading the state of `{}` (ec2:DescribeVolumes)",
                volume_ids.join("`, `")
            )
        };
        let output = self
            .client
            .describe_volumes()
            .set_volume_ids(Some(volume_ids.to_vec()))
            .send()
            .await
            .map_err(|e| aws_error(e, "ec2:DescribeVolumes"))
            .with_context(context)?;
        output
            .volumes()
            .iter()
            .map(|volume| self.volume(volume))
            .collect::<Result<_>>()
            .with_context(context)
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
        let Err(err) = result else {
            return Ok(AttachOutcome::Requested);
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
                return Err(aws_error(err, "ec2:AttachVolume")).with_context(|| {
                    format!(
                        "attaching `{volume_id}` to `{instance_id}` as `{device}` \
                         (ec2:AttachVolume)"
                    )
                })
            }
        })
    }

    async fn instance_device_names(&self, instance_id: &str) -> Result<Vec<String>> {
        let instance = self
            .instance(instance_id)
            .await
            .with_context(|| format!("reading the block devices of `{instance_id}`"))?;
        Ok(instance
            .block_device_mappings()
            .iter()
            .filter_map(|m| m.device_name().map(str::to_owned))
            .collect())
    }

    async fn tag_volume(&self, volume_id: &str, key: &str, value: &str) -> Result<()> {
        self.client
            .create_tags()
            .resources(volume_id)
            .tags(
                aws_sdk_ec2::types::Tag::builder()
                    .key(key)
                    .value(value)
                    .build(),
            )
            .send()
            .await
            .map_err(|e| aws_error(e, "ec2:CreateTags"))
            .with_context(|| {
                format!("tagging `{volume_id}` with `{key}={value}` (ec2:CreateTags)")
            })?;
        Ok(())
    }

    async fn detach_volume(&self, volume_id: &str, instance_id: &str, dry_run: bool) -> Result<()> {
        let result = self
            .client
            .detach_volume()
            .volume_id(volume_id)
            .instance_id(instance_id)
            .dry_run(dry_run)
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(err) if err.code() == Some("DryRunOperation") => Ok(()),
            Err(err) => Err(aws_error(err, "ec2:DetachVolume")).with_context(|| {
                format!("detaching `{volume_id}` from `{instance_id}` (ec2:DetachVolume)")
            }),
        }
    }
}

#[async_trait]
impl InstanceApi for Ec2 {
    async fn instance_tags(&self, instance_id: &str) -> Result<BTreeMap<String, String>> {
        let instance = self
            .instance(instance_id)
            .await
            .with_context(|| format!("reading the tags of instance `{instance_id}`"))?;
        instance
            .tags()
            .iter()
            .map(|t| match (t.key(), t.value()) {
                (Some(key), Some(value)) => Ok((key.to_owned(), value.to_owned())),
                _ => Err(anyhow!(
                    "instance `{instance_id}` has a tag without key or value in the answer to \
                     ec2:DescribeInstances"
                )),
            })
            .collect()
    }

    async fn running_masters(&self, cluster: &str) -> Result<Vec<InstanceInfo>> {
        self.masters(cluster, &["running"]).await
    }

    /// kOps' gossip seeds (`protokube/pkg/gossip/aws/seeds.go`): running or pending.
    async fn seed_masters(&self, cluster: &str) -> Result<Vec<InstanceInfo>> {
        self.masters(cluster, &["running", "pending"]).await
    }
}

impl Ec2 {
    /// The cluster's control-plane instances in one of `states`: one filtered listing.
    async fn masters(&self, cluster: &str, states: &[&str]) -> Result<Vec<InstanceInfo>> {
        let context =
            || format!("listing the masters of cluster `{cluster}` (ec2:DescribeInstances)");
        let mut pages = self
            .client
            .describe_instances()
            .filters(filter(format!("tag:{}", tags::CLUSTER), cluster))
            .filters(
                Filter::builder()
                    .name("tag-key")
                    .values(tags::MASTER_ROLE)
                    .values(tags::CONTROL_PLANE_ROLE)
                    .build(),
            )
            .filters(
                Filter::builder()
                    .name("instance-state-name")
                    .set_values(Some(states.iter().map(|s| (*s).to_owned()).collect()))
                    .build(),
            )
            .max_results(1000)
            .into_paginator()
            .send();
        let mut masters = Vec::new();
        while let Some(page) = pages.next().await {
            let page = page
                .map_err(|e| aws_error(e, "ec2:DescribeInstances"))
                .with_context(context)?;
            for instance in page
                .reservations()
                .iter()
                .flat_map(aws_sdk_ec2::types::Reservation::instances)
            {
                let id = required(
                    instance.instance_id(),
                    "InstanceId",
                    "ec2:DescribeInstances",
                )
                .with_context(context)?;
                let (private_ips, public_ips) = instance_addresses(instance);
                let volumes = instance_volumes(instance).with_context(context)?;
                masters.push(InstanceInfo {
                    id: id.to_owned(),
                    private_ips,
                    public_ips,
                    volumes,
                });
            }
        }
        masters.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(masters)
    }
}

/// An instance's EBS volumes from its block device mappings, sorted by device name; a mapping
/// without a device name or volume id is an error (instance-store mappings carry no `Ebs`).
fn instance_volumes(instance: &aws_sdk_ec2::types::Instance) -> Result<Vec<InstanceVolume>> {
    let mut volumes = Vec::new();
    for mapping in instance.block_device_mappings() {
        let Some(ebs) = mapping.ebs() else { continue };
        let op = "ec2:DescribeInstances";
        volumes.push(InstanceVolume {
            device: required(mapping.device_name(), "BlockDeviceMappings.DeviceName", op)?
                .to_owned(),
            volume_id: required(ebs.volume_id(), "BlockDeviceMappings.Ebs.VolumeId", op)?
                .to_owned(),
            status: attachment_state(
                required(ebs.status(), "BlockDeviceMappings.Ebs.Status", op)?.as_str(),
                op,
            )?,
        });
    }
    volumes.sort();
    Ok(volumes)
}

/// An instance's private and public addresses: the primary private address (IPv4, or IPv6 in an
/// IPv6-only subnet), the primary IPv6 address and those of the primary network interface; the
/// public IPv4 and, since they are routable, the IPv6 ones. Sorted, IPv4 first.
fn instance_addresses(instance: &aws_sdk_ec2::types::Instance) -> (Vec<IpAddr>, Vec<IpAddr>) {
    let parse = |s: Option<&str>| s.and_then(|s| s.parse::<IpAddr>().ok());
    let mut private: Vec<IpAddr> = Vec::new();
    private.extend(parse(instance.private_ip_address()));
    private.extend(parse(instance.ipv6_address()));
    let primary = instance.network_interfaces().iter().find(|ni| {
        ni.attachment()
            .and_then(aws_sdk_ec2::types::InstanceNetworkInterfaceAttachment::device_index)
            == Some(0)
    });
    for address in primary
        .map(aws_sdk_ec2::types::InstanceNetworkInterface::ipv6_addresses)
        .unwrap_or_default()
    {
        private.extend(parse(address.ipv6_address()));
    }
    private.sort();
    private.dedup();
    let mut public: Vec<IpAddr> = parse(instance.public_ip_address()).into_iter().collect();
    public.extend(private.iter().filter(|a| a.is_ipv6()));
    public.sort();
    public.dedup();
    (private, public)
}

#[cfg(test)]
mod tests;
