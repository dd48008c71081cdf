//! protokube: brings a Kubernetes control plane up on cloud machines before the Kubernetes API
//! exists. This crate holds everything; `main.rs` only parses, sets up logging, runs and exits.
//!
//! A run: `cli` parses the flags, `settings` validates them (and what derives from them) before
//! anything else, a command in `cmd` builds the `snapshot` of what the run knows and runs its
//! `steps`, each planning in `plan` (pure) and applying through `apply` (effects) against the
//! `cloud` traits; the `report` collects what changed.

pub mod apply;
pub mod cli;
pub mod cloud;
pub mod cmd;
pub mod daemon;
pub mod error;
pub mod etcd;
pub mod identity;
pub mod logging;
pub mod names;
pub mod paths;
pub mod plan;
pub mod report;
pub mod settings;
pub mod snapshot;
pub mod spec;
pub mod state;
pub mod steps;
pub mod wait;

use anyhow::Result;

use crate::cli::{Cli, Command};
use crate::cloud::aws::AwsCloud;
use crate::cloud::{AccessDenied, Cloud};
use crate::error::ExitCode;
use crate::report::{Report, ReportError};
use crate::settings::Settings;

/// Runs the parsed command line against AWS; what it did goes into `report`, also when it fails.
pub async fn run(cli: &Cli, report: &mut Report) -> Result<()> {
    warn_ignored_flags(cli, report);
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
    cli.flags()?;
    let mut pause = daemon::Pause::new(interval)?;
    let mut first = true;
    loop {
        let mut report = Report::new("sync", cli.global.dry_run);
        if std::mem::take(&mut first) {
            warn_ignored_flags(cli, &mut report);
        }
        let result = execute(cli, &mut report).await;
        if let Err(err) = &result {
            record_error(&mut report, err);
        }
        each(&report, &result);
        if !pause.next().await {
            break;
        }
    }
    tracing::info!("stopping: the next run is left to the next start");
    Ok(())
}

/// Names, in one warning, the old daemon's flags that mean nothing here.
fn warn_ignored_flags(cli: &Cli, report: &mut Report) {
    let ignored = cli.legacy.ignored.given();
    if !ignored.is_empty() {
        report.warn(format!(
            "flags of the old protokube daemon that mean nothing here were ignored: {}",
            ignored.join(", ")
        ));
    }
}

/// One run of the command line: settings, then the command against AWS.
async fn execute(cli: &Cli, report: &mut Report) -> Result<()> {
    let settings = Settings::resolve(cli.flags()?)?;
    let cloud = AwsCloud::new(settings.waits.timeout);
    run_with(&cli.to_run(), &settings, &cloud, report)
        .await
        .map_err(|err| explain_denied(err, &settings))
}

/// A denied permission, said with the role that lacks it (kOps' role names) and where the
/// policy is documented.
fn explain_denied(err: anyhow::Error, settings: &Settings) -> anyhow::Error {
    let Some(denied) = err.chain().find_map(|c| c.downcast_ref::<AccessDenied>()) else {
        return err;
    };
    let cluster = settings
        .cluster
        .as_ref()
        .map_or("<cluster>", |c| c.name.as_str());
    let role = if settings.master {
        format!("the control-plane role (kOps: `masters.{cluster}`)")
    } else {
        format!("the node role (kOps: `nodes.{cluster}`)")
    };
    let hint = format!(
        "this instance's credentials lack `{}`: grant it to {role}; the README's IAM section lists \
         every permission protokube uses",
        denied.permission
    );
    err.context(hint)
}

/// Runs `command` with validated settings against `cloud`.
pub async fn run_with(
    command: &Command,
    settings: &Settings,
    cloud: &dyn Cloud,
    report: &mut Report,
) -> Result<()> {
    match command {
        Command::DiscoverVolumes => cmd::discover_volumes::run(settings, cloud, report).await,
        Command::Mount => cmd::mount::run(settings, cloud, report).await,
        Command::RenderManifests(_) => cmd::render_manifests::run(settings, cloud, report).await,
        Command::PublishDns(_) => cmd::publish_dns::run(settings, cloud, report).await,
        Command::Sync(_) => cmd::sync::run(settings, cloud, report).await,
        Command::Reset(_) => cmd::reset::run(settings, cloud, report).await,
    }
}

/// The exit code of a run: for a failure the error's own, else 2 when something changed and
/// `--detailed-exitcode` asks for it, else 0.
pub fn exit_code(detailed_exitcode: bool, report: &Report, result: &Result<()>) -> ExitCode {
    match result {
        Err(err) => ExitCode::for_error(err),
        Ok(()) if report.changed && detailed_exitcode => ExitCode::Changed,
        Ok(()) => ExitCode::Done,
    }
}

/// Records a failure in the report (the `-o json` form carries it).
pub fn record_error(report: &mut Report, err: &anyhow::Error) {
    report.error = Some(ReportError {
        message: error_message(err),
        exit_code: ExitCode::for_error(err).code(),
    });
}

/// One line for stderr: the error and its causes, joined, with no line breaks inside.
pub fn error_line(err: &anyhow::Error) -> String {
    format!("protokube: error: {}", error_message(err))
}

fn error_message(err: &anyhow::Error) -> String {
    let text = format!("{err:#}");
    let mut line = String::with_capacity(text.len());
    for (i, part) in text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .enumerate()
    {
        if i > 0 {
            line.push_str("; ");
        }
        line.push_str(part);
    }
    line
}
