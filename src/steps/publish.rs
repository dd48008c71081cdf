//! The publish step: the records etcd peers, nodes and users need, computed from the cloud's
//! facts (plan), to the hosts file or to Route53.

use std::collections::BTreeMap;
use std::time::SystemTime;

use anyhow::{anyhow, Context as _, Result};

use crate::names::check_dns_name;
use crate::plan::hosts::HostRecords;
use crate::plan::records::{listed_etcd_names, worker_records, DesiredRecord};
use crate::plan::route53::{DeletionGuard, ZonePolicy};
use crate::plan::state::{LeftAlone, MissingName};
use crate::report::Report;
use crate::settings::Settings;
use crate::snapshot::Snapshot;
use crate::state::KnownZones;
use crate::state::State;
use crate::steps::discover::warn_skipped;

use super::dns_target;

/// What `sync` on a master knows from its last full check (DESIGN §8); nothing for every other
/// run, which looks in full.
#[derive(Clone, Debug, Default)]
pub struct Known {
    /// The hosted zones the rules chose when last found (remembered in the state file).
    pub zones: Option<KnownZones>,
    /// The names the recorded check found published; `Some` only when this run trusts it.
    pub trusted_names: Option<Vec<DesiredRecord>>,
    /// The names that check left alone to their holders.
    pub left_alone: Vec<LeftAlone>,
}

/// What the publish step found, for the verify step (`sync` on a master).
#[derive(Clone, Debug)]
pub struct PublishOutcome {
    /// The names that stand in Route53 as desired now, or are left alone to their holders; an
    /// empty list where nothing goes to Route53; `None` after a dry run, whose plan is not in
    /// place yet.
    pub names_in_place: Option<Vec<DesiredRecord>>,
    /// The desired names left alone because someone else holds them (warned about).
    pub left_alone: Vec<LeftAlone>,
    /// The hosted zones the rules chose, when Route53 was looked at.
    pub zones: Option<KnownZones>,
    /// The owned names no longer the cluster's, waited out, when Route53 was read in full.
    pub missing: Option<BTreeMap<String, MissingName>>,
    /// The hosts file's managed block as this run wrote it (or, in a dry run, would).
    pub hosts_block: Option<HostRecords>,
}

impl PublishOutcome {
    /// Nothing published to Route53: nothing there to verify.
    pub fn nothing() -> Self {
        Self {
            names_in_place: Some(Vec::new()),
            left_alone: Vec::new(),
            zones: None,
            missing: None,
            hosts_block: None,
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
    let target = dns_target::choose(settings, &cluster);
    if let Some(why) = target.idle_reason() {
        tracing::info!("{why}");
        return Ok(PublishOutcome::nothing());
    }
    // The old protokube beside etcd-manager published nothing to Route53: dns-controller owns
    // the names there.
    if target.is_route53() && settings.legacy && !snapshot.etcd_owner()?.is_protokube() {
        tracing::info!(
            "etcd-manager runs here and dns-controller publishes the cluster's names: \
             nothing for protokube to publish to Route53"
        );
        return Ok(PublishOutcome::nothing());
    }
    let masters = snapshot.masters().await?;
    let mut listed = None;
    let desired = if settings.master {
        // Where etcd-manager owns etcd, the etcd names are its own: none desired, none deleted.
        let volumes = if snapshot.etcd_owner()?.is_protokube() {
            warn_skipped(snapshot, report).await?;
            snapshot.discovery().await?.volumes.clone()
        } else {
            Vec::new()
        };
        listed = listed_etcd_names(&cluster.internal_suffix, &volumes);
        target.master_records(&volumes, &masters)
    } else {
        // A worker needs the masters' addresses only, and may not list volumes (kOps' node
        // role has `DescribeInstances` alone).
        worker_records(&cluster.name, &masters)
    };
    // Names from tags and the spec are untrusted: each must be a DNS name before it is written.
    for record in &desired {
        check_dns_name(&record.name).map_err(|why| anyhow!("refusing to publish: {why}"))?;
    }
    let state = snapshot.state()?.clone();
    let policy = ZonePolicy {
        adopt: settings.adopt,
        deletion: DeletionGuard {
            listed_etcd_names: listed,
            missing: state.missing_names.clone(),
            now: SystemTime::now(),
            grace: settings.verify_interval,
        },
    };
    let outcome = target
        .publish(snapshot, desired, policy, known, report)
        .await?;
    // The names waited out are remembered for the next full read (a dry run remembers nothing).
    if let Some(missing) = outcome
        .missing
        .as_ref()
        .filter(|m| **m != state.missing_names)
    {
        if !settings.dry_run {
            let state = State {
                missing_names: missing.clone(),
                ..state
            };
            super::save_state(settings, snapshot.host(), &state)
                .context("recording the names no longer the cluster's")?;
            snapshot.record_state(state);
        }
    }
    Ok(outcome)
}
