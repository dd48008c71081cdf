//! The verify step of `sync` (docs/performance.md): on a master, before the other steps, ask the cloud
//! once and decide from the last full check whether that is enough (`plan/verify.rs`); on a
//! gossip worker, decide without asking anything whether the last check still holds. After the
//! other steps, record what a full check found. The record is bookkeeping in the state file, not
//! a change of the node: it is never reported, and a dry run leaves it alone.

use std::time::SystemTime;

use anyhow::{Context as _, Result};

use crate::dns::target::{DnsTarget, Known, PublishOutcome};
use crate::plan::state::WorkerVerified;
use crate::plan::verify::{decide, due, worker_due, Check, Local};
use crate::snapshot::Snapshot;
use crate::state::{State, Verified};

/// What [`begin`] decided, for [`finish`]: a master's check or a gossip worker's.
#[derive(Clone, Debug)]
pub(crate) enum Verify {
    Master(MasterVerify),
    Worker(WorkerVerify),
}

impl Verify {
    /// What the publish step may take from a master's recorded check (a worker's trusted
    /// masters are in the snapshot already).
    pub(crate) fn known(&self) -> Option<&Known> {
        match self {
            Verify::Master(verify) => Some(&verify.known),
            Verify::Worker(_) => None,
        }
    }
}

/// What the run's check knows for the publish step: nothing without one (a worker's, none).
pub(crate) fn known(verify: Option<&Verify>) -> &Known {
    static NOTHING: Known = Known {
        zones: None,
        trusted_names: None,
        left_alone: Vec::new(),
    };
    verify.and_then(Verify::known).unwrap_or(&NOTHING)
}

/// The verify step's question: a master asks the cloud once while its last full check holds,
/// a gossip worker not at all; `None` for a worker that needs no masters (its names, `dns`,
/// are not kept on the node).
pub(crate) async fn begin(
    snapshot: &mut Snapshot<'_>,
    dns: &dyn DnsTarget,
) -> Result<Option<Verify>> {
    let settings = snapshot.settings();
    let settings = settings.as_ref();
    Ok(if settings.master {
        Some(Verify::Master(begin_master(snapshot).await?))
    } else {
        begin_worker(snapshot, dns).await?.map(Verify::Worker)
    })
}

/// The verify step's record, after the other steps succeeded (`volumes_changed`: a step
/// attached, detached, formatted or tagged a volume).
pub(crate) fn finish(
    snapshot: &mut Snapshot<'_>,
    verify: &Verify,
    volumes_changed: bool,
    published: &PublishOutcome,
) -> Result<()> {
    match verify {
        Verify::Master(verify) => finish_master(snapshot, verify, volumes_changed, published),
        Verify::Worker(verify) => finish_worker(snapshot, verify, published),
    }
}

/// What [`begin_master`] decided, for [`finish_master`].
#[derive(Clone, Debug)]
pub(crate) struct MasterVerify {
    pub(crate) check: Check,
    /// What the publish step may take from the recorded check.
    pub(crate) known: Known,
    /// When the cloud was asked: a full check is recorded as of this moment.
    started: SystemTime,
}

/// Asks the cloud what this run needs: the masters alone while the recorded check holds, else
/// the volumes and the masters at once. The snapshot then holds both.
pub(crate) async fn begin_master(snapshot: &mut Snapshot<'_>) -> Result<MasterVerify> {
    let settings = snapshot.settings();
    let settings = settings.as_ref();
    let state = snapshot.state()?.clone();
    let mut known = Known {
        zones: state.zones.clone(),
        trusted_names: None,
        left_alone: Vec::new(),
    };
    let started = SystemTime::now();
    let recorded = state.verified.as_ref();
    let check = match (due(recorded, started, settings.verify_interval), recorded) {
        (None, Some(recorded)) => {
            let masters = snapshot.masters().await?;
            let identity = snapshot.identity().await?.clone();
            let cluster = snapshot.cluster().await?.name;
            let mounted = super::own_mounted_volumes(settings, &snapshot.mount_table()?);
            let local = Local {
                cluster: &cluster,
                instance_id: &identity.instance_id,
                zone: &identity.availability_zone,
                mounted: &mounted,
                provider: snapshot.provider_facts(),
            };
            let check = decide(recorded, &masters, &local);
            match check {
                Check::Trusted => {
                    tracing::debug!(
                        "the masters are as last verified: volumes and records taken from the \
                         check of {}",
                        humantime::format_rfc3339_seconds(recorded.at)
                    );
                    snapshot.trust(recorded).await?;
                    known.trusted_names = Some(recorded.published.clone());
                    known.left_alone = recorded.left_alone.clone();
                }
                Check::Full(_) => {
                    snapshot.discovery().await?;
                }
            }
            check
        }
        (reason, _) => {
            snapshot.fetch_volumes_and_masters().await?;
            Check::Full(reason.unwrap_or_default())
        }
    };
    if let Check::Full(reason) = &check {
        tracing::info!("full check of volumes and records: {reason}");
    }
    Ok(MasterVerify {
        check,
        known,
        started,
    })
}

/// After a successful run: a full check that left the cloud's volumes as it found them (no
/// attach, detach or format tag) and found every name as desired or left to its holder (a
/// stable outcome, warned about once per check) is recorded as verified; any
/// other full check forgets the record, so the next run checks in full again. A trusted run
/// keeps the record (with the names, if it had to publish them). The zones found are kept.
pub(crate) fn finish_master(
    snapshot: &mut Snapshot<'_>,
    verify: &MasterVerify,
    volumes_changed: bool,
    published: &PublishOutcome,
) -> Result<()> {
    let settings = snapshot.settings();
    let settings = settings.as_ref();
    if settings.dry_run {
        return Ok(());
    }
    let names = published.names_in_place.clone();
    let state = snapshot.state()?.clone();
    let verified = match &verify.check {
        Check::Trusted => state.verified.clone().map(|recorded| Verified {
            published: names.unwrap_or(recorded.published.clone()),
            left_alone: published.left_alone.clone(),
            ..recorded
        }),
        Check::Full(_) => {
            match (
                !volumes_changed,
                names,
                snapshot.masters_known(),
                snapshot.volume_answer(),
            ) {
                (true, Some(names), Some(masters), Some(volumes)) => Some(Verified {
                    at: verify.started,
                    masters: masters.to_vec(),
                    volumes: volumes.to_vec(),
                    published: names,
                    left_alone: published.left_alone.clone(),
                }),
                _ => None,
            }
        }
    };
    let state = State {
        verified,
        zones: published
            .zones
            .clone()
            .or_else(|| verify.known.zones.clone()),
        ..state
    };
    super::save_state(snapshot, state).context("recording the verified state")?;
    Ok(())
}

/// What a gossip worker's check decided at the start of the run, for its record at the end.
#[derive(Clone, Debug)]
pub(crate) struct WorkerVerify {
    /// Why the cloud is asked this run; `None` when the recorded check holds.
    full: Option<String>,
    started: SystemTime,
    /// The cluster checked.
    cluster: String,
}

/// A gossip worker's check: the masters from its last full check while that holds (the cloud
/// not asked at all), else asked by the publish step. `None` for a worker that needs no masters
/// (its names are not kept on the node: a DNS service's are the masters' to write).
async fn begin_worker(
    snapshot: &mut Snapshot<'_>,
    dns: &dyn DnsTarget,
) -> Result<Option<WorkerVerify>> {
    let settings = snapshot.settings();
    let settings = settings.as_ref();
    let Some(on_disk) = dns.names_on_node()? else {
        return Ok(None);
    };
    let cluster = snapshot.cluster().await?;
    let started = SystemTime::now();
    let recorded = snapshot.state()?.worker.clone();
    let full = worker_due(
        recorded.as_ref(),
        started,
        settings.verify_interval,
        &cluster.name,
        &on_disk,
    );
    match (&full, recorded) {
        (None, Some(recorded)) => {
            tracing::debug!(
                "the masters as verified at {}: the cloud is not asked",
                humantime::format_rfc3339_seconds(recorded.at)
            );
            snapshot.trust_masters(recorded.masters);
        }
        (reason, _) => tracing::info!(
            "full check of the masters: {}",
            reason.as_deref().unwrap_or_default()
        ),
    }
    Ok(Some(WorkerVerify {
        full,
        started,
        cluster: cluster.name,
    }))
}

/// After a worker's successful full check: the masters it found and the hosts block the publish
/// step wrote from them (when it found any), trusted for `--verify-interval` less a jitter drawn
/// now (up to a tenth of it, so a fleet's full checks spread out and still come at most once per
/// interval on the timer).
fn finish_worker(
    snapshot: &mut Snapshot<'_>,
    verify: &WorkerVerify,
    published: &PublishOutcome,
) -> Result<()> {
    let settings = snapshot.settings();
    let settings = settings.as_ref();
    if settings.dry_run || verify.full.is_none() {
        return Ok(());
    }
    let (Some(masters), Some(hosts)) = (
        snapshot.masters_known().map(<[_]>::to_vec),
        published.hosts_block.clone(),
    ) else {
        return Ok(());
    };
    // No master running yet (a worker booting beside its control plane): nothing worth
    // trusting; the next run asks again.
    let worker = if masters.is_empty() {
        tracing::info!("no master of the cluster is running yet: the next run asks again");
        None
    } else {
        Some(WorkerVerified {
            at: verify.started,
            jitter_seconds: fastrand::u64(0..=settings.verify_interval.as_secs() / 10),
            cluster: verify.cluster.clone(),
            masters,
            hosts,
        })
    };
    let state = State {
        worker,
        ..snapshot.state()?.clone()
    };
    if state == *snapshot.state()? {
        return Ok(());
    }
    super::save_state(snapshot, state).context("recording the verified state")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::dns::target::Known;
    use crate::host::memory::Content;
    use crate::snapshot::VolumeScope;
    use crate::steps::testing::{master, Bench, Vol};

    /// A worker's `sync` as the command runs its DNS part: the verify step's question, the
    /// publish step, the verify step's record. The report and the cloud's calls in this run.
    fn worker_sync(bench: &Bench) -> (crate::report::Report, Vec<String>) {
        let before = bench.cloud.world().calls.len();
        let mut report = bench.report();
        let mut snapshot = bench.snapshot(VolumeScope::Region);
        let dns = bench.dns();
        Bench::block_on(async {
            let verify = super::begin(&mut snapshot, &*dns).await?;
            let published =
                crate::steps::publish::run(&mut snapshot, &*dns, &Known::default(), &mut report)
                    .await?;
            if let Some(verify) = &verify {
                super::finish(&mut snapshot, verify, false, &published)?;
            }
            anyhow::Ok(())
        })
        .unwrap();
        (report, bench.cloud.world().calls[before..].to_vec())
    }

    #[test]
    fn a_gossip_worker_trusts_its_last_check_until_its_hosts_block_changes() {
        let bench = Bench::with_flags(&[], |flags| {
            flags.master = false;
            flags.dns = Some(crate::settings::DnsChoice::of(
                crate::settings::DnsKind::Hosts,
            ));
        });
        // Cold: the masters are asked for and written into the hosts block.
        let (report, calls) = worker_sync(&bench);
        assert_eq!(calls, ["DescribeInstances"]);
        assert!(report.changed, "{:?}", report.changes);
        let block = String::from_utf8(bench.host.node().files[&bench.path("/etc/hosts")].0.clone())
            .unwrap();
        assert!(block.contains("10.0.0.1"), "{block}");
        // Trusted: nothing asked, nothing written.
        let (report, calls) = worker_sync(&bench);
        assert!(calls.is_empty(), "{calls:?}");
        assert!(!report.changed, "{:?}", report.changes);
        // Someone edits the block: the record no longer holds; the cloud is asked again.
        bench.file("/etc/hosts", "127.0.0.1 localhost\n");
        let (report, calls) = worker_sync(&bench);
        assert_eq!(calls, ["DescribeInstances"]);
        assert!(report.changed);
    }

    #[test]
    fn a_worker_whose_names_go_to_a_dns_service_asks_nothing() {
        let bench = Bench::with_flags(&[], |flags| {
            flags.master = false;
            flags.dns = Some(crate::settings::DnsChoice::of(
                crate::settings::DnsKind::Zones,
            ));
        });
        let mut snapshot = bench.snapshot(VolumeScope::Region);
        let dns = bench.dns();
        let verify = Bench::block_on(super::begin(&mut snapshot, &*dns)).unwrap();
        assert!(verify.is_none());
        let (_, calls) = worker_sync(&bench);
        assert!(calls.is_empty(), "{calls:?}");
        assert!(bench.zones.zones().calls.is_empty());
    }

    #[test]
    fn a_converged_master_trusts_its_last_check_until_the_masters_change() {
        let bench = Bench::master(&[Vol::new("vol-1", "main", "a")]);
        bench.device("/dev/vdb", 1, Content::Zeros);
        // Cold: the full check claims, formats and mounts; the cloud changed, nothing recorded.
        let (_, calls, result) = bench.sync_volumes();
        result.unwrap();
        assert!(calls.iter().any(|c| c.starts_with("AttachVolume")));
        // Converged: a full check finds nothing to do and records it.
        let (report, calls, result) = bench.sync_volumes();
        result.unwrap();
        assert!(!report.changed, "{:?}", report.changes);
        assert!(calls.iter().any(|c| c == "DescribeVolumes"), "{calls:?}");
        // Trusted: one question (the masters), the volumes from the record.
        let (report, calls, result) = bench.sync_volumes();
        result.unwrap();
        assert!(!report.changed);
        assert_eq!(calls, ["DescribeInstances"]);
        // A new master: the record no longer holds; the volumes are asked for again.
        bench.cloud.change(|world| {
            let tags = world.instances[0].1.clone();
            world
                .instances
                .push((master("i-0000000000000000c", "10.0.0.3"), tags));
        });
        let (_, calls, result) = bench.sync_volumes();
        result.unwrap();
        assert!(calls.iter().any(|c| c == "DescribeVolumes"), "{calls:?}");
        assert_eq!(bench.host.node().mounts.len(), 1);
    }
}
