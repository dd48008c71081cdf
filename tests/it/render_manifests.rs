//! `render-manifests` end to end: the real binary, a volume mounted by `protokube mount` on a real
//! loop device, files under a temporary `--root`, and a real etcd running the rendered pod.

use crate::support;

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use support::bed::{Bed, NodeKind};
use support::block::{LoopDevice, TestRoot};
use support::etcd::EtcdPod;
use support::netns::Netns;
use support::{fixture, Protokube, RunOutput};

const HA: &str = "ha.example.com";

fn render(root: &Path, spec: &Path, extra: &[&str]) -> RunOutput {
    Protokube::new()
        .args(["render-manifests", "-o", "json"])
        .arg_path("--root", root)
        .arg_path("--cluster-spec", spec)
        .args(extra)
        .run()
}

fn pod(path: &Path) -> yaml_serde::Value {
    let text = std::fs::read_to_string(path).unwrap();
    let docs: Vec<yaml_serde::Value> = yaml_serde::Deserializer::from_str(&text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect();
    assert_eq!(docs.len(), 1, "{}", path.display());
    docs.into_iter().next().unwrap()
}

fn manifest_path(root: &TestRoot, name: &str) -> PathBuf {
    root.join(&format!("/etc/kubernetes/manifests/{name}.manifest"))
}

fn mtime(path: &Path) -> std::time::SystemTime {
    std::fs::metadata(path).unwrap().modified().unwrap()
}

/// A master with `main` member `a` of an HA cluster mounted from a real loop device.
fn mounted_master(disk: &LoopDevice) -> (Bed, String) {
    let node = Bed::new(NodeKind::Bare);
    let volume = node.etcd_volume(HA, &[("main", "a/a,b,c")]);
    node.root.link_by_id(&volume, &disk.path);
    let out = node.mount(HA, &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    (node, volume)
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_master_gets_etcd_on_its_volume_and_the_control_plane() {
    let disk = LoopDevice::blank(64);
    let (node, volume) = mounted_master(&disk);
    let root = &node.root;
    let spec = fixture("cluster-completed/ha.yaml");
    let out = render(root.path(), &spec, &["--master", "--detailed-exitcode"]);
    assert_eq!(out.code, 2, "{out:#?}");

    // etcd: the file is on the volume, the manifest directory holds a relative symlink to it.
    let link = manifest_path(root, "etcd");
    let target = std::fs::read_link(&link).unwrap();
    assert_eq!(
        target,
        Path::new(&format!(
            "../../../mnt/master-{volume}/k8s.io/manifests/etcd.manifest"
        ))
    );
    let on_volume = root
        .mountpoint(&volume)
        .join("k8s.io/manifests/etcd.manifest");
    assert_eq!(
        std::fs::canonicalize(&link).unwrap(),
        on_volume.canonicalize().unwrap()
    );
    let etcd = pod(&link);
    assert_eq!(etcd["metadata"]["name"], "etcd-server");
    let env = etcd["spec"]["containers"][0]["env"].as_sequence().unwrap();
    let value = |name: &str| {
        env.iter()
            .find(|e| e["name"] == name)
            .and_then(|e| e["value"].as_str())
            .unwrap()
            .to_owned()
    };
    assert_eq!(value("ETCD_NAME"), "etcd-a");
    assert_eq!(
        value("ETCD_INITIAL_CLUSTER"),
        "etcd-a=http://etcd-a.internal.ha.example.com:2380,\
         etcd-b=http://etcd-b.internal.ha.example.com:2380,\
         etcd-c=http://etcd-c.internal.ha.example.com:2380"
    );
    // Host paths never carry the --root prefix.
    assert_eq!(
        etcd["spec"]["volumes"][0]["hostPath"]["path"],
        format!("/mnt/master-{volume}/var/etcd/data").as_str()
    );
    assert_eq!(
        etcd["spec"]["containers"][0]["image"],
        "registry.k8s.io/etcd:3.5.13-0"
    );

    for name in [
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kube-proxy",
    ] {
        let path = manifest_path(root, name);
        assert_eq!(pod(&path)["metadata"]["name"], name);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o644, "{name}");
        assert!(
            root.join(&format!("/var/log/{name}.log")).exists(),
            "{name} log"
        );
    }
    // No stray temporary files next to the manifests.
    let names: Vec<String> = std::fs::read_dir(root.join("/etc/kubernetes/manifests"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.starts_with('.')), "{names:?}");

    // The log file is never truncated; a rerun changes nothing and writes nothing.
    let etcd_log = root.join("/var/log/etcd.log");
    std::fs::write(&etcd_log, "earlier log lines\n").unwrap();
    let before: Vec<_> = ["kube-apiserver", "kube-proxy"]
        .iter()
        .map(|n| mtime(&manifest_path(root, n)))
        .collect();
    let etcd_mtime = mtime(&on_volume);
    let out = render(root.path(), &spec, &["--master", "--detailed-exitcode"]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert!(!out.report().changed);
    let after: Vec<_> = ["kube-apiserver", "kube-proxy"]
        .iter()
        .map(|n| mtime(&manifest_path(root, n)))
        .collect();
    assert_eq!(before, after);
    assert_eq!(mtime(&on_volume), etcd_mtime);
    assert_eq!(
        std::fs::read_to_string(&etcd_log).unwrap(),
        "earlier log lines\n"
    );
}

#[test]
fn a_worker_gets_kube_proxy_only() {
    let root = TestRoot::new();
    let out = render(
        root.path(),
        &fixture("cluster-completed/minimal-1.28.yaml"),
        &[],
    );
    assert_eq!(out.code, 0, "{out:#?}");
    let files: Vec<String> = std::fs::read_dir(root.join("/etc/kubernetes/manifests"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(files, ["kube-proxy.manifest"]);
    let proxy = pod(&manifest_path(&root, "kube-proxy"));
    let args: Vec<&str> = proxy["spec"]["containers"][0]["args"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(
        args.contains(&"--master=https://api.internal.minimal.example.com"),
        "{args:?}"
    );
}

#[test]
fn dry_run_writes_nothing_and_shows_a_diff() {
    let root = TestRoot::new();
    let spec = fixture("cluster-completed/minimal-1.28.yaml");
    let out = render(
        root.path(),
        &spec,
        &["--master", "--dry-run", "--detailed-exitcode"],
    );
    assert_eq!(out.code, 2, "{out:#?}");
    assert!(!root.join("/etc/kubernetes").exists());
    assert!(!root.join("/var/log").exists());

    let out = render(root.path(), &spec, &["--master"]);
    assert_eq!(out.code, 0, "{out:#?}");
    let apiserver = manifest_path(&root, "kube-apiserver");
    let before = std::fs::read(&apiserver).unwrap();

    let changed_spec = root.join("/changed.yaml");
    let text = std::fs::read_to_string(&spec).unwrap().replace(
        "    logLevel: 2\n    requestheaderAllowedNames",
        "    logLevel: 4\n    requestheaderAllowedNames",
    );
    std::fs::write(&changed_spec, text).unwrap();
    let out = Protokube::new()
        .args(["render-manifests", "--master", "--dry-run"])
        .arg_path("--root", root.path())
        .arg_path("--cluster-spec", &changed_spec)
        .run();
    assert_eq!(out.code, 0, "{out:#?}");
    assert!(out.stdout.contains("would update"), "{}", out.stdout);
    assert!(out.stdout.contains("-    - \"--v=2\""), "{}", out.stdout);
    assert!(out.stdout.contains("+    - \"--v=4\""), "{}", out.stdout);
    assert_eq!(std::fs::read(&apiserver).unwrap(), before);
}

#[test]
fn hostile_spec_strings_stay_inside_their_scalars() {
    let root = TestRoot::new();
    let hostile_image = "registry.example/kube-apiserver:v1\n---\napiVersion: v1\nkind: Secret";
    let hostile_gate = "Gate: x\n  - injected";
    let mut doc: yaml_serde::Value = yaml_serde::from_str(
        &std::fs::read_to_string(fixture("cluster-completed/minimal-1.28.yaml")).unwrap(),
    )
    .unwrap();
    doc["spec"]["kubeAPIServer"]["image"] = hostile_image.into();
    doc["spec"]["kubeScheduler"]["featureGates"] =
        yaml_serde::from_str(&format!("{{{hostile_gate:?}: \"true\"}}")).unwrap();
    doc["spec"]["kubeProxy"]["clusterCIDR"] = "10.0.0.0/8\"\n    hostNetwork: false".into();
    let spec = root.join("/hostile.yaml");
    std::fs::write(&spec, yaml_serde::to_string(&doc).unwrap()).unwrap();
    let out = render(root.path(), &spec, &["--master"]);
    assert_eq!(out.code, 0, "{out:#?}");

    let apiserver = pod(&manifest_path(&root, "kube-apiserver"));
    assert_eq!(apiserver["spec"]["containers"][0]["image"], hostile_image);
    let scheduler = pod(&manifest_path(&root, "kube-scheduler"));
    let gate = format!("--feature-gates={hostile_gate}=true");
    assert!(scheduler["spec"]["containers"][0]["args"]
        .as_sequence()
        .unwrap()
        .iter()
        .any(|a| a.as_str() == Some(gate.as_str())));
    let proxy = pod(&manifest_path(&root, "kube-proxy"));
    assert_eq!(proxy["spec"]["hostNetwork"], true);
}

#[test]
fn a_public_name_that_is_not_a_dns_name_is_refused_before_anything_is_written() {
    let root = TestRoot::new();
    let mut doc: yaml_serde::Value = yaml_serde::from_str(
        &std::fs::read_to_string(fixture("cluster-completed/minimal-1.28.yaml")).unwrap(),
    )
    .unwrap();
    doc["spec"]["masterPublicName"] = "api.example.com # not: a comment".into();
    let spec = root.join("/hostile.yaml");
    std::fs::write(&spec, yaml_serde::to_string(&doc).unwrap()).unwrap();
    let out = render(root.path(), &spec, &["--master"]);
    assert_eq!(out.code, 1, "{out:#?}");
    assert!(
        out.error_lines()[0].contains("spec.masterPublicName"),
        "{out:#?}"
    );
    assert!(!root.join("/etc").exists());
}

#[test]
fn a_failing_render_writes_nothing_and_names_template_and_field() {
    let root = TestRoot::new();
    let templates = root.join("/templates");
    std::fs::create_dir_all(&templates).unwrap();
    let broken = protokube::testing::BUILTIN_TEMPLATES
        .iter()
        .find(|(name, _)| *name == "kube-scheduler.yaml")
        .unwrap()
        .1
        .replace(
            "    name: kube-scheduler\n",
            "    name: kube-scheduler\n    imagePullPolicee: Always\n",
        );
    std::fs::write(templates.join("kube-scheduler.yaml"), broken).unwrap();
    let out = Protokube::new()
        .args(["render-manifests", "--master"])
        .arg_path("--root", root.path())
        .arg_path(
            "--cluster-spec",
            &fixture("cluster-completed/minimal-1.28.yaml"),
        )
        .arg_path("--templates", &templates)
        .run();
    assert_eq!(out.code, 1, "{out:#?}");
    let errors = out.error_lines();
    assert!(errors[0].contains("kube-scheduler.yaml"), "{errors:?}");
    assert!(errors[0].contains("imagePullPolicee"), "{errors:?}");
    assert!(
        !root.join("/etc/kubernetes").exists(),
        "something was written"
    );
}

#[test]
fn an_unmounted_volume_refuses_to_render_and_writes_nothing() {
    let root = TestRoot::new();
    let state = root.join("/var/lib/protokube/state.json");
    std::fs::create_dir_all(state.parent().unwrap()).unwrap();
    std::fs::write(
        &state,
        r#"{"version": 1, "volumes": [{"volume_id": "vol-1", "device": "/dev/xvdu",
            "mountpoint": "/mnt/master-vol-1",
            "etcd": [{"cluster": "main", "member": "a", "members": ["a"]}]}]}"#,
    )
    .unwrap();
    let out = render(
        root.path(),
        &fixture("cluster-completed/ha.yaml"),
        &["--master"],
    );
    assert_eq!(out.code, 1, "{out:#?}");
    assert!(out.error_lines()[0].contains("not mounted"), "{out:#?}");
    assert!(!root.join("/etc/kubernetes").exists());
    assert!(!root.join("/mnt/master-vol-1/k8s.io").exists());
}

#[test]
fn without_a_spec_it_says_what_to_pass() {
    let root = TestRoot::new();
    let out = Protokube::new()
        .args(["render-manifests", "--cluster-id", HA])
        .arg_path("--root", root.path())
        .run();
    assert_eq!(out.code, 1, "{out:#?}");
    assert!(out.error_lines()[0].contains("--cluster-spec"), "{out:#?}");
}

/// Runs the rendered etcd pod's command and environment with Debian's etcd, the pod's volumes
/// bind-mounted in a private mount namespace, and asks its liveness endpoint.
#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn the_rendered_etcd_pod_runs_a_healthy_etcd() {
    // etcd preallocates a 64 MiB WAL: give it room (the file is sparse).
    let disk = LoopDevice::blank(512);
    let node = Bed::new(NodeKind::Bare);
    let cluster = "one.example.com";
    let volume = node.etcd_volume(cluster, &[("main", "a/a")]);
    node.root.link_by_id(&volume, &disk.path);
    assert_eq!(node.mount(cluster, &[]).code, 0);
    // The completed HA spec, renamed, with the etcd version Debian ships.
    let mut doc: yaml_serde::Value = yaml_serde::from_str(
        &std::fs::read_to_string(fixture("cluster-completed/ha.yaml")).unwrap(),
    )
    .unwrap();
    doc["metadata"]["name"] = cluster.into();
    doc["spec"]["masterPublicName"] = format!("api.{cluster}").into();
    doc["spec"]["etcdClusters"][0]["version"] = "3.4.23".into();
    let spec = node.root.join("/spec.yaml");
    std::fs::write(&spec, yaml_serde::to_string(&doc).unwrap()).unwrap();
    let out = render(node.root.path(), &spec, &["--master"]);
    assert_eq!(out.code, 0, "{out:#?}");
    let netns = Netns::new("127.0.0.1 localhost etcd-a.internal.one.example.com\n");
    let wrapper_log = node.root.join("/etcd-wrapper.err");
    let etcd = EtcdPod::start(
        &manifest_path(&node.root, "etcd"),
        &node.root,
        &netns.name,
        std::fs::File::create(&wrapper_log).unwrap().into(),
    );
    let body = wait_healthy(&netns, &etcd, &wrapper_log);
    assert!(body.contains("\"health\":\"true\""), "{body}");
    // etcd wrote its data on the mounted volume, and its log through the pod's wrapper.
    assert!(etcd.data_host.join("member").exists());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while std::fs::metadata(&etcd.log_host).map_or(0, |m| m.len()) == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "nothing in the etcd log"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// The answer of the pod's liveness probe, asked in `netns`, once etcd gives one (30 s at most).
fn wait_healthy(netns: &Netns, etcd: &EtcdPod, wrapper_log: &Path) -> String {
    let (port, path) = etcd.probe();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        if let Some(body) = netns.run(|| http_get(port, &path)) {
            return body;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "etcd never answered its liveness probe; wrapper: {}; log: {}",
            std::fs::read_to_string(wrapper_log).unwrap_or_default(),
            std::fs::read_to_string(&etcd.log_host).unwrap_or_default()
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// kOps' `main`, `events` and `cilium` etcd clusters on one master: three pods with ports of
/// their own (cilium's 2382/4003, as kOps' etcd-manager gives it), valid, and a real etcd run
/// from the cilium pod answers its health check.
#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn cilium_etcd_gets_its_own_ports_and_runs() {
    let cluster = "three.example.com";
    let node = Bed::new(NodeKind::Bare);
    let disks = [
        LoopDevice::blank(64),
        LoopDevice::blank(64),
        LoopDevice::blank(512),
    ];
    for (disk, key) in disks.iter().zip(["main", "events", "cilium"]) {
        let volume = node.etcd_volume(cluster, &[(key, "a/a")]);
        node.root.link_by_id(&volume, &disk.path);
    }
    assert_eq!(node.mount(cluster, &[]).code, 0);
    let mut doc: yaml_serde::Value = yaml_serde::from_str(
        &std::fs::read_to_string(fixture("cluster-completed/ha.yaml")).unwrap(),
    )
    .unwrap();
    doc["metadata"]["name"] = cluster.into();
    doc["spec"]["masterPublicName"] = format!("api.{cluster}").into();
    let clusters = doc["spec"]["etcdClusters"].as_sequence_mut().unwrap();
    let mut cilium = clusters[1].clone();
    cilium["name"] = "cilium".into();
    cilium["version"] = "3.4.23".into();
    clusters.push(cilium);
    let spec = node.root.join("/spec.yaml");
    std::fs::write(&spec, yaml_serde::to_string(&doc).unwrap()).unwrap();
    let out = render(node.root.path(), &spec, &["--master"]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert!(out.report().warnings.is_empty(), "{out:#?}");
    let mut ports = Vec::new();
    for (name, peer, client) in [
        ("etcd", 2380, 4001),
        ("etcd-events", 2381, 4002),
        ("etcd-cilium", 2382, 4003),
    ] {
        let pod = pod(&manifest_path(&node.root, name));
        let container = &pod["spec"]["containers"][0];
        let port = |n: &str| {
            container["ports"]
                .as_sequence()
                .unwrap()
                .iter()
                .find(|p| p["name"] == n)
                .unwrap()["hostPort"]
                .as_u64()
                .unwrap()
        };
        assert_eq!(
            (port("serverport"), port("clientport")),
            (peer, client),
            "{name}"
        );
        ports.extend([peer, client]);
    }
    ports.sort_unstable();
    ports.dedup();
    assert_eq!(ports.len(), 6);
    let netns = Netns::new(&format!(
        "127.0.0.1 localhost etcd-cilium-a.internal.{cluster}\n"
    ));
    let wrapper_log = node.root.join("/etcd-wrapper.err");
    let etcd = EtcdPod::start(
        &manifest_path(&node.root, "etcd-cilium"),
        &node.root,
        &netns.name,
        std::fs::File::create(&wrapper_log).unwrap().into(),
    );
    assert_eq!(etcd.probe().0, 4003);
    let body = wait_healthy(&netns, &etcd, &wrapper_log);
    assert!(body.contains("\"health\":\"true\""), "{body}");
}

/// One master of `cluster` with member `a` of `main` mounted from a fresh loop device (etcd's
/// WAL needs room), and a network namespace of its own for its etcd.
struct EtcdMaster {
    node: Bed,
    volume: String,
    netns: Netns,
    cluster: &'static str,
    _disk: LoopDevice,
}

impl EtcdMaster {
    fn new(cluster: &'static str) -> Self {
        let disk = LoopDevice::blank(512);
        let node = Bed::new(NodeKind::Bare);
        let volume = node.etcd_volume(cluster, &[("main", "a/a")]);
        node.root.link_by_id(&volume, &disk.path);
        assert_eq!(node.mount(cluster, &[]).code, 0);
        let netns = Netns::new(&format!("127.0.0.1 localhost etcd-a.internal.{cluster}\n"));
        Self {
            node,
            volume,
            netns,
            cluster,
            _disk: disk,
        }
    }

    /// The completed HA spec, renamed, running etcd `version`.
    fn spec_at(&self, version: &str) -> PathBuf {
        let mut doc: yaml_serde::Value = yaml_serde::from_str(
            &std::fs::read_to_string(fixture("cluster-completed/ha.yaml")).unwrap(),
        )
        .unwrap();
        doc["metadata"]["name"] = self.cluster.into();
        doc["spec"]["masterPublicName"] = format!("api.{}", self.cluster).into();
        for etcd in doc["spec"]["etcdClusters"].as_sequence_mut().unwrap() {
            etcd["version"] = version.into();
        }
        let spec = self.node.root.join(&format!("/spec-{version}.yaml"));
        std::fs::write(&spec, yaml_serde::to_string(&doc).unwrap()).unwrap();
        spec
    }

    /// `render-manifests` in the master's network namespace, where its etcd listens.
    fn render(&self, version: &str, extra: &[&str]) -> RunOutput {
        self.netns
            .protokube()
            .args(["render-manifests", "-o", "json", "--master"])
            .arg_path("--root", self.node.root.path())
            .arg_path("--cluster-spec", &self.spec_at(version))
            .args(extra)
            .run()
    }

    fn record(&self) -> Option<String> {
        std::fs::read_to_string(
            self.node
                .root
                .mountpoint(&self.volume)
                .join("k8s.io/manifests/etcd-version"),
        )
        .ok()
    }

    fn start_etcd(&self) -> (EtcdPod, PathBuf) {
        let wrapper_log = self.node.root.join("/etcd-wrapper.err");
        let etcd = EtcdPod::start(
            &manifest_path(&self.node.root, "etcd"),
            &self.node.root,
            &self.netns.name,
            std::fs::File::create(&wrapper_log).unwrap().into(),
        );
        (etcd, wrapper_log)
    }
}

/// A stand-in for a newer etcd's `GET /version` on the client port (Debian ships etcd 3.4
/// alone): answers as etcd does until dropped.
struct VersionStandIn {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl VersionStandIn {
    fn start(netns: &Netns, port: u16, version: &str) -> Self {
        use std::io::{Read as _, Write as _};
        let listener = netns.run(|| std::net::TcpListener::bind(("127.0.0.1", port)).unwrap());
        listener.set_nonblocking(true).unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let body = format!(r#"{{"etcdserver":"{version}","etcdcluster":"3.5.0"}}"#);
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            while !stopped.load(std::sync::atomic::Ordering::Relaxed) {
                let Ok((mut stream, _)) = listener.accept() else {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    continue;
                };
                stream.set_nonblocking(false).unwrap();
                let mut request = Vec::new();
                let mut byte = [0_u8; 1];
                while !request.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                    request.push(byte[0]);
                }
                assert!(request.starts_with(b"GET /version "), "{request:?}");
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                     Content-Length: {}\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        Self {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for VersionStandIn {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The etcd version a volume records is the one its running etcd reports on its client port:
/// none before etcd runs, Debian's 3.4.23 once it does. An upgrade whose etcd never comes up
/// leaves the record alone, so going back is allowed; one that ran (a stand-in answering as
/// etcd 3.5.13) is recorded, and then going back is refused.
#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn the_version_record_follows_the_running_etcd_and_a_failed_upgrade_rolls_back() {
    let master = EtcdMaster::new("versions.example.com");
    // Before etcd runs: nothing recorded.
    let out = master.render("3.4.23", &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(master.record(), None);
    let (etcd, wrapper_log) = master.start_etcd();
    wait_healthy(&master.netns, &etcd, &wrapper_log);
    let out = master.render("3.4.23", &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(master.record().as_deref(), Some("3.4.23\n"));

    // To 3.5: allowed, and written; its etcd never comes up (the old one is gone).
    etcd.stop();
    let out = master.render("3.5.13", &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    let manifest = manifest_path(&master.node.root, "etcd");
    assert!(std::fs::read_to_string(&manifest)
        .unwrap()
        .contains("etcd:3.5.13"));
    assert_eq!(master.record().as_deref(), Some("3.4.23\n"));
    // So the data is still 3.4's, and going back is allowed.
    let out = master.render("3.4.23", &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert!(std::fs::read_to_string(&manifest)
        .unwrap()
        .contains("etcd:3.4.23"));

    // An upgrade that ran: recorded, and no way back.
    assert_eq!(master.render("3.5.13", &[]).code, 0);
    let standin = VersionStandIn::start(&master.netns, 4001, "3.5.13");
    let out = master.render("3.5.13", &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(master.record().as_deref(), Some("3.5.13\n"));
    let out = master.render("3.4.23", &[]);
    assert_eq!(out.code, 1, "{out:#?}");
    let error = out.error_lines().join("\n");
    assert!(
        error.contains("3.5.13") && error.contains(&master.volume),
        "{error}"
    );
    assert!(std::fs::read_to_string(&manifest)
        .unwrap()
        .contains("etcd:3.5.13"));
    drop(standin);
}

/// An etcd serving TLS and asking for client certificates (`--tls-auth`) reports its version to
/// the pod's own CA and certificate — a certificate naming the node's etcd name, not the
/// loopback address protokube asks at.
#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_tls_etcd_reports_its_version_to_the_pods_own_certificate() {
    let master = EtcdMaster::new("tls.example.com");
    let certs = support::kube::Certs::new();
    certs.issue(
        "etcd",
        "/CN=etcd-a",
        &format!(
            "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n\
             extendedKeyUsage=serverAuth,clientAuth\n\
             subjectAltName=DNS:etcd-a.internal.{}\n",
            master.cluster
        ),
    );
    let pki = master.node.root.join("/var/lib/etcd-pki");
    std::fs::create_dir_all(&pki).unwrap();
    for file in ["ca.crt", "etcd.crt", "etcd.key"] {
        std::fs::copy(certs.dir.path().join(file), pki.join(file)).unwrap();
    }
    let flags = [
        "--tls-ca",
        "/var/lib/etcd-pki/ca.crt",
        "--tls-cert",
        "/var/lib/etcd-pki/etcd.crt",
        "--tls-key",
        "/var/lib/etcd-pki/etcd.key",
        "--peer-ca",
        "/var/lib/etcd-pki/ca.crt",
        "--peer-cert",
        "/var/lib/etcd-pki/etcd.crt",
        "--peer-key",
        "/var/lib/etcd-pki/etcd.key",
        "--tls-auth",
    ];
    assert_eq!(master.render("3.4.23", &flags).code, 0);
    assert_eq!(master.record(), None);
    let (etcd, wrapper_log) = master.start_etcd();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(40);
    loop {
        let out = master.render("3.4.23", &flags);
        assert_eq!(out.code, 0, "{out:#?}");
        if master.record().is_some() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "etcd never reported its version over TLS; protokube: {}\nwrapper: {}\netcd: {}",
            out.stderr,
            std::fs::read_to_string(&wrapper_log).unwrap_or_default(),
            std::fs::read_to_string(&etcd.log_host).unwrap_or_default()
        );
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    assert_eq!(master.record().as_deref(), Some("3.4.23\n"));
    // The chain is verified: told another CA, protokube does not believe the answer.
    let other = support::kube::Certs::new();
    std::fs::copy(other.dir.path().join("ca.crt"), pki.join("other-ca.crt")).unwrap();
    let mut other_flags = flags;
    other_flags[1] = "/var/lib/etcd-pki/other-ca.crt";
    std::fs::remove_file(
        master
            .node
            .root
            .mountpoint(&master.volume)
            .join("k8s.io/manifests/etcd-version"),
    )
    .unwrap();
    let out = master.render("3.4.23", &other_flags);
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(master.record(), None);
    assert!(out.stderr.contains("certificate"), "{}", out.stderr);
}

/// A master whose spec does not say which etcd to run fails naming the field, before anything
/// is written.
#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn an_etcd_cluster_without_version_or_image_is_an_error_naming_the_field() {
    let disk = LoopDevice::blank(64);
    let (node, _volume) = mounted_master(&disk);
    let mut doc: yaml_serde::Value = yaml_serde::from_str(
        &std::fs::read_to_string(fixture("cluster-completed/ha.yaml")).unwrap(),
    )
    .unwrap();
    doc["spec"]["etcdClusters"][1]
        .as_mapping_mut()
        .unwrap()
        .remove("version");
    let spec = node.root.join("/spec.yaml");
    std::fs::write(&spec, yaml_serde::to_string(&doc).unwrap()).unwrap();
    let out = render(node.root.path(), &spec, &["--master"]);
    assert_eq!(out.code, 1, "{out:#?}");
    let line = &out.error_lines()[0];
    assert!(
        line.contains("spec.etcdClusters[1].version") && line.contains("--etcd-image"),
        "{line}"
    );
    assert!(!node.root.join("/etc/kubernetes/manifests").exists());
    // --etcd-image says which etcd to run.
    let out = render(
        node.root.path(),
        &spec,
        &["--master", "--etcd-image", "registry.k8s.io/etcd:3.5.13-0"],
    );
    assert_eq!(out.code, 0, "{out:#?}");
}

fn http_get(port: u16, path: &str) -> Option<String> {
    use std::io::{Read as _, Write as _};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(2)))
        .ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    response.split_once("\r\n\r\n").map(|(_, b)| b.to_owned())
}
