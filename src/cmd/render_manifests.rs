//! `render-manifests`: write the static-pod manifests this node runs, from the cluster spec and
//! the etcd volumes `mount` recorded.

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
        // The cluster's names are checked before anything is locked or changed.
        snapshot.cluster().await?;
        let _lock = steps::lock(settings, host)?;
        steps::announce_etcd_owner(snapshot, report)?;
        steps::render::run(snapshot, report).await?;
        steps::etcd_owner_unknown(snapshot)
    })
    .await
}
