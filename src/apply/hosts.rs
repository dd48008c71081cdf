//! Writing the hosts file: by atomic rename, or in place where it is a bind mount.

use std::io::Write as _;
use std::path::Path;

use anyhow::{bail, Context as _, Result};

use crate::apply::files::{write_atomic, WriteOutcome};

/// Reads the hosts file; a missing one reads as empty.
pub fn read_hosts(path: &Path) -> Result<String> {
    match fs_err::read_to_string(path) {
        Ok(content) => Ok(content),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(err) => Err(err).context("reading the hosts file"),
    }
}

/// Writes `/etc/hosts` (at `path`) when its bytes change: by atomic rename where possible; where
/// the file is a bind mount (rename fails with EBUSY), in place, then read back to verify.
pub fn write_hosts(path: &Path, content: &str) -> Result<WriteOutcome> {
    let current = match fs_err::read(path) {
        Ok(bytes) => Some(bytes),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
        Err(err) => return Err(err).context("reading the hosts file"),
    };
    if current.as_deref() == Some(content.as_bytes()) {
        return Ok(WriteOutcome::Unchanged);
    }
    let mode = {
        use std::os::unix::fs::PermissionsExt as _;
        fs_err::metadata(path)
            .map(|m| m.permissions().mode() & 0o7777)
            .unwrap_or(0o644)
    };
    match write_atomic(path, content.as_bytes(), mode) {
        Ok(outcome) => Ok(outcome),
        Err(err) if is_busy(&err) => {
            tracing::debug!("`{}` is a mount point; writing in place", path.display());
            let mut file = fs_err::OpenOptions::new()
                .write(true)
                .truncate(true)
                .open(path)
                .context("opening the hosts file for an in-place write")?;
            file.write_all(content.as_bytes())?;
            file.sync_all()?;
            let written = fs_err::read(path)?;
            if written != content.as_bytes() {
                bail!(
                    "`{}` does not hold what was written (another writer?); run again",
                    path.display()
                );
            }
            Ok(WriteOutcome::Updated)
        }
        Err(err) => Err(err),
    }
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
    fn in_place_write_when_rename_is_impossible() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hosts");
        std::fs::write(&path, "old\n").unwrap();
        assert_eq!(
            write_hosts(&path, "old\n").unwrap(),
            WriteOutcome::Unchanged
        );
        assert_eq!(write_hosts(&path, "new\n").unwrap(), WriteOutcome::Updated);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new\n");
    }
}
