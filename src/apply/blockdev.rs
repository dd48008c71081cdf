//! Block devices and mounts on this host: finding a volume's device, probing it before any
//! `mkfs`, `fsck`, and mounting. This module is the only user of `sys-mount` and the only reader
//! of the mount table.

use std::io::{Read as _, Seek as _, SeekFrom};
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{anyhow, bail, Context as _, Result};

use crate::paths::HostRoot;
use crate::plan::mounts::{decide_probe, parse_mountinfo, MountEntry, Probe};

/// The current mounts of this process's mount namespace.
pub fn mount_table() -> Result<Vec<MountEntry>> {
    let text = fs_err::read_to_string("/proc/self/mountinfo").context("reading the mount table")?;
    Ok(parse_mountinfo(&text))
}

/// `(major, minor)` of a `dev_t` (glibc's encoding).
pub fn split_devno(dev: u64) -> (u32, u32) {
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    (major as u32, minor as u32)
}

/// `(major, minor)` of the block device at `path` (symlinks followed).
pub fn device_number(path: &Path) -> Result<(u32, u32)> {
    let meta = fs_err::metadata(path).context("reading the block device")?;
    if !std::os::unix::fs::FileTypeExt::is_block_device(&meta.file_type()) {
        bail!("`{}` is not a block device", path.display());
    }
    Ok(split_devno(meta.rdev()))
}

/// Where a volume's block device was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundDevice {
    /// The path as seen from here (under `--root`).
    pub path: PathBuf,
    /// The same path on the host (without `--root`), for the state file.
    pub host_path: PathBuf,
    /// Found through the NVMe `by-id` link (Nitro instances).
    pub nvme: bool,
}

/// The host paths at which the device of `volume_id`, attached as `requested`, can appear, in
/// the order they are tried: the NVMe `by-id` link (kops#4844), the requested name, its `sd*`
/// alias.
pub fn device_candidates(volume_id: &str, requested: &str) -> Vec<(PathBuf, bool)> {
    let mut candidates = vec![(
        PathBuf::from(format!(
            "/dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_{}",
            volume_id.replace('-', "")
        )),
        true,
    )];
    candidates.push((PathBuf::from(requested), false));
    if let Some(slot) = requested.strip_prefix("/dev/xvd") {
        candidates.push((PathBuf::from(format!("/dev/sd{slot}")), false));
    }
    candidates
}

/// Looks for the block device of `volume_id` under `root`; `None` while it has not appeared.
pub fn find_device(root: &HostRoot, volume_id: &str, requested: &str) -> Option<FoundDevice> {
    device_candidates(volume_id, requested)
        .into_iter()
        .find_map(|(host_path, nvme)| {
            let path = root.path(&host_path);
            path.exists().then_some(FoundDevice {
                path,
                host_path,
                nvme,
            })
        })
}

/// On NVMe, checks that the controller's serial (`/sys/block/<dev>/device/serial`, under root)
/// names this volume, so a stale or wrong link can never point us at another volume. Skipped
/// when sysfs does not have the file.
pub fn check_nvme_serial(root: &HostRoot, device: &FoundDevice, volume_id: &str) -> Result<()> {
    if !device.nvme {
        return Ok(());
    }
    let real = fs_err::canonicalize(&device.path).context("resolving the NVMe device link")?;
    let Some(name) = real.file_name() else {
        return Ok(());
    };
    let serial_path = root.path("/sys/block").join(name).join("device/serial");
    let serial = match fs_err::read_to_string(&serial_path) {
        Ok(serial) => serial,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            tracing::debug!("no `{}`; NVMe serial not checked", serial_path.display());
            return Ok(());
        }
        Err(err) => return Err(err).context("reading the NVMe serial"),
    };
    let expected = volume_id.replace('-', "");
    if serial.trim() != expected {
        bail!(
            "device `{}` of volume `{volume_id}` has NVMe serial `{}`, expected `{expected}`;              refusing to touch it (stale /dev/disk/by-id link?)",
            device.path.display(),
            serial.trim().escape_debug()
        );
    }
    Ok(())
}

/// Reads the start, the end and 64 evenly spread chunks of the device; true when every byte
/// read is zero. Any open or read error is an error (and so a refusal to format).
pub fn sample_is_all_zero(path: &Path) -> Result<bool> {
    const HEAD: u64 = 4 << 20;
    const TAIL: u64 = 1 << 20;
    const CHUNK: u64 = 64 << 10;
    const CHUNKS: u64 = 64;
    let mut file = fs_err::File::open(path).context("opening the device for reading")?;
    let size = file
        .seek(SeekFrom::End(0))
        .with_context(|| format!("finding the size of `{}`", path.display()))?;
    if size == 0 {
        bail!("device `{}` reports a size of 0 bytes", path.display());
    }
    let mut regions = vec![
        (0, HEAD.min(size)),
        (size.saturating_sub(TAIL), TAIL.min(size)),
    ];
    for i in 0..CHUNKS {
        let offset = size / CHUNKS * i;
        regions.push((offset, CHUNK.min(size - offset)));
    }
    let mut buffer = vec![0u8; HEAD as usize];
    for (offset, len) in regions {
        file.seek(SeekFrom::Start(offset))
            .with_context(|| format!("seeking `{}` to {offset}", path.display()))?;
        let buf = &mut buffer[..len as usize];
        file.read_exact(buf)
            .with_context(|| format!("reading `{}` at offset {offset}", path.display()))?;
        if buf.iter().any(|b| *b != 0) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Probes the device: reads samples, then asks `blkid -p` for any signature.
pub fn probe(path: &Path) -> Result<Probe> {
    let all_zero = sample_is_all_zero(path)?;
    let output = Command::new("blkid")
        .args(["-p", "-o", "export"])
        .arg(path)
        .stdin(Stdio::null())
        .output()
        .context("running `blkid -p` (is util-linux installed?)")?;
    Ok(decide_probe(
        output.status.code(),
        &String::from_utf8_lossy(&output.stdout),
        &String::from_utf8_lossy(&output.stderr),
        all_zero,
    ))
}

fn run_tool(program: &str, args: &[&str], device: &Path) -> Result<std::process::Output> {
    Command::new(program)
        .args(args)
        .arg(device)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running `{program}`"))
}

/// Creates an ext4 filesystem. Only call on a device [`probe`] found [`Probe::Blank`]; the
/// result is probed again to confirm.
pub fn format_ext4(path: &Path) -> Result<()> {
    let output = run_tool("mkfs.ext4", &["-q"], path)?;
    if !output.status.success() {
        bail!(
            "`mkfs.ext4 {}` failed ({}): {}",
            path.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    match probe_signature_only(path)? {
        Probe::Ext4 => Ok(()),
        other => bail!("after mkfs.ext4, `{}` probes as {other:?}", path.display()),
    }
}

/// `blkid -p` alone (the device is known to be non-zero after mkfs).
fn probe_signature_only(path: &Path) -> Result<Probe> {
    let output = run_tool("blkid", &["-p", "-o", "export"], path)?;
    Ok(decide_probe(
        output.status.code(),
        &String::from_utf8_lossy(&output.stdout),
        &String::from_utf8_lossy(&output.stderr),
        false,
    ))
}

/// What `fsck -a` said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FsckResult {
    Clean,
    /// Errors were corrected (exit 1, 2 or 3).
    Corrected(i32),
}

/// `fsck -a` before mounting an existing filesystem: 0 clean; 1–3 corrected; 4 or more refuse.
pub fn fsck(path: &Path) -> Result<FsckResult> {
    let output = run_tool("fsck", &["-a", "-T"], path)?;
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

/// Creates the mount point (mode 0750) and mounts the ext4 device there (`noatime`).
pub fn mount_ext4(device: &Path, mountpoint: &Path) -> Result<()> {
    fs_err::create_dir_all(mountpoint).context("creating the mount point")?;
    fs_err::set_permissions(mountpoint, std::fs::Permissions::from_mode(0o750))
        .context("setting the mount point's mode")?;
    sys_mount::Mount::builder()
        .fstype("ext4")
        .flags(sys_mount::MountFlags::NOATIME)
        .mount(device, mountpoint)
        .with_context(|| {
            format!(
                "mounting `{}` at `{}`",
                device.display(),
                mountpoint.display()
            )
        })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn device_candidates_in_kops_order() {
        let names: Vec<_> = device_candidates("vol-0abc", "/dev/xvdu")
            .into_iter()
            .map(|(p, nvme)| (p.display().to_string(), nvme))
            .collect();
        assert_eq!(
            names,
            [
                (
                    "/dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_vol0abc".to_owned(),
                    true
                ),
                ("/dev/xvdu".to_owned(), false),
                ("/dev/sdu".to_owned(), false),
            ]
        );
    }
}
