//! Names in a DNS service's zones: the zones the `--zone` rules choose, only the
//! cluster's names read, the zone's plan ([`plan`]: ownership records, placeholders, deletion
//! guard) sent and re-planned when another writer was first ([`walk`]), through the service's
//! client behind [`api::ZoneApi`].

pub mod api;
pub mod plan;
pub mod walk;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::SystemTime;

use anyhow::Result;
use async_trait::async_trait;

use crate::cloud::InstanceInfo;
use crate::plan::records::{desired_records, ApiNames, DesiredRecord, RecordRole};
use crate::plan::volumes::EtcdVolume;
use crate::report::Report;
use crate::settings::{Cluster, Settings};
use crate::snapshot::Snapshot;
use crate::state::KnownZones;
use api::{ZoneApi, ZoneService};
use plan::{DeletionGuard, ZonePolicy};
use walk::{PublishOptions, Remembered};

use super::target::{Desired, DnsTarget, Known, PublishOutcome};

/// The cluster's names in the zones of the DNS service `service` that the zone rules choose.
pub struct ZonedNames<'a> {
    pub settings: &'a Settings,
    pub cluster: Cluster,
    pub service: &'a dyn ZoneService,
}

impl ZonedNames<'_> {
    /// The service's client for this node's region.
    async fn api(&self, snapshot: &mut Snapshot<'_>) -> Result<Arc<dyn ZoneApi>> {
        let region = snapshot.identity().await?.region.clone();
        self.service.connect(&region).await
    }

    /// How the walk talks to the service, from the settings and the zone's policy.
    fn options(&self, policy: ZonePolicy) -> PublishOptions {
        let settings = self.settings;
        PublishOptions {
            dry_run: settings.dry_run,
            wait: settings.dns_wait.then_some(settings.deadline),
            progress: settings.progress,
            policy,
        }
    }
}

#[async_trait(?Send)]
impl DnsTarget for ZonedNames<'_> {
    fn shared_with_dns_controller(&self) -> bool {
        true
    }

    fn master_records(
        &self,
        volumes: &[EtcdVolume],
        masters: &[InstanceInfo],
    ) -> Vec<DesiredRecord> {
        desired_records(
            &self.cluster.name,
            &self.cluster.internal_suffix,
            ApiNames::for_spec(
                self.settings.spec.as_ref().map(|d| &d.spec),
                &self.cluster.public_name,
            ),
            volumes,
            masters,
        )
    }

    async fn publish(
        &self,
        snapshot: &mut Snapshot<'_>,
        desired: Desired,
        known: &Known,
        report: &mut Report,
    ) -> Result<PublishOutcome> {
        let settings = self.settings;
        let policy = ZonePolicy {
            adopt: settings.adopt,
            deletion: DeletionGuard {
                listed_etcd_names: desired.listed_etcd_names,
                missing: snapshot.state()?.missing_names.clone(),
                now: SystemTime::now(),
                grace: settings.verify_interval,
            },
        };
        let api = self.api(snapshot).await?;
        let remembered = Remembered {
            zones: known
                .zones
                .as_ref()
                .and_then(|zones| zones.for_rules(&settings.zone_rules)),
            names: known.trusted_names.as_deref(),
            left_alone: &known.left_alone,
        };
        let published = walk::publish(
            &*api,
            &desired.records,
            &settings.zone_rules,
            &self.cluster.name,
            &self.options(policy),
            remembered,
            report,
        )
        .await?;
        Ok(PublishOutcome {
            // What a dry run plans is not in place yet.
            names_in_place: (!settings.dry_run).then_some(desired.records),
            left_alone: published.left_alone,
            zones: Some(KnownZones {
                rules: settings.zone_rules.clone(),
                zones: published.zones,
            }),
            missing: published.missing,
            hosts_block: None,
        })
    }

    async fn remove_placeholders(
        &self,
        snapshot: &mut Snapshot<'_>,
        names: &[String],
        report: &mut Report,
    ) -> Result<()> {
        let names: Vec<DesiredRecord> = names
            .iter()
            .map(|name| DesiredRecord {
                name: name.clone(),
                role: RecordRole::EtcdMember,
                addresses: Vec::new(),
            })
            .collect();
        let api = self.api(snapshot).await?;
        walk::remove_placeholders(
            &*api,
            &names,
            &self.settings.zone_rules,
            &self.cluster.name,
            &self.options(ZonePolicy::default()),
            report,
        )
        .await
    }

    async fn release(&self, snapshot: &mut Snapshot<'_>, report: &mut Report) -> Result<()> {
        let identity = snapshot.identity().await?.clone();
        let masters = snapshot.masters().await?;
        let mut own: Vec<IpAddr> = masters
            .iter()
            .filter(|m| m.id == identity.instance_id)
            .flat_map(|m| m.private_ips.iter().chain(&m.public_ips).copied())
            .chain(identity.internal_ip)
            .chain(identity.external_ip)
            .collect();
        own.sort();
        own.dedup();
        let volumes = snapshot.discovery().await?.volumes.clone();
        // The names whose zones and subtrees are read; every owned name there is looked at.
        let names = self.master_records(&volumes, &masters);
        let api = self.api(snapshot).await?;
        walk::release(
            &*api,
            &names,
            &own,
            &self.settings.zone_rules,
            &self.cluster.name,
            &self.options(ZonePolicy::default()),
            report,
        )
        .await
    }
}
