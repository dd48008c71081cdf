//! Route53 through the AWS SDK: hosted zones, the record sets under a name, change batches; one
//! attempt per call (the waiting is [`super::Route53Zones`]').

use anyhow::{Context as _, Result};
use aws_config::SdkConfig;
use aws_sdk_route53::error::ProvideErrorMetadata;

use crate::dns::zoned::api::{ChangeResult, ZoneGone};
use crate::names::{is_within, normalize_dns_name};
use crate::plan::dns::zones::Zone;
use crate::plan::dns::zones::{RecordAction, RecordChange, RecordSet};
use crate::providers::aws::sdk::{aws_error, required, CallCounter};

/// Records per `ListResourceRecordSets` page: a cluster's own subtree (A and TXT for its etcd
/// and API names) fits in one; a small page keeps the read from carrying the names that follow
/// it in a large zone.
const RECORD_PAGE_SIZE: i32 = 64;

/// Route53 through the AWS SDK.
#[derive(Clone, Debug)]
pub(crate) struct Route53 {
    client: aws_sdk_route53::Client,
}

impl Route53 {
    /// A client on `config`; every request it sends is counted by `counter`.
    pub(crate) fn new(config: &SdkConfig, counter: &CallCounter) -> Self {
        let config = aws_sdk_route53::config::Builder::from(config)
            .interceptor(counter.clone())
            .build();
        Self {
            client: aws_sdk_route53::Client::from_conf(config),
        }
    }
}

fn zone_from_sdk(zone: &aws_sdk_route53::types::HostedZone) -> Zone {
    Zone {
        id: zone.id().trim_start_matches("/hostedzone/").to_owned(),
        name: normalize_dns_name(zone.name()),
        private: zone
            .config()
            .is_some_and(aws_sdk_route53::types::HostedZoneConfig::private_zone),
    }
}

impl Route53 {
    pub(crate) async fn zone_by_id(&self, id: &str) -> Result<Option<Zone>> {
        match self.client.get_hosted_zone().id(id).send().await {
            Ok(output) => Ok(Some(zone_from_sdk(required(
                output.hosted_zone(),
                "HostedZone",
                "route53:GetHostedZone",
            )?))),
            Err(err) if err.code() == Some("NoSuchHostedZone") => Ok(None),
            Err(err) => Err(aws_error(err, "route53:GetHostedZone"))
                .with_context(|| format!("reading hosted zone `{id}` (route53:GetHostedZone)")),
        }
    }

    pub(crate) async fn all_zones(&self) -> Result<Vec<Zone>> {
        let mut zones = Vec::new();
        let mut marker: Option<String> = None;
        loop {
            let output = self
                .client
                .list_hosted_zones()
                .set_marker(marker.clone())
                .send()
                .await
                .map_err(|e| aws_error(e, "route53:ListHostedZones"))
                .context("listing hosted zones (route53:ListHostedZones)")?;
            zones.extend(output.hosted_zones().iter().map(zone_from_sdk));
            match output.next_marker() {
                Some(next) if output.is_truncated() => marker = Some(next.to_owned()),
                _ => break,
            }
        }
        Ok(zones)
    }

    /// The record sets at or below `apex` in the zone, read from `apex` on (Route53 lists by
    /// reversed labels, so a subtree is contiguous): cost does not grow with the rest of the
    /// zone. A zone that does not exist (any more) is the error [`ZoneGone`].
    pub(crate) async fn records_under(&self, zone_id: &str, apex: &str) -> Result<Vec<RecordSet>> {
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
            let output = match request.send().await {
                Err(err) if err.code() == Some("NoSuchHostedZone") => {
                    return Err(ZoneGone {
                        zone_id: zone_id.to_owned(),
                    }
                    .into())
                }
                other => other,
            };
            let output = output
                .map_err(|e| aws_error(e, "route53:ListResourceRecordSets"))
                .with_context(|| {
                    format!(
                        "reading the records under `{apex}` in zone `{zone_id}` \
                     (route53:ListResourceRecordSets)"
                    )
                })?;
            for set in output.resource_record_sets() {
                let name = normalize_dns_name(set.name());
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
                    alias: set.alias_target().is_some(),
                });
            }
            match (
                output.is_truncated(),
                output.next_record_name(),
                output.next_record_type(),
            ) {
                (true, Some(name), Some(record_type)) => {
                    start = Some((name.to_owned(), record_type.clone()));
                }
                _ => return Ok(records),
            }
        }
    }

    pub(crate) async fn change_records(
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
                        RecordAction::Delete => ChangeAction::Delete,
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
        let context =
            || format!("changing records in zone `{zone_id}` (route53:ChangeResourceRecordSets)");
        match result {
            Ok(output) => {
                let info = required(
                    output.change_info(),
                    "ChangeInfo",
                    "route53:ChangeResourceRecordSets",
                )
                .with_context(context)?;
                Ok(ChangeResult::Submitted {
                    change_id: info.id().trim_start_matches("/change/").to_owned(),
                })
            }
            Err(err)
                if err.code() == Some("InvalidChangeBatch")
                    && err.message().is_some_and(|m| m.contains("already exists")) =>
            {
                Ok(ChangeResult::Conflict(
                    err.message().unwrap_or_default().to_owned(),
                ))
            }
            Err(err) => {
                Err(aws_error(err, "route53:ChangeResourceRecordSets")).with_context(context)
            }
        }
    }

    /// Whether the change is `INSYNC`.
    pub(crate) async fn change_in_sync(&self, change_id: &str) -> Result<bool> {
        let output = self
            .client
            .get_change()
            .id(change_id)
            .send()
            .await
            .map_err(|e| aws_error(e, "route53:GetChange"))
            .with_context(|| format!("reading change `{change_id}` (route53:GetChange)"))?;
        let info = required(output.change_info(), "ChangeInfo", "route53:GetChange")?;
        Ok(info.status() == &aws_sdk_route53::types::ChangeStatus::Insync)
    }
}
