//! The kOps `Cluster` document: a typed model of the parts protokube uses, and its loading.
//!
//! The componentconfig sections (`kubeAPIServer`, …) stay YAML mappings: the flag builder reads
//! them field by field through the flag table, so fields kOps adds later need no code here.

use anyhow::{bail, Result};
use serde::Deserialize;
use yaml_serde::Mapping;

/// `apiVersion` of the documents kOps writes to its state store.
pub(crate) const API_VERSION: &str = "kops.k8s.io/v1alpha2";
/// `kind` of a cluster document.
pub(crate) const KIND: &str = "Cluster";

/// A kOps `Cluster` document.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterDocument {
    pub(crate) api_version: String,
    pub(crate) kind: String,
    #[serde(default)]
    pub(crate) metadata: ObjectMeta,
    #[serde(default)]
    pub spec: ClusterSpec,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub(crate) struct ObjectMeta {
    pub(crate) name: Option<String>,
}

/// `spec` of a cluster: only the fields protokube reads; everything else is ignored.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSpec {
    #[serde(default)]
    pub etcd_clusters: Vec<EtcdClusterSpec>,
    #[serde(rename = "kubeAPIServer")]
    pub kube_api_server: Option<Mapping>,
    pub kube_controller_manager: Option<Mapping>,
    pub kube_scheduler: Option<Mapping>,
    pub kube_proxy: Option<Mapping>,
    pub master_public_name: Option<String>,
    pub(crate) dns_zone: Option<String>,
    /// `aws`, `kopeio`: webhook authentication nodeup wires into kube-apiserver.
    pub(crate) authentication: Option<Mapping>,
    /// Encryption at rest: nodeup points kube-apiserver at its encryption config.
    pub(crate) encryption_config: Option<bool>,
    /// Every node's kubelet settings; `masterKubelet` overrides them on control-plane nodes.
    pub(crate) kubelet: Option<Mapping>,
    pub(crate) master_kubelet: Option<Mapping>,
    /// Control-plane nodes off the pod network: no kube-proxy there.
    pub(crate) isolate_masters: Option<bool>,
    /// An IPv6 CIDR (`::/0`) makes the cluster IPv6.
    #[serde(rename = "nonMasqueradeCIDR")]
    pub(crate) non_masquerade_cidr: Option<String>,
    /// How the API is reached: `dns` (kOps points `api.<cluster>` at the masters) or a
    /// `loadBalancer` (kOps points it at the load balancer with an alias).
    pub(crate) api: Option<ApiSpec>,
    /// `topology.dns.type` in older specs (`spec.topology`); newer ones nest it in `networking`.
    pub(crate) topology: Option<TopologySpec>,
    pub(crate) networking: Option<NetworkingSpec>,
    pub(crate) iam: Option<IamSpec>,
}

/// `spec.api`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ApiSpec {
    /// Present (even empty) when the API is published through DNS to the masters.
    pub(crate) dns: Option<yaml_serde::Value>,
    pub(crate) load_balancer: Option<LoadBalancerSpec>,
}

/// `spec.api.loadBalancer`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LoadBalancerSpec {
    /// The load balancer serves `api.internal.<cluster>` too.
    pub(crate) use_for_internal_api: Option<bool>,
}

/// `spec.topology` / `spec.networking.topology`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub(crate) struct TopologySpec {
    pub(crate) dns: Option<TopologyDns>,
}

/// `topology.dns`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub(crate) struct TopologyDns {
    /// `Public`, `Private` or `None`.
    #[serde(rename = "type")]
    pub(crate) kind: Option<String>,
}

/// `spec.networking`: only its topology is read here.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub(crate) struct NetworkingSpec {
    pub(crate) topology: Option<TopologySpec>,
}

/// `spec.iam`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct IamSpec {
    /// IRSA: dns-controller's and the volume CSI driver's permissions move to service-account
    /// roles; the control-plane role keeps no DNS writes, no volume tagging, no detach.
    pub(crate) use_service_account_external_permissions: Option<bool>,
}

impl ClusterSpec {
    /// Whether the cluster runs on IPv6, as kOps decides it: its non-masquerade CIDR is IPv6.
    pub(crate) fn is_ipv6(&self) -> bool {
        self.non_masquerade_cidr
            .as_deref()
            .is_some_and(|cidr| cidr.contains(':'))
    }

    /// The cluster has no DNS (`topology.dns.type: None`, under `spec.networking` or `spec`),
    /// kOps' `UsesNoneDNS`: nodeup writes the API's names into `/etc/hosts` itself.
    pub(crate) fn uses_none_dns(&self) -> bool {
        [
            self.networking.as_ref().and_then(|n| n.topology.as_ref()),
            self.topology.as_ref(),
        ]
        .into_iter()
        .flatten()
        .any(|t| {
            t.dns
                .as_ref()
                .and_then(|d| d.kind.as_deref())
                .is_some_and(|kind| kind.eq_ignore_ascii_case("none"))
        })
    }

    /// The API has a load balancer (`spec.api.loadBalancer`): `api.<cluster>` is its alias.
    pub(crate) fn api_load_balancer(&self) -> bool {
        self.api.as_ref().is_some_and(|a| a.load_balancer.is_some())
    }

    /// The load balancer serves the internal API name too (`useForInternalApi`).
    pub(crate) fn load_balancer_serves_internal_api(&self) -> bool {
        self.api
            .as_ref()
            .and_then(|a| a.load_balancer.as_ref())
            .and_then(|lb| lb.use_for_internal_api)
            .unwrap_or(false)
    }

    /// `spec.api.dns` is set: the public API name points at the masters.
    pub(crate) fn api_dns(&self) -> bool {
        self.api.as_ref().is_some_and(|a| a.dns.is_some())
    }

    /// IRSA (`spec.iam.useServiceAccountExternalPermissions: true`).
    pub(crate) fn uses_irsa(&self) -> bool {
        self.iam
            .as_ref()
            .and_then(|i| i.use_service_account_external_permissions)
            .unwrap_or(false)
    }

    /// A kubelet setting on this node: `masterKubelet`'s on control-plane nodes, else `kubelet`'s.
    pub(crate) fn kubelet_setting(&self, master: bool, key: &str) -> Option<&yaml_serde::Value> {
        fn get<'a>(section: Option<&'a Mapping>, key: &str) -> Option<&'a yaml_serde::Value> {
            section.and_then(|s| s.get(key)).filter(|v| !v.is_null())
        }
        master
            .then(|| get(self.master_kubelet.as_ref(), key))
            .flatten()
            .or_else(|| get(self.kubelet.as_ref(), key))
    }
}

/// One entry of `spec.etcdClusters`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct EtcdClusterSpec {
    pub name: String,
    #[serde(default)]
    pub etcd_members: Vec<EtcdMemberSpec>,
    pub image: Option<String>,
    pub version: Option<String>,
    pub cpu_request: Option<String>,
    pub memory_request: Option<String>,
    pub leader_election_timeout: Option<String>,
    pub heartbeat_interval: Option<String>,
    /// protokube's own: ports for an etcd cluster beyond `main`, `events` and `cilium` (kOps'
    /// API has none; without them the next free pair is used).
    pub peer_port: Option<u16>,
    pub client_port: Option<u16>,
}

impl ClusterSpec {
    /// The members the spec names for each etcd cluster (`etcdClusters[].etcdMembers[].name`),
    /// by cluster name; each name checked as a DNS-1123 label (it becomes part of DNS names and
    /// pod names). A cluster naming no member is left out.
    pub(crate) fn etcd_members(
        &self,
    ) -> anyhow::Result<std::collections::BTreeMap<String, Vec<String>>> {
        let mut out = std::collections::BTreeMap::new();
        for (i, cluster) in self.etcd_clusters.iter().enumerate() {
            let mut names = Vec::new();
            for (j, member) in cluster.etcd_members.iter().enumerate() {
                if !crate::names::is_dns1123_label(&member.name) {
                    anyhow::bail!(
                        "spec.etcdClusters[{i}].etcdMembers[{j}].name: `{}` is not a DNS-1123 \
                         label (lowercase letters, digits and `-`, at most 63)",
                        member.name.escape_debug()
                    );
                }
                if !names.contains(&member.name) {
                    names.push(member.name.clone());
                }
            }
            if !names.is_empty() {
                out.insert(cluster.name.clone(), names);
            }
        }
        Ok(out)
    }
}

/// One entry of `etcdMembers`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct EtcdMemberSpec {
    pub(crate) name: String,
    pub(crate) instance_group: Option<String>,
}

/// The deepest `[`/`{` nesting a spec may have: kOps' completed specs nest a few levels; a
/// parser fed 100 000 levels spends seconds of CPU per level of doubt.
pub(crate) const MAX_FLOW_NESTING: usize = 64;
/// The largest spec read: kOps' completed specs are a few KiB.
pub(crate) const MAX_SPEC_BYTES: u64 = 16 << 20;

/// Checks, in one linear pass, that flow collections (`[…]`, `{…}`) outside quotes and comments
/// nest at most [`MAX_FLOW_NESTING`] deep; returns the offending line otherwise.
pub(crate) fn check_nesting(text: &str) -> Result<(), usize> {
    let (mut depth, mut line) = (0usize, 1usize);
    let mut quote: Option<char> = None;
    let mut comment = false;
    let mut previous = '\n';
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\n' {
            line += 1;
            comment = false;
        }
        match (quote, c) {
            _ if comment => {}
            (Some('\''), '\'') if chars.peek() == Some(&'\'') => {
                chars.next();
            }
            (Some('"'), '\\') => {
                chars.next();
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '#') if previous.is_whitespace() => comment = true,
            (None, '"' | '\'') => quote = Some(c),
            (None, '[' | '{') => {
                depth += 1;
                if depth > MAX_FLOW_NESTING {
                    return Err(line);
                }
            }
            (None, ']' | '}') => depth = depth.saturating_sub(1),
            _ => {}
        }
        previous = c;
    }
    Ok(())
}

impl ClusterDocument {
    /// Parses and checks a cluster document; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self> {
        if let Err(line) = check_nesting(text) {
            bail!(
                "cluster spec `{origin}` nests `[`/`{{` collections more than {MAX_FLOW_NESTING} \
                 deep (line {line}); a kOps cluster spec never does: check the file"
            );
        }
        // yaml_serde's message ends with the position (`at line L column C`).
        let doc: ClusterDocument = yaml_serde::from_str(text).map_err(|err| {
            anyhow::anyhow!("cluster spec `{origin}` is not a valid kOps Cluster document: {err}")
        })?;
        if doc.api_version != API_VERSION || doc.kind != KIND {
            bail!(
                "cluster spec `{origin}` has apiVersion `{}` and kind `{}`; expected apiVersion \
                 `{API_VERSION}` and kind `{KIND}` (the completed spec kOps writes to its state store)",
                doc.api_version.escape_debug(),
                doc.kind.escape_debug()
            );
        }
        Ok(doc)
    }

    /// The cluster name from `metadata.name`, if set.
    pub fn name(&self) -> Option<&str> {
        self.metadata.name.as_deref().filter(|n| !n.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_parts_we_use_and_ignores_the_rest() {
        let doc = ClusterDocument::parse(
            "apiVersion: kops.k8s.io/v1alpha2\nkind: Cluster\nmetadata:\n  name: c.example.com\n\
             spec:\n  unknownField: {a: 1}\n  dnsZone: Z1\n  masterPublicName: api.c.example.com\n\
             \x20 etcdClusters:\n  - name: main\n    version: 3.5.13\n    etcdMembers:\n\
             \x20   - name: a\n      instanceGroup: master-a\n  kubeAPIServer:\n    logLevel: 2\n",
            "test",
        )
        .unwrap();
        assert_eq!(doc.name(), Some("c.example.com"));
        assert_eq!(doc.spec.dns_zone.as_deref(), Some("Z1"));
        assert_eq!(doc.spec.etcd_clusters[0].etcd_members[0].name, "a");
        assert_eq!(
            doc.spec.kube_api_server.unwrap()["logLevel"],
            yaml_serde::Value::from(2)
        );
    }

    #[test]
    fn absurd_nesting_is_refused_in_linear_time() {
        let deep = format!(
            "apiVersion: x\nkind: Cluster\nspec:\n  x: {}{}\n",
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        let err = ClusterDocument::parse(&deep, "deep.yaml").unwrap_err();
        assert!(
            err.to_string().contains("more than 64 deep (line 4)"),
            "{err}"
        );
        // Brackets inside quotes and comments do not count; real flow nesting does.
        let quoted = format!(
            "a: \"{}\"\nb: '{}'\n# {}\n",
            "[".repeat(100),
            "{".repeat(100),
            "[".repeat(100)
        );
        assert_eq!(check_nesting(&quoted), Ok(()));
        assert_eq!(check_nesting("a: [[[{b: [1]}]]]\n"), Ok(()));
        assert_eq!(check_nesting(&format!("a: {}", "{".repeat(65))), Err(1));
        assert_eq!(check_nesting("a: 'it''s [' \nb: \"\\\"[\"\n"), Ok(()));
    }

    #[test]
    fn errors_name_the_file_and_position() {
        let err = ClusterDocument::parse("kind: Cluster\nspec: {a: [1,\n  b: }\n", "/x/spec.yaml")
            .unwrap_err();
        let text = format!("{err:#}");
        assert!(text.contains("`/x/spec.yaml`"), "{text}");
        assert!(text.contains("line 3 column"), "{text}");
        let err = ClusterDocument::parse(
            "apiVersion: kops.k8s.io/v1alpha2\nkind: InstanceGroup\n",
            "ig.yaml",
        )
        .unwrap_err();
        assert!(format!("{err}").contains("kind `InstanceGroup`"), "{err}");
        let err = ClusterDocument::parse("apiVersion: v1\nkind: Cluster\n", "x").unwrap_err();
        assert!(format!("{err}").contains("apiVersion `v1`"), "{err}");
    }
}
