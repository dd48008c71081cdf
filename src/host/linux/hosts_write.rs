//! Writing the hosts file: always in place (same inode), keeping its owner, group and mode (and
//! through a symlink, to the file it names), in a way that never leaves it empty or without its
//! unmanaged lines, whenever a kill lands. kube-proxy and etcd-manager mount the host's
//! `/etc/hosts` into their pods as a file (kOps' nodeup `kube_proxy.go`: "so that we see the
//! updates that are made by protokube"): a file replaced by a rename would leave them reading
//! the old one, so the old protokube wrote it in place too (`gossip/dns/hosts/hosts.go`).

use std::os::unix::fs::{FileExt as _, FileTypeExt as _};
use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context as _, Result};
use fs_err::os::unix::fs::OpenOptionsExt as _;
use rustix::fs::FallocateFlags;
use rustix::io::Errno;

use crate::host::linux::files::write_atomic_owned;
use crate::host::{HostsWrite, WriteOutcome};

/// How long a write lets another writer's write land before reading the file back: a random
/// pause of 1 to 20 ms, as etcd-manager's own writer pauses (`pkg/hosts`), so that two writers
/// that raced see it.
const SETTLE_MS: std::ops::RangeInclusive<u64> = 1..=20;

/// Reads the hosts file as bytes (it need not be UTF-8); a missing one reads as empty. Anything
/// but a regular file is refused at once: a FIFO would hold the run (and its lock) until
/// someone wrote into it.
pub(crate) fn read_hosts(path: &Path) -> Result<Vec<u8>> {
    let Some(mut file) = open_regular(path, false)? else {
        return Ok(Vec::new());
    };
    let mut content = Vec::new();
    std::io::Read::read_to_end(&mut file, &mut content)
        .with_context(|| format!("reading the hosts file `{}`", path.display()))?;
    Ok(content)
}

/// Opens the hosts file at `path` (for writing too with `write`) when it is a regular file;
/// `None` when it is missing. Opened without blocking, and checked again once open.
fn open_regular(path: &Path, write: bool) -> Result<Option<fs_err::File>> {
    let refuse = |kind: std::fs::FileType| -> Result<()> {
        if kind.is_file() {
            return Ok(());
        }
        let what = if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_char_device() || kind.is_block_device() {
            "a device"
        } else if kind.is_dir() {
            "a directory"
        } else if kind.is_socket() {
            "a socket"
        } else {
            "not a regular file"
        };
        bail!(
            "the hosts file `{}` is {what}: protokube keeps its block only in a regular file; \
             put the node's hosts file back",
            path.display()
        )
    };
    match fs_err::metadata(path) {
        Ok(meta) => refuse(meta.file_type())?,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err).context("reading the hosts file's type"),
    }
    let file = fs_err::OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .context("opening the hosts file")?;
    refuse(file.metadata()?.file_type())?;
    Ok(Some(file))
}

/// Writes `new` to the hosts file at `path` (symlinks already resolved), which held `old` when
/// the plan was made, when they differ: in place where it exists (whoever holds it mounted sees
/// the change), created whole where it does not (nobody can hold it yet).
pub(crate) fn write_hosts(path: &Path, old: &[u8], new: &[u8]) -> Result<HostsWrite> {
    let Some(file) = open_regular(path, true)? else {
        return write_atomic_owned(path, new, 0o644, None).map(HostsWrite::Done);
    };
    if old == new {
        return Ok(HostsWrite::Done(WriteOutcome::Unchanged));
    }
    write_in_place(&file, path, old, new)
}

/// Rewrites a file that cannot be replaced (a bind mount) without a moment where it is empty or
/// lacks its unmanaged lines: only the bytes after the part `old` and `new` share are written,
/// in one write, into space secured beforehand (a full disk leaves the file as it was), and a
/// shorter file is first padded with a blank line to its old length, then cut. A kill leaves
/// `old`, `new` followed by blanks (harmless; the next run trims them), or `new`. Another
/// writer (etcd-manager writes its own blocks into the host's file, without a lock) is seen
/// twice: in the file read again just before the write, and in the file read back after a
/// pause; either way the caller plans again from what is there.
pub(crate) fn write_in_place(
    file: &fs_err::File,
    path: &Path,
    old: &[u8],
    new: &[u8],
) -> Result<HostsWrite> {
    if read_all(file, path)? != old {
        return Ok(HostsWrite::Raced);
    }
    let common = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let mut tail = new[common..].to_vec();
    if new.len() < old.len() {
        let pad = old.len() - new.len();
        tail.extend(std::iter::repeat_n(b' ', pad - 1));
        tail.push(b'\n');
    }
    secure_space(file, path, (common + tail.len()) as u64)?;
    file.file()
        .write_all_at(&tail, common as u64)
        .with_context(|| format!("writing `{}` in place", path.display()))?;
    file.sync_all()?;
    if new.len() < old.len() {
        file.set_len(new.len() as u64)?;
        file.sync_all()?;
    }
    std::thread::sleep(Duration::from_millis(fastrand::u64(SETTLE_MS)));
    if read_all(file, path)? != new {
        return Ok(HostsWrite::Raced);
    }
    Ok(HostsWrite::Done(WriteOutcome::Updated))
}

/// The whole file, read from its start.
fn read_all(file: &fs_err::File, path: &Path) -> Result<Vec<u8>> {
    let mut content = Vec::new();
    let mut offset = 0_u64;
    let mut chunk = [0_u8; 8192];
    loop {
        let read = file
            .file()
            .read_at(&mut chunk, offset)
            .with_context(|| format!("reading `{}` again", path.display()))?;
        if read == 0 {
            return Ok(content);
        }
        content.extend_from_slice(&chunk[..read]);
        offset += read as u64;
    }
}

/// Makes the filesystem hold blocks for the file's first `length` bytes before any of them
/// changes (its size stays as it is): a full disk refuses here, with the file untouched,
/// never halfway through the write. A filesystem that cannot reserve space ahead (some
/// network and overlay filesystems) is written as before.
fn secure_space(file: &fs_err::File, path: &Path, length: u64) -> Result<()> {
    match rustix::fs::fallocate(file.file(), FallocateFlags::KEEP_SIZE, 0, length) {
        Ok(()) => Ok(()),
        Err(Errno::NOSPC | Errno::DQUOT) => bail!(
            "no room on the filesystem of `{}` for its new managed block ({length} bytes): the \
             file is left as it was; free some space",
            path.display()
        ),
        Err(Errno::OPNOTSUPP | Errno::NOSYS | Errno::INVAL) => Ok(()),
        Err(err) => Err(std::io::Error::from(err))
            .with_context(|| format!("reserving space for `{}`", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};

    use super::*;

    fn in_place(path: &Path, old: &[u8], new: &[u8]) {
        assert_eq!(
            write_hosts(path, old, new).unwrap(),
            HostsWrite::Done(WriteOutcome::Updated)
        );
    }

    #[test]
    fn in_place_writes_grow_and_shrink_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hosts");
        let old = b"127.0.0.1 localhost\n\n# block\n10.0.0.1\ta b c\n# end\n";
        std::fs::write(&path, old).unwrap();
        let shorter = b"127.0.0.1 localhost\n\n# block\n10.0.0.1\ta\n# end\n";
        in_place(&path, old, shorter);
        assert_eq!(std::fs::read(&path).unwrap(), shorter);
        let longer = b"127.0.0.1 localhost\n\n# block\n10.0.0.1\ta\n10.0.0.2\tb\n# end\n";
        in_place(&path, shorter, longer);
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
            HostsWrite::Done(WriteOutcome::Unchanged)
        );
        assert_eq!(
            write_hosts(&path, b"old\n", b"new\n").unwrap(),
            HostsWrite::Done(WriteOutcome::Updated)
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
            HostsWrite::Done(WriteOutcome::Created)
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

    #[test]
    fn a_fifo_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hosts");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &path,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        let err = read_hosts(&path).unwrap_err();
        assert!(format!("{err:#}").contains("is a FIFO"), "{err:#}");
        let err = write_hosts(&path, b"", b"x\n").unwrap_err();
        assert!(format!("{err:#}").contains("is a FIFO"), "{err:#}");
    }

    #[test]
    fn a_file_another_writer_changed_since_the_plan_is_not_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hosts");
        std::fs::write(&path, "theirs\n").unwrap();
        assert_eq!(
            write_hosts(&path, b"planned from\n", b"ours\n").unwrap(),
            HostsWrite::Raced
        );
        assert_eq!(std::fs::read(&path).unwrap(), b"theirs\n");
    }
}
