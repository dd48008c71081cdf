//! A node's whole life against the local emulator and real loop devices: `reset` (its dry run,
//! its refusal while a volume is in use, idempotence, `sync` bringing the node back with its
//! data), growing an enlarged volume, owned names the cluster no longer has, `--adopt`, and
//! the etcd version guard.

use crate::support;

use std::collections::BTreeMap;
use std::path::Path;

use support::bed::{Bed, NodeKind, HA, REGION};
use support::{seed, Protokube};

type Records = BTreeMap<(String, String), (Option<i64>, Vec<String>)>;

fn records(node: &Bed) -> Records {
    support::runtime().block_on(async {
        seed::zone_records(&node.moto().route53().await, node.zone_id.as_ref().unwrap()).await
    })
}

fn key(name: &str, kind: &str) -> (String, String) {
    (name.to_owned(), kind.to_owned())
}

fn owner() -> String {
    format!("\"heritage=protokube,protokube/cluster={HA}\"")
}

/// Writes record sets (UPSERT, TTL 300) into the node's zone.
fn put(node: &Bed, sets: &[(&str, &str, &[&str])]) {
    let sets: Vec<(String, &str, Vec<String>)> = sets
        .iter()
        .map(|(name, kind, values)| {
            (
                (*name).to_owned(),
                *kind,
                values.iter().map(|v| (*v).to_owned()).collect(),
            )
        })
        .collect();
    support::runtime().block_on(async {
        seed::records(
            &node.moto().route53().await,
            node.zone_id.as_ref().unwrap(),
            &sets,
        )
        .await;
    });
}

fn manifest_names(node: &Bed) -> Vec<String> {
    support::dir_names(&node.root.join("/etc/kubernetes/manifests"))
}

/// After a reset: nothing of this node is left (manifests, mounts, its addresses in shared
/// names, the state), its members' names kept for the next master, other names untouched, and
/// its volumes still attached (no `--detach`).
fn assert_nothing_of_the_node_is_left(node: &Bed, before: &Records) {
    // Nothing of this node is left: manifests, mounts, its addresses in shared names, the state.
    assert!(
        manifest_names(node).is_empty(),
        "{:?}",
        manifest_names(node)
    );
    for disk in &node.disks {
        assert!(disk.mounted_at().is_empty(), "{:?}", disk.mounted_at());
    }
    assert!(!node.root.join("/var/lib/protokube/state.json").exists());
    let after = records(node);
    let shared = "api.internal.ha.example.com";
    assert!(!after.contains_key(&key(shared, "A")), "{after:#?}");
    assert!(!after.contains_key(&key(shared, "TXT")), "{after:#?}");
    // The member's own names follow its volume: kept for the master that claims it next (a
    // deleted name would leave the peers with NXDOMAIN cached for the zone's SOA minimum).
    for name in [
        "etcd-a.internal.ha.example.com",
        "etcd-events-a.internal.ha.example.com",
    ] {
        assert_eq!(
            after.get(&key(name, "A")),
            before.get(&key(name, "A")),
            "{name}: {after:#?}"
        );
        assert!(after.contains_key(&key(name, "TXT")), "{name}: {after:#?}");
    }
    // Other nodes' names and foreign records are untouched.
    for name in ["etcd-b.internal.ha.example.com", "foreign.ha.example.com"] {
        assert_eq!(
            after.get(&key(name, "A")),
            before.get(&key(name, "A")),
            "{name}"
        );
    }
    assert!(after.contains_key(&key("etcd-b.internal.ha.example.com", "TXT")));
    // Never formats, never deletes a volume: the volumes are still attached (no --detach).
    let tags = support::runtime().block_on(async {
        let ec2 = node.moto().ec2(REGION).await;
        seed::volume_tags(&ec2, &node.volumes[0]).await
    });
    assert!(!tags.is_empty());
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn reset_undoes_exactly_what_its_dry_run_lists_and_sync_brings_the_node_back() {
    let node = Bed::new(NodeKind::HaMaster);
    let out = node.run("sync", &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    let data = node.root.mountpoint(&node.volumes[0]).join("keep.txt");
    std::fs::write(&data, "etcd data").unwrap();
    let uuids: Vec<String> = node
        .disks
        .iter()
        .map(support::block::LoopDevice::uuid)
        .collect();
    // Another master's name (owned), and a record that is not ours.
    let owner = owner();
    put(
        &node,
        &[
            ("etcd-b.internal.ha.example.com", "A", &["10.9.9.2"]),
            ("etcd-b.internal.ha.example.com", "TXT", &[&owner]),
            ("foreign.ha.example.com", "A", &[&node.private_ip]),
        ],
    );
    let before = records(&node);

    let dry = node.run("reset", &["--dry-run"]);
    assert_eq!(dry.code, 0, "{dry:#?}");
    let planned = dry.report().change_set();
    assert_eq!(records(&node), before, "a dry run changes nothing");
    assert_eq!(manifest_names(&node).len(), 6);

    let out = node.run("reset", &["--detailed-exitcode"]);
    assert_eq!(out.code, 2, "{out:#?}");
    assert_eq!(
        out.report().change_set(),
        planned,
        "the dry run is the run's plan"
    );
    for action in ["unmount", "delete"] {
        assert!(
            planned.iter().any(|(_, _, a)| a == action),
            "{action} in {planned:#?}"
        );
    }
    assert_nothing_of_the_node_is_left(&node, &before);

    // A second reset changes nothing.
    let again = node.run("reset", &["--detailed-exitcode"]);
    assert_eq!(again.code, 0, "{again:#?}");
    assert!(!again.report().changed, "{again:#?}");

    // sync brings the node back with its data: no format.
    let back = node.run("sync", &[]);
    assert_eq!(back.code, 0, "{back:#?}");
    assert!(
        !back
            .report()
            .change_set()
            .iter()
            .any(|(_, _, a)| a == "format"),
        "{back:#?}"
    );
    let now: Vec<String> = node
        .disks
        .iter()
        .map(support::block::LoopDevice::uuid)
        .collect();
    assert_eq!(now, uuids);
    assert_eq!(std::fs::read_to_string(&data).unwrap(), "etcd data");
    assert_eq!(manifest_names(&node).len(), 6);
    let restored = records(&node);
    assert_eq!(
        restored
            .get(&key("etcd-a.internal.ha.example.com", "A"))
            .map(|r| r.1.clone()),
        Some(vec![node.private_ip.clone()])
    );
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn reset_detach_releases_the_volumes_for_another_master() {
    let node = Bed::new(NodeKind::HaMaster);
    assert_eq!(node.run("sync", &[]).code, 0);
    let dry = node.run("reset", &["--detach", "--dry-run"]);
    let out = node.run("reset", &["--detach"]);
    assert_eq!(out.code, 0, "{out:#?}");
    // The dry run is the run's plan, the retired marker included.
    assert_eq!(out.report().change_set(), dry.report().change_set());
    assert!(
        out.report().has(
            "create",
            &node
                .root
                .join("/var/lib/protokube/retired")
                .display()
                .to_string()
        ),
        "{out:#?}"
    );
    let detached: Vec<String> = out
        .report()
        .change_set()
        .into_iter()
        .filter(|(kind, _, action)| kind == "volume" && action == "detach")
        .map(|(_, target, _)| target)
        .collect();
    let mut expected = node.volumes.clone();
    expected.sort();
    assert_eq!(detached, expected);
    let states = support::runtime().block_on(async {
        let ec2 = node.moto().ec2(REGION).await;
        let out = ec2
            .describe_volumes()
            .set_volume_ids(Some(node.volumes.clone()))
            .send()
            .await
            .unwrap();
        out.volumes()
            .iter()
            .map(|v| v.attachments().len())
            .collect::<Vec<_>>()
    });
    assert_eq!(states, [0, 0], "detached");
    // Idempotent; and the node stays retired: its unit or timer running `sync` again claims
    // nothing, saying why.
    assert!(!node.run("reset", &["--detach"]).report().changed);
    let retired = node.root.join("/var/lib/protokube/retired");
    assert_eq!(
        std::fs::read_to_string(&retired).unwrap().trim(),
        node.instance_id
    );
    let out = node.run("sync", &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert!(out.report().warns("retired"), "{out:#?}");
    for volume in &node.volumes {
        assert!(
            node.attachments(volume).is_empty(),
            "{volume} claimed again"
        );
    }
    assert!(manifest_names(&node).iter().all(|m| !m.starts_with("etcd")));
    // Brought back by removing the marker: sync claims them again.
    std::fs::remove_file(&retired).unwrap();
    assert_eq!(node.run("sync", &[]).code, 0);
    assert_eq!(manifest_names(&node).len(), 6);
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn reset_while_a_process_uses_a_volume_exits_75_and_leaves_the_node_as_it_was() {
    let node = Bed::new(NodeKind::HaMaster);
    assert_eq!(node.run("sync", &[]).code, 0);
    let mountpoint = node.root.mountpoint(&node.volumes[0]);
    let file = mountpoint.join("held.txt");
    std::fs::write(&file, "x").unwrap();
    // A process holding a file open on the volume.
    let mut holder = support::Guard::new(
        std::process::Command::new("sh")
            .args(["-c", "exec 3<\"$0\"; exec sleep 60", file.to_str().unwrap()])
            .spawn()
            .unwrap(),
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    let manifests = manifest_names(&node);
    let before = records(&node);
    let out = node.run("reset", &["--timeout", "2s"]);
    let _ = holder.kill();
    let _ = holder.wait();
    assert_eq!(out.code, 75, "{out:#?}");
    let error = out.error_lines().join("\n");
    assert!(
        error.contains(&holder.id().to_string()) && error.contains("sleep"),
        "{error}"
    );
    assert_eq!(manifest_names(&node), manifests, "manifests put back");
    assert_eq!(
        node.disks[0].mounted_at(),
        [mountpoint.display().to_string()]
    );
    assert!(node.root.join("/var/lib/protokube/state.json").exists());
    assert_eq!(records(&node), before);
    // Converged as before.
    let out = node.run("sync", &["--detailed-exitcode"]);
    assert_eq!(out.code, 0, "{out:#?}");
}

#[test]
fn a_gossip_worker_reset_removes_its_hosts_block_and_kube_proxy() {
    let node = Bed::new(NodeKind::GossipWorker);
    std::fs::create_dir_all(node.root.join("/etc")).unwrap();
    std::fs::write(node.root.join("/etc/hosts"), "127.0.0.1\tlocalhost\n").unwrap();
    assert_eq!(node.run("sync", &[]).code, 0);
    let hosts = std::fs::read_to_string(node.root.join("/etc/hosts")).unwrap();
    assert!(hosts.contains("kops-controller.internal"), "{hosts}");
    assert_eq!(manifest_names(&node), ["kube-proxy.manifest"]);
    let dry = node.run("reset", &["--dry-run"]);
    let out = node.run("reset", &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(out.report().change_set(), dry.report().change_set());
    assert_eq!(
        std::fs::read_to_string(node.root.join("/etc/hosts")).unwrap(),
        "127.0.0.1\tlocalhost\n"
    );
    assert!(manifest_names(&node).is_empty());
    assert!(!node.run("reset", &[]).report().changed);
}

/// `df`'s size in 1 KiB blocks of the filesystem at `path`.
fn df_kib(path: &Path) -> u64 {
    let out = std::process::Command::new("df")
        .args(["--output=size", "-k"])
        .arg(path)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .nth(1)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn an_enlarged_volume_is_grown_online_where_allowed() {
    let node = Bed::new(NodeKind::HaMaster);
    assert_eq!(node.run("sync", &[]).code, 0);
    let mountpoint = node.root.mountpoint(&node.volumes[0]);
    std::fs::write(mountpoint.join("keep.txt"), "etcd data").unwrap();
    let small = df_kib(&mountpoint);
    // The EBS volume was enlarged: the loop device grows under the mounted filesystem.
    enlarge(&node.disks[0], "256M");

    let dry = node.run("sync", &["--dry-run"]);
    let out = node.run("sync", &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(out.report().change_set(), dry.report().change_set());
    if resized(&out, &node.volumes[0]) {
        // The kernel grew it online (this process has CAP_SYS_RESOURCE).
        assert!(
            df_kib(&mountpoint) > small * 3,
            "{} vs {small}",
            df_kib(&mountpoint)
        );
    } else {
        // No CAP_SYS_RESOURCE: a warning; it stays mounted as it is.
        let warned = out.report().warnings;
        assert!(
            warned.iter().any(|w| w.contains("CAP_SYS_RESOURCE")),
            "{warned:#?}"
        );
        assert_eq!(df_kib(&mountpoint), small);
    }
    assert_eq!(
        std::fs::read_to_string(mountpoint.join("keep.txt")).unwrap(),
        "etcd data"
    );
    // Converged: nothing more to grow.
    let out = node.run("sync", &["--detailed-exitcode"]);
    assert_eq!(out.code, 0, "{out:#?}");
}

/// Grows the loop device's backing file to `size` and tells the kernel.
fn enlarge(disk: &support::block::LoopDevice, size: &str) {
    let status = std::process::Command::new("truncate")
        .args(["-s", size])
        .arg(&disk.backing)
        .status()
        .unwrap();
    assert!(status.success());
    let status = std::process::Command::new("losetup")
        .arg("-c")
        .arg(&disk.path)
        .status()
        .unwrap();
    assert!(status.success());
}

/// Whether the run grew `volume`'s filesystem.
fn resized(out: &support::RunOutput, volume: &str) -> bool {
    out.report().has("resize", volume)
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_volume_enlarged_while_the_node_was_down_is_mounted_first_and_a_failed_grow_keeps_it_mounted() {
    let node = Bed::new(NodeKind::HaMaster);
    assert_eq!(node.run("sync", &[]).code, 0);
    let mountpoint = node.root.mountpoint(&node.volumes[0]);
    std::fs::write(mountpoint.join("keep.txt"), "etcd data").unwrap();
    let small = df_kib(&mountpoint);
    // A reboot, and the volume enlarged meanwhile.
    let status = std::process::Command::new("umount")
        .arg(&mountpoint)
        .status()
        .unwrap();
    assert!(status.success());
    enlarge(&node.disks[0], "256M");
    // resize2fs fails (a stand-in first on PATH): etcd's volume is mounted all the same, and
    // the run says why it was not grown.
    let tools = tempfile::tempdir().unwrap();
    let fake = tools.path().join("resize2fs");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho 'resize2fs: no space left for the journal' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        tools.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = node
        .command("sync", &node.spec(), &[])
        .env("PATH", &path)
        .run();
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(node.disks[0].mounted_at().len(), 1, "{out:#?}");
    assert!(!resized(&out, &node.volumes[0]), "{out:#?}");
    // Either the grow was tried online and failed (this process has CAP_SYS_RESOURCE), or it
    // could not be tried here: a warning either way, never a grow before mounting.
    let warned = out.report().warnings.join("\n");
    let tried = warned.contains("no space left for the journal");
    assert!(
        warned.contains(&node.volumes[0]) && (tried || warned.contains("CAP_SYS_RESOURCE")),
        "{out:#?}"
    );
    assert_eq!(df_kib(&mountpoint), small, "not grown offline either");
    assert_eq!(
        std::fs::read_to_string(mountpoint.join("keep.txt")).unwrap(),
        "etcd data"
    );
    if tried {
        // With a working resize2fs the next run grows it online, as its dry run says.
        let dry = node.run("sync", &["--dry-run"]);
        let out = node.run("sync", &[]);
        assert_eq!(out.code, 0, "{out:#?}");
        assert_eq!(out.report().change_set(), dry.report().change_set());
        assert!(resized(&out, &node.volumes[0]), "{out:#?}");
        assert!(df_kib(&mountpoint) > small * 3, "{}", df_kib(&mountpoint));
    }
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn owned_names_of_members_gone_from_the_tags_are_deleted_and_foreign_ones_stay() {
    let node = Bed::new(NodeKind::HaMaster);
    assert_eq!(node.run("sync", &[]).code, 0);
    let owner = owner();
    // What an earlier sync published for b and c; and a foreign record of the same shape.
    put(
        &node,
        &[
            ("etcd-b.internal.ha.example.com", "A", &["10.9.9.2"]),
            ("etcd-b.internal.ha.example.com", "TXT", &[&owner]),
            ("etcd-c.internal.ha.example.com", "A", &["10.9.9.3"]),
            ("etcd-c.internal.ha.example.com", "TXT", &[&owner]),
            ("etcd-events-b.internal.ha.example.com", "A", &["10.9.9.2"]),
            ("etcd-events-b.internal.ha.example.com", "TXT", &[&owner]),
            ("etcd-d.internal.ha.example.com", "A", &["10.9.9.4"]),
        ],
    );
    // While b and c are members (their volumes merely unattached), their names stay.
    let out = node.run("sync", &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert!(records(&node).contains_key(&key("etcd-b.internal.ha.example.com", "A")));

    // The cluster shrinks to one member: a/a,b,c becomes a/a, b and c's volumes go.
    support::runtime().block_on(async {
        let ec2 = node.moto().ec2(REGION).await;
        let all = ec2
            .describe_volumes()
            .filters(
                aws_sdk_ec2::types::Filter::builder()
                    .name("tag:KubernetesCluster")
                    .values(HA)
                    .build(),
            )
            .send()
            .await
            .unwrap();
        for volume in all.volumes() {
            let id = volume.volume_id().unwrap().to_owned();
            if node.volumes.contains(&id) {
                let tags = seed::volume_tags(&ec2, &id).await;
                let etcd_key = tags.keys().find(|k| k.starts_with("k8s.io/etcd/")).unwrap();
                ec2.create_tags()
                    .resources(&id)
                    .tags(
                        aws_sdk_ec2::types::Tag::builder()
                            .key(etcd_key)
                            .value("a/a")
                            .build(),
                    )
                    .send()
                    .await
                    .unwrap();
            } else {
                ec2.delete_volume().volume_id(&id).send().await.unwrap();
            }
        }
    });
    // Tags and unattached volumes are not in the masters' answer: the next full check (here at
    // once, `--verify-interval 0`; else within the interval) finds the change.
    let dry = node.run("sync", &["--dry-run", "--verify-interval", "0"]);
    let out = node.run("sync", &["--verify-interval", "0"]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(out.report().change_set(), dry.report().change_set());
    let after = records(&node);
    for name in [
        "etcd-b.internal.ha.example.com",
        "etcd-c.internal.ha.example.com",
        "etcd-events-b.internal.ha.example.com",
    ] {
        assert!(!after.contains_key(&key(name, "A")), "{name}: {after:#?}");
        assert!(!after.contains_key(&key(name, "TXT")), "{name}: {after:#?}");
        assert!(
            out.report()
                .change_set()
                .contains(&("dns".into(), name.into(), "delete".into())),
            "{out:#?}"
        );
    }
    assert_eq!(
        after
            .get(&key("etcd-d.internal.ha.example.com", "A"))
            .map(|r| r.1.clone()),
        Some(vec!["10.9.9.4".to_owned()]),
        "a foreign record stays"
    );
    assert!(after.contains_key(&key("etcd-a.internal.ha.example.com", "A")));
    // Converged.
    assert_eq!(node.run("sync", &["--detailed-exitcode"]).code, 0);
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn names_dns_controller_left_are_adopted_only_with_adopt() {
    let node = Bed::new(NodeKind::HaMaster);
    // As kOps' dns-controller leaves them: addresses, no ownership TXT.
    put(
        &node,
        &[
            ("api.internal.ha.example.com", "A", &[&node.private_ip]),
            ("etcd-a.internal.ha.example.com", "A", &["10.9.9.9"]),
        ],
    );
    let out = node.run("sync", &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    let warned = out.report().warnings;
    for name in [
        "api.internal.ha.example.com",
        "etcd-a.internal.ha.example.com",
    ] {
        assert!(
            warned
                .iter()
                .any(|w| w.contains(name) && w.contains("--adopt")),
            "{name}: {warned:#?}"
        );
    }
    let left = records(&node);
    assert_eq!(
        left.get(&key("etcd-a.internal.ha.example.com", "A"))
            .map(|r| r.1.clone()),
        Some(vec!["10.9.9.9".to_owned()])
    );
    assert!(!left.contains_key(&key("etcd-a.internal.ha.example.com", "TXT")));

    let dry = node.run("sync", &["--adopt", "--dry-run"]);
    let out = node.run("sync", &["--adopt"]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(out.report().change_set(), dry.report().change_set());
    let adopted = records(&node);
    for name in [
        "api.internal.ha.example.com",
        "etcd-a.internal.ha.example.com",
    ] {
        assert_eq!(
            adopted.get(&key(name, "TXT")).map(|r| r.1.clone()),
            Some(vec![owner()]),
            "{name}"
        );
        assert_eq!(
            adopted.get(&key(name, "A")).map(|r| r.1.clone()),
            Some(vec![node.private_ip.clone()]),
            "{name}"
        );
    }
    // Converged, and no flag needed any more.
    let out = node.run("sync", &["--detailed-exitcode"]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert!(out.report().warnings.iter().all(|w| !w.contains("--adopt")));
}

/// The etcd version record of the bed's first volume (member a of `main`).
fn version_record(node: &Bed) -> std::path::PathBuf {
    node.root
        .mountpoint(&node.volumes[0])
        .join("k8s.io/manifests/etcd-version")
}

/// `ha.yaml` with every etcd cluster at `version`.
fn spec_at_version(dir: &Path, version: &str) -> std::path::PathBuf {
    let mut doc: yaml_serde::Value = yaml_serde::from_str(
        &std::fs::read_to_string(support::fixture("cluster-completed/ha.yaml")).unwrap(),
    )
    .unwrap();
    for cluster in doc["spec"]["etcdClusters"].as_sequence_mut().unwrap() {
        cluster["version"] = yaml_serde::Value::from(version);
    }
    let file = dir.join(format!("ha-etcd-{version}.yaml"));
    std::fs::write(&file, yaml_serde::to_string(&doc).unwrap()).unwrap();
    file
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn an_etcd_downgrade_or_a_skipped_minor_is_refused_before_anything_is_written() {
    let node = Bed::new(NodeKind::HaMaster);
    let dir = tempfile::tempdir().unwrap();
    // ha.yaml runs etcd 3.5.13; no etcd runs here to report a version, so nothing is recorded
    // until the record an earlier run made when etcd 3.5.13 reported is put there.
    assert_eq!(node.run("sync", &[]).code, 0);
    let record = version_record(&node);
    assert!(!record.exists());
    std::fs::write(&record, "3.5.13\n").unwrap();
    let manifest = node
        .root
        .mountpoint(&node.volumes[0])
        .join("k8s.io/manifests/etcd.manifest");
    let before = std::fs::read(&manifest).unwrap();

    // 3.5 data, a spec asking for 3.4: refused, nothing written.
    let older = spec_at_version(dir.path(), "3.4.13");
    let out = node.run_with_spec("sync", &older, &[]);
    assert_eq!(out.code, 1, "{out:#?}");
    let error = out.error_lines().join("\n");
    assert!(
        error.contains("3.5.13")
            && error.contains("3.4.13")
            && node.volumes.iter().any(|v| error.contains(v.as_str())),
        "{error}"
    );
    assert_eq!(std::fs::read(&manifest).unwrap(), before);
    assert_eq!(std::fs::read_to_string(&record).unwrap(), "3.5.13\n");
    assert_eq!(out.report().real_changes().count(), 0, "{out:#?}");

    // 3.4 data, a spec asking for 3.6: refused with the path forward.
    std::fs::write(&record, "3.4.23\n").unwrap();
    let skip = spec_at_version(dir.path(), "3.6.0");
    let out = Protokube::new()
        .args(["render-manifests"])
        .arg_path("--root", node.root.path())
        .arg_path("--cluster-spec", &skip)
        .args(["--master", "--cluster-id", HA])
        .run();
    assert_eq!(out.code, 1, "{out:#?}");
    let error = out.error_lines().join("\n");
    assert!(error.contains("3.5.x first"), "{error}");
    assert_eq!(std::fs::read(&manifest).unwrap(), before);

    // One minor up is an upgrade: done; the record waits for etcd to report the new version.
    let next = spec_at_version(dir.path(), "3.5.15");
    let out = node.run_with_spec("sync", &next, &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert_ne!(std::fs::read(&manifest).unwrap(), before);
    assert_eq!(std::fs::read_to_string(&record).unwrap(), "3.4.23\n");
}

/// The id of the volume of `HA` whose `k8s.io/etcd/<key>` tag is `value`.
fn volume_tagged(node: &Bed, key: &str, value: &str) -> String {
    support::runtime().block_on(async {
        let ec2 = node.moto().ec2(REGION).await;
        let found = ec2
            .describe_volumes()
            .filters(
                aws_sdk_ec2::types::Filter::builder()
                    .name(format!("tag:k8s.io/etcd/{key}"))
                    .values(value)
                    .build(),
            )
            .send()
            .await
            .unwrap();
        found.volumes()[0].volume_id().unwrap().to_owned()
    })
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_partial_view_deletes_no_live_name() {
    let node = Bed::new(NodeKind::HaMaster);
    assert_eq!(node.run("sync", &[]).code, 0);
    let owner = owner();
    // Member b's name, as the master holding b's volume published it.
    put(
        &node,
        &[
            ("etcd-b.internal.ha.example.com", "A", &["10.9.9.2"]),
            ("etcd-b.internal.ha.example.com", "TXT", &[&owner]),
        ],
    );
    // Member b's volume drops out of the answer (a tag typo, a retag in flight) while the other
    // volumes still list b as a member.
    let b = volume_tagged(&node, "main", "b/a,b,c");
    node.tag_volume(&b, "k8s.io/etcd/main", "b/a,b/c");
    for _ in 0..2 {
        let out = node.run("sync", &["--verify-interval", "0"]);
        assert_eq!(out.code, 0, "{out:#?}");
        assert!(out.report().warns(&b), "{out:#?}");
        let after = records(&node);
        assert_eq!(
            after
                .get(&key("etcd-b.internal.ha.example.com", "A"))
                .map(|r| r.1.clone()),
            Some(vec!["10.9.9.2".to_owned()]),
            "{after:#?}"
        );
    }
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_public_name_the_spec_no_longer_has_goes_only_after_the_verify_interval() {
    let node = Bed::new(NodeKind::HaMaster);
    assert_eq!(node.run("sync", &[]).code, 0);
    let old = "api.ha.example.com";
    assert!(records(&node).contains_key(&key(old, "A")));
    // A rolling update to a spec with another public name: the masters not yet replaced still
    // publish the old one, so a master with the new spec waits it out.
    let dir = tempfile::tempdir().unwrap();
    let renamed = support::spec_with(
        dir.path(),
        "ha.yaml",
        &["spec", "masterPublicName"],
        "api2.ha.example.com".into(),
    );
    for _ in 0..2 {
        let out = node.run_with_spec("sync", &renamed, &[]);
        assert_eq!(out.code, 0, "{out:#?}");
        let after = records(&node);
        assert!(after.contains_key(&key(old, "A")), "{after:#?}");
        assert!(after.contains_key(&key("api2.ha.example.com", "A")));
        assert!(!out.report().has("delete", old), "{out:#?}");
    }
    let state: serde_json::Value = serde_json::from_slice(
        &std::fs::read(node.root.join("/var/lib/protokube/state.json")).unwrap(),
    )
    .unwrap();
    assert!(
        state["missing_names"][old]["since"].is_string(),
        "{state:#}"
    );
    // Missing on full checks spanning the interval (here 0): deleted, as its dry run says.
    let dry = node.run_with_spec("sync", &renamed, &["--dry-run", "--verify-interval", "0"]);
    let out = node.run_with_spec("sync", &renamed, &["--verify-interval", "0"]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(out.report().change_set(), dry.report().change_set());
    assert!(out.report().has("delete", old), "{out:#?}");
    let after = records(&node);
    assert!(!after.contains_key(&key(old, "A")), "{after:#?}");
    assert!(!after.contains_key(&key(old, "TXT")), "{after:#?}");
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn reset_never_detaches_a_volume_still_mounted_elsewhere() {
    let node = Bed::new(NodeKind::HaMaster);
    assert_eq!(node.run("sync", &[]).code, 0);
    let manifests = manifest_names(&node);
    // A bind mount of the volume elsewhere (what a container's volume mount is): the
    // filesystem outlives protokube's own unmount.
    let elsewhere = tempfile::tempdir().unwrap();
    let mountpoint = node.root.mountpoint(&node.volumes[0]);
    let status = std::process::Command::new("mount")
        .arg("--bind")
        .arg(&mountpoint)
        .arg(elsewhere.path())
        .status()
        .unwrap();
    assert!(status.success());
    let dry = node.run("reset", &["--detach", "--dry-run"]);
    let out = node.run("reset", &["--detach"]);
    support::block::unmount_below(elsewhere.path());
    assert_eq!((dry.code, out.code), (75, 75), "{out:#?}");
    let line = out.error_lines()[0];
    assert!(
        line.contains(&node.volumes[0])
            && line.contains(&elsewhere.path().display().to_string())
            && line.contains("nothing was changed"),
        "{line}"
    );
    // Nothing was changed: manifests, mounts and attachments as they were.
    assert_eq!(manifest_names(&node), manifests);
    for (volume, disk) in node.volumes.iter().zip(&node.disks) {
        assert_eq!(disk.mounted_at().len(), 1, "{volume}");
        assert_eq!(node.attachments(volume).len(), 1, "{volume}");
    }
    // Released there, reset detaches it.
    let out = node.run("reset", &["--detach"]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert!(node.attachments(&node.volumes[0]).is_empty());
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_mounted_volume_dropped_from_the_answer_stays_recorded_and_reset_still_releases_it() {
    let node = Bed::new(NodeKind::HaMaster);
    assert_eq!(node.run("sync", &[]).code, 0);
    let dropped = node.volumes[0].clone();
    // A bad tag: the volume drops out of the cluster's answer while etcd runs on it.
    node.tag_volume(&dropped, "k8s.io/etcd/main", "a/a,b/c");
    let out = node.run("sync", &["--verify-interval", "0"]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert!(out.report().warns(&dropped), "{out:#?}");
    assert_eq!(node.disks[0].mounted_at().len(), 1);
    let state = std::fs::read_to_string(node.root.join("/var/lib/protokube/state.json")).unwrap();
    assert!(state.contains(&dropped), "{state}");
    // reset --detach still finds it: unmounted and detached, or it would not report success.
    let out = node.run("reset", &["--detach"]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert!(node.disks[0].mounted_at().is_empty());
    assert!(node.attachments(&dropped).is_empty(), "{out:#?}");
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_minor_upgrade_waits_for_every_member_and_the_recorded_version_is_tagged() {
    let node = Bed::new(NodeKind::HaMaster);
    let dir = tempfile::tempdir().unwrap();
    // The volume records etcd 3.5.13 (as an earlier run did when etcd reported it): sync tags
    // the volume with it for the other members.
    assert_eq!(node.run("sync", &[]).code, 0);
    let record = version_record(&node);
    std::fs::write(&record, "3.5.13\n").unwrap();
    assert_eq!(node.run("sync", &["--verify-interval", "0"]).code, 0);
    let tag = "k8s.io/protokube/etcd-version/main";
    assert_eq!(
        node.volume_tags(&node.volumes[0])
            .get(tag)
            .map(String::as_str),
        Some("3.5.13")
    );
    // Member b's volume says its data still runs 3.4: this member may not go to 3.6.
    let b = volume_tagged(&node, "main", "b/a,b,c");
    node.tag_volume(&b, tag, "3.4.23");
    let newer = spec_at_version(dir.path(), "3.6.0");
    let out = node.run_with_spec("sync", &newer, &["--verify-interval", "0"]);
    assert_eq!(out.code, 1, "{out:#?}");
    let error = out.error_lines().join("\n");
    assert!(
        error.contains(&b) && error.contains("3.4.23") && error.contains("3.5.x first"),
        "{error}"
    );
    // Once b runs 3.5, the upgrade goes; the tag follows the record once etcd 3.6 reported.
    node.tag_volume(&b, tag, "3.5.13");
    let out = node.run_with_spec("sync", &newer, &["--verify-interval", "0"]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(
        node.volume_tags(&node.volumes[0])
            .get(tag)
            .map(String::as_str),
        Some("3.5.13")
    );
    std::fs::write(&record, "3.6.0\n").unwrap();
    let out = node.run_with_spec("sync", &newer, &["--verify-interval", "0"]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(
        node.volume_tags(&node.volumes[0])
            .get(tag)
            .map(String::as_str),
        Some("3.6.0")
    );
}
