//! Writing the hosts file: always in place (same inode), keeping its owner, group and mode (and
//! through a symlink, to the file it names), in a way that never leaves it empty or without its
//! unmanaged lines, whenever a kill lands. kube-proxy and etcd-manager mount the host's
//! `/etc/hosts` into their pods as a file (kOps' nodeup `kube_proxy.go`: "so that we see the
//! updates that are made by protokube"): a file replaced by a rename would leave them reading
//! the old one, so the old protokube wrote it in place too (`gossip/dns/hosts/hosts.go`).

use std::os::unix::fs::FileExt as _;
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
/// they differ: in place where it exists (whoever holds it mounted sees the change), created
/// whole where it does not (nobody can hold it yet).
pub fn write_hosts(path: &Path, old: &[u8], new: &[u8]) -> Result<WriteOutcome> {
    match fs_err::metadata(path) {
        Ok(_) if old == new => Ok(WriteOutcome::Unchanged),
        Ok(_) => {
            write_in_place(path, old, new)?;
            Ok(WriteOutcome::Updated)
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            write_atomic_owned(path, new, 0o644, None)
        }
        Err(err) => Err(err).context("reading the hosts file's mode and owner"),
    }
}

/// Rewrites a file that cannot be replaced (a bind mount) without a moment where it is empty or
/// lacks its unmanaged lines: only the bytes after the part `old` and `new` share are written,
/// in one write, and a shorter file is first padded with a blank line to its old length, then
/// cut. A kill leaves `old`, `new` followed by blanks (harmless; the next run trims them), or
/// `new`.
pub fn write_in_place(path: &Path, old: &[u8], new: &[u8]) -> Result<()> {
    let file = fs_err::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .context("opening the hosts file for an in-place write")?;
    // Another writer (etcd-manager writes its own block into the host's file) since it was
    // read: writing from the old contents would mix the two; the next run starts from the new.
    let mut current = Vec::with_capacity(old.len());
    std::io::Read::read_to_end(&mut file.file(), &mut current)
        .with_context(|| format!("reading `{}` again before writing it", path.display()))?;
    if current != old {
        bail!(
            "`{}` changed while protokube planned its block (another writer?); run again",
            path.display()
        );
    }
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

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};

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

    #[test]
    fn the_file_keeps_its_inode_and_a_missing_one_is_created() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hosts");
        assert_eq!(
            write_hosts(&path, b"", b"127.0.0.1 localhost\n").unwrap(),
            WriteOutcome::Created
        );
        let inode = std::fs::metadata(&path).unwrap().ino();
        write_hosts(
            &path,
            b"127.0.0.1 localhost\n",
            b"127.0.0.1 localhost\n10.0.0.1\ta\n",
        )
        .unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().ino(), inode);
        assert_eq!(
            std::fs::read(&path).unwrap(),
            b"127.0.0.1 localhost\n10.0.0.1\ta\n"
        );
    }
}
