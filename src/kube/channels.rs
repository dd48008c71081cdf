//! kOps' `channels` tool (`<root>/opt/kops/bin/channels`, installed by nodeup): one run per
//! channel, `channels apply channel <URL> --v=4 --yes`, with protokube's environment (nodeup's
//! `KUBECONFIG` among it), bounded by `--timeout`.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, Result};

use super::ChannelRun;
use crate::error::NotReady;

/// Where nodeup installs the tool, under `--root`.
pub const CHANNELS_TOOL: &str = "/opt/kops/bin/channels";

/// The arguments of one run, as kOps' protokube gave them (`protokube/pkg/protokube/channels.go`).
pub fn channel_args(channel: &str) -> [&str; 5] {
    ["apply", "channel", channel, "--v=4", "--yes"]
}

/// At most this much of the tool's output is kept for the report and the log.
const OUTPUT_TAIL: usize = 4096;

/// Runs the tool at `tool` for `channel`; a run that outlasts `timeout` is killed and is "not
/// ready" (exit 75).
pub async fn apply_channel(tool: &Path, channel: &str, timeout: Duration) -> Result<ChannelRun> {
    let child = tokio::process::Command::new(tool)
        .args(channel_args(channel))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting kOps' channels tool `{}`", tool.display()))?;
    let output = match tokio::time::timeout(timeout, child.wait_with_output()).await {
        Ok(output) => output.with_context(|| format!("running `{}`", tool.display()))?,
        Err(_) => {
            return Err(NotReady(format!(
                "kOps' channels tool did not finish channel `{channel}` within --timeout; retry \
                 later"
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
        success: output.status.success(),
        status: output.status.to_string(),
        output: tail.to_owned(),
    })
}
