//! `sync`: claim, mount, render and publish in one run under one lock, each step planning from
//! the one snapshot the steps before it updated; stops at the first failure.

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
    snapshot.cluster().await?;
    let _lock = steps::lock(settings)?;
    let etcd_manager = match settings.master {
        true => steps::etcd_manager_runs_here(settings)?,
        false => None,
    };
    match etcd_manager {
        Some(why) => report.warn(why),
        None if settings.master => {
            steps::claim::run(settings, &mut snapshot, report).await?;
            steps::mount::run(settings, &mut snapshot, report).await?;
        }
        None => {}
    }
    steps::render::run(settings, &mut snapshot, report).await?;
    steps::publish::run(settings, &mut snapshot, report).await
}
