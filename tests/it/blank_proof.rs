//! The blank proof with independent witnesses (docs/safety.md), on real loop devices with real
//! blkid, mkfs, fsck and mount, against the emulator: data blkid cannot see, a filesystem whose
//! start was wiped, a volume the cloud says is formatted or restored, a leftover intent over
//! someone else's damaged filesystem, and every signature kind: each refused, the device left
//! byte for byte. A proven-blank format tags the volume with the new filesystem's UUID.

use crate::support;

use support::bed::{Bed, NodeKind};
use support::block::LoopDevice;

/// Mounts a fresh volume of `cluster` backed by `disk` and checks the run refused it: exit 1,
/// one error line naming the volume and `found`, the device untouched and not mounted.
fn assert_refused(
    node: &Bed,
    cluster: &str,
    volume: &str,
    disk: &LoopDevice,
    found: &str,
    extra: &[&str],
) {
    let before = disk.digest();
    let out = node.mount(cluster, extra);
    assert_eq!(out.code, 1, "{found}: {out:#?}");
    let errors = out.error_lines();
    assert_eq!(errors.len(), 1, "{found}: {out:#?}");
    for needle in [volume, found] {
        assert!(errors[0].contains(needle), "`{needle}` not in {errors:?}");
    }
    assert!(disk.mounted_at().is_empty(), "{found}: mounted");
    assert_eq!(disk.digest(), before, "{found}: the device was modified");
    assert!(
        !node
            .volume_tags(volume)
            .contains_key("k8s.io/protokube/formatted"),
        "{found}: tagged as formatted"
    );
}

/// A fresh volume of a fresh cluster (one per case, so each claims its own) backed by `disk`.
fn volume_on(node: &Bed, case: usize, disk: &LoopDevice) -> (String, String) {
    let cluster = format!("c{case}.example.com");
    let volume = node.etcd_volume(&cluster, &[("main", "a/a")]);
    node.root.link_by_id(&volume, &disk.path);
    (cluster, volume)
}

/// How a case prepares its device.
type Prepare = fn(&LoopDevice);

/// An ISO 9660 image (xorriso) at the start.
fn iso9660(d: &LoopDevice) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("file"), "data").unwrap();
    let image = dir.path().join("image.iso");
    let out = std::process::Command::new("xorriso")
        .args(["-as", "mkisofs", "-quiet", "-o"])
        .arg(&image)
        .arg(dir.path().join("file"))
        .output()
        .expect("xorriso");
    assert!(out.status.success(), "{out:?}");
    d.write_at(0, &std::fs::read(&image).unwrap());
}

/// A LUKS2 header (cryptsetup).
fn luks2(d: &LoopDevice) {
    use std::io::Write as _;
    let mut child = std::process::Command::new("cryptsetup")
        .args([
            "luksFormat",
            "--type",
            "luks2",
            "--batch-mode",
            "--key-file=-",
        ])
        .args(["--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000"])
        .arg(d.path_str())
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("cryptsetup (cryptsetup-bin)");
    child.stdin.take().unwrap().write_all(b"secret").unwrap();
    assert!(child.wait().unwrap().success());
}

/// A GPT whose primary header was wiped: only its backup at the end.
fn gpt_backup_only(d: &LoopDevice) {
    d.run_on("sgdisk", &["-o", "-n", "1:2048:+16M"]);
    d.write_at(0, &[0u8; 34 * 512]);
}

/// ZFS vdev labels L2 and L3 at the end of the device, uberblocks 128 KiB into each.
fn zfs_end_labels(d: &LoopDevice) {
    let size = 64u64 << 20;
    for label in [size - (512 << 10), size - (256 << 10)] {
        for i in 0..8u64 {
            let mut block = 0x00ba_b10cu64.to_le_bytes().to_vec();
            block.extend_from_slice(&5000u64.to_le_bytes());
            block.extend_from_slice(&[1u8; 48]);
            d.write_at(label + (128 << 10) + i * 1024, &block);
        }
    }
}

/// A mebibyte of bytes that are never zero.
fn random_bytes(d: &LoopDevice) {
    let bytes: Vec<u8> = (0..1u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8 | 1)
        .collect();
    d.write_at(0, &bytes);
}

/// Every kind: (kind, size in MiB, how to make it, what the refusal names).
fn signature_kinds() -> Vec<(&'static str, u64, Prepare, &'static str)> {
    vec![
        (
            "dos partition table",
            64,
            |d| d.write_partition_table(),
            "`dos` partition table",
        ),
        ("swap", 64, |d| d.run_on("mkswap", &[]), "`swap`"),
        ("xfs", 320, |d| d.run_on("mkfs.xfs", &["-q"]), "`xfs`"),
        ("ext3", 64, |d| d.run_on("mkfs.ext3", &["-q"]), "`ext3`"),
        (
            "btrfs",
            256,
            |d| d.run_on("mkfs.btrfs", &["-q", "-f"]),
            "`btrfs`",
        ),
        ("vfat", 64, |d| d.run_on("mkfs.vfat", &[]), "`vfat`"),
        (
            "bcache",
            64,
            |d| d.run_on("make-bcache", &["-B"]),
            "`bcache`",
        ),
        ("iso9660", 64, iso9660, "`iso9660`"),
        ("LUKS2", 64, luks2, "`crypto_LUKS`"),
        (
            "GPT with only its backup header",
            64,
            gpt_backup_only,
            "backup GPT",
        ),
        ("ZFS end labels", 64, zfs_end_labels, "`zfs_member`"),
        ("random bytes", 64, random_bytes, "non-zero data"),
    ]
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn every_signature_kind_is_refused_and_left_byte_for_byte() {
    let node = Bed::new(NodeKind::Bare);
    for (i, (kind, size_mib, prepare, found)) in signature_kinds().into_iter().enumerate() {
        let disk = LoopDevice::blank(size_mib);
        prepare(&disk);
        let (cluster, volume) = volume_on(&node, i, &disk);
        assert_refused(&node, &cluster, &volume, &disk, found, &[]);
        assert!(
            !node.root.join("/var/lib/protokube/state.json").exists(),
            "{kind}: a state file was written"
        );
        // Detach so the next case's volume gets /dev/xvdu again.
        node.detach(&volume);
    }
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn data_blkid_cannot_see_is_refused() {
    // 800 KB at 5.1 MiB of a 64 MiB device: past the first 4 MiB, before the last 1 MiB.
    let disk = LoopDevice::blank(64);
    let offset = 5 * (1 << 20) + (1 << 20) / 10;
    disk.write_at(offset, &vec![0x42u8; 800_000]);
    let node = Bed::new(NodeKind::Bare);
    let (cluster, volume) = volume_on(&node, 0, &disk);
    assert_refused(
        &node,
        &cluster,
        &volume,
        &disk,
        &format!("non-zero data at byte {offset}"),
        &[],
    );
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn the_full_check_reads_what_samples_do_not() {
    // 1 GiB: the sampled check reads 64 MiB of it; 64 KiB of data half way between two of its
    // samples is found by --blank-check=full.
    let size: u64 = 1 << 30;
    let disk = LoopDevice::blank(size >> 20);
    let (head, tail, chunk, budget) = (4u64 << 20, 1u64 << 20, 16u64 << 10, 64u64 << 20);
    let chunks = (budget - head - tail) / chunk;
    let stride = (size - head - tail) / chunks;
    let offset = (head + stride * 100 + stride / 2) & !4095;
    disk.write_at(offset, &[0x42u8; 64 << 10]);
    let node = Bed::new(NodeKind::Bare);
    let (cluster, volume) = volume_on(&node, 0, &disk);
    assert_refused(
        &node,
        &cluster,
        &volume,
        &disk,
        "non-zero data",
        &["--blank-check", "full"],
    );
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_filesystem_whose_start_was_wiped_is_refused() {
    type Make = fn(&LoopDevice);
    let cases: [(&str, u64, Make, &str); 3] = [
        (
            "ext4",
            1000,
            |d| d.make_ext4_with(&[("etcd/member/snap/db", "etcd data"), ("keep", "x")]),
            "ext2/3/4 backup superblock",
        ),
        (
            "xfs",
            512,
            |d| d.run_on("mkfs.xfs", &["-q"]),
            "xfs secondary superblock",
        ),
        (
            "btrfs",
            256,
            |d| d.run_on("mkfs.btrfs", &["-q", "-f"]),
            "btrfs superblock mirror",
        ),
    ];
    let node = Bed::new(NodeKind::Bare);
    for (i, (kind, size_mib, make, found)) in cases.into_iter().enumerate() {
        let disk = LoopDevice::blank(size_mib);
        make(&disk);
        // The start wiped: blkid finds nothing any more.
        disk.write_at(0, &vec![0u8; 4 << 20]);
        assert_eq!(disk.fs_type(), None, "{kind}");
        let (cluster, volume) = volume_on(&node, i, &disk);
        assert_refused(&node, &cluster, &volume, &disk, found, &[]);
        node.detach(&volume);
    }
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn the_cloud_witness_refuses_a_formatted_or_restored_volume_without_a_filesystem() {
    let node = Bed::new(NodeKind::Bare);
    // Tagged by protokube as formatted, but the device has no filesystem: never formatted again.
    let disk = LoopDevice::blank(64);
    let cluster = "tagged.example.com";
    let volume = node.etcd_volume_with(
        cluster,
        &[("main", "a/a")],
        &[(
            "k8s.io/protokube/formatted",
            "0b7c6f3a-2f5e-4bd9-9d0e-1c2b3a4d5e6f",
        )],
        false,
    );
    node.root.link_by_id(&volume, &disk.path);
    let before = disk.digest();
    let out = node.mount(cluster, &[]);
    assert_eq!(out.code, 1, "{out:#?}");
    assert!(
        out.error_lines()[0].contains("never formatted again"),
        "{out:#?}"
    );
    assert_eq!(disk.digest(), before);
    node.detach(&volume);

    // Created from a snapshot: its data is not blank, whatever blkid says.
    let disk = LoopDevice::blank(64);
    let cluster = "restored.example.com";
    let volume = node.etcd_volume_with(cluster, &[("main", "a/a")], &[], true);
    node.root.link_by_id(&volume, &disk.path);
    let out = node.mount(cluster, &[]);
    assert_eq!(out.code, 1, "{out:#?}");
    assert!(out.error_lines()[0].contains("snapshot"), "{out:#?}");
    assert_eq!(disk.fs_type(), None);
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_format_tags_the_volume_with_the_new_filesystems_uuid() {
    let disk = LoopDevice::blank(64);
    let node = Bed::new(NodeKind::Bare);
    let (cluster, volume) = volume_on(&node, 0, &disk);
    let out = node.mount(&cluster, &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    let uuid = disk.uuid();
    assert_eq!(
        node.volume_tags(&volume).get("k8s.io/protokube/formatted"),
        Some(&uuid)
    );
    // The tag is what the next run (and a dry run) trusts: no format is planned again.
    let out = node.mount(&cluster, &["--dry-run"]);
    assert!(!out.report().changed, "{out:#?}");
    assert!(!node
        .root
        .join("/var/lib/protokube/formatting")
        .read_dir()
        .unwrap()
        .any(|_| true));
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn an_intent_record_reformats_only_what_its_own_mkfs_began() {
    let node = Bed::new(NodeKind::Bare);
    let intent = |volume: &str, content: &str| {
        let path = node
            .root
            .join(&format!("/var/lib/protokube/formatting/{volume}"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    };
    // Someone else's damaged ext4, with a leftover record naming another UUID (fsck refuses
    // it), or an old one naming none (a record that is not one protokube writes permits
    // nothing): refused, never reformatted.
    for (i, (record, refusal)) in [
        (
            "{\"volume_id\":\"VOL\",\"device\":\"/dev/xvdu\",\"uuid\":\"00000000-0000-4000-8000-000000000000\"}\n",
            "fsck -a",
        ),
        ("/dev/xvdu\n", "permits nothing"),
    ]
    .into_iter()
    .enumerate()
    {
        let disk = LoopDevice::blank(64);
        disk.make_ext4_with(&[("data", "someone's")]);
        disk.damage_ext4();
        let (cluster, volume) = volume_on(&node, i, &disk);
        intent(&volume, &record.replace("VOL", &volume));
        let theirs = disk.uuid();
        let out = node.mount(&cluster, &[]);
        assert_eq!(out.code, 1, "{out:#?}");
        assert!(out.error_lines()[0].contains(refusal), "{out:#?}");
        // fsck may have written to it trying to repair; it was never formatted again.
        assert_eq!(disk.uuid(), theirs);
        assert!(disk.mounted_at().is_empty());
        assert!(!node
            .volume_tags(&volume)
            .contains_key("k8s.io/protokube/formatted"));
        node.detach(&volume);
    }
    // protokube's own mkfs, killed half way (the record names the filesystem's UUID): formatted
    // again, tagged, the record cleared.
    let disk = LoopDevice::blank(64);
    disk.make_ext4_with(&[]);
    disk.damage_ext4();
    let (cluster, volume) = volume_on(&node, 9, &disk);
    let own = disk.uuid();
    intent(
        &volume,
        &format!("{{\"volume_id\":\"{volume}\",\"device\":\"/dev/xvdu\",\"uuid\":\"{own}\"}}\n"),
    );
    let out = node.mount(&cluster, &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert!(out.report().warnings[0].contains("killed while formatting"));
    let new = disk.uuid();
    assert_ne!(new, own);
    assert_eq!(
        node.volume_tags(&volume).get("k8s.io/protokube/formatted"),
        Some(&new)
    );
    assert!(!node
        .root
        .join(&format!("/var/lib/protokube/formatting/{volume}"))
        .exists());
}
