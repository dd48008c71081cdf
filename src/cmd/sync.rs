//! `sync`: claim, mount, render and publish under one lock, each step planning from the one
//! snapshot the steps before it updated; then, on a control-plane node, the Kubernetes API's
//! steps when their flags are given. Stops at the first failure. On a master the verify step
//! asks the cloud first and records a full check at the end.

use anyhow::Result;

use crate::cloud::Cloud;
use crate::dns::{self, Places};
use crate::host::Host;
use crate::report::Report;
use crate::settings::Settings;
use crate::snapshot::{Snapshot, VolumeScope};
use crate::steps::{self, kubelet::KubeletStart};

pub(crate) async fn run(
    settings: &Settings,
    cloud: &dyn Cloud,
    places: Places<'_>,
    host: &dyn Host,
    report: &mut Report,
) -> Result<()> {
    // kOps 1.12–1.18: kubelet first, or after the mount where protokube manages etcd.
    let start = KubeletStart::of(settings);
    let kubelet = steps::kubelet::first(start, settings, host, report).await;
    let rest = after_kubelet(start, settings, cloud, places, host, report).await;
    steps::first_error([rest, kubelet])
}

async fn after_kubelet(
    kubelet: KubeletStart,
    settings: &Settings,
    cloud: &dyn Cloud,
    places: Places<'_>,
    host: &dyn Host,
    report: &mut Report,
) -> Result<()> {
    // One region-wide listing serves mount (this zone) and DNS (every member); a master asks
    // the cloud once while its last full check holds, a gossip worker never.
    let mut snapshot = Snapshot::new(settings, cloud, host, VolumeScope::Region);
    // Not given the cluster (kOps 1.36's unit): the instance's tags, asked once, remembered.
    if settings.cluster.is_none() {
        let node = steps::node_role::learn(&mut snapshot).await?;
        let learned = settings
            .clone()
            .with_node(&node, settings.learns_node_role())?;
        snapshot = snapshot.learned(learned);
    }
    steps::noting_mounted(&mut snapshot, report, async |snapshot, report| {
        let settings = snapshot.settings();
        let settings = settings.as_ref();
        // The cluster's names are checked before anything is locked or changed.
        let cluster = snapshot.cluster().await?;
        let dns = dns::choose(settings, &cluster, places, host);
        let _lock = steps::lock(settings, host)?;
        let owns_etcd = steps::announce_etcd_owner(snapshot, report)?;
        let verify = steps::verify::begin(snapshot, &*dns).await?;
        let (claimed, mounted) = steps::claim::claim_and_mount(snapshot, owns_etcd, report).await?;
        steps::kubelet::after_mount(kubelet, settings, host, report).await?;
        let rendered = steps::render::run(snapshot, report).await?;
        let known = steps::verify::known(verify.as_ref());
        let published = steps::publish::run(snapshot, &*dns, known, report).await?;
        // A worker asks the cloud nothing more to see whether it should have been a master.
        steps::check_master_flag(snapshot, false, report).await?;
        if let Some(verify) = verify {
            // What the steps changed, as their typed outcomes say it.
            let changed = claimed.volumes_changed || mounted.formatted || rendered.tagged;
            steps::verify::finish(snapshot, &verify, changed, &published)?;
        }
        if settings.master {
            steps::kubernetes::run(settings, host, report).await?;
        }
        claimed.finish()?;
        steps::etcd_owner_unknown(snapshot)
    })
    .await
}
