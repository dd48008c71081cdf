//! A node held in memory, for the steps' unit tests: files by path, block devices with what a
//! probe of them would find, a mount table, the processes using a device, the etcd pods running,
//! and a log of every effect made (format, fsck, mount, grow, unmount, file writes) so a test
//! asserts what the step did to the node — and that a dry run did none of it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{anyhow, bail, Result};

use super::{
    ChildCommand, ChildOutput, Devices, FileKind, Files, FoundDevice, FsckResult, Holder,
    HostsWrite, MountPlace, Processes, RunLock, Services, Witnesses, WriteOutcome,
};
use crate::cloud::DeviceHint;
use crate::paths::HostRoot;
use crate::plan::blank::{BlankCheck, Signature, Zeros};
use crate::plan::files::{Desired, FileChange, FileFact};
use crate::plan::manifests::upgrade::{EtcdEndpoint, EtcdVersion};
use crate::plan::mounts::MountEntry;
use crate::report::Action;
use crate::wait::Deadline;

/// What a probe of a device finds on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Content {
    /// Every byte zero: blank.
    Zeros,
    /// No signature, but data (a non-zero byte at this offset).
    Data(u64),
    /// An ext4 filesystem of `size` bytes; `fsck` finds it clean unless `broken`.
    Ext4 {
        uuid: String,
        size: u64,
        broken: bool,
    },
    /// Something else blkid names (another filesystem, a partition table).
    Other(String),
}

/// A block device of the node.
#[derive(Clone, Debug)]
pub(crate) struct Device {
    pub(crate) devno: (u32, u32),
    pub(crate) size: u64,
    pub(crate) content: Content,
}

/// The node's state; tests build it and read it back.
#[derive(Clone, Debug, Default)]
pub(crate) struct Node {
    /// Regular files (bytes, mode) by path.
    pub(crate) files: BTreeMap<PathBuf, (Vec<u8>, u32)>,
    pub(crate) symlinks: BTreeMap<PathBuf, PathBuf>,
    /// Block devices by the path they appear at under the root (`<root>/dev/vdb`).
    pub(crate) devices: BTreeMap<PathBuf, Device>,
    /// Mount point → the device number mounted there.
    pub(crate) mounts: BTreeMap<PathBuf, (u32, u32)>,
    /// Processes using the filesystem on a device.
    pub(crate) users: BTreeMap<(u32, u32), Vec<String>>,
    /// Mount points of a device in another mount namespace (a container's).
    pub(crate) elsewhere: BTreeMap<(u32, u32), Vec<String>>,
    /// What keeps a device's filesystem mounted besides processes (a mount below its mount
    /// point, a loop device or swap file on it).
    pub(crate) pinned: BTreeMap<(u32, u32), Vec<Holder>>,
    /// Whether this process may grow a mounted filesystem.
    pub(crate) grow_online: bool,
    /// Set: growing fails with this message (a `resize2fs` that fails).
    pub(crate) grow_fails: Option<String>,
    /// The etcd pods running, by client port: the version each reports.
    pub(crate) etcd_running: BTreeMap<u16, EtcdVersion>,
    /// What each program does when run, by its path under the root (a program not here does
    /// not exist).
    pub(crate) programs: BTreeMap<PathBuf, ChildOutput>,
    /// The host's systemd units: whether each is active (a unit not here is not).
    pub(crate) services: BTreeMap<String, bool>,
    /// Every effect made on the node, in order (`format /dev/vdb`, `write <path>`,
    /// `run <program> <args>`, …).
    pub(crate) effects: Vec<String>,
}

/// The in-memory node.
#[derive(Debug, Default)]
pub(crate) struct MemoryHost {
    node: Mutex<Node>,
}

impl MemoryHost {
    pub(crate) fn new(node: Node) -> Self {
        Self {
            node: Mutex::new(node),
        }
    }

    /// The node as it is now.
    pub(crate) fn node(&self) -> Node {
        self.lock_node().clone()
    }

    /// Changes the node (a test's own doing, not logged as an effect).
    pub(crate) fn change(&self, f: impl FnOnce(&mut Node)) {
        f(&mut self.lock_node());
    }

    fn lock_node(&self) -> std::sync::MutexGuard<'_, Node> {
        self.node
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn device(&self, path: &Path) -> Result<Device> {
        device_mut(&mut self.lock_node(), path).map(|device| device.clone())
    }

    fn effect(&self, what: String) {
        self.lock_node().effects.push(what);
    }
}

/// The device at `path`, or the error a missing device node gives.
fn device_mut<'n>(node: &'n mut Node, path: &Path) -> Result<&'n mut Device> {
    node.devices
        .get_mut(path)
        .ok_or_else(|| anyhow!("no block device at `{}`", path.display()))
}

impl Devices for MemoryHost {
    fn mount_table(&self) -> Result<Vec<MountEntry>> {
        let node = self.lock_node();
        Ok(node
            .mounts
            .iter()
            .map(|(mountpoint, devno)| MountEntry {
                devno: *devno,
                mountpoint: mountpoint.display().to_string(),
                fstype: "ext4".to_owned(),
                source: node
                    .devices
                    .iter()
                    .find(|(_, d)| d.devno == *devno)
                    .map(|(path, _)| path.display().to_string())
                    .unwrap_or_default(),
                shared: true,
            })
            .collect())
    }

    fn device_number(&self, path: &Path) -> Result<(u32, u32)> {
        Ok(self.device(path)?.devno)
    }

    fn mounted_device(&self, path: &Path) -> Result<(u32, u32)> {
        // Not a mount point: the root filesystem's device.
        Ok(self.lock_node().mounts.get(path).copied().unwrap_or((0, 1)))
    }

    fn find_device(&self, root: &HostRoot, hint: &DeviceHint) -> Result<Option<FoundDevice>> {
        let node = self.lock_node();
        Ok(hint.candidates.iter().find_map(|candidate| {
            let path = root.path(&candidate.path);
            node.devices.get(&path).map(|device| FoundDevice {
                found_at: path.clone(),
                host_path: candidate.path.clone(),
                path,
                devno: device.devno,
            })
        }))
    }

    fn witnesses(&self, device: &Path, check: BlankCheck) -> Result<Witnesses> {
        let device = self.device(device)?;
        let read = match check {
            BlankCheck::Full => device.size,
            BlankCheck::Sampled => device.size.min(1 << 20),
        };
        Ok(match device.content {
            Content::Zeros => Witnesses {
                signature: Signature::None,
                backups: Vec::new(),
                zeros: Some(Zeros::All { bytes: read }),
            },
            Content::Data(at) => Witnesses {
                signature: Signature::None,
                backups: Vec::new(),
                zeros: Some(Zeros::NonZeroAt(at)),
            },
            Content::Ext4 { uuid, .. } => Witnesses {
                signature: Signature::Ext4 { uuid },
                backups: Vec::new(),
                zeros: None,
            },
            Content::Other(what) => Witnesses {
                signature: Signature::Other(what),
                backups: Vec::new(),
                zeros: None,
            },
        })
    }

    fn filesystem_and_device_size(&self, device: &Path) -> Result<(u64, u64)> {
        let found = self.device(device)?;
        match found.content {
            Content::Ext4 { size, .. } => Ok((size, found.size)),
            _ => bail!("`{}` holds no ext4 superblock", device.display()),
        }
    }

    fn format_ext4(&self, device: &Path, uuid: &str) -> Result<()> {
        let mut node = self.lock_node();
        let found = device_mut(&mut node, device)?;
        found.content = Content::Ext4 {
            uuid: uuid.to_owned(),
            size: found.size,
            broken: false,
        };
        node.effects.push(format!("format {}", device.display()));
        Ok(())
    }

    fn fsck(&self, device: &Path) -> Result<FsckResult> {
        self.effect(format!("fsck {}", device.display()));
        match self.device(device)?.content {
            Content::Ext4 { broken: false, .. } => Ok(FsckResult::Clean),
            _ => bail!(
                "`fsck -a {}` found errors it could not correct",
                device.display()
            ),
        }
    }

    fn mount_place(&self, _root: &HostRoot, _mountpoint: &Path) -> Result<MountPlace> {
        Ok(MountPlace::Here)
    }

    fn mount_ext4(
        &self,
        _root: &HostRoot,
        _place: &MountPlace,
        device: &FoundDevice,
        mountpoint: &Path,
    ) -> Result<()> {
        let mut node = self.lock_node();
        if node.mounts.contains_key(mountpoint) {
            bail!("`{}` is a mount point already", mountpoint.display());
        }
        node.mounts.insert(mountpoint.to_owned(), device.devno);
        node.effects.push(format!(
            "mount {} {}",
            device.path.display(),
            mountpoint.display()
        ));
        Ok(())
    }

    fn may_grow_online(&self) -> bool {
        self.lock_node().grow_online
    }

    fn grow_ext4(&self, device: &Path) -> Result<()> {
        let mut node = self.lock_node();
        if let Some(why) = node.grow_fails.clone() {
            bail!("{why}");
        }
        let devno = device_mut(&mut node, device)?.devno;
        if !node.mounts.values().any(|mounted| *mounted == devno) {
            bail!(
                "`{}` is not mounted: protokube grows online only",
                device.display()
            );
        }
        let found = device_mut(&mut node, device)?;
        if let Content::Ext4 { size, .. } = &mut found.content {
            *size = found.size;
        }
        node.effects
            .push(format!("grow online {}", device.display()));
        Ok(())
    }

    fn unmount(&self, _root: &HostRoot, mountpoint: &Path) -> Result<()> {
        let mut node = self.lock_node();
        let Some(devno) = node.mounts.get(mountpoint).copied() else {
            bail!("`{}` is not mounted", mountpoint.display());
        };
        if node.users.get(&devno).is_some_and(|u| !u.is_empty())
            || node.pinned.get(&devno).is_some_and(|p| !p.is_empty())
        {
            bail!("unmounting `{}`: device busy", mountpoint.display());
        }
        node.mounts.remove(mountpoint);
        node.effects
            .push(format!("unmount {}", mountpoint.display()));
        Ok(())
    }

    fn holders(&self, _root: &HostRoot, devno: (u32, u32)) -> Vec<Holder> {
        let node = self.lock_node();
        let mount = |at: &Path, namespace: &str| Holder::Mount {
            at: at.to_owned(),
            namespace: namespace.to_owned(),
        };
        node.mounts
            .iter()
            .filter(|(_, mounted)| **mounted == devno)
            .map(|(at, _)| mount(at, "this mount namespace"))
            .chain(
                node.elsewhere
                    .get(&devno)
                    .into_iter()
                    .flatten()
                    .map(|at| mount(Path::new(at), "another mount namespace")),
            )
            .chain(
                node.users
                    .get(&devno)
                    .into_iter()
                    .flatten()
                    .cloned()
                    .map(Holder::Process),
            )
            .collect()
    }

    fn users_of(&self, devno: (u32, u32)) -> Vec<String> {
        self.lock_node()
            .users
            .get(&devno)
            .cloned()
            .unwrap_or_default()
    }

    fn pinned_by(&self, _root: &HostRoot, _mountpoint: &Path, devno: (u32, u32)) -> Vec<Holder> {
        self.lock_node()
            .pinned
            .get(&devno)
            .cloned()
            .unwrap_or_default()
    }
}

#[async_trait::async_trait]
impl Services for MemoryHost {
    fn etcd_version(
        &self,
        _root: &HostRoot,
        endpoint: &EtcdEndpoint,
    ) -> Result<Option<EtcdVersion>> {
        Ok(self.lock_node().etcd_running.get(&endpoint.port).copied())
    }

    async fn service_active(
        &self,
        _root: &HostRoot,
        unit: &str,
        _deadline: Deadline,
    ) -> Result<bool> {
        Ok(self
            .lock_node()
            .services
            .get(unit)
            .copied()
            .unwrap_or(false))
    }

    async fn start_service(&self, _root: &HostRoot, unit: &str, _deadline: Deadline) -> Result<()> {
        let mut node = self.lock_node();
        node.services.insert(unit.to_owned(), true);
        node.effects.push(format!("start {unit}"));
        Ok(())
    }
}

#[async_trait::async_trait]
impl Processes for MemoryHost {
    async fn run(&self, command: &ChildCommand, _deadline: Deadline) -> Result<ChildOutput> {
        let mut node = self.lock_node();
        let mut line = format!("run {}", command.program.display());
        for arg in &command.args {
            line.push(' ');
            line.push_str(arg);
        }
        node.effects.push(line);
        node.programs.get(&command.program).cloned().ok_or_else(|| {
            anyhow!(
                "starting `{}`: No such file or directory",
                command.program.display()
            )
        })
    }
}

impl Files for MemoryHost {
    /// The root taken literally: the node's symlinks are its own, none on the disk.
    fn root(&self, dir: &Path) -> Result<HostRoot> {
        Ok(HostRoot::new(dir))
    }

    fn is_dir(&self, path: &Path) -> bool {
        let node = self.lock_node();
        let prefix = path.to_path_buf();
        node.files
            .keys()
            .any(|file| file.starts_with(&prefix) && *file != prefix)
    }

    fn fact(&self, path: &Path) -> Result<FileFact> {
        let node = self.lock_node();
        if let Some(target) = node.symlinks.get(path) {
            return Ok(FileFact::Symlink(target.clone()));
        }
        if let Some((bytes, mode)) = node.files.get(path) {
            return Ok(FileFact::File {
                bytes: bytes.clone(),
                mode: *mode,
            });
        }
        let is_dir = node.files.keys().any(|p| p.starts_with(path))
            || node.devices.contains_key(path)
            || node.mounts.contains_key(path);
        Ok(if is_dir {
            FileFact::Other
        } else {
            FileFact::Missing
        })
    }

    fn kind(&self, path: &Path) -> Result<FileKind> {
        let node = self.lock_node();
        Ok(if let Some(target) = node.symlinks.get(path) {
            FileKind::Symlink(target.clone())
        } else if node.files.contains_key(path) {
            FileKind::File
        } else if node.devices.contains_key(path) {
            FileKind::Other
        } else if node
            .files
            .keys()
            .chain(node.symlinks.keys())
            .any(|p| p.starts_with(path))
            || node.mounts.contains_key(path)
        {
            FileKind::Directory
        } else {
            FileKind::Missing
        })
    }

    fn apply(&self, change: &FileChange) -> Result<()> {
        if change.action == Action::Unchanged {
            return Ok(());
        }
        let mut node = self.lock_node();
        let path = change.path.clone();
        node.symlinks.remove(&path);
        match &change.desired {
            Desired::File { bytes, mode } => {
                node.files.insert(path.clone(), (bytes.clone(), *mode));
            }
            Desired::Symlink(target) => {
                node.files.remove(&path);
                node.symlinks.insert(path.clone(), target.clone());
            }
            Desired::LogFile { mode } => {
                node.files
                    .entry(path.clone())
                    .or_insert((Vec::new(), *mode));
            }
            Desired::Absent => {
                node.files.remove(&path);
            }
        }
        node.effects.push(format!("write {}", path.display()));
        Ok(())
    }

    fn list(&self, dir: &Path) -> Result<Option<Vec<String>>> {
        let node = self.lock_node();
        let mut names: Vec<String> = node
            .files
            .keys()
            .chain(node.symlinks.keys())
            .filter(|p| p.parent() == Some(dir))
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        names.sort();
        names.dedup();
        Ok((!names.is_empty()).then_some(names))
    }

    fn read(&self, path: &Path, max: u64) -> Result<Option<Vec<u8>>> {
        let node = self.lock_node();
        let path = node.symlinks.get(path).map_or(path, PathBuf::as_path);
        match node.files.get(path) {
            Some((bytes, _)) if bytes.len() as u64 > max => {
                bail!("`{}` is more than {max} bytes", path.display())
            }
            Some((bytes, _)) => Ok(Some(bytes.clone())),
            None => Ok(None),
        }
    }

    fn read_hosts(&self, path: &Path) -> Result<Vec<u8>> {
        Ok(self.read(path, u64::MAX)?.unwrap_or_default())
    }

    fn write_hosts(&self, path: &Path, old: &[u8], new: &[u8]) -> Result<HostsWrite> {
        let mut node = self.lock_node();
        let current = node.files.get(path).map(|(bytes, _)| bytes.as_slice());
        if current.unwrap_or_default() != old {
            return Ok(HostsWrite::Raced);
        }
        if old == new && current.is_some() {
            return Ok(HostsWrite::Done(WriteOutcome::Unchanged));
        }
        let created = node
            .files
            .insert(path.to_owned(), (new.to_vec(), 0o644))
            .is_none();
        node.effects.push(format!("write {}", path.display()));
        Ok(HostsWrite::Done(if created {
            WriteOutcome::Created
        } else {
            WriteOutcome::Updated
        }))
    }

    fn lock(&self, _root: &HostRoot, _deadline: Deadline) -> Result<RunLock> {
        Ok(Box::new(()))
    }
}
