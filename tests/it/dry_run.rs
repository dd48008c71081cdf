//! A dry run is the run's own plan (docs/safety.md): on a fresh node of each kind, for `sync` and for
//! each single command, the (kind, target, action) set `--dry-run` reports is the set the real
//! run then reports, and a dry run after the real run reports no change.

use crate::support;

use support::bed::{Bed, NodeKind};

const COMMANDS: [&str; 5] = [
    "sync",
    "discover-volumes",
    "mount",
    "render-manifests",
    "publish-dns",
];

fn check(kind: NodeKind) {
    for command in COMMANDS {
        if kind == NodeKind::Route53Worker && command == "discover-volumes" {
            // This bed has no cloud at all; listing volumes is nothing but a cloud query.
            continue;
        }
        let bed = Bed::new(kind);
        let dry = bed.run(command, &["--dry-run"]);
        assert_eq!(dry.code, 0, "{kind:?} {command} --dry-run: {dry:#?}");
        let planned = dry.report().change_set();
        let real = bed.run(command, &[]);
        assert_eq!(real.code, 0, "{kind:?} {command}: {real:#?}");
        let done = real.report().change_set();
        assert_eq!(
            planned, done,
            "{kind:?} {command}: the dry run (left) is not what the run did (right)"
        );
        let again = bed.run(command, &["--dry-run"]);
        assert_eq!(
            again.code, 0,
            "{kind:?} {command} --dry-run again: {again:#?}"
        );
        assert!(
            !again.report().changed,
            "{kind:?} {command}: a dry run after the run still plans changes: {again:#?}"
        );
    }
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn ha_master_with_route53() {
    check(NodeKind::HaMaster);
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn single_master_of_a_gossip_cluster() {
    check(NodeKind::GossipMaster);
}

#[test]
fn gossip_worker() {
    check(NodeKind::GossipWorker);
}

#[test]
fn route53_worker() {
    check(NodeKind::Route53Worker);
}

/// The kinds of change a fresh master's dry run announces: the whole bring-up.
#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_fresh_masters_dry_run_announces_the_whole_bring_up() {
    let bed = Bed::new(NodeKind::HaMaster);
    let planned = bed.run("sync", &["--dry-run"]).report().change_set();
    let root = bed.root.path().display().to_string();
    for volume in &bed.volumes {
        assert!(
            planned.contains(&("volume".into(), volume.clone(), "attach".into())),
            "{planned:#?}"
        );
        assert!(planned.contains(&("filesystem".into(), volume.clone(), "format".into())));
        let mountpoint = format!("{root}/mnt/master-{volume}");
        assert!(planned.contains(&("mount".into(), mountpoint.clone(), "mount".into())));
        // The etcd manifests the real run writes on the volume are announced too.
        let manifest = if volume == &bed.volumes[0] {
            "etcd"
        } else {
            "etcd-events"
        };
        assert!(
            planned.contains(&(
                "file".into(),
                format!("{mountpoint}/k8s.io/manifests/{manifest}.manifest"),
                "create".into()
            )),
            "{planned:#?}"
        );
    }
    assert!(planned.contains(&(
        "dns".into(),
        "etcd-a.internal.ha.example.com".into(),
        "create".into()
    )));
}
