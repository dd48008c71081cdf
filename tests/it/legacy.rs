//! The old daemon's invocation (docs/commands.md): kOps' nodeup starts protokube with no subcommand and
//! its own flags (`tests/it/support` has the ExecStart line of nodeup's unit). protokube runs
//! `sync` and keeps running; the flags it has no use for are named once; SIGTERM ends it cleanly
//! between runs. A kOps ≥ 1.23 unit never makes etcd protokube's (kOps' protokube had no etcd
//! code from 1.23); a kOps ≤ 1.22 unit with `--manage-etcd=true` does the old protokube's etcd
//! job without a spec (volumes, etcd pods, DNS); with `PROTOKUBE_CLUSTER_SPEC` the whole `sync`.

use crate::support;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use support::bed::{Bed, NodeKind, REGION};
use support::block::LoopDevice;
use support::{fixture, seed, Protokube, NODEUP_EXEC_START};

const CLUSTER: &str = "minimal.example.com";

/// nodeup's flags (kOps 1.30), the zone id pointed at the emulator's zone.
fn nodeup_args(zone_id: &str) -> Vec<String> {
    NODEUP_EXEC_START
        .split_whitespace()
        .skip(1)
        .map(|a| a.replace("Z1AFAKE1ZON3YO", zone_id))
        .collect()
}

/// kOps 1.22's unit for legacy etcd (`--manage-etcd=true`: protokube's own etcd), as its nodeup
/// golden writes it (`tests/fixtures/kops/protokube-units/1.22-host.args`), for a cluster named
/// `minimal.example.com` with no etcd backups; the zone id pointed at the emulator's zone.
fn kops_1_22_legacy_etcd_args(zone_id: &str) -> Vec<String> {
    let (args, _) = support::kops::unit_line("1.22-host");
    args.into_iter()
        .filter(|a| !a.starts_with("--etcd-backup-store="))
        .map(|a| a.replace("Z1AFAKE1ZON3YO", zone_id))
        .collect()
}

/// Waits until `ready` holds (30 s at most), failing with `what` and the daemon's stderr.
fn wait_for(what: &str, stderr: &Path, ready: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ready() {
        assert!(
            Instant::now() < deadline,
            "{what} never happened; stderr:\n{}",
            std::fs::read_to_string(stderr).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A master of `minimal.example.com` with its `main` volume and the cluster's hosted zone.
fn master(disk: &LoopDevice) -> (Bed, String, String) {
    let node = Bed::new(NodeKind::Bare);
    let volume = node.etcd_volume(CLUSTER, &[("main", "us-east-1a/us-east-1a")]);
    node.root.link_by_id(&volume, &disk.path);
    // The instance is the cluster's master, as kOps tags it.
    node.tag_as_master(CLUSTER);
    let zone = support::runtime()
        .block_on(async { seed::hosted_zone(&node.moto().route53().await, "example.com").await });
    (node, volume, zone)
}

/// nodeup's unit running on `node`: the daemon started with `args` and the settings file's
/// `env` (beside `PROTOKUBE_ROOT`), its standard output and error kept in files.
struct Unit {
    daemon: support::Guard,
    out: PathBuf,
    err: PathBuf,
    _logs: tempfile::TempDir,
}

fn start_unit(node: &Bed, env: &[(&str, &OsStr)], args: Vec<String>) -> Unit {
    let logs = tempfile::tempdir().unwrap();
    let (out, err) = (logs.path().join("stdout"), logs.path().join("stderr"));
    let mut protokube = Protokube::new()
        .moto(node.moto())
        .imds(node.imds())
        .env("PROTOKUBE_ROOT", node.root.path());
    for (key, value) in env {
        protokube = protokube.env(key, value);
    }
    let daemon = protokube.args(args).spawn_to(
        std::fs::File::create(&out).unwrap(),
        std::fs::File::create(&err).unwrap(),
    );
    Unit {
        daemon,
        out,
        err,
        _logs: logs,
    }
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn nodeups_exec_start_runs_sync_until_sigterm() {
    let disk = LoopDevice::blank(64);
    let (node, volume, zone) = master(&disk);
    node.moto().reset_operations();
    let Unit {
        mut daemon,
        out,
        err,
        _logs,
    } = start_unit(
        &node,
        &[("PROTOKUBE_OUTPUT", OsStr::new("json"))],
        nodeup_args(&zone),
    );
    // The first sync of kOps 1.30's unit: etcd is etcd-manager's (kOps' protokube had no etcd
    // code from 1.23), said once; no volume touched, no etcd pod, not the kube-* pods (nodeup's).
    wait_for("the first report", &err, || {
        std::fs::read_to_string(&out).is_ok_and(|t| t.contains("etcd is not protokube's"))
    });
    let manifests = node.root.join("/etc/kubernetes/manifests");
    assert!(!manifests.join("etcd.manifest").exists());
    assert!(!manifests.join("kube-apiserver.manifest").exists());
    assert!(disk.mounted_at().is_empty(), "{volume} was mounted");
    assert!(
        !node
            .moto()
            .operations()
            .iter()
            .any(|o| o.contains("Volume")),
        "asked for volumes"
    );
    // Still running between runs; SIGTERM ends it at once, cleanly.
    std::thread::sleep(Duration::from_millis(500));
    assert!(daemon.try_wait().unwrap().is_none(), "the daemon exited");
    let exit = support::stop_with_sigterm(&mut daemon, Duration::from_secs(10));
    assert_eq!(exit, Some(0));
    let stderr = std::fs::read_to_string(&err).unwrap();
    // Every flag of kOps 1.30's unit means something here (`--containerized=false`: the host's
    // own root): none is named as ignored; `--v=4` is debug logging.
    assert!(
        !stderr.contains("flags of the old protokube daemon"),
        "{stderr}"
    );
    // The node is labelled once the API answers (no kubeconfig here yet: a warning, and the
    // next minute tries again).
    assert!(stderr.contains("kubeconfig"), "{stderr}");
    assert!(stderr.contains("DEBUG"), "--v=4 gives debug logs: {stderr}");
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_kops_1_22_legacy_etcd_unit_does_the_old_protokubes_etcd_job() {
    let disk = LoopDevice::blank(64);
    let (node, volume, zone) = master(&disk);
    let Unit {
        mut daemon,
        out,
        err,
        _logs,
    } = start_unit(&node, &[], kops_1_22_legacy_etcd_args(&zone));
    // The first sync: the volume mounted, its etcd pod (the unit's --etcd-image: no spec), its
    // name in Route53; not the kube-* pods, which stay nodeup's.
    let manifests = node.root.join("/etc/kubernetes/manifests");
    wait_for("the etcd manifest", &err, || {
        manifests.join("etcd.manifest").exists()
    });
    wait_for("the first report", &err, || {
        std::fs::read_to_string(&out).is_ok_and(|t| t.contains("etcd-us-east-1a.internal"))
    });
    let manifest = std::fs::read_to_string(manifests.join("etcd.manifest")).unwrap();
    assert!(manifest.contains("k8s.gcr.io/etcd:3.4.3"), "{manifest}");
    assert!(!manifests.join("kube-apiserver.manifest").exists());
    assert!(disk.mounted_at().len() == 1, "{volume} is mounted");
    let records = support::runtime()
        .block_on(async { seed::zone_records(&node.moto().route53().await, &zone).await });
    let name = format!("etcd-us-east-1a.internal.{CLUSTER}");
    assert_eq!(
        records[&(name, "A".to_owned())].1,
        [support::runtime()
            .block_on(async {
                seed::instance_addresses(&node.moto().ec2(REGION).await, &node.instance_id).await
            })
            .0],
        "{records:?}"
    );
    std::thread::sleep(Duration::from_millis(500));
    assert!(daemon.try_wait().unwrap().is_none(), "the daemon exited");
    let exit = support::stop_with_sigterm(&mut daemon, Duration::from_secs(10));
    assert_eq!(exit, Some(0));
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn with_a_spec_from_the_environment_file_it_runs_the_whole_sync() {
    let disk = LoopDevice::blank(64);
    let (node, _volume, zone) = master(&disk);
    let spec = fixture("cluster-completed/minimal-1.28.yaml");
    let Unit {
        mut daemon,
        err,
        _logs,
        ..
    } = start_unit(
        &node,
        &[("PROTOKUBE_CLUSTER_SPEC", spec.as_os_str())],
        kops_1_22_legacy_etcd_args(&zone),
    );
    let manifests = node.root.join("/etc/kubernetes/manifests");
    wait_for("the control plane's manifests", &err, || {
        [
            "etcd",
            "kube-apiserver",
            "kube-controller-manager",
            "kube-scheduler",
            "kube-proxy",
        ]
        .iter()
        .all(|m| manifests.join(format!("{m}.manifest")).exists())
    });
    // The unit's --etcd-image wins over the spec's version, as flags do.
    let manifest = std::fs::read_to_string(manifests.join("etcd.manifest")).unwrap();
    assert!(manifest.contains("k8s.gcr.io/etcd:3.4.3"), "{manifest}");
    let _ = daemon.kill();
    let _ = daemon.wait();
}

#[test]
fn a_cloud_protokube_does_not_run_on_is_a_usage_error() {
    let out = Protokube::new()
        .args([
            "--cloud=openstack",
            "--master=true",
            "--cluster-id",
            CLUSTER,
        ])
        .run();
    assert_eq!(out.code, 64, "{out:#?}");
    assert!(out.error_lines()[0].contains("--cloud"), "{out:#?}");
    let out = Protokube::new()
        .args(["--etcd-image", "x", "sync", "--cluster-id", CLUSTER])
        .run();
    assert_eq!(out.code, 64, "{out:#?}");
}

/// On a node where kOps' etcd-manager runs (its static pods in the manifest directory), the
/// etcd volumes are its own: `sync` leaves them (and etcd) alone with a warning and still does
/// the rest; `mount` refuses. Nothing is attached or formatted.
#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn where_etcd_manager_runs_the_volumes_are_left_to_it() {
    let disk = LoopDevice::blank(64);
    let (node, volume, zone) = master(&disk);
    let manifests = node.root.join("/etc/kubernetes/manifests");
    std::fs::create_dir_all(&manifests).unwrap();
    std::fs::copy(
        fixture("etcd-manager/etcd-main-master-us-test-1a.manifest"),
        manifests.join("etcd-manager-main.manifest"),
    )
    .unwrap();
    let sync = Protokube::new()
        .moto(node.moto())
        .imds(node.imds())
        .args(["sync", "--master", "--cluster-id", CLUSTER, "-o", "json"])
        .args(["--zone", &format!("*/{zone}")])
        .arg_path("--root", node.root.path())
        .arg_path(
            "--cluster-spec",
            &fixture("cluster-completed/minimal-1.28.yaml"),
        )
        .run();
    assert_eq!(sync.code, 0, "{sync:#?}");
    assert!(manifests.join("kube-apiserver.manifest").exists());
    // etcd-manager owning etcd is a kOps master's normal state: said as a fact, not a warning.
    let report = sync.report();
    assert!(report.warnings.is_empty(), "{report:#?}");
    let info = report.info.join("\n");
    assert!(info.contains("etcd-manager-main.manifest"), "{info}");
    assert!(
        node.attachments(&volume).is_empty(),
        "the volume was attached"
    );
    assert!(disk.fs_type().is_none());
    assert!(!manifests.join("etcd.manifest").exists());
    let mount = node.mount(CLUSTER, &[]);
    assert_eq!(mount.code, 1, "{mount:#?}");
    assert!(
        mount.error_lines()[0].contains("etcd-manager"),
        "{mount:#?}"
    );
    assert!(node.attachments(&volume).is_empty());
}
