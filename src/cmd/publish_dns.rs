//! `publish-dns`: the names etcd peers, nodes and users need, computed from cloud state, to
//! Route53 or to `/etc/hosts`.

use anyhow::Result;

use crate::cloud::Cloud;
use crate::host::Host;
use crate::report::Report;
use crate::settings::Settings;
use crate::snapshot::{Snapshot, VolumeScope};
use crate::steps;

pub async fn run(
    settings: &Settings,
    cloud: &dyn Cloud,
    host: &dyn Host,
    report: &mut Report,
) -> Result<()> {
    let mut snapshot = Snapshot::new(settings, cloud, host, VolumeScope::Region);
    // The cluster's names are checked before anything is locked or changed.
    snapshot.cluster().await?;
    steps::announce_etcd_owner(settings, &mut snapshot, report)?;
    let _lock = steps::lock(settings, host)?;
    steps::publish::run(settings, &mut snapshot, &Default::default(), report).await?;
    steps::etcd_owner_unknown(settings, &mut snapshot)
}
