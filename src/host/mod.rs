//! The seam to the node, as [`crate::cloud`] is the seam to the cloud: what a step asks of the
//! machine it runs on — its block devices and mounts ([`Devices`]), its files ([`Files`]), the
//! services it runs ([`Services`]) and the programs it starts for protokube ([`Processes`]) —
//! as narrow traits over our own types. [`linux`] is the real node (the only user of
//! `rustix`, `libc`, `fs-err` and child processes); `memory` is a node held in memory for
//! the steps' unit tests.

pub(crate) mod linux;
#[cfg(test)]
pub(crate) mod memory;

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::cloud::DeviceHint;
use crate::paths::HostRoot;
use crate::plan::blank::{BlankCheck, Signature, Zeros};
use crate::plan::files::{FileChange, FileFact};
use crate::plan::manifests::upgrade::{EtcdEndpoint, EtcdVersion};
use crate::plan::mounts::MountEntry;
use crate::wait::Deadline;

/// Where a volume's block device was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FoundDevice {
    /// The path it was found at (the by-id link or the requested name), under the root.
    pub(crate) found_at: PathBuf,
    /// The device node itself, every symlink resolved inside the root: what is probed,
    /// formatted and mounted (so the mount table shows `/dev/nvme1n1`, not the link).
    pub(crate) path: PathBuf,
    /// `path` as a host path, for the state file.
    pub(crate) host_path: PathBuf,
    pub(crate) devno: (u32, u32),
}

/// What the device itself says of its blankness: `blkid -p`, and only when that finds nothing,
/// the backup superblocks and the zero check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Witnesses {
    pub(crate) signature: Signature,
    pub(crate) backups: Vec<String>,
    pub(crate) zeros: Option<Zeros>,
}

/// What `fsck -a` said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum FsckResult {
    Clean,
    /// Errors were corrected (exit 1, 2 or 3).
    Corrected(i32),
}

/// Where a mount is made so that the host (kubelet) sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum MountPlace {
    /// In this mount namespace: it is the host's, or propagates to it.
    Here,
    /// In the host's mount namespace (this file names it), by host paths: `--root` is the
    /// host's root seen from a container (kOps' `-v /:/rootfs`); what kOps did with `nsenter`.
    Host(PathBuf),
}

/// What kind of entry is at a path, symlinks not followed, its contents not read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileKind {
    Missing,
    File,
    Directory,
    Symlink(PathBuf),
    /// A device, FIFO or socket.
    Other,
}

/// What a write of a whole file did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteOutcome {
    Created,
    Updated,
    Unchanged,
}

/// What an in-place write of the hosts file came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostsWrite {
    /// Written (or left, the bytes being equal), and read back as written.
    Done(WriteOutcome),
    /// Another writer changed the file between the read the plan came from and the write, or
    /// while it was written: the caller reads it again and plans again.
    Raced,
}

/// Something that still holds a device, so that it must not be detached.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Holder {
    /// Mounted at `at` (a path in that namespace) in `namespace` (said in words).
    Mount { at: PathBuf, namespace: String },
    /// A process (`pid (command)`) with a file on it, or the device itself, open.
    Process(String),
    /// A kernel holder (device-mapper, md, a loop device).
    Kernel(String),
    /// A mount below the filesystem's mount point, at `at` in `namespace`.
    Below { at: PathBuf, namespace: String },
    /// A loop device whose backing file is on the filesystem.
    LoopDevice { device: String, file: PathBuf },
    /// A swap file on the filesystem, in use.
    SwapFile(PathBuf),
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Mount { at, namespace } => {
                write!(f, "mounted at `{}` in {namespace}", at.display())
            }
            Self::Process(process) => write!(f, "used by process {process}"),
            Self::Kernel(name) => write!(f, "held by the kernel's `{name}`"),
            Self::Below { at, namespace } => {
                write!(
                    f,
                    "under a mount below it at `{}` in {namespace}",
                    at.display()
                )
            }
            Self::LoopDevice { device, file } => write!(
                f,
                "holding the backing file `{}` of loop device `{device}`",
                file.display()
            ),
            Self::SwapFile(file) => write!(f, "holding the swap file `{}`", file.display()),
        }
    }
}

/// The node's block devices and mounts.
pub(crate) trait Devices: Send + Sync {
    /// The mounts of this process's mount namespace (read again on every call).
    fn mount_table(&self) -> Result<Vec<MountEntry>>;

    /// `(major, minor)` of the block device at `path` (symlinks followed).
    fn device_number(&self, path: &Path) -> Result<(u32, u32)>;

    /// The device a path is on: for a mount point, the device mounted there.
    fn mounted_device(&self, path: &Path) -> Result<(u32, u32)>;

    /// The block device `hint` describes under `root` (`None` while it has not appeared),
    /// checked to be that volume's.
    fn find_device(&self, root: &HostRoot, hint: &DeviceHint) -> Result<Option<FoundDevice>>;

    /// The blank proof's witnesses on the device.
    fn witnesses(&self, device: &Path, check: BlankCheck) -> Result<Witnesses>;

    /// The size in bytes of the ext4 filesystem on `device` and of the device.
    fn filesystem_and_device_size(&self, device: &Path) -> Result<(u64, u64)>;

    /// Creates an ext4 filesystem with UUID `uuid` and checks the device probes as exactly it.
    fn format_ext4(&self, device: &Path, uuid: &str) -> Result<()>;

    /// `fsck -a`: clean, corrected, or an error (not mountable).
    fn fsck(&self, device: &Path) -> Result<FsckResult>;

    /// Where mounts under `mountpoint` go so the host sees them; refused when it would not.
    fn mount_place(&self, root: &HostRoot, mountpoint: &Path) -> Result<MountPlace>;

    /// Creates the mount point and mounts the ext4 device there in `place`, then checks the
    /// mount point shows that device.
    fn mount_ext4(
        &self,
        root: &HostRoot,
        place: &MountPlace,
        device: &FoundDevice,
        mountpoint: &Path,
    ) -> Result<()>;

    /// Whether this process may grow a mounted ext4 filesystem.
    fn may_grow_online(&self) -> bool;

    /// Grows the mounted ext4 filesystem on `device` to the device's size, online.
    fn grow_ext4(&self, device: &Path) -> Result<()>;

    /// Unmounts the filesystem at `mountpoint`, in every mount namespace protokube mounted it
    /// in; one in use stays mounted and the error says so.
    fn unmount(&self, root: &HostRoot, mountpoint: &Path) -> Result<()>;

    /// Where the filesystem on device `devno` is still in use: mounts in any mount namespace,
    /// processes with files on it (or the device) open, kernel holders. Empty: it may go.
    fn holders(&self, root: &HostRoot, devno: (u32, u32)) -> Vec<Holder>;

    /// The processes using the filesystem on device `devno`, as `pid (command)`.
    fn users_of(&self, devno: (u32, u32)) -> Vec<String>;

    /// What, besides the processes using it, makes unmounting the filesystem of device `devno`
    /// at `mountpoint` fail: mounts below the mount point (here, and in the host's mount
    /// namespace from a container), loop devices and swap files on it.
    fn pinned_by(&self, root: &HostRoot, mountpoint: &Path, devno: (u32, u32)) -> Vec<Holder>;
}

/// The exclusive run lock, held for the life of this value.
pub(crate) type RunLock = Box<dyn std::any::Any + Send>;

/// The node's files.
pub trait Files: Send + Sync {
    /// The host's `/` found at directory `dir` (`--root`): absolute, free of symlinks, its paths
    /// looked at through this node.
    fn root(&self, dir: &Path) -> Result<HostRoot>;

    /// Whether `path` is a directory (symlinks followed).
    fn is_dir(&self, path: &Path) -> bool;

    /// What is at `path` now (symlinks not followed).
    fn fact(&self, path: &Path) -> Result<FileFact>;

    /// What kind of entry is at `path` (symlinks not followed), without reading it.
    fn kind(&self, path: &Path) -> Result<FileKind>;

    /// Makes one planned file change atomically (nothing for `unchanged`).
    fn apply(&self, change: &FileChange) -> Result<()>;

    /// The names of the entries of directory `dir`, sorted; `None` when it does not exist.
    fn list(&self, dir: &Path) -> Result<Option<Vec<String>>>;

    /// The bytes of the file at `path` (symlinks followed); `None` when it is missing. Anything
    /// but a regular file of at most `max` bytes is an error.
    fn read(&self, path: &Path, max: u64) -> Result<Option<Vec<u8>>>;

    /// The hosts file's bytes (symlinks already resolved); a missing one reads as empty, and
    /// anything but a regular file (a FIFO, a device) is refused at once, never waited on.
    fn read_hosts(&self, path: &Path) -> Result<Vec<u8>>;

    /// Writes `new` to the hosts file at `path`, which holds `old`, when they differ: in place
    /// (whoever holds it mounted sees the change), never empty or torn, the space for the new
    /// bytes secured before the first one changes; created whole where it is missing.
    /// [`HostsWrite::Raced`] when another writer changed it before or during the write.
    fn write_hosts(&self, path: &Path, old: &[u8], new: &[u8]) -> Result<HostsWrite>;

    /// Takes the run lock under `root`, waiting until `deadline` for another run to release it.
    fn lock(&self, root: &HostRoot, deadline: Deadline) -> Result<RunLock>;
}

/// The services of the node: its systemd units (asked and started) and the etcd pod (asked).
#[async_trait::async_trait]
pub(crate) trait Services: Send + Sync {
    /// The version the etcd pod at `endpoint` reports running; `None` when nothing listens
    /// there (not started yet); an error says why else there is none (an answer that is not
    /// etcd's, a refused certificate, no answer in time).
    fn etcd_version(&self, root: &HostRoot, endpoint: &EtcdEndpoint)
        -> Result<Option<EtcdVersion>>;
    /// Whether the host's systemd unit `unit` is active (`systemctl is-active`, in the host's
    /// namespaces when `--root` is the host seen from a container).
    async fn service_active(&self, root: &HostRoot, unit: &str, deadline: Deadline)
        -> Result<bool>;

    /// Starts the host's systemd unit `unit` without waiting for it (`systemctl start
    /// --no-block`, in the host's namespaces when `--root` is the host seen from a container).
    async fn start_service(&self, root: &HostRoot, unit: &str, deadline: Deadline) -> Result<()>;
}

/// A program of the node a step starts: kOps' `channels` tool, a kubeconfig's credential plugin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ChildCommand {
    /// The program, a path under the root.
    pub(crate) program: PathBuf,
    pub(crate) args: Vec<String>,
    /// Variables set for it on top of protokube's own environment.
    pub(crate) env: Vec<(String, String)>,
}

impl ChildCommand {
    pub(crate) fn new(program: PathBuf, args: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self {
            program,
            args: args.into_iter().map(Into::into).collect(),
            env: Vec::new(),
        }
    }
}

/// How a child ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ChildEnd {
    /// It exited (or died of a signal of its own): `status` says how, e.g. `exit status: 1`.
    Exited { success: bool, status: String },
    /// The run's deadline came first: its whole process group was killed.
    Killed,
}

/// What a child did: how it ended and the end of what it wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ChildOutput {
    pub(crate) end: ChildEnd,
    /// The last [`OUTPUT_KEPT`] bytes of its standard output.
    pub(crate) stdout: Vec<u8>,
    /// The last [`OUTPUT_KEPT`] bytes of its standard error.
    pub(crate) stderr: Vec<u8>,
}

/// How much of each output stream of a child is kept in memory: its end.
pub(crate) const OUTPUT_KEPT: usize = 64 << 10;

/// The programs the node runs for protokube.
#[async_trait::async_trait]
pub(crate) trait Processes: Send + Sync {
    /// Runs `command` with no standard input in a process group of its own until it exits or
    /// `deadline` comes, when the whole group is killed. Its output is read until it exits (a
    /// process it leaves behind holding its pipes is not waited for, and is killed with its
    /// group); the last [`OUTPUT_KEPT`] bytes of each stream are kept.
    async fn run(&self, command: &ChildCommand, deadline: Deadline) -> Result<ChildOutput>;
}

/// The whole node: its devices, its files, its services and the programs it runs.
pub(crate) trait Host: Devices + Files + Services + Processes {}

impl<T: Devices + Files + Services + Processes> Host for T {}
