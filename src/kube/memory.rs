//! A Kubernetes API held in memory, for the steps' unit tests: nodes and their labels, the
//! bootstrap RBAC objects that exist, whether the server answers, and every request made.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use anyhow::Result;
use async_trait::async_trait;

use super::KubernetesApi;
use crate::error::NotReady;
use crate::plan::kops::BootstrapObject;

/// The API's state; tests build it and read it back.
#[derive(Clone, Debug, Default)]
pub(crate) struct Cluster {
    /// The server answers; while false every request is "not ready".
    pub(crate) answers: bool,
    /// Nodes by name: their labels.
    pub(crate) nodes: BTreeMap<String, BTreeMap<String, String>>,
    /// The bootstrap objects that exist, as the report names them.
    pub(crate) objects: BTreeSet<String>,
    /// Every request (`GET node/n1`, `PATCH node/n1 {labels}`, `POST ServiceAccount …`).
    pub(crate) requests: Vec<String>,
}

/// The in-memory API server.
#[derive(Debug, Default)]
pub(crate) struct MemoryKube {
    cluster: Mutex<Cluster>,
}

impl MemoryKube {
    pub(crate) fn new(cluster: Cluster) -> Self {
        Self {
            cluster: Mutex::new(cluster),
        }
    }

    /// The API's state now.
    pub(crate) fn cluster(&self) -> Cluster {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Cluster> {
        self.cluster
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records `request`; "not ready" while the server does not answer.
    fn request(&self, request: String) -> Result<std::sync::MutexGuard<'_, Cluster>> {
        let mut cluster = self.lock();
        cluster.requests.push(request);
        if cluster.answers {
            Ok(cluster)
        } else {
            Err(NotReady("the Kubernetes API does not answer yet".to_owned()).into())
        }
    }
}

#[async_trait]
impl KubernetesApi for MemoryKube {
    async fn ready(&self) -> Result<()> {
        self.request("GET namespace/kube-system".to_owned())
            .map(drop)
    }

    async fn node_labels(&self, name: &str) -> Result<Option<BTreeMap<String, String>>> {
        Ok(self
            .request(format!("GET node/{name}"))?
            .nodes
            .get(name)
            .cloned())
    }

    async fn nodes_with_hostname(&self, hostname: &str) -> Result<Vec<String>> {
        let cluster = self.request(format!("LIST node kubernetes.io/hostname={hostname}"))?;
        Ok(cluster
            .nodes
            .iter()
            .filter(|(_, labels)| {
                labels.get("kubernetes.io/hostname").map(String::as_str) == Some(hostname)
            })
            .map(|(name, _)| name.clone())
            .collect())
    }

    async fn patch_labels(&self, name: &str, labels: &BTreeMap<String, String>) -> Result<()> {
        let mut cluster = self.request(format!("PATCH node/{name} {labels:?}"))?;
        if let Some(current) = cluster.nodes.get_mut(name) {
            current.extend(labels.clone());
        }
        Ok(())
    }

    async fn exists(&self, object: &BootstrapObject) -> Result<bool> {
        let cluster = self.request(format!("GET {}", object.describe()))?;
        Ok(cluster.objects.contains(&object.describe()))
    }

    async fn create(&self, object: &BootstrapObject) -> Result<bool> {
        let mut cluster = self.request(format!("POST {}", object.describe()))?;
        Ok(cluster.objects.insert(object.describe()))
    }
}
