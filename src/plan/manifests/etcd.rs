//! The etcd member pod (kOps' legacy protokube layout): names, ports, environment order, TLS
//! directories, computed from the mounted volume's membership and the spec. Pure.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{anyhow, bail, Result};
use serde::Serialize;

use crate::etcd::{EtcdKey, EtcdMembership};
use crate::plan::manifests::flags::parse_go_duration;
use crate::plan::manifests::upgrade::{EtcdClientTls, EtcdEndpoint};
use crate::spec::EtcdClusterSpec;

/// The legacy protokube etcd flags (`--etcd-image`, `--tls-*`, …); they override the spec.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EtcdOptions {
    pub(crate) etcd_image: Option<String>,
    /// Milliseconds.
    pub(crate) etcd_election_timeout: Option<u32>,
    /// Milliseconds.
    pub(crate) etcd_heartbeat_interval: Option<u32>,
    pub(crate) tls_ca: Option<String>,
    pub(crate) tls_cert: Option<String>,
    pub(crate) tls_key: Option<String>,
    pub(crate) peer_ca: Option<String>,
    pub(crate) peer_cert: Option<String>,
    pub(crate) peer_key: Option<String>,
    pub(crate) tls_auth: bool,
}

/// One etcd peer: its name and the DNS name others reach it at.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EtcdNode {
    pub name: String,
    pub internal_name: String,
}

/// Certificates and keys (paths inside the pod, which are also host paths).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EtcdTls {
    pub ca: Option<String>,
    pub cert: Option<String>,
    pub key: Option<String>,
    pub peer_ca: Option<String>,
    pub peer_cert: Option<String>,
    pub peer_key: Option<String>,
    pub client_auth: bool,
}

/// Everything the etcd template needs for one member.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EtcdPodParams {
    pub pod_name: String,
    /// `etcd`, `etcd-events`: names the manifest, the log file, the token.
    pub cluster_name: String,
    pub data_dir_name: String,
    pub client_port: u16,
    pub peer_port: u16,
    /// Where etcd listens: `0.0.0.0`, or `[::]` on an IPv6 cluster.
    pub listen_host: String,
    pub cpu_request: String,
    pub memory_request: Option<String>,
    pub image: String,
    /// Host path of the log file.
    pub log_file: String,
    /// Host path the volume is mounted at.
    pub volume_mount_path: String,
    pub token: String,
    /// Milliseconds.
    pub election_timeout: Option<String>,
    /// Milliseconds.
    pub heartbeat_interval: Option<String>,
    pub me: EtcdNode,
    pub nodes: Vec<EtcdNode>,
    pub tls: EtcdTls,
}

#[derive(Serialize)]
struct EnvVar {
    name: &'static str,
    value: String,
}

#[derive(Serialize)]
struct TlsDir {
    path: String,
    name: String,
}

impl EtcdPodParams {
    /// `https` when the server has both a certificate and a key, else `http`.
    pub(crate) fn scheme(&self) -> &'static str {
        if self.tls.cert.is_some() && self.tls.key.is_some() {
            "https"
        } else {
            "http"
        }
    }

    /// Where this pod, once running, answers on this node.
    pub(crate) fn client_endpoint(&self, ipv6: bool) -> EtcdEndpoint {
        let tls = (self.scheme() == "https").then(|| EtcdClientTls {
            ca: self.tls.ca.clone(),
            identity: self
                .tls
                .client_auth
                .then(|| self.tls.cert.clone().zip(self.tls.key.clone()))
                .flatten(),
        });
        EtcdEndpoint {
            port: self.client_port,
            ipv6,
            tls,
        }
    }

    /// The environment, in kOps' order.
    fn env(&self) -> Vec<EnvVar> {
        let s = self.scheme();
        let me = &self.me.internal_name;
        let mut env = vec![
            EnvVar {
                name: "ETCD_NAME",
                value: self.me.name.clone(),
            },
            EnvVar {
                name: "ETCD_DATA_DIR",
                value: format!("/var/etcd/{}", self.data_dir_name),
            },
            EnvVar {
                name: "ETCD_LISTEN_PEER_URLS",
                value: format!("{s}://{}:{}", self.listen_host, self.peer_port),
            },
            EnvVar {
                name: "ETCD_LISTEN_CLIENT_URLS",
                value: format!("{s}://{}:{}", self.listen_host, self.client_port),
            },
            EnvVar {
                name: "ETCD_ADVERTISE_CLIENT_URLS",
                value: format!("{s}://{me}:{}", self.client_port),
            },
            EnvVar {
                name: "ETCD_INITIAL_ADVERTISE_PEER_URLS",
                value: format!("{s}://{me}:{}", self.peer_port),
            },
            EnvVar {
                name: "ETCD_INITIAL_CLUSTER_STATE",
                value: "new".into(),
            },
            EnvVar {
                name: "ETCD_INITIAL_CLUSTER_TOKEN",
                value: self.token.clone(),
            },
        ];
        let optional = [
            ("ETCD_ELECTION_TIMEOUT", &self.election_timeout),
            ("ETCD_HEARTBEAT_INTERVAL", &self.heartbeat_interval),
            ("ETCD_PEER_TRUSTED_CA_FILE", &self.tls.peer_ca),
            ("ETCD_PEER_CERT_FILE", &self.tls.peer_cert),
            ("ETCD_PEER_KEY_FILE", &self.tls.peer_key),
            ("ETCD_TRUSTED_CA_FILE", &self.tls.ca),
            ("ETCD_CERT_FILE", &self.tls.cert),
            ("ETCD_KEY_FILE", &self.tls.key),
        ];
        for (name, value) in optional {
            if let Some(value) = value {
                env.push(EnvVar {
                    name,
                    value: value.clone(),
                });
            }
        }
        if self.tls.client_auth {
            for name in ["ETCD_CLIENT_CERT_AUTH", "ETCD_PEER_CLIENT_CERT_AUTH"] {
                env.push(EnvVar {
                    name,
                    value: "true".into(),
                });
            }
        }
        env.push(EnvVar {
            name: "ETCD_INITIAL_CLUSTER",
            value: self.initial_cluster(),
        });
        env
    }

    /// `name=scheme://dns-name:peer-port,…` in member order.
    pub(crate) fn initial_cluster(&self) -> String {
        self.nodes
            .iter()
            .map(|n| {
                format!(
                    "{}={}://{}:{}",
                    n.name,
                    self.scheme(),
                    n.internal_name,
                    self.peer_port
                )
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    /// One read-only mount per distinct certificate directory, sorted (kOps forgot the peer
    /// certificate's directory and emitted them in random order).
    fn tls_dirs(&self) -> Vec<TlsDir> {
        let t = &self.tls;
        let dirs: BTreeSet<String> = [
            &t.ca,
            &t.cert,
            &t.key,
            &t.peer_ca,
            &t.peer_cert,
            &t.peer_key,
        ]
        .into_iter()
        .flatten()
        .filter_map(|file| {
            std::path::Path::new(file)
                .parent()
                .map(|p| p.display().to_string())
        })
        .filter(|dir| !dir.is_empty() && dir != "/")
        .collect();
        dirs.into_iter()
            .map(|path| TlsDir {
                name: volume_name_for(&path),
                path,
            })
            .collect()
    }

    /// The template context.
    pub fn context(&self) -> tera::Context {
        let mut ctx = tera::Context::new();
        ctx.insert("pod_name", &self.pod_name);
        ctx.insert("image", &self.image);
        ctx.insert("env", &self.env());
        ctx.insert("tls", &(self.scheme() == "https"));
        ctx.insert("client_port", &self.client_port);
        ctx.insert("peer_port", &self.peer_port);
        ctx.insert("cpu_request", &self.cpu_request);
        ctx.insert("memory_request", &self.memory_request);
        ctx.insert("cpu_limit", &None::<String>);
        ctx.insert("memory_limit", &None::<String>);
        ctx.insert("data_dir", &format!("/var/etcd/{}", self.data_dir_name));
        ctx.insert(
            "data_host_path",
            &format!(
                "{}/var/etcd/{}",
                self.volume_mount_path.trim_end_matches('/'),
                self.data_dir_name
            ),
        );
        ctx.insert("log_file", &self.log_file);
        ctx.insert("tls_dirs", &self.tls_dirs());
        ctx
    }
}

/// A volume name from a path: the path without `/`, made a DNS-1123 label.
fn volume_name_for(path: &str) -> String {
    let name: String = path
        .chars()
        .filter(|c| *c != '/')
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let name = name.trim_matches('-');
    let name = &name[..name.len().min(63)];
    name.trim_end_matches('-').to_owned()
}

/// Fixed facts of an etcd cluster key (kOps v1.10; other keys named the same way).
struct KeyFacts {
    pod_name: String,
    cluster_name: String,
    data_dir_name: String,
    cpu_request: &'static str,
}

fn key_facts(key: &str) -> KeyFacts {
    let key = EtcdKey(key);
    KeyFacts {
        pod_name: key.pod_name(),
        cluster_name: key.cluster_name(),
        data_dir_name: key.data_dir_name(),
        cpu_request: key.cpu_request(),
    }
}

/// Peer and client ports per etcd cluster key, kOps' well-known ports: `main` 2380/4001,
/// `events` 2381/4002, `cilium` 2382/4003, `leases` 2383/4004; any other key the spec's `peerPort`/`clientPort`, else the next pair no
/// other cluster uses (from 2382/4003), in the order of `spec.etcdClusters`, then keys found only
/// on volumes (`extra_keys`) by name. Every port is used once.
pub(crate) fn etcd_ports<'a>(
    clusters: &'a [EtcdClusterSpec],
    extra_keys: impl IntoIterator<Item = &'a str>,
) -> Result<BTreeMap<String, (u16, u16)>> {
    let mut keys: Vec<&str> = clusters.iter().map(|c| c.name.as_str()).collect();
    let mut extra: Vec<&str> = extra_keys
        .into_iter()
        .filter(|k| !keys.contains(k))
        .collect();
    extra.sort_unstable();
    extra.dedup();
    keys.extend(extra);
    // Fixed and spec-given pairs first, so that the next free pairs skip them.
    let mut ports: BTreeMap<String, (u16, u16)> = BTreeMap::new();
    let mut owner: BTreeMap<u16, &str> = BTreeMap::new();
    for key in &keys {
        let spec = clusters.iter().find(|c| c.name == *key);
        let pair = match (
            EtcdKey(key).well_known(),
            spec.map(|c| (c.peer_port, c.client_port)),
        ) {
            (Some(known), _) => (known.peer_port, known.client_port),
            (_, Some((Some(peer), Some(client)))) => (peer, client),
            (_, Some((Some(_), None) | (None, Some(_)))) => bail!(
                "spec.etcdClusters `{key}`: give both `peerPort` and `clientPort`, or neither"
            ),
            _ => continue,
        };
        for port in [pair.0, pair.1] {
            if let Some(other) = owner.insert(port, key) {
                bail!(
                    "etcd clusters `{other}` and `{key}` would both use port {port}; give them \
                     ports of their own (`peerPort`, `clientPort`) in spec.etcdClusters"
                );
            }
        }
        ports.insert(key.to_string(), pair);
    }
    let (mut peer, mut client) = (2382u16, 4003u16);
    for key in &keys {
        if ports.contains_key(*key) {
            continue;
        }
        let exhausted = || anyhow!("no free ports left for etcd cluster `{key}`");
        while owner.contains_key(&peer) {
            peer = peer.checked_add(1).ok_or_else(exhausted)?;
        }
        owner.insert(peer, key);
        while owner.contains_key(&client) {
            client = client.checked_add(1).ok_or_else(exhausted)?;
        }
        owner.insert(client, key);
        ports.insert(key.to_string(), (peer, client));
    }
    Ok(ports)
}

/// Every local etcd endpoint kube-apiserver is given (`spec.kubeAPIServer.etcdServers` and
/// `etcdServersOverrides`, as `--etcd-servers` and `--etcd-servers-overrides`) is a client
/// port of one of the etcd clusters (`ports`, from [`etcd_ports`]); an endpoint on another
/// host is an external etcd, not checked. An error names the endpoint and the ports served.
pub(crate) fn check_api_server_etcd_ports(
    api_server: Option<&yaml_serde::Mapping>,
    ports: &BTreeMap<String, (u16, u16)>,
) -> Result<()> {
    let Some(section) = api_server else {
        return Ok(());
    };
    let strings = |key: &str| -> Vec<String> {
        match section.get(key) {
            Some(yaml_serde::Value::Sequence(items)) => items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            Some(yaml_serde::Value::String(one)) => vec![one.clone()],
            _ => Vec::new(),
        }
    };
    let mut endpoints: Vec<(&str, String)> = Vec::new();
    for server in strings("etcdServers") {
        endpoints.extend(
            server
                .split(',')
                .map(|s| ("etcdServers", s.trim().to_owned())),
        );
    }
    for item in strings("etcdServersOverrides") {
        // `/group/resource#url;url`, several joined by `,`.
        for one in item.split(',') {
            if let Some((_, urls)) = one.split_once('#') {
                endpoints.extend(
                    urls.split(';')
                        .map(|u| ("etcdServersOverrides", u.trim().to_owned())),
                );
            }
        }
    }
    let served: Vec<u16> = ports.values().map(|(_, client)| *client).collect();
    for (field, url) in endpoints.iter().filter(|(_, u)| !u.is_empty()) {
        let Some((host, port)) = local_endpoint(url) else {
            continue;
        };
        let port = port.ok_or_else(|| {
            anyhow!(
                "spec.kubeAPIServer.{field}: `{url}` names no port; give the etcd client port \
                 (one of {})",
                list_ports(ports)
            )
        })?;
        if !served.contains(&port) {
            bail!(
                "spec.kubeAPIServer.{field}: `{url}` sends kube-apiserver to {host} port {port}, \
                 where no etcd pod listens (etcd client ports: {}); fix the endpoint or the etcd \
                 cluster's ports in spec.etcdClusters",
                list_ports(ports)
            );
        }
    }
    Ok(())
}

/// `key client-port` pairs, for messages.
fn list_ports(ports: &BTreeMap<String, (u16, u16)>) -> String {
    ports
        .iter()
        .map(|(key, (_, client))| format!("{key} {client}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The host and port of an endpoint URL on this node (`127.0.0.1`, `localhost`, `[::1]`);
/// `None` for another host.
fn local_endpoint(url: &str) -> Option<(String, Option<u16>)> {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => {
            let (host, after) = v6.split_once(']')?;
            (host.to_owned(), after.strip_prefix(':'))
        }
        None => match authority.rsplit_once(':') {
            Some((host, port)) => (host.to_owned(), Some(port)),
            None => (authority.to_owned(), None),
        },
    };
    let local = matches!(host.as_str(), "127.0.0.1" | "localhost" | "::1");
    if !local {
        return None;
    }
    // A port that is not a number names no etcd either: reported as port 0.
    Some((host, port.map(|p| p.parse::<u16>().unwrap_or(0))))
}

/// The image of etcd cluster `key`: `--etcd-image`, else its spec entry's `image`, else
/// `registry.k8s.io/etcd:<version>-0`. Neither is an error naming the field to set.
pub(crate) fn etcd_image(
    options: &EtcdOptions,
    clusters: &[EtcdClusterSpec],
    key: &str,
) -> Result<String> {
    if let Some(image) = &options.etcd_image {
        return Ok(image.clone());
    }
    let Some((index, spec)) = clusters.iter().enumerate().find(|(_, c)| c.name == key) else {
        bail!(
            "etcd cluster `{key}` is on a volume of this node but not in spec.etcdClusters, so \
             nothing says which etcd to run: add it to the spec with a `version`, or pass \
             --etcd-image"
        );
    };
    if let Some(image) = spec.image.clone().filter(|i| !i.is_empty()) {
        return Ok(image);
    }
    let version = spec
        .version
        .as_deref()
        .filter(|v| !v.is_empty())
        .ok_or_else(|| {
            anyhow!(
                "`spec.etcdClusters[{index}].version` (etcd cluster `{key}`) is not set, nor \
                 `.image`: set one of them (the completed spec kOps writes has the version), or \
                 pass --etcd-image"
            )
        })?;
    let version = version.trim_start_matches('v');
    Ok(if version.contains('-') {
        format!("registry.k8s.io/etcd:{version}")
    } else {
        format!("registry.k8s.io/etcd:{version}-0")
    })
}

/// A duration from the spec (`1s`, `100ms`) in whole milliseconds, or a flag's milliseconds.
fn milliseconds(flag: Option<u32>, spec: Option<&String>, field: &str) -> Result<Option<String>> {
    if let Some(ms) = flag {
        return Ok(Some(ms.to_string()));
    }
    let Some(text) = spec else {
        return Ok(None);
    };
    let nanos = parse_go_duration(text).map_err(|e| {
        anyhow!(
            "spec.etcdClusters[].{field}: `{}` is not a duration: {e}",
            text.escape_debug()
        )
    })?;
    Ok(Some((nanos / 1_000_000).to_string()))
}

/// Where a member's pod comes from beyond its membership: the spec's cluster entry, the
/// legacy flags, the ports, the internal DNS suffix (starting with a dot) and whether the
/// cluster runs on IPv6.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MemberInputs<'a> {
    pub(crate) spec: Option<&'a EtcdClusterSpec>,
    pub(crate) options: &'a EtcdOptions,
    pub(crate) image: &'a str,
    pub(crate) ports: (u16, u16),
    pub(crate) internal_suffix: &'a str,
    pub(crate) ipv6: bool,
}

/// The pod parameters for `membership`, held by a volume mounted at `mount_host_path`.
pub(crate) fn pod_params(
    membership: &EtcdMembership,
    mount_host_path: &str,
    inputs: &MemberInputs<'_>,
) -> Result<EtcdPodParams> {
    let MemberInputs {
        spec,
        options,
        image,
        ports: (peer_port, client_port),
        internal_suffix,
        ipv6,
    } = *inputs;
    // The state file is on disk and could have been edited: names go into DNS names, pod
    // names and paths, so they are checked again here.
    for name in std::iter::once(&membership.cluster)
        .chain(std::iter::once(&membership.member))
        .chain(&membership.members)
    {
        if !crate::names::is_dns1123_label(name) {
            bail!(
                "etcd name `{}` is not a DNS-1123 label; check the volume's k8s.io/etcd tag",
                name.escape_debug()
            );
        }
    }
    if !membership.members.contains(&membership.member) {
        bail!(
            "etcd member `{}` is not among its members",
            membership.member
        );
    }
    let facts = key_facts(&membership.cluster);
    let node = |member: &str| {
        let name = EtcdKey(&membership.cluster).member_name(member);
        EtcdNode {
            internal_name: format!("{name}{internal_suffix}"),
            name,
        }
    };
    Ok(EtcdPodParams {
        image: image.to_owned(),
        cpu_request: spec
            .and_then(|s| s.cpu_request.clone())
            .unwrap_or_else(|| facts.cpu_request.to_owned()),
        memory_request: spec.and_then(|s| s.memory_request.clone()),
        log_file: format!("/var/log/{}.log", facts.cluster_name),
        volume_mount_path: mount_host_path.to_owned(),
        token: format!("etcd-cluster-token-{}", facts.cluster_name),
        election_timeout: milliseconds(
            options.etcd_election_timeout,
            spec.and_then(|s| s.leader_election_timeout.as_ref()),
            "leaderElectionTimeout",
        )?,
        heartbeat_interval: milliseconds(
            options.etcd_heartbeat_interval,
            spec.and_then(|s| s.heartbeat_interval.as_ref()),
            "heartbeatInterval",
        )?,
        me: node(&membership.member),
        nodes: membership.members.iter().map(|m| node(m)).collect(),
        tls: EtcdTls {
            ca: options.tls_ca.clone(),
            cert: options.tls_cert.clone(),
            key: options.tls_key.clone(),
            peer_ca: options.peer_ca.clone(),
            peer_cert: options.peer_cert.clone(),
            peer_key: options.peer_key.clone(),
            client_auth: options.tls_auth,
        },
        pod_name: facts.pod_name,
        cluster_name: facts.cluster_name,
        data_dir_name: facts.data_dir_name,
        peer_port,
        client_port,
        listen_host: if ipv6 { "[::]" } else { "0.0.0.0" }.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn membership(cluster: &str, member: &str, members: &[&str]) -> EtcdMembership {
        EtcdMembership::new(cluster, member, members)
    }

    fn spec(name: &str, version: &str) -> EtcdClusterSpec {
        EtcdClusterSpec {
            name: name.into(),
            version: Some(version.into()),
            ..Default::default()
        }
    }

    /// The pod parameters as rendering makes them, from the spec's clusters.
    fn params(
        m: &EtcdMembership,
        clusters: &[EtcdClusterSpec],
        options: &EtcdOptions,
        ipv6: bool,
    ) -> Result<EtcdPodParams> {
        let ports = etcd_ports(clusters, [m.cluster.as_str()])?;
        let image = etcd_image(options, clusters, &m.cluster)?;
        pod_params(
            m,
            "/mnt/master-vol-1",
            &MemberInputs {
                spec: clusters.iter().find(|c| c.name == m.cluster),
                options,
                image: &image,
                ports: ports[&m.cluster],
                internal_suffix: ".internal.ha.example.com",
                ipv6,
            },
        )
    }

    #[test]
    fn kops_ha_tags_give_names_initial_cluster_and_dns_names() {
        let clusters = [spec("main", "3.5.13"), spec("events", "3.5.13")];
        let options = EtcdOptions::default();
        let params = params(
            &membership("main", "b", &["a", "b", "c"]),
            &clusters,
            &options,
            false,
        )
        .unwrap();
        assert_eq!(params.pod_name, "etcd-server");
        assert_eq!(params.me.name, "etcd-b");
        assert_eq!(params.me.internal_name, "etcd-b.internal.ha.example.com");
        assert_eq!(
            params.initial_cluster(),
            "etcd-a=http://etcd-a.internal.ha.example.com:2380,\
             etcd-b=http://etcd-b.internal.ha.example.com:2380,\
             etcd-c=http://etcd-c.internal.ha.example.com:2380"
        );
        assert_eq!(params.image, "registry.k8s.io/etcd:3.5.13-0");
        assert_eq!(params.token, "etcd-cluster-token-etcd");
        assert_eq!(params.listen_host, "0.0.0.0");

        let with_image = EtcdOptions {
            etcd_image: Some("img".into()),
            ..Default::default()
        };
        let events = self::params(
            &membership("events", "a", &["a", "b", "c"]),
            &[],
            &with_image,
            false,
        )
        .unwrap();
        assert_eq!(events.pod_name, "etcd-server-events");
        assert_eq!(events.image, "img");
        assert_eq!(
            events.me.internal_name,
            "etcd-events-a.internal.ha.example.com"
        );
        assert_eq!((events.peer_port, events.client_port), (2381, 4002));
        assert_eq!(events.log_file, "/var/log/etcd-events.log");
        assert_eq!(events.cpu_request, "100m");
    }

    #[test]
    fn an_ipv6_cluster_listens_on_every_ipv6_address() {
        let params = params(
            &membership("main", "a", &["a"]),
            &[spec("main", "3.5.13")],
            &EtcdOptions::default(),
            true,
        )
        .unwrap();
        let ctx = params.context().into_json();
        let env = ctx["env"].as_array().unwrap();
        let value = |name: &str| {
            env.iter()
                .find(|e| e["name"] == name)
                .map(|e| e["value"].as_str().unwrap().to_owned())
                .unwrap()
        };
        assert_eq!(value("ETCD_LISTEN_PEER_URLS"), "http://[::]:2380");
        assert_eq!(value("ETCD_LISTEN_CLIENT_URLS"), "http://[::]:4001");
    }

    #[test]
    fn kops_well_known_ports_and_the_api_server_s_endpoints() {
        let spec = |names: &[&str]| -> Vec<EtcdClusterSpec> {
            names
                .iter()
                .map(|n| EtcdClusterSpec {
                    name: (*n).into(),
                    ..Default::default()
                })
                .collect()
        };
        let ports = etcd_ports(&spec(&["main", "events", "leases"]), []).unwrap();
        assert_eq!(ports["main"], (2380, 4001));
        assert_eq!(ports["events"], (2381, 4002));
        assert_eq!(ports["leases"], (2383, 4004));
        let with_cilium = etcd_ports(&spec(&["main", "events", "leases", "cilium"]), []).unwrap();
        assert_eq!(with_cilium["cilium"], (2382, 4003));
        // Another key takes the next free pair, around the fixed ones.
        let other = etcd_ports(&spec(&["main", "events", "leases", "cilium", "x"]), []).unwrap();
        assert_eq!(other["x"], (2384, 4005));

        let api = |yaml: &str| -> yaml_serde::Mapping { yaml_serde::from_str(yaml).unwrap() };
        let kops_136 = api(
            "etcdServers: [https://127.0.0.1:4001]\netcdServersOverrides:\n\
             - /events#https://127.0.0.1:4002\n\
             - /coordination.k8s.io/leases#https://127.0.0.1:4004\n",
        );
        check_api_server_etcd_ports(Some(&kops_136), &ports).unwrap();
        check_api_server_etcd_ports(None, &ports).unwrap();
        // An external etcd is not this node's to serve.
        let external = api("etcdServers: ['https://etcd.example.com:2379', 'http://[::1]:4001']\n");
        check_api_server_etcd_ports(Some(&external), &ports).unwrap();
        let err = check_api_server_etcd_ports(
            Some(&kops_136),
            &etcd_ports(&spec(&["main", "events"]), []).unwrap(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("etcdServersOverrides") && err.contains("4004"),
            "{err}"
        );
        assert!(err.contains("events 4002, main 4001"), "{err}");
        for bad in [
            "etcdServers: ['https://127.0.0.1:4009']\n",
            "etcdServersOverrides: ['/events#https://localhost:4001;https://127.0.0.1:4010']\n",
            "etcdServers: ['https://127.0.0.1']\n",
        ] {
            assert!(
                check_api_server_etcd_ports(Some(&api(bad)), &ports).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn clusters_beyond_main_and_events_get_ports_of_their_own() {
        let clusters = [
            spec("main", "3.5.13"),
            spec("events", "3.5.13"),
            spec("cilium", "3.5.13"),
        ];
        let ports = etcd_ports(&clusters, []).unwrap();
        assert_eq!(ports["cilium"], (2382, 4003));
        let cilium = params(
            &membership("cilium", "a", &["a"]),
            &clusters,
            &EtcdOptions::default(),
            false,
        )
        .unwrap();
        assert_eq!(cilium.pod_name, "etcd-server-cilium");
        assert_eq!(cilium.cluster_name, "etcd-cilium");
        assert_eq!(cilium.data_dir_name, "data-cilium");
        assert_eq!(
            cilium.me.internal_name,
            "etcd-cilium-a.internal.ha.example.com"
        );
        assert_eq!(cilium.token, "etcd-cluster-token-etcd-cilium");
        // Other keys: the next free pair in spec order, then keys only volumes know, by name;
        // a spec's own ports are kept and skipped.
        let mut given = spec("given", "3.5.13");
        (given.peer_port, given.client_port) = (Some(2383), Some(4004));
        let clusters = [
            spec("main", "3.5.13"),
            spec("zeta", "3.5.13"),
            given,
            spec("cilium", "3.5.13"),
            spec("alpha", "3.5.13"),
        ];
        let ports = etcd_ports(&clusters, ["main", "onvolume"]).unwrap();
        assert_eq!(ports["cilium"], (2382, 4003));
        assert_eq!(ports["given"], (2383, 4004));
        assert_eq!(ports["zeta"], (2384, 4005));
        assert_eq!(ports["alpha"], (2385, 4006));
        assert_eq!(ports["onvolume"], (2386, 4007));
        let ports = etcd_ports(&[spec("main", "1"), spec("foo", "1")], []).unwrap();
        assert_eq!(ports["foo"], (2382, 4003));
        // Clashes are errors naming both clusters.
        let mut clash = spec("clash", "1");
        (clash.peer_port, clash.client_port) = (Some(2380), Some(5000));
        let err = etcd_ports(&[spec("main", "1"), clash], []).unwrap_err();
        assert!(err.to_string().contains("`main` and `clash`"), "{err}");
        let mut half = spec("half", "1");
        half.peer_port = Some(3000);
        assert!(etcd_ports(&[half], []).is_err());
    }

    #[test]
    fn no_version_and_no_image_is_an_error_naming_the_field() {
        let mut no_version = spec("events", "");
        no_version.version = None;
        let clusters = [spec("main", "3.5.13"), no_version];
        let err = etcd_image(&EtcdOptions::default(), &clusters, "events").unwrap_err();
        assert!(
            err.to_string().contains("`spec.etcdClusters[1].version`")
                && err.to_string().contains("--etcd-image"),
            "{err}"
        );
        let err = etcd_image(&EtcdOptions::default(), &clusters, "cilium").unwrap_err();
        assert!(
            err.to_string().contains("not in spec.etcdClusters"),
            "{err}"
        );
    }

    #[test]
    fn single_master_tag_value() {
        let params = params(
            &membership("main", "us-test-1a", &["us-test-1a"]),
            &[spec("main", "3.5.13")],
            &EtcdOptions::default(),
            false,
        )
        .unwrap();
        assert_eq!(
            params.initial_cluster(),
            "etcd-us-test-1a=http://etcd-us-test-1a.internal.ha.example.com:2380"
        );
    }

    #[test]
    fn flags_override_the_spec_and_durations_become_milliseconds() {
        let mut s = spec("main", "3.5.13");
        s.image = Some("spec-image".into());
        s.leader_election_timeout = Some("1s".into());
        s.heartbeat_interval = Some("100ms".into());
        let params = params(
            &membership("main", "a", &["a"]),
            &[s],
            &EtcdOptions {
                etcd_election_timeout: Some(2500),
                ..Default::default()
            },
            false,
        )
        .unwrap();
        assert_eq!(params.image, "spec-image");
        assert_eq!(params.election_timeout.as_deref(), Some("2500"));
        assert_eq!(params.heartbeat_interval.as_deref(), Some("100"));
    }

    #[test]
    fn hostile_names_from_an_edited_state_file_are_refused() {
        for m in [
            membership("main", "a\nb", &["a\nb"]),
            membership("main", "a", &["a", "../x"]),
            membership("main", "z", &["a"]),
        ] {
            assert!(
                params(&m, &[spec("main", "1")], &EtcdOptions::default(), false).is_err(),
                "{m:?}"
            );
        }
    }

    #[test]
    fn volume_names_from_paths() {
        assert_eq!(volume_name_for("/srv/kubernetes"), "srvkubernetes");
        assert_eq!(
            volume_name_for("/etc/Kubernetes/pki_x"),
            "etckubernetespki-x"
        );
    }
}
