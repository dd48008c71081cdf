//! GCE as kOps and Google really run it: 1.36's disk labels, unlabelled old instances, Google's
//! own answers, every device name; each divergence from a plain reading of the API played by the
//! stand-in (`scripts/gce_standin.py`) as kOps
//! lays out that version's instances and disks and as Google documents its answers: kOps 1.36's
//! self-only disk labels, kOps 1.22's unlabelled instances, 403 rate limits, 400
//! `resourceNotReady`, the metadata server by address, a worker without
//! `compute.instances.get`, a hyphenated etcd key, operations that hold a wait past 30 s, lost
//! answers and request ids, both device link forms and a hand-attached disk, cloned disks,
//! regional disks, `compute.disks.use`, and kOps' disk task rewriting the labels.

use crate::support;

use serde_json::json;
use support::block::LoopDevice;
use support::gce::{kops_gce_spec, GceNode, GceWorld, Kops};

const CLUSTER: &str = "ha.example.com";
const ZONE: &str = "us-test1-a";
const MASTER: &str = "master-us-test1-a-1xyz";

fn run(node: &GceNode<'_>, args: &[&str]) -> support::RunOutput {
    node.protokube().args(args).run()
}

fn mount(node: &GceNode<'_>, extra: &[&str]) -> support::RunOutput {
    let mut args = vec!["mount", "--master", "--cluster-id", CLUSTER, "-o", "json"];
    args.extend(extra);
    run(node, &args)
}

/// A master of a one-member cluster in `ZONE` and its `main` disk; the world and the disk.
fn one_member() -> (GceWorld, String) {
    let world = GceWorld::new();
    let disk = world.add_etcd_disk(CLUSTER, ZONE, "main", "a", &["a"]);
    world.add_instance(MASTER, ZONE, "10.0.0.1", CLUSTER, "master");
    (world, disk)
}

/// The etcd peers a rendered manifest names (`etcd-<member>` of its initial cluster).
fn peers(manifest: &str) -> Vec<String> {
    let mut found: Vec<String> = ["a", "b", "c"]
        .iter()
        .filter(|m| manifest.contains(&format!("etcd-{m}=")))
        .map(|m| (*m).to_owned())
        .collect();
    found.sort();
    found
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn kops_1_36_self_only_disk_labels_still_render_every_member() {
    // With the spec's etcdMembers, and without (then every disk of the key in the region says).
    for with_members in [true, false] {
        let world = GceWorld::new();
        for (member, zone) in [("a", ZONE), ("b", "us-test1-b"), ("c", "us-test1-c")] {
            for key in ["main", "events"] {
                world.add_etcd_disk_1_36(CLUSTER, zone, key, member);
            }
        }
        world.add_instance_of(Kops::V1_36, MASTER, ZONE, "10.0.0.1", CLUSTER, "master");
        let spec_dir = tempfile::tempdir().unwrap();
        let spec = kops_gce_spec(spec_dir.path(), CLUSTER, |doc| {
            for cluster in doc["spec"]["etcdClusters"].as_sequence_mut().unwrap() {
                if with_members {
                    cluster["etcdMembers"] =
                        yaml_serde::from_str("[{name: a}, {name: b}, {name: c}]").unwrap();
                } else {
                    cluster.as_mapping_mut().unwrap().remove("etcdMembers");
                }
            }
        });
        let node = world.node(MASTER);
        let devices = [LoopDevice::blank(64), LoopDevice::blank(64)];
        for (key, device) in ["main", "events"].iter().zip(&devices) {
            node.link_disk(&format!("a-etcd-{key}-ha-example-com"), &device.path);
        }
        let out = run(
            &node,
            &[
                "sync",
                "--master",
                "--dns",
                "none",
                "--cluster-spec",
                spec.to_str().unwrap(),
            ],
        );
        assert_eq!(
            out.code, 0,
            "members from the spec: {with_members}: {out:#?}"
        );
        let manifest =
            std::fs::read_to_string(node.root.join("/etc/kubernetes/manifests/etcd.manifest"))
                .unwrap();
        assert_eq!(
            peers(&manifest),
            ["a", "b", "c"],
            "members from the spec: {with_members}: {manifest}"
        );
        world.assert_faithful();
    }
}

#[test]
fn a_kops_1_22_gossip_worker_writes_its_masters_from_metadata_and_network_tags() {
    let world = GceWorld::new();
    let cluster = "g.k8s.local";
    for (name, zone, ip) in [
        ("master-a", "us-test1-a", "10.0.1.1"),
        ("master-b", "us-test1-b", "10.0.1.2"),
    ] {
        world.add_instance_of(Kops::V1_22, name, zone, ip, cluster, "master");
    }
    // Another cluster's unlabelled master, and this cluster's workers: not masters of it.
    world.add_instance_of(
        Kops::V1_22,
        "other-master",
        ZONE,
        "10.0.9.9",
        "x.k8s.local",
        "master",
    );
    world.add_instance_of(Kops::V1_22, "nodes-a-1", ZONE, "10.0.2.1", cluster, "node");
    let node = world.node("nodes-a-1");
    std::fs::create_dir_all(node.root.join("/etc")).unwrap();
    std::fs::write(node.root.join("/etc/hosts"), "127.0.0.1 localhost\n").unwrap();
    let spec_dir = tempfile::tempdir().unwrap();
    let spec = kops_gce_spec(spec_dir.path(), cluster, |_| {});
    let out = run(&node, &["sync", "--cluster-spec", spec.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{out:#?}");
    let hosts = std::fs::read_to_string(node.root.join("/etc/hosts")).unwrap();
    support::gce::assert_hosts_name_the_two_masters(&hosts);
    world.assert_faithful();
}

#[test]
fn googles_rate_limit_is_busy_never_a_missing_permission() {
    // A fleet booting together: Compute Engine answers 403 rateLimitExceeded for a while.
    let (world, _) = one_member();
    world.change(|s| s["rate_limited"] = json!({"compute.disks.list": 2}));
    let node = world.node(MASTER);
    let args = ["discover-volumes", "--cluster-id", CLUSTER, "-o", "json"];
    let out = run(&node, &args);
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(out.report().volumes.len(), 1, "{out:#?}");
    // Longer than the run may wait: not ready, and said as a rate limit.
    world.change(|s| s["rate_limited"] = json!({"compute.disks.list": 1000}));
    let out = run(&node, &[&args[..], &["--timeout", "3s"]].concat());
    assert_eq!(out.code, 75, "{out:#?}");
    let error = out.error_lines()[0];
    assert!(error.contains("rateLimitExceeded"), "{out:#?}");
    assert!(!error.contains("denied"), "{out:#?}");
    world.assert_faithful();
}

#[test]
fn a_disk_still_detaching_is_not_ready_then_claimed() {
    // The disk of a replaced master is still being detached: 400 resourceNotReady.
    let (world, disk) = one_member();
    world.change(|s| s["not_ready"] = json!({ &disk: 1000 }));
    let node = world.node(MASTER);
    let out = mount(&node, &["--timeout", "3s"]);
    assert_eq!(out.code, 75, "{out:#?}");
    assert!(
        out.error_lines()[0].contains("resourceNotReady"),
        "{out:#?}"
    );
    assert_eq!(world.disk(&disk)["users"], json!(null));
    // Detached now: the next run claims it (its device is not there: still not ready, but
    // the disk is this master's).
    world.change(|s| s["not_ready"] = json!({ &disk: 1 }));
    let out = mount(&node, &["--timeout", "3s"]);
    assert_eq!(world.disk(&disk)["users"], json!([MASTER]), "{out:#?}");
    world.assert_faithful();
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn the_metadata_server_is_reached_by_its_address_without_a_resolver() {
    let netns = support::netns::Netns::new("127.0.0.1 localhost\n");
    support::netns::ip(&[
        "-n",
        &netns.name,
        "addr",
        "add",
        "169.254.169.254/32",
        "dev",
        "lo",
    ]);
    let world = GceWorld::new_in(Some(&netns.name));
    world.add_etcd_disk(CLUSTER, ZONE, "main", "a", &["a"]);
    world.add_instance(MASTER, ZONE, "10.0.0.1", CLUSTER, "master");
    // No GCE_METADATA_HOST, and `metadata.google.internal` resolves nowhere here.
    let node = world.node_at_google_address(MASTER);
    let out = run(
        &node,
        &[
            "discover-volumes",
            "--cluster-id",
            CLUSTER,
            "-o",
            "json",
            "--timeout",
            "10s",
        ],
    );
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(out.report().volumes.len(), 1, "{out:#?}");
    world.assert_faithful();
}

#[test]
fn a_kops_1_36_worker_without_instances_get_learns_its_cluster_and_role_from_metadata() {
    let world = GceWorld::new();
    let cluster = "g.k8s.local";
    world.add_instance_of(Kops::V1_36, "master-a", ZONE, "10.0.1.1", cluster, "master");
    world.add_instance_of(Kops::V1_36, "nodes-a-1", ZONE, "10.0.2.1", cluster, "node");
    // kOps 1.36 gives its GCE workers no project role: not even `compute.instances.get`.
    world.change(|s| s["denied"] = json!(["compute.instances.get"]));
    let node = world.node("nodes-a-1");
    std::fs::create_dir_all(node.root.join("/etc")).unwrap();
    std::fs::write(node.root.join("/etc/hosts"), "127.0.0.1 localhost\n").unwrap();
    // kOps 1.36's unit line (`nodeup/pkg/model/protokube.go`), on GCE.
    let mut daemon = node
        .protokube()
        .env_remove("PROTOKUBE_CLOUD")
        .env("PROTOKUBE_OUTPUT", "json")
        .args([
            "--cloud=gce",
            "--containerized=false",
            "--gossip=true",
            "--v=4",
        ])
        .spawn();
    let hosts = node.root.join("/etc/hosts");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !std::fs::read_to_string(&hosts)
        .unwrap_or_default()
        .contains("10.0.1.1\tapi.internal.g.k8s.local")
    {
        assert!(
            std::time::Instant::now() < deadline && daemon.try_wait().unwrap().is_none(),
            "no hosts block: {}",
            std::fs::read_to_string(&hosts).unwrap_or_default()
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(
        support::stop_with_sigterm(&mut daemon, std::time::Duration::from_secs(10)),
        Some(0)
    );
    // A worker: no volume asked for, nothing denied asked.
    let asked = world.calls_since(0, "nodes-a-1");
    assert!(
        !asked
            .iter()
            .any(|c| c.contains("disks") || c == "compute.instances.get"),
        "{asked:?}"
    );
    world.assert_faithful();
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_hyphenated_etcd_key_converges_with_no_label_write() {
    let world = GceWorld::new();
    let disk = world.add_etcd_disk(CLUSTER, ZONE, "my-etcd", "a", &["a"]);
    world.add_instance(MASTER, ZONE, "10.0.0.1", CLUSTER, "master");
    // Its data last ran etcd 3.5.13, as its record on the volume says.
    let device = LoopDevice::blank(64);
    device.make_ext4_with(&[("k8s.io/manifests/etcd-version", "3.5.13\n")]);
    world.change(|s| {
        s["disks"][&disk]["labels"]["k8s-io-protokube-formatted"] = json!(device.uuid());
    });
    let spec_dir = tempfile::tempdir().unwrap();
    let spec = kops_gce_spec(spec_dir.path(), CLUSTER, |doc| {
        let extra = yaml_serde::from_str(
            "{name: my-etcd, version: 3.5.13, etcdMembers: [{name: a}], peerPort: 2390, clientPort: 4010}",
        )
        .unwrap();
        doc["spec"]["etcdClusters"]
            .as_sequence_mut()
            .unwrap()
            .push(extra);
    });
    let node = world.node(MASTER);
    node.link_disk(&disk, &device.path);
    let sync = || {
        run(
            &node,
            &[
                "sync",
                "--master",
                "--dns",
                "none",
                "--verify-interval",
                "0",
                "--cluster-spec",
                spec.to_str().unwrap(),
            ],
        )
    };
    let out = sync();
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(
        world.disk(&disk)["labels"]["k8s-io-protokube-etcd-version-my-2detcd"],
        json!("3-2e5-2e13")
    );
    // Converged: the record is read back as written, and not written again.
    let before = world.requests().len();
    let out = sync();
    assert_eq!(out.code, 0, "{out:#?}");
    let writes: Vec<String> = world
        .calls_since(before, MASTER)
        .into_iter()
        .filter(|c| c == "compute.disks.setLabels")
        .collect();
    assert!(writes.is_empty(), "{writes:?}");
    world.assert_faithful();
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn an_attach_whose_operation_holds_the_wait_past_30_seconds_is_waited_for() {
    let (world, disk) = one_member();
    // Compute Engine takes 40 s to attach: `zoneOperations.wait` holds the answer meanwhile.
    world.change(|s| s["operation_seconds"] = json!({"attachDisk": 40}));
    let node = world.node(MASTER);
    let device = LoopDevice::blank(64);
    node.link_disk(&disk, &device.path);
    let out = mount(&node, &["--timeout", "2m"]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert!(!out.stderr.contains("did not answer"), "{out:#?}");
    let waits = world
        .calls_since(0, MASTER)
        .into_iter()
        .filter(|c| c == "compute.zoneOperations.wait")
        .count();
    assert_eq!(waits, 1, "the wait was cut and asked again");
    world.assert_faithful();
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_retried_attach_carries_its_request_id_and_is_carried_out_once() {
    let (world, disk) = one_member();
    // Compute Engine attaches the disk, and its answer is lost (503).
    world.change(|s| s["lost_answers"] = json!({"compute.instances.attachDisk": 1}));
    let node = world.node(MASTER);
    let device = LoopDevice::blank(64);
    node.link_disk(&disk, &device.path);
    let out = mount(&node, &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    let attaches: Vec<serde_json::Value> = world
        .requests()
        .into_iter()
        .filter(|r| r["id"] == "compute.instances.attachDisk")
        .collect();
    assert_eq!(attaches.len(), 2, "{attaches:?}");
    let id = &attaches[0]["query"]["requestId"];
    assert!(id.is_string(), "{attaches:?}");
    assert_eq!(&attaches[1]["query"]["requestId"], id);
    let attach_operations = world.state()["operations"]
        .as_object()
        .unwrap()
        .values()
        .filter(|op| op["json"]["operationType"] == "attachDisk")
        .count();
    assert_eq!(attach_operations, 1, "attached twice");
    assert!(!device.mounted_at().is_empty());
    world.assert_faithful();
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_disk_is_found_under_either_link_form_and_its_real_device_name() {
    // Images without Google's guest rules link only systemd's SCSI form.
    let (world, disk) = one_member();
    let node = world.node(MASTER);
    let device = LoopDevice::blank(64);
    node.link_device(&format!("scsi-0Google_PersistentDisk_{disk}"), &device.path);
    let out = mount(&node, &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert!(!device.mounted_at().is_empty());
    // A disk attached by hand keeps the device name Compute Engine gave it.
    let (world, disk) = one_member();
    world.change(|s| {
        s["disks"][&disk]["users"] = json!([MASTER]);
        s["disks"][&disk]["devices"] = json!({ MASTER: "persistent-disk-1" });
    });
    let node = world.node(MASTER);
    let device = LoopDevice::blank(64);
    node.link_device("google-persistent-disk-1", &device.path);
    let out = mount(&node, &["--timeout", "10s"]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert!(!device.mounted_at().is_empty());
    world.assert_faithful();
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_disk_cloned_from_another_is_never_formatted_and_the_refusal_names_its_source() {
    for (field, value) in [
        (
            "sourceDisk",
            json!("projects/test-project/zones/us-test1-a/disks/a-etcd-main-old"),
        ),
        (
            "sourceInstantSnapshot",
            json!("projects/test-project/zones/us-test1-a/instantSnapshots/snap-1"),
        ),
        (
            "sourceMachineImage",
            json!("projects/test-project/global/machineImages/master-image"),
        ),
        (
            "asyncPrimaryDisk",
            json!({"disk": "projects/test-project/zones/us-test1-b/disks/a-etcd-main-primary"}),
        ),
    ] {
        let (world, disk) = one_member();
        world.change(|s| s["disks"][&disk][field] = value.clone());
        let node = world.node(MASTER);
        let device = LoopDevice::blank(64);
        node.link_disk(&disk, &device.path);
        let out = mount(&node, &[]);
        assert_eq!(out.code, 1, "{field}: {out:#?}");
        assert!(out.error_lines()[0].contains(field), "{field}: {out:#?}");
        assert!(device.fs_type().is_none(), "{field}: formatted");
        world.assert_faithful();
    }
}

#[test]
fn a_regional_disk_with_the_clusters_labels_is_skipped_with_a_line() {
    let (world, _) = one_member();
    world.change(|s| {
        s["disks"]["a-etcd-events-regional"] = json!({
            "region": "us-test1",
            "replicaZones": ["us-test1-a", "us-test1-b"],
            "status": "READY",
            "labels": {
                "k8s-io-cluster-name": CLUSTER.replace('.', "-"),
                "k8s-io-role-master": "master",
                "k8s-io-etcd-events": support::gce::encode("a/a"),
            },
        });
    });
    let node = world.node(MASTER);
    let out = run(
        &node,
        &[
            "publish-dns",
            "--master",
            "--cluster-id",
            CLUSTER,
            "--zone",
            "example.com",
            "-o",
            "json",
        ],
    );
    assert_eq!(out.code, 0, "{out:#?}");
    let warnings = out.report().warnings.join("\n");
    assert!(
        warnings.contains("`a-etcd-events-regional`") && warnings.contains("region"),
        "{warnings}"
    );
    world.assert_faithful();
}

#[test]
fn attaching_needs_compute_disks_use_and_a_refusal_names_it() {
    let (world, _) = one_member();
    world.change(|s| s["denied"] = json!(["compute.disks.use"]));
    let node = world.node(MASTER);
    let out = mount(&node, &[]);
    assert_eq!(out.code, 1, "{out:#?}");
    assert!(
        out.error_lines()[0].contains("compute.disks.use"),
        "{out:#?}"
    );
    world.assert_faithful();
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn kops_rewriting_a_disks_labels_never_gets_it_formatted_again() {
    let (world, disk) = one_member();
    let node = world.node(MASTER);
    let device = LoopDevice::blank(64);
    node.link_disk(&disk, &device.path);
    assert_eq!(mount(&node, &[]).code, 0);
    let uuid = device.uuid();
    // `kops update cluster` sets the disk's labels to kOps' own (gcetasks/disk.go).
    world.change(|s| {
        s["disks"][&disk]["labels"] = json!({
            "k8s-io-cluster-name": CLUSTER.replace('.', "-"),
            "k8s-io-role-master": "master",
            "k8s-io-etcd-main": support::gce::encode("a/a"),
        });
    });
    support::run("umount", &[device.mounted_at()[0].as_str()]);
    let before = world.requests().len();
    let out = mount(&node, &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(device.uuid(), uuid, "formatted again");
    assert!(!device.mounted_at().is_empty());
    // protokube does not fight kOps' disk task over its label.
    assert!(!world
        .calls_since(before, MASTER)
        .iter()
        .any(|c| c == "compute.disks.setLabels"));
    world.assert_faithful();
}

#[test]
fn kops_1_22_masters_with_an_organisations_label_and_a_roll_to_1_23_are_all_masters() {
    let cluster = "g.k8s.local";
    // kOps 1.22's masters carry no kOps label, but an agent's or an organisation policy's.
    let world = GceWorld::new();
    for (name, zone, ip) in [
        ("master-a", "us-test1-a", "10.0.1.1"),
        ("master-b", "us-test1-b", "10.0.1.2"),
    ] {
        world.add_instance_of(Kops::V1_22, name, zone, ip, cluster, "master");
    }
    world.change(|s| {
        s["instances"]["master-a"]["labels"] =
            json!({"goog-ops-agent-policy": "v2-x86-template-1-4-0"});
    });
    world.add_instance_of(Kops::V1_22, "nodes-a-1", ZONE, "10.0.2.1", cluster, "node");
    let spec_dir = tempfile::tempdir().unwrap();
    let spec = kops_gce_spec(spec_dir.path(), cluster, |_| {});
    let worker_hosts = |world: &GceWorld| {
        let node = world.node("nodes-a-1");
        std::fs::create_dir_all(node.root.join("/etc")).unwrap();
        std::fs::write(node.root.join("/etc/hosts"), "127.0.0.1 localhost\n").unwrap();
        let out = run(&node, &["sync", "--cluster-spec", spec.to_str().unwrap()]);
        assert_eq!(out.code, 0, "{out:#?}");
        std::fs::read_to_string(node.root.join("/etc/hosts")).unwrap()
    };
    support::gce::assert_hosts_name_the_two_masters(&worker_hosts(&world));
    // A roll from 1.22 to 1.23: master-b comes back labelled, master-a is still 1.22's.
    world.add_instance_of(
        Kops::V1_26,
        "master-b",
        "us-test1-b",
        "10.0.1.2",
        cluster,
        "master",
    );
    support::gce::assert_hosts_name_the_two_masters(&worker_hosts(&world));
    world.assert_faithful();
}

#[test]
fn a_metadata_cluster_name_that_contradicts_the_instances_label_claims_nothing() {
    // Two clusters' disks in the zone; the master is labelled for one, its metadata names the
    // other (a template copied between clusters).
    let world = GceWorld::new();
    world.add_etcd_disk(CLUSTER, ZONE, "main", "a", &["a"]);
    let other = "other.example.com";
    let theirs = world.add_etcd_disk(other, ZONE, "main", "a", &["a"]);
    world.add_instance(MASTER, ZONE, "10.0.0.1", CLUSTER, "master");
    world.change(|s| s["instances"][MASTER]["metadata"]["cluster-name"] = json!(other));
    let node = world.node(MASTER);
    for args in [
        &["mount", "--master", "-o", "json"][..],
        &[
            "publish-dns",
            "--master",
            "--zone",
            "example.com",
            "-o",
            "json",
        ][..],
    ] {
        let out = run(&node, args);
        assert_eq!(out.code, 1, "{args:?}: {out:#?}");
        let error = out.error_lines()[0];
        assert!(
            error.contains("k8s-io-cluster-name=ha-example-com")
                && error.contains("cluster-name=other.example.com"),
            "{args:?}: {error}"
        );
        assert!(out.report().changes.is_empty(), "{args:?}: {out:#?}");
    }
    let requests = world.requests();
    assert!(
        !requests
            .iter()
            .any(|r| r["id"] == "compute.instances.attachDisk" || r["id"] == "dns.changes.create"),
        "{requests:?}"
    );
    assert!(world.disk(&theirs)["users"]
        .as_array()
        .is_none_or(Vec::is_empty));
    world.assert_faithful();
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_metadata_cluster_name_contradicting_the_label_stops_a_node_without_role_labels() {
    // Labelled for our cluster but with no kOps role label (an organisation's template), its
    // metadata naming another cluster, whose blank disk waits in the zone.
    let world = GceWorld::new();
    let other = "other.example.com";
    let theirs = world.add_etcd_disk(other, ZONE, "main", "a", &["a"]);
    world.add_instance(MASTER, ZONE, "10.0.0.1", CLUSTER, "master");
    world.change(|s| {
        let labels = s["instances"][MASTER]["labels"].as_object_mut().unwrap();
        labels.retain(|key, _| !key.starts_with("k8s-io-role-"));
        s["instances"][MASTER]["metadata"]["cluster-name"] = json!(other);
    });
    let node = world.node(MASTER);
    let device = LoopDevice::blank(64);
    node.link_disk(&theirs, &device.path);
    for args in [
        &["mount", "--master", "-o", "json"][..],
        &["mount", "--master", "--cluster-id", other, "-o", "json"][..],
        &[
            "mount",
            "--master",
            "--cluster-id",
            other,
            "--dry-run",
            "-o",
            "json",
        ][..],
    ] {
        let out = run(&node, args);
        assert_eq!(out.code, 1, "{args:?}: {out:#?}");
        let error = out.error_lines()[0];
        assert!(
            error.contains("k8s-io-cluster-name=ha-example-com")
                && error.contains("cluster-name=other.example.com"),
            "{args:?}: {error}"
        );
        assert!(out.report().changes.is_empty(), "{args:?}: {out:#?}");
    }
    let requests = world.requests();
    assert!(
        !requests
            .iter()
            .any(|r| r["id"] == "compute.instances.attachDisk"
                || r["id"] == "compute.disks.setLabels"),
        "{requests:?}"
    );
    assert!(device.fs_type().is_none(), "formatted");
    world.assert_faithful();
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_disk_imported_from_cloud_storage_is_never_formatted() {
    let (world, disk) = one_member();
    world.change(|s| {
        s["disks"][&disk]["sourceStorageObject"] =
            json!("https://storage.googleapis.com/backups/etcd-main-a.tar.gz");
    });
    let node = world.node(MASTER);
    // The device reads blank: only the cloud knows it was made from something.
    let device = LoopDevice::blank(64);
    node.link_disk(&disk, &device.path);
    let out = mount(&node, &[]);
    assert_eq!(out.code, 1, "{out:#?}");
    let error = out.error_lines()[0];
    assert!(
        error.contains("sourceStorageObject") && error.contains("etcd-main-a.tar.gz"),
        "{out:#?}"
    );
    assert!(device.fs_type().is_none(), "formatted");
    world.assert_faithful();
}

#[test]
fn googles_rate_limit_holding_a_minute_is_asked_again_at_most_twice_in_it() {
    let (world, _) = one_member();
    world.change(|s| s["rate_limited_for"] = json!({"compute.disks.list": 60}));
    let node = world.node(MASTER);
    let args = [
        "discover-volumes",
        "--cluster-id",
        CLUSTER,
        "--timeout",
        "150s",
        "-o",
        "json",
    ];
    let out = run(&node, &args);
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(out.report().volumes.len(), 1, "{out:#?}");
    // Within the refused minute: the first call and at most two more.
    let refusals = world.state()["rate_limit_refusals"]["compute.disks.list"]
        .as_array()
        .unwrap()
        .clone();
    assert!(
        (1..=3).contains(&refusals.len()),
        "{} calls inside the refused minute: {refusals:?}",
        refusals.len()
    );
    // A deadline before the window turns: not ready, said as the rate limit.
    world.change(|s| {
        s["rate_limited_for"] = json!({"compute.disks.list": 600});
        s["rate_limit_started"] = json!({});
        s["rate_limit_refusals"] = json!({});
    });
    let out = run(
        &node,
        &[&args[..3], &["--timeout", "10s", "-o", "json"]].concat(),
    );
    assert_eq!(out.code, 75, "{out:#?}");
    assert!(
        out.error_lines()[0].contains("rateLimitExceeded"),
        "{out:#?}"
    );
    let refused = world.state()["rate_limit_refusals"]["compute.disks.list"]
        .as_array()
        .map_or(0, Vec::len);
    assert_eq!(refused, 1, "asked again inside the refused minute");
    world.assert_faithful();
}
