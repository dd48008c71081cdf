//! The channels step: each addon channel applied with kOps' `channels` tool, as kOps' protokube
//! did every minute up to kOps 1.35 (`protokube/pkg/protokube/channels.go`). Every channel is
//! tried; the failing ones are named together and fail the run. A dry run runs nothing. The
//! caller has waited for the Kubernetes API to answer.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Result};

use crate::error::NotReady;
use crate::host::{FileKind, Host};
use crate::kube::channels::{apply_channel, channel_args, CHANNELS_TOOL};
use crate::plan::kops::{channel_unchanged, DISTROLESS_CHANNELS_TOOL};
use crate::report::{Action, Change, ChangeKind, Report};
use crate::settings::Settings;

pub(crate) async fn run(settings: &Settings, host: &dyn Host, report: &mut Report) -> Result<()> {
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
        match apply_channel(host, &tool, channel, settings.deadline).await {
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

/// Where kOps' channels tool is: `<root>/opt/kops/bin/channels`, where nodeup installs it
/// (kOps 1.21 and later); in kOps' container (`--containerized=true`, 1.12–1.20), where the host
/// has none, where that era's image keeps it: `/channels` at the container's own root (1.19–1.20's
/// distroless image), else the container's `PATH` (1.12–1.18's Debian image: `/usr/bin/channels`).
fn channels_tool(settings: &Settings, host: &dyn Host) -> Result<PathBuf> {
    let installed = settings.root.resolve(CHANNELS_TOOL)?;
    if !(settings.containerized || settings.kops.in_container())
        || host.kind(&installed)? == FileKind::File
    {
        return Ok(installed);
    }
    let image = Path::new(DISTROLESS_CHANNELS_TOOL);
    if host.kind(image)? == FileKind::File {
        return Ok(image.to_owned());
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{ChildEnd, ChildOutput};
    use crate::steps::testing::Bench;

    const BOOTSTRAP: &str = "s3://bucket/k.example.com/addons/bootstrap-channel.yaml";
    const EXTRA: &str = "s3://bucket/k.example.com/addons/extra-channel.yaml";

    /// A master with both channels whose channels tool (where nodeup installs it) ends as
    /// `end`, printing `stdout`.
    fn bench_with_tool(end: ChildEnd, stdout: &str, dry_run: bool) -> Bench {
        let mut bench = Bench::with_flags(&[], |flags| {
            flags.channels = vec![BOOTSTRAP.to_owned(), EXTRA.to_owned()];
        });
        if dry_run {
            bench.dry_run();
        }
        let tool = bench.path(CHANNELS_TOOL);
        bench.host.change(|node| {
            node.programs.insert(
                tool,
                ChildOutput {
                    end,
                    stdout: stdout.as_bytes().to_vec(),
                    stderr: Vec::new(),
                },
            );
        });
        bench
    }

    fn exited(success: bool) -> ChildEnd {
        ChildEnd::Exited {
            success,
            status: if success {
                "exit status: 0"
            } else {
                "exit status: 1"
            }
            .to_owned(),
        }
    }

    fn run_channels(bench: &Bench) -> (Report, Result<()>) {
        let mut report = bench.report();
        let result = Bench::block_on(run(&bench.settings, &bench.host, &mut report));
        (report, result)
    }

    #[test]
    fn each_channel_is_applied_and_a_current_one_reported_unchanged() {
        let bench = bench_with_tool(
            exited(true),
            "I1123 channels.go:1] No update required\n",
            false,
        );
        let (report, result) = run_channels(&bench);
        result.unwrap();
        assert_eq!(
            bench.take_effects(),
            [BOOTSTRAP, EXTRA]
                .map(|c| format!("run {CHANNELS_TOOL} apply channel {c} --v=4 --yes"))
        );
        assert!(report.changes.iter().all(|c| c.action == Action::Unchanged));
        // A dry run runs nothing and says what it would run.
        let bench = bench_with_tool(exited(true), "", true);
        let (report, result) = run_channels(&bench);
        result.unwrap();
        assert!(bench.take_effects().is_empty());
        assert!(report.changes[0]
            .detail
            .starts_with("would run `channels apply channel"));
    }

    #[test]
    fn every_failing_channel_is_named_and_a_killed_run_is_not_ready() {
        let bench = bench_with_tool(exited(false), "error: no such bucket\n", false);
        let (_, result) = run_channels(&bench);
        let err = result.unwrap_err();
        let message = format!("{err:#}");
        assert!(
            message.contains(BOOTSTRAP) && message.contains(EXTRA),
            "{message}"
        );
        assert!(!crate::error::caused_by::<NotReady>(&err));
        // Cut short by the deadline: retried later, not failed.
        let bench = bench_with_tool(ChildEnd::Killed, "", false);
        let (_, result) = run_channels(&bench);
        let err = result.unwrap_err();
        assert!(crate::error::caused_by::<NotReady>(&err), "{err:#}");
    }
}
