//! Paths under hostile or unusual hosts (docs/safety.md): `--root` and every host path are resolved
//! as `chroot` would (a `/mnt -> var/mnt` host, a relative root converge); a symlink where
//! protokube expects its own directory or file is refused, never followed; the mount source is
//! the canonical device; an NVMe namespace must carry the volume's serial whichever path found
//! it; a state file the mount table contradicts is not trusted.

use crate::support;

use support::bed::{Bed, NodeKind};
use support::block::{mount_points, LoopDevice};

/// Runs `sync` until converged: the first run changes, the second reports nothing to do.
fn converges(bed: &Bed, extra: &[&str]) {
    let out = bed.run("sync", extra);
    assert_eq!(out.code, 0, "{out:#?}");
    let again = bed.run("sync", extra);
    assert_eq!(again.code, 0, "{again:#?}");
    assert!(!again.report().changed, "not converged: {again:#?}");
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_host_whose_mnt_is_a_symlink_converges() {
    // Fedora CoreOS: /mnt -> var/mnt.
    let bed = Bed::new(NodeKind::GossipMaster);
    std::fs::create_dir_all(bed.root.join("/var/mnt")).unwrap();
    std::os::unix::fs::symlink("var/mnt", bed.root.join("/mnt")).unwrap();
    converges(&bed, &[]);
    for (volume, disk) in bed.volumes.iter().zip(&bed.disks) {
        let real = bed.root.join(&format!("/var/mnt/master-{volume}"));
        assert_eq!(disk.mounted_at(), [real.display().to_string()]);
    }
    let state: serde_json::Value = serde_json::from_slice(
        &std::fs::read(bed.root.join("/var/lib/protokube/state.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(state["volumes"].as_array().unwrap().len(), 2, "{state:#}");
    // The etcd manifest's link resolves on the host (through /mnt) to the file on the volume.
    let text =
        std::fs::read_to_string(bed.root.join("/etc/kubernetes/manifests/etcd.manifest")).unwrap();
    assert!(text.contains("etcd-server"));
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_relative_root_or_one_with_dots_converges() {
    let bed = Bed::new(NodeKind::GossipMaster);
    let parent = bed.root.path().parent().unwrap();
    let name = bed.root.path().file_name().unwrap().to_str().unwrap();
    let spec = bed.spec();
    let out = bed
        .command("sync", &spec, &["--root", name])
        .current_dir(parent)
        .run();
    assert_eq!(out.code, 0, "{out:#?}");
    let dotted = format!("{}/./", bed.root.path().display());
    let again = bed.run("sync", &["--root", &dotted]);
    assert_eq!(again.code, 0, "{again:#?}");
    assert!(!again.report().changed, "{again:#?}");
    let relative = bed
        .command("sync", &spec, &["--root", name])
        .current_dir(parent)
        .run();
    assert!(!relative.report().changed, "{relative:#?}");
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_planted_mount_point_symlink_is_refused() {
    let bed = Bed::new(NodeKind::GossipMaster);
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(bed.root.join("/mnt")).unwrap();
    let planted = bed.root.join(&format!("/mnt/master-{}", bed.volumes[0]));
    std::os::unix::fs::symlink(outside.path(), &planted).unwrap();
    let out = bed.run("sync", &[]);
    assert_eq!(out.code, 1, "{out:#?}");
    assert!(out.error_lines()[0].contains("is a symlink"), "{out:#?}");
    assert!(bed.disks[0].mounted_at().is_empty());
    let outside_text = outside.path().display().to_string();
    assert!(!mount_points().iter().any(|(_, mp)| *mp == outside_text));
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_planted_symlink_on_the_volume_is_refused() {
    let bed = Bed::new(NodeKind::GossipMaster);
    converges(&bed, &[]);
    let outside = tempfile::tempdir().unwrap();
    let mountpoint = bed.root.mountpoint(&bed.volumes[0]);
    for planted in ["k8s.io", "var"] {
        let path = mountpoint.join(planted);
        let kept = mountpoint.join(format!("{planted}.kept"));
        let existed = path.exists();
        if existed {
            std::fs::rename(&path, &kept).unwrap();
        }
        std::os::unix::fs::symlink(outside.path(), &path).unwrap();
        let out = bed.run("render-manifests", &[]);
        assert_eq!(out.code, 1, "{planted}: {out:#?}");
        assert!(out.error_lines()[0].contains("is a symlink"), "{out:#?}");
        assert_eq!(
            std::fs::read_dir(outside.path()).unwrap().count(),
            0,
            "{planted}"
        );
        std::fs::remove_file(&path).unwrap();
        if existed {
            std::fs::rename(&kept, &path).unwrap();
        }
    }
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn the_mount_source_is_the_canonical_device() {
    let bed = Bed::new(NodeKind::GossipMaster);
    converges(&bed, &[]);
    let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    for volume in &bed.volumes {
        let mountpoint = bed.root.mountpoint(volume).display().to_string();
        let line = table
            .lines()
            .find(|l| l.split(' ').nth(4) == Some(mountpoint.as_str()))
            .unwrap();
        let source = line.split(" - ").nth(1).unwrap().split(' ').nth(1).unwrap();
        assert!(
            source.starts_with(&bed.root.join("/dev/nvme").display().to_string()),
            "{source}"
        );
        assert!(!source.contains("by-id"), "{source}");
    }
}

/// A volume of `cluster` whose by-id link leads to `target` (a device node under the root).
fn by_id_to(node: &Bed, cluster: &str, disk: &LoopDevice, target: &str) -> String {
    let volume = node.etcd_volume(cluster, &[("main", "a/a")]);
    node.root.device_node(&format!("/dev/{target}"), &disk.path);
    let link = node.root.join(&format!(
        "/dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_{}",
        volume.replace('-', "")
    ));
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(format!("../../{target}"), link).unwrap();
    volume
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn devices_that_may_not_be_the_volume_are_refused() {
    let node = Bed::new(NodeKind::Bare);
    let cases = [
        ("xvdz", "not an NVMe namespace"),
        ("nvme7n1p1", "partition"),
        ("nvme8n1", "serial cannot be read"),
    ];
    for (i, (target, found)) in cases.into_iter().enumerate() {
        let disk = LoopDevice::blank(32);
        let cluster = format!("d{i}.example.com");
        let volume = by_id_to(&node, &cluster, &disk, target);
        let out = node.mount(&cluster, &[]);
        assert_eq!(out.code, 1, "{target}: {out:#?}");
        assert!(out.error_lines()[0].contains(found), "{target}: {out:#?}");
        assert!(disk.fs_type().is_none(), "{target}: formatted");
        assert!(disk.mounted_at().is_empty(), "{target}");
        node.detach(&volume);
    }
    // Found by its requested name, an NVMe namespace must still carry the volume's serial.
    let disk = LoopDevice::blank(32);
    let volume = node.etcd_volume("d9.example.com", &[("main", "a/a")]);
    node.root.device_node("/dev/nvme9n1", &disk.path);
    std::os::unix::fs::symlink("nvme9n1", node.root.join("/dev/xvdu")).unwrap();
    let serial = node.root.join("/sys/block/nvme9n1/device/serial");
    std::fs::create_dir_all(serial.parent().unwrap()).unwrap();
    std::fs::write(&serial, "vol0fffffffffffffff\n").unwrap();
    let out = node.mount("d9.example.com", &[]);
    assert_eq!(out.code, 1, "{out:#?}");
    assert!(
        out.error_lines()[0].contains("vol0fffffffffffffff"),
        "{out:#?}"
    );
    assert!(disk.fs_type().is_none());
    let _ = volume;
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_state_file_the_mount_table_contradicts_is_not_trusted() {
    let bed = Bed::new(NodeKind::GossipMaster);
    converges(&bed, &[]);
    let path = bed.root.join("/var/lib/protokube/state.json");
    let mut state: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    // The first volume's record now names the second volume's device.
    state["volumes"][0]["device"] = state["volumes"][1]["device"].clone();
    std::fs::write(&path, serde_json::to_vec(&state).unwrap()).unwrap();
    let manifests = bed.root.join("/etc/kubernetes/manifests");
    let before: Vec<_> = std::fs::read_dir(&manifests)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let out = bed.run("render-manifests", &[]);
    assert_eq!(out.code, 1, "{out:#?}");
    assert!(out.error_lines()[0].contains("not trusted"), "{out:#?}");
    let after: Vec<_> = std::fs::read_dir(&manifests)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(before, after);
    // A mount point that is not the volume's own is not trusted either.
    state["volumes"][0]["device"] = state["volumes"][1]["device"].clone();
    state["volumes"][0]["mountpoint"] = "/etc".into();
    std::fs::write(&path, serde_json::to_vec(&state).unwrap()).unwrap();
    let out = bed.run("render-manifests", &[]);
    assert_eq!(out.code, 1, "{out:#?}");
    assert!(!bed.root.join("/etc/k8s.io").exists());
}
