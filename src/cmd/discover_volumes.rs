//! `discover-volumes`: list this cluster's etcd volumes in this node's zone (read-only).

use anyhow::Result;

use crate::blockdev;
use crate::cloud::{VolumeApi, VolumeQuery};
use crate::context::Context;
use crate::fsutil::HostRoot;
use crate::report::{Report, VolumeReport};
use crate::volumes::{self, Discovery};

/// List this cluster's etcd volumes in this node's availability zone (read-only).
///
/// One server-side-filtered DescribeVolumes (tag:KubernetesCluster, tag-key k8s.io/role/master,
/// availability-zone). Volumes that match but cannot be used (malformed k8s.io/etcd/* tag, root
/// device, no etcd tag) are named in `warnings`.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct Args {}

pub async fn run(ctx: &Context, _args: &Args) -> Result<Report> {
    let mut report = Report::new("discover-volumes", ctx.global.dry_run);
    let ec2 = ctx.ec2().await?;
    let cluster = ctx.cluster_name(ec2).await?;
    let identity = ctx.identity().await?;
    let discovery = discover(ec2, &cluster, Some(&identity.availability_zone)).await?;
    let mounts = blockdev::mount_table()?;
    fill_report(
        &mut report,
        &discovery,
        &identity.instance_id,
        &ctx.root,
        &mounts,
    );
    Ok(report)
}

/// Asks the cloud for the cluster's volumes in `zone` (every zone for `None`) and classifies them.
pub async fn discover(
    cloud: &dyn VolumeApi,
    cluster: &str,
    zone: Option<&str>,
) -> Result<Discovery> {
    let query = VolumeQuery {
        cluster: cluster.to_owned(),
        zone: zone.map(str::to_owned),
    };
    let found = cloud.find_volumes(&query).await?;
    tracing::debug!(
        "{} volume(s) of cluster `{cluster}` in `{}`",
        found.len(),
        zone.unwrap_or("every zone")
    );
    Ok(volumes::classify(cluster, zone, found))
}

/// Puts the discovered volumes and the skipped ones into the report. A volume's mount point is
/// shown when it is attached to this instance and mounted at `<root>/mnt/master-<id>`.
pub fn fill_report(
    report: &mut Report,
    discovery: &Discovery,
    instance_id: &str,
    root: &HostRoot,
    mounts: &[blockdev::MountEntry],
) {
    for volume in &discovery.volumes {
        let attached_here = volume
            .attachment
            .as_ref()
            .is_some_and(|a| a.instance_id == instance_id);
        let mountpoint = root.volume_mountpoint(&volume.id);
        let mounted = attached_here && blockdev::mounted_at(mounts, &mountpoint).is_some();
        report.volumes.push(VolumeReport {
            id: volume.id.clone(),
            zone: volume.zone.clone(),
            state: volume.state.clone(),
            attached_to: volume.attachment.as_ref().map(|a| a.instance_id.clone()),
            device: volume.attachment.as_ref().map(|a| a.device.clone()),
            mountpoint: mounted.then(|| mountpoint.display().to_string()),
            etcd: volume.etcd.clone(),
        });
    }
    for skipped in &discovery.skipped {
        report.warn(skipped.to_string());
    }
}
