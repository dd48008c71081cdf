//! `discover-volumes`: list this cluster's etcd volumes in this node's zone (read-only).

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
        steps::discover::run(snapshot, report).await
    })
    .await
}
