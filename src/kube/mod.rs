//! The seam to the Kubernetes API (node labels) and to kOps' `channels` tool: narrow traits
//! returning our own values, so steps run against the real API server or a test double. The
//! kube-rs implementation lives in [`api`], the tool runner in [`channels`].

pub mod api;
pub mod channels;

use std::collections::BTreeMap;

use anyhow::Result;
use async_trait::async_trait;

/// Node operations the label step needs.
#[async_trait]
pub trait NodeApi: Send + Sync {
    /// The node's labels; `None` when the node is not registered (yet). An API server that does
    /// not answer is [`crate::error::NotReady`].
    async fn node_labels(&self, name: &str) -> Result<Option<BTreeMap<String, String>>>;

    /// Sets `labels` on the node with one strategic-merge patch (other labels are kept).
    async fn patch_labels(&self, name: &str, labels: &BTreeMap<String, String>) -> Result<()>;
}

/// What a run of the channels tool said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChannelRun {
    /// It succeeded.
    pub success: bool,
    /// Its exit status, as text (`exit status 1`, `signal 9`).
    pub status: String,
    /// Its output (stdout and stderr), trimmed to the last lines.
    pub output: String,
}
