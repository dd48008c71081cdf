//! The GCE side of the tests: a world of instances, persistent disks and Cloud DNS zones served
//! by the stand-in `scripts/gce_standin.py` (Compute Engine v1 and Cloud DNS v1 over HTTPS with
//! their own CA and bearer tokens, every request checked against Google's discovery documents),
//! and, per node, its own metadata server and `--root`; a runner of the real binary with
//! `--cloud gce` pointed at them.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::Guard;

use serde_json::{json, Value};

use super::block::TestRoot;
use super::kube::Certs;
use super::moto::python;
use super::Protokube;

/// kOps' GCE test cluster (`minimal-gce.yaml`) named `cluster`, `adjust` applied, written as
/// `cluster.yaml` into `dir`.
pub(crate) fn kops_gce_spec(
    dir: &Path,
    cluster: &str,
    adjust: impl FnOnce(&mut yaml_serde::Value),
) -> PathBuf {
    let text = std::fs::read_to_string(super::fixture("gce/minimal-gce.yaml"))
        .unwrap()
        .replace("minimal-gce.example.com", cluster)
        .replace("minimal-gce-example-com", &cluster.replace('.', "-"));
    let mut doc: yaml_serde::Value = yaml_serde::from_str(&text).unwrap();
    adjust(&mut doc);
    let path = dir.join("cluster.yaml");
    std::fs::write(&path, yaml_serde::to_string(&doc).unwrap()).unwrap();
    path
}

/// The project every world is in.
pub(crate) const PROJECT: &str = "test-project";

/// Where Google's discovery documents are (`scripts/test` fetches them).
fn discovery_dir() -> PathBuf {
    std::env::var_os("PROTOKUBE_GCE_DISCOVERY").map_or_else(
        || crate::support::repo().join(".venv/google-discovery"),
        PathBuf::from,
    )
}

fn script() -> PathBuf {
    crate::support::repo().join("scripts/gce_standin.py")
}

/// Starts the stand-in with `args`, in network namespace `netns` when given; it and the port it
/// reports.
fn start(args: &[&std::ffi::OsStr], netns: Option<&str>) -> (Guard, u16) {
    let mut command = match netns {
        Some(ns) => {
            let mut command = Command::new("nsenter");
            command.arg(format!("--net=/run/netns/{ns}")).arg(python());
            command
        }
        None => Command::new(python()),
    };
    command.arg(script()).args(args).stderr(Stdio::inherit());
    super::spawn_listening(&mut command, "the GCE stand-in")
}

/// A GCE world: its state and the Compute Engine and Cloud DNS stand-in; stopped when dropped.
pub(crate) struct GceWorld {
    dir: tempfile::TempDir,
    certs: Certs,
    api: Guard,
    pub api_port: u16,
    /// The network namespace the world's servers and nodes run in, if not this one.
    netns: Option<String>,
}

impl GceWorld {
    /// A project with the public managed zone `example.com.` (id `1`, as kOps' GCE test
    /// cluster's `dnsZone`) and nothing else.
    pub(crate) fn new() -> Self {
        Self::new_in(None)
    }

    /// The same world with its servers and nodes in network namespace `netns`.
    pub(crate) fn new_in(netns: Option<&str>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let state = json!({
            "project": PROJECT,
            "instances": {},
            "disks": {},
            "managed_zones": {
                "1": {"name": "example-com", "dnsName": "example.com.", "visibility": "public", "rrsets": {}}
            },
        });
        std::fs::write(dir.path().join("state.json"), state.to_string()).unwrap();
        let certs = Certs::new();
        let (api, api_port) = start(
            &[
                "api".as_ref(),
                certs.dir.path().as_os_str(),
                dir.path().join("state.json").as_os_str(),
                dir.path().join("requests.log").as_os_str(),
                discovery_dir().as_os_str(),
            ],
            netns,
        );
        Self {
            dir,
            certs,
            api,
            api_port,
            netns: netns.map(str::to_owned),
        }
    }

    fn state_path(&self) -> PathBuf {
        self.dir.path().join("state.json")
    }

    /// The world as it is now.
    pub(crate) fn state(&self) -> Value {
        serde_json::from_str(&std::fs::read_to_string(self.state_path()).unwrap()).unwrap()
    }

    /// Changes the world (between runs).
    pub(crate) fn change(&self, f: impl FnOnce(&mut Value)) {
        let mut state = self.state();
        f(&mut state);
        let tmp = self.dir.path().join("state.json.test");
        std::fs::write(&tmp, state.to_string()).unwrap();
        std::fs::rename(tmp, self.state_path()).unwrap();
    }

    /// An instance `name` in `zone` at private address `ip`, of `cluster` in `role` (`master`:
    /// kOps' control-plane labels, `node`, or none for an instance of no cluster), as kOps
    /// 1.26–1.35 makes it.
    pub(crate) fn add_instance(&self, name: &str, zone: &str, ip: &str, cluster: &str, role: &str) {
        self.add_instance_of(Kops::V1_26, name, zone, ip, cluster, role);
    }

    /// An instance as kOps `version` makes it (`pkg/model/gcemodel/autoscalinggroup.go` and
    /// `pkg/model/context.go` `CloudTagsForInstanceGroup` of that branch): the metadata item
    /// `cluster-name`, the role's network tags, its labels (none before 1.23), and its boot disk
    /// (named after the instance, attached as `persistent-disk-0`, as a managed instance
    /// group's template makes it).
    pub(crate) fn add_instance_of(
        &self,
        version: Kops,
        name: &str,
        zone: &str,
        ip: &str,
        cluster: &str,
        role: &str,
    ) {
        let safe = cluster.replace('.', "-");
        let (labels, tags) = match (role, version) {
            ("master" | "node", Kops::V1_22) => {
                (json!({}), vec![format!("{safe}-k8s-io-role-{role}")])
            }
            ("master", Kops::V1_26) => (
                json!({
                    "k8s-io-cluster-name": safe,
                    "k8s-io-instance-group": format!("master-{zone}"),
                    "k8s-io-role-master": "",
                    "k8s-io-role-control-plane": "",
                }),
                vec![
                    format!("{safe}-k8s-io-role-control-plane"),
                    format!("{safe}-k8s-io-role-master"),
                ],
            ),
            ("master", Kops::V1_36) => (
                json!({
                    "k8s-io-cluster-name": safe,
                    "k8s-io-instance-group": format!("control-plane-{zone}"),
                    "k8s-io-role-master": "master",
                    "k8s-io-role-control-plane": "control-plane",
                }),
                vec![
                    format!("{safe}-k8s-io-role-control-plane"),
                    format!("{safe}-k8s-io-role-master"),
                ],
            ),
            ("node", Kops::V1_26 | Kops::V1_36) => (
                json!({
                    "k8s-io-cluster-name": safe,
                    "k8s-io-instance-group": format!("nodes-{zone}"),
                    "k8s-io-role-node": if version == Kops::V1_36 { "node" } else { "" },
                }),
                vec![format!("{safe}-k8s-io-role-node")],
            ),
            _ => (json!({}), vec![]),
        };
        self.change(|s| {
            s["instances"][name] = json!({
                "zone": zone,
                "ip": ip,
                "labels": labels,
                "tags": tags,
                "metadata": {"cluster-name": cluster},
            });
            s["disks"][name] = json!({
                "zone": zone,
                "status": "READY",
                "boot": true,
                "users": [name],
                "devices": {name: "persistent-disk-0"},
                "sourceImage": "https://www.googleapis.com/compute/v1/projects/debian-cloud/global/images/debian-12-bookworm-v20251111",
                "labels": {},
            });
        });
    }

    /// A disk of `cluster` in `zone` holding member `me` of etcd cluster `key` of `members`,
    /// labelled as kOps ≤ 1.35's `addGCEVolume` labels it (every member after the slash); its
    /// name.
    pub(crate) fn add_etcd_disk(
        &self,
        cluster: &str,
        zone: &str,
        key: &str,
        me: &str,
        members: &[&str],
    ) -> String {
        self.add_etcd_disk_labelled(
            cluster,
            zone,
            key,
            me,
            &format!("{me}/{}", members.join(",")),
        )
    }

    /// A disk of member `me` of etcd cluster `key` as kOps ≥ 1.36's `addGCEVolume` labels it:
    /// `<me>/<me>`, itself only (kops@release-1.36 `pkg/model/master_volumes.go`, #17630).
    pub(crate) fn add_etcd_disk_1_36(
        &self,
        cluster: &str,
        zone: &str,
        key: &str,
        me: &str,
    ) -> String {
        self.add_etcd_disk_labelled(cluster, zone, key, me, &format!("{me}/{me}"))
    }

    fn add_etcd_disk_labelled(
        &self,
        cluster: &str,
        zone: &str,
        key: &str,
        me: &str,
        membership: &str,
    ) -> String {
        let name = format!("{me}-etcd-{key}-{}", cluster.replace('.', "-"));
        let encoded = encode(membership);
        self.change(|s| {
            s["disks"][&name] = json!({
                "zone": zone,
                "status": "READY",
                "labels": {
                    "k8s-io-cluster-name": cluster.replace('.', "-"),
                    "k8s-io-role-master": "master",
                    format!("k8s-io-etcd-{key}"): encoded,
                },
            });
        });
        name
    }

    /// The disk `name` as the world holds it.
    pub(crate) fn disk(&self, name: &str) -> Value {
        self.state()["disks"][name].clone()
    }

    /// The record sets of managed zone `1` at `name` (with its trailing dot): type → rrdatas.
    pub(crate) fn records(&self, name: &str) -> std::collections::BTreeMap<String, Vec<String>> {
        let state = self.state();
        let sets = state["managed_zones"]["1"]["rrsets"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        sets.values()
            .filter(|s| s["name"] == name)
            .map(|s| {
                (
                    s["type"].as_str().unwrap().to_owned(),
                    serde_json::from_value(s["rrdatas"].clone()).unwrap(),
                )
            })
            .collect()
    }

    /// Puts a record set into managed zone `1` (another writer's).
    pub(crate) fn put_record(&self, name: &str, record_type: &str, rrdatas: &[&str]) {
        self.change(|s| {
            s["managed_zones"]["1"]["rrsets"][format!("{name}|{record_type}")] = json!({
                "kind": "dns#resourceRecordSet", "name": name, "type": record_type, "ttl": 300,
                "rrdatas": rrdatas,
            });
        });
    }

    /// Every request the API stand-in served, in order.
    pub(crate) fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(self.dir.path().join("requests.log"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .filter(|r: &Value| r["server"] == "api")
            .collect()
    }

    /// The API methods called by `instance`'s runs from request number `since` on.
    pub(crate) fn calls_since(&self, since: usize, instance: &str) -> Vec<String> {
        self.requests()[since..]
            .iter()
            .filter(|r| r["caller"] == instance)
            .map(|r| r["id"].as_str().unwrap_or("?").to_owned())
            .collect()
    }

    /// Fails the test when any request was not a method of Google's discovery documents (or
    /// carried what the method does not take), or an answer of the stand-in's was not in the
    /// method's response schema.
    pub(crate) fn assert_faithful(&self) {
        let violations = std::fs::read_to_string(self.dir.path().join("requests.log.violations"))
            .unwrap_or_default();
        assert!(
            violations.is_empty(),
            "requests unlike Google's APIs:\n{violations}"
        );
    }

    /// The requests that were not Google's, as the stand-in logged them.
    pub(crate) fn violations(&self) -> Vec<Value> {
        std::fs::read_to_string(self.dir.path().join("requests.log.violations"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The HTTP status of a GET of `path` on the API stand-in, as instance `caller`.
    pub(crate) fn raw_get(&self, path: &str, caller: &str) -> u16 {
        let script = "import ssl, sys, urllib.request, urllib.error\n\
            ctx = ssl.create_default_context(cafile=sys.argv[1])\n\
            req = urllib.request.Request(sys.argv[2], headers={'Authorization': 'Bearer ya29.standin.' + sys.argv[3]})\n\
            try:\n    print(urllib.request.urlopen(req, context=ctx).status)\n\
            except urllib.error.HTTPError as e:\n    print(e.code)\n";
        let out = Command::new(python())
            .arg("-c")
            .arg(script)
            .arg(self.certs.dir.path().join("ca.crt"))
            .arg(format!("https://127.0.0.1:{}{path}", self.api_port))
            .arg(caller)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)))
    }

    /// A node of the world: instance `instance` (added before), its metadata server (answering
    /// 503 for its first `ready_after` seconds) and its `--root`.
    pub(crate) fn node(&self, instance: &str) -> GceNode<'_> {
        self.node_ready_after(instance, 0.0)
    }

    pub(crate) fn node_ready_after(&self, instance: &str, ready_after: f64) -> GceNode<'_> {
        self.start_node(instance, ready_after, None)
    }

    /// A node whose metadata server answers where Google's does, `169.254.169.254:80`, and
    /// which is reached there (no `GCE_METADATA_HOST`): in the world's network namespace.
    pub(crate) fn node_at_google_address(&self, instance: &str) -> GceNode<'_> {
        assert!(self.netns.is_some(), "the address is the namespace's own");
        self.start_node(instance, 0.0, Some(("169.254.169.254", 80)))
    }

    fn start_node(&self, instance: &str, ready_after: f64, at: Option<(&str, u16)>) -> GceNode<'_> {
        let (address, port) = at.unwrap_or(("127.0.0.1", 0));
        let (metadata, port) = start(
            &[
                "metadata".as_ref(),
                instance.as_ref(),
                self.state_path().as_os_str(),
                self.dir.path().join("metadata.log").as_os_str(),
                ready_after.to_string().as_ref(),
                address.as_ref(),
                port.to_string().as_ref(),
            ],
            self.netns.as_deref(),
        );
        GceNode {
            world: self,
            instance: instance.to_owned(),
            metadata,
            port,
            default_address: at.is_some(),
            root: TestRoot::new(),
        }
    }

    /// Where the stand-in's API roots are, and its CA.
    fn environment(&self) -> [(&'static str, String); 3] {
        [
            (
                "PROTOKUBE_GCE_COMPUTE_ENDPOINT",
                format!("https://127.0.0.1:{}/compute/v1/", self.api_port),
            ),
            (
                "PROTOKUBE_GCE_DNS_ENDPOINT",
                format!("https://127.0.0.1:{}/dns/v1/", self.api_port),
            ),
            (
                "SSL_CERT_FILE",
                self.certs.dir.path().join("ca.crt").display().to_string(),
            ),
        ]
    }
}

impl Drop for GceWorld {
    fn drop(&mut self) {
        let _ = self.api.kill();
        let _ = self.api.wait();
    }
}

/// One GCE node: its instance, metadata server and `--root`.
pub(crate) struct GceNode<'a> {
    world: &'a GceWorld,
    pub instance: String,
    metadata: Guard,
    port: u16,
    /// Its metadata server is at Google's own address: protokube is not told where.
    default_address: bool,
    pub root: TestRoot,
}

impl GceNode<'_> {
    /// `protokube --cloud gce --root <root>` of this node, pointed at the world.
    pub(crate) fn protokube(&self) -> Protokube {
        let mut run = match &self.world.netns {
            Some(ns) => Protokube::under(&["nsenter", &format!("--net=/run/netns/{ns}")]),
            None => Protokube::new(),
        }
        .env("PROTOKUBE_CLOUD", "gce")
        .env("PROTOKUBE_ROOT", self.root.path());
        if !self.default_address {
            run = run.env("GCE_METADATA_HOST", format!("127.0.0.1:{}", self.port));
        }
        for (key, value) in self.world.environment() {
            run = run.env(key, value);
        }
        run
    }

    /// Disk `disk`'s device under the root as Google's guest udev rules link it:
    /// `/dev/disk/by-id/google-<device name>` → a device node with `device`'s numbers (the
    /// device name protokube gives an attachment is the disk's own).
    pub(crate) fn link_disk(&self, disk: &str, device: &Path) {
        self.link_device(&format!("google-{disk}"), device);
    }

    /// `/dev/disk/by-id/<link>` → a new device node with `device`'s numbers: `google-<device
    /// name>` (Google's guest rules) or `scsi-0Google_PersistentDisk_<device name>` (systemd's
    /// stock rules, on images without Google's guest environment).
    pub(crate) fn link_device(&self, link: &str, device: &Path) {
        let name = (b'b'..=b'z')
            .map(|c| format!("sd{}", char::from(c)))
            .find(|n| !self.root.join(&format!("/dev/{n}")).exists())
            .expect("a free sd name under the test root");
        self.root.device_node(&format!("/dev/{name}"), device);
        let link = self.root.join(&format!("/dev/disk/by-id/{link}"));
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(format!("../../{name}"), link).unwrap();
    }
}

impl Drop for GceNode<'_> {
    fn drop(&mut self) {
        let _ = self.metadata.kill();
        let _ = self.metadata.wait();
    }
}

/// The kOps versions whose GCE resources differ for protokube: 1.22 labels no instance (its
/// masters carry only the metadata item `cluster-name` and a network tag), 1.26–1.35 label
/// instances with `""` role values and each etcd disk with every member, 1.36 labels roles with
/// their names and each etcd disk with itself only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kops {
    V1_22,
    V1_26,
    V1_36,
}

/// kOps' `EncodeGCELabel`, written apart from protokube's.
pub(crate) fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| {
            if b.is_ascii_digit() || b.is_ascii_lowercase() {
                char::from(b).to_string()
            } else {
                format!("-{b:02x}")
            }
        })
        .collect()
}

/// Asserts that a gossip worker's hosts file `hosts` maps `api.internal` and
/// `kops-controller.internal` of the cluster `g.k8s.local` to its two control-plane instances
/// (`10.0.1.1`, `10.0.1.2`), and names neither a worker (`10.0.2.1`) nor another cluster's master
/// (`10.0.9.9`), as the GCE worlds with masters seed them.
pub(crate) fn assert_hosts_name_the_two_masters(hosts: &str) {
    for master in ["10.0.1.1", "10.0.1.2"] {
        assert!(
            hosts.contains(&format!(
                "{master}\tapi.internal.g.k8s.local kops-controller.internal.g.k8s.local\n"
            )),
            "{hosts}"
        );
    }
    assert!(
        !hosts.contains("10.0.9.9") && !hosts.contains("10.0.2.1"),
        "{hosts}"
    );
}
