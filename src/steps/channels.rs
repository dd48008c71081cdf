//! The channels step: each addon channel applied with kOps' `channels` tool, as kOps' protokube
//! did every minute up to kOps 1.35 (`protokube/pkg/protokube/channels.go`). Every channel is
//! tried; the failing ones are named together and fail the run. A dry run runs nothing. The
//! caller has waited for the Kubernetes API to answer.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Result};

use crate::error::NotReady;
use crate::host::{FileKind, Host};
use crate::kube::channels::{apply_channel, channel_args, CHANNELS_TOOL};
use crate::plan::kops::channel_unchanged;
use crate::report::{Action, Change, ChangeKind, Report};
use crate::settings::Settings;

pub async fn run(settings: &Settings, host: &dyn Host, report: &mut Report) -> Result<()> {
    let tool = channels_tool(settings, host)?;
    let mut failed = Vec::new();
    let mut all_not_ready = true;
    for channel in &settings.channels {
        let command = format!("channels {}", channel_args(channel).join(" "));
        if settings.dry_run {
            report.push(Change {
                kind: ChangeKind::Channel,
                target: channel.clone(),
                action: Action::Update,
                detail: format!("would run `{command}`"),
            });
            continue;
        }
        tracing::info!("running `{command}`");
        match apply_channel(host, &tool, channel, settings.waits.deadline).await {
            Ok(run) if run.success => {
                tracing::debug!("channels tool for `{channel}`: {}", run.output);
                let unchanged = channel_unchanged(&run.output);
                report.push(Change {
                    kind: ChangeKind::Channel,
                    target: channel.clone(),
                    action: if unchanged {
                        Action::Unchanged
                    } else {
                        Action::Update
                    },
                    detail: if unchanged {
                        "no update required".to_owned()
                    } else {
                        format!("applied with `{command}`")
                    },
                });
            }
            Ok(run) => {
                tracing::error!(
                    "kOps' channels tool failed for `{channel}` ({}): {}",
                    run.status,
                    run.output
                );
                all_not_ready = false;
                failed.push(format!("`{channel}` ({})", run.status));
            }
            Err(err) => {
                all_not_ready &= err
                    .chain()
                    .any(<dyn std::error::Error + 'static>::is::<NotReady>);
                tracing::error!("{}", crate::error::one_line(&err));
                failed.push(format!("`{channel}` ({})", crate::error::one_line(&err)));
            }
        }
    }
    if failed.is_empty() {
        return Ok(());
    }
    let message = format!(
        "kOps' channels tool `{}` failed for {}; the other channels were applied (its output \
         is in the log)",
        tool.display(),
        failed.join(", ")
    );
    Err(if all_not_ready {
        NotReady(message).into()
    } else {
        anyhow!(message)
    })
}

/// Where kOps' channels tool is: `<root>/opt/kops/bin/channels`, where nodeup installs it; in
/// kOps' container (`--containerized=true`, 1.12–1.20), where it is absent, the tool of the
/// container's `PATH` (the image shipped `/usr/bin/channels`).
fn channels_tool(settings: &Settings, host: &dyn Host) -> Result<PathBuf> {
    let installed = settings.root.resolve(CHANNELS_TOOL)?;
    if !settings.containerized || host.kind(&installed)? == FileKind::File {
        return Ok(installed);
    }
    let search = std::env::var("PATH").unwrap_or_default();
    for dir in search.split(':').filter(|d| d.starts_with('/')) {
        let candidate = Path::new(dir).join("channels");
        if host.kind(&candidate)? == FileKind::File {
            return Ok(candidate);
        }
    }
    Ok(installed)
}
