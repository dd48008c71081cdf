//! Host paths under `--root`: every path protokube touches on the host goes through [`HostRoot`].

use std::path::{Path, PathBuf};

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

    /// The mount point of an etcd volume, `<root>/mnt/master-<volume id>`.
    pub fn volume_mountpoint(&self, volume_id: &str) -> PathBuf {
        self.path(format!("/mnt/master-{volume_id}"))
    }
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
