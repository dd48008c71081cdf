//! The clouds where protokube is the gossip member only, for the tests: a world of servers (or
//! droplets) served by `scripts/cloud_standin.py` (the API over HTTPS with its own CA and
//! bearer token, every answer read by the cloud's official Python client first), a metadata
//! service per node, and a runner of the real binary with `--cloud <cloud>` pointed at them.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use super::kube::Certs;
use super::moto::python;
use super::{Guard, Protokube};

/// The token (OpenStack: the application credential's secret) the world accepts.
pub(crate) const TOKEN: &str = "standin-token-1";
/// The OpenStack project every server is in.
const PROJECT: &str = "p-standin";

/// One member-only cloud as the tests see it: its `--cloud` word, its token variable, its
/// endpoint flags' variables and the API root under the stand-in.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CloudKind {
    pub(crate) word: &'static str,
    pub(crate) token_variable: &'static str,
    pub(crate) api_variable: &'static str,
    api_root: &'static str,
    metadata_variable: &'static str,
    metadata_root: &'static str,
    /// The state key its instances are under.
    instances: &'static str,
    /// Variables the node has beside the secret (an OpenStack application credential's id).
    extra_env: &'static [(&'static str, &'static str)],
    /// What a run without the secret says, and its exit code.
    pub(crate) missing_says: &'static str,
    pub(crate) missing_code: i32,
    /// What a run with a rejected secret says, and the HTTP status it names.
    pub(crate) rejected_says: &'static str,
    pub(crate) rejected_status: &'static str,
    /// The operation that lists the control plane.
    pub(crate) list_operation: &'static str,
}

pub(crate) const HETZNER: CloudKind = CloudKind {
    word: "hetzner",
    token_variable: "HCLOUD_TOKEN",
    api_variable: "PROTOKUBE_HETZNER_API_ENDPOINT",
    api_root: "v1/",
    metadata_variable: "PROTOKUBE_HETZNER_METADATA_ENDPOINT",
    metadata_root: "hetzner/v1/metadata/",
    instances: "servers",
    extra_env: &[],
    missing_says: "`HCLOUD_TOKEN` is not set",
    missing_code: 64,
    rejected_says: "rejected the token in `HCLOUD_TOKEN`",
    rejected_status: "HTTP 401",
    list_operation: "servers.list",
};

pub(crate) const DIGITALOCEAN: CloudKind = CloudKind {
    word: "digitalocean",
    token_variable: "DIGITALOCEAN_ACCESS_TOKEN",
    api_variable: "PROTOKUBE_DIGITALOCEAN_API_ENDPOINT",
    api_root: "v2/",
    metadata_variable: "PROTOKUBE_DIGITALOCEAN_METADATA_ENDPOINT",
    metadata_root: "metadata/v1/",
    instances: "droplets",
    extra_env: &[],
    missing_says: "`DIGITALOCEAN_ACCESS_TOKEN` is not set",
    missing_code: 64,
    rejected_says: "rejected the token in `DIGITALOCEAN_ACCESS_TOKEN`",
    rejected_status: "HTTP 401",
    list_operation: "droplets.list",
};

pub(crate) const OPENSTACK: CloudKind = CloudKind {
    word: "openstack",
    token_variable: "OS_APPLICATION_CREDENTIAL_SECRET",
    api_variable: "OS_AUTH_URL",
    api_root: "identity/v3",
    metadata_variable: "PROTOKUBE_OPENSTACK_METADATA_ENDPOINT",
    metadata_root: "",
    instances: "servers",
    extra_env: &[
        ("OS_APPLICATION_CREDENTIAL_ID", "standin-credential"),
        ("OS_REGION_NAME", "RegionOne"),
    ],
    missing_says: "set `OS_APPLICATION_CREDENTIAL_ID` and `OS_APPLICATION_CREDENTIAL_SECRET`",
    missing_code: 64,
    rejected_says: "rejected the credentials in `OS_*`",
    rejected_status: "HTTP 401",
    list_operation: "compute.servers.list",
};

pub(crate) const SCALEWAY: CloudKind = CloudKind {
    word: "scaleway",
    token_variable: "SCW_SECRET_KEY",
    api_variable: "PROTOKUBE_SCALEWAY_API_ENDPOINT",
    api_root: "",
    metadata_variable: "PROTOKUBE_SCALEWAY_METADATA_ENDPOINT",
    metadata_root: "",
    instances: "servers",
    extra_env: &[
        ("SCW_ACCESS_KEY", "SCWSTANDIN0000000000"),
        ("SCW_DEFAULT_PROJECT_ID", "proj-1"),
    ],
    missing_says: "`SCW_SECRET_KEY` is not set",
    missing_code: 64,
    rejected_says: "rejected the secret key in `SCW_SECRET_KEY`",
    rejected_status: "HTTP 401",
    list_operation: "instance.servers.list",
};

/// Azure: the managed identity's token from the instance metadata service; the "secret" is the
/// user-assigned identity `AZURE_CLIENT_ID` names (without it, the system-assigned one, which
/// the world's VMs lack).
pub(crate) const AZURE: CloudKind = CloudKind {
    word: "azure",
    token_variable: "AZURE_CLIENT_ID",
    api_variable: "PROTOKUBE_AZURE_API_ENDPOINT",
    api_root: "",
    metadata_variable: "PROTOKUBE_AZURE_METADATA_ENDPOINT",
    metadata_root: "",
    instances: "scale_sets",
    extra_env: &[],
    missing_says: "the system-assigned identity (no `AZURE_CLIENT_ID`)",
    missing_code: 1,
    rejected_says: "the user-assigned identity `revoked` (`AZURE_CLIENT_ID`)",
    rejected_status: "HTTP 400 invalid_request: Identity not found",
    list_operation: "compute.virtualMachineScaleSets.list",
};

/// An instance of a test world: id, name, cluster, role (`ControlPlane`, `Node`) and private
/// address (none: no private network).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Instance<'a> {
    pub(crate) id: u64,
    pub(crate) name: &'a str,
    pub(crate) cluster: &'a str,
    pub(crate) role: &'a str,
    pub(crate) ip: Option<&'a str>,
}

impl CloudKind {
    /// Instance `id` as the cloud names it (Scaleway: a UUID).
    fn instance_key(self, id: u64) -> String {
        match self.word {
            "scaleway" => format!("00000000-0000-4000-8000-{id:012}"),
            _ => id.to_string(),
        }
    }

    /// `instance` in the cloud's own shape, as its API reference shows it (kOps' labels or
    /// tags for its cluster and role).
    fn shape(self, instance: &Instance<'_>) -> Value {
        match self.word {
            "hetzner" => json!({
                "id": instance.id, "name": instance.name, "status": "running",
                "created": "2026-01-30T23:55:00+00:00",
                "labels": {"kops.k8s.io/cluster": instance.cluster, "kops.k8s.io/instance-role": instance.role,
                           "kops.k8s.io/instance-group": format!("{}-fsn1", instance.role.to_lowercase())},
                "private_net": instance.ip.map(|ip| vec![json!({"network": 4711, "ip": ip, "alias_ips": [], "mac_address": "86:00:00:2a:7d:e0"})]).unwrap_or_default(),
                "public_net": {"ipv4": {"id": instance.id + 1000, "ip": "203.0.113.9", "blocked": false, "dns_ptr": "static.example.com"},
                               "ipv6": null, "floating_ips": [], "firewalls": []},
                "server_type": {"id": 1, "name": "cx22", "description": "CX22", "cores": 2, "memory": 4.0, "disk": 40,
                                "storage_type": "local", "cpu_type": "shared", "architecture": "x86", "prices": [], "deprecation": null},
                "location": {"id": 1, "name": "fsn1", "description": "Falkenstein DC Park 1", "country": "DE", "city": "Falkenstein",
                             "latitude": 50.476_12, "longitude": 12.370_071, "network_zone": "eu-central"},
                "image": null, "iso": null, "rescue_enabled": false, "locked": false, "backup_window": null,
                "outgoing_traffic": 0, "ingoing_traffic": 0, "included_traffic": 21_990_232_555_520_u64,
                "protection": {"delete": false, "rebuild": false}, "volumes": [], "load_balancers": [],
                "primary_disk_size": 40, "placement_group": null,
            }),
            "azure" => json!({
                "id": instance.id.to_string(), "name": instance.name, "cluster": instance.cluster,
                "role": instance.role, "ip": instance.ip,
            }),
            "scaleway" => json!({
                "id": self.instance_key(instance.id), "name": instance.name,
                "zone": "fr-par-1", "ip": instance.ip,
                "tags": [format!("noprefix=kops.k8s.io/cluster={}", instance.cluster),
                         format!("noprefix=kops.k8s.io/role={}", instance.role),
                         format!("noprefix=kops.k8s.io/instance-group={}-fr-par-1", instance.role.to_lowercase())],
            }),
            "openstack" => json!({
                "id": instance.id.to_string(), "name": instance.name, "status": "ACTIVE",
                "tenant_id": PROJECT, "user_id": "u1", "hostId": "h1", "progress": 0,
                "metadata": {"KubernetesCluster": instance.cluster, "KopsRole": instance.role,
                             "KopsInstanceGroup": format!("{}-nova", instance.role.to_lowercase()),
                             "KopsNetwork": instance.cluster},
                "addresses": instance.ip.map_or_else(|| json!({}), |ip| json!({instance.cluster: [
                    {"addr": ip, "version": 4, "OS-EXT-IPS:type": "fixed", "OS-EXT-IPS-MAC:mac_addr": "fa:16:3e:00:00:01"},
                    {"addr": "203.0.113.9", "version": 4, "OS-EXT-IPS:type": "floating", "OS-EXT-IPS-MAC:mac_addr": "fa:16:3e:00:00:01"},
                ]})),
                "flavor": {"id": "f1", "links": []}, "image": {"id": "i1", "links": []},
                "created": "2026-01-30T23:55:00Z", "updated": "2026-01-30T23:56:00Z",
                "OS-EXT-AZ:availability_zone": "nova", "key_name": null, "links": [], "security_groups": [],
                "accessIPv4": "", "accessIPv6": "", "config_drive": "", "OS-EXT-STS:power_state": 1,
                "OS-EXT-STS:vm_state": "active", "OS-EXT-STS:task_state": null,
                "os-extended-volumes:volumes_attached": [],
            }),
            _ => json!({
                "id": instance.id, "name": instance.name, "memory": 2048, "vcpus": 2, "disk": 60, "locked": false,
                "status": "active", "created_at": "2026-01-30T23:55:00Z", "features": ["private_networking"],
                "backup_ids": [], "next_backup_window": null, "snapshot_ids": [], "image": {}, "volume_ids": [],
                "size": {}, "size_slug": "s-2vcpu-2gb",
                "networks": {"v4": instance.ip.map(|ip| vec![json!({"ip_address": ip, "netmask": "255.255.0.0", "gateway": "10.10.0.1", "type": "private"})])
                    .unwrap_or_default().into_iter().chain([json!({"ip_address": "203.0.113.9", "netmask": "255.255.255.0", "gateway": "203.0.113.1", "type": "public"})]).collect::<Vec<_>>(),
                             "v6": []},
                "region": {"name": "New York 1", "slug": "nyc1", "features": [], "available": true, "sizes": []},
                "tags": [format!("KubernetesCluster:{}", instance.cluster.replace('.', "-")),
                         format!("kops-instance-role:{}", instance.role),
                         format!("kops-instancegroup:{}-nyc1", instance.role.to_lowercase())],
                "vpc_uuid": "5a4981aa-9653-4bd1-bef5-d6bff52042e4",
            }),
        }
    }
}

fn script() -> PathBuf {
    crate::support::repo().join("scripts/cloud_standin.py")
}

fn start(args: &[&std::ffi::OsStr], what: &str) -> (Guard, u16) {
    let mut command = Command::new(python());
    command.arg(script()).args(args).stderr(Stdio::inherit());
    super::spawn_listening(&mut command, what)
}

/// A world of one member-only cloud: its state, its API stand-in, a metadata service per node.
pub(crate) struct CloudWorld {
    pub(crate) kind: CloudKind,
    dir: tempfile::TempDir,
    certs: Certs,
    _api: Guard,
    api_port: u16,
    metadata: std::sync::Mutex<Vec<Guard>>,
}

impl CloudWorld {
    pub(crate) fn new(kind: CloudKind) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("state.json"),
            json!({
                "token": TOKEN, kind.instances: [], "project": PROJECT,
                "subscription": "sub-standin", "resource_group": "rg-c", "identities": [TOKEN],
                "credentials": {"application_credential_id": "standin-credential", "user": "kops"},
            })
            .to_string(),
        )
        .unwrap();
        let certs = Certs::new();
        let (api, api_port) = start(
            &[
                "api".as_ref(),
                kind.word.as_ref(),
                dir.path().join("state.json").as_os_str(),
                dir.path().join("requests.log").as_os_str(),
                certs.dir.path().as_os_str(),
            ],
            "the cloud stand-in",
        );
        Self {
            kind,
            dir,
            certs,
            _api: api,
            api_port,
            metadata: std::sync::Mutex::new(Vec::new()),
        }
    }

    fn state_path(&self) -> PathBuf {
        self.dir.path().join("state.json")
    }

    /// Changes the world.
    pub(crate) fn change(&self, f: impl FnOnce(&mut Value)) {
        let mut state: Value =
            serde_json::from_str(&std::fs::read_to_string(self.state_path()).unwrap()).unwrap();
        f(&mut state);
        let tmp = self.dir.path().join("state.json.test");
        std::fs::write(&tmp, state.to_string()).unwrap();
        std::fs::rename(tmp, self.state_path()).unwrap();
    }

    /// The API's root under the stand-in.
    pub(crate) fn api_url(&self) -> String {
        format!("https://127.0.0.1:{}/{}", self.api_port, self.kind.api_root)
    }

    /// Adds `instances`.
    pub(crate) fn add(&self, instances: &[Instance<'_>]) {
        let kind = self.kind;
        self.change(|state| {
            let list = state[kind.instances].as_array_mut().unwrap();
            list.extend(instances.iter().map(|i| kind.shape(i)));
        });
    }

    /// Every request the stand-in answered, in order.
    pub(crate) fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(self.dir.path().join("requests.log"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// Panics when the cloud's official client could not read an answer the stand-in gave.
    pub(crate) fn assert_the_client_read_every_answer(&self) {
        let requests = self.requests();
        let violations: Vec<&Value> = requests
            .iter()
            .filter(|r| r.get("violation").is_some())
            .collect();
        assert!(
            violations.is_empty(),
            "answers the official client could not read: {violations:#?}"
        );
        assert!(
            requests.iter().any(|r| r["server"] == "api"),
            "the stand-in answered no API request"
        );
    }

    /// `protokube` on the node of instance `id`: its own metadata service, the API, the token.
    pub(crate) fn protokube(&self, id: u64) -> Protokube {
        let (guard, port) = start(
            &[
                "metadata".as_ref(),
                self.kind.word.as_ref(),
                self.kind.instance_key(id).as_ref(),
                self.state_path().as_os_str(),
                self.dir.path().join("requests.log").as_os_str(),
            ],
            "the metadata stand-in",
        );
        self.metadata.lock().unwrap().push(guard);
        let mut protokube = Protokube::new();
        for (name, value) in self.kind.extra_env {
            protokube = protokube.env(name, value);
        }
        protokube
            .env("PROTOKUBE_CLOUD", self.kind.word)
            .env(self.kind.api_variable, self.api_url())
            .env(
                self.kind.metadata_variable,
                format!("http://127.0.0.1:{port}/{}", self.kind.metadata_root),
            )
            .env(self.kind.token_variable, TOKEN)
            .env("SSL_CERT_FILE", self.certs.dir.path().join("ca.crt"))
    }
}
