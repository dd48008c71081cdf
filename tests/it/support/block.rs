//! Real block devices for tests: loop devices over files in a temporary directory, and a
//! temporary `--root`. Both clean up in `Drop` (so also when a test fails): mounts are undone
//! before loop devices are detached.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::run;

/// Unmounts everything mounted at or below `dir`, deepest first.
pub(crate) fn unmount_below(dir: &Path) {
    let prefix = dir.to_string_lossy().into_owned();
    let mut targets: Vec<String> = mount_points()
        .into_iter()
        .filter(|(_, mp)| mp == &prefix || mp.starts_with(&format!("{prefix}/")))
        .map(|(_, mp)| mp)
        .collect();
    targets.sort_by_key(|t| std::cmp::Reverse(t.len()));
    for target in targets {
        let _ = Command::new("umount").arg(&target).status();
    }
}

/// (major:minor, mount point) of every mount.
pub(crate) fn mount_points() -> Vec<(String, String)> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter_map(|l| {
            let fields: Vec<&str> = l.split(' ').collect();
            Some((
                fields.get(2)?.to_string(),
                fields.get(4)?.replace("\\040", " "),
            ))
        })
        .collect()
}

/// A loop device over a file of `size_mib` MiB.
pub(crate) struct LoopDevice {
    pub path: PathBuf,
    pub backing: PathBuf,
    _dir: tempfile::TempDir,
}

impl LoopDevice {
    /// A blank (all zeros, sparse) device.
    pub(crate) fn blank(size_mib: u64) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let backing = dir.path().join("disk.img");
        let file = std::fs::File::create(&backing).unwrap();
        file.set_len(size_mib << 20).unwrap();
        drop(file);
        let path =
            PathBuf::from(run("losetup", &["--find", "--show", backing.to_str().unwrap()]).trim());
        Self {
            path,
            backing,
            _dir: dir,
        }
    }

    /// `major:minor` as in mountinfo.
    pub(crate) fn devno(&self) -> String {
        let rdev = std::fs::metadata(&self.path).unwrap().rdev();
        let major = ((rdev >> 8) & 0xfff) | ((rdev >> 32) & !0xfff);
        let minor = (rdev & 0xff) | ((rdev >> 12) & !0xff);
        format!("{major}:{minor}")
    }

    /// Where this device is mounted now.
    /// Waits (10 s at most) until nothing holds the device: a mount namespace of a process just
    /// killed is torn down by the kernel a moment after the process is gone, and its mounts
    /// keep the filesystem — and so the device — claimed until then.
    pub(crate) fn wait_released(&self) {
        use std::os::unix::fs::OpenOptionsExt as _;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_EXCL)
            .open(&self.path)
            .is_err()
        {
            assert!(
                std::time::Instant::now() < deadline,
                "{} still held after 10 s",
                self.path.display()
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    pub(crate) fn mounted_at(&self) -> Vec<String> {
        let devno = self.devno();
        mount_points()
            .into_iter()
            .filter(|(d, _)| *d == devno)
            .map(|(_, mp)| mp)
            .collect()
    }

    /// A digest of every byte of the device (to prove it was left untouched).
    pub(crate) fn digest(&self) -> u64 {
        use std::hash::Hasher as _;
        use std::io::Read as _;
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        let mut file = std::fs::File::open(&self.path).unwrap();
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = file.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            hasher.write(&buf[..n]);
        }
        hasher.finish()
    }

    /// `blkid -p` TYPE of the device, if any.
    pub(crate) fn fs_type(&self) -> Option<String> {
        let output = Command::new("blkid")
            .args(["-p", "-o", "value", "-s", "TYPE"])
            .arg(&self.path)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        (!text.is_empty()).then_some(text)
    }

    /// Formats it ext4 and writes `files` (relative path → content) into it.
    pub(crate) fn make_ext4_with(&self, files: &[(&str, &str)]) {
        run("mkfs.ext4", &["-q", self.path.to_str().unwrap()]);
        let mnt = tempfile::tempdir().unwrap();
        run(
            "mount",
            &[self.path.to_str().unwrap(), mnt.path().to_str().unwrap()],
        );
        for (name, content) in files {
            let path = mnt.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }
        run("umount", &[mnt.path().to_str().unwrap()]);
    }

    /// Writes an MBR (dos) partition table with one 16 MiB partition, as `sfdisk` does.
    pub(crate) fn write_partition_table(&self) {
        use std::io::Write as _;
        let mut child = Command::new("sfdisk")
            .args(["--quiet", self.path_str()])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .expect("sfdisk (fdisk package)");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b"label: dos\n,16M\n")
            .unwrap();
        assert!(child.wait().unwrap().success());
    }

    /// Makes its ext4 one `fsck -a` refuses to repair (exit 4): the root directory's inode
    /// cleared, the filesystem marked as having errors (else preen mode skips it).
    pub(crate) fn damage_ext4(&self) {
        for request in ["clri <2>", "ssv state 2"] {
            run("debugfs", &["-w", "-R", request, self.path_str()]);
        }
    }

    /// The filesystem UUID `blkid -p` reads, empty when none.
    pub(crate) fn uuid(&self) -> String {
        let output = Command::new("blkid")
            .args(["-p", "-o", "value", "-s", "UUID"])
            .arg(&self.path)
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    }

    /// Writes `bytes` at byte `offset` of the device.
    pub(crate) fn write_at(&self, offset: u64, bytes: &[u8]) {
        use std::os::unix::fs::FileExt as _;
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&self.path)
            .unwrap();
        file.write_all_at(bytes, offset).unwrap();
        file.sync_all().unwrap();
    }

    /// Runs `program args… <device>`, which must succeed.
    pub(crate) fn run_on(&self, program: &str, args: &[&str]) {
        let mut all: Vec<&str> = args.to_vec();
        all.push(self.path_str());
        run(program, &all);
    }

    pub(crate) fn path_str(&self) -> &str {
        self.path.to_str().unwrap()
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        for mountpoint in self.mounted_at() {
            let _ = Command::new("umount").arg(&mountpoint).status();
        }
        let _ = Command::new("losetup").arg("-d").arg(&self.path).status();
    }
}

/// A temporary `--root`; unmounts whatever is mounted below it when dropped.
pub(crate) struct TestRoot {
    dir: tempfile::TempDir,
}

impl TestRoot {
    pub(crate) fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn join(&self, host_path: &str) -> PathBuf {
        self.dir.path().join(host_path.trim_start_matches('/'))
    }

    /// The volume as a Nitro instance shows it, under the root: an NVMe namespace
    /// `/dev/nvme<N>n1` (a device node with `device`'s numbers), the udev by-id link to it
    /// (`../../nvme<N>n1`), and the controller serial in sysfs naming the volume. Returns the
    /// namespace's name.
    pub(crate) fn link_by_id(&self, volume_id: &str, device: &Path) -> String {
        let index = (1..1000)
            .find(|n| !self.join(&format!("/dev/nvme{n}n1")).exists())
            .expect("a free nvme name under the test root");
        let name = format!("nvme{index}n1");
        self.device_node(&format!("/dev/{name}"), device);
        let link = self.join(&format!(
            "/dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_{}",
            volume_id.replace('-', "")
        ));
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(format!("../../{name}"), link).unwrap();
        let serial = self.join(&format!("/sys/block/{name}/device/serial"));
        std::fs::create_dir_all(serial.parent().unwrap()).unwrap();
        std::fs::write(serial, format!("{}\n", volume_id.replace('-', ""))).unwrap();
        name
    }

    /// A block device node at `host_path` under the root (e.g. `/dev/xvdu`) with `device`'s
    /// major and minor numbers: the same disk under another name.
    pub(crate) fn device_node(&self, host_path: &str, device: &Path) {
        let path = self.join(host_path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let rdev = std::fs::metadata(device).unwrap().rdev();
        let c_path = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        // SAFETY: mknod with a valid C string.
        let rc = unsafe { libc::mknod(c_path.as_ptr(), libc::S_IFBLK | 0o600, rdev) };
        assert_eq!(
            rc,
            0,
            "mknod {}: {}",
            path.display(),
            std::io::Error::last_os_error()
        );
    }

    pub(crate) fn mountpoint(&self, volume_id: &str) -> PathBuf {
        self.join(&format!("/mnt/master-{volume_id}"))
    }
}

impl Drop for TestRoot {
    fn drop(&mut self) {
        unmount_below(self.dir.path());
    }
}
