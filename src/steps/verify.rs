//! The verify step of `sync` on a master (DESIGN §8): before the other steps, ask the cloud
//! once and decide from the last full check whether that is enough (`plan/verify.rs`); after
//! them, record what a full check found. The record is bookkeeping in the state file, not a
//! change of the node: it is never reported, and a dry run leaves it alone.

use std::time::SystemTime;

use anyhow::{Context as _, Result};

use crate::plan::verify::{decide, due, Check, Local};
use crate::settings::Settings;
use crate::snapshot::Snapshot;
use crate::state::{State, Verified};
use crate::steps::publish::{Known, PublishOutcome};

/// What [`begin`] decided, for [`finish`].
#[derive(Clone, Debug)]
pub struct Verify {
    pub check: Check,
    /// What the publish step may take from the recorded check.
    pub known: Known,
    /// When the cloud was asked: a full check is recorded as of this moment.
    started: SystemTime,
}

/// Asks the cloud what this run needs: the masters alone while the recorded check holds, else
/// the volumes and the masters at once. The snapshot then holds both.
pub async fn begin(settings: &Settings, snapshot: &mut Snapshot<'_>) -> Result<Verify> {
    let state = snapshot.state()?.clone();
    let mut known = Known {
        zones: state.zones.clone(),
        trusted_names: None,
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
    Ok(Verify {
        check,
        known,
        started,
    })
}

/// After a successful run: a full check that left the cloud's volumes as it found them (no
/// attach, detach or format tag) and found every name as desired is recorded as verified; any
/// other full check forgets the record, so the next run checks in full again. A trusted run
/// keeps the record (with the names, if it had to publish them). The zones found are kept.
pub fn finish(
    settings: &Settings,
    snapshot: &mut Snapshot<'_>,
    verify: &Verify,
    volumes_changed: bool,
    published: &PublishOutcome,
) -> Result<()> {
    if settings.dry_run {
        return Ok(());
    }
    let names = published.names_in_place.clone();
    let state = snapshot.state()?.clone();
    let verified = match &verify.check {
        Check::Trusted => state.verified.clone().map(|recorded| Verified {
            published: names.unwrap_or(recorded.published.clone()),
            ..recorded
        }),
        Check::Full(_) => {
            match (
                !volumes_changed,
                names,
                snapshot.masters_known(),
                snapshot.volume_answer(),
            ) {
                (true, Some(published), Some(masters), Some(volumes)) => Some(Verified {
                    at: verify.started,
                    masters: masters.to_vec(),
                    volumes: volumes.to_vec(),
                    published,
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
    super::save_state(settings, snapshot.host(), &state).context("recording the verified state")?;
    snapshot.record_state(state);
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::host::memory::Content;
    use crate::steps::testing::{master, Bench, Vol};

    #[test]
    fn a_converged_master_trusts_its_last_check_until_the_masters_change() {
        let bench = Bench::master(&[Vol::new("vol-1", "main", "a")]);
        bench.device("/dev/xvdu", 1, Content::Zeros);
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
