//! kOps' metadata keys on a cluster's volumes and instances (its AWS tag keys; a provider whose
//! labels are spelled otherwise maps them onto these), and the ones protokube adds.

use std::collections::BTreeMap;

use anyhow::{anyhow, Result};

use crate::names::check_cluster_name;

/// Tag every kOps version puts on a cluster's resources: `KubernetesCluster=<cluster>`.
pub(crate) const CLUSTER: &str = "KubernetesCluster";
/// Tag key every kOps version puts on control-plane volumes and instances.
pub(crate) const MASTER_ROLE: &str = "k8s.io/role/master";
/// Tag key newer kOps versions put on control-plane instances and volumes.
pub(crate) const CONTROL_PLANE_ROLE: &str = "k8s.io/role/control-plane";
/// Prefix of the membership tags: `k8s.io/etcd/<cluster key>=<me>/<m1,m2,...>`.
pub(crate) const ETCD_PREFIX: &str = "k8s.io/etcd/";
/// The tag protokube writes on a volume it formatted: the filesystem's UUID, the blank proof's
/// cloud witness.
pub(crate) const FORMATTED: &str = "k8s.io/protokube/formatted";
/// Prefix of the tag protokube writes when it records the etcd version a volume's data of one
/// etcd cluster runs: `k8s.io/protokube/etcd-version/<cluster key>=3.5.13`, so every member
/// sees the others' versions in the one cloud answer.
pub(crate) const ETCD_VERSION_PREFIX: &str = "k8s.io/protokube/etcd-version/";

/// kOps' keys as they are, tags: the words of a provider that stores them under these very keys
/// (and of the tests' doubles).
#[derive(Clone, Copy, Debug, Default)]
pub struct KopsTags;

impl super::MetadataWords for KopsTags {
    fn noun(&self) -> &'static str {
        "tag"
    }

    fn key(&self, key: &str) -> String {
        key.to_owned()
    }
}

/// The cluster instance `instance_id` belongs to, from its `KubernetesCluster` tag among
/// `tags` (named to the operator in the provider's `words`), checked as a cluster name (a tag
/// value is untrusted).
pub(crate) fn cluster_of(
    instance_id: &str,
    tags: &BTreeMap<String, String>,
    words: &dyn super::MetadataWords,
) -> Result<String> {
    let name = tags.get(CLUSTER).ok_or_else(|| {
        anyhow!(
            "no cluster name: pass --cluster-id or --cluster-spec (instance `{instance_id}` has \
             no {})",
            words.name(CLUSTER)
        )
    })?;
    check_cluster_name(name).map_err(|msg| {
        anyhow!(
            "the {} of instance `{instance_id}`: {msg}",
            words.name(CLUSTER)
        )
    })?;
    Ok(name.clone())
}
