//! Names in a DNS service's zones: the zones the `--zone` rules choose, only the cluster's names
//! read, the zone's plan ([`crate::plan::dns::zone_plan`]: ownership records, placeholders, deletion
//! guard) sent and re-planned when another writer was first ([`walk`]), through the service's
//! client behind [`api::ZoneApi`].

pub(crate) mod api;
pub(crate) mod walk;

use std::sync::Arc;
use std::time::SystemTime;

use anyhow::Result;
use async_trait::async_trait;

use crate::cloud::InstanceInfo;
use crate::plan::dns::records::{desired_records, ApiNames, DesiredRecord, RecordRole};
use crate::plan::dns::zone_plan::{DeletionGuard, ZonePolicy};
use crate::plan::volumes::EtcdVolume;
use crate::report::Report;
use crate::settings::{Cluster, Settings};
use crate::state::KnownZones;
use api::{ZoneApi, ZoneService};
use walk::{PublishOptions, Remembered};

use super::target::{Desired, DnsTarget, Known, PublishOutcome, Releasing, RunFacts};

/// The cluster's names in the zones of the DNS service `service` that the zone rules choose.
pub(crate) struct ZonedNames<'a> {
    pub(crate) settings: &'a Settings,
    pub(crate) cluster: Cluster,
    pub(crate) service: &'a dyn ZoneService,
}

impl ZonedNames<'_> {
    /// The service's client for this node's region.
    async fn api(&self, facts: &RunFacts) -> Result<Arc<dyn ZoneApi>> {
        self.service.connect(facts.region()?).await
    }

    /// How the walk talks to the service, from the settings and the zone's policy.
    fn options(&self, policy: ZonePolicy) -> PublishOptions {
        let settings = self.settings;
        PublishOptions {
            dry_run: settings.dry_run,
            wait: settings.dns_wait.then_some(settings.deadline),
            wait_backoff: walk::change_backoff(),
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

    fn needs_cloud_facts(&self) -> bool {
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
        facts: &RunFacts,
        desired: Desired,
        known: &Known,
        report: &mut Report,
    ) -> Result<PublishOutcome> {
        let settings = self.settings;
        let policy = ZonePolicy {
            adopt: settings.adopt,
            deletion: DeletionGuard {
                listed_etcd_names: desired.listed_etcd_names,
                missing: facts.missing.clone(),
                now: SystemTime::now(),
                grace: settings.verify_interval,
            },
        };
        let api = self.api(facts).await?;
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
        facts: &RunFacts,
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
        let api = self.api(facts).await?;
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

    async fn release(&self, releasing: &Releasing, report: &mut Report) -> Result<()> {
        let api = self.api(&releasing.facts).await?;
        walk::release(
            &*api,
            &releasing.names,
            &releasing.own_addresses,
            &self.settings.zone_rules,
            &self.cluster.name,
            &self.options(ZonePolicy::default()),
            report,
        )
        .await
    }
}
