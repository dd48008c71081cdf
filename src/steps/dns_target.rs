//! Where this node's names go, chosen once from the settings and the cluster: Route53's hosted
//! zones, the hosts file, or nowhere (with the reason said once). The publish and reset steps
//! ask the chosen target; none of them matches on the DNS provider.

use std::net::IpAddr;
use std::path::PathBuf;

use anyhow::Result;
use async_trait::async_trait;

use crate::apply::route53::{publish, release, PublishOptions, Remembered};
use crate::cloud::InstanceInfo;
use crate::paths::HOSTS_FILE;
use crate::plan::hosts::{
    managed_records, plan_hosts, plan_hosts_removal, HostsPlan, ManagedNames,
};
use crate::plan::records::{desired_records, gossip_master_records, ApiNames, DesiredRecord};
use crate::plan::route53::ZonePolicy;
use crate::plan::volumes::EtcdVolume;
use crate::report::Report;
use crate::settings::{Cluster, DnsProvider, Settings};
use crate::snapshot::Snapshot;
use crate::state::KnownZones;

use super::publish::{Known, PublishOutcome};

/// What the publish and reset steps ask of the place names go.
#[async_trait(?Send)]
pub trait DnsTarget {
    /// Why this node publishes nothing here (said once by the step), or `None` when it does.
    fn idle_reason(&self) -> Option<&str> {
        None
    }

    /// Whether the names go to Route53, where dns-controller publishes them beside etcd-manager.
    fn is_route53(&self) -> bool {
        false
    }

    /// The records a control-plane node wants, from the etcd volumes' members and the masters.
    fn master_records(
        &self,
        volumes: &[EtcdVolume],
        masters: &[InstanceInfo],
    ) -> Vec<DesiredRecord>;

    /// Makes the names stand as `desired` (checked DNS names) and says what is in place.
    async fn publish(
        &self,
        snapshot: &mut Snapshot<'_>,
        desired: Vec<DesiredRecord>,
        policy: ZonePolicy,
        known: &Known,
        report: &mut Report,
    ) -> Result<PublishOutcome>;

    /// Takes this node out of the names it published.
    async fn release(&self, snapshot: &mut Snapshot<'_>, report: &mut Report) -> Result<()>;
}

/// The target for this run: Route53 only from control-plane nodes, the hosts file on every node
/// of a gossip cluster, nowhere for `--dns none` (or a cluster without DNS).
pub fn choose<'a>(settings: &'a Settings, cluster: &Cluster) -> Box<dyn DnsTarget + 'a> {
    match cluster.dns {
        DnsProvider::None => Box::new(Nowhere {
            why: cluster
                .dns_note
                .clone()
                .unwrap_or_else(|| "--dns none: nothing to publish".into()),
        }),
        DnsProvider::Route53 if !settings.master => Box::new(Nowhere {
            why: "only control-plane nodes publish to Route53 (--master is not set)".into(),
        }),
        DnsProvider::Route53 => Box::new(Route53Zones {
            settings,
            cluster: cluster.clone(),
        }),
        DnsProvider::Hosts => Box::new(HostsFile {
            settings,
            cluster: cluster.clone(),
        }),
    }
}

/// No names from this node.
struct Nowhere {
    why: String,
}

#[async_trait(?Send)]
impl DnsTarget for Nowhere {
    fn idle_reason(&self) -> Option<&str> {
        Some(&self.why)
    }

    fn master_records(&self, _: &[EtcdVolume], _: &[InstanceInfo]) -> Vec<DesiredRecord> {
        Vec::new()
    }

    async fn publish(
        &self,
        _: &mut Snapshot<'_>,
        _: Vec<DesiredRecord>,
        _: ZonePolicy,
        _: &Known,
        _: &mut Report,
    ) -> Result<PublishOutcome> {
        Ok(PublishOutcome::nothing())
    }

    async fn release(&self, _: &mut Snapshot<'_>, _: &mut Report) -> Result<()> {
        Ok(())
    }
}

/// The managed block of `<root>/etc/hosts`.
struct HostsFile<'a> {
    settings: &'a Settings,
    cluster: Cluster,
}

impl HostsFile<'_> {
    fn names(&self) -> ManagedNames<'_> {
        hosts_names(self.settings, &self.cluster)
    }

    fn path(&self) -> Result<PathBuf> {
        self.settings.root.resolve(HOSTS_FILE)
    }

    /// Reads the hosts file, plans the new one from what it holds, writes it unless a dry run.
    /// Returns the new content.
    fn rewrite(
        &self,
        snapshot: &Snapshot<'_>,
        plan: impl FnOnce(&str, &[u8]) -> HostsPlan,
        report: &mut Report,
    ) -> Result<Vec<u8>> {
        let host = snapshot.host();
        let path = self.path()?;
        let content = host.read_hosts(&path)?;
        let plan = plan(&path.display().to_string(), &content);
        if !self.settings.dry_run {
            host.write_hosts(&path, &content, &plan.content)?;
        }
        for change in plan.changes {
            report.push(change);
        }
        Ok(plan.content)
    }
}

#[async_trait(?Send)]
impl DnsTarget for HostsFile<'_> {
    fn master_records(
        &self,
        volumes: &[EtcdVolume],
        masters: &[InstanceInfo],
    ) -> Vec<DesiredRecord> {
        // Without a DNS service, as current kOps' nodeup: the API at 127.0.0.1 here.
        let spec_public_name = self
            .settings
            .spec
            .as_ref()
            .and_then(|s| s.spec.master_public_name.as_ref())
            .map(|_| self.cluster.public_name.as_str());
        gossip_master_records(
            &self.cluster.name,
            &self.cluster.internal_suffix,
            spec_public_name,
            volumes,
            masters,
        )
    }

    async fn publish(
        &self,
        snapshot: &mut Snapshot<'_>,
        mut desired: Vec<DesiredRecord>,
        _: ZonePolicy,
        _: &Known,
        report: &mut Report,
    ) -> Result<PublishOutcome> {
        // Without DNS (topology.dns.type: None) nodeup writes the API's and kops-controller's
        // names into the block itself (the load balancer's addresses): only etcd's are ours.
        let names = self.names();
        desired.retain(|r| names.manages(&r.name));
        let written = self.rewrite(
            snapshot,
            |path, content| plan_hosts(path, content, &desired, &names),
            report,
        )?;
        Ok(PublishOutcome {
            hosts_block: Some(managed_records(&written)),
            ..PublishOutcome::nothing()
        })
    }

    async fn release(&self, snapshot: &mut Snapshot<'_>, report: &mut Report) -> Result<()> {
        let names = self.names();
        self.rewrite(
            snapshot,
            |path, content| plan_hosts_removal(path, content, &names),
            report,
        )
        .map(drop)
    }
}

/// The cluster's names in the Route53 hosted zones the zone rules choose.
struct Route53Zones<'a> {
    settings: &'a Settings,
    cluster: Cluster,
}

#[async_trait(?Send)]
impl DnsTarget for Route53Zones<'_> {
    fn is_route53(&self) -> bool {
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
        desired: Vec<DesiredRecord>,
        policy: ZonePolicy,
        known: &Known,
        report: &mut Report,
    ) -> Result<PublishOutcome> {
        let settings = self.settings;
        let dns = snapshot.clients().await?.dns;
        let remembered = Remembered {
            zones: known
                .zones
                .as_ref()
                .and_then(|zones| zones.for_rules(&settings.zone_rules)),
            names: known.trusted_names.as_deref(),
            left_alone: &known.left_alone,
        };
        let published = publish(
            &*dns,
            &desired,
            &settings.zone_rules,
            &self.cluster.name,
            &publish_options(settings, policy),
            remembered,
            report,
        )
        .await?;
        Ok(PublishOutcome {
            // What a dry run plans is not in place yet.
            names_in_place: (!settings.dry_run).then_some(desired),
            left_alone: published.left_alone,
            zones: Some(KnownZones {
                rules: settings.zone_rules.clone(),
                zones: published.zones,
            }),
            missing: published.missing,
            hosts_block: None,
        })
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
        let dns = snapshot.clients().await?.dns;
        release(
            &*dns,
            &names,
            &own,
            &self.settings.zone_rules,
            &self.cluster.name,
            &publish_options(self.settings, ZonePolicy::default()),
            report,
        )
        .await
    }
}

/// The names of kOps' hosts block that are protokube's for `cluster` (publish and reset):
/// without DNS (`topology.dns.type: None`) nodeup writes the API's and kops-controller's names
/// itself, so only the etcd names are protokube's there.
fn hosts_names<'a>(settings: &Settings, cluster: &'a Cluster) -> ManagedNames<'a> {
    ManagedNames {
        cluster: &cluster.name,
        internal_suffix: &cluster.internal_suffix,
        public_name: &cluster.public_name,
        api_names: !settings
            .spec
            .as_ref()
            .is_some_and(|d| d.spec.uses_none_dns()),
    }
}

/// How the DNS steps talk to Route53, from the settings and the step's zone policy.
fn publish_options(settings: &Settings, policy: ZonePolicy) -> PublishOptions {
    PublishOptions {
        dry_run: settings.dry_run,
        wait: settings.dns_wait.then_some(settings.waits.remaining()),
        progress: settings.waits.progress,
        wait_backoff: settings.waits.dns.clone(),
        policy,
    }
}
