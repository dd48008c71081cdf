//! The real node: [`LinuxHost`] implements the host traits with system calls, `/proc`, `rustix`
//! and the e2fsprogs tools. Everything protokube does to a machine goes through this module —
//! it is the only user of `fs-err`, `libc`, `rustix`, `unsafe` and child processes (clippy's
//! `disallowed-methods` and `tests/it/architecture.rs` keep it so). Besides the traits, it gives the
//! few reads made before a run has a snapshot (the cluster spec, template overrides, the
//! kubeconfig, the metrics file) and runs kOps' channels tool.

// The one place `std::fs` is meant to be used.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

pub(crate) mod devices;
pub(crate) mod etcd_probe;
pub(crate) mod files;
pub(crate) mod hosts_write;
pub(crate) mod process;

use std::path::Path;

use anyhow::Result;

use super::{
    ChildCommand, ChildOutput, Devices, FileKind, Files, FoundDevice, FsckResult, Holder,
    HostsWrite, MountPlace, Processes, RunLock, Services, Witnesses,
};
use crate::cloud::DeviceHint;
use crate::paths::{Entry, HostRoot, Links};
use crate::plan::blank::BlankCheck;
use crate::plan::files::{FileChange, FileFact};
use crate::plan::manifests::upgrade::{EtcdEndpoint, EtcdVersion};
use crate::plan::mounts::MountEntry;
use crate::wait::Deadline;

/// This machine.
#[derive(Clone, Copy, Debug, Default)]
pub struct LinuxHost;

impl Devices for LinuxHost {
    fn mount_table(&self) -> Result<Vec<MountEntry>> {
        devices::mount_table()
    }

    fn device_number(&self, path: &Path) -> Result<(u32, u32)> {
        devices::device_number(path)
    }

    fn mounted_device(&self, path: &Path) -> Result<(u32, u32)> {
        devices::mounted_device(path)
    }

    fn find_device(&self, root: &HostRoot, hint: &DeviceHint) -> Result<Option<FoundDevice>> {
        devices::find_device(root, hint)
    }

    fn witnesses(&self, device: &Path, check: BlankCheck) -> Result<Witnesses> {
        devices::read_witnesses(device, check)
    }

    fn filesystem_and_device_size(&self, device: &Path) -> Result<(u64, u64)> {
        devices::filesystem_and_device_size(device)
    }

    fn format_ext4(&self, device: &Path, uuid: &str) -> Result<()> {
        devices::format_ext4(device, uuid)
    }

    fn fsck(&self, device: &Path) -> Result<FsckResult> {
        devices::fsck(device)
    }

    fn mount_place(&self, root: &HostRoot, mountpoint: &Path) -> Result<MountPlace> {
        devices::mount_place(root, mountpoint)
    }

    fn mount_ext4(
        &self,
        root: &HostRoot,
        place: &MountPlace,
        device: &FoundDevice,
        mountpoint: &Path,
    ) -> Result<()> {
        devices::mount_ext4(root, place, device, mountpoint)
    }

    fn may_grow_online(&self) -> bool {
        devices::may_grow_online()
    }

    fn grow_ext4(&self, device: &Path) -> Result<()> {
        devices::grow_ext4(device)
    }

    fn unmount(&self, root: &HostRoot, mountpoint: &Path) -> Result<()> {
        devices::unmount(root, mountpoint)
    }

    fn holders(&self, root: &HostRoot, devno: (u32, u32)) -> Vec<Holder> {
        devices::holders(root, devno)
    }

    fn users_of(&self, devno: (u32, u32)) -> Vec<String> {
        devices::users_of(devno)
    }

    fn pinned_by(&self, root: &HostRoot, mountpoint: &Path, devno: (u32, u32)) -> Vec<Holder> {
        devices::pinned_by(root, mountpoint, devno)
    }
}

#[async_trait::async_trait]
impl Services for LinuxHost {
    fn etcd_version(
        &self,
        root: &HostRoot,
        endpoint: &EtcdEndpoint,
    ) -> Result<Option<EtcdVersion>> {
        etcd_probe::etcd_version(root, endpoint)
    }

    async fn service_active(
        &self,
        root: &HostRoot,
        unit: &str,
        deadline: Deadline,
    ) -> Result<bool> {
        process::service_active(root, unit, deadline).await
    }

    async fn start_service(&self, root: &HostRoot, unit: &str, deadline: Deadline) -> Result<()> {
        process::start_service(root, unit, deadline).await
    }
}

#[async_trait::async_trait]
impl Processes for LinuxHost {
    async fn run(&self, command: &ChildCommand, deadline: Deadline) -> Result<ChildOutput> {
        process::run(command, deadline).await
    }
}

impl Files for LinuxHost {
    fn root(&self, dir: &Path) -> Result<HostRoot> {
        root(dir)
    }

    fn is_dir(&self, path: &Path) -> bool {
        path.is_dir()
    }

    fn fact(&self, path: &Path) -> Result<FileFact> {
        files::read_fact(path)
    }

    fn kind(&self, path: &Path) -> Result<FileKind> {
        files::kind(path)
    }

    fn apply(&self, change: &FileChange) -> Result<()> {
        files::apply(change)
    }

    fn list(&self, dir: &Path) -> Result<Option<Vec<String>>> {
        files::list(dir)
    }

    fn read(&self, path: &Path, max: u64) -> Result<Option<Vec<u8>>> {
        files::read_limited(path, max)
    }

    fn read_hosts(&self, path: &Path) -> Result<Vec<u8>> {
        hosts_write::read_hosts(path)
    }

    fn write_hosts(&self, path: &Path, old: &[u8], new: &[u8]) -> Result<HostsWrite> {
        hosts_write::write_hosts(path, old, new)
    }

    fn lock(&self, root: &HostRoot, deadline: Deadline) -> Result<RunLock> {
        Ok(Box::new(files::FileLock::acquire(root, deadline)?))
    }
}

impl Links for LinuxHost {
    fn entry(&self, path: &Path) -> std::io::Result<Entry> {
        match fs_err::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                Ok(Entry::Symlink(fs_err::read_link(path)?))
            }
            Ok(_) => Ok(Entry::Other),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(Entry::Missing),
            Err(err) => Err(err),
        }
    }
}

/// The host's root at `dir` on this machine: made absolute and free of symlinks, `.` and `..`
/// (a relative `--root`, or one with `/./`, names the same directory the mount table does);
/// an error unless it is a directory.
pub(crate) fn root(dir: &Path) -> Result<HostRoot> {
    let canonical = fs_err::canonicalize(dir)?;
    if !canonical.is_dir() {
        anyhow::bail!("`{}` is not a directory", dir.display());
    }
    Ok(HostRoot::on(canonical, std::sync::Arc::new(LinuxHost)))
}

/// Whether stderr is systemd's journal stream: the stream whose `device:inode` systemd put in
/// `JOURNAL_STREAM`.
pub fn stderr_is_journal() -> bool {
    use std::os::unix::fs::MetadataExt as _;
    std::env::var("JOURNAL_STREAM").is_ok_and(|stream| {
        fs_err::metadata("/proc/self/fd/2")
            .is_ok_and(|stderr| stream == format!("{}:{}", stderr.dev(), stderr.ino()))
    })
}
