//! The Kubernetes API through kube-rs, from the kubeconfig nodeup writes for protokube
//! (`KUBECONFIG`, kOps: `/var/lib/kops/kubeconfig`: the local API server at `https://127.0.0.1`,
//! its CA, and a client certificate). Paths in the kubeconfig are host paths: they are taken
//! under `--root`, as every host path is.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{anyhow, Context as _, Result};
use async_trait::async_trait;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

use super::NodeApi;
use crate::error::NotReady;
use crate::host::linux;
use crate::paths::HostRoot;

/// The largest kubeconfig read (kOps' is well under 16 KiB).
const MAX_KUBECONFIG_BYTES: u64 = 1 << 20;

/// Node operations against the API server the kubeconfig names.
pub struct KubeNodes {
    nodes: Api<Node>,
    server: String,
}

impl KubeNodes {
    /// A client from the kubeconfig at host path `kubeconfig` (absolute, checked by the
    /// settings; taken under `root`); every request is
    /// bounded by `timeout`.
    pub async fn connect(root: &HostRoot, kubeconfig: &str, timeout: Duration) -> Result<Self> {
        let path = root.resolve(kubeconfig)?;
        if !linux::exists(&path) {
            return Err(NotReady(format!(
                "the kubeconfig `{}` (KUBECONFIG) is not there yet: nodeup writes it on \
                 control-plane nodes; retry later",
                path.display()
            ))
            .into());
        }
        let text = linux::read_text(&path, MAX_KUBECONFIG_BYTES).with_context(|| {
            format!(
                "reading the kubeconfig `{}` (KUBECONFIG; nodeup writes it on control-plane nodes)",
                path.display()
            )
        })?;
        let mut config = Kubeconfig::from_yaml(&text)
            .with_context(|| format!("kubeconfig `{}`", path.display()))?;
        for cluster in config
            .clusters
            .iter_mut()
            .filter_map(|c| c.cluster.as_mut())
        {
            under_root(root, &mut cluster.certificate_authority)?;
        }
        for user in config
            .auth_infos
            .iter_mut()
            .filter_map(|u| u.auth_info.as_mut())
        {
            under_root(root, &mut user.client_certificate)?;
            under_root(root, &mut user.client_key)?;
            under_root(root, &mut user.token_file)?;
        }
        let mut config =
            kube::Config::from_custom_kubeconfig(config, &KubeConfigOptions::default())
                .await
                .with_context(|| format!("kubeconfig `{}`", path.display()))?;
        config.connect_timeout = Some(timeout);
        config.read_timeout = Some(timeout);
        config.write_timeout = Some(timeout);
        let server = config.cluster_url.to_string();
        let client = kube::Client::try_from(config)
            .with_context(|| format!("a Kubernetes client for `{server}`"))?;
        Ok(Self {
            nodes: Api::all(client),
            server,
        })
    }
}

/// A host path of the kubeconfig, taken under `--root`.
fn under_root(root: &HostRoot, path: &mut Option<String>) -> Result<()> {
    if let Some(host_path) = path.as_mut() {
        *host_path = root.resolve(host_path.as_str())?.display().to_string();
    }
    Ok(())
}

#[async_trait]
impl NodeApi for KubeNodes {
    async fn node_labels(&self, name: &str) -> Result<Option<BTreeMap<String, String>>> {
        let node = self
            .nodes
            .get_opt(name)
            .await
            .map_err(|err| api_error(err, &self.server))
            .with_context(|| format!("reading node `{name}`"))?;
        Ok(node.map(|n| n.metadata.labels.unwrap_or_default()))
    }

    async fn patch_labels(&self, name: &str, labels: &BTreeMap<String, String>) -> Result<()> {
        let patch = serde_json::json!({ "metadata": { "labels": labels } });
        self.nodes
            .patch(name, &PatchParams::default(), &Patch::Strategic(&patch))
            .await
            .map_err(|err| api_error(err, &self.server))
            .with_context(|| format!("labelling node `{name}`"))?;
        Ok(())
    }
}

/// An API server that does not answer (connection refused, timed out, 5xx, 429) is "not ready"
/// (exit 75); anything else it says is an error.
fn api_error(err: kube::Error, server: &str) -> anyhow::Error {
    match &err {
        kube::Error::Api(status) if status.code >= 500 || status.code == 429 => NotReady(format!(
            "the Kubernetes API at `{server}` answered {} ({}); retry later",
            status.code, status.message
        ))
        .into(),
        kube::Error::Api(status) => anyhow!(
            "the Kubernetes API at `{server}` refused: {} {} ({})",
            status.code,
            status.reason,
            status.message
        ),
        kube::Error::HyperError(_) | kube::Error::Service(_) => NotReady(format!(
            "the Kubernetes API at `{server}` does not answer yet ({err}); retry later"
        ))
        .into(),
        _ => anyhow::Error::new(err),
    }
}
