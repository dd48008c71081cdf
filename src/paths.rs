//! Host paths: the directory the host's `/` is found at (`--root`) and the host paths protokube
//! reads and writes under it.

use std::path::{Path, PathBuf};

/// Directory kubelet reads static pods from.
pub const MANIFEST_DIR: &str = "/etc/kubernetes/manifests";
/// The hosts file.
pub const HOSTS_FILE: &str = "/etc/hosts";
/// The state file: what `mount` mounted, read by `render-manifests`.
pub const STATE_FILE: &str = "/var/lib/protokube/state.json";
/// Records of formats in progress, one file per volume.
pub const FORMATTING_DIR: &str = "/var/lib/protokube/formatting";
/// The run lock.
pub const LOCK_FILE: &str = "/run/protokube.lock";
/// Directory of a manifest on its etcd volume, relative to the mount point.
pub const ON_VOLUME_MANIFEST_DIR: &str = "k8s.io/manifests";

/// The directory the host's `/` is found at (`--root`; `/` unless running in a container or a test).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostRoot(PathBuf);

impl HostRoot {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self(root.into())
    }

    /// The root directory itself.
    pub fn dir(&self) -> &Path {
        &self.0
    }

    /// Where the host path `host_path` (absolute, e.g. `/etc/hosts`) is found from here.
    pub fn path(&self, host_path: impl AsRef<Path>) -> PathBuf {
        let relative = host_path
            .as_ref()
            .strip_prefix("/")
            .unwrap_or(host_path.as_ref());
        self.0.join(relative)
    }

    /// The mount point of an etcd volume as seen from here, `<root>/mnt/master-<volume id>`.
    pub fn volume_mountpoint(&self, volume_id: &str) -> PathBuf {
        self.path(volume_mountpoint(volume_id))
    }
}

/// The host path of an etcd volume's mount point, `/mnt/master-<volume id>`.
pub fn volume_mountpoint(volume_id: &str) -> PathBuf {
    PathBuf::from(format!("/mnt/master-{volume_id}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_paths_are_taken_under_the_root() {
        let root = HostRoot::new("/rootfs");
        assert_eq!(root.path("/etc/hosts"), Path::new("/rootfs/etc/hosts"));
        assert_eq!(
            root.volume_mountpoint("vol-1"),
            Path::new("/rootfs/mnt/master-vol-1")
        );
        let slash = HostRoot::new("/");
        assert_eq!(slash.path("/etc/hosts"), Path::new("/etc/hosts"));
    }
}
