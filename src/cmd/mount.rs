//! `mount`: claim this node's etcd volumes, then format (only what is proven blank), check and
//! mount them, and record them in the state file.

use anyhow::Result;

use crate::cloud::Cloud;
use crate::host::Host;
use crate::report::Report;
use crate::settings::Settings;
use crate::snapshot::{Snapshot, VolumeScope};
use crate::steps;

pub(crate) async fn run(
    settings: &Settings,
    cloud: &dyn Cloud,
    host: &dyn Host,
    report: &mut Report,
) -> Result<()> {
    let mut snapshot = Snapshot::new(settings, cloud, host, VolumeScope::Zone);
    steps::noting_mounted(&mut snapshot, report, async |snapshot, report| {
        if !settings.master {
            // Nothing to mount; but a master run without the flag would leave etcd absent.
            steps::check_master_flag(snapshot, true, report).await?;
            report.warn(
                "not a control-plane node (--master is not set): no etcd volumes to mount"
                    .to_owned(),
            );
            return Ok(());
        }
        // The cluster's names are checked before anything is locked or changed.
        snapshot.cluster().await?;
        let owner = snapshot.etcd_owner()?;
        if let Some(why) = owner.notice() {
            anyhow::bail!("{why}; remove its manifests first to hand the volumes to protokube");
        }
        if let Some(why) = owner.unknown() {
            anyhow::bail!(why);
        }
        let _lock = steps::lock(settings, host)?;
        let claimed = steps::claim::run(snapshot, report).await?;
        steps::mount::run(snapshot, report).await?;
        claimed.finish()
    })
    .await
}
