//! The seam to the Kubernetes API (node labels, kOps' bootstrap RBAC objects) and to kOps'
//! `channels` tool: narrow traits returning our own values, so steps run against the real API
//! server or a test double. The kube-rs implementation lives in [`api`], the tool runner in
//! [`channels`], the double in `memory`.

pub(crate) mod api;
pub(crate) mod certificate;
pub(crate) mod channels;
#[cfg(test)]
pub(crate) mod memory;

use std::collections::BTreeMap;

use anyhow::Result;
use async_trait::async_trait;

use crate::plan::kops::BootstrapObject;

/// What the steps ask of the Kubernetes API. An API server that does not answer (yet) is
/// [`crate::error::NotReady`].
#[async_trait]
pub(crate) trait KubernetesApi: Send + Sync {
    /// The API server answers and its `kube-system` namespace exists (`GET
    /// /api/v1/namespaces/kube-system`, as kOps' protokube asked from 1.20): before that, an
    /// RBAC object or an addon of that namespace cannot be made yet ("not ready").
    async fn ready(&self) -> Result<()>;

    /// The node's labels; `None` when the node is not registered (yet).
    async fn node_labels(&self, name: &str) -> Result<Option<BTreeMap<String, String>>>;

    /// The names of the nodes whose `kubernetes.io/hostname` label is `hostname`.
    async fn nodes_with_hostname(&self, hostname: &str) -> Result<Vec<String>>;

    /// Sets `labels` on the node with one strategic-merge patch (other labels are kept).
    async fn patch_labels(&self, name: &str, labels: &BTreeMap<String, String>) -> Result<()>;

    /// Whether `object` exists.
    async fn exists(&self, object: &BootstrapObject) -> Result<bool>;

    /// Creates `object`; `false` when it exists already (someone created it meanwhile).
    async fn create(&self, object: &BootstrapObject) -> Result<bool>;
}

/// What a run of the channels tool said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ChannelRun {
    /// It succeeded.
    pub(crate) success: bool,
    /// Its exit status, as text (`exit status 1`, `signal 9`).
    pub(crate) status: String,
    /// Its output (stdout and stderr), trimmed to the last lines.
    pub(crate) output: String,
}
