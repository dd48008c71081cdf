//! `reset` planning: which entries of the manifest directory protokube made (and so removes),
//! and which of this node's etcd volumes are mounted or attached. Pure.

use std::path::{Component, Path, PathBuf};

/// The control-plane manifests protokube renders from a cluster spec.
pub const SPEC_MANIFESTS: [&str; 4] = [
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kube-proxy",
];

/// An entry of the manifest directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestEntry {
    /// File name, e.g. `etcd.manifest`.
    pub name: String,
    /// The target, when the entry is a symlink.
    pub link: Option<PathBuf>,
}

/// Whether a link target leads to a manifest on one of protokube's etcd volumes
/// (`…/mnt/master-vol-…/k8s.io/manifests/<name>.manifest`).
fn leads_to_volume_manifest(target: &Path) -> bool {
    let parts: Vec<String> = target
        .components()
        .filter_map(|c| match c {
            Component::Normal(part) => Some(part.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    parts.windows(4).any(|w| {
        w[0].starts_with("master-vol-")
            && w[1] == "k8s.io"
            && w[2] == "manifests"
            && w[3].ends_with(".manifest")
    })
}

/// The manifest directory's entries `reset` removes, in order: the etcd links into protokube's
/// volumes first (kubelet stops etcd before its volume is unmounted), then, when protokube
/// renders them here (a spec is given), the control-plane manifests. Anything else (nodeup's
/// files, etcd-manager's) is left.
pub fn manifests_to_remove(entries: &[ManifestEntry], renders_spec_manifests: bool) -> Vec<String> {
    let mut links: Vec<String> = entries
        .iter()
        .filter(|e| e.name.ends_with(".manifest"))
        .filter(|e| e.link.as_deref().is_some_and(leads_to_volume_manifest))
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
        ];
        assert_eq!(
            manifests_to_remove(&entries, true),
            [
                "etcd-events.manifest",
                "etcd.manifest",
                "kube-apiserver.manifest",
                "kube-proxy.manifest"
            ]
        );
        // Without a spec the kube-* manifests are nodeup's.
        assert_eq!(
            manifests_to_remove(&entries, false),
            ["etcd-events.manifest", "etcd.manifest"]
        );
    }
}
