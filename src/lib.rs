//! protokube: brings a Kubernetes control plane up on cloud machines before the Kubernetes API
//! exists. This crate holds everything; `main.rs` only parses, sets up logging, runs and exits.

pub mod blockdev;
pub mod cli;
pub mod cloud;
pub mod cmd;
pub mod context;
pub mod dns;
pub mod error;
pub mod fsutil;
pub mod identity;
pub mod logging;
pub mod manifests;
pub mod names;
pub mod report;
pub mod spec;
pub mod state;
pub mod volumes;
pub mod wait;

use anyhow::Result;

use crate::cli::{Cli, Command};
use crate::context::Context;
use crate::error::ExitCode;
use crate::report::Report;

/// Runs the parsed command line and returns its report.
pub async fn run(cli: &Cli) -> Result<Report> {
    let ctx = Context::new(cli.global.clone())?;
    match &cli.command {
        Command::DiscoverVolumes(args) => cmd::discover_volumes::run(&ctx, args).await,
        Command::Mount(args) => cmd::mount::run(&ctx, args).await,
        Command::RenderManifests(args) => cmd::render_manifests::run(&ctx, args).await,
        Command::PublishDns(args) => cmd::publish_dns::run(&ctx, args).await,
        Command::Sync(args) => cmd::sync::run(&ctx, args).await,
    }
}

/// The exit code for a finished run.
pub fn exit_code(cli: &Cli, report: &Report) -> ExitCode {
    if report.changed && cli.global.detailed_exitcode {
        ExitCode::Changed
    } else {
        ExitCode::Done
    }
}

/// One line for stderr: the error and its causes, joined, with no line breaks inside.
pub fn error_line(err: &anyhow::Error) -> String {
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
    format!("protokube: error: {line}")
}
