//! kOps' mandatory control-plane labels (kOps v1.30.3 `pkg/nodelabels/builder.go`, applied by
//! its protokube's `labeler.go`): which of them a node lacks. Pure.

use std::collections::BTreeMap;

/// The labels every kOps control-plane node carries, all with the empty value:
/// kops-controller schedules only on nodes with the first two.
pub const CONTROL_PLANE_LABELS: [&str; 3] = [
    "node-role.kubernetes.io/control-plane",
    "kops.k8s.io/kops-controller-pki",
    "node.kubernetes.io/exclude-from-external-load-balancers",
];

/// The labels to patch onto a node that carries `current`: those missing or different; empty
/// when the node is converged.
pub fn missing_labels(current: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    CONTROL_PLANE_LABELS
        .iter()
        .filter(|key| current.get(**key).is_none_or(|value| !value.is_empty()))
        .map(|key| ((*key).to_owned(), String::new()))
        .collect()
}

/// Whether the channels tool's output says it applied nothing (kOps' `channels apply channel`
/// prints `No update required` when every addon is current).
pub fn channel_unchanged(output: &str) -> bool {
    output.contains("No update required")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_missing_or_different_labels_are_patched() {
        let mut labels: BTreeMap<String, String> =
            [("kubernetes.io/hostname".to_owned(), "n".to_owned())].into();
        assert_eq!(missing_labels(&labels).len(), 3);
        labels.insert(CONTROL_PLANE_LABELS[0].into(), String::new());
        labels.insert(CONTROL_PLANE_LABELS[1].into(), "true".into());
        let missing = missing_labels(&labels);
        assert_eq!(
            missing.keys().collect::<Vec<_>>(),
            [CONTROL_PLANE_LABELS[1], CONTROL_PLANE_LABELS[2]]
        );
        assert!(missing.values().all(String::is_empty));
        for key in CONTROL_PLANE_LABELS {
            labels.insert(key.into(), String::new());
        }
        assert!(missing_labels(&labels).is_empty());
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
}
