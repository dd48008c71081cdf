//! The walk over a DNS service's zones: find the allowed zones, read only the cluster's names,
//! send each zone's planned changes in the service's batches, re-plan when another writer was
//! first, wait for the changes to be in effect.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::time::Duration;

use anyhow::{bail, Result};

use super::api::{ChangeResult, ZoneApi, ZoneGone};
use crate::names::is_within;
use crate::plan::dns::records::DesiredRecord;
use crate::plan::dns::zone_plan::{
    plan_placeholder_removal, plan_release, plan_zone, NameOutcome, ZonePolicy,
};
use crate::plan::dns::zones::{zone_for, Zone, ZoneRule};
use crate::plan::dns::zones::{RecordChange, RecordSet};
use crate::plan::state::{LeftAlone, MissingName};
use crate::report::{Action, Change, ChangeKind, Report};
use crate::wait::{poll_until, Backoff, Deadline, Progress};

/// How publishing behaves.
#[derive(Clone, Debug)]
pub(crate) struct PublishOptions {
    pub(crate) dry_run: bool,
    /// Wait for the changes to be in effect, until this deadline.
    pub(crate) wait: Option<Deadline>,
    /// The pauses between looks at a change not in effect yet ([`change_backoff`]).
    pub(crate) wait_backoff: Backoff,
    pub(crate) progress: Progress,
    pub(crate) policy: ZonePolicy,
}

/// The pauses between looks at a change not in effect yet: from 1 s up to 5 s (a DNS service
/// takes seconds to a minute).
pub(crate) fn change_backoff() -> Backoff {
    Backoff::new(Duration::from_secs(1), Duration::from_secs(5))
}

/// What publishing remembers between runs (`sync` on a master, docs/performance.md).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Remembered<'a> {
    /// The zones found for the rules by an earlier run: not looked up again, unless the
    /// service answers that one of them does not exist.
    pub(crate) zones: Option<&'a [Zone]>,
    /// The names as the last full check found them in the zones, when this run trusts it: if
    /// they are the desired ones, the service is not asked at all.
    pub(crate) names: Option<&'a [DesiredRecord]>,
    /// The names that check left alone (someone else's), with why.
    pub(crate) left_alone: &'a [LeftAlone],
}

/// What a publish found.
#[derive(Clone, Debug)]
pub(crate) struct Published {
    /// The zones the rules chose (to remember).
    pub(crate) zones: Vec<Zone>,
    /// The desired names left alone because someone else holds them (each warned about).
    pub(crate) left_alone: Vec<LeftAlone>,
    /// The owned names the cluster no longer has, kept while they are waited out; `None` when
    /// the zones were not read (the trusted names were the desired ones).
    pub(crate) missing: Option<BTreeMap<String, MissingName>>,
}

/// Publishes `desired` (names already checked as DNS names) to the zones the rules allow. Every
/// name is checked first to be inside a zone and not its apex. Then per zone: read only the
/// cluster's names, plan (CREATE new, UPSERT changed, DELETE owned names the cluster no longer
/// has), send the changes in the service's batches; when another writer changed a name first,
/// read and plan again what is left (three times at most); optionally wait for the changes to
/// be in effect. With names `remembered` as desired, only reports them.
pub(crate) async fn publish(
    dns: &dyn ZoneApi,
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
            // nothing to ask the service, and nothing to warn about again before the next check.
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
pub(crate) async fn release(
    dns: &dyn ZoneApi,
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

/// Removes the A records of `names` (`--remove-dns-names`), same reads, batches and retries as
/// [`publish`]. A listed name in no zone protokube may write, or holding no A record in its
/// zone, is said once in the run's `info`: there is nothing to remove.
pub(crate) async fn remove_placeholders(
    dns: &dyn ZoneApi,
    names: &[DesiredRecord],
    rules: &[ZoneRule],
    cluster: &str,
    options: &PublishOptions,
    report: &mut Report,
) -> Result<()> {
    let zones = find_zones(dns, rules).await?;
    let mut zoned = Vec::new();
    for record in names {
        if zone_for(&record.name, &zones)?.is_some() {
            zoned.push(record.clone());
        } else {
            report.note(format!(
                "--remove-dns-names: `{}` is in no zone protokube may write; nothing to remove",
                record.name
            ));
        }
    }
    let (absent, removed) = (RefCell::new(BTreeSet::new()), RefCell::new(BTreeSet::new()));
    let plan = |records: &[&DesiredRecord], existing: &[RecordSet]| {
        let names: Vec<&str> = records.iter().map(|r| r.name.as_str()).collect();
        let (changes, outcomes) = plan_placeholder_removal(existing, &names);
        for name in names {
            if outcomes.iter().any(|o| o.name == name) {
                removed.borrow_mut().insert(name.to_owned());
            } else {
                absent.borrow_mut().insert(name.to_owned());
            }
        }
        (changes, outcomes)
    };
    let run = ZoneRun {
        dns,
        rules,
        cluster,
        options,
    };
    if !zoned.is_empty() {
        run.each_zone(&zoned, Some(&zones), report, plan).await?;
    }
    for name in absent.into_inner().difference(&removed.into_inner()) {
        report.note(format!(
            "--remove-dns-names: `{name}` holds no A record in its zone; nothing to remove"
        ));
    }
    Ok(())
}

/// One walk over the allowed zones.
struct ZoneRun<'a> {
    dns: &'a dyn ZoneApi,
    rules: &'a [ZoneRule],
    cluster: &'a str,
    options: &'a PublishOptions,
}

type ZoneNames<'a> = BTreeMap<String, (Zone, Vec<&'a DesiredRecord>)>;

impl ZoneRun<'_> {
    /// Runs `plan` on each allowed zone's names: every zone's names read first (a remembered
    /// zone that is gone is looked up again, before anything is written), then each zone's
    /// changes sent and reported by [`publish_zone`].
    async fn each_zone(
        &self,
        names: &[DesiredRecord],
        remembered: Option<&[Zone]>,
        report: &mut Report,
        plan: impl Fn(&[&DesiredRecord], &[RecordSet]) -> (Vec<RecordChange>, Vec<NameOutcome>),
    ) -> Result<Published> {
        let mut zones = match remembered {
            Some(zones) => zones.to_vec(),
            None => find_zones(self.dns, self.rules).await?,
        };
        let mut by_zone = names_by_zone(&zones, names)?;
        // A remembered choice is checked by the read itself: a zone that is gone
        // (`NoSuchZone`), or names delegated to another zone since (an NS record set in
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
                            "{delegated}, which is not among the zones the --zone rules allow; \
                             allow it with --zone, or remove the delegation"
                        ),
                        Some(delegated) => delegated,
                    }
                }
            };
            tracing::info!("{stale}; looking the zones up again");
            zones = find_zones(self.dns, self.rules).await?;
            by_zone = names_by_zone(&zones, names)?;
            looked_up = true;
        };
        let mut left_alone = Vec::new();
        let mut missing = BTreeMap::new();
        for (id, (zone, records)) in &by_zone {
            let plan = |existing: &[RecordSet]| plan(records, existing);
            let first = existing.remove(id).unwrap_or_default();
            let outcomes = publish_zone(self, zone, records, first, plan, report).await?;
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

    /// The record sets that decide `records`' names in `zone`.
    async fn read(&self, zone: &Zone, records: &[&DesiredRecord]) -> Result<Vec<RecordSet>> {
        let names: Vec<&str> = records.iter().map(|r| r.name.as_str()).collect();
        self.dns.read(zone, &names, self.cluster).await
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
fn names_by_zone<'a>(zones: &[Zone], desired: &'a [DesiredRecord]) -> Result<ZoneNames<'a>> {
    let mut by_zone: ZoneNames<'a> = BTreeMap::new();
    for record in desired {
        let Some(zone) = zone_for(&record.name, zones)? else {
            bail!(
                "no zone for `{}`; create one or choose it with --zone (allowed: {})",
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
                "refusing to publish `{}`: it is the apex of zone `{}` ({}); protokube never \
                 writes a zone apex (check spec.masterPublicName)",
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
/// again after a conflict); returns what happened to each name. When it fails after the service
/// accepted a batch (a later batch refused, the wait for the change cut by the deadline), the
/// names that batch carried are reported before the failure: they are changed in the zone.
async fn publish_zone(
    run: &ZoneRun<'_>,
    zone: &Zone,
    records: &[&DesiredRecord],
    existing: Vec<RecordSet>,
    plan: impl Fn(&[RecordSet]) -> (Vec<RecordChange>, Vec<NameOutcome>),
    report: &mut Report,
) -> Result<Vec<NameOutcome>> {
    // Each name is reported from the plan whose batch carried it.
    let mut sent: BTreeMap<String, NameOutcome> = BTreeMap::new();
    match send_zone_changes(run, zone, records, existing, plan, &mut sent).await {
        Ok(last) => Ok(merge(last, sent)),
        Err(err) => {
            for outcome in sent.into_values() {
                report_outcome(report, outcome, &zone.name);
            }
            Err(err)
        }
    }
}

/// [`publish_zone`]'s sending: plans, sends batches (recording in `sent` the names each
/// accepted batch carried) and re-plans after a conflict; the last plan's outcomes.
async fn send_zone_changes(
    run: &ZoneRun<'_>,
    zone: &Zone,
    records: &[&DesiredRecord],
    mut existing: Vec<RecordSet>,
    plan: impl Fn(&[RecordSet]) -> (Vec<RecordChange>, Vec<NameOutcome>),
    sent: &mut BTreeMap<String, NameOutcome>,
) -> Result<Vec<NameOutcome>> {
    let (dns, options) = (run.dns, run.options);
    for attempt in 1..=3 {
        let (changes, outcomes) = plan(&existing);
        if changes.is_empty() || options.dry_run {
            return Ok(outcomes);
        }
        let mut conflict = None;
        for batch in dns.batches(&changes) {
            match dns.change_records(zone, &batch).await? {
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
                        wait_in_sync(dns, zone, &change_id, timeout, options).await?;
                    }
                }
                ChangeResult::Conflict(message) => {
                    conflict = Some(message);
                    break;
                }
            }
        }
        match conflict {
            None => return Ok(outcomes),
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

/// Waits for the change to be in effect. A look at it that cannot be made (the service busy or
/// unreachable, the deadline cutting it short) is one more look without an answer: the wait
/// ends saying the change was still pending, not that the service is gone.
async fn wait_in_sync(
    dns: &dyn ZoneApi,
    zone: &Zone,
    change_id: &str,
    until: Deadline,
    options: &PublishOptions,
) -> Result<()> {
    poll_until(
        &dns.awaited_change(change_id),
        until,
        options.progress,
        options.wait_backoff.clone(),
        || async {
            match dns.change_in_sync(zone, change_id).await {
                Ok(done) => Ok(done.then_some(())),
                Err(err) if crate::error::caused_by::<crate::error::NotReady>(&err) => {
                    tracing::debug!("{}", crate::error::one_line(&err));
                    Ok(None)
                }
                Err(err) => Err(err),
            }
        },
    )
    .await
}

/// The zones the rules allow, with the calls kOps' control-plane role may make: the zone by id
/// for `*/ID` and `NAME/ID`, and the zone listing for `*` and `NAME` (never a lookup by name,
/// which kOps does not grant on every service).
pub(crate) async fn find_zones(dns: &dyn ZoneApi, rules: &[ZoneRule]) -> Result<Vec<Zone>> {
    let mut zones: Vec<Zone> = Vec::new();
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
    use crate::dns::memory::{record_set as set, MemoryZones, ZoneServiceState};
    use crate::error::NotReady;
    use crate::plan::dns::records::RecordRole;
    use crate::plan::dns::zone_plan::ownership_value;
    use crate::report::{Action, Report};
    use crate::wait::Progress;

    const CLUSTER: &str = "c.example.com";

    fn desired(name: &str, ip: [u8; 4]) -> DesiredRecord {
        DesiredRecord {
            name: name.into(),
            role: RecordRole::EtcdMember,
            addresses: vec![ip.into()],
        }
    }

    fn zone(id: &str) -> Zone {
        Zone {
            id: id.into(),
            name: "example.com".into(),
            private: false,
        }
    }

    fn options(wait: Option<Duration>) -> PublishOptions {
        PublishOptions {
            dry_run: false,
            wait: wait.map(Deadline::after),
            wait_backoff: Backoff::new(Duration::from_millis(5), Duration::from_millis(20)),
            progress: Progress::Log,
            policy: ZonePolicy::default(),
        }
    }

    fn block_on<T>(future: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(future)
    }

    /// The service with zone `Z1` (`example.com`).
    fn service() -> MemoryZones {
        MemoryZones::new(ZoneServiceState::with_zone("Z1", "example.com"))
    }

    /// Why publishing `name` under `rules` is refused (and that nothing was written).
    fn refused(dns: &MemoryZones, name: &str, rules: &[ZoneRule]) -> String {
        let mut report = Report::new("publish-dns", false);
        let err = block_on(publish(
            dns,
            &[desired(name, [10, 0, 0, 1])],
            rules,
            CLUSTER,
            &options(None),
            Remembered::default(),
            &mut report,
        ))
        .unwrap_err();
        assert!(dns.zones().changes().is_empty());
        format!("{err:#}")
    }

    /// Publishes `desired` into zone `Z1` for the test cluster as the publish step does,
    /// waiting up to `wait` for the changes to be in effect: what it published, and the report.
    fn publish_to_z1(
        dns: &MemoryZones,
        desired: &[DesiredRecord],
        wait: Option<Duration>,
        remembered: Remembered<'_>,
    ) -> (Result<Published>, Report) {
        let mut report = Report::new("publish-dns", false);
        let published = block_on(publish(
            dns,
            desired,
            &[ZoneRule::Id("Z1".into())],
            CLUSTER,
            &options(wait),
            remembered,
            &mut report,
        ));
        (published, report)
    }

    #[test]
    fn listed_names_to_remove_that_hold_nothing_or_lie_in_no_zone_are_said_once() {
        let dns = service();
        dns.change(|z| {
            z.put(
                "Z1",
                set("etcd-a.internal.c.example.com", "A", &["203.0.113.123"]),
            );
        });
        let names: Vec<DesiredRecord> = [
            "etcd-a.internal.c.example.com",
            "etcd-b.internal.c.example.com",
            "etcd-c.elsewhere.org",
        ]
        .iter()
        .map(|name| desired(name, [10, 0, 0, 1]))
        .collect();
        let mut report = Report::new("sync", false);
        block_on(remove_placeholders(
            &dns,
            &names,
            &[ZoneRule::Id("Z1".into())],
            CLUSTER,
            &options(None),
            &mut report,
        ))
        .unwrap();
        assert!(dns
            .zones()
            .get("Z1", "etcd-a.internal.c.example.com", "A")
            .is_none());
        assert_eq!(report.changes.len(), 1, "{:?}", report.changes);
        let said: Vec<&str> = report.info.iter().map(String::as_str).collect();
        assert_eq!(
            said,
            [
                "--remove-dns-names: `etcd-c.elsewhere.org` is in no zone protokube may write; \
                 nothing to remove",
                "--remove-dns-names: `etcd-b.internal.c.example.com` holds no A record in its \
                 zone; nothing to remove",
            ]
        );
    }

    #[test]
    fn a_create_conflict_with_our_own_cluster_is_re_read_and_upserted() {
        let dns = service();
        let name = "etcd-a.internal.c.example.com";
        // Another master of the same cluster creates the name first, with an older address.
        dns.change(|z| {
            z.race = Some((
                "Z1".into(),
                vec![
                    set(name, "A", &["10.0.0.9"]),
                    set(name, "TXT", &[&ownership_value(CLUSTER)]),
                ],
            ));
        });
        let (published, report) = publish_to_z1(
            &dns,
            &[desired(name, [10, 0, 0, 1])],
            None,
            Remembered::default(),
        );
        published.unwrap();
        let zones = dns.zones();
        assert_eq!(zones.get("Z1", name, "A").unwrap().values, ["10.0.0.1"]);
        assert_eq!(
            zones.calls,
            [
                "GetZone Z1",
                "Read Z1",
                "Change Z1 2",
                "Read Z1",
                "Change Z1 1"
            ]
        );
        assert_eq!(report.changes[0].action, Action::Update);
    }

    #[test]
    fn a_create_conflict_with_a_foreign_record_leaves_it_alone() {
        let dns = service();
        let name = "etcd-a.internal.c.example.com";
        dns.change(|z| z.race = Some(("Z1".into(), vec![set(name, "A", &["192.0.2.1"])])));
        let (published, report) = publish_to_z1(
            &dns,
            &[desired(name, [10, 0, 0, 1])],
            None,
            Remembered::default(),
        );
        published.unwrap();
        let zones = dns.zones();
        assert_eq!(zones.get("Z1", name, "A").unwrap().values, ["192.0.2.1"]);
        assert!(zones.get("Z1", name, "TXT").is_none());
        assert_eq!(report.warnings.len(), 1, "{report:?}");
    }

    #[test]
    fn a_conflict_in_a_later_batch_keeps_what_the_earlier_batches_sent() {
        let dns = service();
        dns.change(|z| z.batch_limit = Some(2));
        let first = desired("etcd-a.internal.c.example.com", [10, 0, 0, 1]);
        let second = desired("etcd-b.internal.c.example.com", [10, 0, 0, 2]);
        // Another writer takes the second name once our read is done: our first batch (the first
        // name) stands, the second batch is refused, the second name is read again and left to
        // its holder.
        dns.change(|z| {
            z.race = Some(("Z1".into(), vec![set(&second.name, "A", &["192.0.2.7"])]));
        });
        let (published, report) = publish_to_z1(
            &dns,
            &[first.clone(), second.clone()],
            None,
            Remembered::default(),
        );
        published.unwrap();
        assert_eq!(dns.zones().changes(), ["Change Z1 2", "Change Z1 2"]);
        let zones = dns.zones();
        assert_eq!(
            zones.get("Z1", &first.name, "A").unwrap().values,
            ["10.0.0.1"]
        );
        assert_eq!(
            zones.get("Z1", &second.name, "A").unwrap().values,
            ["192.0.2.7"]
        );
        assert!(zones.get("Z1", &second.name, "TXT").is_none());
        assert_eq!(report.changes.len(), 1, "{report:?}");
        assert_eq!(report.changes[0].target, first.name);
        assert_eq!(report.warnings.len(), 1, "{report:?}");
    }

    #[test]
    fn wait_polls_a_pending_change_until_in_effect_and_gives_up_with_75() {
        let dns = service();
        dns.change(|z| z.pending_polls = 3);
        let record = desired("api.internal.c.example.com", [10, 0, 0, 1]);
        let (published, _) = publish_to_z1(
            &dns,
            std::slice::from_ref(&record),
            Some(Duration::from_secs(5)),
            Remembered::default(),
        );
        published.unwrap();
        let polls = dns
            .zones()
            .calls
            .iter()
            .filter(|c| *c == "GetChange")
            .count();
        assert_eq!(polls, 4);

        let dns = service();
        dns.change(|z| z.pending_polls = u32::MAX);
        let (published, _) = publish_to_z1(
            &dns,
            &[record],
            Some(Duration::from_millis(100)),
            Remembered::default(),
        );
        let err = published.unwrap_err();
        assert!(err.is::<NotReady>(), "{err:#}");
        assert!(err.to_string().contains("to be in effect"), "{err}");
    }

    #[test]
    fn a_remembered_zone_is_not_looked_up_and_a_gone_one_is_looked_up_again_before_any_write() {
        let name = "etcd-a.internal.c.example.com";
        let publish_with = |dns: &MemoryZones, remembered: &[Zone]| {
            let remembered = Remembered {
                zones: Some(remembered),
                names: None,
                left_alone: &[],
            };
            let (published, report) =
                publish_to_z1(dns, &[desired(name, [10, 0, 0, 1])], None, remembered);
            (published.unwrap(), report)
        };
        let dns = service();
        let (published, _) = publish_with(&dns, &[zone("Z1")]);
        assert_eq!(dns.zones().calls, ["Read Z1", "Change Z1 2"]);
        assert!(published.left_alone.is_empty());
        // The remembered zone was deleted (and the cluster's zone made again as Z1).
        let dns = service();
        let (published, report) = publish_with(&dns, &[zone("Zgone")]);
        assert_eq!(
            dns.zones().calls,
            ["Read Zgone", "GetZone Z1", "Read Z1", "Change Z1 2"]
        );
        assert_eq!(published.zones, [zone("Z1")]);
        assert_eq!(report.changes[0].action, Action::Create);
    }

    #[test]
    fn names_a_trusted_check_found_in_place_are_reported_without_asking_the_service() {
        let dns = service();
        let records = [desired("etcd-a.internal.c.example.com", [10, 0, 0, 1])];
        let zones = [zone("Z1")];
        // Publishes `desired` with the trusted check's names and the names it left alone.
        let publish_trusted = |desired: &[DesiredRecord], left_alone: &[LeftAlone]| {
            let remembered = Remembered {
                zones: Some(&zones),
                names: Some(&records),
                left_alone,
            };
            let (published, report) = publish_to_z1(&dns, desired, None, remembered);
            (published.unwrap(), report)
        };
        let (published, report) = publish_trusted(&records, &[]);
        assert!(dns.zones().calls.is_empty());
        assert!(published.left_alone.is_empty());
        assert_eq!(report.changes[0].action, Action::Unchanged);
        assert_eq!(report.changes[0].detail, "A 10.0.0.1");
        // A name that check left to its holder: kept as left, not reported as ours, no warning.
        let left = [LeftAlone {
            name: records[0].name.clone(),
            reason: "DNS record exists and is not owned; left alone".into(),
        }];
        let (published, report) = publish_trusted(&records, &left);
        assert!(dns.zones().calls.is_empty());
        assert_eq!(published.left_alone, left);
        assert!(report.changes.is_empty() && report.warnings.is_empty());
        // Other names than the trusted ones: the zone is read.
        let moved = [desired("etcd-a.internal.c.example.com", [10, 0, 0, 2])];
        publish_trusted(&moved, &[]);
        assert_eq!(dns.zones().calls, ["Read Z1", "Change Z1 2"]);
    }

    #[test]
    fn zones_are_found_with_the_calls_the_rules_need() {
        let mut state = ZoneServiceState::with_zone("Z1", "example.com");
        state.add_zone("Z2", "example.com", true);
        state.add_zone("Z3", "other.com", false);
        let dns = MemoryZones::new(state);
        // By id: one lookup per id, no listing.
        let found = block_on(find_zones(&dns, &[ZoneRule::Id("Z3".into())])).unwrap();
        assert_eq!(
            found.iter().map(|z| z.id.as_str()).collect::<Vec<_>>(),
            ["Z3"]
        );
        assert_eq!(dns.zones().calls, ["GetZone Z3"]);
        // By name: the listing, filtered; both zones of that name (public and private) kept.
        let found = block_on(find_zones(&dns, &[ZoneRule::Name("example.com".into())])).unwrap();
        assert_eq!(
            found.iter().map(|z| z.id.as_str()).collect::<Vec<_>>(),
            ["Z1", "Z2"]
        );
        assert!(dns.zones().calls.ends_with(&["ListZones".to_owned()]));
        // Two zones of the name the cluster's names fit: ambiguous, nothing written.
        let said = refused(&dns, "etcd-a.internal.c.example.com", &[ZoneRule::Any]);
        assert!(said.contains("choose one with --zone NAME/ID"), "{said}");
    }

    #[test]
    fn a_name_outside_every_allowed_zone_or_at_an_apex_is_refused_before_any_write() {
        let dns = service();
        for (name, why) in [
            ("api.elsewhere.org", "no zone for `api.elsewhere.org`"),
            ("example.com", "apex of zone `example.com`"),
        ] {
            let said = refused(&dns, name, &[ZoneRule::Id("Z1".into())]);
            assert!(said.contains(why), "{said}");
        }
    }

    #[test]
    fn release_takes_only_this_nodes_address_out() {
        let dns = service();
        let owner = ownership_value(CLUSTER);
        let api = "api.internal.c.example.com";
        dns.change(|z| {
            z.put("Z1", set(api, "A", &["10.0.0.1", "10.0.0.2"]));
            z.put("Z1", set(api, "TXT", &[&owner]));
        });
        let mut report = Report::new("reset", false);
        block_on(release(
            &dns,
            &[desired(api, [10, 0, 0, 1])],
            &["10.0.0.1".parse().unwrap()],
            &[ZoneRule::Id("Z1".into())],
            CLUSTER,
            &options(None),
            &mut report,
        ))
        .unwrap();
        let zones = dns.zones();
        assert_eq!(zones.get("Z1", api, "A").unwrap().values, ["10.0.0.2"]);
        assert!(zones.get("Z1", api, "TXT").is_some());
        assert_eq!(report.changes[0].action, Action::Update);
    }

    #[test]
    fn a_name_delegated_from_its_zone_is_seen() {
        let zone = Zone {
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
            values: vec!["ns-1.example.net.".into()],
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
