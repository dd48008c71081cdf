//! Block devices and mounts on the real node: finding a volume's device, reading the witnesses of
//! the blank proof (blkid, backup superblocks, zeros), `mkfs`, `fsck`, mounting (in the host's
//! mount namespace when run from a container), growing, unmounting, a device's users.

use std::collections::BTreeSet;
use std::io::{Read as _, Seek as _, SeekFrom};
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{anyhow, bail, Context as _, Result};

use crate::cloud::DeviceHint;
use crate::host::{FoundDevice, FsckResult, Holder, MountPlace, Witnesses};
use crate::paths::HostRoot;
use crate::plan::blank::{
    backup_superblock_offsets, parse_blkid, recognise_backup, zero_check_ranges, BlankCheck,
    Signature, Zeros, BACKUP_READ,
};
use crate::plan::mounts::{check_device, mount_containing, parse_mountinfo, MountEntry};

/// The current mounts of this process's mount namespace.
pub(crate) fn mount_table() -> Result<Vec<MountEntry>> {
    let text = fs_err::read_to_string("/proc/self/mountinfo").context("reading the mount table")?;
    Ok(parse_mountinfo(&text))
}

/// `(major, minor)` of a `dev_t` (glibc's encoding).
pub(crate) fn split_devno(dev: u64) -> (u32, u32) {
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    (major as u32, minor as u32)
}

/// `(major, minor)` of the block device at `path` (symlinks followed).
pub(crate) fn device_number(path: &Path) -> Result<(u32, u32)> {
    let meta = fs_err::metadata(path).context("reading the block device")?;
    if !std::os::unix::fs::FileTypeExt::is_block_device(&meta.file_type()) {
        bail!("`{}` is not a block device", path.display());
    }
    Ok(split_devno(meta.rdev()))
}

/// Looks for the block device `hint` describes under `root` (`None` while it has not appeared)
/// and checks it may be that volume's ([`check_device`]: a partition is refused, a by-id link
/// must lead to an NVMe namespace, an NVMe namespace must carry the volume's serial in sysfs
/// where the provider names one).
pub(crate) fn find_device(root: &HostRoot, hint: &DeviceHint) -> Result<Option<FoundDevice>> {
    for candidate in &hint.candidates {
        let found_at = root.path(&candidate.path);
        if fs_err::symlink_metadata(&found_at).is_err() {
            continue;
        }
        let path = root.resolve(&candidate.path)?;
        if !path.exists() {
            // A dangling link: udev has not finished.
            continue;
        }
        let devno = device_number(&path)?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let serial_path = root.resolve(format!("/sys/block/{name}/device/serial"))?;
        let serial = match fs_err::read_to_string(&serial_path) {
            Ok(serial) => Some(serial),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
            Err(err) => return Err(err).context("reading the NVMe serial"),
        };
        check_device(hint, &name, candidate, serial.as_deref()).map_err(|why| {
            anyhow!(
                "`{}` leads to `{}`: {why}",
                found_at.display(),
                path.display()
            )
        })?;
        return Ok(Some(FoundDevice {
            host_path: root.host_path_of(&path),
            found_at,
            path,
            devno,
        }));
    }
    Ok(None)
}

/// `blkid -p` on the device.
pub(crate) fn signature(path: &Path) -> Result<Signature> {
    let output = run_tool("blkid", &["-p", "-o", "export"], path, Orphan::DiesWith)?;
    Ok(parse_blkid(
        output.status.code(),
        &String::from_utf8_lossy(&output.stdout),
        &String::from_utf8_lossy(&output.stderr),
    ))
}

/// The size of the device in bytes; 0 or an error refuses any format.
pub(crate) fn device_size(file: &mut fs_err::File, path: &Path) -> Result<u64> {
    let size = file
        .seek(SeekFrom::End(0))
        .with_context(|| format!("finding the size of `{}`", path.display()))?;
    if size == 0 {
        bail!("device `{}` reports a size of 0 bytes", path.display());
    }
    Ok(size)
}

/// Reads what the zero check reads; stops at the first non-zero byte. Any open or read error is
/// an error (and so no format).
pub(crate) fn read_zeros(path: &Path, check: BlankCheck) -> Result<Zeros> {
    let mut file = fs_err::File::open(path).context("opening the device for reading")?;
    let size = device_size(&mut file, path)?;
    let mut buffer = vec![0u8; 1 << 20];
    let mut bytes = 0;
    for (start, len) in zero_check_ranges(size, check) {
        file.seek(SeekFrom::Start(start))
            .with_context(|| format!("seeking `{}` to {start}", path.display()))?;
        let mut done = 0;
        while done < len {
            let n = (len - done).min(buffer.len() as u64) as usize;
            let buf = &mut buffer[..n];
            file.read_exact(buf).with_context(|| {
                format!("reading `{}` at offset {}", path.display(), start + done)
            })?;
            if let Some(i) = buf.iter().position(|b| *b != 0) {
                return Ok(Zeros::NonZeroAt(start + done + i as u64));
            }
            done += n as u64;
        }
        bytes += len;
    }
    Ok(Zeros::All { bytes })
}

/// The backup superblocks found at their standard offsets (docs/safety.md: a filesystem whose start
/// was wiped still has them).
pub(crate) fn read_backup_superblocks(path: &Path) -> Result<Vec<String>> {
    let mut file = fs_err::File::open(path).context("opening the device for reading")?;
    let size = device_size(&mut file, path)?;
    let mut buffer = vec![0u8; BACKUP_READ as usize];
    let mut found = Vec::new();
    for (offset, probe) in backup_superblock_offsets(size) {
        file.seek(SeekFrom::Start(offset))
            .with_context(|| format!("seeking `{}` to {offset}", path.display()))?;
        file.read_exact(&mut buffer)
            .with_context(|| format!("reading `{}` at offset {offset}", path.display()))?;
        if let Some(what) = recognise_backup(offset, probe, &buffer) {
            found.push(what);
        }
    }
    found.dedup();
    Ok(found)
}

/// The witnesses the device itself gives: `blkid -p`, and only when that finds nothing, the
/// backup superblocks and the zero check.
pub(crate) fn read_witnesses(path: &Path, check: BlankCheck) -> Result<Witnesses> {
    let signature = signature(path)?;
    if signature != Signature::None {
        return Ok(Witnesses {
            signature,
            backups: Vec::new(),
            zeros: None,
        });
    }
    let backups = read_backup_superblocks(path)?;
    let zeros = read_zeros(path, check)?;
    Ok(Witnesses {
        signature,
        backups,
        zeros: Some(zeros),
    })
}

/// What becomes of a tool when protokube dies before it ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Orphan {
    /// Killed with it (`PR_SET_PDEATHSIG`): `mkfs`, whose interruption the intent record covers.
    DiesWith,
    /// Left to finish: a repair (`fsck`) or a grow (`resize2fs`) cut short can leave a
    /// filesystem worse than either end.
    RunsOn,
}

/// Runs a tool on a device; with [`Orphan::DiesWith`] the child dies with protokube (a killed run
/// leaves no orphan `mkfs` holding the device).
fn run_tool(
    program: &str,
    args: &[&str],
    device: &Path,
    orphan: Orphan,
) -> Result<std::process::Output> {
    use std::os::unix::process::CommandExt as _;
    let mut command = Command::new(program);
    command.args(args).arg(device).stdin(Stdio::null());
    let parent = rustix::process::getpid();
    if orphan == Orphan::DiesWith {
        // SAFETY: between fork and exec only two system calls (rustix makes them directly,
        // without allocating): prctl and getppid.
        unsafe {
            command.pre_exec(move || {
                use rustix::process::{getppid, set_parent_process_death_signal, Signal};
                set_parent_process_death_signal(Some(Signal::KILL))?;
                // The parent may have died before the prctl: then the child is not started.
                if getppid() != Some(parent) {
                    return Err(rustix::io::Errno::SRCH.into());
                }
                Ok(())
            });
        }
    }
    command
        .output()
        .with_context(|| format!("running `{program}`"))
}

/// Creates an ext4 filesystem with the UUID `uuid`, then checks the device probes as exactly
/// that. Only call on a device every witness proved blank (or protokube's own interrupted one).
pub(crate) fn format_ext4(path: &Path, uuid: &str) -> Result<()> {
    let output = run_tool("mkfs.ext4", &["-q", "-U", uuid], path, Orphan::DiesWith)?;
    if !output.status.success() {
        bail!(
            "`mkfs.ext4 {}` failed ({}): {}",
            path.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    match signature(path)? {
        Signature::Ext4 { uuid: made } if made == uuid => Ok(()),
        Signature::Ext4 { uuid: made } => bail!(
            "after mkfs.ext4, `{}` probes as ext4 with UUID {made}, not the {uuid} it was given",
            path.display()
        ),
        Signature::None => bail!(
            "after mkfs.ext4, `{}` probes as blank: the format did not reach the device",
            path.display()
        ),
        Signature::Other(found) => bail!("after mkfs.ext4, `{}` probes as {found}", path.display()),
    }
}

/// `fsck -a` before mounting an existing filesystem: 0 clean; 1–3 corrected; 4 or more refuse.
pub(crate) fn fsck(path: &Path) -> Result<FsckResult> {
    let output = run_tool("fsck", &["-a", "-T"], path, Orphan::RunsOn)?;
    match output.status.code() {
        Some(0) => Ok(FsckResult::Clean),
        Some(code @ 1..=3) => Ok(FsckResult::Corrected(code)),
        code => Err(anyhow!(
            "`fsck -a {}` found errors it could not correct ({}): {}; repair the filesystem by \
             hand before protokube mounts it",
            path.display(),
            code.map_or_else(|| "killed".to_owned(), |c| format!("exit {c}")),
            String::from_utf8_lossy(&output.stdout)
                .lines()
                .chain(String::from_utf8_lossy(&output.stderr).lines())
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join("; ")
        )),
    }
}

/// The device a path is on (`st_dev`): for a mount point, the device mounted there.
pub(crate) fn mounted_device(path: &Path) -> Result<(u32, u32)> {
    Ok(split_devno(fs_err::metadata(path)?.dev()))
}

/// Where mounts under `mountpoint` go; refused when the host would not see them: this process
/// in a mount namespace of its own that does not propagate to init's (a unit with
/// `PrivateMounts=`, a container without the host's /proc under `--root`).
pub(crate) fn mount_place(root: &HostRoot, mountpoint: &Path) -> Result<MountPlace> {
    if let Some(host) = host_mount_namespace(root) {
        return Ok(MountPlace::Host(host));
    }
    check_mounts_reach_init(mountpoint)?;
    Ok(MountPlace::Here)
}

/// Creates the mount point (mode 0750) and mounts the ext4 device there (`noatime`) in `place`
/// (and here too when the host's mount does not propagate back), then checks the mount point
/// shows that device here.
pub(crate) fn mount_ext4(
    root: &HostRoot,
    place: &MountPlace,
    device: &FoundDevice,
    mountpoint: &Path,
) -> Result<()> {
    fs_err::create_dir_all(mountpoint).context("creating the mount point")?;
    root.refuse_symlink(mountpoint)?;
    fs_err::set_permissions(mountpoint, std::fs::Permissions::from_mode(0o750))
        .context("setting the mount point's mode")?;
    let mount_here = || {
        rustix::mount::mount(
            &device.path,
            mountpoint,
            "ext4",
            rustix::mount::MountFlags::NOATIME,
            None,
        )
        .map_err(std::io::Error::from)
        .with_context(|| {
            format!(
                "mounting `{}` at `{}`",
                device.path.display(),
                mountpoint.display()
            )
        })
    };
    match place {
        MountPlace::Host(host) => {
            let (source, target) = (
                root.host_path_of(&device.path),
                root.host_path_of(mountpoint),
            );
            mount_in_namespace(host, &source, &target).with_context(|| {
                format!(
                    "mounting `{}` at `{}` in the host's mount namespace (`{}`)",
                    source.display(),
                    target.display(),
                    host.display()
                )
            })?;
            if mounted_device(mountpoint)? != device.devno {
                // The host's mounts do not propagate into this container: mount here too.
                mount_here()?;
            }
        }
        MountPlace::Here => mount_here()?,
    }
    let shown = mounted_device(mountpoint)?;
    if shown != device.devno {
        bail!(
            "after mounting, `{}` shows device {}:{}, not {}:{}",
            mountpoint.display(),
            shown.0,
            shown.1,
            device.devno.0,
            device.devno.1
        );
    }
    Ok(())
}

/// `(device, inode)` of a namespace file, when it can be read and is one (on `nsfs`).
fn namespace_id(path: &Path) -> Option<(u64, u64)> {
    const NSFS_MAGIC: i64 = 0x6e73_6673;
    let fs = rustix::fs::statfs(path).ok()?;
    if fs.f_type != NSFS_MAGIC {
        return None;
    }
    fs_err::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// The host's mount namespace, when `--root` is the host's root seen from another one.
pub(crate) fn host_mount_namespace(root: &HostRoot) -> Option<PathBuf> {
    if root.dir() == Path::new("/") {
        return None;
    }
    let host = root.path("/proc/1/ns/mnt");
    let theirs = namespace_id(&host)?;
    let ours = namespace_id(Path::new("/proc/self/ns/mnt"))?;
    (theirs != ours).then_some(host)
}

/// Refuses a mount init's mount namespace would not see: this process in a mount namespace of
/// its own, and the mount point on a mount that does not propagate.
fn check_mounts_reach_init(mountpoint: &Path) -> Result<()> {
    let (Some(init), Some(ours)) = (
        namespace_id(Path::new("/proc/1/ns/mnt")),
        namespace_id(Path::new("/proc/self/ns/mnt")),
    ) else {
        // Init's namespace cannot be read (another PID namespace): nothing to compare.
        return Ok(());
    };
    if init == ours {
        return Ok(());
    }
    let table = mount_table()?;
    let parent = mountpoint.parent().unwrap_or(mountpoint);
    if mount_containing(&table, parent).is_some_and(|m| m.shared) {
        return Ok(());
    }
    bail!(
        "refusing to mount at `{}`: protokube runs in a mount namespace of its own that does not \
         propagate mounts to the host's, so kubelet would never see the volume; run protokube in \
         the host's mount namespace (no `PrivateMounts=`/`MountFlags=` in its unit, or \
         `nsenter --target 1 --mount`), or in a container give it the host's root with its /proc \
         (`-v /:/rootfs`, `--root /rootfs`) so it mounts there",
        mountpoint.display()
    )
}

/// The stage of a mount in another namespace that failed, as the forked child reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NamespaceStage {
    Enter = 1,
    Mount = 2,
    Unmount = 3,
}

/// The error for a child's report `(stage, errno)`: which stage failed, with its own errno (any
/// errno, `EUCLEAN` 117 included, is read as what it is).
fn namespace_failure(stage: i32, errno: i32) -> anyhow::Error {
    let error = std::io::Error::from_raw_os_error(errno);
    if stage == NamespaceStage::Enter as i32 {
        anyhow::Error::new(error).context("entering the host's mount namespace (setns)")
    } else if stage == NamespaceStage::Unmount as i32 {
        anyhow::Error::new(error).context("umount(2) in the host's mount namespace")
    } else {
        anyhow::Error::new(error).context("mount(2) in the host's mount namespace")
    }
}

/// What a forked child does inside another mount namespace.
enum NamespaceOp<'a> {
    /// Mount the ext4 `source` at `target`, `noatime`.
    Mount { source: &'a Path, target: &'a Path },
    /// Unmount `target` (not lazily).
    Unmount { target: &'a Path },
}

/// Mounts `source` at `target` (ext4, `noatime`) inside the mount namespace `namespace`.
fn mount_in_namespace(namespace: &Path, source: &Path, target: &Path) -> Result<()> {
    in_namespace(namespace, NamespaceOp::Mount { source, target })
}

/// Does `op` inside the mount namespace `namespace`: a forked child enters it (a threaded
/// process cannot) and acts by those paths there; it reports a failure as `(stage, errno)` on a
/// pipe, so the stage and the errno stay apart.
fn in_namespace(namespace: &Path, op: NamespaceOp<'_>) -> Result<()> {
    use rustix::mount::{MountFlags, UnmountFlags};
    use rustix::process::{Pid, WaitOptions};
    use rustix::thread::LinkNameSpaceType;
    use std::ffi::CString;
    use std::io::Read as _;
    use std::os::fd::AsFd as _;
    use std::os::unix::ffi::OsStrExt as _;
    let ns = fs_err::File::open(namespace)?;
    // Everything the child uses is made before the fork: after it, it may not allocate.
    let c = |p: &Path| CString::new(p.as_os_str().as_bytes()).context("a path with a NUL byte");
    let (source, target, unmount) = match op {
        NamespaceOp::Mount { source, target } => (c(source)?, c(target)?, false),
        NamespaceOp::Unmount { target } => (CString::default(), c(target)?, true),
    };
    let (report, writer) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
        .context("creating the child's report pipe")?;
    // SAFETY: between fork and _exit the child makes only system calls (rustix makes them
    // directly, without allocating) on data prepared before the fork. std has no fork.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error()).context("fork");
    }
    if pid == 0 {
        let result =
            rustix::thread::move_into_link_name_space(ns.as_fd(), Some(LinkNameSpaceType::Mount))
                .map_err(|errno| (NamespaceStage::Enter, errno))
                .and_then(|()| {
                    if unmount {
                        rustix::mount::unmount(target.as_c_str(), UnmountFlags::empty())
                            .map_err(|errno| (NamespaceStage::Unmount, errno))
                    } else {
                        rustix::mount::mount(
                            source.as_c_str(),
                            target.as_c_str(),
                            c"ext4",
                            MountFlags::NOATIME,
                            None,
                        )
                        .map_err(|errno| (NamespaceStage::Mount, errno))
                    }
                });
        let code = match result {
            Ok(()) => 0,
            Err((stage, errno)) => {
                let mut message = [0_u8; 8];
                message[..4].copy_from_slice(&(stage as i32).to_ne_bytes());
                message[4..].copy_from_slice(&errno.raw_os_error().to_ne_bytes());
                let _ = rustix::io::write(&writer, &message);
                1
            }
        };
        // SAFETY: ends the forked child without running the parent's exit handlers.
        unsafe { libc::_exit(code) };
    }
    drop(writer);
    let mut message = Vec::new();
    let read = std::fs::File::from(report).read_to_end(&mut message);
    let status = Pid::from_raw(pid)
        .map(|child| rustix::process::waitpid(Some(child), WaitOptions::empty()))
        .transpose()
        .context("waiting for the mounting child")?
        .flatten()
        .map(|(_, status)| status);
    read.context("reading the mounting child's report")?;
    if let Ok(words) = <[u8; 8]>::try_from(message.as_slice()) {
        let word =
            |i: usize| i32::from_ne_bytes([words[i], words[i + 1], words[i + 2], words[i + 3]]);
        return Err(namespace_failure(word(0), word(4)));
    }
    match status.and_then(rustix::process::WaitStatus::exit_status) {
        Some(0) => Ok(()),
        Some(code) => bail!("the mounting child exited with {code} without a report"),
        None => bail!(
            "the mounting child died without a report (killed by signal {})",
            status
                .and_then(rustix::process::WaitStatus::terminating_signal)
                .map_or_else(|| "unknown".to_owned(), |s| s.to_string())
        ),
    }
}

/// The processes that use the filesystem on device `devno` (open files, working or root
/// directory, executable or mapped files), as `pid (command)`, this process excluded; what
/// `fuser -m` finds, read from `/proc` so it works across mount namespaces.
pub(crate) fn users_of(devno: (u32, u32)) -> Vec<String> {
    let own = std::process::id().to_string();
    let Ok(procs) = fs_err::read_dir("/proc") else {
        return Vec::new();
    };
    let on_device =
        |path: &Path| fs_err::metadata(path).is_ok_and(|m| split_devno(m.dev()) == devno);
    // The block device itself open (`dd`, a backup tool), not a file on its filesystem.
    let opens_device = |path: &Path| {
        use std::os::unix::fs::FileTypeExt as _;
        fs_err::metadata(path)
            .is_ok_and(|m| m.file_type().is_block_device() && split_devno(m.rdev()) == devno)
    };
    let maps_device = format!("{:02x}:{:02x}", devno.0, devno.1);
    let mut users = Vec::new();
    for entry in procs.flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|b| b.is_ascii_digit()) || pid == own {
            continue;
        }
        let dir = entry.path();
        let mut uses = ["cwd", "root", "exe"]
            .iter()
            .any(|link| on_device(&dir.join(link)));
        if !uses {
            uses = fs_err::read_dir(dir.join("fd")).is_ok_and(|fds| {
                fds.flatten()
                    .any(|fd| on_device(&fd.path()) || opens_device(&fd.path()))
            });
        }
        if !uses {
            uses = fs_err::read_to_string(dir.join("maps")).is_ok_and(|maps| {
                maps.lines()
                    .any(|l| l.split_whitespace().nth(3) == Some(maps_device.as_str()))
            });
        }
        if uses {
            let command = fs_err::read_to_string(dir.join("comm")).unwrap_or_default();
            users.push(format!("{pid} ({})", command.trim()));
        }
    }
    users
}

/// Unmounts the filesystem at `mountpoint` (not lazily: a filesystem in use stays mounted and
/// the error says so), here and, where protokube mounted it in the host's mount namespace too
/// (`--root` the host's root seen from a container), there.
pub(crate) fn unmount(root: &HostRoot, mountpoint: &Path) -> Result<()> {
    let here = mount_table()?
        .iter()
        .any(|m| Path::new(&m.mountpoint) == mountpoint);
    if here {
        rustix::mount::unmount(mountpoint, rustix::mount::UnmountFlags::empty())
            .map_err(std::io::Error::from)
            .with_context(|| format!("unmounting `{}`", mountpoint.display()))?;
    }
    if let Some(host) = host_mount_namespace(root) {
        let target = root.host_path_of(mountpoint);
        let host_table = root.path("/proc/1/mountinfo");
        let mounted_there = fs_err::read_to_string(&host_table)
            .map(|text| parse_mountinfo(&text))
            .unwrap_or_default()
            .iter()
            .any(|m| Path::new(&m.mountpoint) == target);
        if mounted_there {
            in_namespace(&host, NamespaceOp::Unmount { target: &target }).with_context(|| {
                format!(
                    "unmounting `{}` in the host's mount namespace (`{}`)",
                    target.display(),
                    host.display()
                )
            })?;
        }
    } else if !here {
        bail!("`{}` is not mounted", mountpoint.display());
    }
    Ok(())
}

/// Where the filesystem on device `devno` is still in use, each said with where it is: its
/// mounts in every mount namespace this process can see (its own, the host's through
/// `--root`, every other process's, containers' included), processes with a file on it or the
/// device itself open, and kernel holders (device-mapper, md, a loop device). Empty: nothing
/// holds it, and it may be detached.
pub(crate) fn holders(root: &HostRoot, devno: (u32, u32)) -> Vec<Holder> {
    let mut found = BTreeSet::new();
    let mut seen_namespaces = BTreeSet::new();
    let mut tables: Vec<(String, PathBuf)> = vec![(
        "this mount namespace".to_owned(),
        PathBuf::from("/proc/self/mountinfo"),
    )];
    if let Some(ns) = namespace_id(Path::new("/proc/self/ns/mnt")) {
        seen_namespaces.insert(ns);
    }
    if root.dir() != Path::new("/") {
        if let Some(ns) = namespace_id(&root.path("/proc/1/ns/mnt")) {
            if seen_namespaces.insert(ns) {
                tables.push((
                    "the host's mount namespace".to_owned(),
                    root.path("/proc/1/mountinfo"),
                ));
            }
        }
    }
    if let Ok(procs) = fs_err::read_dir("/proc") {
        for entry in procs.flatten() {
            let pid = entry.file_name().to_string_lossy().into_owned();
            if !pid.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            if let Some(ns) = namespace_id(&entry.path().join("ns/mnt")) {
                if seen_namespaces.insert(ns) {
                    tables.push((
                        format!("the mount namespace of process {pid}"),
                        entry.path().join("mountinfo"),
                    ));
                }
            }
        }
    }
    for (namespace, table) in tables {
        let Ok(text) = fs_err::read_to_string(&table) else {
            continue;
        };
        for entry in parse_mountinfo(&text)
            .into_iter()
            .filter(|m| m.devno == devno)
        {
            found.insert(Holder::Mount {
                at: PathBuf::from(entry.mountpoint),
                namespace: namespace.clone(),
            });
        }
    }
    found.extend(users_of(devno).into_iter().map(Holder::Process));
    let sysfs = format!("/sys/dev/block/{}:{}/holders", devno.0, devno.1);
    if let Ok(kernel) = fs_err::read_dir(&sysfs) {
        found.extend(
            kernel
                .flatten()
                .map(|h| Holder::Kernel(h.file_name().to_string_lossy().into_owned())),
        );
    }
    found.into_iter().collect()
}

/// What besides processes keeps the filesystem of `devno` at `mountpoint` from being unmounted:
/// mounts below the mount point (in this mount namespace and, from a container, the host's),
/// loop devices whose backing file is on it (sysfs' `backing_file`), swap files on it
/// (`/proc/swaps`). A file is on the filesystem when it lives on its device, or — deleted or
/// out of sight — when its path is under the mount point.
pub(crate) fn pinned_by(root: &HostRoot, mountpoint: &Path, devno: (u32, u32)) -> Vec<Holder> {
    let mut found = BTreeSet::new();
    let mut tables = vec![(
        "this mount namespace".to_owned(),
        PathBuf::from("/proc/self/mountinfo"),
        mountpoint.to_owned(),
    )];
    if host_mount_namespace(root).is_some() {
        tables.push((
            "the host's mount namespace".to_owned(),
            root.path("/proc/1/mountinfo"),
            root.host_path_of(mountpoint),
        ));
    }
    for (namespace, table, at) in tables {
        let Ok(text) = fs_err::read_to_string(&table) else {
            continue;
        };
        for entry in parse_mountinfo(&text) {
            let below = Path::new(&entry.mountpoint);
            if below != at && below.starts_with(&at) {
                found.insert(Holder::Below {
                    at: below.to_owned(),
                    namespace: namespace.clone(),
                });
            }
        }
    }
    let on_filesystem = |file: &Path| {
        fs_err::metadata(file).map_or_else(
            |_| file.starts_with(mountpoint),
            |meta| split_devno(meta.dev()) == devno,
        )
    };
    if let Ok(block) = fs_err::read_dir("/sys/block") {
        for entry in block.flatten() {
            let Ok(backing) = fs_err::read_to_string(entry.path().join("loop/backing_file")) else {
                continue;
            };
            let file = PathBuf::from(
                backing
                    .trim_end_matches('\n')
                    .trim_end_matches(" (deleted)"),
            );
            if on_filesystem(&file) {
                found.insert(Holder::LoopDevice {
                    device: entry.file_name().to_string_lossy().into_owned(),
                    file,
                });
            }
        }
    }
    if let Ok(swaps) = fs_err::read_to_string("/proc/swaps") {
        for line in swaps.lines().skip(1) {
            let mut fields = line.split_whitespace();
            let (Some(name), Some("file")) = (fields.next(), fields.next()) else {
                continue;
            };
            let file = PathBuf::from(unescape_octal(name).trim_end_matches(" (deleted)"));
            if on_filesystem(&file) {
                found.insert(Holder::SwapFile(file));
            }
        }
    }
    found.into_iter().collect()
}

/// `/proc` escapes blanks in paths as `\040` (and tabs, newlines, backslashes likewise).
fn unescape_octal(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|digits| bytes[i] == b'\\' && digits.iter().all(|d| (b'0'..=b'7').contains(d)));
        if let Some(byte) =
            octal.and_then(|d| u8::from_str_radix(std::str::from_utf8(d).ok()?, 8).ok())
        {
            out.push(byte);
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The size in bytes of the ext4 filesystem on `path` (from its superblock) and of the device.
pub(crate) fn filesystem_and_device_size(path: &Path) -> Result<(u64, u64)> {
    let mut file = fs_err::File::open(path).context("opening the device for reading")?;
    let device = device_size(&mut file, path)?;
    let mut superblock = vec![0u8; 1024];
    file.seek(SeekFrom::Start(1024))
        .and_then(|_| file.read_exact(&mut superblock))
        .with_context(|| format!("reading the superblock of `{}`", path.display()))?;
    let filesystem = crate::plan::mounts::ext4_size(&superblock)
        .ok_or_else(|| anyhow!("`{}` holds no ext4 superblock", path.display()))?;
    Ok((filesystem, device))
}

/// Whether this process may grow a mounted ext4 filesystem: the kernel asks for
/// `CAP_SYS_RESOURCE` (containers and some units drop it).
pub(crate) fn may_grow_online() -> bool {
    const CAP_SYS_RESOURCE: u32 = 24;
    fs_err::read_to_string("/proc/self/status").is_ok_and(|status| {
        status
            .lines()
            .find_map(|l| l.strip_prefix("CapEff:"))
            .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
            .is_some_and(|caps| caps & (1 << CAP_SYS_RESOURCE) != 0)
    })
}

/// Grows the ext4 filesystem on `path` to the device's size with `resize2fs`: mounted, the
/// kernel grows it online; not mounted, after the forced check `resize2fs` asks for.
pub(crate) fn grow_ext4(path: &Path) -> Result<()> {
    let output = run_tool("resize2fs", &[], path, Orphan::RunsOn)?;
    if !output.status.success() {
        bail!(
            "`resize2fs {}` failed ({}): {}",
            path.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_escapes_in_paths_are_undone() {
        assert_eq!(unescape_octal("/mnt/a\\040b\\011c"), "/mnt/a b\tc");
        assert_eq!(unescape_octal("/swap\\040(deleted)"), "/swap (deleted)");
        assert_eq!(unescape_octal("/plain\\x"), "/plain\\x");
    }

    #[test]
    fn device_numbers_split_like_glibc() {
        assert_eq!(split_devno(0x0703), (7, 3));
        assert_eq!(split_devno((259 << 8) | 1), (259, 1));
        // glibc's makedev: large majors and minors use the high bits.
        let makedev = |major: u64, minor: u64| {
            ((major & 0xfff) << 8)
                | ((major & !0xfff) << 32)
                | (minor & 0xff)
                | ((minor & !0xff) << 12)
        };
        assert_eq!(split_devno(makedev(7, 0x12345)), (7, 0x12345));
        assert_eq!(split_devno(makedev(0x1234, 5)), (0x1234, 5));
    }

    #[test]
    fn a_namespace_failure_names_its_stage_and_its_own_errno() {
        // EUCLEAN (117) from mount(2) is a mount failure, not a namespace one.
        let mount = format!(
            "{:#}",
            namespace_failure(NamespaceStage::Mount as i32, libc::EUCLEAN)
        );
        assert!(
            mount.starts_with("mount(2) in the host's mount namespace"),
            "{mount}"
        );
        assert!(mount.contains("Structure needs cleaning"), "{mount}");
        let enter = format!(
            "{:#}",
            namespace_failure(NamespaceStage::Enter as i32, libc::EPERM)
        );
        assert!(
            enter.starts_with("entering the host's mount namespace"),
            "{enter}"
        );
        assert!(enter.contains("Operation not permitted"), "{enter}");
    }

    #[test]
    #[ignore = "needs root: enters a mount namespace; scripts/test runs it as root"]
    fn a_failing_mount_in_a_namespace_is_reported_as_the_mount() {
        let dir = tempfile::tempdir().unwrap();
        let error = mount_in_namespace(
            Path::new("/proc/self/ns/mnt"),
            &dir.path().join("no-such-device"),
            dir.path(),
        )
        .unwrap_err();
        let message = format!("{error:#}");
        assert!(message.starts_with("mount(2)"), "{message}");
        assert!(message.contains("No such file or directory"), "{message}");
    }
}
