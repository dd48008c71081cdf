//! `sync` end to end: a cold bring-up of a master against the local AWS emulator with real loop
//! devices, a full check, a converged rerun (one AWS call, no writes), dry run, the lock, and a
//! worker.

use crate::support;

use std::path::Path;

use support::bed::{Bed, NodeKind};
use support::block::TestRoot;
use support::{fixture, seed, Protokube};

fn mtimes(dir: &Path) -> Vec<(String, std::time::SystemTime)> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::symlink_metadata(e.path())
                    .unwrap()
                    .modified()
                    .unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn cold_sync_brings_a_master_up_and_a_converged_rerun_costs_one_call_and_no_writes() {
    let node = Bed::new(NodeKind::HaMaster);
    let out = node.run("sync", &["--detailed-exitcode"]);
    assert_eq!(out.code, 2, "{out:#?}");

    // Volumes: both of this zone's members attached and mounted.
    for (volume, disk) in node.volumes.iter().zip(&node.disks) {
        assert_eq!(
            disk.mounted_at(),
            [node.root.mountpoint(volume).display().to_string()]
        );
    }
    // Manifests: etcd (on its volume, linked), etcd-events, the control plane, kube-proxy.
    let manifests = node.root.join("/etc/kubernetes/manifests");
    let names: Vec<String> = mtimes(&manifests).into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [
            "etcd-events.manifest",
            "etcd.manifest",
            "kube-apiserver.manifest",
            "kube-controller-manager.manifest",
            "kube-proxy.manifest",
            "kube-scheduler.manifest"
        ]
    );
    // DNS: this master's members point at it, computed without asking the cloud again.
    let records = support::runtime().block_on(async {
        seed::zone_records(&node.moto().route53().await, node.zone_id.as_ref().unwrap()).await
    });
    for name in [
        "etcd-a.internal.ha.example.com",
        "etcd-events-a.internal.ha.example.com",
        "api.internal.ha.example.com",
    ] {
        assert_eq!(
            records
                .get(&(name.to_owned(), "A".to_owned()))
                .map(|r| r.1.clone()),
            Some(vec![node.private_ip.clone()]),
            "{name}"
        );
    }
    assert!(!records.contains_key(&("etcd-b.internal.ha.example.com".to_owned(), "A".to_owned())));

    // The rerun checks in full (nothing verified yet): volumes and masters, and one read of
    // the cluster's names in the zone found by the first run. It changes nothing.
    node.moto().reset_operations();
    let out = node.run("sync", &["--detailed-exitcode"]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert!(!out.report().changed);
    let mut operations = node.moto().operations();
    operations.sort();
    assert_eq!(operations.len(), 3, "{operations:?}");
    assert_eq!(operations[..2], ["DescribeInstances", "DescribeVolumes"]);
    assert_eq!(node.moto().rrset_requests("GET"), 1, "{operations:?}");

    // Converged: exit 0, nothing changed, one AWS call, no file touched.
    let before_manifests = mtimes(&manifests);
    let state = node.root.join("/var/lib/protokube/state.json");
    let before_state = std::fs::metadata(&state).unwrap().modified().unwrap();
    node.moto().reset_operations();
    let out = node.run("sync", &["--detailed-exitcode"]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert!(!out.report().changed);
    assert_eq!(node.moto().operations(), ["DescribeInstances"]);
    assert_eq!(mtimes(&manifests), before_manifests);
    assert_eq!(
        std::fs::metadata(&state).unwrap().modified().unwrap(),
        before_state
    );
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn dry_run_on_a_fresh_master_changes_nothing_and_exits_2() {
    let node = Bed::new(NodeKind::HaMaster);
    let out = node.run("sync", &["--dry-run", "--detailed-exitcode"]);
    assert_eq!(out.code, 2, "{out:#?}");
    let report = out.report();
    assert_eq!(report.command, "sync");
    let kinds: Vec<&str> = report.changes.iter().map(|c| c.kind.as_str()).collect();
    for kind in ["volume", "mount", "file", "dns"] {
        assert!(kinds.contains(&kind), "no {kind} change in {kinds:?}");
    }
    for disk in &node.disks {
        assert!(disk.mounted_at().is_empty());
        assert!(disk.fs_type().is_none());
    }
    assert!(!node.root.join("/etc/kubernetes").exists());
    let records = support::runtime().block_on(async {
        seed::zone_records(&node.moto().route53().await, node.zone_id.as_ref().unwrap()).await
    });
    assert!(
        records.keys().all(|(_, t)| t == "NS" || t == "SOA"),
        "{records:?}"
    );
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_held_lock_gives_75() {
    let node = Bed::new(NodeKind::HaMaster);
    let lock = node.root.join("/run/protokube.lock");
    std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
    let file = std::fs::File::create(&lock).unwrap();
    // SAFETY: flock on a file we own.
    assert_eq!(
        unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&file), libc::LOCK_EX) },
        0
    );
    let out = node.run("sync", &["--timeout", "1s"]);
    assert_eq!(out.code, 75, "{out:#?}");
    assert!(!node.root.join("/etc/kubernetes").exists());
}

#[test]
fn a_worker_renders_kube_proxy_and_needs_no_cloud_with_route53() {
    let root = TestRoot::new();
    // No emulator and no metadata service: a worker of a Route53 cluster asks the cloud nothing.
    let out = Protokube::new()
        .args(["sync"])
        .arg_path(
            "--cluster-spec",
            &fixture("cluster-completed/minimal-1.28.yaml"),
        )
        .arg_path("--root", root.path())
        .run();
    assert_eq!(out.code, 0, "{out:#?}");
    let text = out
        .stdout
        .replace(&root.path().display().to_string(), "<root>");
    insta::assert_snapshot!("worker_sync_text_report", text);
    assert!(root
        .join("/etc/kubernetes/manifests/kube-proxy.manifest")
        .exists());
}
