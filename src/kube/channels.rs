//! kOps' `channels` tool (`<root>/opt/kops/bin/channels`, installed by nodeup): one run per
//! channel, `channels apply channel <URL> --v=4 --yes`, with protokube's environment (nodeup's
//! `KUBECONFIG` among it), bounded by `--timeout`.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, Result};

use super::ChannelRun;
use crate::error::NotReady;
use crate::host::linux::process::run_with_timeout;

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
    let finished = run_with_timeout(tool, &channel_args(channel), timeout)
        .await
        .context("running kOps' channels tool")?
        .ok_or_else(|| {
            NotReady(format!(
                "kOps' channels tool did not finish channel `{channel}` within --timeout; retry \
                 later"
            ))
        })?;
    let text = finished.output.trim();
    let tail = match text.char_indices().rev().nth(OUTPUT_TAIL) {
        Some((at, _)) => &text[at..],
        None => text,
    };
    Ok(ChannelRun {
        success: finished.success,
        status: finished.status,
        output: tail.to_owned(),
    })
}
