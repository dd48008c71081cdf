//! `sync`: claim, mount, render and publish in one run under one lock, each step planning from
//! the one snapshot the steps before it updated; stops at the first failure. On a master the
//! verify step asks the cloud first (once, while the last full check holds) and records a full
//! check at the end.

use anyhow::Result;

use crate::cloud::Cloud;
use crate::report::Report;
use crate::settings::Settings;
use crate::snapshot::{Snapshot, VolumeScope};
use crate::steps;

pub async fn run(settings: &Settings, cloud: &dyn Cloud, report: &mut Report) -> Result<()> {
    // One region-wide listing serves mount (this zone) and DNS (every member).
    let mut snapshot = Snapshot::new(settings, cloud, VolumeScope::Region);
    // The cluster's names are checked before anything is locked or changed.
    let cluster = snapshot.cluster().await?;
    let _lock = steps::lock(settings)?;
    // A master asks the cloud once while its last full check holds (DESIGN §8).
    let verify = match settings.master {
        true => Some(steps::verify::begin(settings, &mut snapshot).await?),
        false => None,
    };
    // Who owns etcd here is decided once: where etcd-manager does, its volumes are left alone.
    let claimed = match steps::announce_etcd_owner(settings, &mut snapshot, report)? {
        true => {
            let claimed = steps::claim::run(settings, &mut snapshot, report).await?;
            steps::mount::run(settings, &mut snapshot, report).await?;
            claimed
        }
        false => steps::claim::Claimed::default(),
    };
    steps::render::run(settings, &mut snapshot, report).await?;
    steps::publish::run(settings, &mut snapshot, report).await?;
    // A worker's run asks the cloud nothing more to see whether it should have been a master.
    steps::check_master_flag(settings, &mut snapshot, false, report).await?;
    if let Some(verify) = verify {
        steps::verify::finish(settings, &snapshot, &verify, cluster.dns, report)?;
    }
    claimed.finish()
}
