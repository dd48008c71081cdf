//! Who owns etcd on this node, decided from what kubelet runs: kOps' etcd-manager, recognised
//! by what its static pods are (a pod named `etcd-manager-*`, or a container running an
//! etcd-manager image) whatever their files are called — nodeup names them
//! `etcd-<cluster>-<instance group>.manifest` — or else protokube. The decision fails safe: a
//! file kubelet may run that cannot be read leaves the owner unknown, and nothing of etcd is
//! protokube's then either. Pure.

use std::path::{Component, Path, PathBuf};

use crate::plan::static_pods::{read_static_pod, StaticPod};

/// The owner of the etcd volumes, etcd and the etcd names on this node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum EtcdOwner {
    Protokube,
    /// etcd-manager's pods are in `dir`, in these files (sorted).
    EtcdManager {
        dir: PathBuf,
        files: Vec<String>,
    },
    /// Files of `dir` that kubelet may run as static pods could not be read (name, why), and
    /// no etcd-manager pod was found: whether etcd-manager runs here is not known.
    Unknown {
        dir: PathBuf,
        unreadable: Vec<(String, String)>,
    },
    /// The unit says etcd is not protokube's here, whatever the manifests say.
    Declined(Declined),
}

/// Why nodeup's unit says etcd is not protokube's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Declined {
    /// `--manage-etcd=false`: kOps' nodeup up to 1.22 beside etcd-manager.
    ManageEtcdFalse,
    /// A unit of kOps 1.23 or later (`--containerized=false`, no `--manage-etcd`): kOps'
    /// protokube had no etcd code from 1.23 (etcd-manager runs etcd there).
    Kops123Unit,
}

/// One entry of the manifest directory, as the node gave it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ManifestFile<'a> {
    /// The file's bytes (a symlink followed inside the root).
    Bytes(&'a [u8]),
    /// A link protokube made to an etcd manifest on one of its volumes.
    OwnLink,
    /// Nothing kubelet reads: a directory (kubelet does not recurse).
    Skipped,
    /// It could not be read; why.
    Unreadable(&'a str),
}

impl EtcdOwner {
    /// From the manifest directory's files (dot files, which kubelet ignores, already left out).
    pub(crate) fn from_manifests<'a>(
        dir: PathBuf,
        manifests: impl IntoIterator<Item = (&'a str, ManifestFile<'a>)>,
    ) -> Self {
        let mut etcd_manager = Vec::new();
        let mut unreadable = Vec::new();
        for (name, file) in manifests {
            let read = match file {
                ManifestFile::Bytes(bytes) => read_static_pod(bytes),
                ManifestFile::OwnLink | ManifestFile::Skipped => continue,
                ManifestFile::Unreadable(why) => Err(why.to_owned()),
            };
            match read {
                Ok(StaticPod::Pod(pod)) if pod.is_etcd_manager() => {
                    etcd_manager.push(name.to_owned());
                }
                Ok(_) => {}
                Err(why) => unreadable.push((name.to_owned(), why)),
            }
        }
        etcd_manager.sort();
        unreadable.sort();
        if !etcd_manager.is_empty() {
            Self::EtcdManager {
                dir,
                files: etcd_manager,
            }
        } else if !unreadable.is_empty() {
            Self::Unknown { dir, unreadable }
        } else {
            Self::Protokube
        }
    }

    pub(crate) fn is_protokube(&self) -> bool {
        matches!(self, Self::Protokube)
    }

    /// The sentence said once per run where etcd-manager owns etcd.
    pub(crate) fn notice(&self) -> Option<String> {
        match self {
            Self::Protokube | Self::Unknown { .. } => None,
            Self::Declined(Declined::ManageEtcdFalse) => Some(
                "--manage-etcd=false: etcd is not protokube's on this node (kOps: etcd-manager \
                 runs it); protokube attaches, mounts, renders and publishes nothing for etcd \
                 here"
                    .to_owned(),
            ),
            Self::Declined(Declined::Kops123Unit) => Some(
                "kOps 1.23 or later's unit (--containerized=false, no --manage-etcd): etcd is \
                 not protokube's on this node (kOps' protokube had no etcd code from 1.23; \
                 etcd-manager runs it); protokube attaches, mounts, renders and publishes \
                 nothing for etcd here"
                    .to_owned(),
            ),
            Self::EtcdManager { dir, files } => Some(format!(
                "etcd-manager runs on this node ({} in `{}`) and owns the etcd volumes, etcd and \
                 the etcd names: protokube attaches, mounts, renders and publishes nothing for \
                 etcd here",
                files.join(", "),
                dir.display()
            )),
        }
    }

    /// Where the owner is unknown: the error that stops every etcd step, naming the files and
    /// what to do.
    pub(crate) fn unknown(&self) -> Option<String> {
        let Self::Unknown { dir, unreadable } = self else {
            return None;
        };
        let files: Vec<String> = unreadable
            .iter()
            .map(|(name, why)| format!("`{}` ({why})", dir.join(name).display()))
            .collect();
        Some(format!(
            "cannot read {} as kubelet reads static pods, so whether etcd-manager runs on this \
             node is not known: protokube claims, mounts, renders and publishes nothing for etcd \
             here; fix the file or move it out of `{}`",
            files.join(", "),
            dir.display()
        ))
    }
}

/// Whether the manifest-directory entry at host path `link` is a link protokube made to an etcd
/// manifest on one of its volumes: its target (relative, as `render` writes it, or absolute, as
/// older versions did) leads to `<mounts>/master-<volume>/k8s.io/manifests/<the link's name>`,
/// where `<mounts>` is one of `mount_dirs` (`/mnt`, and where `/mnt` is a symlink the place it
/// leads to). Such a link may dangle while its volume is not mounted; it is protokube's own.
pub(crate) fn is_own_etcd_link(link: &Path, target: &Path, mount_dirs: &[PathBuf]) -> bool {
    let Some(name) = link.file_name() else {
        return false;
    };
    let joined = match link.parent() {
        Some(dir) if target.is_relative() => dir.join(target),
        _ => target.to_owned(),
    };
    let mut absolute = PathBuf::from("/");
    for component in joined.components() {
        match component {
            Component::Normal(part) => absolute.push(part),
            Component::ParentDir => {
                absolute.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    let Some(rest) = mount_dirs
        .iter()
        .find_map(|dir| absolute.strip_prefix(dir).ok())
    else {
        return false;
    };
    let parts: Vec<&str> = rest.iter().filter_map(|p| p.to_str()).collect();
    match parts.as_slice() {
        [mountpoint, "k8s.io", "manifests", file] => {
            mountpoint.strip_prefix("master-").is_some_and(|volume| {
                !volume.is_empty()
                    && volume
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            }) && Some(std::ffi::OsStr::new(file)) == Some(name)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KOPS_POD: &str =
        include_str!("../../tests/fixtures/kops/etcd-manager/etcd-main-master-us-test-1a.manifest");

    #[test]
    fn kops_etcd_manager_pods_are_recognised_by_content() {
        let owner = EtcdOwner::from_manifests(
            "/etc/kubernetes/manifests".into(),
            [
                (
                    "etcd-main-master-b.manifest",
                    ManifestFile::Bytes(KOPS_POD.as_bytes()),
                ),
                (
                    "kube-apiserver.manifest",
                    ManifestFile::Bytes(b"apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n"),
                ),
                ("huge.manifest", ManifestFile::Unreadable("too large")),
            ],
        );
        assert_eq!(
            owner,
            EtcdOwner::EtcdManager {
                dir: "/etc/kubernetes/manifests".into(),
                files: vec!["etcd-main-master-b.manifest".into()]
            }
        );
        assert!(owner
            .notice()
            .unwrap()
            .contains("etcd-main-master-b.manifest"));
        assert!(owner.unknown().is_none());
    }

    #[test]
    fn a_file_that_cannot_be_read_leaves_the_owner_unknown() {
        let owner = EtcdOwner::from_manifests(
            "/m".into(),
            [
                (
                    "a.manifest",
                    ManifestFile::Bytes(b"kind: Pod\nmetadata: [x\n"),
                ),
                (
                    "b.manifest",
                    ManifestFile::Unreadable("a symlink to nothing"),
                ),
                ("etcd.manifest", ManifestFile::OwnLink),
                ("sub", ManifestFile::Skipped),
            ],
        );
        assert!(!owner.is_protokube());
        assert!(owner.notice().is_none());
        let message = owner.unknown().unwrap();
        for needle in [
            "`/m/a.manifest` (not YAML",
            "`/m/b.manifest` (a symlink",
            "`/m`",
        ] {
            assert!(message.contains(needle), "{message}");
        }
    }

    #[test]
    fn protokube_s_links_lead_to_its_volume_layout() {
        let link = Path::new("/etc/kubernetes/manifests/etcd.manifest");
        let mounts = [PathBuf::from("/mnt"), PathBuf::from("/var/mnt")];
        for target in [
            "../../../mnt/master-vol-0abc/k8s.io/manifests/etcd.manifest",
            "/mnt/master-vol-0abc/k8s.io/manifests/etcd.manifest",
            "/var/mnt/master-vol-0abc/k8s.io/manifests/etcd.manifest",
            "../../../var/mnt/master-disk-1/k8s.io/manifests/etcd.manifest",
        ] {
            assert!(
                is_own_etcd_link(link, Path::new(target), &mounts),
                "{target}"
            );
        }
        for target in [
            // Another name, another place, a copy that merely names the path.
            "../../../mnt/master-vol-0abc/k8s.io/manifests/etcd-events.manifest",
            "/srv/etcd.manifest",
            "/home/u/mnt/master-vol-1/k8s.io/manifests/etcd.manifest",
            "/mnt/other-vol-1/k8s.io/manifests/etcd.manifest",
            "/mnt/master-/k8s.io/manifests/etcd.manifest",
            "/mnt/master-vol-1/k8s.io/etcd.manifest",
        ] {
            assert!(
                !is_own_etcd_link(link, Path::new(target), &mounts),
                "{target}"
            );
        }
    }

    #[test]
    fn protokube_owns_etcd_where_nothing_else_runs_it() {
        let owner = EtcdOwner::from_manifests(
            "/m".into(),
            [
                ("etcd.manifest", ManifestFile::OwnLink),
                (
                    "list.manifest",
                    ManifestFile::Bytes(
                        b"kind: List\nitems:\n- kind: Pod\n  metadata: {name: etcd-manager-main}\n",
                    ),
                ),
                ("dir.manifest", ManifestFile::Skipped),
            ],
        );
        assert_eq!(owner, EtcdOwner::Protokube);
        assert_eq!(
            EtcdOwner::from_manifests("/m".into(), std::iter::empty()),
            EtcdOwner::Protokube
        );
    }
}
