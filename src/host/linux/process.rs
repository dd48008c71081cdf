//! Running another program of the node (kOps' channels tool, a kubeconfig's credential
//! plugin): no stdin, in a process group of its own so that the run's deadline kills the program
//! and everything it started, its output read while it runs with only the end of each stream
//! kept, and not waited for past its exit.

use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, Result};
use rustix::process::{kill_process_group, Pid, Signal};
use tokio::io::{AsyncRead, AsyncReadExt as _};
use tokio::time::{sleep_until, Instant};

use crate::error::NotReady;
use crate::host::{ChildCommand, ChildEnd, ChildOutput, OUTPUT_KEPT};
use crate::paths::HostRoot;
use crate::wait::Deadline;

/// After the program exits, how long the output already in its pipes is still read; a process
/// it left behind that keeps them open is not waited for.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(250);

/// Runs `command` until it exits or `deadline` comes (then its whole process group is killed).
pub(crate) async fn run(command: &ChildCommand, deadline: Deadline) -> Result<ChildOutput> {
    let program = &command.program;
    let mut child = tokio::process::Command::new(program)
        .args(&command.args)
        .envs(command.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting `{}`", program.display()))?;
    // The group is the child's own (process_group(0)): its id is the child's.
    let group = child
        .id()
        .and_then(|pid| i32::try_from(pid).ok())
        .and_then(Pid::from_raw);
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let mut out = Tail::default();
    let mut err = Tail::default();
    let end = {
        let reading = async { tokio::join!(out.read_from(stdout), err.read_from(stderr)) };
        tokio::pin!(reading);
        let mut read_all = false;
        let mut exited: Option<(ChildEnd, Instant)> = None;
        let deadline_at = Instant::from_std(deadline.instant());
        loop {
            if let (Some((end, _)), true) = (&exited, read_all) {
                break end.clone();
            }
            let drained_by = exited.as_ref().map(|(_, at)| *at + DRAIN_AFTER_EXIT);
            tokio::select! {
                status = child.wait(), if exited.is_none() => {
                    let status = status
                        .with_context(|| format!("waiting for `{}`", program.display()))?;
                    let end = ChildEnd::Exited {
                        success: status.success(),
                        status: status.to_string(),
                    };
                    exited = Some((end, Instant::now()));
                }
                _ = &mut reading, if !read_all => read_all = true,
                () = sleep_until(drained_by.unwrap_or(deadline_at)), if drained_by.is_some() => {
                    if let Some((end, _)) = exited.take() {
                        break end;
                    }
                }
                () = sleep_until(deadline_at) => {
                    kill_group(group);
                    // Reaped, so no zombie is left; the group is dead already.
                    let _ = child.wait().await;
                    break ChildEnd::Killed;
                }
            }
        }
    };
    // Whatever the program left in its group (a child still holding its output) goes with it.
    kill_group(group);
    Ok(ChildOutput {
        end,
        stdout: out.into_bytes(),
        stderr: err.into_bytes(),
    })
}

/// `systemctl args…` for the host's systemd: through `nsenter` into the host's mount namespace
/// when `--root` is the host seen from a container (as kOps' protokube ran it), so the host's
/// own systemctl talks to its systemd.
fn systemctl(root: &HostRoot, args: &[&str]) -> ChildCommand {
    match super::devices::host_mount_namespace(root) {
        Some(namespace) => {
            let mut all = vec![format!("--mount={}", namespace.display()), "--".to_owned()];
            all.push("systemctl".to_owned());
            all.extend(args.iter().map(|a| (*a).to_owned()));
            ChildCommand::new("nsenter".into(), all)
        }
        None => ChildCommand::new("systemctl".into(), args.iter().copied()),
    }
}

/// Runs `systemctl args…` for the host until `deadline`: whether it succeeded, and what it said.
async fn run_systemctl(
    root: &HostRoot,
    args: &[&str],
    deadline: Deadline,
) -> Result<(bool, String)> {
    let command = systemctl(root, args);
    let output = run(&command, deadline).await?;
    let said = String::from_utf8_lossy(&output.stderr).trim().to_owned();
    match output.end {
        ChildEnd::Exited { success, .. } => Ok((success, said)),
        ChildEnd::Killed => Err(NotReady(format!(
            "`systemctl {}` did not finish within --timeout; retry later",
            args.join(" ")
        ))
        .into()),
    }
}

/// Whether the host's unit is active.
pub(crate) async fn service_active(
    root: &HostRoot,
    unit: &str,
    deadline: Deadline,
) -> Result<bool> {
    Ok(
        run_systemctl(root, &["is-active", "--quiet", unit], deadline)
            .await?
            .0,
    )
}

/// Starts the host's unit, not waiting for it to be up.
pub(crate) async fn start_service(root: &HostRoot, unit: &str, deadline: Deadline) -> Result<()> {
    match run_systemctl(root, &["start", "--no-block", unit], deadline).await? {
        (true, _) => Ok(()),
        (false, said) => anyhow::bail!("`systemctl start --no-block {unit}` failed: {said}"),
    }
}

/// SIGKILL to the child's process group; a group already gone is no error.
fn kill_group(group: Option<Pid>) {
    if let Some(group) = group {
        if let Err(err) = kill_process_group(group, Signal::KILL) {
            if err != rustix::io::Errno::SRCH {
                tracing::debug!("killing process group {}: {err}", group.as_raw_nonzero());
            }
        }
    }
}

/// The last [`OUTPUT_KEPT`] bytes of a stream.
#[derive(Default)]
struct Tail {
    bytes: Vec<u8>,
}

impl Tail {
    fn push(&mut self, chunk: &[u8]) {
        self.bytes.extend_from_slice(chunk);
        // Trimmed in steps, not on every chunk: at most twice the bound is ever held.
        if self.bytes.len() > 2 * OUTPUT_KEPT {
            let excess = self.bytes.len() - OUTPUT_KEPT;
            self.bytes.drain(..excess);
        }
    }

    async fn read_from(&mut self, stream: Option<impl AsyncRead + Unpin>) {
        let Some(mut stream) = stream else {
            return;
        };
        let mut chunk = vec![0u8; 16 << 10];
        while let Ok(read) = stream.read(&mut chunk).await {
            if read == 0 {
                break;
            }
            self.push(&chunk[..read]);
        }
    }

    fn into_bytes(mut self) -> Vec<u8> {
        let excess = self.bytes.len().saturating_sub(OUTPUT_KEPT);
        self.bytes.drain(..excess);
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> ChildCommand {
        ChildCommand::new("/bin/sh".into(), ["-c", script])
    }

    fn block_on<F: std::future::Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(future)
    }

    #[test]
    fn output_and_status_of_a_finished_program() {
        let mut command = sh("echo out; echo err >&2; echo \"$GREETING\"; exit 3");
        command.env.push(("GREETING".into(), "hello".into()));
        let done = block_on(run(&command, Deadline::after(Duration::from_secs(10)))).unwrap();
        assert_eq!(done.stdout, b"out\nhello\n");
        assert_eq!(done.stderr, b"err\n");
        assert!(
            matches!(&done.end, ChildEnd::Exited { success: false, status } if status.contains('3')),
            "{done:?}"
        );
    }

    #[test]
    fn the_deadline_kills_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("grandchild");
        let script = format!("sleep 300 & echo $! > {}; wait", pid_file.display());
        let started = std::time::Instant::now();
        let done = block_on(run(&sh(&script), Deadline::after(Duration::from_secs(1)))).unwrap();
        assert_eq!(done.end, ChildEnd::Killed);
        assert!(started.elapsed() < Duration::from_secs(10));
        #[allow(clippy::disallowed_methods)]
        let grandchild = std::fs::read_to_string(&pid_file).unwrap();
        assert_gone(grandchild.trim());
    }

    #[test]
    fn a_child_left_holding_the_output_is_not_waited_for() {
        let started = std::time::Instant::now();
        // The program exits at once; its child keeps stdout open for five minutes.
        let done = block_on(run(
            &sh("echo done; sleep 300 & exit 0"),
            Deadline::after(Duration::from_mins(1)),
        ))
        .unwrap();
        assert!(started.elapsed() < Duration::from_secs(10));
        assert_eq!(done.stdout, b"done\n");
        assert!(matches!(done.end, ChildEnd::Exited { success: true, .. }));
    }

    #[test]
    fn only_the_end_of_a_large_output_is_kept() {
        let done = block_on(run(
            &sh("head -c 10000000 /dev/zero; echo; echo the-end"),
            Deadline::after(Duration::from_mins(1)),
        ))
        .unwrap();
        assert_eq!(done.stdout.len(), OUTPUT_KEPT);
        assert!(done.stdout.ends_with(b"\nthe-end\n"));
    }

    /// Asserts the process `pid` is gone (or a zombie waiting for its parent).
    fn assert_gone(pid: &str) {
        for _ in 0..100 {
            #[allow(clippy::disallowed_methods)]
            match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
                Err(_) => return,
                Ok(stat)
                    if stat
                        .rsplit(')')
                        .next()
                        .is_some_and(|s| s.trim_start().starts_with('Z')) =>
                {
                    return
                }
                Ok(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
        panic!("process {pid} outlived its group's deadline");
    }
}
