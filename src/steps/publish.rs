//! The publish step: the records etcd peers, nodes and users need, computed from the cloud's
//! facts (plan), to where the run's DNS target puts them (`dns/`).

use anyhow::{anyhow, bail, Context as _, Result};

use crate::dns::target::{Desired, DnsTarget, Known, PublishOutcome, RunFacts};
use crate::names::check_dns_name;
use crate::plan::dns::records::{listed_etcd_names, worker_records};
use crate::report::Report;
use crate::settings::Cluster;
use crate::snapshot::Snapshot;
use crate::state::State;
use crate::steps::discover::warn_skipped;

/// Publishes this node's names to `dns` (chosen once for the run): nothing where the target
/// is idle or dns-controller owns the names (the placeholders kOps precreated removed there),
/// else the records this node wants, checked, then the names waited out remembered.
pub(crate) async fn run(
    snapshot: &mut Snapshot<'_>,
    dns: &dyn DnsTarget,
    known: &Known,
    report: &mut Report,
) -> Result<PublishOutcome> {
    let cluster = snapshot.cluster().await?;
    if let Some(why) = dns.idle_reason() {
        tracing::info!("{why}");
        return Ok(PublishOutcome::nothing());
    }
    if stands_aside(snapshot, dns)? {
        remove_placeholders(snapshot, dns, report).await?;
        tracing::info!(
            "etcd-manager runs here and dns-controller publishes the cluster's names: \
             nothing for protokube to publish"
        );
        return Ok(PublishOutcome::nothing());
    }
    let desired = desired(snapshot, dns, &cluster, report).await?;
    check_names(&desired)?;
    let facts = run_facts(snapshot, dns).await?;
    let outcome = dns.publish(&facts, desired, known, report).await?;
    remember_missing(snapshot, &outcome)?;
    Ok(outcome)
}

/// Whether dns-controller owns the names: the old protokube beside etcd-manager published
/// nothing to a DNS service.
fn stands_aside(snapshot: &mut Snapshot<'_>, dns: &dyn DnsTarget) -> Result<bool> {
    Ok(dns.shared_with_dns_controller()
        && snapshot.settings().legacy
        && !snapshot.etcd_owner()?.is_protokube())
}

/// kOps ≤ 1.22's nodeup lists the etcd names kOps precreated (`--remove-dns-names`): removed
/// from a master while they still hold kOps' placeholder, as its protokube removed them, once.
async fn remove_placeholders(
    snapshot: &mut Snapshot<'_>,
    dns: &dyn DnsTarget,
    report: &mut Report,
) -> Result<()> {
    let settings = snapshot.settings();
    let names = &settings.remove_dns_names;
    if !settings.master || names.is_empty() || snapshot.state()?.placeholders_removed == *names {
        return Ok(());
    }
    let facts = run_facts(snapshot, dns).await?;
    dns.remove_placeholders(&facts, names, report).await?;
    if !settings.dry_run {
        let state = State {
            placeholders_removed: names.clone(),
            ..snapshot.state()?.clone()
        };
        super::save_state(snapshot, state).context("recording the placeholder names removed")?;
    }
    Ok(())
}

/// The records this node wants: a master's from its etcd volumes (none where etcd-manager owns
/// etcd: the etcd names are its own, none desired, none deleted) and the masters; a worker's
/// from the masters alone (it may not list volumes: kOps' node role has `DescribeInstances`
/// alone).
async fn desired(
    snapshot: &mut Snapshot<'_>,
    dns: &dyn DnsTarget,
    cluster: &Cluster,
    report: &mut Report,
) -> Result<Desired> {
    let masters = snapshot.masters().await?;
    if !snapshot.settings().master {
        return Ok(Desired {
            records: worker_records(&cluster.name, &masters),
            listed_etcd_names: None,
        });
    }
    let volumes = if snapshot.etcd_owner()?.is_protokube() {
        warn_skipped(snapshot, report).await?;
        snapshot.discovery().await?.volumes.clone()
    } else {
        Vec::new()
    };
    Ok(Desired {
        records: dns.master_records(&volumes, &masters),
        listed_etcd_names: listed_etcd_names(&cluster.internal_suffix, &volumes),
    })
}

/// Names from tags and the spec are untrusted: each must be a DNS name before it is written,
/// and one name has one purpose (two records of one name would overwrite each other).
fn check_names(desired: &Desired) -> Result<()> {
    let mut seen = std::collections::BTreeMap::new();
    for record in &desired.records {
        check_dns_name(&record.name).map_err(|why| anyhow!("refusing to publish: {why}"))?;
        if let Some(first) = seen.insert(record.name.as_str(), record.role) {
            bail!(
                "refusing to publish: `{}` would be both {} and {}; check \
                 spec.masterPublicName and the volumes' etcd tags",
                record.name,
                first.describe(),
                record.role.describe()
            );
        }
    }
    Ok(())
}

/// The names waited out, remembered for the next full read (a dry run remembers nothing).
fn remember_missing(snapshot: &mut Snapshot<'_>, outcome: &PublishOutcome) -> Result<()> {
    let state = snapshot.state()?.clone();
    let Some(missing) = outcome
        .missing
        .as_ref()
        .filter(|m| **m != state.missing_names)
    else {
        return Ok(());
    };
    if !snapshot.settings().dry_run {
        let state = State {
            missing_names: missing.clone(),
            ..state
        };
        super::save_state(snapshot, state)
            .context("recording the names no longer the cluster's")?;
    }
    Ok(())
}

/// What `dns` is told of the run: the node's region where it needs the cloud's facts (so a run
/// whose names go to the hosts file asks the metadata service nothing more), and the names the
/// state file remembers waited out.
pub(crate) async fn run_facts(
    snapshot: &mut Snapshot<'_>,
    dns: &dyn DnsTarget,
) -> Result<RunFacts> {
    let region = if dns.needs_cloud_facts() {
        Some(snapshot.identity().await?.region.clone())
    } else {
        None
    };
    Ok(RunFacts {
        region,
        missing: snapshot.state()?.missing_names.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dns::memory::record_set;
    use crate::plan::dns::zone_plan::ownership_value;
    use crate::plan::dns::zones::RecordSet;
    use crate::report::Action;
    use crate::settings::Flags;
    use crate::snapshot::VolumeScope;
    use crate::steps::testing::{Bench, Vol, CLUSTER, INSTANCE};

    const ETCD_NAME: &str = "etcd-a.internal.k.example.com";

    /// A master of the bench's cluster whose names go to the in-memory DNS service, its
    /// `main` member `a` on a volume attached here.
    fn master(adjust: impl FnOnce(&mut Flags)) -> Bench {
        Bench::with_flags(
            &[Vol::new("vol-1", "main", "a").attached_to(INSTANCE, "/dev/vdb")],
            |flags| {
                flags.dns = Some(crate::settings::DnsChoice::of(
                    crate::settings::DnsKind::Zones,
                ));
                adjust(flags);
            },
        )
    }

    fn publish(bench: &Bench) -> (Report, Result<PublishOutcome>) {
        let mut snapshot = bench.snapshot(VolumeScope::Region);
        let mut report = bench.report();
        let dns = bench.dns();
        let known = Known::default();
        let outcome = Bench::block_on(run(&mut snapshot, &*dns, &known, &mut report));
        (report, outcome)
    }

    fn owned(name: &str, address: &str) -> [RecordSet; 2] {
        [
            record_set(name, "A", &[address]),
            record_set(name, "TXT", &[&ownership_value(CLUSTER)]),
        ]
    }

    #[test]
    fn a_master_publishes_its_names_once_and_then_changes_nothing() {
        let bench = master(|_| {});
        let (report, outcome) = publish(&bench);
        let outcome = outcome.unwrap();
        let zones = bench.zones.zones();
        assert_eq!(
            zones.get("Z1", ETCD_NAME, "A").unwrap().values,
            ["10.0.0.1"]
        );
        assert_eq!(
            zones.get("Z1", ETCD_NAME, "TXT").unwrap().values,
            [ownership_value(CLUSTER)]
        );
        assert!(report
            .changes
            .iter()
            .any(|c| c.target == ETCD_NAME && c.action == Action::Create));
        assert!(outcome
            .names_in_place
            .unwrap()
            .iter()
            .any(|r| r.name == ETCD_NAME));
        assert_eq!(outcome.zones.unwrap().zones[0].id, "Z1");
        // Converged: the zone is read, nothing is sent.
        let sent = bench.zones.zones().changes().len();
        let (report, outcome) = publish(&bench);
        outcome.unwrap();
        assert_eq!(bench.zones.zones().changes().len(), sent);
        assert!(report.changes.iter().all(|c| c.action == Action::Unchanged));
    }

    #[test]
    fn a_worker_and_a_dry_run_send_nothing() {
        let worker = master(|flags| flags.master = false);
        let (_, outcome) = publish(&worker);
        assert_eq!(outcome.unwrap().names_in_place, Some(Vec::new()));
        assert!(worker.zones.zones().calls.is_empty());
        assert!(worker.cloud.world().calls.is_empty());
        let mut dry = master(|_| {});
        dry.dry_run();
        let (report, outcome) = publish(&dry);
        // The plan is reported, not in place.
        assert_eq!(outcome.unwrap().names_in_place, None);
        assert!(report.changes.iter().any(|c| c.action == Action::Create));
        assert!(dry.zones.zones().changes().is_empty());
    }

    #[test]
    fn beside_etcd_manager_the_old_daemon_leaves_the_names_to_dns_controller() {
        let bench = master(|flags| flags.legacy = true);
        bench.file(
            "/etc/kubernetes/manifests/etcd-manager-main.manifest",
            include_str!(
                "../../tests/fixtures/kops/etcd-manager/etcd-main-master-us-test-1a.manifest"
            ),
        );
        let (report, outcome) = publish(&bench);
        assert_eq!(outcome.unwrap().names_in_place, Some(Vec::new()));
        assert!(report.changes.is_empty());
        assert!(bench.zones.zones().calls.is_empty());
    }

    #[test]
    fn an_owned_name_the_cluster_lost_is_waited_out_then_deleted() {
        let lost = "old.internal.k.example.com";
        // No grace: the name goes at the second full read that misses it.
        let bench = master(|flags| flags.verify_interval = std::time::Duration::ZERO);
        bench.zones.change(|z| {
            for set in owned(lost, "10.0.0.9") {
                z.put("Z1", set);
            }
        });
        let (_, outcome) = publish(&bench);
        let missing = outcome.unwrap().missing.unwrap();
        assert!(missing.contains_key(lost), "{missing:?}");
        // Remembered in the state file for the next run.
        let state = State::load(
            &bench.host,
            &bench.settings.root.own(crate::paths::STATE_FILE).unwrap(),
        )
        .unwrap()
        .unwrap();
        assert!(state.missing_names.contains_key(lost));
        assert!(bench.zones.zones().get("Z1", lost, "A").is_some());
        let (report, outcome) = publish(&bench);
        outcome.unwrap();
        assert!(bench.zones.zones().get("Z1", lost, "A").is_none());
        assert!(bench.zones.zones().get("Z1", lost, "TXT").is_none());
        assert!(report
            .changes
            .iter()
            .any(|c| c.target == lost && c.action == Action::Delete));
    }

    #[test]
    fn a_name_held_by_someone_else_is_left_alone_with_a_warning() {
        let bench = master(|_| {});
        bench.zones.change(|z| {
            z.put("Z1", record_set(ETCD_NAME, "A", &["192.0.2.1"]));
        });
        let (report, outcome) = publish(&bench);
        let outcome = outcome.unwrap();
        assert_eq!(outcome.left_alone.len(), 1);
        assert!(
            report.warnings[0].contains("--adopt"),
            "{:?}",
            report.warnings
        );
        assert_eq!(
            bench
                .zones
                .zones()
                .get("Z1", ETCD_NAME, "A")
                .unwrap()
                .values,
            ["192.0.2.1"]
        );
    }
}
