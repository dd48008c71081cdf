//! GCE's faults as an operator would meet them: a boot disk that carries etcd labels, under kOps'
//! device name and under gcloud's; a public name that is one of the cluster's own internal names;
//! a record set someone removed between read and change; a wait cut by the deadline after the
//! change was accepted (reports that keep what was done); a disk attached read-only; a disk of one
//! name in two zones; a token Google rejects early; a worker that may not call
//! `compute.instances.get`; an operation still running at the deadline; and GCE's own words for
//! what an operator must fix. Real binary, the GCE stand-in (`scripts/gce_standin.py`), real loop
//! devices where a disk is mounted.

use crate::support;

use serde_json::json;
use support::block::LoopDevice;
use support::gce::{kops_gce_spec, GceNode, GceWorld};

const CLUSTER: &str = "ha.example.com";
const ZONE: &str = "us-test1-a";
const MASTER: &str = "master-us-test1-a-1xyz";

/// A master of a one-member cluster in `ZONE` (kOps 1.26–1.35: its boot disk named after it,
/// attached as `persistent-disk-0`) and its blank `main` disk; the world and the disk's name.
fn one_member() -> (GceWorld, String) {
    let world = GceWorld::new();
    let disk = world.add_etcd_disk(CLUSTER, ZONE, "main", "a", &["a"]);
    world.add_instance(MASTER, ZONE, "10.0.0.1", CLUSTER, "master");
    (world, disk)
}

fn run(node: &GceNode<'_>, args: &[&str]) -> support::RunOutput {
    node.protokube().args(args).run()
}

fn mount(node: &GceNode<'_>) -> support::RunOutput {
    run(
        node,
        &["mount", "--master", "--cluster-id", CLUSTER, "-o", "json"],
    )
}

/// The boot disk carries the etcd labels of member `a` (copied from an image, a machine image,
/// a hand-made template), attached as `device`.
fn label_boot_disk_as_member_a(world: &GceWorld, device: &str) {
    world.change(|s| {
        let boot = &mut s["disks"][MASTER];
        boot["labels"] = json!({
            "k8s-io-cluster-name": CLUSTER.replace('.', "-"),
            "k8s-io-role-master": "master",
            "k8s-io-etcd-main": support::gce::encode("a/a"),
        });
        boot["devices"][MASTER] = json!(device);
    });
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_boot_disk_with_etcd_labels_is_never_taken_for_the_members_volume() {
    // Under kOps' device name (`persistent-disk-0`) and under gcloud's (the disk's own name,
    // which is where protokube looks for a disk's device): the real etcd disk is claimed,
    // formatted and mounted, the boot disk is left alone and named as the root device.
    for device_name in ["persistent-disk-0", MASTER] {
        let (world, disk) = one_member();
        label_boot_disk_as_member_a(&world, device_name);
        let node = world.node(MASTER);
        let (etcd, root_fs) = (LoopDevice::blank(64), LoopDevice::blank(64));
        root_fs.make_ext4_with(&[("etc/os-release", "ID=debian\n")]);
        node.link_disk(&disk, &etcd.path);
        node.link_device(&format!("google-{device_name}"), &root_fs.path);
        let root_before = root_fs.digest();
        let out = mount(&node);
        assert_eq!(out.code, 0, "{device_name}: {out:#?}");
        assert_eq!(world.disk(&disk)["users"], json!([MASTER]), "{device_name}");
        assert_eq!(etcd.fs_type().as_deref(), Some("ext4"), "{device_name}");
        assert!(!etcd.mounted_at().is_empty(), "{device_name}");
        assert!(root_fs.mounted_at().is_empty(), "{device_name}");
        assert_eq!(
            root_fs.digest(),
            root_before,
            "{device_name}: the root disk was touched"
        );
        let warnings = out.report().warnings.join("\n");
        assert!(
            warnings.contains(&format!("`{MASTER}`")) && warnings.contains("root device"),
            "{device_name}: {warnings}"
        );
        // Never "delete the copy" of the real disk.
        assert!(
            !warnings.contains("delete the copy"),
            "{device_name}: {warnings}"
        );
        world.assert_faithful();
    }
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_master_rebooting_with_its_etcd_disk_and_a_labelled_boot_disk_mounts_its_etcd() {
    let (world, disk) = one_member();
    label_boot_disk_as_member_a(&world, "persistent-disk-0");
    // The etcd disk is attached here already, its filesystem made by an earlier boot.
    world.change(|s| {
        s["disks"][&disk]["users"] = json!([MASTER]);
        s["disks"][&disk]["devices"] = json!({ MASTER: disk });
    });
    let etcd = LoopDevice::blank(64);
    etcd.make_ext4_with(&[("k8s.io/keep", "data\n")]);
    world.change(|s| {
        s["disks"][&disk]["labels"]["k8s-io-protokube-formatted"] = json!(etcd.uuid());
    });
    let node = world.node(MASTER);
    node.link_disk(&disk, &etcd.path);
    let spec_dir = tempfile::tempdir().unwrap();
    let spec = kops_gce_spec(spec_dir.path(), CLUSTER, |_| {});
    let out = run(
        &node,
        &[
            "sync",
            "--master",
            "-o",
            "json",
            "--dns",
            "none",
            "--cluster-spec",
            spec.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, 0, "{out:#?}");
    assert!(!etcd.mounted_at().is_empty(), "{out:#?}");
    assert!(node
        .root
        .join("/etc/kubernetes/manifests/etcd.manifest")
        .exists());
    world.assert_faithful();
}

#[test]
fn a_public_name_that_is_one_of_the_clusters_own_names_is_refused_before_any_change() {
    // Cloud DNS: nothing is attached and no change is sent.
    for public in [
        format!("etcd-a.internal.{CLUSTER}"),
        format!("kops-controller.internal.{CLUSTER}"),
    ] {
        let (world, disk) = one_member();
        let node = world.node(MASTER);
        let spec_dir = tempfile::tempdir().unwrap();
        let spec = kops_gce_spec(spec_dir.path(), CLUSTER, |doc| {
            doc["spec"]["masterPublicName"] = public.clone().into();
        });
        let out = run(
            &node,
            &["sync", "--master", "--cluster-spec", spec.to_str().unwrap()],
        );
        assert_eq!(out.code, 1, "{public}: {out:#?}");
        assert!(
            out.error_lines()[0].contains("spec.masterPublicName")
                && out.error_lines()[0].contains(&public),
            "{public}: {out:#?}"
        );
        assert_eq!(world.disk(&disk)["users"], json!(null), "{public}");
        let mutations: Vec<_> = world
            .requests()
            .into_iter()
            .filter(|r| r["method"] == "POST")
            .collect();
        assert!(mutations.is_empty(), "{public}: {mutations:?}");
        world.assert_faithful();
    }
}

/// A master whose `main` disk is attached here (no device needed: nothing is mounted), for the
/// DNS cases.
fn attached_member() -> (GceWorld, String) {
    let (world, disk) = one_member();
    world.change(|s| {
        s["disks"][&disk]["users"] = json!([MASTER]);
        s["disks"][&disk]["devices"] = json!({ MASTER: disk });
    });
    (world, disk)
}

fn publish(node: &GceNode<'_>, extra: &[&str]) -> support::RunOutput {
    let mut args = vec![
        "publish-dns",
        "--master",
        "--cluster-id",
        CLUSTER,
        "--zone",
        "example.com",
        "-o",
        "json",
    ];
    args.extend(extra);
    run(node, &args)
}

#[test]
fn a_record_set_someone_removed_between_read_and_change_is_read_again() {
    let (world, _) = attached_member();
    let name = "etcd-a.internal.ha.example.com.";
    let owner = format!("\"heritage=protokube,protokube/cluster={CLUSTER}\"");
    // protokube's own name at a stale address: the change deletes it exactly and adds the new
    // one; another writer removes it first.
    world.put_record(name, "A", &["10.0.0.9"]);
    world.put_record(name, "TXT", &[&owner]);
    world.change(|s| {
        s["dns_race"] = json!([{"zone": "1", "remove": format!("{name}|A")}]);
    });
    let node = world.node(MASTER);
    let out = publish(&node, &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(world.records(name)["A"], ["10.0.0.1"]);
    assert_eq!(world.records(name)["TXT"], [owner]);
    let statuses: Vec<u64> = world
        .requests()
        .iter()
        .filter(|r| r["id"] == "dns.changes.create")
        .map(|r| r["status"].as_u64().unwrap())
        .collect();
    assert_eq!(statuses, [404, 200], "{statuses:?}");
    world.assert_faithful();
}

#[test]
fn a_wait_cut_by_the_deadline_keeps_the_names_it_created_in_the_report_and_metrics() {
    let (world, _) = attached_member();
    // Cloud DNS accepts the change and reports it `pending` for longer than the run may wait.
    world.change(|s| s["pending_polls"] = json!(1_000_000));
    let node = world.node(MASTER);
    let metrics = tempfile::tempdir().unwrap();
    let metrics_file = metrics.path().join("protokube.prom");
    let out = publish(
        &node,
        &[
            "--wait",
            "--timeout",
            "4s",
            "--metrics-file",
            metrics_file.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, 75, "{out:#?}");
    // Said as what it is: the change still pending, not an endpoint or credentials problem.
    let error = out.error_lines()[0];
    assert!(error.contains("Cloud DNS change"), "{out:#?}");
    assert!(!error.contains("credentials"), "{out:#?}");
    let report = out.report();
    let created: Vec<&str> = report
        .changes
        .iter()
        .filter(|c| c.action == "create")
        .map(|c| c.target.as_str())
        .collect();
    assert!(
        created.contains(&"etcd-a.internal.ha.example.com"),
        "{report:#?}"
    );
    let text = std::fs::read_to_string(&metrics_file).unwrap();
    assert!(
        text.contains("protokube_changes{kind=\"dns\",action=\"create\"}"),
        "{text}"
    );
    // The next run finds them in place: nothing to create again.
    world.change(|s| s["pending_polls"] = json!(0));
    let again = publish(&node, &[]);
    assert_eq!(again.code, 0, "{again:#?}");
    assert!(!again.report().changed, "{again:#?}");
    world.assert_faithful();
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_disk_attached_read_only_is_named_as_such_never_blamed_on_its_filesystem() {
    let (world, disk) = one_member();
    world.change(|s| {
        s["disks"][&disk]["users"] = json!([MASTER]);
        s["disks"][&disk]["devices"] = json!({ MASTER: disk });
        s["disks"][&disk]["modes"] = json!({ MASTER: "READ_ONLY" });
    });
    let device = LoopDevice::blank(64);
    device.make_ext4_with(&[("k8s.io/keep", "data\n")]);
    // The kernel sees the disk read-only, as a READ_ONLY attachment is.
    support::run("blockdev", &["--setro", device.path_str()]);
    let node = world.node(MASTER);
    node.link_disk(&disk, &device.path);
    let before = device.digest();
    let out = mount(&node);
    support::run("blockdev", &["--setrw", device.path_str()]);
    assert_eq!(out.code, 1, "{out:#?}");
    let error = out.error_lines()[0];
    assert!(error.contains("read-only"), "{out:#?}");
    assert!(!error.contains("fsck"), "{out:#?}");
    assert!(device.mounted_at().is_empty());
    assert_eq!(device.digest(), before);
    world.assert_faithful();
}

#[test]
fn a_disk_of_one_name_in_two_zones_is_named_with_each_zone() {
    let (world, disk) = attached_member();
    // A copy of the disk, same name and labels, in another zone of the region.
    world.change(|s| {
        let mut copy = s["disks"][&disk].clone();
        copy["zone"] = json!("us-test1-b");
        copy["name"] = json!(disk);
        copy.as_object_mut().unwrap().remove("users");
        copy.as_object_mut().unwrap().remove("devices");
        s["disks"][format!("{disk}@us-test1-b")] = copy;
    });
    let node = world.node(MASTER);
    let out = publish(&node, &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    let warnings = out.report().warnings.join("\n");
    assert!(
        warnings.contains(&format!("`{disk}` in zone `us-test1-b`")),
        "{warnings}"
    );
    assert!(
        warnings.contains(&format!("`{disk}` in zone `{ZONE}`")),
        "{warnings}"
    );
    world.assert_faithful();
}

#[test]
fn a_token_google_rejects_before_it_expires_is_fetched_again() {
    let (world, _) = one_member();
    // The first token the metadata server hands out is revoked (or the clock was off).
    world.change(|s| s["revoked_tokens"] = json!({ MASTER: [1] }));
    let node = world.node(MASTER);
    let out = run(
        &node,
        &["discover-volumes", "--cluster-id", CLUSTER, "-o", "json"],
    );
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(out.report().volumes.len(), 1, "{out:#?}");
    let statuses: Vec<u64> = world
        .requests()
        .iter()
        .map(|r| r["status"].as_u64().unwrap())
        .collect();
    assert_eq!(statuses.first(), Some(&401), "{statuses:?}");
    assert_eq!(statuses.last(), Some(&200), "{statuses:?}");
    world.assert_faithful();
}

#[test]
fn the_cluster_name_comes_from_the_metadata_server_not_compute_engine() {
    let (world, _) = one_member();
    // A role without `compute.instances.get` (kOps 1.36 gives its GCE workers none at all).
    world.change(|s| s["denied"] = json!(["compute.instances.get"]));
    let node = world.node(MASTER);
    let out = run(&node, &["discover-volumes", "--master", "-o", "json"]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(out.report().volumes.len(), 1, "{out:#?}");
    assert!(
        !world
            .requests()
            .iter()
            .any(|r| r["id"] == "compute.instances.get"),
        "asked Compute Engine for the instance"
    );
    world.assert_faithful();
}

#[test]
fn an_operation_still_running_at_the_deadline_says_what_was_running() {
    let (world, disk) = one_member();
    // Compute Engine takes ten minutes to attach the disk.
    world.change(|s| s["operation_seconds"] = json!(600));
    let node = world.node(MASTER);
    let out = run(
        &node,
        &[
            "mount",
            "--master",
            "--cluster-id",
            CLUSTER,
            "--timeout",
            "4s",
        ],
    );
    assert_eq!(out.code, 75, "{out:#?}");
    let error = out.error_lines()[0];
    assert!(
        error.contains("still `RUNNING`") && error.contains(&disk),
        "{out:#?}"
    );
    assert!(!error.contains("credentials"), "{out:#?}");
    world.assert_faithful();
}

#[test]
fn gce_messages_name_the_labels_an_operator_must_fix() {
    let world = GceWorld::new();
    world.add_instance(MASTER, ZONE, "10.0.0.1", CLUSTER, "master");
    // Member `a` of a list without `a`, and a disk without the role label.
    let bad = world.add_etcd_disk(CLUSTER, ZONE, "main", "a", &["b", "c"]);
    let roleless = world.add_etcd_disk(CLUSTER, ZONE, "events", "a", &["a"]);
    world.change(|s| {
        s["disks"][&roleless]["labels"]
            .as_object_mut()
            .unwrap()
            .remove("k8s-io-role-master");
    });
    let node = world.node(MASTER);
    let out = run(
        &node,
        &["discover-volumes", "--cluster-id", CLUSTER, "-o", "json"],
    );
    assert_eq!(out.code, 0, "{out:#?}");
    let warnings = out.report().warnings;
    let about = |disk: &str| {
        warnings
            .iter()
            .find(|w| w.contains(&format!("`{disk}`")))
            .cloned()
            .unwrap_or_else(|| panic!("no warning about {disk}: {warnings:?}"))
    };
    assert!(
        about(&bad).contains("label `k8s-io-etcd-main`"),
        "{warnings:?}"
    );
    assert!(
        about(&roleless).contains("`k8s-io-role-master` label"),
        "{warnings:?}"
    );
    assert!(
        !warnings.iter().any(|w| w.contains("k8s.io/")),
        "AWS tag keys on GCE: {warnings:?}"
    );
    world.assert_faithful();
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_formatted_label_without_its_filesystem_names_the_label() {
    let (world, disk) = one_member();
    world.change(|s| {
        s["disks"][&disk]["labels"]["k8s-io-protokube-formatted"] =
            json!("0e5b6f0c-7c0d-4d52-9b36-1ad2f0c1a8a1");
    });
    let node = world.node(MASTER);
    let device = LoopDevice::blank(64);
    node.link_disk(&disk, &device.path);
    let out = mount(&node);
    assert_eq!(out.code, 1, "{out:#?}");
    let error = out.error_lines()[0];
    assert!(
        error.contains("label `k8s-io-protokube-formatted="),
        "{out:#?}"
    );
    assert!(!error.contains("k8s.io/"), "{out:#?}");
    world.assert_faithful();
}
