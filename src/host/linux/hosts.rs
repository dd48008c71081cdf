//! Writing the hosts file: by atomic rename where possible, keeping its owner, group and mode
//! (and through a symlink, to the file it names); where it is a bind mount (containers), in place,
//! in a way that never leaves it empty or without its unmanaged lines, whenever a kill lands.

use std::os::unix::fs::{FileExt as _, MetadataExt as _, PermissionsExt as _};
use std::path::Path;

use anyhow::{bail, Context as _, Result};

use crate::host::linux::files::write_atomic_owned;
use crate::host::WriteOutcome;

/// Reads the hosts file as bytes (it need not be UTF-8); a missing one reads as empty.
pub fn read_hosts(path: &Path) -> Result<Vec<u8>> {
    match fs_err::read(path) {
        Ok(content) => Ok(content),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(err) => Err(err).context("reading the hosts file"),
    }
}

/// Writes `new` to the hosts file at `path` (symlinks already resolved), which holds `old`, when
/// they differ.
pub fn write_hosts(path: &Path, old: &[u8], new: &[u8]) -> Result<WriteOutcome> {
    if old == new && path.exists() {
        return Ok(WriteOutcome::Unchanged);
    }
    let (mode, owner) = match fs_err::metadata(path) {
        Ok(meta) => (
            meta.permissions().mode() & 0o7777,
            Some((meta.uid(), meta.gid())),
        ),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => (0o644, None),
        Err(err) => return Err(err).context("reading the hosts file's mode and owner"),
    };
    match write_atomic_owned(path, new, mode, owner) {
        Ok(outcome) => Ok(outcome),
        Err(err) if is_busy(&err) => {
            tracing::debug!("`{}` is a mount point; writing in place", path.display());
            write_in_place(path, old, new)?;
            Ok(WriteOutcome::Updated)
        }
        Err(err) => Err(err),
    }
}

/// Rewrites a file that cannot be replaced (a bind mount) without a moment where it is empty or
/// lacks its unmanaged lines: only the bytes after the part `old` and `new` share are written,
/// in one write, and a shorter file is first padded with a blank line to its old length, then
/// cut. A kill leaves `old`, `new` followed by blanks (harmless; the next run trims them), or
/// `new`.
pub fn write_in_place(path: &Path, old: &[u8], new: &[u8]) -> Result<()> {
    let file = fs_err::OpenOptions::new()
        .write(true)
        .open(path)
        .context("opening the hosts file for an in-place write")?;
    let common = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let mut tail = new[common..].to_vec();
    if new.len() < old.len() {
        let pad = old.len() - new.len();
        tail.extend(std::iter::repeat_n(b' ', pad - 1));
        tail.push(b'\n');
    }
    file.file()
        .write_all_at(&tail, common as u64)
        .with_context(|| format!("writing `{}` in place", path.display()))?;
    file.sync_all()?;
    if new.len() < old.len() {
        file.set_len(new.len() as u64)?;
        file.sync_all()?;
    }
    let written = fs_err::read(path)?;
    if written != new {
        bail!(
            "`{}` does not hold what was written (another writer?); run again",
            path.display()
        );
    }
    Ok(())
}

/// Rename onto a mount point fails with EBUSY (or EXDEV): the file is a bind mount.
fn is_busy(err: &anyhow::Error) -> bool {
    use std::io::ErrorKind;
    err.chain().any(|cause| {
        cause.downcast_ref::<std::io::Error>().is_some_and(|e| {
            matches!(
                e.kind(),
                ErrorKind::ResourceBusy | ErrorKind::CrossesDevices
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_place_writes_grow_and_shrink_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hosts");
        let old = b"127.0.0.1 localhost\n\n# block\n10.0.0.1\ta b c\n# end\n";
        std::fs::write(&path, old).unwrap();
        let shorter = b"127.0.0.1 localhost\n\n# block\n10.0.0.1\ta\n# end\n";
        write_in_place(&path, old, shorter).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), shorter);
        let longer = b"127.0.0.1 localhost\n\n# block\n10.0.0.1\ta\n10.0.0.2\tb\n# end\n";
        write_in_place(&path, shorter, longer).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), longer);
    }

    #[test]
    #[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
    fn owner_group_and_mode_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hosts");
        std::fs::write(&path, "old\n").unwrap();
        std::os::unix::fs::chown(&path, Some(0), Some(4)).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        assert_eq!(
            write_hosts(&path, b"old\n", b"old\n").unwrap(),
            WriteOutcome::Unchanged
        );
        assert_eq!(
            write_hosts(&path, b"old\n", b"new\n").unwrap(),
            WriteOutcome::Updated
        );
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!((meta.gid(), meta.permissions().mode() & 0o7777), (4, 0o640));
        assert_eq!(std::fs::read(&path).unwrap(), b"new\n");
    }
}
