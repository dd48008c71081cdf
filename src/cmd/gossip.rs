//! `gossip`: this node as a member of kOps' gossip network, keeping the hosts block from its
//! view until stopped; `--once` joins, writes the view (or, dry, shows it) and leaves.

use anyhow::Result;

use crate::cloud::Cloud;
use crate::error::NotReady;
use crate::home::{self, Running};
use crate::host::Host;
use crate::plan::dns::hosts_block::managed_lines;
use crate::report::{GossipRecord, GossipReport, Report};
use crate::settings::Settings;
use crate::snapshot::{Snapshot, VolumeScope};

pub(crate) async fn run(
    settings: &Settings,
    cloud: &dyn Cloud,
    host: &dyn Host,
    once: bool,
    report: &mut Report,
    until_stopped: impl std::future::Future<Output = ()>,
    wiring: home::Wiring<'_>,
) -> Result<()> {
    let mut snapshot = Snapshot::new(settings, cloud, host, VolumeScope::Region);
    let running = home::start(&mut snapshot, wiring.connect).await?;
    if !once {
        tokio::select! {
            () = running.keep(host, true, wiring.metrics) => {}
            () = until_stopped => tracing::info!("gossip: stopping"),
        }
        running.leave(host);
        return Ok(());
    }
    if !running.joined(settings.deadline).await {
        return Err(NotReady(format!(
            "no gossip peer answered within --timeout ({}) on ports {:?}; the seeds are the \
             cloud's control-plane instances and --gossip-seed",
            settings.deadline.timeout_text(),
            running.member.ports()
        ))
        .into());
    }
    once_report(&running, host, report)
}

/// The view, the hosts block written (or planned) from it, and one change per name.
fn once_report(running: &Running, host: &dyn Host, report: &mut Report) -> Result<()> {
    let view = running.view();
    for warning in &view.skipped {
        report.warn(warning.clone());
    }
    let update = running.write_hosts(host, true)?;
    for change in update.changes {
        report.push(change);
    }
    report.gossip = Some(GossipReport {
        records: view
            .records
            .iter()
            .map(|r| GossipRecord {
                name: r.name.clone(),
                kind: r.kind.clone(),
                addresses: r.addresses.iter().map(ToString::to_string).collect(),
                version: r.version,
                protocol: r.protocol.as_str(),
                peer: r.peer.clone(),
            })
            .collect(),
        block: managed_lines(&update.content),
    });
    tracing::debug!("gossip: left as `{}`", running.node());
    Ok(())
}
