//! The node's faults: where its files, the clock, plugins and packages misbehave, each case as a
//! new user would meet it: etcd-manager's real pod in every shape kubelet runs (and the shapes it
//! does not), protokube's own etcd under a registry path named `etcd-manager…`, one deadline for
//! the run that a credential plugin, a dripping API server and a forking channels tool all honour,
//! `--timeout` under a second, format records that do not parse, a first miss dated in the future,
//! and `reset` with something below the volume. Real binary, moto, real loop devices and mounts
//! where a volume is involved.

use crate::support;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use support::bed::{Bed, NodeKind, HA};
use support::block::{LoopDevice, TestRoot};
use support::kube::{Certs, KubeApi};
use support::{fixture, seed, Protokube, RunOutput};

const MANIFESTS: &str = "/etc/kubernetes/manifests";
const MUTATING_EC2: [&str; 4] = ["AttachVolume", "DetachVolume", "CreateTags", "DeleteTags"];

/// The names in the bed's hosted zone: (name, type) → values.
fn zone(bed: &Bed) -> BTreeMap<(String, String), Vec<String>> {
    support::runtime()
        .block_on(async {
            seed::zone_records(&bed.moto().route53().await, bed.zone_id.as_ref().unwrap()).await
        })
        .into_iter()
        .map(|(key, (_, values))| (key, values))
        .collect()
}

fn manifest_names(root: &TestRoot) -> Vec<String> {
    support::dir_names(&root.join(MANIFESTS))
}

/// Writes an executable script at host path `path` under `root`.
fn script(root: &TestRoot, path: &str, body: &str) -> PathBuf {
    let file = root.join(path);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
    file
}

/// Asserts the process whose id is in `pid_file` is gone (a zombie counts as gone).
fn assert_gone(pid_file: &Path) {
    let pid =
        std::fs::read_to_string(pid_file).unwrap_or_else(|e| panic!("{}: {e}", pid_file.display()));
    let pid = pid.trim();
    for _ in 0..100 {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return,
            Ok(stat)
                if stat
                    .rsplit(')')
                    .next()
                    .is_some_and(|s| s.trim_start().starts_with('Z')) =>
            {
                return
            }
            Ok(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    panic!("process {pid} ({}) outlived the run", pid_file.display());
}

/// The run lock is free: another process takes it at once.
fn assert_lock_free(root: &TestRoot) {
    let lock = root.join("/run/protokube.lock");
    if lock.exists() {
        let status = std::process::Command::new("flock")
            .args(["--nonblock", "--exclusive"])
            .arg(&lock)
            .arg("true")
            .status()
            .unwrap();
        assert!(status.success(), "the run lock is still held");
    }
}

/// etcd-manager's real main pod (`reference/kops/etcd-manager/`).
fn kops_pod() -> String {
    std::fs::read_to_string(fixture("etcd-manager/etcd-main-master-us-test-1a.manifest")).unwrap()
}

/// etcd-manager's pod in each shape kubelet runs it from: (shape, file name, write it).
type Shape = (&'static str, Box<dyn Fn(&TestRoot)>);

fn shapes_kubelet_runs() -> Vec<Shape> {
    let file = |name: &'static str, bytes: Vec<u8>| -> Box<dyn Fn(&TestRoot)> {
        Box::new(move |root: &TestRoot| {
            std::fs::write(root.join(&format!("{MANIFESTS}/{name}")), &bytes).unwrap();
        })
    };
    let pod = kops_pod();
    let utf16: Vec<u8> = [0xFF, 0xFE]
        .into_iter()
        .chain(pod.encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    vec![
        (
            "a trailing ---",
            file("etcd-main-b.manifest", format!("{pod}---\n").into_bytes()),
        ),
        (
            "a second document",
            file(
                "etcd-main-b.manifest",
                format!("{pod}---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: x}}\n")
                    .into_bytes(),
            ),
        ),
        (
            "a UTF-8 byte-order mark",
            file(
                "etcd-main-b.manifest",
                [&[0xEF, 0xBB, 0xBF][..], pod.as_bytes()].concat(),
            ),
        ),
        (
            "UTF-16 with its byte-order mark",
            file("etcd-main-b.manifest", utf16),
        ),
        (
            "a duplicate key",
            file(
                "etcd-main-b.manifest",
                pod.replacen("kind: Pod", "kind: Pod\nkind: Pod", 1)
                    .into_bytes(),
            ),
        ),
        (
            "CRLF line ends",
            file(
                "etcd-main-b.manifest",
                pod.replace('\n', "\r\n").into_bytes(),
            ),
        ),
        (
            "an absolute symlink (read under --root)",
            Box::new(move |root: &TestRoot| {
                let target = root.join("/srv/etcd-manager/etcd-main.manifest");
                std::fs::create_dir_all(target.parent().unwrap()).unwrap();
                std::fs::write(&target, kops_pod()).unwrap();
                std::os::unix::fs::symlink(
                    "/srv/etcd-manager/etcd-main.manifest",
                    root.join(&format!("{MANIFESTS}/etcd-main-b.manifest")),
                )
                .unwrap();
            }),
        ),
    ]
}

/// Empties the manifest directory (etcd-manager's files and everything protokube rendered).
fn clear_manifests(root: &TestRoot) {
    let dir = root.join(MANIFESTS);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
}

/// Nothing of etcd was touched: no mutating EC2 call, no etcd pod, no etcd name, the volumes
/// mounted as before with etcd-manager's data.
fn assert_etcd_left(bed: &Bed, shape: &str, mounts_before: &[Vec<String>]) {
    let operations = bed.moto().operations();
    for mutating in MUTATING_EC2 {
        assert!(
            !operations.iter().any(|o| o == mutating),
            "{shape}: {mutating} in {operations:?}"
        );
    }
    let files = manifest_names(&bed.root);
    assert!(
        !files
            .iter()
            .any(|f| f == "etcd.manifest" || f == "etcd-events.manifest"),
        "{shape}: {files:?}"
    );
    let etcd_names: Vec<String> = zone(bed)
        .into_keys()
        .map(|(name, _)| name)
        .filter(|name| name.starts_with("etcd-"))
        .collect();
    assert!(etcd_names.is_empty(), "{shape}: {etcd_names:?}");
    let mounts: Vec<Vec<String>> = bed.disks.iter().map(LoopDevice::mounted_at).collect();
    assert_eq!(mounts, mounts_before, "{shape}");
    for volume in &bed.volumes {
        let data = std::fs::read_to_string(bed.root.mountpoint(volume).join("etcd-manager-data"));
        assert_eq!(data.unwrap(), *volume, "{shape}");
        assert!(
            !bed.root.mountpoint(volume).join("k8s.io").exists(),
            "{shape}"
        );
    }
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn etcd_manager_in_every_shape_kubelet_runs_keeps_its_volumes_pods_and_names() {
    let bed = Bed::etcd_manager_master();
    let mounts_before: Vec<Vec<String>> = bed.disks.iter().map(LoopDevice::mounted_at).collect();
    for (shape, write) in shapes_kubelet_runs() {
        clear_manifests(&bed.root);
        write(&bed.root);
        bed.moto().reset_operations();
        for (command, extra, code) in [
            ("sync", &[][..], 0),
            ("sync", &["--verify-interval", "0"][..], 0),
            ("reset", &["--detach"][..], 0),
        ] {
            let out = bed.run(command, extra);
            assert_eq!(out.code, code, "{shape}: {command}: {out:#?}");
            assert_etcd_left(&bed, shape, &mounts_before);
        }
        // reset removed the kube-* pods it renders; etcd-manager's file stays.
        assert!(
            manifest_names(&bed.root).contains(&"etcd-main-b.manifest".to_owned()),
            "{shape}"
        );
        std::fs::remove_file(bed.root.join("/var/lib/protokube/retired")).ok();
    }
    // A file kubelet may run that cannot be read: the owner is not known, every etcd step
    // stands aside and the run fails naming the file; the rest (kube-* pods) is done.
    clear_manifests(&bed.root);
    std::fs::write(
        bed.root.join(&format!("{MANIFESTS}/etcd-main-b.manifest")),
        [0xC3, 0x28, 0x00, 0xFF],
    )
    .unwrap();
    bed.moto().reset_operations();
    let out = bed.run("sync", &[]);
    assert_eq!(out.code, 1, "{out:#?}");
    let errors = out.error_lines();
    assert_eq!(errors.len(), 1, "{out:#?}");
    assert!(
        errors[0].contains("etcd-main-b.manifest") && errors[0].contains("nothing for etcd"),
        "{errors:?}"
    );
    assert!(manifest_names(&bed.root).contains(&"kube-apiserver.manifest".to_owned()));
    assert_etcd_left(&bed, "unreadable", &mounts_before);
    let out = bed.run("reset", &["--detach"]);
    assert_eq!(out.code, 1, "{out:#?}");
    assert!(
        out.error_lines()[0].contains("nothing was reset"),
        "{out:#?}"
    );
    assert_etcd_left(&bed, "unreadable", &mounts_before);
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn what_kubelet_would_not_run_leaves_etcd_to_protokube() {
    let bed = Bed::etcd_manager_master();
    let pod = kops_pod();
    let list = format!(
        "apiVersion: v1\nkind: List\nitems:\n- {}",
        pod.replace('\n', "\n  ")
    );
    for (shape, write) in [
        (
            "a dot file",
            Box::new(|root: &TestRoot| {
                std::fs::write(root.join(&format!("{MANIFESTS}/.etcd-main.manifest")), &pod)
                    .unwrap();
            }) as Box<dyn Fn(&TestRoot)>,
        ),
        (
            "a directory",
            Box::new(|root: &TestRoot| {
                let dir = root.join(&format!("{MANIFESTS}/etcd-main.manifest"));
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(dir.join("pod.yaml"), &pod).unwrap();
            }),
        ),
        (
            "kind: List",
            Box::new(|root: &TestRoot| {
                std::fs::write(root.join(&format!("{MANIFESTS}/etcd-main.manifest")), &list)
                    .unwrap();
            }),
        ),
    ] {
        clear_manifests(&bed.root);
        write(&bed.root);
        // The dry run is the run's plan: protokube's own etcd pods, no word of etcd-manager.
        let out = bed.run("sync", &["--dry-run"]);
        assert_eq!(out.code, 0, "{shape}: {out:#?}");
        let report = out.report();
        assert!(
            report
                .changes
                .iter()
                .any(|c| c.target.ends_with("/etcd.manifest") && c.action == "create"),
            "{shape}: {report:#?}"
        );
        assert!(
            !report.warnings.iter().any(|w| w.contains("etcd-manager")),
            "{shape}: {report:#?}"
        );
    }
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn protokube_keeps_its_own_etcd_under_a_registry_path_named_etcd_manager() {
    let bed = Bed::new(NodeKind::HaMaster);
    let mut spec: yaml_serde::Value =
        yaml_serde::from_str(&std::fs::read_to_string(bed.spec()).unwrap()).unwrap();
    for cluster in spec["spec"]["etcdClusters"].as_sequence_mut().unwrap() {
        cluster["image"] = "registry.example.com/etcd-manager-mirror/etcd:3.5.13-0".into();
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("spec.yaml");
    std::fs::write(&path, yaml_serde::to_string(&spec).unwrap()).unwrap();
    let first = bed.run_with_spec("sync", &path, &[]);
    assert_eq!(first.code, 0, "{first:#?}");
    assert!(manifest_names(&bed.root).contains(&"etcd.manifest".to_owned()));
    // Its own pods, whatever image they run, are never taken for etcd-manager's.
    for _ in 0..2 {
        let again = bed.run_with_spec("sync", &path, &["--verify-interval", "0"]);
        assert_eq!(again.code, 0, "{again:#?}");
        let report = again.report();
        assert!(!report.changed, "{report:#?}");
        assert!(report.warnings.is_empty(), "{report:#?}");
    }
    assert!(zone(&bed).contains_key(&(format!("etcd-a.internal.{HA}"), "A".to_owned())));
    let reset = bed.run_with_spec("reset", &path, &[]);
    assert_eq!(reset.code, 0, "{reset:#?}");
    assert!(!manifest_names(&bed.root).contains(&"etcd.manifest".to_owned()));
}

/// A kubeconfig whose user runs `command` as its credential plugin.
fn exec_kubeconfig(root: &TestRoot, certs: &Certs, server: &str, command: &str) {
    let ca = std::fs::read(certs.dir.path().join("ca.crt")).unwrap();
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: local\n  cluster:\n    server: {server}\n    \
         certificate-authority-data: {}\ncontexts:\n- name: c\n  context: {{cluster: local, user: kops}}\n\
         current-context: c\nusers:\n- name: kops\n  user:\n    exec:\n      apiVersion: \
         client.authentication.k8s.io/v1\n      command: {command}\n      args: [token]\n      \
         interactiveMode: Never\n",
        base64(&ca)
    );
    let path = root.join("/var/lib/kops/kubeconfig");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn base64(bytes: &[u8]) -> String {
    use std::io::Write as _;
    let mut child = std::process::Command::new("base64")
        .arg("-w0")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(bytes).unwrap();
    String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap()
}

fn label_node(root: &TestRoot, timeout: &str) -> (RunOutput, Duration) {
    let started = Instant::now();
    let out = Protokube::new()
        .env("KUBECONFIG", "/var/lib/kops/kubeconfig")
        .args([
            "label-node",
            "--node-name",
            "n1",
            "-o",
            "json",
            "--timeout",
            timeout,
        ])
        .arg_path("--root", root.path())
        .run();
    (out, started.elapsed())
}

#[test]
fn a_credential_plugin_runs_under_the_root_and_its_certificate_authenticates() {
    let certs = Certs::new();
    let api = KubeApi::start(&certs);
    api.register("n1", &[]);
    let root = TestRoot::new();
    let credential = serde_json::json!({
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {
            "clientCertificateData":
                std::fs::read_to_string(certs.dir.path().join("client.crt")).unwrap(),
            "clientKeyData": std::fs::read_to_string(certs.dir.path().join("client.key")).unwrap(),
        }
    });
    let printed = root.join("/etc/kops/credential.json");
    std::fs::create_dir_all(printed.parent().unwrap()).unwrap();
    std::fs::write(&printed, credential.to_string()).unwrap();
    // By path, and by name on PATH: found under --root only (nothing of the sort on this host).
    for command in ["/opt/kops/bin/kops-credential", "kops-credential"] {
        script(
            &root,
            "/opt/kops/bin/kops-credential",
            &format!(
                "[ \"$1\" = token ] || exit 9\ncase \"$KUBERNETES_EXEC_INFO\" in *ExecCredential*) ;; \
                 *) exit 8;; esac\ncat {}",
                printed.display()
            ),
        );
        script(
            &root,
            "/usr/local/bin/kops-credential",
            &format!(
                "exec {} \"$@\"",
                root.join("/opt/kops/bin/kops-credential").display()
            ),
        );
        exec_kubeconfig(
            &root,
            &certs,
            &format!("https://127.0.0.1:{}", api.port),
            command,
        );
        let (out, _) = label_node(&root, "20s");
        assert_eq!(out.code, 0, "{command}: {out:#?}");
    }
    let patches = api.patches();
    assert_eq!(patches.len(), 1, "{patches:#?}");
    assert_eq!(patches[0]["subject"]["commonName"], "kops");
}

#[test]
fn a_sleeping_credential_plugin_ends_with_the_run_at_its_deadline() {
    let certs = Certs::new();
    let root = TestRoot::new();
    let pids = tempfile::tempdir().unwrap();
    let (plugin_pid, child_pid) = (pids.path().join("plugin"), pids.path().join("child"));
    script(
        &root,
        "/usr/local/bin/slow-credential",
        &format!(
            "echo $$ > {}\nsleep 300 &\necho $! > {}\nwait",
            plugin_pid.display(),
            child_pid.display()
        ),
    );
    exec_kubeconfig(
        &root,
        &certs,
        "https://127.0.0.1:9",
        "/usr/local/bin/slow-credential",
    );
    let (out, took) = label_node(&root, "3s");
    assert_eq!(out.code, 75, "{out:#?}");
    assert!(took < Duration::from_secs(10), "the run took {took:?}");
    assert!(
        out.error_lines()[0].contains("credential plugin"),
        "{out:#?}"
    );
    assert_gone(&plugin_pid);
    assert_gone(&child_pid);
    assert_lock_free(&root);
}

/// An HTTP server that answers every request with a body it sends one byte every half second.
fn dripping_server() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                use std::io::{Read as _, Write as _};
                let mut stream = stream;
                let mut request = [0u8; 4096];
                let _ = stream.read(&mut request);
                let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                            Content-Length: 100000\r\n\r\n{";
                if stream.write_all(head.as_bytes()).is_err() {
                    return;
                }
                for _ in 0..1000 {
                    std::thread::sleep(Duration::from_millis(500));
                    if stream.write_all(b" ").is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

#[test]
fn a_dripping_api_server_ends_with_the_run_at_its_deadline() {
    let root = TestRoot::new();
    let port = dripping_server();
    let path = root.join("/var/lib/kops/kubeconfig");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: l\n  cluster: {{server: \
             http://127.0.0.1:{port}}}\ncontexts:\n- name: c\n  context: {{cluster: l, user: u}}\n\
             current-context: c\nusers:\n- name: u\n  user: {{token: t}}\n"
        ),
    )
    .unwrap();
    let (out, took) = label_node(&root, "3s");
    assert_eq!(out.code, 75, "{out:#?}");
    assert!(took < Duration::from_secs(10), "the run took {took:?}");
    assert!(out.error_lines()[0].contains("--timeout"), "{out:#?}");
    assert_lock_free(&root);
}

/// `apply-channels` with the API answering (channels wait for it).
fn apply_channels(root: &TestRoot, timeout: &str) -> (RunOutput, Duration) {
    let certs = Certs::new();
    let api = KubeApi::start(&certs);
    certs.write_kubeconfig(root, api.port, true);
    let started = Instant::now();
    let out = Protokube::new()
        .env("KUBECONFIG", "/var/lib/kops/kubeconfig")
        .args([
            "apply-channels",
            "--channels",
            "s3://b/c/addons/bootstrap-channel.yaml",
        ])
        .args(["-o", "json", "--timeout", timeout])
        .arg_path("--root", root.path())
        .run();
    (out, started.elapsed())
}

#[test]
fn a_forking_channels_tool_is_killed_with_its_children_at_the_deadline() {
    let root = TestRoot::new();
    let pids = tempfile::tempdir().unwrap();
    let (tool_pid, child_pid) = (pids.path().join("tool"), pids.path().join("child"));
    script(
        &root,
        "/opt/kops/bin/channels",
        &format!(
            "echo $$ > {}\nsleep 300 &\necho $! > {}\nsleep 300",
            tool_pid.display(),
            child_pid.display()
        ),
    );
    let (out, took) = apply_channels(&root, "3s");
    assert_eq!(out.code, 75, "{out:#?}");
    assert!(took < Duration::from_secs(10), "the run took {took:?}");
    assert_gone(&tool_pid);
    assert_gone(&child_pid);
    assert_lock_free(&root);
}

#[test]
fn a_tool_that_exits_but_leaves_a_child_holding_its_output_has_finished() {
    let root = TestRoot::new();
    let pids = tempfile::tempdir().unwrap();
    let child_pid = pids.path().join("child");
    script(
        &root,
        "/opt/kops/bin/channels",
        &format!(
            "sleep 300 &\necho $! > {}\necho 'No update required'\nexit 0",
            child_pid.display()
        ),
    );
    let (out, took) = apply_channels(&root, "60s");
    assert_eq!(out.code, 0, "{out:#?}");
    assert!(took < Duration::from_secs(10), "the run took {took:?}");
    assert_eq!(out.report().changes[0].action, "unchanged", "{out:#?}");
    assert_gone(&child_pid);
}

#[test]
fn a_tool_s_output_is_kept_to_its_end_only() {
    let root = TestRoot::new();
    script(
        &root,
        "/opt/kops/bin/channels",
        "head -c 400000000 /dev/zero | tr '\\0' x\necho\necho 'No update required'",
    );
    let certs = Certs::new();
    let api = KubeApi::start(&certs);
    certs.write_kubeconfig(&root, api.port, true);
    let dir = tempfile::tempdir().unwrap();
    let mut child = Protokube::new()
        .env("KUBECONFIG", "/var/lib/kops/kubeconfig")
        .args([
            "apply-channels",
            "--channels",
            "s3://b/c/addons/bootstrap-channel.yaml",
        ])
        .args(["-o", "json", "--timeout", "2m"])
        .arg_path("--root", root.path())
        .spawn_to(
            std::fs::File::create(dir.path().join("out")).unwrap(),
            std::fs::File::create(dir.path().join("err")).unwrap(),
        );
    // The peak memory the run reached, read while it runs.
    let mut peak_kib = 0_u64;
    let status = loop {
        if let Ok(status_text) = std::fs::read_to_string(format!("/proc/{}/status", child.id())) {
            if let Some(kib) = status_text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches(" kB").parse::<u64>().ok())
            {
                peak_kib = peak_kib.max(kib);
            }
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = std::fs::read_to_string(dir.path().join("out")).unwrap();
    assert!(status.success(), "{stdout}");
    assert!(stdout.contains("\"unchanged\""), "{stdout}");
    assert!(peak_kib > 0);
    assert!(
        peak_kib < 100 * 1024,
        "400 MB of output took the run to {peak_kib} KiB"
    );
}

#[test]
fn a_timeout_under_one_second_is_a_usage_error_that_changes_nothing() {
    for timeout in ["0", "0s", "1ms", "999ms"] {
        let root = TestRoot::new();
        let out = Protokube::new()
            .args([
                "sync",
                "--cluster-id",
                "c.example.com",
                "--timeout",
                timeout,
            ])
            .arg_path("--root", root.path())
            .run();
        assert_eq!(out.code, 64, "{timeout}: {out:#?}");
        let errors = out.error_lines();
        assert_eq!(errors.len(), 1, "{out:#?}");
        assert!(errors[0].contains("--timeout"), "{errors:?}");
        assert!(std::fs::read_dir(root.path()).unwrap().next().is_none());
    }
    let root = TestRoot::new();
    let out = Protokube::new()
        .env("PROTOKUBE_TIMEOUT", "500ms")
        .args(["sync", "--cluster-id", "c.example.com"])
        .arg_path("--root", root.path())
        .run();
    assert_eq!(out.code, 64, "{out:#?}");
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_format_record_that_does_not_parse_permits_nothing() {
    let node = Bed::new(NodeKind::Bare);
    let records: [&dyn Fn(&str) -> String; 5] = [
        &|v| {
            format!("{{\"volume_id\":\"{v}\",\"device\":\"/dev/xvdu\",\"uuid\":\"1b4e28ba-2fa1-41d2-883f-0016d3cca427\",\"formatted\":\"true\"}}\n")
        },
        &|_| {
            "{\"volume_id\":\"vol-0123456789abcdef0\",\"device\":\"/dev/xvdu\",\"uuid\":\"1b4e28ba-2fa1-41d2-883f-0016d3cca427\"}\n".to_owned()
        },
        &|_| String::new(),
        &|v| {
            format!("{{\"volume_id\":\"{v}\",\"device\":\"/dev/xvdu\",\"uuid\":\"1b4e28ba-2fa1-41d2-883f-0016d3cca427\"}}\ntrailing")
        },
        &|_| "/dev/xvdu\n".to_owned(),
    ];
    for (i, record) in records.iter().enumerate() {
        // Data no probe recognises: only a valid record of protokube's own mkfs could license
        // a format of it.
        let disk = LoopDevice::blank(64);
        disk.write_at(1 << 20, &[0x5a; 4096]);
        let cluster = format!("r{i}.example.com");
        let volume = node.etcd_volume(&cluster, &[("main", "a/a")]);
        node.root.link_by_id(&volume, &disk.path);
        let path = node
            .root
            .join(&format!("/var/lib/protokube/formatting/{volume}"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, record(&volume)).unwrap();
        let before = disk.digest();
        let out = node.mount(&cluster, &[]);
        assert_eq!(out.code, 1, "{i}: {out:#?}");
        let errors = out.error_lines();
        assert!(
            errors[0].contains("permits nothing") && errors[0].contains(&volume),
            "{i}: {errors:?}"
        );
        assert_eq!(disk.digest(), before, "{i}: the device was written");
        assert!(disk.fs_type().is_none());
        assert!(!node
            .volume_tags(&volume)
            .contains_key("k8s.io/protokube/formatted"));
        node.detach(&volume);
    }
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_first_miss_dated_in_the_future_is_corrected_on_the_next_full_check() {
    let node = Bed::new(NodeKind::HaMaster);
    assert_eq!(node.run("sync", &[]).code, 0);
    let old = format!("api.{HA}");
    // A spec with another public name: the old one is missing, and waited out.
    let dir = tempfile::tempdir().unwrap();
    let renamed = support::spec_with(
        dir.path(),
        "ha.yaml",
        &["spec", "masterPublicName"],
        "api2.ha.example.com".into(),
    );
    assert_eq!(node.run_with_spec("sync", &renamed, &[]).code, 0);
    // The clock was ahead when the miss was first seen: the record says 2099.
    let state_path = node.root.join("/var/lib/protokube/state.json");
    let mut state: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&state_path).unwrap()).unwrap();
    assert!(
        state["missing_names"][&old]["since"].is_string(),
        "{state:#}"
    );
    state["missing_names"][&old]["since"] = "2099-01-01T00:00:00Z".into();
    std::fs::write(&state_path, serde_json::to_vec_pretty(&state).unwrap()).unwrap();
    // The next full check restarts the wait now: neither deleted at once nor kept until 2099.
    let out = node.run_with_spec("sync", &renamed, &["--verify-interval", "0"]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert!(!out.report().has("delete", &old), "{out:#?}");
    let state: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&state_path).unwrap()).unwrap();
    let since = state["missing_names"][&old]["since"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        since.starts_with("20") && !since.starts_with("2099"),
        "{since}"
    );
    // Missing since a time that has come, for the interval (0): deleted on the check after.
    let out = node.run_with_spec("sync", &renamed, &["--verify-interval", "0"]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert!(out.report().has("delete", &old), "{out:#?}");
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn reset_with_something_below_the_volume_changes_nothing() {
    let node = Bed::new(NodeKind::HaMaster);
    assert_eq!(node.run("sync", &[]).code, 0);
    let manifests = manifest_names(&node.root);
    let mountpoint = node.root.mountpoint(&node.volumes[0]);
    let mounted = node.disks[0].mounted_at();
    // A mount below the volume's mount point.
    let below = mountpoint.join("scratch");
    std::fs::create_dir_all(&below).unwrap();
    support::run("mount", &["-t", "tmpfs", "tmpfs", below.to_str().unwrap()]);
    for args in [&["--dry-run"][..], &[][..], &["--detach"][..]] {
        let out = node.run("reset", args);
        assert_eq!(out.code, 75, "{args:?}: {out:#?}");
        let error = out.error_lines()[0].to_owned();
        assert!(
            error.contains("a mount below it") && error.contains("scratch"),
            "{error}"
        );
        assert!(error.contains("nothing was changed"), "{error}");
        assert_eq!(manifest_names(&node.root), manifests);
        assert_eq!(node.disks[0].mounted_at(), mounted);
    }
    support::run("umount", &[below.to_str().unwrap()]);
    // A loop device backed by a file on the volume.
    let image = mountpoint.join("disk.img");
    std::fs::write(&image, vec![0u8; 1 << 20]).unwrap();
    let loop_device = support::run("losetup", &["--find", "--show", image.to_str().unwrap()]);
    let loop_device = loop_device.trim().to_owned();
    let out = node.run("reset", &[]);
    support::run("losetup", &["--detach", &loop_device]);
    assert_eq!(out.code, 75, "{out:#?}");
    assert!(out.error_lines()[0].contains("loop device"), "{out:#?}");
    assert_eq!(manifest_names(&node.root), manifests);
    assert_eq!(node.disks[0].mounted_at(), mounted);
    // Released: reset goes through.
    std::fs::remove_file(&image).unwrap();
    let out = node.run("reset", &[]);
    assert_eq!(out.code, 0, "{out:#?}");
}

/// `label-node` or the RBAC objects against an API server whose first writes answer 503.
#[test]
fn a_kubernetes_api_answering_503_to_its_first_writes_is_asked_again() {
    const NODE: &str = "master.hostname.invalid";
    let root = TestRoot::new();
    let certs = Certs::new();
    let api = KubeApi::start(&certs);
    certs.write_kubeconfig(&root, api.port, true);
    api.register(NODE, &[("kubernetes.io/hostname", NODE)]);
    api.fail_writes(2);
    let out = Protokube::new()
        .env("KUBECONFIG", "/var/lib/kops/kubeconfig")
        .args(["label-node", "--node-name", NODE, "-o", "json"])
        .args(["--timeout", "10s"])
        .arg_path("--root", root.path())
        .run();
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(
        api.labels(NODE)
            .get("node-role.kubernetes.io/control-plane"),
        Some(&String::new())
    );
    assert_eq!(api.patches().len(), 3, "two refused, one made");

    // kOps ≤ 1.22's bootstrap RBAC objects, created through writes that fail at first.
    let world = support::kops::World::new("minimal.example.com");
    let (args, _) = support::kops::unit_line("1.22-host");
    let root = TestRoot::new();
    let api = KubeApi::start(&certs);
    certs.write_kubeconfig(&root, api.port, true);
    api.register(NODE, &[("kubernetes.io/hostname", NODE)]);
    api.fail_writes(2);
    let systemctl = support::kops::recording_systemctl();
    let env = [("KUBECONFIG", "/var/lib/kops/kubeconfig".to_owned())];
    let run = world.run(&args, &root, &env, &systemctl);
    assert_eq!(run.exit_on_sigterm, Some(0), "{}", run.stderr);
    let objects = api.objects();
    for key in ["kube-system/kube-dns", "kube-system/kube-proxy"] {
        assert!(
            objects["serviceaccounts"].get(key).is_some(),
            "{key}: {objects}"
        );
    }
    assert!(
        objects["clusterrolebindings"]
            .get("/kubeadm:node-proxier")
            .is_some(),
        "{objects}"
    );
}
