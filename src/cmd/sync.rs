//! `sync`: discover, mount, render and publish in one idempotent run under one lock, asking the
//! cloud once per kind of fact and stopping at the first failure.

use anyhow::Result;

use crate::cli::DnsProvider;
use crate::cloud::VolumeAttachment;
use crate::cmd::discover_volumes::discover;
use crate::cmd::publish_dns::{provider, publish_from, publishes};
use crate::cmd::{mount, publish_dns, render_manifests};
use crate::context::Context;
use crate::report::Report;
use crate::state::State;
use crate::volumes::EtcdVolume;

/// Discover, mount, render and publish in one run (what boot scripts and timers call).
///
/// Control-plane nodes (--master) run all four steps; other nodes render kube-proxy and, for
/// gossip (`hosts`) DNS, update /etc/hosts. One lock for the whole run, one combined report,
/// and the cloud asked once per kind of fact: a converged run makes at most 4 AWS calls and
/// writes nothing. Stops at the first failure (exit 75 when a step is not ready yet).
#[derive(Clone, Debug, Default, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub render: render_manifests::Args,

    #[command(flatten)]
    pub dns: publish_dns::Args,
}

pub async fn run(ctx: &Context, args: &Args) -> Result<Report> {
    let mut report = Report::new("sync", ctx.global.dry_run);
    let _lock = ctx.lock()?;
    let master = ctx.global.master;
    // Workers with Route53 DNS need nothing from the cloud.
    let offline_name = ctx.offline_cluster_name().ok();
    let needs_cloud = master
        || offline_name
            .as_deref()
            .is_none_or(|name| provider(ctx.global.dns, name) == DnsProvider::Hosts);
    if !needs_cloud {
        render_manifests::render_and_write(ctx, &args.render, &mut report)?;
        return Ok(report);
    }

    let ec2 = ctx.ec2().await?;
    let cluster = ctx.cluster_name(ec2).await?;
    // One listing of the cluster's etcd volumes in every zone serves mount (its zone) and DNS.
    let discovery = discover(ec2, &cluster, None).await?;
    for skipped in &discovery.skipped {
        report.warn(skipped.to_string());
    }
    let mut volumes = discovery.volumes;
    if master {
        let state = mount::mount_here(ctx, ec2, &volumes, &mut report).await?;
        let instance_id = &ctx.identity().await?.instance_id;
        record_own_attachments(&mut volumes, &state, instance_id);
    }
    render_manifests::render_and_write(ctx, &args.render, &mut report)?;
    if publishes(ctx, &cluster) {
        publish_from(ctx, &args.dns, ec2, &cluster, &volumes, &mut report).await?;
    }
    Ok(report)
}

/// After `mount`, the volumes it attached are attached here: DNS is computed from that instead of
/// asking the cloud again.
fn record_own_attachments(volumes: &mut [EtcdVolume], state: &State, instance_id: &str) {
    for mounted in &state.volumes {
        if let Some(volume) = volumes.iter_mut().find(|v| v.id == mounted.volume_id) {
            if volume.attachment.is_none() {
                volume.attachment = Some(VolumeAttachment {
                    instance_id: instance_id.to_owned(),
                    device: mounted.device.display().to_string(),
                    state: "attached".into(),
                });
            }
        }
    }
}
