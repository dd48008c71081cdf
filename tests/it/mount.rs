//! `mount` end to end: the real binary against the local AWS emulator, with real loop devices,
//! real blkid/mkfs.ext4/fsck/mount, under a temporary `--root`.

use crate::support;

use support::bed::{Bed, NodeKind};
use support::block::{LoopDevice, TestRoot};
use support::Protokube;

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

const CLUSTER: &str = "c.example.com";

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn blank_volume_is_formatted_and_mounted_and_a_rerun_changes_nothing() {
    let disk = LoopDevice::blank(64);
    let node = Bed::new(NodeKind::Bare);
    let volume = node.etcd_volume(CLUSTER, &[("main", "a/a,b,c")]);
    node.root.link_by_id(&volume, &disk.path);

    let out = node.mount(CLUSTER, &["--detailed-exitcode"]);
    assert_eq!(out.code, 2, "{out:#?}");
    let report = out.report();
    assert_eq!(
        report.actions(),
        pairs(&[
            ("volume", "attach"),
            ("filesystem", "format"),
            ("mount", "mount"),
            ("file", "create")
        ])
    );
    assert_eq!(
        node.attachments(&volume),
        [(node.instance_id.clone(), "/dev/xvdu".to_owned())]
    );
    assert_eq!(disk.fs_type().as_deref(), Some("ext4"));
    let mountpoint = node.root.mountpoint(&volume);
    assert_eq!(disk.mounted_at(), [mountpoint.display().to_string()]);
    // The mount point directory itself (hidden under the mount) is 0750: look at it through a
    // non-recursive bind mount of its parent.
    let peek = tempfile::tempdir().unwrap();
    let bind = std::process::Command::new("mount")
        .args(["--bind", node.root.join("/mnt").to_str().unwrap()])
        .arg(peek.path())
        .status()
        .unwrap();
    assert!(bind.success());
    let mode = std::fs::metadata(peek.path().join(format!("master-{volume}")))
        .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o7777);
    support::block::unmount_below(peek.path());
    assert_eq!(mode.unwrap(), 0o750);
    let state: serde_json::Value = serde_json::from_slice(
        &std::fs::read(node.root.join("/var/lib/protokube/state.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(state["version"], 1);
    assert_eq!(state["volumes"][0]["volume_id"], volume.as_str());
    assert_eq!(
        state["volumes"][0]["mountpoint"],
        format!("/mnt/master-{volume}")
    );
    assert_eq!(state["volumes"][0]["etcd"][0]["member"], "a");
    let state_mtime = std::fs::metadata(node.root.join("/var/lib/protokube/state.json"))
        .unwrap()
        .modified()
        .unwrap();

    // Converged: nothing changes, one DescribeVolumes, no write.
    node.moto().reset_operations();
    let out = node.mount(CLUSTER, &["--detailed-exitcode"]);
    assert_eq!(out.code, 0, "{out:#?}");
    let report = out.report();
    assert!(!report.changed);
    assert_eq!(
        report.actions(),
        pairs(&[("mount", "unchanged"), ("file", "unchanged")])
    );
    assert_eq!(node.moto().operations(), ["DescribeVolumes"]);
    assert_eq!(
        std::fs::metadata(node.root.join("/var/lib/protokube/state.json"))
            .unwrap()
            .modified()
            .unwrap(),
        state_mtime
    );
    assert_eq!(disk.mounted_at().len(), 1);
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn existing_ext4_is_checked_and_mounted_with_its_files() {
    let disk = LoopDevice::blank(64);
    disk.make_ext4_with(&[("var/etcd/data/member/snap/db", "etcd data")]);
    let node = Bed::new(NodeKind::Bare);
    let volume = node.etcd_volume(CLUSTER, &[("main", "a/a")]);
    // Found under the requested device name this time (no NVMe link).
    node.root.device_node("/dev/xvdu", &disk.path);

    let out = node.mount(CLUSTER, &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(
        out.report().actions(),
        pairs(&[("volume", "attach"), ("mount", "mount"), ("file", "create")])
    );
    let data = node
        .root
        .mountpoint(&volume)
        .join("var/etcd/data/member/snap/db");
    assert_eq!(std::fs::read_to_string(data).unwrap(), "etcd data");
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn unreadable_devices_are_refused() {
    // No device-mapper `error` target in this kernel: a loop device with nothing bound to it
    // (reads nothing) and a device node with no driver behind it (cannot be opened) stand in for
    // a failing disk. Minor 1048575 is far above what `losetup --find` hands out to other tests.
    let node = Bed::new(NodeKind::Bare);
    let volume = node.etcd_volume("u1.example.com", &[("main", "a/a")]);
    let unbound = make_block_device_node(&node.root, "/dev/unbound-loop", 7, 1_048_575);
    node.root.link_by_id(&volume, &unbound);
    let out = node.mount("u1.example.com", &[]);
    assert_eq!(out.code, 1, "{out:#?}");
    let errors = out.error_lines();
    assert!(errors[0].contains(&volume), "{out:#?}");
    assert!(errors[0].contains("size of 0 bytes"), "{out:#?}");
    assert!(!node.root.join("/var/lib/protokube/state.json").exists());

    node.detach(&volume);
    let volume = node.etcd_volume("u2.example.com", &[("main", "a/a")]);
    // Block device 240:0: a major reserved for local use, with no driver here (ENXIO on open).
    let driverless = make_block_device_node(&node.root, "/dev/driverless", 240, 0);
    node.root.link_by_id(&volume, &driverless);
    let out = node.mount("u2.example.com", &[]);
    assert_eq!(out.code, 1, "{out:#?}");
    let errors = out.error_lines();
    assert!(errors[0].contains(&volume), "{out:#?}");
    assert!(errors[0].contains("opening the device"), "{out:#?}");
}

fn make_block_device_node(
    root: &TestRoot,
    host_path: &str,
    major: u32,
    minor: u32,
) -> std::path::PathBuf {
    let path = root.join(host_path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let c_path = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    let dev = libc::makedev(major, minor);
    // SAFETY: mknod with a valid C string.
    assert_eq!(
        unsafe { libc::mknod(c_path.as_ptr(), libc::S_IFBLK | 0o600, dev) },
        0
    );
    path
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn of_two_main_volumes_exactly_one_is_claimed() {
    let disks = [LoopDevice::blank(64), LoopDevice::blank(64)];
    let node = Bed::new(NodeKind::Bare);
    let volumes = [
        node.etcd_volume(CLUSTER, &[("main", "a/a,b")]),
        node.etcd_volume(CLUSTER, &[("main", "b/a,b")]),
    ];
    for (volume, disk) in volumes.iter().zip(&disks) {
        node.root.link_by_id(volume, &disk.path);
    }
    let out = node.mount(CLUSTER, &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    let attached: Vec<usize> = (0..2)
        .filter(|i| !node.attachments(&volumes[*i]).is_empty())
        .collect();
    assert_eq!(attached.len(), 1, "{out:#?}");
    let mounted: Vec<usize> = (0..2)
        .filter(|i| !disks[*i].mounted_at().is_empty())
        .collect();
    assert_eq!(mounted, attached);
    // A rerun keeps the one it has and claims nothing more.
    let out = node.mount(CLUSTER, &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert!(!out.report().changed, "{out:#?}");
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn dry_run_changes_nothing_and_says_what_it_would_do() {
    let disk = LoopDevice::blank(64);
    let node = Bed::new(NodeKind::Bare);
    let volume = node.etcd_volume(CLUSTER, &[("main", "a/a")]);
    node.root.link_by_id(&volume, &disk.path);
    let out = node.mount(CLUSTER, &["--dry-run", "--detailed-exitcode"]);
    assert_eq!(out.code, 2, "{out:#?}");
    let report = out.report();
    assert!(report.dry_run);
    // The format the real run makes of a blank volume is announced too (by volume id: the
    // device does not exist before the attach).
    assert_eq!(
        report.actions(),
        pairs(&[
            ("volume", "attach"),
            ("filesystem", "format"),
            ("mount", "mount"),
            ("file", "create")
        ])
    );
    assert_eq!(report.changes[1].target, volume);
    assert!(node.attachments(&volume).is_empty());
    assert!(disk.fs_type().is_none());
    assert!(disk.mounted_at().is_empty());
    assert!(!node.root.join("/var/lib/protokube/state.json").exists());
    assert!(!node.root.join("/run/protokube.lock").exists());

    // Text form: one line per change, "would ...".
    let out = Protokube::new()
        .moto(node.moto())
        .imds(node.imds())
        .args(["mount", "--master", "--cluster-id", CLUSTER, "--dry-run"])
        .arg_path("--root", node.root.path())
        .run();
    assert_eq!(out.code, 0, "{out:#?}");
    assert!(out.stdout.starts_with("would attach"), "{}", out.stdout);
}

#[test]
fn a_held_lock_gives_75_after_the_timeout() {
    let node = Bed::new(NodeKind::Bare);
    node.etcd_volume(CLUSTER, &[("main", "a/a")]);
    let lock_path = node.root.join("/run/protokube.lock");
    std::fs::create_dir_all(lock_path.parent().unwrap()).unwrap();
    let file = std::fs::File::create(&lock_path).unwrap();
    assert_eq!(
        unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&file), libc::LOCK_EX) },
        0
    );
    let out = Protokube::new()
        .moto(node.moto())
        .imds(node.imds())
        .args([
            "mount",
            "--master",
            "--cluster-id",
            CLUSTER,
            "--timeout",
            "1s",
        ])
        .arg_path("--root", node.root.path())
        .run();
    assert_eq!(out.code, 75, "{out:#?}");
    assert!(out.error_lines()[0].contains("protokube.lock"), "{out:#?}");
    drop(file);
}

#[test]
fn without_master_nothing_is_mounted() {
    let node = Bed::new(NodeKind::Bare);
    let volume = node.etcd_volume(CLUSTER, &[("main", "a/a")]);
    let out = Protokube::new()
        .moto(node.moto())
        .imds(node.imds())
        .args(["mount", "--cluster-id", CLUSTER, "-o", "json"])
        .arg_path("--root", node.root.path())
        .run();
    assert_eq!(out.code, 0, "{out:#?}");
    assert!(!out.report().changed);
    assert!(out.report().warnings[0].contains("--master"));
    assert!(node.attachments(&volume).is_empty());
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn ext4_that_fsck_cannot_repair_is_refused() {
    let disk = LoopDevice::blank(64);
    disk.make_ext4_with(&[("data", "x")]);
    disk.damage_ext4();
    let node = Bed::new(NodeKind::Bare);
    let volume = node.etcd_volume(CLUSTER, &[("main", "a/a")]);
    node.root.link_by_id(&volume, &disk.path);
    let out = node.mount(CLUSTER, &[]);
    assert_eq!(out.code, 1, "{out:#?}");
    let errors = out.error_lines();
    assert!(errors[0].contains("fsck -a"), "{out:#?}");
    assert!(errors[0].contains(&volume), "{out:#?}");
    assert!(disk.mounted_at().is_empty());
    assert_eq!(disk.fs_type().as_deref(), Some("ext4"), "never reformatted");
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_mount_point_holding_another_device_is_an_error() {
    let ours = LoopDevice::blank(64);
    ours.make_ext4_with(&[("ours", "1")]);
    let squatter = LoopDevice::blank(64);
    squatter.make_ext4_with(&[("squatter", "1")]);
    let node = Bed::new(NodeKind::Bare);
    let volume = node.etcd_volume(CLUSTER, &[("main", "a/a")]);
    node.root.link_by_id(&volume, &ours.path);
    let mountpoint = node.root.mountpoint(&volume);
    std::fs::create_dir_all(&mountpoint).unwrap();
    let status = std::process::Command::new("mount")
        .arg(&squatter.path)
        .arg(&mountpoint)
        .status()
        .unwrap();
    assert!(status.success());
    let out = node.mount(CLUSTER, &[]);
    assert_eq!(out.code, 1, "{out:#?}");
    assert!(
        out.error_lines()[0].contains("is already mounted from"),
        "{out:#?}"
    );
    assert!(ours.mounted_at().is_empty());
    assert_eq!(squatter.mounted_at(), [mountpoint.display().to_string()]);
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_format_interrupted_by_a_kill_is_done_again_and_only_then() {
    let disk = LoopDevice::blank(64);
    // What a killed mkfs.ext4 leaves: data no probe recognises.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&disk.path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, &[0x5a; 1 << 20]))
        .unwrap();
    let node = Bed::new(NodeKind::Bare);
    let volume = node.etcd_volume(CLUSTER, &[("main", "a/a")]);
    node.root.link_by_id(&volume, &disk.path);
    // Without the intent record protokube refuses, as for any unknown data.
    let out = node.mount(CLUSTER, &[]);
    assert_eq!(out.code, 1, "{out:#?}");
    assert!(disk.fs_type().is_none());
    let intent = node
        .root
        .join(&format!("/var/lib/protokube/formatting/{volume}"));
    std::fs::create_dir_all(intent.parent().unwrap()).unwrap();
    // A record that is not one protokube writes (an older form naming the device alone)
    // permits nothing: refused still.
    std::fs::write(&intent, "/dev/xvdu\n").unwrap();
    let out = node.mount(CLUSTER, &[]);
    assert_eq!(out.code, 1, "{out:#?}");
    assert!(out.error_lines()[0].contains("permits nothing"), "{out:#?}");
    assert!(disk.fs_type().is_none());
    // With the record protokube writes before mkfs (the run that was killed), it formats again.
    std::fs::write(
        &intent,
        format!(
            "{{\"volume_id\":\"{volume}\",\"device\":\"/dev/xvdu\",\"uuid\":\
             \"1b4e28ba-2fa1-41d2-883f-0016d3cca427\"}}\n"
        ),
    )
    .unwrap();
    let out = node.mount(CLUSTER, &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    let report = out.report();
    assert!(
        report.warnings[0].contains("killed while formatting"),
        "{report:#?}"
    );
    assert_eq!(disk.fs_type().as_deref(), Some("ext4"));
    assert!(
        !intent.exists(),
        "the intent record is cleared once the filesystem is verified"
    );
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_copy_of_a_members_volume_is_refused_naming_both() {
    let disk = LoopDevice::blank(64);
    let node = Bed::new(NodeKind::Bare);
    let original = node.etcd_volume(CLUSTER, &[("main", "a/a,b")]);
    node.root.link_by_id(&original, &disk.path);
    let out = node.mount(CLUSTER, &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(disk.mounted_at().len(), 1);
    // A restored snapshot copy of member a's volume, tagged alike: never a candidate (for the
    // master meant for member b either: discovery leaves it out).
    let copy = node.etcd_volume(CLUSTER, &[("main", "a/a,b")]);
    let out = node.mount(CLUSTER, &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    let report = out.report();
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.contains(&copy) && w.contains(&original) && w.contains("member `a`")),
        "{report:#?}"
    );
    assert!(!report.changed, "{report:#?}");
    assert!(node.attachments(&copy).is_empty());
    let listed = Protokube::new()
        .moto(node.moto())
        .imds(node.imds())
        .args(["discover-volumes", "--cluster-id", CLUSTER, "-o", "json"])
        .run()
        .report();
    let ids: Vec<&str> = listed.volumes.iter().map(|v| v.id.as_str()).collect();
    assert!(!ids.contains(&copy.as_str()), "{ids:?}");
    assert!(ids.contains(&original.as_str()), "{ids:?}");
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_second_volume_of_a_key_mounted_elsewhere_is_never_detached() {
    let (first, second) = (LoopDevice::blank(64), LoopDevice::blank(64));
    let node = Bed::new(NodeKind::Bare);
    let kept = node.etcd_volume(CLUSTER, &[("main", "a/a,b")]);
    node.root.link_by_id(&kept, &first.path);
    assert_eq!(node.mount(CLUSTER, &[]).code, 0);
    // A second volume of `main` attached here behind protokube's back, its filesystem mounted
    // somewhere protokube does not mount.
    let extra = node.etcd_volume(CLUSTER, &[("main", "b/a,b")]);
    support::runtime().block_on(async {
        let ec2 = node.moto().ec2(support::bed::REGION).await;
        support::seed::attach(&ec2, &extra, &node.instance_id, "/dev/xvdv").await;
    });
    node.root.link_by_id(&extra, &second.path);
    second.run_on("mkfs.ext4", &["-q"]);
    let elsewhere = tempfile::tempdir().unwrap();
    let status = std::process::Command::new("mount")
        .arg(&second.path)
        .arg(elsewhere.path())
        .status()
        .unwrap();
    assert!(status.success());
    let out = node.mount(CLUSTER, &[]);
    support::block::unmount_below(elsewhere.path());
    assert_eq!(out.code, 0, "{out:#?}");
    let report = out.report();
    assert!(!report.has("detach", &extra), "{report:#?}");
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.contains(&extra) && w.contains(&elsewhere.path().display().to_string())),
        "{report:#?}"
    );
    assert_eq!(node.attachments(&extra).len(), 1, "still attached");
    // Released, the next run detaches it.
    let out = node.mount(CLUSTER, &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert!(out.report().has("detach", &extra), "{out:#?}");
}
