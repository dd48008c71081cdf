//! Attaching etcd volumes to this instance: the attach request (the lock between nodes), trying
//! the next device name when one is taken, and the bounded waits for the attachment and for the
//! block device to appear.

use anyhow::{anyhow, bail, Result};

use crate::apply::blockdev::{self, FoundDevice};
use crate::cloud::{AttachOutcome, VolumeApi};
use crate::paths::HostRoot;
use crate::plan::volumes::free_device_name;
use crate::wait::{poll_until, Waits};

/// The outcome of trying to attach one volume.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Attached {
    /// Attached (or, with dry run, would be) under this device name.
    As(String),
    /// Another node won the race for it.
    Taken(String),
}

/// Asks to attach `volume_id` to `instance_id` under the first free device name, moving on to
/// the next name when the cloud says one is in use. `used` holds the names in use on the
/// instance and grows with the names tried.
pub async fn attach(
    cloud: &dyn VolumeApi,
    volume_id: &str,
    instance_id: &str,
    used: &mut Vec<String>,
    dry_run: bool,
) -> Result<Attached> {
    loop {
        let device = free_device_name(used.iter().map(String::as_str)).ok_or_else(|| {
            anyhow!(
                "no free device name for volume `{volume_id}`: /dev/xvdu to /dev/xvdz are all in \
                 use on `{instance_id}`"
            )
        })?;
        match cloud
            .attach_volume(volume_id, instance_id, device, dry_run)
            .await?
        {
            AttachOutcome::Requested | AttachOutcome::WouldSucceed => {
                used.push(device.to_owned());
                return Ok(Attached::As(device.to_owned()));
            }
            AttachOutcome::VolumeTaken(why) => return Ok(Attached::Taken(why)),
            AttachOutcome::DeviceNameTaken(why) => {
                tracing::info!("device name `{device}` is in use ({why}); trying the next one");
                used.push(device.to_owned());
            }
        }
    }
}

/// Waits until every volume in `ids` shows as `attached` to `instance_id`.
pub async fn wait_attached(
    cloud: &dyn VolumeApi,
    instance_id: &str,
    ids: &[String],
    waits: &Waits,
) -> Result<()> {
    let what = format!("`{}` to be attached", ids.join("`, `"));
    poll_until(
        &what,
        waits.timeout,
        waits.progress,
        waits.attach.clone(),
        || async {
            let volumes = cloud.volumes_by_id(ids).await?;
            let mut all = true;
            for id in ids {
                let volume = volumes
                    .iter()
                    .find(|v| &v.id == id)
                    .ok_or_else(|| anyhow!("volume `{id}` disappeared while attaching"))?;
                if let Some(other) = volume
                    .attachments
                    .iter()
                    .find(|a| a.instance_id != instance_id)
                {
                    bail!(
                        "volume `{id}` is attached to `{}`, not to this instance: another node \
                         took it",
                        other.instance_id
                    );
                }
                all &= volume
                    .attachments
                    .iter()
                    .any(|a| a.instance_id == instance_id && a.state == "attached");
            }
            Ok(all.then_some(()))
        },
    )
    .await
}

/// Waits for the block device of `volume_id`, attached as `requested`, to appear under `root`.
pub async fn wait_device(
    root: &HostRoot,
    volume_id: &str,
    requested: &str,
    waits: &Waits,
) -> Result<FoundDevice> {
    let what = format!(
        "the block device of `{volume_id}` (attached as `{requested}`) to appear under `{}`",
        root.path("/dev").display()
    );
    poll_until(
        &what,
        waits.timeout,
        waits.progress,
        waits.device.clone(),
        || async { blockdev::find_device(root, volume_id, requested) },
    )
    .await
}
