//! Running another program of the node (kOps' channels tool): no stdin, its output captured,
//! killed when it outlasts its time.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, Result};

/// What a finished program said.
#[derive(Clone, Debug)]
pub struct Finished {
    pub success: bool,
    /// How it ended, e.g. `exit status: 1`.
    pub status: String,
    /// Its stdout, then its stderr.
    pub output: String,
}

/// Runs `program` with `args`; `None` when it outlasts `timeout` (it is killed).
pub async fn run_with_timeout(
    program: &Path,
    args: &[&str],
    timeout: Duration,
) -> Result<Option<Finished>> {
    let child = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting `{}`", program.display()))?;
    let Ok(output) = tokio::time::timeout(timeout, child.wait_with_output()).await else {
        return Ok(None);
    };
    let output = output.with_context(|| format!("running `{}`", program.display()))?;
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    Ok(Some(Finished {
        success: output.status.success(),
        status: output.status.to_string(),
        output: text,
    }))
}
