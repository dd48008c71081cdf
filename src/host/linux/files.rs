//! Files on the real node: atomic writes that skip equal bytes, symlinks, log files, reads,
//! listings, and the run lock.

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;

use fs_err::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;
use std::time::Duration;

use anyhow::{anyhow, bail, Context as _, Result};

use crate::error::NotReady;
use crate::host::{FileKind, WriteOutcome};
use crate::paths::{HostRoot, LOCK_FILE};
use crate::plan::files::{Desired, FileChange, FileFact};
use crate::report::Action;
use crate::wait::Deadline;

/// Writes `bytes` to `path` with `mode` so that readers see the old file or the new one, never a
/// torn one: a dot-prefixed temporary file in the same directory, fsync, rename, fsync of the
/// directory. Nothing is written when the file already holds exactly these bytes and this mode.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<WriteOutcome> {
    write_atomic_owned(path, bytes, mode, None)
}

/// [`write_atomic`], the new file owned by `owner` (uid, gid) when given: a file some other
/// tool owns keeps its owner and group.
pub(crate) fn write_atomic_owned(
    path: &Path,
    bytes: &[u8],
    mode: u32,
    owner: Option<(u32, u32)>,
) -> Result<WriteOutcome> {
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
    let dir = parent(path)?;
    fs_err::create_dir_all(dir)?;
    let name = file_name(path)?;
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
        if let Some((uid, gid)) = owner {
            std::os::unix::fs::fchown(file.file(), Some(uid), Some(gid))
                .with_context(|| format!("setting the owner of `{}`", temp.display()))?;
        }
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

/// Removes temporary files an earlier, killed run left beside `name` (`.<name>.<pid>.tmp`):
/// those of this process and of processes that no longer exist. A live process's file is its
/// own (a concurrent run writing the metrics file, which it does outside the run lock).
pub(crate) fn remove_stale_temps(dir: &Path, name: &str) {
    let prefix = format!(".{name}.");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let own = std::process::id();
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let file_name = file_name.to_string_lossy();
        let Some(pid) = file_name
            .strip_prefix(&prefix)
            .and_then(|rest| rest.strip_suffix(".tmp"))
        else {
            continue;
        };
        let writer_alive = pid
            .parse::<u32>()
            .is_ok_and(|pid| pid != own && Path::new(&format!("/proc/{pid}")).exists());
        if !writer_alive {
            tracing::debug!(
                "removing `{}` left by an interrupted run",
                entry.path().display()
            );
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// What is at `path` now (symlinks not followed).
pub(crate) fn read_fact(path: &Path) -> Result<FileFact> {
    let meta = match fs_err::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(FileFact::Missing),
        Err(err) => return Err(err.into()),
    };
    if meta.file_type().is_symlink() {
        return Ok(FileFact::Symlink(fs_err::read_link(path)?));
    }
    if !meta.is_file() {
        return Ok(FileFact::Other);
    }
    Ok(FileFact::File {
        bytes: fs_err::read(path)?,
        mode: meta.permissions().mode() & 0o7777,
    })
}

/// What kind of entry is at `path`, symlinks not followed, its contents not read.
pub(crate) fn kind(path: &Path) -> Result<FileKind> {
    let meta = match fs_err::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(FileKind::Missing),
        Err(err) => return Err(err.into()),
    };
    let kind = meta.file_type();
    Ok(if kind.is_symlink() {
        FileKind::Symlink(fs_err::read_link(path)?)
    } else if kind.is_file() {
        FileKind::File
    } else if kind.is_dir() {
        FileKind::Directory
    } else {
        FileKind::Other
    })
}

/// The names of the entries of `dir`, sorted; `None` when it does not exist.
pub(crate) fn list(dir: &Path) -> Result<Option<Vec<String>>> {
    let entries = match fs_err::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err.into()),
    };
    let mut names = Vec::new();
    for entry in entries {
        names.push(entry?.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    Ok(Some(names))
}

/// The bytes of the file at `path` (symlinks followed); `None` when it is missing. Anything
/// but a regular file of at most `max` bytes is an error.
pub(crate) fn read_limited(path: &Path, max: u64) -> Result<Option<Vec<u8>>> {
    let meta = match fs_err::metadata(path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err.into()),
    };
    if !meta.is_file() {
        bail!("`{}` is not a regular file", path.display());
    }
    if meta.len() > max {
        bail!(
            "`{}` is {} bytes, more than the {max} expected",
            path.display(),
            meta.len()
        );
    }
    match fs_err::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err.into()),
    }
}

/// Makes one planned file change (nothing for `unchanged`).
pub(crate) fn apply(change: &FileChange) -> Result<()> {
    if change.action == Action::Unchanged {
        return Ok(());
    }
    match &change.desired {
        Desired::File { bytes, mode } => write_atomic(&change.path, bytes, *mode).map(|_| ()),
        Desired::Symlink(target) => replace_symlink(&change.path, target),
        Desired::LogFile { mode } => create_log_file(&change.path, *mode),
        Desired::Absent => remove(&change.path),
    }
}

/// Removes the file or symlink at `path` (gone already: fine) and syncs its directory.
fn remove(path: &Path) -> Result<()> {
    match fs_err::remove_file(path) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(err.into()),
    }
    fs_err::File::open(parent(path)?)?.sync_all()?;
    Ok(())
}

/// Points `path` at `target` by renaming a new symlink over it, so it is never missing.
fn replace_symlink(path: &Path, target: &Path) -> Result<()> {
    let dir = parent(path)?;
    fs_err::create_dir_all(dir)?;
    let name = file_name(path)?;
    remove_stale_temps(dir, &name);
    let temp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    std::os::unix::fs::symlink(target, &temp)
        .with_context(|| format!("creating symlink `{}`", temp.display()))?;
    fs_err::rename(&temp, path)?;
    fs_err::File::open(dir)?.sync_all()?;
    Ok(())
}

/// Creates an empty file if nothing is there; an existing one is never truncated.
fn create_log_file(path: &Path, mode: u32) -> Result<()> {
    fs_err::create_dir_all(parent(path)?)?;
    match fs_err::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
    {
        Ok(_) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(err) => Err(err).context("creating a log file"),
    }
}

fn parent(path: &Path) -> Result<&Path> {
    path.parent()
        .ok_or_else(|| anyhow!("`{}` has no parent directory", path.display()))
}

fn file_name(path: &Path) -> Result<String> {
    Ok(path
        .file_name()
        .ok_or_else(|| anyhow!("`{}` has no file name", path.display()))?
        .to_string_lossy()
        .into_owned())
}

/// The exclusive run lock, `<root>/run/protokube.lock`: held for the life of this value.
#[derive(Debug)]
pub(crate) struct FileLock {
    _file: std::fs::File,
}

impl FileLock {
    /// Takes the lock, waiting up to `timeout` for another run to release it; exit 75 after that.
    pub(crate) fn acquire(root: &HostRoot, deadline: Deadline) -> Result<Self> {
        let path = root.own(LOCK_FILE)?;
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
        let mut logged = false;
        loop {
            // std's lock is `flock(2)` on Linux: held by the open file description, released
            // when the process dies.
            match file.try_lock() {
                Ok(()) => return Ok(Self { _file: file }),
                Err(std::fs::TryLockError::WouldBlock) => {}
                Err(std::fs::TryLockError::Error(err)) => {
                    return Err(err).with_context(|| format!("locking `{}`", path.display()));
                }
            }
            let remaining = deadline.remaining();
            if remaining.is_zero() {
                return Err(NotReady(format!(
                    "another protokube run held the lock `{}` through --timeout ({}); retry later",
                    path.display(),
                    deadline.timeout_text()
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
            std::thread::sleep(Duration::from_millis(100).min(remaining));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        // A temporary file a killed run left is cleaned up by the next write; one a live
        // process is writing (pid 1 stands in for a concurrent run) is left to it.
        let dead = u32::try_from(i32::MAX).unwrap();
        std::fs::write(
            dir.path().join(format!("sub/.state.json.{dead}.tmp")),
            "torn",
        )
        .unwrap();
        std::fs::write(dir.path().join("sub/.state.json.1.tmp"), "theirs").unwrap();
        assert_eq!(
            write_atomic(&path, b"three", 0o600).unwrap(),
            WriteOutcome::Updated
        );
        let mut names: Vec<_> = std::fs::read_dir(dir.path().join("sub"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        assert_eq!(names, [".state.json.1.tmp", "state.json"]);
    }

    #[test]
    fn second_lock_waits_then_reports_not_ready() {
        let dir = tempfile::tempdir().unwrap();
        let root = crate::host::linux::root(dir.path()).unwrap();
        let held = FileLock::acquire(&root, Deadline::after(Duration::from_secs(1))).unwrap();
        // flock locks belong to the open file description: a second open conflicts even in
        // the same process.
        let err =
            FileLock::acquire(&root, Deadline::after(Duration::from_millis(200))).unwrap_err();
        assert!(err.is::<NotReady>(), "{err:#}");
        assert!(format!("{err}").contains("protokube.lock"));
        drop(held);
        FileLock::acquire(&root, Deadline::after(Duration::from_millis(200))).unwrap();
    }
}
