//! The publish step: the records etcd peers, nodes and users need, computed from the cloud's
//! facts (plan), to the hosts file or to Route53.

use anyhow::{anyhow, Result};

use crate::apply::route53::{publish, Remembered};
use crate::names::check_dns_name;
use crate::paths::HOSTS_FILE;
use crate::plan::hosts::plan_hosts;
use crate::plan::records::{
    desired_records, gossip_master_records, worker_records, ApiNames, DesiredRecord,
};
use crate::plan::route53::ZonePolicy;
use crate::report::Report;
use crate::settings::{DnsProvider, Settings};
use crate::snapshot::Snapshot;
use crate::state::KnownZones;
use crate::steps::discover::warn_skipped;

/// What `sync` on a master knows from its last full check (DESIGN §8); nothing for every other
/// run, which looks in full.
#[derive(Clone, Debug, Default)]
pub struct Known {
    /// The hosted zones the rules chose when last found (remembered in the state file).
    pub zones: Option<KnownZones>,
    /// The names the recorded check found published; `Some` only when this run trusts it.
    pub trusted_names: Option<Vec<DesiredRecord>>,
}

/// What the publish step found, for the verify step (`sync` on a master).
#[derive(Clone, Debug)]
pub struct PublishOutcome {
    /// The names that stand in Route53 as desired now (none left alone with a warning); an
    /// empty list where nothing goes to Route53; `None` when a name is not in place (or this
    /// was a dry run, whose plan is not in place yet).
    pub names_in_place: Option<Vec<DesiredRecord>>,
    /// The hosted zones the rules chose, when Route53 was looked at.
    pub zones: Option<KnownZones>,
}

impl PublishOutcome {
    /// Nothing published to Route53: nothing there to verify.
    pub fn nothing() -> Self {
        Self {
            names_in_place: Some(Vec::new()),
            zones: None,
        }
    }
}

pub async fn run(
    settings: &Settings,
    snapshot: &mut Snapshot<'_>,
    known: &Known,
    report: &mut Report,
) -> Result<PublishOutcome> {
    let cluster = snapshot.cluster().await?;
    match cluster.dns {
        DnsProvider::None => {
            if let Some(note) = &cluster.dns_note {
                tracing::info!("{note}");
            } else {
                tracing::info!("--dns none: nothing to publish");
            }
            return Ok(PublishOutcome::nothing());
        }
        DnsProvider::Route53 if !settings.master => {
            tracing::info!("only control-plane nodes publish to Route53 (--master is not set)");
            return Ok(PublishOutcome::nothing());
        }
        // The old protokube beside etcd-manager published nothing to Route53: dns-controller
        // owns the names there.
        DnsProvider::Route53 if settings.legacy && !snapshot.etcd_owner()?.is_protokube() => {
            tracing::info!(
                "etcd-manager runs here and dns-controller publishes the cluster's names: \
                 nothing for protokube to publish to Route53"
            );
            return Ok(PublishOutcome::nothing());
        }
        _ => {}
    }
    let masters = snapshot.masters().await?;
    let mut etcd_members_known = false;
    let desired = if settings.master {
        // Where etcd-manager owns etcd, the etcd names are its own: none desired, none deleted.
        let volumes = if snapshot.etcd_owner()?.is_protokube() {
            warn_skipped(snapshot, report).await?;
            snapshot.discovery().await?.volumes.clone()
        } else {
            Vec::new()
        };
        etcd_members_known = volumes.iter().any(|v| !v.etcd.is_empty());
        if cluster.dns == DnsProvider::Hosts {
            // Without a DNS service, as current kOps' nodeup: the API at 127.0.0.1 here.
            let spec_public_name = settings
                .spec
                .as_ref()
                .and_then(|s| s.spec.master_public_name.as_ref())
                .map(|_| cluster.public_name.as_str());
            gossip_master_records(
                &cluster.name,
                &cluster.internal_suffix,
                spec_public_name,
                &volumes,
                &masters,
            )
        } else {
            desired_records(
                &cluster.name,
                &cluster.internal_suffix,
                ApiNames::for_spec(
                    settings.spec.as_ref().map(|d| &d.spec),
                    &cluster.public_name,
                ),
                &volumes,
                &masters,
            )
        }
    } else {
        // A worker needs the masters' addresses only, and may not list volumes (kOps' node
        // role has `DescribeInstances` alone).
        worker_records(&cluster.name, &masters)
    };
    // Names from tags and the spec are untrusted: each must be a DNS name before it is written.
    for record in &desired {
        check_dns_name(&record.name).map_err(|why| anyhow!("refusing to publish: {why}"))?;
    }
    if cluster.dns == DnsProvider::Hosts {
        // Without DNS (topology.dns.type: None) nodeup writes the API's and kops-controller's
        // names into the block itself (the load balancer's addresses): only etcd's are ours.
        let names = super::hosts_names(settings, &cluster);
        let mut desired = desired;
        desired.retain(|r| names.manages(&r.name));
        let host = snapshot.host();
        let path = settings.root.resolve(HOSTS_FILE)?;
        let content = host.read_hosts(&path)?;
        let plan = plan_hosts(&path.display().to_string(), &content, &desired, &names);
        if !settings.dry_run {
            host.write_hosts(&path, &content, &plan.content)?;
        }
        for change in plan.changes {
            report.push(change);
        }
        return Ok(PublishOutcome::nothing());
    }
    let dns = snapshot.clients().await?.dns;
    let policy = ZonePolicy {
        adopt: settings.adopt,
        etcd_members_known,
    };
    let options = super::publish_options(settings, policy);
    let remembered = Remembered {
        zones: known
            .zones
            .as_ref()
            .and_then(|zones| zones.for_rules(&settings.zone_rules)),
        names: known.trusted_names.as_deref(),
    };
    let published = publish(
        &*dns,
        &desired,
        &settings.zone_rules,
        &cluster.name,
        &options,
        remembered,
        report,
    )
    .await?;
    Ok(PublishOutcome {
        // What a dry run plans is not in place yet.
        names_in_place: (published.in_place && !settings.dry_run).then_some(desired),
        zones: Some(KnownZones {
            rules: settings.zone_rules.clone(),
            zones: published.zones,
        }),
    })
}
