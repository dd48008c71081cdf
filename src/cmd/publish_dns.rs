//! `publish-dns`: the names etcd peers, nodes and users need, computed from cloud state, to the
//! run's DNS target (a DNS service's zones or `/etc/hosts`).

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
        let _lock = steps::lock(settings, host)?;
        steps::announce_etcd_owner(snapshot, report)?;
        steps::publish::run(snapshot, &*dns, &Default::default(), report).await?;
        steps::etcd_owner_unknown(snapshot)
    })
    .await
}
