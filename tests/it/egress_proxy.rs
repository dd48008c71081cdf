//! Egress proxies as nodeup sets them for clusters with `spec.networking.egressProxy`
//! (`HTTPS_PROXY`, `NO_PROXY` in protokube's environment file): a forward proxy that is the only
//! way to the cloud's APIs and the Kubernetes API (the names the tests give the stand-ins resolve
//! only there, `scripts/forward_proxy.py`); `NO_PROXY`, loopback and the metadata server never
//! through it, as Go's `ProxyFromEnvironment` and Google's libraries behave.

use crate::support;

use std::path::PathBuf;
use std::process::{Command, Stdio};

use support::Guard;

use support::bed::{Bed, NodeKind};
use support::block::TestRoot;
use support::gce::{kops_gce_spec, GceWorld, Kops};
use support::kube::{Certs, KubeApi};
use support::Protokube;

/// The forward proxy: it resolves only the names it is given, and logs every request.
struct ForwardProxy {
    child: Guard,
    port: u16,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl ForwardProxy {
    fn start(names: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("proxy.log");
        let mut command = Command::new(support::moto::python());
        command
            .arg(support::repo().join("scripts/forward_proxy.py"))
            .arg(&log)
            .args(names.iter().map(|name| format!("{name}=127.0.0.1")))
            .stderr(Stdio::inherit());
        let (child, port) = support::spawn_listening(&mut command, "the forward proxy");
        Self {
            child,
            port,
            log,
            _dir: dir,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The requests it was asked to make: `METHOD target`.
    fn requests(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|line| {
                let v: serde_json::Value = serde_json::from_str(line).unwrap();
                format!(
                    "{} {}",
                    v["method"].as_str().unwrap(),
                    v["target"].as_str().unwrap()
                )
            })
            .collect()
    }
}

impl Drop for ForwardProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn google_apis_behind_a_forward_proxy_are_reached_through_it_the_metadata_server_never() {
    let cluster = "g.k8s.local";
    let world = GceWorld::new();
    for (name, zone, ip) in [
        ("master-a", "us-test1-a", "10.0.1.1"),
        ("master-b", "us-test1-b", "10.0.1.2"),
    ] {
        world.add_instance_of(Kops::V1_26, name, zone, ip, cluster, "master");
    }
    world.add_instance_of(
        Kops::V1_26,
        "nodes-a-1",
        "us-test1-a",
        "10.0.2.1",
        cluster,
        "node",
    );
    let spec_dir = tempfile::tempdir().unwrap();
    let spec = kops_gce_spec(spec_dir.path(), cluster, |_| {});
    let proxy = ForwardProxy::start(&["compute.googleapis.com", "dns.googleapis.com"]);
    let node = world.node("nodes-a-1");
    std::fs::create_dir_all(node.root.join("/etc")).unwrap();
    std::fs::write(node.root.join("/etc/hosts"), "127.0.0.1 localhost\n").unwrap();
    let compute = format!(
        "https://compute.googleapis.com:{}/compute/v1/",
        world.api_port
    );
    let sync = |no_proxy: &str, timeout: &str| {
        node.protokube()
            .env("PROTOKUBE_GCE_COMPUTE_ENDPOINT", &compute)
            .env("HTTPS_PROXY", proxy.url())
            .env("NO_PROXY", no_proxy)
            .args(["sync", "--cluster-spec", spec.to_str().unwrap()])
            // Every run asks the cloud (a converged worker would trust what it last saw).
            .args(["--timeout", timeout, "--verify-interval", "0"])
            .run()
    };
    let out = sync("10.0.0.0/8,.internal", "60s");
    assert_eq!(out.code, 0, "{out:#?}");
    let hosts = std::fs::read_to_string(node.root.join("/etc/hosts")).unwrap();
    support::gce::assert_hosts_name_the_two_masters(&hosts);
    let requests = proxy.requests();
    let tunnel = format!("CONNECT compute.googleapis.com:{}", world.api_port);
    assert!(requests.contains(&tunnel), "{requests:?}");
    // The metadata server (and so every token) straight from the node.
    assert!(
        requests.iter().all(|r| r.contains("googleapis.com")),
        "{requests:?}"
    );
    // NO_PROXY names Google's APIs: reached directly, where they cannot be: not ready.
    let asked = proxy.requests().len();
    let out = sync(".googleapis.com", "3s");
    assert_eq!(out.code, 75, "{out:#?}");
    assert_eq!(proxy.requests().len(), asked, "NO_PROXY ignored");
    world.assert_faithful();
}

#[test]
fn the_kubernetes_api_behind_a_forward_proxy_is_reached_through_it() {
    const NODE: &str = "master.hostname.invalid";
    let root = TestRoot::new();
    let certs = Certs::new();
    let api = KubeApi::start(&certs);
    let kubeconfig = certs.write_kubeconfig(&root, api.port, true);
    api.register(NODE, &[("kubernetes.io/hostname", NODE)]);
    // The API at a name only the proxy resolves (an API load balancer's name, say).
    let text = std::fs::read_to_string(&kubeconfig).unwrap();
    std::fs::write(
        &kubeconfig,
        text.replace("127.0.0.1", "api.internal.proxied.k8s.local"),
    )
    .unwrap();
    let proxy = ForwardProxy::start(&["api.internal.proxied.k8s.local"]);
    let out = Protokube::new()
        .env("KUBECONFIG", "/var/lib/kops/kubeconfig")
        .env("HTTPS_PROXY", proxy.url())
        .env("NO_PROXY", "127.0.0.1,localhost")
        .args(["label-node", "--node-name", NODE, "-o", "json"])
        .args(["--timeout", "20s"])
        .arg_path("--root", root.path())
        .run();
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(
        api.labels(NODE)
            .get("node-role.kubernetes.io/control-plane"),
        Some(&String::new())
    );
    let requests = proxy.requests();
    assert!(
        requests.contains(&format!(
            "CONNECT api.internal.proxied.k8s.local:{}",
            api.port
        )),
        "{requests:?}"
    );
}

#[test]
fn the_kubernetes_api_on_loopback_is_never_proxied() {
    const NODE: &str = "master.hostname.invalid";
    let root = TestRoot::new();
    let certs = Certs::new();
    let api = KubeApi::start(&certs);
    certs.write_kubeconfig(&root, api.port, true);
    api.register(NODE, &[("kubernetes.io/hostname", NODE)]);
    let proxy = ForwardProxy::start(&[]);
    // No NO_PROXY at all: the local API server is still reached directly (Go's rule).
    let out = Protokube::new()
        .env("KUBECONFIG", "/var/lib/kops/kubeconfig")
        .env("HTTPS_PROXY", proxy.url())
        .env_remove("NO_PROXY")
        .args(["label-node", "--node-name", NODE, "-o", "json"])
        .args(["--timeout", "20s"])
        .arg_path("--root", root.path())
        .run();
    assert_eq!(out.code, 0, "{out:#?}");
    assert!(proxy.requests().is_empty(), "{:?}", proxy.requests());
}

#[test]
fn aws_behind_a_forward_proxy_is_reached_through_it() {
    let bed = Bed::new(NodeKind::GossipWorker);
    std::fs::create_dir_all(bed.root.join("/etc")).unwrap();
    std::fs::write(bed.root.join("/etc/hosts"), "127.0.0.1 localhost\n").unwrap();
    let proxy = ForwardProxy::start(&["ec2.proxied.test"]);
    let port = bed
        .moto()
        .endpoint()
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches('/')
        .to_owned();
    // The endpoint at a name only the proxy resolves; the metadata service (on loopback here,
    // at 169.254.169.254 on EC2) straight from the node.
    let out = bed
        .command("publish-dns", &bed.spec(), &["--verify-interval", "0"])
        .env(
            "AWS_ENDPOINT_URL",
            format!("http://ec2.proxied.test:{port}"),
        )
        .env("HTTP_PROXY", proxy.url())
        .env("HTTPS_PROXY", proxy.url())
        .run();
    assert_eq!(out.code, 0, "{out:#?}");
    let hosts = std::fs::read_to_string(bed.root.join("/etc/hosts")).unwrap();
    assert!(hosts.contains("api.internal.minimal.k8s.local"), "{hosts}");
    let requests = proxy.requests();
    assert!(
        requests
            .iter()
            .any(|r| r.contains(&format!("ec2.proxied.test:{port}"))),
        "{requests:?}"
    );
    assert!(
        requests.iter().all(|r| r.contains("ec2.proxied.test")),
        "{requests:?}"
    );
}
