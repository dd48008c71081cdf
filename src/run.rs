//! One run of a command that ends: the settings, the provider `--cloud` names connected on the
//! real node, the command against them ended by the run's deadline (`--timeout`), its exit code,
//! its last log line and the metrics file. The old daemon's loop (`serve`) runs its runs here
//! too, with the member beside them.

use std::time::Duration;

use anyhow::{Context as _, Result};

use crate::cli::{Cli, Command};
use crate::cloud::{AccessDenied, Cloud};
use crate::dns::Places;
use crate::error::{self, ExitCode};
use crate::gossip::store::Figures;
use crate::gossip::Handle;
use crate::host::linux::LinuxHost;
use crate::host::Host;
use crate::logging;
use crate::metrics;
use crate::providers::Connected;
use crate::report::{self, Report, ReportError};
use crate::settings::Settings;
use crate::{cmd, host};

/// What runs beside a run when the serve wing drives it: the gossip member, and the rhythm of
/// the loop the run is part of.
#[derive(Clone, Copy, Default)]
pub(crate) struct Beside<'a> {
    pub(crate) member: Option<&'a Handle>,
    pub(crate) every: Option<Duration>,
}

/// Runs the parsed command line against its cloud; what it did goes into `report`, also when
/// it fails.
pub async fn once(cli: &Cli, report: &mut Report) -> Result<()> {
    note_ignored_flags(cli, report);
    execute(cli, report, Beside::default()).await
}

/// Names, once per start, the old daemon's flags that mean nothing here: kOps' nodeup writes
/// them for every node (the gossip mesh's, the etcd backup's), so this is a fact, not a
/// warning.
pub(crate) fn note_ignored_flags(cli: &Cli, report: &mut Report) {
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
const PAST_DEADLINE: Duration = Duration::from_secs(5);

/// One run of the command line: settings, then the command against the cloud `--cloud` names,
/// ended by the run's deadline whatever it waits on.
pub(crate) async fn execute(cli: &Cli, report: &mut Report, beside: Beside<'_>) -> Result<()> {
    let mut settings = Settings::resolve(cli.flags()?, &LinuxHost)?;
    settings.repeat = beside.every;
    if let Some(refused) = refused_here(&cli.to_run(), &settings) {
        return Err(refused.into());
    }
    let result = connect_and_run(cli, &settings, beside.member, report).await;
    result.map_err(|err| explain_denied(err, &settings))
}

async fn connect_and_run(
    cli: &Cli,
    settings: &Settings,
    member: Option<&Handle>,
    report: &mut Report,
) -> Result<()> {
    let Connected { cloud, zones } = (cli.cloud.connect)(settings, &LinuxHost)?;
    let cut_off = tokio::time::Instant::from(settings.deadline.instant() + PAST_DEADLINE);
    let places = Places {
        zones: &*zones,
        member,
    };
    let command = cli.to_run();
    let run = run_with(&command, settings, &*cloud, places, &LinuxHost, report);
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

/// On a cloud where protokube is the gossip member only, a command whose job another component
/// does there, refused before anything is asked: etcd's volumes (`mount`, `discover-volumes`,
/// `reset`, `sync`), the names in DNS zones (`publish-dns` to zones).
fn refused_here(command: &Command, settings: &Settings) -> Option<error::UsageError> {
    let to_zones = settings
        .cluster
        .as_ref()
        .map(|c| c.dns)
        .or(settings.dns_flag)
        == Some(crate::flags::DnsKind::Zones);
    let (volumes, zones) = match command {
        Command::DiscoverVolumes | Command::Mount | Command::Reset(_) => (true, false),
        Command::Sync(_) => (true, true),
        Command::PublishDns(_) => (false, to_zones),
        _ => (false, false),
    };
    crate::providers::member_only::refused(settings.provider, command.name(), volumes, zones)
}

/// Runs `command` with validated settings against `cloud`, the places names go and the node
/// `host`.
pub(crate) async fn run_with(
    command: &Command,
    settings: &Settings,
    cloud: &dyn Cloud,
    places: Places<'_>,
    host: &dyn Host,
    report: &mut Report,
) -> Result<()> {
    match command {
        Command::DiscoverVolumes => cmd::discover_volumes::run(settings, cloud, host, report).await,
        Command::Mount => cmd::mount::run(settings, cloud, host, report).await,
        Command::RenderManifests(_) => {
            cmd::render_manifests::run(settings, cloud, host, report).await
        }
        Command::PublishDns(_) => {
            cmd::publish_dns::run(settings, cloud, places, host, report).await
        }
        Command::Sync(_) => cmd::sync::run(settings, cloud, places, host, report).await,
        Command::Reset(_) => cmd::reset::run(settings, cloud, places, host, report).await,
        Command::ApplyChannels => cmd::apply_channels::run(settings, host, report).await,
        Command::LabelNode => cmd::label_node::run(settings, host, report).await,
        // Served by `serve` (it does not end) and by the binary (before any setting is read).
        Command::Gossip(_) | Command::Version => Ok(()),
    }
}

/// Ends a run (the binary's, or one of the daemon's): its exit code, its last log line, and the
/// metrics file when `--metrics-file` asks for one (with the member's figures when one runs
/// beside; a failure to write it is logged and does not change the exit code). The last line
/// is the error (`protokube: error: …`, one line; with `--log-format json` an `error` event)
/// or, for a run that succeeded, `run finished`; with JSON either carries the run's figures.
pub fn conclude(
    cli: &Cli,
    report: &Report,
    result: &Result<()>,
    started: std::time::SystemTime,
    elapsed: Duration,
) -> ExitCode {
    conclude_beside(cli, report, result, (started, elapsed), None)
}

pub(crate) fn conclude_beside(
    cli: &Cli,
    report: &Report,
    result: &Result<()>,
    (started, elapsed): (std::time::SystemTime, Duration),
    gossip: Option<&Figures>,
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
        write_metrics_file(path, &run, gossip);
    }
    code
}

/// Writes the metrics file at `path` for `run` (atomically, after the previous one it reads
/// back); a failure is logged.
pub(crate) fn write_metrics_file(
    path: &std::path::Path,
    run: &metrics::RunMetrics<'_>,
    gossip: Option<&Figures>,
) {
    let previous = metrics::read_previous(&LinuxHost, path);
    let written = metrics::render(run, previous.as_deref(), gossip).and_then(|text| {
        host::linux::files::write_atomic(path, text.as_bytes(), 0o644)
            .map(drop)
            .with_context(|| format!("writing the metrics file `{}`", path.display()))
    });
    if let Err(err) = written {
        tracing::error!("{}", error::one_line(&err));
    }
}

/// A denied permission, said with the role that lacks it (kOps' role names) and where the
/// policy is documented.
pub(crate) fn explain_denied(err: anyhow::Error, settings: &Settings) -> anyhow::Error {
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
        for registered in crate::providers::all() {
            let name = registered.provider.name;
            let settings = settings(&["--cloud", name]).unwrap();
            assert_eq!(settings.provider.name, name);
            // Its own DNS service by default where it has one, and each endpoint flag at its
            // default.
            let expected = if registered.provider.zone_service_names.is_empty() {
                DnsKind::Hosts
            } else {
                DnsKind::Zones
            };
            assert_eq!(settings.cluster.unwrap().dns, expected, "{name}");
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
