//! `reset`: undo this node's part (manifests, mounts, with `--detach` attachments, its DNS
//! addresses, the hosts block, the state) under the run lock; `sync` brings it back.

use anyhow::Result;

use crate::cloud::Cloud;
use crate::dns::{self, Places};
use crate::host::Host;
use crate::report::Report;
use crate::settings::Settings;
use crate::snapshot::{Snapshot, VolumeScope};
use crate::steps;

pub(crate) async fn run(
    settings: &Settings,
    cloud: &dyn Cloud,
    places: Places<'_>,
    host: &dyn Host,
    report: &mut Report,
) -> Result<()> {
    let mut snapshot = Snapshot::new(settings, cloud, host, VolumeScope::Region);
    steps::noting_mounted(&mut snapshot, report, async |snapshot, report| {
        // The cluster's names are checked before anything is locked or changed.
        let cluster = snapshot.cluster().await?;
        let dns = dns::choose(settings, &cluster, places, host);
        // Where etcd-manager owns etcd, its volumes and names are left; the rest is reset.
        // Where that cannot be told, nothing is.
        steps::etcd_owner_unknown(snapshot).map_err(|err| err.context("nothing was reset"))?;
        let _lock = steps::lock(settings, host)?;
        steps::announce_etcd_owner(snapshot, report)?;
        steps::reset::run(snapshot, &*dns, report).await
    })
    .await
}
