//! `reset` planning: which entries of the manifest directory protokube made (and so removes),
//! and which of this node's etcd volumes are mounted or attached. Pure.

use std::path::PathBuf;

use crate::plan::files::relative_target;

/// The control-plane manifests protokube renders from a cluster spec.
pub(crate) const SPEC_MANIFESTS: [&str; 4] = [
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kube-proxy",
];

/// An entry of the manifest directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ManifestEntry {
    /// File name, e.g. `etcd.manifest`.
    pub(crate) name: String,
    /// The target, when the entry is a symlink.
    pub(crate) link: Option<PathBuf>,
}

/// Where protokube's etcd links lead, as host paths (without `--root`): the manifest directory
/// (`/etc/kubernetes/manifests`) and, per etcd volume of this node, the manifest directory on
/// it (`/mnt/master-<id>/k8s.io/manifests`, and where `/mnt` is a symlink the resolved place).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct OwnLinks {
    pub(crate) manifest_dir: PathBuf,
    pub(crate) volume_dirs: Vec<PathBuf>,
}

impl OwnLinks {
    /// Whether `entry` is a link protokube made: to the file of the same name in one of this
    /// node's volume manifest directories, by the relative target `render` writes (or the
    /// absolute one older versions wrote). A user's link elsewhere, or to another volume, is not.
    fn made(&self, entry: &ManifestEntry) -> bool {
        let Some(link) = &entry.link else {
            return false;
        };
        let at = self.manifest_dir.join(&entry.name);
        self.volume_dirs.iter().any(|dir| {
            let target = dir.join(&entry.name);
            *link == relative_target(&at, &target) || *link == target
        })
    }
}

/// The manifest directory's entries `reset` removes, in order: the etcd links protokube made
/// into this node's volumes first (kubelet stops etcd before its volume is unmounted), then, when
/// protokube renders them here (a spec is given), the control-plane manifests. Anything else
/// (nodeup's files, etcd-manager's, a user's links) is left.
pub(crate) fn manifests_to_remove(
    entries: &[ManifestEntry],
    renders_spec_manifests: bool,
    own: &OwnLinks,
) -> Vec<String> {
    let mut links: Vec<String> = entries
        .iter()
        .filter(|e| e.name.ends_with(".manifest"))
        .filter(|e| own.made(e))
        .map(|e| e.name.clone())
        .collect();
    links.sort();
    let mut files: Vec<String> = entries
        .iter()
        .filter(|_| renders_spec_manifests)
        .filter(|e| {
            SPEC_MANIFESTS
                .iter()
                .any(|stem| e.name == format!("{stem}.manifest"))
        })
        .map(|e| e.name.clone())
        .collect();
    files.sort();
    links.extend(files);
    links
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, link: Option<&str>) -> ManifestEntry {
        ManifestEntry {
            name: name.into(),
            link: link.map(PathBuf::from),
        }
    }

    #[test]
    fn etcd_links_first_then_the_specs_manifests_and_nothing_else() {
        let entries = [
            entry("kube-proxy.manifest", None),
            entry(
                "etcd.manifest",
                Some("../../../mnt/master-vol-1/k8s.io/manifests/etcd.manifest"),
            ),
            entry(
                "etcd-events.manifest",
                Some("/mnt/master-vol-2/k8s.io/manifests/etcd-events.manifest"),
            ),
            entry("kube-apiserver.manifest", None),
            entry("etcd-manager-main.manifest", None),
            entry("other.manifest", Some("/srv/other.manifest")),
            entry("cloud-init.yaml", None),
            // A user's links: to a copy elsewhere that merely names the path, to another
            // volume, to a file of another name.
            entry(
                "backup.manifest",
                Some("/home/u/mnt/master-vol-1/k8s.io/manifests/backup.manifest"),
            ),
            entry(
                "etcd-x.manifest",
                Some("../../../mnt/master-vol-9/k8s.io/manifests/etcd-x.manifest"),
            ),
            entry(
                "etcd-y.manifest",
                Some("../../../mnt/master-vol-1/k8s.io/manifests/etcd.manifest"),
            ),
        ];
        let own = OwnLinks {
            manifest_dir: "/etc/kubernetes/manifests".into(),
            volume_dirs: vec![
                "/mnt/master-vol-1/k8s.io/manifests".into(),
                "/mnt/master-vol-2/k8s.io/manifests".into(),
            ],
        };
        assert_eq!(
            manifests_to_remove(&entries, true, &own),
            [
                "etcd-events.manifest",
                "etcd.manifest",
                "kube-apiserver.manifest",
                "kube-proxy.manifest"
            ]
        );
        // Without a spec the kube-* manifests are nodeup's.
        assert_eq!(
            manifests_to_remove(&entries, false, &own),
            ["etcd-events.manifest", "etcd.manifest"]
        );
    }
}
