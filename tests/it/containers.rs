//! Containerized runs (docs/commands.md, `--root`): when `--root` is the host's root seen from a
//! container, the volume is mounted in the host's mount namespace, where kubelet sees it; when
//! protokube runs in a mount namespace of its own that does not propagate to init's, it refuses
//! before touching the device.
//!
//! The "host" here is a PID namespace whose init (PID 1) lives in a mount namespace whose root is
//! the test's `--root` directory (made with `pivot_root`), waiting on its stdin; the "container"
//! joins that PID namespace with a mount namespace of its own and the host's /proc mounted at
//! `<root>/proc`, as `docker run --pid=host -v /:/rootfs` shows it.

use crate::support;

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Command, Stdio};

use support::bed::{Bed, NodeKind};
use support::block::LoopDevice;
use support::Protokube;

const CLUSTER: &str = "c.example.com";

/// A PID namespace whose init's root is `dir`; gone when dropped.
struct Host {
    unshare: support::Guard,
    init: u32,
}

impl Host {
    fn rooted_at(dir: &std::path::Path) -> Self {
        let script = format!(
            "mount --bind {0} {0} && cd {0} && mkdir -p .oldroot && pivot_root . .oldroot && \
             echo ready && read line",
            dir.display()
        );
        let mut unshare = support::Guard::new(
            Command::new("unshare")
                .args(["--pid", "--fork", "--mount", "--propagation", "private"])
                .args(["sh", "-c", &script])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .expect("unshare (util-linux)"),
        );
        let mut line = String::new();
        BufReader::new(unshare.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "ready", "the host namespace did not come up");
        let children =
            std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", unshare.id())).unwrap();
        let init = children.trim().parse().expect("the host's init");
        Self { unshare, init }
    }

    /// What is mounted in the host's mount namespace, as (mount point, major:minor).
    fn mounts(&self) -> Vec<(String, String)> {
        std::fs::read_to_string(format!("/proc/{}/mountinfo", self.init))
            .unwrap()
            .lines()
            .filter_map(|l| {
                let fields: Vec<&str> = l.split(' ').collect();
                Some((fields.get(4)?.to_string(), fields.get(2)?.to_string()))
            })
            .collect()
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        if let Some(mut stdin) = self.unshare.stdin.take() {
            let _ = stdin.write_all(b"done\n");
        }
        let _ = self.unshare.wait();
    }
}

/// `protokube mount` on a master of `node`, run through `wrapper` (the namespaces it runs in).
fn mount_under(node: &Bed, wrapper: &[&str]) -> support::RunOutput {
    Protokube::under(wrapper)
        .moto(node.moto())
        .imds(node.imds())
        .args(["mount", "--master", "--cluster-id", CLUSTER, "-o", "json"])
        .arg_path("--root", node.root.path())
        .run()
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn from_a_container_the_volume_is_mounted_in_the_hosts_namespace() {
    let node = Bed::new(NodeKind::Bare);
    let disk = LoopDevice::blank(64);
    let volume = node.etcd_volume(CLUSTER, &[("main", "a/a")]);
    node.root.link_by_id(&volume, &disk.path);
    let proc_dir = node.root.join("/proc");
    std::fs::create_dir_all(&proc_dir).unwrap();
    let host = Host::rooted_at(node.root.path());
    // The container: the host's PID namespace, a mount namespace of its own, the host's root at
    // --root and the host's /proc at <root>/proc.
    let init = host.init.to_string();
    let mount_proc = format!("mount -t proc proc {} && exec \"$@\"", proc_dir.display());
    let out = mount_under(
        &node,
        &[
            "nsenter",
            "--target",
            &init,
            "--pid",
            "--",
            "unshare",
            "--fork",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            &mount_proc,
            "sh",
        ],
    );
    assert_eq!(out.code, 0, "{out:#?}");
    // The host sees the volume at its own path; the test's namespace (neither host nor
    // container) does not.
    let wanted = (format!("/mnt/master-{volume}"), disk.devno());
    assert!(
        host.mounts().contains(&wanted),
        "{:?} not in {:?}",
        wanted,
        host.mounts()
    );
    assert!(disk.mounted_at().is_empty());
    assert_eq!(disk.fs_type().as_deref(), Some("ext4"));
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_mount_the_host_would_not_see_is_refused_before_the_device_is_touched() {
    let node = Bed::new(NodeKind::Bare);
    let disk = LoopDevice::blank(64);
    let volume = node.etcd_volume(CLUSTER, &[("main", "a/a")]);
    node.root.link_by_id(&volume, &disk.path);
    // Init (PID 1 of a PID namespace of its own) in one mount namespace, protokube in another,
    // private one: as under a unit with PrivateMounts=.
    let out = mount_under(
        &node,
        &[
            "unshare",
            "--pid",
            "--fork",
            "--mount-proc",
            "sh",
            "-c",
            "unshare --mount --propagation private \"$@\"",
            "sh",
        ],
    );
    assert_eq!(out.code, 1, "{out:#?}");
    let line = &out.error_lines()[0];
    assert!(
        line.contains("mount namespace of its own") && line.contains("nsenter"),
        "{line}"
    );
    assert!(disk.fs_type().is_none(), "the device was formatted");
}
