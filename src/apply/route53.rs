//! Publishing to Route53: find the allowed zones, read only the cluster's names, send the
//! planned change batch per zone, re-plan when another writer was first, wait for `INSYNC`.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{bail, Result};

use crate::cloud::{ChangeResult, DnsApi, HostedZone};
use crate::plan::records::DesiredRecord;
use crate::plan::route53::{apexes, plan_zone};
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
}

/// Publishes `desired` to the zones the rules allow: per zone, read only the cluster's names,
/// plan, send one change batch (CREATE new, UPSERT changed), retry the plan once more if another
/// writer created a name first, and optionally wait for `INSYNC`.
pub async fn publish(
    dns: &dyn DnsApi,
    desired: &[DesiredRecord],
    rules: &[ZoneRule],
    cluster: &str,
    options: &PublishOptions,
    report: &mut Report,
) -> Result<()> {
    let zones = find_zones(dns, rules).await?;
    let mut by_zone: BTreeMap<String, (HostedZone, Vec<&DesiredRecord>)> = BTreeMap::new();
    for record in desired {
        match zone_for(&record.name, &zones)? {
            Some(zone) => by_zone
                .entry(zone.id.clone())
                .or_insert_with(|| (zone.clone(), Vec::new()))
                .1
                .push(record),
            None => bail!(
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
            ),
        }
    }
    for (zone_id, (zone, records)) in &by_zone {
        let names: Vec<&str> = records.iter().map(|r| r.name.as_str()).collect();
        let read = || async {
            let mut existing = Vec::new();
            for apex in apexes(&names, cluster) {
                existing.extend(dns.records_under(zone_id, &apex).await?);
            }
            anyhow::Ok(existing)
        };
        let mut existing = read().await?;
        let mut attempt = 0;
        let outcomes = loop {
            attempt += 1;
            let (changes, outcomes) = plan_zone(records, &existing, cluster);
            if changes.is_empty() || options.dry_run {
                break outcomes;
            }
            match dns.change_records(zone_id, &changes).await? {
                ChangeResult::Submitted { change_id } => {
                    tracing::info!(
                        "sent {} change(s) to zone `{}` ({zone_id})",
                        changes.len(),
                        zone.name
                    );
                    if let Some(timeout) = options.wait {
                        wait_in_sync(dns, &change_id, timeout, options).await?;
                    }
                    break outcomes;
                }
                ChangeResult::Conflict(message) if attempt < 3 => {
                    tracing::info!(
                        "another writer changed zone `{}` first ({message}); reading it again",
                        zone.name
                    );
                    existing = read().await?;
                }
                ChangeResult::Conflict(message) => {
                    bail!(
                        "zone `{}` keeps changing under protokube: {message}; run again",
                        zone.name
                    )
                }
            }
        };
        for outcome in outcomes {
            if let Some(warning) = outcome.warning {
                report.warn(warning);
                continue;
            }
            let detail = if outcome.action == Action::Unchanged && outcome.to.is_empty() {
                "no address known now; left as it is".to_owned()
            } else if outcome.action == Action::Unchanged {
                format!("A {}", outcome.to.join(","))
            } else {
                format!(
                    "A {} -> {} (zone {})",
                    if outcome.from.is_empty() {
                        "none".to_owned()
                    } else {
                        outcome.from.join(",")
                    },
                    outcome.to.join(","),
                    zone.name
                )
            };
            report.push(Change {
                kind: ChangeKind::Dns,
                target: outcome.name,
                action: outcome.action,
                detail,
            });
        }
    }
    Ok(())
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

/// The hosted zones the rules allow, asking Route53 as little as possible: by id, by name, and
/// only for `*` the whole list.
pub async fn find_zones(dns: &dyn DnsApi, rules: &[ZoneRule]) -> Result<Vec<HostedZone>> {
    let mut zones: Vec<HostedZone> = Vec::new();
    if rules.contains(&ZoneRule::Any) {
        zones = dns.all_zones().await?;
    } else {
        for rule in rules {
            match rule {
                ZoneRule::Id(id) | ZoneRule::NameId(_, id) => {
                    if let Some(zone) = dns.zone_by_id(id).await? {
                        zones.push(zone);
                    }
                }
                ZoneRule::Name(name) => zones.extend(dns.zones_named(name).await?),
                ZoneRule::Any => {}
            }
        }
    }
    zones.retain(|z| rules.iter().any(|r| r.allows(z)));
    zones.sort_by(|a, b| a.id.cmp(&b.id));
    zones.dedup_by(|a, b| a.id == b.id);
    Ok(zones)
}
