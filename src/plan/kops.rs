//! Which kOps version's nodeup wrote the unit a run was started from — told from the unit's own
//! flags, since none names the version — and what kOps' protokube did there
//! (`reference/kops/protokube-by-version.md`): the control-plane labels its labeller gave, how
//! it found the node, whether it started kubelet, the RBAC objects `--initialize-rbac` made,
//! what its channels tool says when nothing changed.
//! Pure.

use std::collections::BTreeMap;

/// The kOps version range a unit's flags (and, in a container, its image) place a run in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum KopsUnit {
    /// kOps 1.12–1.18: protokube in its Debian image (`/usr/bin/protokube`, `channels` on its
    /// `PATH`), `--containerized=true`, the host at `/rootfs`.
    DebianImage,
    /// kOps 1.19–1.20: protokube in its distroless image (`/protokube`, the tool at
    /// `/channels`), same unit line as 1.16–1.18: told apart by the image.
    DistrolessImage,
    /// kOps 1.21–1.23: the host binary (`--containerized=false`), no `--cluster-id`.
    Host,
    /// kOps 1.24 and later (`--cluster-id`), or not nodeup's unit at all (a subcommand).
    #[default]
    Current,
}

/// Where the distroless image of kOps 1.19–1.20 keeps its channels tool (outside the host's
/// root: `release-1.19:protokube/pkg/protokube/channels.go:39`).
pub(crate) const DISTROLESS_CHANNELS_TOOL: &str = "/channels";

const MASTER: (&str, &str) = ("node-role.kubernetes.io/master", "");
const CONTROL_PLANE: (&str, &str) = ("node-role.kubernetes.io/control-plane", "");
const ROLE_MASTER: (&str, &str) = ("kubernetes.io/role", "master");
const CONTROLLER_PKI: (&str, &str) = ("kops.k8s.io/kops-controller-pki", "");
const EXCLUDE_LB: (&str, &str) = (
    "node.kubernetes.io/exclude-from-external-load-balancers",
    "",
);

impl KopsUnit {
    /// From the flags of the old daemon's invocation (`legacy`: no subcommand) as the command
    /// line gives them: a container unit says `--containerized=true` (1.12–1.20; the Debian
    /// image's until [`KopsUnit::in_image`] sees the distroless one); kOps 1.24 and later pass
    /// `--cluster-id` (on every cloud); 1.21–1.23 neither.
    pub(crate) fn from_flags(
        legacy: bool,
        containerized: Option<bool>,
        cluster_id_given: bool,
    ) -> Self {
        match (legacy, containerized, cluster_id_given) {
            (false, _, _) => Self::Current,
            (true, Some(true), _) => Self::DebianImage,
            (true, _, false) => Self::Host,
            (true, _, true) => Self::Current,
        }
    }

    /// A container unit told by its image: kOps 1.19–1.20's distroless image has protokube at
    /// `/protokube` and its channels tool at `/channels` (`distroless`); 1.12–1.18's Debian
    /// image has them under `/usr/bin`.
    pub(crate) fn in_image(self, distroless: bool) -> Self {
        match self {
            Self::DebianImage if distroless => Self::DistrolessImage,
            other => other,
        }
    }

    /// Whether the run is in kOps' container (1.12–1.20), the host at `/rootfs`.
    pub(crate) fn in_container(self) -> bool {
        matches!(self, Self::DebianImage | Self::DistrolessImage)
    }

    /// The labels kOps' labeller of this version gave a control-plane node
    /// (`protokube/pkg/protokube/labeler.go`, `pkg/nodelabels/builder.go`): 1.16–1.20 the
    /// master role and kops-controller's PKI label (unused before 1.19, harmless there);
    /// 1.21–1.23 `BuildMandatoryControlPlaneLabels` with both roles and `kubernetes.io/role`;
    /// from 1.24 the control-plane role, the PKI label and the load-balancer exclusion.
    pub(crate) fn control_plane_labels(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Self::DebianImage | Self::DistrolessImage => &[MASTER, CONTROLLER_PKI],
            Self::Host => &[
                MASTER,
                CONTROL_PLANE,
                ROLE_MASTER,
                CONTROLLER_PKI,
                EXCLUDE_LB,
            ],
            Self::Current => &[CONTROL_PLANE, CONTROLLER_PKI, EXCLUDE_LB],
        }
    }

    /// Whether a node not found by its name is looked for by its `kubernetes.io/hostname`
    /// label, as kOps 1.19–1.20's labeller found it (`Nodes().List`, exactly one).
    pub(crate) fn finds_node_by_hostname(self) -> bool {
        self == Self::DistrolessImage
    }

    /// Whether kubelet is started on a control-plane node where it is not running: nodeup of
    /// kOps 1.12–1.18 left it stopped there for protokube to start (`startKubeletService`);
    /// from 1.19 nodeup starts it and kOps' protokube no longer did.
    pub(crate) fn starts_kubelet(self) -> bool {
        self == Self::DebianImage
    }
}

/// The labels of `wanted` a node carrying `current` lacks or has with another value; empty
/// when it is converged.
pub(crate) fn missing_labels(
    wanted: &[(&str, &str)],
    current: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    wanted
        .iter()
        .filter(|(key, value)| current.get(*key).map(String::as_str) != Some(*value))
        .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
        .collect()
}

/// Whether the channels tool's output says it applied nothing (kOps' `channels apply channel`
/// prints `No update required` when every addon is current).
pub(crate) fn channel_unchanged(output: &str) -> bool {
    output.contains("No update required")
}

/// An object kOps' protokube made with `--initialize-rbac=true` (kOps ≤ 1.22,
/// `protokube/pkg/protokube/rbac.go`): kube-dns' addon of those versions names a
/// `kube-dns` ServiceAccount it does not define, and kube-proxy is bound to
/// `system:node-proxier`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BootstrapObject {
    ServiceAccount {
        namespace: &'static str,
        name: &'static str,
    },
    /// A ClusterRoleBinding of `cluster_role` to the ServiceAccount `subject` (namespace,
    /// name).
    ClusterRoleBinding {
        name: &'static str,
        cluster_role: &'static str,
        subject: (&'static str, &'static str),
    },
}

impl BootstrapObject {
    /// How the report names it: `ServiceAccount kube-system/kube-dns`.
    pub(crate) fn describe(&self) -> String {
        match self {
            Self::ServiceAccount { namespace, name } => {
                format!("ServiceAccount {namespace}/{name}")
            }
            Self::ClusterRoleBinding { name, .. } => format!("ClusterRoleBinding {name}"),
        }
    }
}

/// The objects `--initialize-rbac=true` makes exist, in kOps' order.
pub(crate) const BOOTSTRAP_RBAC: [BootstrapObject; 3] = [
    BootstrapObject::ServiceAccount {
        namespace: "kube-system",
        name: "kube-dns",
    },
    BootstrapObject::ServiceAccount {
        namespace: "kube-system",
        name: "kube-proxy",
    },
    BootstrapObject::ClusterRoleBinding {
        name: "kubeadm:node-proxier",
        cluster_role: "system:node-proxier",
        subject: ("kube-system", "kube-proxy"),
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_is_told_from_the_unit_s_flags() {
        // (legacy, --containerized, --cluster-id given)
        for (flags, unit) in [
            ((true, Some(true), false), KopsUnit::DebianImage),
            ((true, Some(true), true), KopsUnit::DebianImage),
            ((true, Some(false), false), KopsUnit::Host),
            ((true, None, false), KopsUnit::Host),
            ((true, Some(false), true), KopsUnit::Current),
            ((false, Some(true), false), KopsUnit::Current),
            ((false, None, false), KopsUnit::Current),
        ] {
            assert_eq!(
                KopsUnit::from_flags(flags.0, flags.1, flags.2),
                unit,
                "{flags:?}"
            );
        }
        // The container's image tells 1.19–1.20 from 1.12–1.18.
        assert_eq!(
            KopsUnit::DebianImage.in_image(true),
            KopsUnit::DistrolessImage
        );
        assert_eq!(KopsUnit::DebianImage.in_image(false), KopsUnit::DebianImage);
        assert_eq!(KopsUnit::Host.in_image(true), KopsUnit::Host);
    }

    #[test]
    fn labels_by_version() {
        let keys = |unit: KopsUnit| -> Vec<&str> {
            unit.control_plane_labels()
                .iter()
                .map(|(k, _)| *k)
                .collect()
        };
        assert_eq!(
            keys(KopsUnit::DistrolessImage),
            [
                "node-role.kubernetes.io/master",
                "kops.k8s.io/kops-controller-pki"
            ]
        );
        assert_eq!(keys(KopsUnit::Host).len(), 5);
        assert!(KopsUnit::Host
            .control_plane_labels()
            .contains(&("kubernetes.io/role", "master")));
        assert_eq!(
            keys(KopsUnit::Current),
            [
                "node-role.kubernetes.io/control-plane",
                "kops.k8s.io/kops-controller-pki",
                "node.kubernetes.io/exclude-from-external-load-balancers"
            ]
        );
        assert_eq!(keys(KopsUnit::DebianImage), keys(KopsUnit::DistrolessImage));
        // kubelet: 1.12–1.18 only; the hostname lookup: 1.19–1.20 only.
        assert!(
            KopsUnit::DebianImage.starts_kubelet()
                && !KopsUnit::DebianImage.finds_node_by_hostname()
        );
        assert!(
            !KopsUnit::DistrolessImage.starts_kubelet()
                && KopsUnit::DistrolessImage.finds_node_by_hostname()
        );
        assert!(!KopsUnit::Host.starts_kubelet() && !KopsUnit::Current.starts_kubelet());
    }

    #[test]
    fn only_missing_or_different_labels_are_patched() {
        let wanted = KopsUnit::Host.control_plane_labels();
        let mut labels: BTreeMap<String, String> =
            [("kubernetes.io/hostname".to_owned(), "n".to_owned())].into();
        assert_eq!(missing_labels(wanted, &labels).len(), 5);
        for (key, value) in wanted {
            labels.insert((*key).to_owned(), (*value).to_owned());
        }
        assert!(missing_labels(wanted, &labels).is_empty());
        labels.insert("kubernetes.io/role".into(), "node".into());
        labels.insert("kops.k8s.io/kops-controller-pki".into(), "true".into());
        let missing = missing_labels(wanted, &labels);
        assert_eq!(
            missing,
            [
                ("kops.k8s.io/kops-controller-pki".to_owned(), String::new()),
                ("kubernetes.io/role".to_owned(), "master".to_owned())
            ]
            .into()
        );
    }

    #[test]
    fn the_tool_says_when_nothing_changed() {
        assert!(channel_unchanged(
            "I1123 channels.go:1] No update required\n"
        ));
        assert!(!channel_unchanged(
            "NAME  CURRENT  UPDATE\ncoredns  -  1.11\n"
        ));
    }

    #[test]
    fn kops_rbac_objects() {
        let names: Vec<String> = BOOTSTRAP_RBAC
            .iter()
            .map(BootstrapObject::describe)
            .collect();
        assert_eq!(
            names,
            [
                "ServiceAccount kube-system/kube-dns",
                "ServiceAccount kube-system/kube-proxy",
                "ClusterRoleBinding kubeadm:node-proxier"
            ]
        );
    }
}
