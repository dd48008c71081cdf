//! protokube on Google Compute Engine (`--cloud gce`, docs/gce.md) against the GCE stand-in
//! (`support/gce.rs`): identity from the metadata server, kOps' labelled persistent disks
//! attached under their own names, formatted only when blank, labelled with the filesystem's
//! UUID, Cloud DNS names with their ownership TXT, gossip hosts blocks from the masters'
//! instance labels, races for a disk and for labels and records, the call budget of a converged
//! master, and kOps' GCE unit line. Every test ends by checking that each request was one of
//! Google's discovery documents' methods.

use crate::support;

use std::time::Duration;

use serde_json::json;
use support::block::LoopDevice;
use support::gce::{kops_gce_spec, GceNode, GceWorld};

const CLUSTER: &str = "ha.example.com";
const ZONE: &str = "us-test1-a";
const MASTER: &str = "master-us-test1-a-1xyz";

/// kOps' GCE test cluster made HA: `main` and `events` with members a, b, c in zones
/// us-test1-{a,b,c}, named `ha.example.com`; written into `dir`.
fn ha_spec(dir: &std::path::Path) -> std::path::PathBuf {
    kops_gce_spec(dir, CLUSTER, |doc| {
        for cluster in doc["spec"]["etcdClusters"].as_sequence_mut().unwrap() {
            cluster["etcdMembers"] = yaml_serde::from_str(
                "- {name: a, instanceGroup: master-us-test1-a}\n- {name: b, instanceGroup: master-us-test1-b}\n- {name: c, instanceGroup: master-us-test1-c}\n",
            )
            .unwrap();
        }
    })
}

/// An HA cluster's world: both disks of each member in its zone, master a running.
fn ha_world() -> GceWorld {
    let world = GceWorld::new();
    for (member, zone) in [
        ("a", "us-test1-a"),
        ("b", "us-test1-b"),
        ("c", "us-test1-c"),
    ] {
        for key in ["main", "events"] {
            world.add_etcd_disk(CLUSTER, zone, key, member, &["a", "b", "c"]);
        }
    }
    world.add_instance(MASTER, ZONE, "10.0.0.1", CLUSTER, "master");
    world
}

fn run(node: &GceNode<'_>, args: &[&str]) -> support::RunOutput {
    node.protokube().args(args).run()
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_cold_ha_master_claims_formats_mounts_renders_and_publishes_then_costs_one_call() {
    let world = ha_world();
    let spec_dir = tempfile::tempdir().unwrap();
    let spec = ha_spec(spec_dir.path());
    let node = world.node(MASTER);
    let disks = [
        format!("a-etcd-main-{}", CLUSTER.replace('.', "-")),
        format!("a-etcd-events-{}", CLUSTER.replace('.', "-")),
    ];
    let devices = [LoopDevice::blank(64), LoopDevice::blank(64)];
    for (disk, device) in disks.iter().zip(&devices) {
        node.link_disk(disk, &device.path);
    }
    let sync = |extra: &[&str]| {
        let mut args = vec![
            "sync",
            "--master",
            "-o",
            "json",
            "--cluster-spec",
            spec.to_str().unwrap(),
        ];
        args.extend(extra);
        run(&node, &args)
    };
    let out = sync(&[]);
    assert_eq!(out.code, 0, "{out:#?}");
    for (disk, device) in disks.iter().zip(&devices) {
        let state = world.disk(disk);
        // Attached READ_WRITE here under its own name as device name.
        assert_eq!(state["users"], json!([MASTER]), "{disk}: {state}");
        assert_eq!(state["devices"][MASTER], json!(disk));
        // Formatted, mounted, and labelled with the filesystem's UUID.
        assert_eq!(device.fs_type().as_deref(), Some("ext4"));
        assert_eq!(
            state["labels"]["k8s-io-protokube-formatted"],
            json!(device.uuid())
        );
        assert!(!device.mounted_at().is_empty(), "{disk} not mounted");
    }
    // etcd's pods, on their volumes and linked where kubelet reads them.
    let manifests = node.root.join("/etc/kubernetes/manifests");
    for pod in ["etcd.manifest", "etcd-events.manifest"] {
        assert!(manifests.join(pod).exists(), "{pod}");
    }
    // Every name in Cloud DNS with its ownership TXT.
    let owner = format!("\"heritage=protokube,protokube/cluster={CLUSTER}\"");
    for name in [
        "etcd-a.internal.ha.example.com.",
        "etcd-events-a.internal.ha.example.com.",
        "api.internal.ha.example.com.",
    ] {
        let records = world.records(name);
        assert_eq!(records["A"], ["10.0.0.1"], "{name}: {records:?}");
        assert_eq!(records["TXT"], std::slice::from_ref(&owner), "{name}");
    }
    // Converged: the full check records itself, then one Compute call and no DNS call a run.
    assert_eq!(sync(&[]).code, 0);
    let before = world.requests().len();
    let out = sync(&[]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert!(!out.report().changed, "{out:#?}");
    assert_eq!(
        world.calls_since(before, MASTER),
        ["compute.instances.aggregatedList"]
    );
    world.assert_faithful();
}

/// A master of a one-member cluster in `ZONE` with its `main` disk (linked to a blank loop
/// device); the world, the node, the device, the disk's name.
fn one_member(instance: &str) -> (GceWorld, LoopDevice, String) {
    let world = GceWorld::new();
    let disk = world.add_etcd_disk(CLUSTER, ZONE, "main", "a", &["a"]);
    world.add_instance(instance, ZONE, "10.0.0.1", CLUSTER, "master");
    (world, LoopDevice::blank(64), disk)
}

fn mount(node: &GceNode<'_>) -> support::RunOutput {
    run(
        node,
        &["mount", "--master", "--cluster-id", CLUSTER, "-o", "json"],
    )
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn two_masters_racing_for_a_disk_one_wins_and_the_other_is_not_an_error() {
    // Both ask at once: the stand-in attaches the disk when the first operation is read, and
    // the second operation fails in use.
    let (world, device, disk) = one_member("master-a");
    world.add_instance("master-b", ZONE, "10.0.0.2", CLUSTER, "master");
    let (a, b) = (world.node("master-a"), world.node("master-b"));
    a.link_disk(&disk, &device.path);
    b.link_disk(&disk, &device.path);
    let runs: Vec<_> = [&a, &b]
        .iter()
        .map(|node| {
            node.protokube()
                .args(["mount", "--master", "--cluster-id", CLUSTER, "-o", "json"])
                .spawn()
        })
        .collect();
    for mut child in runs {
        assert!(child.wait().unwrap().success());
    }
    let users = world.disk(&disk)["users"].clone();
    assert_eq!(users.as_array().map(Vec::len), Some(1), "{users}");
    assert_eq!(device.mounted_at().len(), 1);
    // A disk taken at the request, and one taken inside the operation: not this node's, no
    // error, nothing mounted.
    for when in ["at_once", "in_operation"] {
        let (world, device, disk) = one_member("master-a");
        world.add_instance("master-z", ZONE, "10.0.0.9", CLUSTER, "master");
        world.change(|s| s["attach_race"][&disk] = json!({"by": "master-z", "when": when}));
        let node = world.node("master-a");
        node.link_disk(&disk, &device.path);
        let out = mount(&node);
        assert_eq!(out.code, 0, "{when}: {out:#?}");
        assert_eq!(world.disk(&disk)["users"], json!(["master-z"]), "{when}");
        assert!(device.mounted_at().is_empty(), "{when}");
        assert!(device.fs_type().is_none(), "{when}");
        world.assert_faithful();
    }
    world.assert_faithful();
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_disk_labelled_formatted_whose_device_is_blank_is_refused_untouched() {
    let (world, device, disk) = one_member(MASTER);
    world.change(|s| {
        s["disks"][&disk]["labels"]["k8s-io-protokube-formatted"] =
            json!("0e5b6f0c-7c0d-4d52-9b36-1ad2f0c1a8a1");
    });
    let node = world.node(MASTER);
    node.link_disk(&disk, &device.path);
    let before = device.digest();
    let out = mount(&node);
    assert_eq!(out.code, 1, "{out:#?}");
    assert!(
        out.stderr.contains("0e5b6f0c-7c0d-4d52-9b36-1ad2f0c1a8a1"),
        "{out:#?}"
    );
    assert_eq!(device.digest(), before);
    assert!(device.mounted_at().is_empty());
    world.assert_faithful();
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_stale_label_fingerprint_and_a_changed_record_are_read_again() {
    let (world, device, disk) = one_member(MASTER);
    let name = "etcd-a.internal.ha.example.com.";
    let owner = format!("\"heritage=protokube,protokube/cluster={CLUSTER}\"");
    // Someone changes the disk's labels between protokube's read and its write (412), and
    // another master of the cluster writes the etcd name first (409 on the addition).
    world.change(|s| {
        s["label_race"] = json!([disk]);
        s["dns_race"] = json!([
            {"zone": "1", "rrset": {"name": name, "type": "A", "ttl": 60, "rrdatas": ["10.0.0.9"]}},
            {"zone": "1", "rrset": {"name": name, "type": "TXT", "ttl": 60, "rrdatas": [owner]}},
        ]);
    });
    let node = world.node(MASTER);
    node.link_disk(&disk, &device.path);
    let spec_dir = tempfile::tempdir().unwrap();
    let spec = kops_gce_spec(spec_dir.path(), CLUSTER, |_| {});
    let out = run(
        &node,
        &["sync", "--master", "--cluster-spec", spec.to_str().unwrap()],
    );
    assert_eq!(out.code, 0, "{out:#?}");
    let labels = world.disk(&disk)["labels"].clone();
    assert_eq!(
        labels["k8s-io-protokube-formatted"],
        json!(device.uuid()),
        "{labels}"
    );
    assert_eq!(labels["k8s-io-other-writer"], json!("x"), "{labels}");
    let records = world.records(name);
    assert_eq!(records["A"], ["10.0.0.1"], "{records:?}");
    assert_eq!(records["TXT"], [owner]);
    let creates = world
        .requests()
        .iter()
        .filter(|r| r["id"] == "dns.changes.create")
        .map(|r| r["status"].as_u64().unwrap())
        .collect::<Vec<_>>();
    assert_eq!(creates.first(), Some(&409), "{creates:?}");
    assert_eq!(creates.last(), Some(&200), "{creates:?}");
    world.assert_faithful();
}

#[test]
fn a_gossip_worker_writes_the_masters_from_their_instance_labels() {
    let world = GceWorld::new();
    let cluster = "g.k8s.local";
    for (name, zone, ip) in [
        ("master-a", "us-test1-a", "10.0.1.1"),
        ("master-b", "us-test1-b", "10.0.1.2"),
    ] {
        world.add_instance(name, zone, ip, cluster, "master");
    }
    world.add_instance(
        "other-cluster",
        "us-test1-a",
        "10.0.9.9",
        "x.k8s.local",
        "master",
    );
    world.add_instance("nodes-a-1", "us-test1-a", "10.0.2.1", cluster, "node");
    let node = world.node("nodes-a-1");
    std::fs::create_dir_all(node.root.join("/etc")).unwrap();
    std::fs::write(node.root.join("/etc/hosts"), "127.0.0.1 localhost\n").unwrap();
    let spec_dir = tempfile::tempdir().unwrap();
    let spec = kops_gce_spec(spec_dir.path(), cluster, |_| {});
    let sync = || run(&node, &["sync", "--cluster-spec", spec.to_str().unwrap()]);
    let out = sync();
    assert_eq!(out.code, 0, "{out:#?}");
    let hosts = std::fs::read_to_string(node.root.join("/etc/hosts")).unwrap();
    support::gce::assert_hosts_name_the_two_masters(&hosts);
    // Converged: the gossip worker asks Compute Engine nothing within --verify-interval.
    let before = world.requests().len();
    assert_eq!(sync().code, 0);
    assert!(world.calls_since(before, "nodes-a-1").is_empty());
    world.assert_faithful();
}

#[test]
fn a_metadata_server_slow_at_boot_is_waited_for_and_one_never_there_is_not_ready() {
    let world = GceWorld::new();
    world.add_etcd_disk(CLUSTER, ZONE, "main", "a", &["a"]);
    world.add_instance(MASTER, ZONE, "10.0.0.1", CLUSTER, "master");
    let slow = world.node_ready_after(MASTER, 2.0);
    let out = run(
        &slow,
        &["discover-volumes", "--cluster-id", CLUSTER, "-o", "json"],
    );
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(out.report().volumes.len(), 1, "{out:#?}");
    let never = world.node_ready_after(MASTER, 3600.0);
    let out = run(
        &never,
        &[
            "discover-volumes",
            "--cluster-id",
            CLUSTER,
            "--timeout",
            "3s",
        ],
    );
    assert_eq!(out.code, 75, "{out:#?}");
    assert!(out.stderr.contains("GCE metadata server"), "{out:#?}");
    world.assert_faithful();
}

#[test]
fn kops_gce_unit_line_runs_its_loop_and_stops_on_sigterm() {
    let world = GceWorld::new();
    let cluster = "minimal-gce.example.com";
    // kOps 1.22's instance: no labels, its role in a network tag.
    world.add_instance_of(
        support::gce::Kops::V1_22,
        MASTER,
        ZONE,
        "10.0.0.1",
        cluster,
        "master",
    );
    let node = world.node(MASTER);
    // kOps 1.22's nodeup on GCE (`--cloud=gce --dns=google-clouddns`, its flags as on AWS).
    let mut daemon = node
        .protokube()
        .env_remove("PROTOKUBE_CLOUD")
        .args([
            "--bootstrap-master-node-labels=false",
            "--cloud=gce",
            "--cluster-id=minimal-gce.example.com",
            "--containerized=false",
            "--dns-internal-suffix=.internal.minimal-gce.example.com",
            "--dns=google-clouddns",
            "--manage-etcd=false",
            "--master=true",
            "--v=4",
            "--zone=*/1",
        ])
        .spawn();
    // The loop's first run asks Compute Engine; then SIGTERM ends it cleanly.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while world.calls_since(0, MASTER).is_empty() {
        assert!(std::time::Instant::now() < deadline, "the loop never ran");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        daemon.try_wait().unwrap().is_none(),
        "the loop ended by itself"
    );
    assert_eq!(
        support::stop_with_sigterm(&mut daemon, Duration::from_secs(10)),
        Some(0)
    );
    world.assert_faithful();
}

#[test]
fn the_stand_in_refuses_what_google_does_not_serve() {
    let world = GceWorld::new();
    world.add_instance(MASTER, ZONE, "10.0.0.1", CLUSTER, "master");
    // A path no discovery method has, a parameter disks.list does not take.
    for path in [
        "/compute/v1/projects/test-project/zones/us-test1-a/diskz",
        "/compute/v1/projects/test-project/zones/us-test1-a/disks?bogus=1",
    ] {
        let code = world.raw_get(path, MASTER);
        assert_eq!(code, 400, "{path}");
    }
    assert!(world.violations().len() >= 2);
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn reset_detach_unmounts_and_detaches_the_disk_for_another_master() {
    let (world, device, disk) = one_member(MASTER);
    let node = world.node(MASTER);
    node.link_disk(&disk, &device.path);
    assert_eq!(mount(&node).code, 0);
    assert_eq!(world.disk(&disk)["users"], json!([MASTER]));
    let out = run(
        &node,
        &[
            "reset",
            "--detach",
            "--master",
            "--cluster-id",
            CLUSTER,
            "--dns",
            "none",
        ],
    );
    assert_eq!(out.code, 0, "{out:#?}");
    assert!(device.mounted_at().is_empty());
    assert_eq!(world.disk(&disk)["users"], json!([]));
    assert!(world
        .requests()
        .iter()
        .any(|r| r["id"] == "compute.instances.detachDisk"
            && r["query"]["deviceName"] == json!(disk)));
    // The data stays: another master mounts it without a format.
    assert_eq!(device.fs_type().as_deref(), Some("ext4"));
    world.assert_faithful();
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_dry_run_on_gce_is_the_run_s_own_plan() {
    // As tests/it/dry_run.rs on AWS: for `sync` and each single command on a cold HA master,
    // what `--dry-run` reports is what the run then does, and nothing is left to plan after.
    let spec_dir = tempfile::tempdir().unwrap();
    let spec = ha_spec(spec_dir.path());
    for command in [
        "sync",
        "discover-volumes",
        "mount",
        "render-manifests",
        "publish-dns",
    ] {
        let world = ha_world();
        let node = world.node(MASTER);
        let devices = [LoopDevice::blank(64), LoopDevice::blank(64)];
        for (key, device) in ["main", "events"].iter().zip(&devices) {
            node.link_disk(
                &format!("a-etcd-{key}-{}", CLUSTER.replace('.', "-")),
                &device.path,
            );
        }
        let run_it = |extra: &[&str]| {
            let mut args = vec![
                command,
                "--master",
                "-o",
                "json",
                "--cluster-spec",
                spec.to_str().unwrap(),
            ];
            args.extend(extra);
            run(&node, &args)
        };
        let dry = run_it(&["--dry-run"]);
        assert_eq!(dry.code, 0, "{command} --dry-run: {dry:#?}");
        assert!(devices.iter().all(|d| d.fs_type().is_none()), "{command}");
        let real = run_it(&[]);
        assert_eq!(real.code, 0, "{command}: {real:#?}");
        assert_eq!(
            dry.report().change_set(),
            real.report().change_set(),
            "{command}: the dry run (left) is not what the run did (right)"
        );
        let again = run_it(&["--dry-run"]);
        assert!(!again.report().changed, "{command}: {again:#?}");
        world.assert_faithful();
    }
}
