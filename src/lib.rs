//! protokube: brings a Kubernetes control plane up on cloud machines before the Kubernetes API
//! exists. This crate holds everything; `main.rs` only parses, sets up logging, runs and exits.
//!
//! A run: `cli` parses the flags, `settings` validates them (and what derives from them) before
//! anything else, a command in `cmd` builds the `snapshot` of what the run knows and runs its
//! `steps`, each planning in `plan` (pure) and applying through `apply` (effects) against the
//! `cloud` traits; the `report` collects what changed.

#![warn(unreachable_pub)]

mod apply;
mod cli;
mod cloud;
mod cmd;
mod daemon;
mod dns;
mod error;
mod etcd;
mod flags;
mod gossip;
mod home;
mod host;
mod identity;
mod kube;
mod logging;
mod metrics;
mod names;
mod paths;
mod plan;
mod providers;
mod proxy;
mod report;
mod settings;
mod snapshot;
mod spec;
mod state;
mod steps;
mod version;
mod wait;

// The doors. Everything else is the crate's own (`pub(crate)` or narrower; `unreachable_pub`
// keeps it so): what the binary needs, and `testing` for this repository's integration tests.
pub use cli::{scan_args, usage_error_line, Cli, Command};
pub use daemon::INTERVAL as DAEMON_INTERVAL;
pub use error::ExitCode;
pub use host::linux::stderr_is_journal;
pub use logging::{init as init_logging, print_error_line, set_stderr_is_journal};
pub use report::{OutputFormat, Report, ReportError};
pub use version::BuildInfo;

/// What this repository's integration tests (`tests/it`) reach beyond the binary: the traits
/// their cloud doubles implement, and the pure parsers and renderers they test with arbitrary
/// input and golden files. Not an interface for anyone else; it changes with the tests.
#[doc(hidden)]
pub mod testing {
    pub use crate::cloud::tags::KopsTags;
    pub use crate::cloud::{
        AttachOutcome, AttachmentState, Cloud, CloudClients, CloudVolume, DeviceNaming,
        InstanceApi, InstanceInfo, InstanceMetadata, MetadataItem, MetadataWords, Placement,
        VolumeApi, VolumeAttachment, VolumeQuery, VolumeState,
    };
    pub use crate::dns::zoned::api::{ZoneApi, ZoneService};
    pub use crate::error::NotReady;
    pub use crate::etcd::{parse_etcd_tag, EtcdMembership};
    pub use crate::host::linux::LinuxHost;
    pub use crate::names::is_dns1123_label;
    pub use crate::plan::dns::hosts_block::{
        managed_records, update_hosts, HostRecords, GUARD_BEGIN, GUARD_END,
    };
    pub use crate::plan::manifests::etcd::{EtcdNode, EtcdOptions, EtcdPodParams, EtcdTls};
    pub use crate::plan::manifests::flags::{format_go_duration, parse_go_duration, FlagTable};
    pub use crate::plan::manifests::templates::{
        compile_templates, quote_yaml, render, validate_pod, BUILTIN_TEMPLATES,
    };
    pub use crate::plan::manifests::{render_all, Manifest, RenderInputs};
    pub use crate::plan::mounts::parse_mountinfo;
    pub use crate::plan::state::MountedVolume;
    pub use crate::providers::aws::devices::EbsDevices;
    pub use crate::report::ChangeKind;
    pub use crate::settings::read_spec;
    pub use crate::spec::{ClusterDocument, EtcdClusterSpec};

    /// Runs the command line `cli` on this machine, as the binary does, against a test's
    /// `cloud` and DNS service `zones`.
    pub async fn run_on_this_node(
        cli: &crate::Cli,
        cloud: &dyn Cloud,
        zones: &dyn ZoneService,
        report: &mut crate::Report,
    ) -> anyhow::Result<()> {
        let settings = crate::settings::Settings::resolve(cli.flags()?, &LinuxHost)?;
        crate::run_with(&cli.to_run(), &settings, cloud, zones, &LinuxHost, report).await
    }
}

use anyhow::{Context as _, Result};

use crate::cloud::{AccessDenied, Cloud};
use crate::dns::zoned::api::ZoneService;
use crate::host::linux::LinuxHost;
use crate::host::Host;
use crate::providers::Connected;
use crate::settings::Settings;

/// Runs the parsed command line against its cloud; what it did goes into `report`, also when it fails.
pub async fn run(cli: &Cli, report: &mut Report) -> Result<()> {
    note_ignored_flags(cli, report);
    execute(cli, report).await
}

/// The old daemon's invocation (no subcommand): `sync` every `interval` until SIGTERM or
/// SIGINT; `each` gets every run's report and outcome (a failed run is reported and the next one
/// tried, as the old daemon did). A bad flag is the unit's mistake: an error now, not a failure
/// every minute.
pub async fn run_daemon(
    cli: &Cli,
    interval: std::time::Duration,
    mut each: impl FnMut(&Report, &Result<()>),
) -> Result<()> {
    let flags = cli.flags()?;
    let gossip_member = flags.gossip_member;
    let mut pause = daemon::Pause::new(interval)?;
    let first_run_done = tokio::sync::Notify::new();
    let runs = runs_until_stopped(cli, &mut pause, &mut each, &first_run_done);
    if gossip_member {
        // A gossip cluster's unit: the member runs beside the runs, for as long as they do,
        // from the end of the first (which learns and records what the member starts from).
        tokio::select! {
            () = runs => {}
            () = async {
                first_run_done.notified().await;
                gossip_beside_runs(cli).await;
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
    pause: &mut daemon::Pause,
    each: &mut impl FnMut(&Report, &Result<()>),
    first_run_done: &tokio::sync::Notify,
) {
    let mut first = true;
    loop {
        let mut report = Report::new("sync", cli.global.dry_run);
        if std::mem::take(&mut first) {
            note_ignored_flags(cli, &mut report);
        }
        let started = std::time::SystemTime::now();
        let clock = std::time::Instant::now();
        let result = execute(cli, &mut report).await;
        if let Err(err) = &result {
            record_error(&mut report, err);
        }
        conclude(cli, &report, &result, started, clock.elapsed());
        each(&report, &result);
        first_run_done.notify_one();
        if !pause.next().await {
            break;
        }
    }
}

/// The gossip member beside the old daemon's runs: started from the node's settings and
/// cloud (again a minute later when that fails), then kept — the hosts block from the view —
/// without the run lock, which the runs in this process hold (the block is written in place,
/// planned again when a run wrote it in between).
async fn gossip_beside_runs(cli: &Cli) {
    loop {
        let started = async {
            let settings = Settings::resolve(cli.flags()?, &LinuxHost)?;
            let connect = cli.global.cloud.registered()?.connect;
            let Connected { cloud, .. } = connect(&settings, &LinuxHost)?;
            let mut snapshot = snapshot::Snapshot::new(
                &settings,
                &*cloud,
                &LinuxHost,
                snapshot::VolumeScope::Region,
            );
            home::start(&mut snapshot, connect).await
        };
        match started.await {
            Ok(running) => running.keep(&LinuxHost, false, &|| {}).await,
            Err(err) => {
                tracing::error!(
                    "gossip: the member did not start: {}",
                    error::one_line(&err)
                );
                tokio::time::sleep(daemon::INTERVAL).await;
            }
        }
    }
}

/// Names, once per start, the old daemon's flags that mean nothing here: kOps' nodeup writes
/// them for every node (the gossip mesh's, the etcd backup's), so this is a fact, not a
/// warning.
fn note_ignored_flags(cli: &Cli, report: &mut Report) {
    let ignored = cli.legacy.ignored.given();
    if !ignored.is_empty() {
        report.note(format!(
            "flags of the old protokube daemon that mean nothing here were ignored: {}",
            ignored.join(", ")
        ));
    }
}

/// How long past its deadline a run may still be finishing what it waits on before it is cut
/// short: every wait ends at the deadline by itself; this is the backstop.
const PAST_DEADLINE: std::time::Duration = std::time::Duration::from_secs(5);

/// One run of the command line: settings, then the command against the cloud `--cloud` names,
/// ended by the run's deadline (`--timeout`) whatever it waits on.
async fn execute(cli: &Cli, report: &mut Report) -> Result<()> {
    let settings = Settings::resolve(cli.flags()?, &LinuxHost)?;
    let result = connect_and_run(cli, &settings, report).await;
    result.map_err(|err| explain_denied(err, &settings))
}

/// The command against the cloud `--cloud` names, ended by the run's deadline whatever it
/// waits on.
async fn connect_and_run(cli: &Cli, settings: &Settings, report: &mut Report) -> Result<()> {
    let Connected { cloud, zones } =
        (cli.global.cloud.registered()?.connect)(settings, &LinuxHost)?;
    let cut_off = settings.deadline.instant() + PAST_DEADLINE;
    let command = cli.to_run();
    let run = run_with(&command, settings, &*cloud, &*zones, &LinuxHost, report);
    // The long-running member is not cut off by --timeout: each of its steps has its own.
    let long_running = matches!(&command, Command::Gossip(args) if !args.once);
    let cut_off = if long_running {
        tokio::time::Instant::now() + std::time::Duration::from_hours(100 * 365 * 24)
    } else {
        cut_off.into()
    };
    let result = match tokio::time::timeout_at(cut_off, run).await {
        Ok(result) => result,
        Err(_) => Err(error::NotReady(format!(
            "the run did not finish within --timeout ({}); what it did is reported, and the next \
             run goes on from there",
            humantime::format_duration(settings.deadline.timeout())
        ))
        .into()),
    };
    report.cloud_calls = Some(report::CloudCalls {
        cloud: settings.provider.name,
        by_operation: cloud.calls(),
    });
    result
}

/// Ends a run (the binary's, or one of the daemon's): its exit code, its last log line, and the
/// metrics file when `--metrics-file` asks for one (a failure to write it is logged and does not
/// change the exit code). The last line is the error (`protokube: error: …`, one line; with
/// `--log-format json` an `error` event) or, for a run that succeeded, `run finished`; with
/// JSON either carries the run's figures as fields.
pub fn conclude(
    cli: &Cli,
    report: &Report,
    result: &Result<()>,
    started: std::time::SystemTime,
    elapsed: std::time::Duration,
) -> ExitCode {
    let code = exit_code(cli.global.detailed_exitcode, report, result);
    let changes = report
        .changes
        .iter()
        .filter(|c| c.action != report::Action::Unchanged)
        .count();
    let cloud = report.cloud_calls.as_ref().map(|calls| calls.cloud);
    let cloud_calls = report
        .cloud_calls
        .as_ref()
        .map_or(0, |calls| calls.by_operation.values().sum::<u64>());
    let duration_ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
    macro_rules! last_line {
        ($level:ident, $($message:tt)+) => {
            tracing::$level!(
                command = %report.command,
                exit_code = code.code(),
                changed = report.changed,
                changes,
                cloud,
                cloud_calls,
                duration_ms,
                $($message)+
            )
        };
    }
    match result {
        Err(err) if cli.log_format() == logging::LogFormat::Json => {
            last_line!(error, "{}", error::one_line(err));
        }
        Err(err) => logging::print_error_line(&error_line(err)),
        Ok(()) => last_line!(info, "run finished"),
    }
    if let Some(path) = &cli.global.metrics_file {
        let run = metrics::RunMetrics {
            report,
            exit_code: code.code(),
            started,
            duration: elapsed,
            volumes_mounted: report.volumes_mounted,
        };
        write_metrics_file(path, &run);
    }
    code
}

/// Writes the metrics file at `path` for `run` (atomically, after the previous one it reads
/// back); a failure is logged.
fn write_metrics_file(path: &std::path::Path, run: &metrics::RunMetrics<'_>) {
    let previous = metrics::read_previous(&LinuxHost, path);
    let written = metrics::render(run, previous.as_deref()).and_then(|text| {
        host::linux::files::write_atomic(path, text.as_bytes(), 0o644)
            .map(drop)
            .with_context(|| format!("writing the metrics file `{}`", path.display()))
    });
    if let Err(err) = written {
        tracing::error!("{}", error::one_line(&err));
    }
}

/// The long-running member's metrics file (`--metrics-file`), written as it goes; a failure
/// is logged.
fn write_gossip_metrics(settings: &Settings) {
    let Some(path) = &settings.metrics_file else {
        return;
    };
    let report = Report::new("gossip", false);
    let run = metrics::RunMetrics {
        report: &report,
        exit_code: 0,
        started: std::time::SystemTime::now(),
        duration: std::time::Duration::ZERO,
        volumes_mounted: None,
    };
    write_metrics_file(path, &run);
}

/// A denied permission, said with the role that lacks it (kOps' role names) and where the
/// policy is documented.
fn explain_denied(err: anyhow::Error, settings: &Settings) -> anyhow::Error {
    let Some(denied) = AccessDenied::in_chain(&err) else {
        return err;
    };
    let cluster = settings
        .cluster
        .as_ref()
        .map_or("<cluster>", |c| c.name.as_str());
    let (role, section) = (settings.provider.denied_to)(settings.master, cluster);
    let hint = format!(
        "this instance's credentials lack `{}`: grant it to {role}; {section} lists every \
         permission protokube uses",
        denied.permission
    );
    err.context(hint)
}

/// Runs `command` with validated settings against `cloud`, the DNS service `zones` and the
/// node `host`.
async fn run_with(
    command: &Command,
    settings: &Settings,
    cloud: &dyn Cloud,
    zones: &dyn ZoneService,
    host: &dyn Host,
    report: &mut Report,
) -> Result<()> {
    match command {
        Command::DiscoverVolumes => cmd::discover_volumes::run(settings, cloud, host, report).await,
        Command::Mount => cmd::mount::run(settings, cloud, host, report).await,
        Command::RenderManifests(_) => {
            cmd::render_manifests::run(settings, cloud, host, report).await
        }
        Command::PublishDns(_) => cmd::publish_dns::run(settings, cloud, zones, host, report).await,
        Command::Sync(_) => cmd::sync::run(settings, cloud, zones, host, report).await,
        Command::Reset(_) => cmd::reset::run(settings, cloud, zones, host, report).await,
        Command::ApplyChannels => cmd::apply_channels::run(settings, host, report).await,
        Command::LabelNode => cmd::label_node::run(settings, host, report).await,
        Command::Gossip(args) => {
            let metrics = || write_gossip_metrics(settings);
            cmd::gossip::run(
                settings,
                cloud,
                host,
                args.once,
                report,
                daemon::stopped(),
                home::Wiring {
                    connect: providers::registry(settings.provider.name)
                        .context("the run's provider is not registered")?
                        .connect,
                    metrics: &metrics,
                },
            )
            .await
        }
        // Answered by the binary before any setting is read.
        Command::Version => Ok(()),
    }
}

/// The exit code of a run: for a failure the error's own, else 2 when something changed and
/// `--detailed-exitcode` asks for it, else 0.
pub fn exit_code(detailed_exitcode: bool, report: &Report, result: &Result<()>) -> ExitCode {
    match result {
        Err(err) => ExitCode::for_error(err),
        Ok(()) if report.master_flag_missing && detailed_exitcode => ExitCode::MasterFlagMissing,
        Ok(()) if report.changed && detailed_exitcode => ExitCode::Changed,
        Ok(()) => ExitCode::Done,
    }
}

/// Records a failure in the report (the `-o json` form carries it).
pub fn record_error(report: &mut Report, err: &anyhow::Error) {
    report.error = Some(ReportError {
        message: error::one_line(err),
        exit_code: ExitCode::for_error(err).code(),
    });
}

/// One line for stderr: the error and its causes, joined, with no line breaks inside.
pub fn error_line(err: &anyhow::Error) -> String {
    format!("protokube: error: {}", error::one_line(err))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::DnsKind;

    /// The settings a command line resolves to (`sync` as the command), on this machine's `/`.
    fn settings(args: &[&str]) -> Result<Settings> {
        let cli = Cli::parse_from(
            [
                "protokube",
                "sync",
                "--root",
                "/",
                "--cluster-id",
                "c.example.com",
            ]
            .iter()
            .chain(args),
        )
        .map_err(|err| anyhow::anyhow!("{err}"))?;
        Settings::resolve(cli.flags()?, &LinuxHost)
    }

    #[test]
    fn every_registered_provider_says_its_own_defaults() {
        for (name, service) in [("aws", "Route53"), ("gce", "Cloud DNS")] {
            let registered = crate::providers::registry(name).unwrap();
            assert_eq!(registered.provider.name, name);
            assert_eq!(registered.provider.zone_service, service);
            let settings = settings(&["--cloud", name]).unwrap();
            assert_eq!(settings.provider.name, name);
            // Its own DNS service by default, and each endpoint flag at its default.
            assert_eq!(settings.cluster.unwrap().dns, DnsKind::Zones, "{name}");
            for endpoint in registered.provider.endpoints {
                assert_eq!(
                    settings.endpoints[endpoint.flag], endpoint.default,
                    "{name}"
                );
            }
        }
    }

    #[test]
    fn dns_takes_each_services_names_on_its_own_cloud_only() {
        for (cloud, own, others) in [
            (
                "aws",
                ["route53", "aws-route53"],
                ["clouddns", "google-clouddns"],
            ),
            (
                "gce",
                ["clouddns", "google-clouddns"],
                ["route53", "aws-route53"],
            ),
        ] {
            for name in own.iter().chain(&["zones"]) {
                let settings = settings(&["--cloud", cloud, "--dns", name]).unwrap();
                assert_eq!(
                    settings.cluster.unwrap().dns,
                    DnsKind::Zones,
                    "{cloud} {name}"
                );
            }
            for name in others {
                let err = settings(&["--cloud", cloud, "--dns", name]).unwrap_err();
                assert_eq!(ExitCode::for_error(&err), ExitCode::Usage, "{cloud} {name}");
                assert!(err.to_string().contains(name), "{err}");
            }
            for (name, kind) in [
                ("hosts", DnsKind::Hosts),
                ("gossip", DnsKind::Hosts),
                ("none", DnsKind::None),
            ] {
                let settings = settings(&["--cloud", cloud, "--dns", name]).unwrap();
                assert_eq!(settings.cluster.unwrap().dns, kind, "{cloud} {name}");
            }
        }
        // A name no provider answers to is a usage error naming it; a word that is no name at
        // all is clap's.
        let err = settings(&["--cloud", "aws", "--dns", "digitalocean"]).unwrap_err();
        assert_eq!(ExitCode::for_error(&err), ExitCode::Usage);
        assert!(err.to_string().contains("--dns digitalocean"), "{err}");
        assert!(Cli::parse_from(["protokube", "sync", "--dns", "Route 53"]).is_err());
    }
}
