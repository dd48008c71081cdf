//! What a run knows: the global flags, the cluster spec, and, fetched on first use, the node's
//! identity, the AWS clients and the cluster name. Each command takes only the parts it needs.

use anyhow::{anyhow, Context as _, Result};
use tokio::sync::OnceCell;

use crate::cli::GlobalArgs;
use crate::cloud::aws::{load_sdk_config, Ec2, Imds, Route53};
use crate::cloud::InstanceApi;
use crate::error::UsageError;
use crate::fsutil::{HostRoot, RunLock};
use crate::identity::{self, NodeIdentity, Want};
use crate::names::check_cluster_name;
use crate::spec::ClusterDocument;
use crate::volumes::CLUSTER_TAG;

/// The state of one run, shared by the steps of `sync`.
pub struct Context {
    pub global: GlobalArgs,
    pub root: HostRoot,
    pub spec: Option<ClusterDocument>,
    identity: OnceCell<NodeIdentity>,
    sdk_config: OnceCell<aws_config::SdkConfig>,
    ec2: OnceCell<Ec2>,
}

impl Context {
    /// Checks the global flags and loads the cluster spec; no network access.
    pub fn new(global: GlobalArgs) -> Result<Self> {
        let spec = match &global.cluster_spec {
            Some(path) => Some(ClusterDocument::load(path)?),
            None => None,
        };
        if let Some(name) = &global.cluster_id {
            check_cluster_name(name).map_err(|msg| UsageError(format!("--cluster-id: {msg}")))?;
        }
        if let Some(name) = spec.as_ref().and_then(|s| s.name()) {
            check_cluster_name(name).map_err(|msg| {
                anyhow!(
                    "cluster spec `{}`: metadata.name: {msg}",
                    global
                        .cluster_spec
                        .as_deref()
                        .unwrap_or_else(|| std::path::Path::new("-"))
                        .display()
                )
            })?;
        }
        Ok(Self {
            root: HostRoot::new(&global.root),
            global,
            spec,
            identity: OnceCell::new(),
            sdk_config: OnceCell::new(),
            ec2: OnceCell::new(),
        })
    }

    /// The run lock for a mutating command; none with `--dry-run`, which changes nothing.
    pub fn lock(&self) -> Result<Option<RunLock>> {
        if self.global.dry_run {
            Ok(None)
        } else {
            RunLock::acquire(&self.root, self.global.timeout).map(Some)
        }
    }

    /// This node's identity (instance id, zone, region), from flags and the metadata service.
    pub async fn identity(&self) -> Result<&NodeIdentity> {
        self.identity
            .get_or_try_init(|| async {
                let mut overrides = self.global.identity_overrides();
                // The SDK's own region variables count as a region given by the user.
                overrides.region = overrides.region.or_else(|| {
                    ["AWS_REGION", "AWS_DEFAULT_REGION"]
                        .iter()
                        .find_map(|var| std::env::var(var).ok().filter(|v| !v.is_empty()))
                });
                identity::resolve(&overrides, &Imds::new(), Want::Placement).await
            })
            .await
    }

    /// The one SDK configuration of the run (credentials resolved once for every client).
    async fn sdk_config(&self) -> Result<&aws_config::SdkConfig> {
        let region = self.identity().await?.region.clone();
        self.sdk_config
            .get_or_try_init(|| async move { anyhow::Ok(load_sdk_config(&region).await) })
            .await
    }

    /// The EC2 client for this node's region.
    pub async fn ec2(&self) -> Result<&Ec2> {
        let config = self.sdk_config().await?;
        self.ec2
            .get_or_try_init(|| async { anyhow::Ok(Ec2::new(config)) })
            .await
    }

    /// A Route53 client sharing the run's SDK configuration.
    pub async fn route53(&self) -> Result<Route53> {
        Ok(Route53::new(self.sdk_config().await?))
    }

    /// The cluster name without asking the cloud: `--cluster-id`, else the spec's `metadata.name`.
    pub fn offline_cluster_name(&self) -> Result<String> {
        self.global
            .cluster_id
            .clone()
            .or_else(|| self.spec.as_ref().and_then(|s| s.name()).map(str::to_owned))
            .ok_or_else(|| {
                anyhow!("no cluster name: pass --cluster-id or a spec with metadata.name")
            })
    }

    /// The suffix of internal names, with its leading dot: `--dns-internal-suffix`, else
    /// `.internal.<cluster>`.
    pub fn internal_suffix(&self, cluster_name: &str) -> Result<String> {
        let suffix = match &self.global.dns_internal_suffix {
            Some(suffix) => format!(".{}", suffix.trim_start_matches('.')),
            None => format!(".internal.{cluster_name}"),
        };
        if !crate::names::is_dns1123_subdomain(&suffix[1..]) {
            return Err(UsageError(format!(
                "--dns-internal-suffix: `{}` is not a valid DNS suffix",
                suffix.escape_debug()
            ))
            .into());
        }
        Ok(suffix)
    }

    /// The cluster name: `--cluster-id`, else the spec's `metadata.name`, else this instance's
    /// `KubernetesCluster` tag.
    pub async fn cluster_name(&self, instances: &dyn InstanceApi) -> Result<String> {
        if let Some(name) = &self.global.cluster_id {
            return Ok(name.clone());
        }
        if let Some(name) = self.spec.as_ref().and_then(|s| s.name()) {
            return Ok(name.to_owned());
        }
        let instance_id = &self.identity().await?.instance_id;
        let tag = instances
            .instance_tag(instance_id, CLUSTER_TAG)
            .await
            .context("finding the cluster name")?;
        let name = tag.ok_or_else(|| {
            anyhow!(
                "no cluster name: pass --cluster-id or --cluster-spec (instance `{instance_id}` has \
                 no `{CLUSTER_TAG}` tag)"
            )
        })?;
        check_cluster_name(&name)
            .map_err(|msg| anyhow!("tag `{CLUSTER_TAG}` of instance `{instance_id}`: {msg}"))?;
        Ok(name)
    }
}
