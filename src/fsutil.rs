//! Host paths under `--root`, atomic file writes that skip equal bytes, and the run lock.

use std::io::Write as _;
use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt as _;

use fs_err::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context as _, Result};

use crate::error::NotReady;

/// The directory the host's `/` is found at (`--root`; `/` unless running in a container or a test).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostRoot(PathBuf);

impl HostRoot {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self(root.into())
    }

    /// The root directory itself.
    pub fn dir(&self) -> &Path {
        &self.0
    }

    /// Where the host path `host_path` (absolute, e.g. `/etc/hosts`) is found from here.
    pub fn path(&self, host_path: impl AsRef<Path>) -> PathBuf {
        let relative = host_path
            .as_ref()
            .strip_prefix("/")
            .unwrap_or(host_path.as_ref());
        self.0.join(relative)
    }

    /// The host path of an etcd volume's mount point, `/mnt/master-<volume id>`.
    pub fn volume_mountpoint_host_path(volume_id: &str) -> PathBuf {
        PathBuf::from(format!("/mnt/master-{volume_id}"))
    }

    /// The mount point of an etcd volume as seen from here, `<root>/mnt/master-<volume id>`.
    pub fn volume_mountpoint(&self, volume_id: &str) -> PathBuf {
        self.path(Self::volume_mountpoint_host_path(volume_id))
    }
}

/// What [`write_atomic`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteOutcome {
    Created,
    Updated,
    Unchanged,
}

/// Writes `bytes` to `path` with `mode` so that readers see the old file or the new one, never a
/// torn one: a dot-prefixed temporary file in the same directory, fsync, rename, fsync of the
/// directory. Nothing is written when the file already holds exactly these bytes and this mode.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<WriteOutcome> {
    let existing = match fs_err::symlink_metadata(path) {
        Ok(meta) => Some(meta),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
        Err(err) => return Err(err.into()),
    };
    if let Some(meta) = &existing {
        if meta.is_file()
            && meta.len() == bytes.len() as u64
            && meta.permissions().mode() & 0o7777 == mode
            && fs_err::read(path)? == bytes
        {
            return Ok(WriteOutcome::Unchanged);
        }
    }
    let dir = path
        .parent()
        .ok_or_else(|| anyhow!("`{}` has no parent directory", path.display()))?;
    fs_err::create_dir_all(dir)?;
    let name = path
        .file_name()
        .ok_or_else(|| anyhow!("`{}` has no file name", path.display()))?
        .to_string_lossy();
    remove_stale_temps(dir, &name);
    let temp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| -> Result<()> {
        let mut file = fs_err::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .open(&temp)?;
        file.write_all(bytes)?;
        // The mode given at creation is filtered by the umask; set it exactly.
        file.file()
            .set_permissions(std::fs::Permissions::from_mode(mode))
            .with_context(|| format!("setting the mode of `{}`", temp.display()))?;
        file.sync_all()?;
        fs_err::rename(&temp, path)?;
        fs_err::File::open(dir)?.sync_all()?;
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result.with_context(|| format!("writing `{}`", path.display()))?;
    Ok(if existing.is_some() {
        WriteOutcome::Updated
    } else {
        WriteOutcome::Created
    })
}

/// Removes temporary files an earlier, killed run left beside `name` (`.<name>.<pid>.tmp`).
/// Callers hold the run lock, so no other protokube is writing them.
pub fn remove_stale_temps(dir: &Path, name: &str) {
    let prefix = format!(".{name}.");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let file_name = file_name.to_string_lossy();
        if file_name.starts_with(&prefix) && file_name.ends_with(".tmp") {
            tracing::debug!(
                "removing `{}` left by an interrupted run",
                entry.path().display()
            );
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// The exclusive run lock, `<root>/run/protokube.lock`: held for the life of this value.
#[derive(Debug)]
pub struct RunLock {
    _file: std::fs::File,
}

impl RunLock {
    /// The host path of the lock file.
    pub const HOST_PATH: &'static str = "/run/protokube.lock";

    /// Takes the lock, waiting up to `timeout` for another run to release it; exit 75 after that.
    pub fn acquire(root: &HostRoot, timeout: Duration) -> Result<Self> {
        let path = root.path(Self::HOST_PATH);
        if let Some(dir) = path.parent() {
            fs_err::create_dir_all(dir).context("creating the lock directory")?;
        }
        let file = fs_err::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&path)
            .context("opening the run lock")?
            .into_parts()
            .0;
        let deadline = Instant::now() + timeout;
        let mut logged = false;
        loop {
            // SAFETY: flock on a file descriptor we own; no memory is shared with the kernel.
            let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
            if rc == 0 {
                return Ok(Self { _file: file });
            }
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() != Some(libc::EWOULDBLOCK) {
                return Err(err).with_context(|| format!("locking `{}`", path.display()));
            }
            if Instant::now() >= deadline {
                return Err(NotReady(format!(
                    "another protokube run holds the lock `{}` (waited {}); retry later",
                    path.display(),
                    humantime::format_duration(timeout)
                ))
                .into());
            }
            if !logged {
                tracing::info!(
                    "waiting for another protokube run to release `{}`",
                    path.display()
                );
                logged = true;
            }
            std::thread::sleep(Duration::from_millis(100).min(deadline - Instant::now()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_paths_are_taken_under_the_root() {
        let root = HostRoot::new("/rootfs");
        assert_eq!(root.path("/etc/hosts"), Path::new("/rootfs/etc/hosts"));
        assert_eq!(
            root.volume_mountpoint("vol-1"),
            Path::new("/rootfs/mnt/master-vol-1")
        );
        let slash = HostRoot::new("/");
        assert_eq!(slash.path("/etc/hosts"), Path::new("/etc/hosts"));
    }

    #[test]
    fn atomic_write_creates_updates_and_skips_equal_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/state.json");
        assert_eq!(
            write_atomic(&path, b"one", 0o644).unwrap(),
            WriteOutcome::Created
        );
        let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
        assert_eq!(
            write_atomic(&path, b"one", 0o644).unwrap(),
            WriteOutcome::Unchanged
        );
        assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), mtime);
        assert_eq!(
            write_atomic(&path, b"two", 0o644).unwrap(),
            WriteOutcome::Updated
        );
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(
            write_atomic(&path, b"two", 0o600).unwrap(),
            WriteOutcome::Updated
        );
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o600);
        // A temporary file a killed run left is cleaned up by the next write.
        std::fs::write(dir.path().join("sub/.state.json.999999.tmp"), "torn").unwrap();
        assert_eq!(
            write_atomic(&path, b"three", 0o600).unwrap(),
            WriteOutcome::Updated
        );
        // No temporary files are left behind.
        let names: Vec<_> = std::fs::read_dir(dir.path().join("sub"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["state.json"]);
    }

    #[test]
    fn second_lock_waits_then_reports_not_ready() {
        let dir = tempfile::tempdir().unwrap();
        let root = HostRoot::new(dir.path());
        let held = RunLock::acquire(&root, Duration::from_secs(1)).unwrap();
        // flock locks belong to the open file description: a second open conflicts even in
        // the same process.
        let err = RunLock::acquire(&root, Duration::from_millis(200)).unwrap_err();
        assert!(err.is::<NotReady>(), "{err:#}");
        assert!(format!("{err}").contains("protokube.lock"));
        drop(held);
        RunLock::acquire(&root, Duration::from_millis(200)).unwrap();
    }
}
