//! kOps' `channels` tool (`<root>/opt/kops/bin/channels`, installed by nodeup): one run per
//! channel, `channels apply channel <URL> --v=4 --yes`, with protokube's environment (nodeup's
//! `KUBECONFIG` among it), bounded by `--timeout`.

use std::path::Path;

use anyhow::{Context as _, Result};

use super::ChannelRun;
use crate::error::NotReady;
use crate::host::{ChildCommand, ChildEnd, Processes};
use crate::wait::Deadline;

/// Where nodeup installs the tool, under `--root`.
pub(crate) const CHANNELS_TOOL: &str = "/opt/kops/bin/channels";

/// The arguments of one run, as kOps' protokube gave them (`protokube/pkg/protokube/channels.go`).
pub(crate) fn channel_args(channel: &str) -> [&str; 5] {
    ["apply", "channel", channel, "--v=4", "--yes"]
}

/// At most this much of the tool's output is kept for the report and the log.
const OUTPUT_TAIL: usize = 4096;

/// Runs the tool at `tool` for `channel` on the node; a run the deadline cuts short is killed
/// with everything it started and is "not ready" (exit 75).
pub(crate) async fn apply_channel(
    processes: &dyn Processes,
    tool: &Path,
    channel: &str,
    deadline: Deadline,
) -> Result<ChannelRun> {
    let command = ChildCommand::new(tool.to_owned(), channel_args(channel));
    let output = processes
        .run(&command, deadline)
        .await
        .context("running kOps' channels tool")?;
    let (success, status) = match output.end {
        ChildEnd::Exited { success, status } => (success, status),
        ChildEnd::Killed => {
            return Err(NotReady(format!(
                "kOps' channels tool did not finish channel `{channel}` within --timeout (it and \
                 what it started were killed); retry later"
            ))
            .into())
        }
    };
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    let text = text.trim();
    let tail = match text.char_indices().rev().nth(OUTPUT_TAIL) {
        Some((at, _)) => &text[at..],
        None => text,
    };
    Ok(ChannelRun {
        success,
        status,
        output: tail.to_owned(),
    })
}
