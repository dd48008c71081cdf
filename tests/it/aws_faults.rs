//! AWS as it fails for real (docs/safety.md), injected by the test layer in front of moto
//! (`scripts/moto_server.py`), with real loop devices: an AttachVolume that succeeded but whose
//! answer was lost (the SDK's retry gets `VolumeInUse`), an attachment stuck in `attaching`, a
//! stale read showing the previous owner's `detaching` attachment, a second volume of one etcd
//! key attached here, throttling past the SDK's retries, a slow service, listings whose pages are
//! empty before the last, a metadata service that never answers, and a public name that is one
//! of the cluster's internal names on Route53.

use crate::support;

use serde_json::json;
use support::bed::{Bed, NodeKind, REGION};
use support::block::{LoopDevice, TestRoot};
use support::{fixture, seed, Protokube};

const CLUSTER: &str = "c.example.com";

/// Two volumes of etcd cluster `main` in this zone (members a and b), each on a loop device.
fn two_mains(node: &Bed) -> (Vec<String>, Vec<LoopDevice>) {
    let disks = vec![LoopDevice::blank(32), LoopDevice::blank(32)];
    let volumes: Vec<String> = ["a", "b"]
        .iter()
        .map(|m| node.etcd_volume(CLUSTER, &[("main", &format!("{m}/a,b"))]))
        .collect();
    for (volume, disk) in volumes.iter().zip(&disks) {
        node.root.link_by_id(volume, &disk.path);
    }
    (volumes, disks)
}

fn attached_here(node: &Bed, volumes: &[String]) -> Vec<String> {
    volumes
        .iter()
        .filter(|v| {
            node.attachments(v)
                .iter()
                .any(|(i, _)| *i == node.instance_id)
        })
        .cloned()
        .collect()
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn an_attach_whose_answer_was_lost_is_recognised_as_ours() {
    let node = Bed::new(NodeKind::Bare);
    let (volumes, _disks) = two_mains(&node);
    // The first AttachVolume succeeds, its answer is lost (503): the SDK retries, and EC2 says
    // VolumeInUse — about our own attachment.
    node.moto().set_faults(json!([{
        "match": "AttachVolume", "after": true, "count": 1,
        "status": 503, "code": "ServiceUnavailable"
    }]));
    let out = node.mount(CLUSTER, &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(
        attached_here(&node, &volumes).len(),
        1,
        "one main volume only"
    );
    let attaches = node.moto().count("AttachVolume");
    assert_eq!(attaches, 2, "the SDK retried the attach once");
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn an_attachment_stuck_attaching_is_detached_and_the_run_is_not_ready() {
    let node = Bed::new(NodeKind::Bare);
    let disk = LoopDevice::blank(32);
    let volume = node.etcd_volume(CLUSTER, &[("main", "a/a")]);
    node.root.link_by_id(&volume, &disk.path);
    node.moto()
        .set_faults(json!([{"match": "DescribeVolumes", "stuck_attaching": volume}]));
    let out = node.mount(CLUSTER, &[]);
    assert_eq!(out.code, 75, "{out:#?}");
    assert!(out.error_lines()[0].contains("attaching"), "{out:#?}");
    let report = out.report();
    assert!(report.has("detach", &volume), "{report:#?}");
    assert!(
        node.attachments(&volume).is_empty(),
        "detached in the cloud"
    );
    assert!(disk.fs_type().is_none(), "never formatted");
    // Once EC2 behaves, the next run attaches it again, under another device name than the one
    // it got stuck on (as the EBS CSI driver rotates them).
    node.moto().set_faults(json!([]));
    let out = node.mount(CLUSTER, &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(
        node.attachments(&volume),
        [(node.instance_id.clone(), "/dev/xvdv".to_owned())]
    );
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_node_clock_ahead_of_ec2_does_not_make_a_fresh_attachment_stuck() {
    let node = Bed::new(NodeKind::Bare);
    let disk = LoopDevice::blank(32);
    let volume = node.etcd_volume(CLUSTER, &[("main", "a/a")]);
    node.root.link_by_id(&volume, &disk.path);
    // EC2's clock is ten minutes behind this node's (a node's clock at first boot, before NTP):
    // by EC2's own clock the attachment began 30 s before its answer.
    node.moto().set_faults(json!([{
        "match": "DescribeVolumes", "stuck_attaching": volume,
        "attached_ago": 30, "clock_skew": -600
    }]));
    let out = node.mount(CLUSTER, &["--timeout", "4s"]);
    assert_eq!(out.code, 75, "{out:#?}");
    let report = out.report();
    assert!(!report.has("detach", &volume), "{report:#?}");
    assert_eq!(node.attachments(&volume).len(), 1, "not detached");
    assert!(
        out.error_lines()[0].contains("to be attached"),
        "waited, then not ready: {out:#?}"
    );
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_stale_read_of_the_previous_owner_detaching_is_waited_out() {
    let node = Bed::new(NodeKind::Bare);
    let disk = LoopDevice::blank(32);
    let volume = node.etcd_volume(CLUSTER, &[("main", "a/a")]);
    node.root.link_by_id(&volume, &disk.path);
    node.moto().set_faults(json!([{
        "match": "DescribeVolumes", "count": 1,
        "detaching_shadow": {"volume": volume, "instance": "i-0123456789abcdef0"}
    }]));
    let out = node.mount(CLUSTER, &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(disk.fs_type().as_deref(), Some("ext4"));
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_second_volume_of_one_etcd_cluster_attached_here_is_detached() {
    let node = Bed::new(NodeKind::Bare);
    let (volumes, disks) = two_mains(&node);
    support::runtime().block_on(async {
        let ec2 = node.moto().ec2(REGION).await;
        seed::attach(&ec2, &volumes[0], &node.instance_id, "/dev/xvdu").await;
        seed::attach(&ec2, &volumes[1], &node.instance_id, "/dev/xvdv").await;
    });
    // Neither is mounted: the one with the lowest id is kept.
    let (kept, extra) = if volumes[0] < volumes[1] {
        (0, 1)
    } else {
        (1, 0)
    };
    let out = node.mount(CLUSTER, &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(attached_here(&node, &volumes), [volumes[kept].clone()]);
    let report = out.report();
    assert!(report.has("detach", &volumes[extra]), "{report:#?}");
    assert_eq!(disks[kept].mounted_at().len(), 1);
    assert!(disks[extra].mounted_at().is_empty());
}

#[test]
fn throttling_past_the_retries_or_a_slow_service_is_not_ready() {
    let node = Bed::new(NodeKind::Bare);
    let _volume = node.etcd_volume(CLUSTER, &[("main", "a/a")]);
    node.moto().set_faults(json!([{
        "match": "DescribeVolumes", "rate": 1.0, "status": 503, "code": "RequestLimitExceeded"
    }]));
    let out = node.mount(CLUSTER, &[]);
    assert_eq!(out.code, 75, "{out:#?}");
    let line = &out.error_lines()[0];
    assert!(
        line.contains("RequestLimitExceeded") && line.contains("ec2:DescribeVolumes"),
        "{line}"
    );
    let tries = node.moto().count("DescribeVolumes");
    assert_eq!(tries, 6, "the SDK's attempts, then 75");
    // An answer slower than --timeout: 75 once the timeout has passed, not after every retry.
    node.moto()
        .set_faults(json!([{"match": "DescribeVolumes", "delay": 30}]));
    let out = node.mount(CLUSTER, &["--timeout", "2s"]);
    assert_eq!(out.code, 75, "{out:#?}");
    assert!(out.error_lines()[0].contains("--timeout"), "{out:#?}");
}

#[test]
fn listings_follow_their_pages_through_empty_ones() {
    let node = Bed::new(NodeKind::Bare);
    let volume = node.etcd_volume(CLUSTER, &[("main", "a/a")]);
    node.moto()
        .set_faults(json!([{"match": "DescribeVolumes", "empty_pages": 3}]));
    let out = support::Protokube::new()
        .moto(node.moto())
        .imds(node.imds())
        .args(["discover-volumes", "--cluster-id", CLUSTER, "-o", "json"])
        .run();
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(out.report().volumes[0].id, volume);
    let pages = node.moto().count("DescribeVolumes");
    assert_eq!(pages, 4);

    // The masters, on a worker: DescribeInstances through two empty pages.
    let bed = support::bed::Bed::new(support::bed::NodeKind::GossipWorker);
    bed.moto()
        .set_faults(json!([{"match": "DescribeInstances", "empty_pages": 2}]));
    let out = bed.run("publish-dns", &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    let hosts = std::fs::read_to_string(bed.root.join("/etc/hosts")).unwrap();
    assert!(hosts.contains("api.internal.minimal.k8s.local"), "{hosts}");
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_public_name_among_the_internal_names_is_refused_on_route53_too() {
    let inputs = tempfile::tempdir().unwrap();
    for public in [
        format!("etcd-a.internal.{}", support::bed::HA),
        format!("kops-controller.internal.{}", support::bed::HA),
    ] {
        let bed = Bed::new(NodeKind::HaMaster);
        let spec = support::spec_with(
            inputs.path(),
            "ha.yaml",
            &["spec", "masterPublicName"],
            public.clone().into(),
        );
        let out = bed.run_with_spec("sync", &spec, &[]);
        assert_eq!(out.code, 1, "{public}: {out:#?}");
        assert!(out.error_lines()[0].contains(&public), "{public}: {out:#?}");
        assert!(
            bed.moto().operations().is_empty(),
            "{public}: asked the cloud"
        );
        for disk in &bed.disks {
            assert!(disk.mounted_at().is_empty());
        }
    }
}

#[test]
fn a_dead_metadata_service_changes_nothing() {
    let root = TestRoot::new();
    let out = Protokube::new()
        .args(["sync", "--master", "--timeout", "3s"])
        .arg_path(
            "--cluster-spec",
            &fixture("cluster-completed/minimal_gossip.yaml"),
        )
        .arg_path("--root", root.path())
        .run();
    // Waited for up to --timeout, then not ready (a later run may find it).
    assert_eq!(out.code, 75, "{out:#?}");
    assert_eq!(out.error_lines().len(), 1, "{out:#?}");
    assert!(out.error_lines()[0].contains("--instance-id"), "{out:#?}");
    let left: Vec<_> = std::fs::read_dir(root.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != "run")
        .collect();
    // Only the run lock's directory: no mount, manifest, state or hosts file.
    assert!(left.is_empty(), "{left:?}");
}
