//! Host paths: the directory the host's `/` is found at (`--root`), the host paths protokube
//! reads and writes under it, and their resolution. Resolution works as a `chroot` would: a
//! symlink on the host (`/mnt -> var/mnt` on Fedora CoreOS, an absolute one in a container's
//! view of the host) is followed inside the root, `..` never climbs above it; and where
//! protokube expects a directory or file of its own, a symlink is refused, never followed.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use std::sync::Arc;

use anyhow::{anyhow, bail, Context as _, Result};

/// Directory kubelet reads static pods from.
pub(crate) const MANIFEST_DIR: &str = "/etc/kubernetes/manifests";
/// The hosts file.
pub(crate) const HOSTS_FILE: &str = "/etc/hosts";
/// The state file: what `mount` mounted, read by `render-manifests`.
pub(crate) const STATE_FILE: &str = "/var/lib/protokube/state.json";
/// Records of formats in progress, one file per volume.
pub(crate) const FORMATTING_DIR: &str = "/var/lib/protokube/formatting";
/// The run lock.
pub(crate) const LOCK_FILE: &str = "/run/protokube.lock";
/// The names a running gossip member's view holds, one per line (`protokube gossip` writes it;
/// a `sync` in another process leaves those names of the hosts block to the member). Under
/// /run: gone at boot, as the member is.
pub(crate) const GOSSIP_NAMES_FILE: &str = "/run/protokube/gossip-names";
/// Written by `reset --detach`: this instance is retired, and claims no etcd volume again until
/// the file is removed.
pub(crate) const RETIRED_FILE: &str = "/var/lib/protokube/retired";
/// Directory of a manifest on its etcd volume, relative to the mount point.
pub(crate) const ON_VOLUME_MANIFEST_DIR: &str = "k8s.io/manifests";

/// Symlinks followed in one resolution before giving up (as Linux's `ELOOP`).
const MAX_LINKS: usize = 40;

/// What is at a path, symlinks not followed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Entry {
    Missing,
    Symlink(PathBuf),
    Other,
}

/// How resolution looks at a path: the node's `lstat` and `readlink` (the Linux host), or none.
pub(crate) trait Links: Send + Sync + std::fmt::Debug {
    /// What is at `path`, symlinks not followed.
    fn entry(&self, path: &Path) -> std::io::Result<Entry>;
}

/// No path exists: every path is taken literally (pure code, and tests of it).
#[cfg(test)]
#[derive(Clone, Copy, Debug)]
struct Literal;

#[cfg(test)]
impl Links for Literal {
    fn entry(&self, _path: &Path) -> std::io::Result<Entry> {
        Ok(Entry::Missing)
    }
}

/// The directory the host's `/` is found at (`--root`; `/` unless running in a container or a
/// test), absolute and free of symlinks, with how the paths under it are looked at.
#[derive(Clone, Debug)]
pub struct HostRoot {
    dir: PathBuf,
    links: Arc<dyn Links>,
}

impl PartialEq for HostRoot {
    fn eq(&self, other: &Self) -> bool {
        self.dir == other.dir
    }
}

impl Eq for HostRoot {}

impl HostRoot {
    /// A root taken literally: no symlink under it is seen (pure code, tests of it).
    #[cfg(test)]
    pub(crate) fn new(root: impl Into<PathBuf>) -> Self {
        Self::on(root.into(), Arc::new(Literal))
    }

    /// The root at `dir` (absolute, free of symlinks), its paths looked at through `links`.
    pub(crate) fn on(dir: PathBuf, links: Arc<dyn Links>) -> Self {
        Self { dir, links }
    }

    /// The root directory itself.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the host path `host_path` (absolute, e.g. `/etc/hosts`) is found from here, taken
    /// literally (no symlink resolved).
    pub(crate) fn path(&self, host_path: impl AsRef<Path>) -> PathBuf {
        let relative = host_path
            .as_ref()
            .strip_prefix("/")
            .unwrap_or(host_path.as_ref());
        self.dir.join(relative)
    }

    /// The host path of a path under the root (`<root>/var/mnt/x` → `/var/mnt/x`).
    pub(crate) fn host_path_of(&self, path: &Path) -> PathBuf {
        match path.strip_prefix(&self.dir) {
            Ok(rest) => Path::new("/").join(rest),
            Err(_) => path.to_owned(),
        }
    }

    /// Resolves `host_path` under the root as `chroot` would: every symlink followed inside the
    /// root (an absolute target starts again at the root), `..` stopping at the root. The part
    /// that does not exist yet is appended as it is.
    pub(crate) fn resolve(&self, host_path: impl AsRef<Path>) -> Result<PathBuf> {
        let host_path = host_path.as_ref();
        resolve_under(&*self.links, &self.dir, host_path).with_context(|| {
            format!(
                "resolving `{}` under `{}`",
                host_path.display(),
                self.dir.display()
            )
        })
    }

    /// Resolves the directory of `host_path` (see [`HostRoot::resolve`]) and appends its last
    /// component, which is protokube's own: a symlink there is refused, never followed.
    pub(crate) fn own(&self, host_path: impl AsRef<Path>) -> Result<PathBuf> {
        let host_path = host_path.as_ref();
        let name = host_path
            .file_name()
            .ok_or_else(|| anyhow!("`{}` has no file name", host_path.display()))?;
        let dir = self.resolve(host_path.parent().unwrap_or(Path::new("/")))?;
        let path = dir.join(name);
        self.refuse_symlink(&path)?;
        Ok(path)
    }

    /// An error when `path` (under the root) is a symlink.
    pub(crate) fn refuse_symlink(&self, path: &Path) -> Result<()> {
        refuse_symlink(&*self.links, path)
    }

    /// `relative` (e.g. `k8s.io/manifests/etcd.manifest`) on a volume mounted at `mountpoint`:
    /// every component that exists must be a directory or file of its own, never a symlink, so
    /// what the volume holds cannot send a write anywhere else.
    pub(crate) fn on_volume(
        &self,
        mountpoint: &Path,
        relative: impl AsRef<Path>,
    ) -> Result<PathBuf> {
        let mut path = mountpoint.to_owned();
        for component in relative.as_ref().components() {
            match component {
                Component::Normal(name) => {
                    path.push(name);
                    self.refuse_symlink(&path)?;
                }
                _ => bail!(
                    "`{}` is not a plain relative path on the volume (no `/`, `.` or `..`)",
                    relative.as_ref().display()
                ),
            }
        }
        Ok(path)
    }

    /// The mount point of an etcd volume, `<root>/mnt/master-<volume id>` resolved (the mount
    /// point itself may not be a symlink).
    pub(crate) fn volume_mountpoint(&self, volume_id: &str) -> Result<PathBuf> {
        self.own(volume_mountpoint(volume_id))
    }
}

/// The host path of an etcd volume's mount point, `/mnt/master-<volume id>`.
pub(crate) fn volume_mountpoint(volume_id: &str) -> PathBuf {
    PathBuf::from(format!("/mnt/master-{volume_id}"))
}

/// An error when `path` is a symlink.
fn refuse_symlink(links: &dyn Links, path: &Path) -> Result<()> {
    match links.entry(path) {
        Ok(Entry::Symlink(target)) => {
            bail!(
                "`{}` is a symlink (to `{}`) where protokube expects a directory or file of its \
                 own; refusing to follow it: remove it and run again",
                path.display(),
                target.display()
            )
        }
        _ => Ok(()),
    }
}

/// `chroot`-style resolution of `path` inside `root`.
fn resolve_under(links: &dyn Links, root: &Path, path: &Path) -> Result<PathBuf> {
    let mut resolved = root.to_owned();
    let mut pending: VecDeque<OsString> = VecDeque::new();
    push_components(&mut pending, path, &mut resolved, root, false);
    let mut followed = 0;
    while let Some(name) = pending.pop_front() {
        if name == ".." {
            if resolved != root {
                resolved.pop();
            }
            continue;
        }
        let next = resolved.join(&name);
        match links.entry(&next) {
            Ok(Entry::Symlink(target)) => {
                followed += 1;
                if followed > MAX_LINKS {
                    bail!("too many levels of symlinks at `{}`", next.display());
                }
                let mut rest: Vec<OsString> = pending.drain(..).collect();
                push_components(&mut pending, &target, &mut resolved, root, true);
                pending.extend(rest.drain(..));
            }
            Ok(Entry::Other) => resolved = next,
            Ok(Entry::Missing) => {
                // Nothing below exists to be a symlink: the rest is taken literally.
                resolved = next;
                for name in pending.drain(..) {
                    if name == ".." {
                        if resolved != root {
                            resolved.pop();
                        }
                    } else {
                        resolved.push(name);
                    }
                }
            }
            Err(err) => return Err(err).with_context(|| format!("reading `{}`", next.display())),
        }
    }
    Ok(resolved)
}

/// Queues the components of `path`; an absolute path (a symlink target) starts again at `root`.
fn push_components(
    pending: &mut VecDeque<OsString>,
    path: &Path,
    resolved: &mut PathBuf,
    root: &Path,
    link_target: bool,
) {
    for component in path.components() {
        match component {
            Component::RootDir if link_target => *resolved = root.to_owned(),
            Component::RootDir | Component::Prefix(_) | Component::CurDir => {}
            Component::ParentDir => pending.push_back("..".into()),
            Component::Normal(name) => pending.push_back(name.to_owned()),
        }
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn host_paths_are_taken_under_the_root() {
        let root = HostRoot::new("/rootfs");
        assert_eq!(root.path("/etc/hosts"), Path::new("/rootfs/etc/hosts"));
        assert_eq!(
            root.host_path_of(Path::new("/rootfs/var/mnt/x")),
            Path::new("/var/mnt/x")
        );
        let slash = HostRoot::new("/");
        assert_eq!(slash.path("/etc/hosts"), Path::new("/etc/hosts"));
        assert_eq!(
            slash.host_path_of(Path::new("/etc/hosts")),
            Path::new("/etc/hosts")
        );
    }

    #[test]
    fn symlinks_are_followed_inside_the_root_like_chroot() {
        let dir = tempfile::tempdir().unwrap();
        let root = crate::host::linux::root(dir.path()).unwrap();
        let r = root.dir().to_owned();
        std::fs::create_dir_all(r.join("var/mnt")).unwrap();
        // Fedora CoreOS: /mnt -> var/mnt.
        symlink("var/mnt", r.join("mnt")).unwrap();
        assert_eq!(
            root.resolve("/mnt/master-vol-1").unwrap(),
            r.join("var/mnt/master-vol-1")
        );
        // An absolute target starts again at the root; `..` stops there.
        std::fs::create_dir_all(r.join("etc")).unwrap();
        symlink("/var/mnt", r.join("etc/abs")).unwrap();
        assert_eq!(root.resolve("/etc/abs/x").unwrap(), r.join("var/mnt/x"));
        symlink("../../../../../../var", r.join("etc/up")).unwrap();
        assert_eq!(root.resolve("/etc/up/mnt").unwrap(), r.join("var/mnt"));
        assert_eq!(root.resolve("/../../etc/./x").unwrap(), r.join("etc/x"));
        // A loop ends in an error.
        symlink("loop2", r.join("etc/loop1")).unwrap();
        symlink("loop1", r.join("etc/loop2")).unwrap();
        assert!(root.resolve("/etc/loop1/x").is_err());
    }

    #[test]
    fn a_relative_root_or_one_with_dots_is_made_canonical() {
        let dir = tempfile::tempdir().unwrap();
        let dotted = dir.path().join(".").join("sub/../");
        std::fs::create_dir_all(dir.path().join("sub")).unwrap();
        let root = crate::host::linux::root(&dotted).unwrap();
        assert_eq!(root.dir(), std::fs::canonicalize(dir.path()).unwrap());
    }

    #[test]
    fn own_paths_and_paths_on_a_volume_refuse_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let root = crate::host::linux::root(dir.path()).unwrap();
        let r = root.dir().to_owned();
        std::fs::create_dir_all(r.join("mnt")).unwrap();
        symlink("/tmp", r.join("mnt/master-vol-1")).unwrap();
        let err = root.volume_mountpoint("vol-1").unwrap_err();
        assert!(format!("{err:#}").contains("is a symlink"), "{err:#}");
        assert_eq!(
            root.volume_mountpoint("vol-2").unwrap(),
            r.join("mnt/master-vol-2")
        );
        let volume = r.join("volume");
        std::fs::create_dir_all(&volume).unwrap();
        symlink("/etc", volume.join("k8s.io")).unwrap();
        assert!(root
            .on_volume(&volume, "k8s.io/manifests/etcd.manifest")
            .is_err());
        assert!(root.on_volume(&volume, "var/etcd/data").is_ok());
        assert!(root.on_volume(&volume, "../x").is_err());
    }
}
