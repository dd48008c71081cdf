//! Publishing to Route53: find the allowed zones, read only the cluster's names, send the
//! planned change batch per zone, re-plan when another writer was first, wait for `INSYNC`.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{bail, Result};

use std::net::IpAddr;

use crate::cloud::{ChangeResult, DnsApi, HostedZone, RecordChange, RecordSet, ZoneGone};
use crate::names::is_within;
use crate::plan::records::DesiredRecord;
use crate::plan::route53::{
    apexes, batches, plan_release, plan_zone, NameOutcome, ZonePolicy, EXTERNAL_DNS_PREFIXES,
};
use crate::plan::state::{LeftAlone, MissingName};
use crate::plan::zones::{zone_for, ZoneRule};
use crate::report::{Action, Change, ChangeKind, Report};
use crate::wait::{poll_until, Backoff, Progress};

/// How publishing behaves.
#[derive(Clone, Debug)]
pub struct PublishOptions {
    pub dry_run: bool,
    /// Wait for `INSYNC`, bounded by this timeout.
    pub wait: Option<Duration>,
    pub progress: Progress,
    pub wait_backoff: Backoff,
    pub policy: ZonePolicy,
}

/// What publishing remembers between runs (`sync` on a master, DESIGN §8).
#[derive(Clone, Copy, Debug, Default)]
pub struct Remembered<'a> {
    /// The zones found for the rules by an earlier run: not looked up again, unless Route53
    /// answers that one of them does not exist.
    pub zones: Option<&'a [HostedZone]>,
    /// The names as the last full check found them in Route53, when this run trusts it: if they
    /// are the desired ones, Route53 is not asked at all.
    pub names: Option<&'a [DesiredRecord]>,
    /// The names that check left alone (someone else's), with why.
    pub left_alone: &'a [LeftAlone],
}

/// What a publish found.
#[derive(Clone, Debug)]
pub struct Published {
    /// The zones the rules chose (to remember).
    pub zones: Vec<HostedZone>,
    /// The desired names left alone because someone else holds them (each warned about).
    pub left_alone: Vec<LeftAlone>,
    /// The owned names the cluster no longer has, kept while they are waited out; `None` when
    /// Route53 was not read (the trusted names were the desired ones).
    pub missing: Option<BTreeMap<String, MissingName>>,
}

/// Publishes `desired` (names already checked as DNS names) to the zones the rules allow. Every
/// name is checked first to be inside a zone and not its apex. Then per zone: read only the
/// cluster's names, plan (CREATE new, UPSERT changed, DELETE owned names the cluster no longer
/// has), send the changes in batches within Route53's limits; when another writer created a
/// name first, read and plan again what is left (three times at most); optionally wait for
/// `INSYNC`. With names `remembered` as desired, only reports them.
pub async fn publish(
    dns: &dyn DnsApi,
    desired: &[DesiredRecord],
    rules: &[ZoneRule],
    cluster: &str,
    options: &PublishOptions,
    remembered: Remembered<'_>,
    report: &mut Report,
) -> Result<Published> {
    let plan = |records: &[&DesiredRecord], existing: &[RecordSet]| {
        plan_zone(records, existing, cluster, &options.policy)
    };
    let run = ZoneRun {
        dns,
        rules,
        cluster,
        options,
    };
    if let (Some(zones), Some(names)) = (remembered.zones, remembered.names) {
        if names == desired {
            // The trusted check found these very names in place, or left to their holders:
            // nothing to ask Route53, and nothing to warn about again before the next check.
            for (zone, records) in names_by_zone(zones, desired)?.values() {
                for record in records {
                    match remembered.left_alone.iter().find(|l| l.name == record.name) {
                        Some(left) => {
                            tracing::debug!("left alone at the last full check: {}", left.reason);
                        }
                        None => report_outcome(report, NameOutcome::unchanged(record), &zone.name),
                    }
                }
            }
            return Ok(Published {
                zones: zones.to_vec(),
                left_alone: remembered.left_alone.to_vec(),
                missing: None,
            });
        }
    }
    run.each_zone(desired, remembered.zones, report, plan).await
}

/// Takes this node's `own` addresses out of the names `cluster` owns among `names` (`reset`),
/// deleting a name with its TXT when no address is left; same reads, batches and retries as
/// [`publish`].
pub async fn release(
    dns: &dyn DnsApi,
    names: &[DesiredRecord],
    own: &[IpAddr],
    rules: &[ZoneRule],
    cluster: &str,
    options: &PublishOptions,
    report: &mut Report,
) -> Result<()> {
    let plan = |_: &[&DesiredRecord], existing: &[RecordSet]| plan_release(existing, own, cluster);
    let run = ZoneRun {
        dns,
        rules,
        cluster,
        options,
    };
    run.each_zone(names, None, report, plan).await.map(drop)
}

/// One walk over the allowed zones.
struct ZoneRun<'a> {
    dns: &'a dyn DnsApi,
    rules: &'a [ZoneRule],
    cluster: &'a str,
    options: &'a PublishOptions,
}

type ZoneNames<'a> = BTreeMap<String, (HostedZone, Vec<&'a DesiredRecord>)>;

impl ZoneRun<'_> {
    /// Runs `plan` on each allowed zone's names: every zone's names read first (a remembered
    /// zone that is gone is looked up again, before anything is written), then each zone's
    /// changes sent and reported by [`publish_zone`].
    async fn each_zone(
        &self,
        names: &[DesiredRecord],
        remembered: Option<&[HostedZone]>,
        report: &mut Report,
        plan: impl Fn(&[&DesiredRecord], &[RecordSet]) -> (Vec<RecordChange>, Vec<NameOutcome>),
    ) -> Result<Published> {
        let mut zones = match remembered {
            Some(zones) => zones.to_vec(),
            None => find_zones(self.dns, self.rules).await?,
        };
        let mut by_zone = names_by_zone(&zones, names)?;
        // A remembered choice is checked by the read itself: a zone that is gone
        // (`NoSuchHostedZone`), or names delegated to another zone since (an NS record set in
        // the chosen zone at or above them), send the lookup again, before anything is written;
        // so a newly delegated zone is found at the next full check and the shadowed parent is
        // never written. A fresh choice that shows a delegation is an error.
        let mut looked_up = remembered.is_none();
        let mut existing = loop {
            let stale = match self.read_all(&by_zone).await {
                Err(err) if !looked_up && err.downcast_ref::<ZoneGone>().is_some() => {
                    err.to_string()
                }
                read => {
                    let read = read?;
                    match delegation(&by_zone, &read) {
                        None => break read,
                        Some(delegated) if looked_up => bail!(
                            "{delegated}, which is not among the hosted zones the --zone rules \
                         allow; allow it with --zone, or remove the delegation"
                        ),
                        Some(delegated) => delegated,
                    }
                }
            };
            tracing::info!("{stale}; looking the hosted zones up again");
            zones = find_zones(self.dns, self.rules).await?;
            by_zone = names_by_zone(&zones, names)?;
            looked_up = true;
        };
        let mut left_alone = Vec::new();
        let mut missing = BTreeMap::new();
        for (id, (zone, records)) in &by_zone {
            let plan = |existing: &[RecordSet]| plan(records, existing);
            let first = existing.remove(id).unwrap_or_default();
            let outcomes = publish_zone(self, zone, records, first, plan).await?;
            for mut outcome in outcomes {
                if let Some(reason) = &outcome.warning {
                    left_alone.push(LeftAlone {
                        name: outcome.name.clone(),
                        reason: reason.clone(),
                    });
                }
                if let Some(seen) = outcome.missing.take() {
                    tracing::info!(
                        "`{}` is no longer one of the cluster's names (missing since {}); it is \
                         deleted once missing for --verify-interval",
                        outcome.name,
                        humantime::format_rfc3339_seconds(seen.since)
                    );
                    missing.insert(outcome.name, seen);
                    continue;
                }
                report_outcome(report, outcome, &zone.name);
            }
        }
        Ok(Published {
            zones,
            left_alone,
            missing: Some(missing),
        })
    }

    /// The record sets under each zone's names, by zone id.
    async fn read_all(&self, by_zone: &ZoneNames<'_>) -> Result<BTreeMap<String, Vec<RecordSet>>> {
        let mut existing = BTreeMap::new();
        for (id, (zone, records)) in by_zone {
            existing.insert(id.clone(), self.read(zone, records).await?);
        }
        Ok(existing)
    }

    /// The record sets under `records`' names in `zone` (the cluster's subtree, one read).
    async fn read(&self, zone: &HostedZone, records: &[&DesiredRecord]) -> Result<Vec<RecordSet>> {
        let names: Vec<&str> = records.iter().map(|r| r.name.as_str()).collect();
        let mut existing = Vec::new();
        for apex in apexes(&names, self.cluster) {
            existing.extend(self.dns.records_under(&zone.id, &apex).await?);
        }
        // external-dns keeps its ownership TXT at `a-<name>` (and `aaaa-`, `cname-`): inside
        // the cluster's subtree that was read above; for a name outside it that exists without
        // any TXT of its own, those names are read too before anyone could take it over.
        for name in names.iter().filter(|n| !is_within(n, self.cluster)) {
            let exists = existing.iter().any(|r| r.name == **name);
            let has_txt = existing
                .iter()
                .any(|r| r.name == **name && r.record_type == "TXT");
            if exists && !has_txt {
                for prefix in EXTERNAL_DNS_PREFIXES {
                    let at = format!("{prefix}{name}");
                    existing.extend(self.dns.records_under(&zone.id, &at).await?);
                }
            }
        }
        Ok(existing)
    }
}

/// A name of `by_zone` that its zone has delegated away (an NS record set at or above it, below
/// the zone's apex), said in words.
fn delegation(
    by_zone: &ZoneNames<'_>,
    existing: &BTreeMap<String, Vec<RecordSet>>,
) -> Option<String> {
    for (id, (zone, records)) in by_zone {
        let sets = existing.get(id).map(Vec::as_slice).unwrap_or_default();
        for ns in sets
            .iter()
            .filter(|r| r.record_type == "NS" && r.name != zone.name)
        {
            if let Some(record) = records.iter().find(|r| is_within(&r.name, &ns.name)) {
                return Some(format!(
                    "`{}` is delegated from zone `{}` ({}) to another zone (NS at `{}`)",
                    record.name, zone.name, zone.id, ns.name
                ));
            }
        }
    }
    None
}

/// The allowed zone of each name, each name checked to be inside one and not its apex.
fn names_by_zone<'a>(zones: &[HostedZone], desired: &'a [DesiredRecord]) -> Result<ZoneNames<'a>> {
    let mut by_zone: ZoneNames<'a> = BTreeMap::new();
    for record in desired {
        let Some(zone) = zone_for(&record.name, zones)? else {
            bail!(
                "no hosted zone for `{}`; create one or choose it with --zone (allowed: {})",
                record.name,
                if zones.is_empty() {
                    "none found".to_owned()
                } else {
                    zones
                        .iter()
                        .map(|z| format!("{}/{}", z.name, z.id))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            );
        };
        if record.name == zone.name {
            bail!(
                "refusing to publish `{}`: it is the apex of hosted zone `{}` ({}); protokube \
                 never writes a zone apex (check spec.masterPublicName)",
                record.name,
                zone.name,
                zone.id
            );
        }
        by_zone
            .entry(zone.id.clone())
            .or_insert_with(|| (zone.clone(), Vec::new()))
            .1
            .push(record);
    }
    Ok(by_zone)
}

/// Applies `plan` to the names of one zone, starting from `existing` (read by the caller; read
/// again after a conflict); returns what happened to each name.
async fn publish_zone(
    run: &ZoneRun<'_>,
    zone: &HostedZone,
    records: &[&DesiredRecord],
    mut existing: Vec<RecordSet>,
    plan: impl Fn(&[RecordSet]) -> (Vec<RecordChange>, Vec<NameOutcome>),
) -> Result<Vec<NameOutcome>> {
    let (dns, options) = (run.dns, run.options);
    // Each name is reported from the plan whose batch carried it.
    let mut sent: BTreeMap<String, NameOutcome> = BTreeMap::new();
    for attempt in 1..=3 {
        let (changes, outcomes) = plan(&existing);
        if changes.is_empty() || options.dry_run {
            return Ok(merge(outcomes, sent));
        }
        let mut conflict = None;
        for batch in batches(&changes) {
            match dns.change_records(&zone.id, &batch).await? {
                ChangeResult::Submitted { change_id } => {
                    tracing::info!(
                        "sent {} change(s) to zone `{}` ({})",
                        batch.len(),
                        zone.name,
                        zone.id
                    );
                    for outcome in &outcomes {
                        if batch.iter().any(|c| c.record.name == outcome.name) {
                            sent.insert(outcome.name.clone(), outcome.clone());
                        }
                    }
                    if let Some(timeout) = options.wait {
                        wait_in_sync(dns, &change_id, timeout, options).await?;
                    }
                }
                ChangeResult::Conflict(message) => {
                    conflict = Some(message);
                    break;
                }
            }
        }
        match conflict {
            None => return Ok(merge(outcomes, sent)),
            Some(message) if attempt < 3 => {
                tracing::info!(
                    "another writer changed zone `{}` first ({message}); reading it again",
                    zone.name
                );
                existing = run.read(zone, records).await?;
            }
            Some(message) => bail!(
                "zone `{}` keeps changing under protokube: {message}; run again",
                zone.name
            ),
        }
    }
    unreachable!("the loop returns or fails by its third attempt")
}

/// The final outcomes: the names sent in an earlier batch as that batch's plan said, the others
/// as the last plan says.
fn merge(last: Vec<NameOutcome>, mut sent: BTreeMap<String, NameOutcome>) -> Vec<NameOutcome> {
    last.into_iter()
        .map(|outcome| sent.remove(&outcome.name).unwrap_or(outcome))
        .collect()
}

fn report_outcome(report: &mut Report, outcome: NameOutcome, zone: &str) {
    if let Some(warning) = outcome.warning {
        report.warn(warning);
        return;
    }
    let list = |values: &[String]| {
        if values.is_empty() {
            "none".to_owned()
        } else {
            values.join(",")
        }
    };
    let detail = if outcome.action == Action::Unchanged && outcome.to.is_empty() {
        "no address known now; left as it is".to_owned()
    } else if outcome.action == Action::Unchanged {
        format!("A {}", outcome.to.join(","))
    } else {
        let adopted = if outcome.adopted {
            "; adopted (ownership TXT written)"
        } else if outcome.action == Action::Delete {
            "; deleted with its ownership TXT"
        } else {
            ""
        };
        format!(
            "A {} -> {} (zone {zone}){adopted}",
            list(&outcome.from),
            list(&outcome.to)
        )
    };
    report.push(Change {
        kind: ChangeKind::Dns,
        target: outcome.name,
        action: outcome.action,
        detail,
    });
}

async fn wait_in_sync(
    dns: &dyn DnsApi,
    change_id: &str,
    timeout: Duration,
    options: &PublishOptions,
) -> Result<()> {
    poll_until(
        &format!("Route53 change `{change_id}` to be INSYNC"),
        timeout,
        options.progress,
        options.wait_backoff.clone(),
        || async { Ok(dns.change_in_sync(change_id).await?.then_some(())) },
    )
    .await
}

/// The hosted zones the rules allow, with the calls kOps' control-plane role may make: the zone
/// by id (`GetHostedZone`) for `*/ID` and `NAME/ID`, and the zone listing (`ListHostedZones`)
/// for `*` and `NAME` — never `ListHostedZonesByName`, which kOps does not grant.
pub async fn find_zones(dns: &dyn DnsApi, rules: &[ZoneRule]) -> Result<Vec<HostedZone>> {
    let mut zones: Vec<HostedZone> = Vec::new();
    if rules
        .iter()
        .any(|r| matches!(r, ZoneRule::Any | ZoneRule::Name(_)))
    {
        zones = dns.all_zones().await?;
    } else {
        for rule in rules {
            if let ZoneRule::Id(id) | ZoneRule::NameId(_, id) = rule {
                zones.extend(dns.zone_by_id(id).await?);
            }
        }
    }
    zones.retain(|z| rules.iter().any(|r| r.allows(z)));
    zones.sort_by(|a, b| a.id.cmp(&b.id));
    zones.dedup_by(|a, b| a.id == b.id);
    Ok(zones)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::records::RecordRole;

    #[test]
    fn a_name_delegated_from_its_zone_is_seen() {
        let zone = HostedZone {
            id: "Z1".into(),
            name: "example.com".into(),
            private: false,
        };
        let record = DesiredRecord {
            name: "etcd-a.internal.ha.example.com".into(),
            role: RecordRole::EtcdMember,
            addresses: vec![],
        };
        let by_zone: ZoneNames<'_> = [("Z1".to_owned(), (zone, vec![&record]))]
            .into_iter()
            .collect();
        let set = |name: &str, kind: &str| RecordSet {
            name: name.into(),
            record_type: kind.into(),
            ttl: Some(300),
            values: vec!["ns-1.awsdns.com.".into()],
            alias: false,
        };
        let read = |sets: Vec<RecordSet>| [("Z1".to_owned(), sets)].into_iter().collect();
        // The zone's own NS, and a delegation of a sibling: nothing delegated.
        let undelegated = read(vec![
            set("example.com", "NS"),
            set("other.example.com", "NS"),
        ]);
        assert_eq!(delegation(&by_zone, &undelegated), None);
        // The cluster's subtree delegated to a zone of its own.
        let delegated = read(vec![set("ha.example.com", "NS")]);
        let said = delegation(&by_zone, &delegated).unwrap();
        assert!(
            said.contains("etcd-a.internal.ha.example.com")
                && said.contains("NS at `ha.example.com`"),
            "{said}"
        );
    }
}
