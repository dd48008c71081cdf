//! `publish-dns`: the names etcd peers, nodes and users need, computed from cloud state, to
//! Route53 or to `/etc/hosts`.

use std::time::Duration;

use anyhow::Result;

use crate::cli::DnsProvider;
use crate::cloud::InstanceApi;
use crate::cmd::discover_volumes::discover;
use crate::context::Context;
use crate::dns::publish_hosts;
use crate::dns::records::desired_records;
use crate::dns::route53::{publish, PublishOptions};
use crate::dns::zones::effective_rules;
use crate::report::Report;
use crate::volumes::EtcdVolume;
use crate::wait::{Backoff, Progress};

/// Publish the names etcd peers, nodes and users need, to Route53 or /etc/hosts.
///
/// Records are a function of cloud state (volume attachments, running masters), so every node
/// computes the same answer: etcd-<member><suffix> and etcd-<key>-<member><suffix> to the private
/// IP of the instance the member's volume is attached to, api.internal.<cluster> to the masters'
/// private IPs, the public API name to their public IPs. Route53 (masters only): only the
/// cluster's names are read, one change batch per zone, TTL 60, records owned through a TXT
/// record beside them. Hosts: kOps' guarded block in <root>/etc/hosts.
#[derive(Clone, Debug, Default, clap::Args)]
#[group(skip)]
pub struct Args {
    /// Wait until Route53 reports the change INSYNC (bounded by --timeout).
    #[arg(long, env = "PROTOKUBE_WAIT")]
    pub wait: bool,
}

/// The provider in force: `--dns`, else hosts for `.k8s.local` clusters, else Route53.
pub fn provider(flag: Option<DnsProvider>, cluster: &str) -> DnsProvider {
    flag.unwrap_or(if cluster.ends_with(".k8s.local") {
        DnsProvider::Hosts
    } else {
        DnsProvider::Route53
    })
}

pub async fn run(ctx: &Context, args: &Args) -> Result<Report> {
    let mut report = Report::new("publish-dns", ctx.global.dry_run);
    let ec2 = ctx.ec2().await?;
    let cluster = ctx.cluster_name(ec2).await?;
    if !publishes(ctx, &cluster) {
        return Ok(report);
    }
    let _lock = ctx.lock()?;
    let discovery = discover(ec2, &cluster, None).await?;
    for skipped in &discovery.skipped {
        report.warn(skipped.to_string());
    }
    publish_from(ctx, args, ec2, &cluster, &discovery.volumes, &mut report).await?;
    Ok(report)
}

/// Whether this node publishes anything (says why not in the log).
pub fn publishes(ctx: &Context, cluster: &str) -> bool {
    match provider(ctx.global.dns, cluster) {
        DnsProvider::None => {
            tracing::info!("--dns none: nothing to publish");
            false
        }
        DnsProvider::Route53 if !ctx.global.master => {
            tracing::info!("only control-plane nodes publish to Route53 (--master is not set)");
            false
        }
        _ => true,
    }
}

/// Publishes the records computed from `volumes` (the cluster's etcd volumes in every zone) and
/// the running masters. The caller holds the lock.
pub async fn publish_from(
    ctx: &Context,
    args: &Args,
    instances: &dyn InstanceApi,
    cluster: &str,
    volumes: &[EtcdVolume],
    report: &mut Report,
) -> Result<()> {
    let masters = instances.running_masters(cluster).await?;
    let internal_suffix = ctx.internal_suffix(cluster)?;
    let public_name = ctx
        .spec
        .as_ref()
        .and_then(|s| s.spec.master_public_name.clone())
        .unwrap_or_else(|| format!("api.{cluster}"));
    let desired = desired_records(cluster, &internal_suffix, &public_name, volumes, &masters);
    match provider(ctx.global.dns, cluster) {
        DnsProvider::Hosts => publish_hosts(&ctx.root, &desired, ctx.global.dry_run, report),
        DnsProvider::Route53 => {
            let dns = ctx.route53().await?;
            let rules = effective_rules(
                &ctx.global.zones,
                ctx.spec.as_ref().and_then(|s| s.spec.dns_zone.as_deref()),
            )?;
            let options = PublishOptions {
                dry_run: ctx.global.dry_run,
                wait: args.wait.then_some(ctx.global.timeout),
                progress: Progress::detect(ctx.global.no_progress),
                wait_backoff: Backoff::new(Duration::from_secs(1), Duration::from_secs(5)),
            };
            publish(&dns, &desired, &rules, cluster, &options, report).await
        }
        DnsProvider::None => Ok(()),
    }
}
