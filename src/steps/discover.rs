//! The read-only step of `discover-volumes`: the cluster's etcd volumes in this zone, with where
//! each is attached and mounted, into the report.

use anyhow::Result;

use crate::plan::mounts::mounted_at;
use crate::report::{Report, VolumeReport};
use crate::snapshot::Snapshot;

pub(crate) async fn run(snapshot: &mut Snapshot<'_>, report: &mut Report) -> Result<()> {
    let settings = snapshot.settings();
    let settings = settings.as_ref();
    let instance_id = snapshot.identity().await?.instance_id.clone();
    let discovery = snapshot.discovery().await?.clone();
    let table = snapshot.mount_table()?;
    for volume in &discovery.volumes {
        let attached_here = volume
            .attachment
            .as_ref()
            .is_some_and(|a| a.instance_id == instance_id);
        let mountpoint = settings
            .root
            .resolve(crate::paths::volume_mountpoint(&volume.id))?;
        let mounted = attached_here && mounted_at(&table, &mountpoint).is_some();
        report.volumes.push(VolumeReport {
            id: volume.id.clone(),
            zone: volume.zone.clone(),
            state: volume.state.as_str().to_owned(),
            attached_to: volume.attachment.as_ref().map(|a| a.instance_id.clone()),
            device: volume.attachment.as_ref().map(|a| a.device.clone()),
            mountpoint: mounted.then(|| mountpoint.display().to_string()),
            etcd: volume.etcd.clone(),
        });
    }
    warn_skipped(snapshot, report).await
}

/// Names every volume discovery skipped, with the reason, in the report's warnings.
pub(crate) async fn warn_skipped(snapshot: &mut Snapshot<'_>, report: &mut Report) -> Result<()> {
    for skipped in &snapshot.discovery().await?.skipped {
        report.warn(skipped.to_string());
    }
    Ok(())
}
