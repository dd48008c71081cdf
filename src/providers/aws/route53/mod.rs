//! Route53 behind the zone seam: its client on the run's shared AWS SDK configuration
//! ([`client`]), its batch limits ([`batch`]), reads of the cluster's subtree (Route53 lists a
//! zone by reversed labels), and each call waited for while AWS cannot be reached, named by the
//! permission it needs.

pub(crate) mod batch;
pub(crate) mod client;

use std::sync::Arc;

use anyhow::Result;
use async_trait::async_trait;

use crate::dns::zoned::api::{ChangeResult, ZoneApi, ZoneService};
use crate::names::is_within;
use crate::plan::dns::zone_plan::EXTERNAL_DNS_PREFIXES;
use crate::plan::dns::zones::Zone;
use crate::plan::dns::zones::{RecordChange, RecordSet};
use crate::providers::aws::sdk::AwsSdk;
use client::Route53;

/// Route53 clients on the run's shared SDK configuration.
pub(crate) struct Route53Service {
    sdk: Arc<AwsSdk>,
}

impl Route53Service {
    pub(crate) fn new(sdk: Arc<AwsSdk>) -> Self {
        Self { sdk }
    }
}

#[async_trait]
impl ZoneService for Route53Service {
    async fn connect(&self, region: &str) -> Result<Arc<dyn ZoneApi>> {
        let config = self.sdk.config(region).await;
        Ok(Arc::new(Route53Zones {
            client: Route53::new(&config, self.sdk.counter()),
            sdk: self.sdk.clone(),
        }))
    }
}

/// Route53's hosted zones.
pub(crate) struct Route53Zones {
    client: Route53,
    sdk: Arc<AwsSdk>,
}

impl Route53Zones {
    /// The record sets under `apex` (one subtree read, with its pages).
    async fn records_under(&self, zone: &Zone, apex: &str) -> Result<Vec<RecordSet>> {
        self.sdk
            .wait("route53:ListResourceRecordSets", || {
                self.client.records_under(&zone.id, apex)
            })
            .await
    }
}

#[async_trait]
impl ZoneApi for Route53Zones {
    fn service(&self) -> &'static str {
        "Route53"
    }

    async fn zone_by_id(&self, id: &str) -> Result<Option<Zone>> {
        self.sdk
            .wait("route53:GetHostedZone", || self.client.zone_by_id(id))
            .await
    }

    async fn all_zones(&self) -> Result<Vec<Zone>> {
        self.sdk
            .wait("route53:ListHostedZones", || self.client.all_zones())
            .await
    }

    /// The cluster's own names in one read of its subtree, any other name (a custom public name
    /// or suffix) from itself; for a name outside the subtree that exists without any TXT of
    /// its own, external-dns' ownership names are read too before anyone could take it over.
    async fn read(&self, zone: &Zone, names: &[&str], cluster: &str) -> Result<Vec<RecordSet>> {
        let mut existing = Vec::new();
        for apex in apexes(names, cluster) {
            existing.extend(self.records_under(zone, &apex).await?);
        }
        for name in names.iter().filter(|n| !is_within(n, cluster)) {
            let exists = existing.iter().any(|r| r.name == **name);
            let has_txt = existing
                .iter()
                .any(|r| r.name == **name && r.record_type == "TXT");
            if exists && !has_txt {
                for prefix in EXTERNAL_DNS_PREFIXES {
                    let at = format!("{prefix}{name}");
                    existing.extend(self.records_under(zone, &at).await?);
                }
            }
        }
        Ok(existing)
    }

    fn batches(&self, changes: &[RecordChange]) -> Vec<Vec<RecordChange>> {
        batch::batches(changes)
    }

    async fn change_records(&self, zone: &Zone, changes: &[RecordChange]) -> Result<ChangeResult> {
        self.sdk
            .wait("route53:ChangeResourceRecordSets", || {
                self.client.change_records(&zone.id, changes)
            })
            .await
    }

    fn awaited_change(&self, change_id: &str) -> String {
        format!("Route53 change `{change_id}` to be INSYNC")
    }

    async fn change_in_sync(&self, _zone: &Zone, change_id: &str) -> Result<bool> {
        self.sdk
            .wait("route53:GetChange", || {
                self.client.change_in_sync(change_id)
            })
            .await
    }
}

/// The subtrees to read in a zone: the cluster's own names under one read from the cluster
/// name; any other name (a custom public name or suffix) from itself.
pub(crate) fn apexes(names: &[&str], cluster: &str) -> Vec<String> {
    let mut apexes: Vec<String> = names
        .iter()
        .map(|n| {
            if is_within(n, cluster) {
                cluster.to_owned()
            } else {
                (*n).to_owned()
            }
        })
        .collect();
    apexes.sort();
    apexes.dedup();
    apexes
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: &str = "c.example.com";

    #[test]
    fn reads_stay_inside_the_cluster_subtree() {
        assert_eq!(
            apexes(
                &[
                    "api.c.example.com",
                    "etcd-a.internal.c.example.com",
                    "api.other.com"
                ],
                C
            ),
            ["api.other.com", "c.example.com"]
        );
    }
}
