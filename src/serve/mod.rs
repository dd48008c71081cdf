//! What does not end, beside the one-shot runner: the old daemon's loop (kOps' unit: `sync`
//! every minute until stopped, with the gossip member beside its runs on a gossip cluster) and
//! `protokube gossip` (the member alone, or `--once`). The member lives in [`member`]; stop
//! signals in [`signals`]. Not cut off by `--timeout`: each step has its own deadline.

pub(crate) mod member;
pub(crate) mod signals;

use std::cell::RefCell;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;

use self::member::Home;
use self::signals::INTERVAL;
use crate::cli::{Cli, Command};
use crate::error::{self, NotReady};
use crate::gossip::transport::Sockets;
use crate::gossip::Handle;
use crate::host::linux::LinuxHost;
use crate::plan::dns::hosts_block::managed_lines;
use crate::providers::Connected;
use crate::report::{CloudCalls, GossipRecord, GossipReport, Report};
use crate::run::{self, Beside};
use crate::settings::Settings;
use crate::snapshot::{Snapshot, VolumeScope};

/// The old daemon's invocation (no subcommand): `sync` every `interval` until SIGTERM or
/// SIGINT; `each` gets every run's report and outcome (a failed run is reported and the next one
/// tried, as the old daemon did). A bad flag is the unit's mistake: an error now, not a failure
/// every minute. On a gossip cluster the member runs beside the runs, from the end of the first
/// (which learns and records what the member starts from), and its handle reaches the runs.
pub async fn legacy(
    cli: &Cli,
    interval: Duration,
    mut each: impl FnMut(&Report, &Result<()>),
) -> Result<()> {
    let flags = cli.flags()?;
    if cli.cloud.provider.member_only {
        return member_alone(cli, flags.gossip_member).await;
    }
    let mut pause = signals::Pause::new(interval)?;
    let first_run_done = tokio::sync::Notify::new();
    let beside: RefCell<Option<Handle>> = RefCell::new(None);
    let runs = runs_until_stopped(cli, &mut pause, &mut each, &first_run_done, &beside);
    if flags.gossip_member {
        tokio::select! {
            () = runs => {}
            () = async {
                first_run_done.notified().await;
                member_beside_runs(cli, &beside).await;
            } => {}
        }
    } else {
        runs.await;
    }
    tracing::info!("stopping: the next run is left to the next start");
    Ok(())
}

/// The old daemon's runs, one per interval, until a stop signal.
async fn runs_until_stopped(
    cli: &Cli,
    pause: &mut signals::Pause,
    each: &mut impl FnMut(&Report, &Result<()>),
    first_run_done: &tokio::sync::Notify,
    beside: &RefCell<Option<Handle>>,
) {
    let mut first = true;
    loop {
        let mut report = Report::new("sync", cli.global.dry_run);
        if std::mem::take(&mut first) {
            run::note_ignored_flags(cli, &mut report);
        }
        let started = std::time::SystemTime::now();
        let clock = std::time::Instant::now();
        let member = beside.borrow().clone();
        let with = Beside {
            member: member.as_ref(),
            every: Some(pause.interval()),
        };
        let result = run::execute(cli, &mut report, with).await;
        if let Err(err) = &result {
            run::record_error(&mut report, err);
        }
        let figures = member.as_ref().map(Handle::figures);
        run::conclude_beside(
            cli,
            &report,
            &result,
            (started, clock.elapsed()),
            figures.as_ref(),
        );
        each(&report, &result);
        first_run_done.notify_one();
        if !pause.next().await {
            break;
        }
    }
}

/// The gossip member beside the old daemon's runs: started from the node's settings and cloud
/// (again a minute later when that fails), then kept — the hosts block from the view — without
/// the run lock, which the runs in this process hold (the block is written in place, planned
/// again when a run wrote it in between).
async fn member_beside_runs(cli: &Cli, beside: &RefCell<Option<Handle>>) {
    loop {
        match start(cli).await {
            Ok((home, ..)) => {
                *beside.borrow_mut() = Some(home.handle().clone());
                home.keep(&LinuxHost, false, &|_| {}).await;
            }
            Err(err) => {
                tracing::error!(
                    "gossip: the member did not start: {}",
                    error::one_line(&err)
                );
                tokio::time::sleep(INTERVAL).await;
            }
        }
    }
}

/// The old daemon's unit on a cloud where protokube is the gossip member only (kOps' protokube
/// there has no other job): the member alone, kept until a stop signal, started again a minute
/// after a failed start. Without `--gossip` there is nothing to do, as kOps' protokube says.
async fn member_alone(cli: &Cli, gossip: bool) -> Result<()> {
    let cloud = cli.cloud.provider.name;
    if !gossip {
        return Err(error::UsageError(format!(
            "--cloud {cloud}: without --gossip protokube has nothing to do there (etcd-manager \
             runs etcd's volumes, dns-controller the names); kOps' unit passes --gossip=true on \
             gossip clusters"
        ))
        .into());
    }
    tracing::info!("--cloud {cloud}: protokube is the gossip member only here");
    loop {
        let started = tokio::select! {
            started = start(cli) => started,
            () = signals::stopped() => return Ok(()),
        };
        match started {
            Ok((home, settings, _)) => {
                let metrics = |handle: &Handle| write_gossip_metrics(&settings, handle);
                tokio::select! {
                    () = home.keep(&LinuxHost, true, &metrics) => {}
                    () = signals::stopped() => tracing::info!("gossip: stopping"),
                }
                home.stop(&LinuxHost).await;
                return Ok(());
            }
            Err(err) => {
                tracing::error!(
                    "gossip: the member did not start: {}",
                    error::one_line(&err)
                );
                tokio::select! {
                    () = tokio::time::sleep(INTERVAL) => {}
                    () = signals::stopped() => return Ok(()),
                }
            }
        }
    }
}

/// Starts this node's member from the command line's settings and its provider's cloud; also
/// returns the settings and the cloud calls the start made.
async fn start(cli: &Cli) -> Result<(Home, Arc<Settings>, CloudCalls)> {
    let settings = Arc::new(Settings::resolve(cli.flags()?, &LinuxHost)?);
    let connect = cli.cloud.connect;
    let Connected { cloud, .. } = connect(&settings, &LinuxHost)?;
    let mut snapshot = Snapshot::new(&settings, &*cloud, &LinuxHost, VolumeScope::Region);
    let home = Home::start(&mut snapshot, connect, Arc::new(Sockets))
        .await
        .map_err(|err| run::explain_denied(err, &settings))?;
    let calls = CloudCalls {
        cloud: settings.provider.name,
        by_operation: cloud.calls(),
    };
    Ok((home, settings, calls))
}

/// `protokube gossip`: this node as a member of kOps' gossip network, keeping the hosts block
/// from its view until stopped (then it leaves); `--once` joins, writes the view (or, dry,
/// shows it) and leaves.
pub async fn gossip(cli: &Cli, report: &mut Report) -> Result<()> {
    let once = matches!(&cli.command, Some(Command::Gossip(args)) if args.once);
    let (home, settings, calls) = start(cli).await?;
    report.cloud_calls = Some(calls);
    let result = if once {
        once_report(&home, &settings, report).await
    } else {
        let metrics = |handle: &Handle| write_gossip_metrics(&settings, handle);
        tokio::select! {
            () = home.keep(&LinuxHost, true, &metrics) => {}
            () = signals::stopped() => tracing::info!("gossip: stopping"),
        }
        Ok(())
    };
    home.stop(&LinuxHost).await;
    result
}

/// `--once`: waits for a peer (75 when none answered within --timeout), then the view, the
/// hosts block written (or planned) from it, and one change per name.
async fn once_report(home: &Home, settings: &Settings, report: &mut Report) -> Result<()> {
    if !home.joined(settings.deadline).await {
        return Err(NotReady(format!(
            "no gossip peer answered within --timeout ({}) on ports {:?}; the seeds are the \
             cloud's control-plane instances and --gossip-seed",
            settings.deadline.timeout_text(),
            home.ports()
        ))
        .into());
    }
    let view = home.handle().view();
    for warning in &view.skipped {
        report.warn(warning.clone());
    }
    let update = home.write_block(&LinuxHost, true).await?;
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
    tracing::debug!("gossip: leaving as `{}`", home.handle().node());
    Ok(())
}

/// The long-running member's metrics file (`--metrics-file`), written as it goes; a failure
/// is logged.
fn write_gossip_metrics(settings: &Settings, handle: &Handle) {
    let Some(path) = &settings.metrics_file else {
        return;
    };
    let report = Report::new("gossip", false);
    let run = crate::metrics::RunMetrics {
        report: &report,
        exit_code: 0,
        started: std::time::SystemTime::now(),
        duration: Duration::ZERO,
        volumes_mounted: None,
    };
    run::write_metrics_file(path, &run, Some(&handle.figures()));
}
