//! Who owns etcd on this node: kOps' etcd-manager, recognised by what its static pods are (a
//! pod named `etcd-manager-*`, or a container running an etcd-manager image), whatever their
//! files are called — nodeup names them `etcd-<cluster>-<instance group>.manifest` — or else
//! protokube. Pure.

use std::path::PathBuf;

/// The owner of the etcd volumes, etcd and the etcd names on this node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EtcdOwner {
    Protokube,
    /// etcd-manager's pods are in `dir`, in these files (sorted).
    EtcdManager {
        dir: PathBuf,
        files: Vec<String>,
    },
}

impl EtcdOwner {
    /// From the manifest directory's files and their contents (`None`: not read, e.g. too
    /// large or not a regular file).
    pub fn from_manifests<'a>(
        dir: PathBuf,
        manifests: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
    ) -> Self {
        let mut files: Vec<String> = manifests
            .into_iter()
            .filter(|(_, text)| text.is_some_and(is_etcd_manager_pod))
            .map(|(name, _)| name.to_owned())
            .collect();
        files.sort();
        if files.is_empty() {
            Self::Protokube
        } else {
            Self::EtcdManager { dir, files }
        }
    }

    pub fn is_protokube(&self) -> bool {
        matches!(self, Self::Protokube)
    }

    /// The sentence the report carries once per run where etcd-manager owns etcd.
    pub fn notice(&self) -> Option<String> {
        match self {
            Self::Protokube => None,
            Self::EtcdManager { dir, files } => Some(format!(
                "etcd-manager runs on this node ({} in `{}`) and owns the etcd volumes, etcd and \
                 the etcd names: protokube attaches, mounts, renders and publishes nothing for \
                 etcd here",
                files.join(", "),
                dir.display()
            )),
        }
    }
}

/// Whether a static-pod manifest is one of etcd-manager's: a `Pod` named `etcd-manager-…`, or
/// with a container (or init container) whose image is an etcd-manager image (a path segment
/// of the image name starting with `etcd-manager`, e.g.
/// `registry.k8s.io/etcd-manager/etcd-manager-slim:v3.0.20260707`). Anything that does not
/// parse as YAML is not.
pub fn is_etcd_manager_pod(text: &str) -> bool {
    let Ok(doc) = yaml_serde::from_str::<yaml_serde::Value>(text) else {
        return false;
    };
    if doc.get("kind").and_then(|k| k.as_str()) != Some("Pod") {
        return false;
    }
    let named = doc
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(|n| n.as_str())
        .is_some_and(|name| name.starts_with("etcd-manager-"));
    let spec = doc.get("spec");
    let runs_image = ["containers", "initContainers"]
        .iter()
        .filter_map(|key| spec.and_then(|s| s.get(*key)).and_then(|c| c.as_sequence()))
        .flatten()
        .filter_map(|c| c.get("image").and_then(|i| i.as_str()))
        .any(is_etcd_manager_image);
    named || runs_image
}

/// An image reference whose repository has a path segment starting with `etcd-manager`.
fn is_etcd_manager_image(image: &str) -> bool {
    let without_digest = image.split('@').next().unwrap_or_default();
    // A tag follows the last `:` after the last `/` (a registry's port comes before a `/`).
    let repository = match without_digest.rsplit_once('/') {
        Some((head, last)) => format!("{head}/{}", last.split(':').next().unwrap_or_default()),
        None => without_digest
            .split(':')
            .next()
            .unwrap_or_default()
            .to_owned(),
    };
    repository
        .split('/')
        .any(|segment| segment.starts_with("etcd-manager"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KOPS_POD: &str =
        include_str!("../../tests/fixtures/kops/etcd-manager/etcd-main-master-us-test-1a.manifest");

    #[test]
    fn kops_etcd_manager_pods_are_recognised_by_content() {
        assert!(is_etcd_manager_pod(KOPS_POD));
        let owner = EtcdOwner::from_manifests(
            "/etc/kubernetes/manifests".into(),
            [
                ("etcd-main-master-b.manifest", Some(KOPS_POD)),
                (
                    "kube-apiserver.manifest",
                    Some("apiVersion: v1\nkind: Pod\nmetadata:\n  name: kube-apiserver\n"),
                ),
                ("huge.manifest", None),
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
    }

    #[test]
    fn by_name_or_by_image_and_nothing_else() {
        let pod = |name: &str, image: &str| {
            format!(
                "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  containers:\n  \
                 - name: c\n    image: {image}\n"
            )
        };
        assert!(is_etcd_manager_pod(&pod("etcd-manager-events", "busybox")));
        assert!(is_etcd_manager_pod(&pod(
            "x",
            "registry.example.com:5000/kops/etcd-manager:1.0"
        )));
        assert!(is_etcd_manager_pod(&pod(
            "x",
            "etcd-manager-slim@sha256:abc"
        )));
        // protokube's own etcd pods, and look-alikes, are not.
        assert!(!is_etcd_manager_pod(&pod(
            "etcd-server",
            "registry.k8s.io/etcd:3.5.13-0"
        )));
        assert!(!is_etcd_manager_pod(&pod(
            "x",
            "registry.example.com:5000/etcd:etcd-manager"
        )));
        assert!(!is_etcd_manager_pod(
            "kind: Pod\nmetadata: {name: etcd-manager}\n"
        ));
        assert!(!is_etcd_manager_pod(
            "kind: ConfigMap\nmetadata: {name: etcd-manager-main}\n"
        ));
        assert!(!is_etcd_manager_pod("{{{ not yaml"));
        assert_eq!(
            EtcdOwner::from_manifests("/m".into(), std::iter::empty()),
            EtcdOwner::Protokube
        );
    }
}
