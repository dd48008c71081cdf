//! Attaching etcd volumes to this instance: the attach request (the lock between nodes), trying
//! the next device name when one is taken, and the bounded waits for the attachment and for the
//! block device to appear.

use std::time::{Duration, Instant, SystemTime};

use anyhow::{anyhow, bail, Result};

use crate::cloud::AttachmentState;
use crate::cloud::{AttachOutcome, DeviceHint, DeviceNaming, VolumeApi};
use crate::host::{Devices, FoundDevice};
use crate::paths::HostRoot;
use crate::plan::volumes::attachment_stuck;
use crate::wait::{poll_until, retry_until, Backoff, Deadline, Progress, Retry};

/// The outcome of trying to attach one volume.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Attached {
    /// Attached (or, with dry run, would be) under this device name.
    As(String),
    /// Another node won the race for it.
    Taken(String),
}

/// Asks to attach `volume_id` to `instance_id` under the first free device name, moving on to
/// the next name when the cloud says one is in use. `used` holds the names in use on the
/// instance and grows with the names tried.
pub(crate) async fn attach(
    cloud: &dyn VolumeApi,
    naming: &dyn DeviceNaming,
    volume_id: &str,
    instance_id: &str,
    used: &mut Vec<String>,
    dry_run: bool,
) -> Result<Attached> {
    loop {
        let device = naming.free_name(volume_id, used).ok_or_else(|| {
            anyhow!(
                "no free device name for volume `{volume_id}`: {} are all in use on \
                 `{instance_id}`",
                naming.names()
            )
        })?;
        match cloud
            .attach_volume(volume_id, instance_id, &device, dry_run)
            .await?
        {
            AttachOutcome::Requested | AttachOutcome::WouldSucceed => {
                used.push(device.clone());
                return Ok(Attached::As(device));
            }
            AttachOutcome::VolumeTaken(why) => {
                // No idempotency token: the SDK may have retried an attach that succeeded, and
                // the retry says `VolumeInUse` about our own attachment. Attached here = ours.
                return Ok(
                    match attached_device(cloud, volume_id, instance_id).await? {
                        Some(device) => Attached::As(device),
                        None => Attached::Taken(why),
                    },
                );
            }
            AttachOutcome::DeviceNameTaken(why) => {
                tracing::info!("device name `{device}` is in use ({why}); trying the next one");
                used.push(device);
            }
        }
    }
}

/// After `VolumeInUse`: the device `volume_id` is attached to `instance_id` under, if it is
/// attached here. A read that shows no attachment yet (clouds are eventually consistent) is repeated
/// for a few seconds before the volume counts as another node's.
async fn attached_device(
    cloud: &dyn VolumeApi,
    volume_id: &str,
    instance_id: &str,
) -> Result<Option<String>> {
    let backoff = Backoff::new(Duration::from_millis(200), Duration::from_secs(1));
    let found = retry_until(
        Deadline::after(Duration::from_secs(5)),
        backoff,
        u32::MAX,
        |_| async {
            let volumes = cloud.volumes_by_id(&[volume_id.to_owned()]).await?;
            let live: Vec<_> = volumes
                .iter()
                .filter(|v| v.id == volume_id)
                .flat_map(|v| &v.attachments)
                .filter(|a| !a.state.is_leaving())
                .collect();
            if let Some(ours) = live.iter().find(|a| a.instance_id == instance_id) {
                tracing::info!("`{volume_id}` is attached here already (a retried attach)");
                return Ok(Retry::Done(Some(ours.device.clone())));
            }
            // Another node's attachment: taken. None yet: read again (eventually consistent).
            Ok(if live.is_empty() {
                Retry::Again(None)
            } else {
                Retry::Done(None)
            })
        },
    )
    .await?;
    Ok(found.unwrap_or(None))
}

/// Waits until every volume in `ids` shows as `attached` to `instance_id`. Returns the volumes
/// whose attachment has been `attaching` longer than allowed (asked at `requested`), if any:
/// the wait ends there. Another instance's attachment that is `detaching` (a stale read of the
/// previous owner) is waited out; any other one means another node took the volume.
pub(crate) async fn wait_attached(
    cloud: &dyn VolumeApi,
    instance_id: &str,
    ids: &[String],
    requested: Instant,
    deadline: Deadline,
    progress: Progress,
) -> Result<Vec<String>> {
    let what = format!("`{}` to be attached", ids.join("`, `"));
    // Capped at 1 s so a run ends at most about a second after the cloud attaches (docs/performance.md:
    // cold sync ≤ 1 s beyond the cloud's own attach time).
    let backoff = Backoff::new(Duration::from_millis(250), Duration::from_secs(1));
    poll_until(&what, deadline, progress, backoff, || async {
        let volumes = cloud.volumes_by_id(ids).await?;
        let now = SystemTime::now();
        let mut all = true;
        let mut stuck = Vec::new();
        for id in ids {
            let volume = volumes
                .iter()
                .find(|v| &v.id == id)
                .ok_or_else(|| anyhow!("volume `{id}` disappeared while attaching"))?;
            if let Some(other) = volume
                .attachments
                .iter()
                .find(|a| a.instance_id != instance_id && !a.state.is_leaving())
            {
                bail!(
                    "volume `{id}` is attached to `{}`, not to this instance: another node \
                         took it",
                    other.instance_id
                );
            }
            match volume
                .attachments
                .iter()
                .find(|a| a.instance_id == instance_id)
            {
                Some(a) if a.state == AttachmentState::Attached => {}
                Some(a) if attachment_stuck(a, requested.elapsed(), now) => {
                    stuck.push(id.clone());
                }
                _ => all = false,
            }
        }
        if !stuck.is_empty() {
            return Ok(Some(stuck));
        }
        Ok(all.then_some(Vec::new()))
    })
    .await
}

/// Waits for the block device `hint` describes (of a volume attached as `requested`) to appear
/// under `root`.
pub(crate) async fn wait_device(
    devices: &dyn Devices,
    root: &HostRoot,
    hint: &DeviceHint,
    requested: &str,
    deadline: Deadline,
    progress: Progress,
) -> Result<FoundDevice> {
    let what = format!(
        "the block device of `{}` (attached as `{requested}`) to appear under `{}`",
        hint.volume_id,
        root.path("/dev").display()
    );
    poll_until(
        &what,
        deadline,
        progress,
        Backoff::new(Duration::from_millis(50), Duration::from_millis(500)),
        || async { devices.find_device(root, hint) },
    )
    .await
}
