//! The Kubernetes side of a kOps control-plane node for the tests: a stand-in API server
//! (`scripts/kube_api_standin.py`: HTTPS, its own CA, client-certificate auth — no package ships
//! a kube-apiserver here), the kubeconfig nodeup writes for protokube (`/var/lib/kops/kubeconfig`,
//! kOps' shape: the local server, the CA and a `kops` client certificate of `system:masters`,
//! inline), and a recording stand-in for kOps' `channels` tool at `/opt/kops/bin/channels`.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::Guard;

use super::block::TestRoot;
use super::moto::python;

/// The certificates of a test cluster: CA, the API server's (127.0.0.1), a client's.
pub(crate) struct Certs {
    pub dir: tempfile::TempDir,
}

fn openssl(args: &[&str]) {
    super::run("openssl", args);
}

/// The names the servers' certificate holds: 127.0.0.1, where the tests reach them, and the
/// names the egress proxy tests give them (reachable only through the proxy).
const SERVER_NAMES: &str = "IP:127.0.0.1,DNS:compute.googleapis.com,DNS:dns.googleapis.com,\
                            DNS:api.internal.proxied.k8s.local";

/// A new P-256 key, unencrypted, for `openssl req`.
const EC_KEY: [&str; 5] = [
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
];

impl Certs {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let p = |name: &str| dir.path().join(name).display().to_string();
        let mut ca = vec!["req", "-x509"];
        ca.extend(EC_KEY);
        let (ca_key, ca_crt) = (p("ca.key"), p("ca.crt"));
        ca.extend([
            "-keyout",
            &ca_key,
            "-out",
            &ca_crt,
            "-subj",
            "/CN=kubernetes-ca",
            "-days",
            "2",
        ]);
        openssl(&ca);
        let certs = Self { dir };
        for (name, subject, usage) in [
            ("server", "/CN=kubernetes-master", "serverAuth"),
            ("client", "/O=system:masters/CN=kops", "clientAuth"),
        ] {
            certs.issue(
                name,
                subject,
                &format!(
                    "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n\
                     extendedKeyUsage={usage}\nsubjectAltName={SERVER_NAMES}\n"
                ),
            );
        }
        certs
    }

    /// Issues `<name>.crt` and `<name>.key` from this CA, with these X.509 v3 `extensions`
    /// (none: an X.509 version 1 certificate, as `openssl x509 -req` makes without them).
    pub(crate) fn issue(&self, name: &str, subject: &str, extensions: &str) {
        let p = |file: &str| self.dir.path().join(file).display().to_string();
        let (key, csr, crt, ext) = (
            p(&format!("{name}.key")),
            p(&format!("{name}.csr")),
            p(&format!("{name}.crt")),
            p(&format!("{name}.ext")),
        );
        let mut req = vec!["req"];
        req.extend(EC_KEY);
        req.extend(["-keyout", &key, "-out", &csr, "-subj", subject]);
        openssl(&req);
        std::fs::write(&ext, extensions).unwrap();
        let (ca_crt, ca_key) = (p("ca.crt"), p("ca.key"));
        let mut sign = vec![
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            &ca_crt,
            "-CAkey",
            &ca_key,
            "-CAcreateserial",
            "-out",
            &crt,
            "-days",
            "2",
        ];
        if !extensions.is_empty() {
            sign.extend(["-extfile", &ext]);
        }
        openssl(&sign);
    }

    fn base64(&self, name: &str) -> String {
        let out = Command::new("base64")
            .args(["-w0"])
            .arg(self.dir.path().join(name))
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    }

    /// Writes the kubeconfig nodeup writes for protokube, pointing at `port` on 127.0.0.1, at
    /// `<root>/var/lib/kops/kubeconfig`; with `client` false, without a client certificate.
    pub(crate) fn write_kubeconfig(&self, root: &TestRoot, port: u16, client: bool) -> PathBuf {
        let user = if client {
            format!(
                "    client-certificate-data: {}\n    client-key-data: {}\n",
                self.base64("client.crt"),
                self.base64("client.key")
            )
        } else {
            "    username: anonymous\n".to_owned()
        };
        let text = format!(
            "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: {}\n    \
             server: https://127.0.0.1:{port}\n  name: local\ncontexts:\n- context:\n    \
             cluster: local\n    user: kops\n  name: service-account-context\n\
             current-context: service-account-context\nkind: Config\nusers:\n- name: kops\n  \
             user:\n{user}",
            self.base64("ca.crt")
        );
        let path = root.join("/var/lib/kops/kubeconfig");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }
}

/// The stand-in API server; killed when dropped.
/// How an API server wakes, in seconds from its start: its port refuses connections for
/// `refused`, it answers 503 until `unavailable`, and `kube-system` does not exist until
/// `no_kube_system`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Waking {
    pub refused: f64,
    pub unavailable: f64,
    pub no_kube_system: f64,
}

pub(crate) struct KubeApi {
    child: Guard,
    pub port: u16,
    pub nodes: PathBuf,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl KubeApi {
    /// Starts the server with the given certificates and no node registered.
    pub(crate) fn start(certs: &Certs) -> Self {
        Self::start_after(certs, 0.0)
    }

    /// Starts the server; it answers 503 (coming up) for its first `seconds`.
    pub(crate) fn start_after(certs: &Certs, seconds: f64) -> Self {
        Self::start_waking(
            certs,
            Waking {
                unavailable: seconds,
                ..Waking::default()
            },
        )
    }

    /// Starts the server waking in stages, as kube-apiserver does on a new control-plane node.
    pub(crate) fn start_waking(certs: &Certs, waking: Waking) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let (nodes, log) = (
            dir.path().join("nodes.json"),
            dir.path().join("requests.log"),
        );
        std::fs::write(&nodes, "{}").unwrap();
        let script = crate::support::repo().join("scripts/kube_api_standin.py");
        let mut command = Command::new(python());
        command
            .arg(script)
            .arg(certs.dir.path())
            .arg(&nodes)
            .arg(&log)
            .arg(waking.unavailable.to_string())
            .arg(waking.no_kube_system.to_string())
            .arg(waking.refused.to_string())
            .stderr(Stdio::null());
        let (child, port) = super::spawn_listening(&mut command, "the API stand-in");
        Self {
            child,
            port,
            nodes,
            log,
            _dir: dir,
        }
    }

    /// The next `count` writes (POST, PATCH) are answered 503: an API server whose storage is
    /// not ready yet.
    pub(crate) fn fail_writes(&self, count: u32) {
        let faults = format!("{}.faults.json", self.nodes.display());
        std::fs::write(
            faults,
            serde_json::json!({ "failing_writes": count }).to_string(),
        )
        .unwrap();
    }

    /// Registers node `name` with `labels`.
    pub(crate) fn register(&self, name: &str, labels: &[(&str, &str)]) {
        let mut nodes: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&self.nodes).unwrap()).unwrap();
        nodes[name] = labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), serde_json::Value::from(*v)))
            .collect::<serde_json::Map<_, _>>()
            .into();
        std::fs::write(&self.nodes, nodes.to_string()).unwrap();
    }

    /// The labels of node `name` now.
    pub(crate) fn labels(&self, name: &str) -> std::collections::BTreeMap<String, String> {
        let nodes: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&self.nodes).unwrap()).unwrap();
        serde_json::from_value(nodes[name].clone()).unwrap_or_default()
    }

    /// The ServiceAccounts and ClusterRoleBindings that exist: `serviceaccounts` →
    /// `<namespace>/<name>` → object, `clusterrolebindings` → `/<name>` → object.
    pub(crate) fn objects(&self) -> serde_json::Value {
        let path = format!("{}.objects.json", self.nodes.display());
        std::fs::read_to_string(path).map_or_else(
            |_| serde_json::json!({}),
            |t| serde_json::from_str(&t).unwrap(),
        )
    }

    /// Makes an object of `kind` exist at `key` (as [`KubeApi::objects`] names them).
    pub(crate) fn put_object(&self, kind: &str, key: &str, object: serde_json::Value) {
        let mut objects = self.objects();
        objects[kind][key] = object;
        std::fs::write(
            format!("{}.objects.json", self.nodes.display()),
            objects.to_string(),
        )
        .unwrap();
    }

    /// Every request served so far.
    pub(crate) fn requests(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The PATCH requests served so far.
    pub(crate) fn patches(&self) -> Vec<serde_json::Value> {
        self.requests()
            .into_iter()
            .filter(|r| r["method"] == "PATCH")
            .collect()
    }
}

impl Drop for KubeApi {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A free 127.0.0.1 port nothing listens on.
pub(crate) fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// Installs the recording stand-in of kOps' channels tool at `<root>/opt/kops/bin/channels`
/// (where nodeup installs it from kOps 1.21): each run appends its arguments and its
/// `KUBECONFIG` to the returned log; a channel whose URL contains `fail` fails (exit 1), any
/// other says `No update required`.
pub(crate) fn install_channels_tool(root: &TestRoot) -> PathBuf {
    let log = root.join("/var/log/channels-tool.log");
    install_channels_tool_at(&root.join("/opt/kops/bin/channels"), &log);
    log
}

/// The recording channels tool at `tool` (a path of this machine), logging to `log`.
pub(crate) fn install_channels_tool_at(tool: &Path, log: &Path) {
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    std::fs::create_dir_all(tool.parent().unwrap()).unwrap();
    std::fs::write(
        tool,
        format!(
            "#!/bin/sh\nprintf 'ARGS %s\\n' \"$*\" >> '{log}'\n\
             printf 'KUBECONFIG=%s\\n' \"$KUBECONFIG\" >> '{log}'\n\
             case \"$3\" in *fail*) echo \"error: reading channel $3: not found\" >&2; exit 1;; esac\n\
             echo 'No update required'\n",
            log = log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(tool, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// etcd-manager's real pods (kOps' `reference/kops/etcd-manager/`), as nodeup writes them for
/// instance group `instance_group`: `etcd-<cluster>-<instance group>.manifest` in the node's
/// manifest directory.
pub(crate) fn etcd_manager_pods(root: &TestRoot, instance_group: &str) {
    let dir = root.join("/etc/kubernetes/manifests");
    std::fs::create_dir_all(&dir).unwrap();
    for cluster in ["main", "events"] {
        std::fs::copy(
            super::fixture(&format!(
                "etcd-manager/etcd-{cluster}-master-us-test-1a.manifest"
            )),
            dir.join(format!("etcd-{cluster}-{instance_group}.manifest")),
        )
        .unwrap();
    }
}
