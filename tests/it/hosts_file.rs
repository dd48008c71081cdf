//! The hosts file under hostile conditions (DESIGN §5): a bind-mounted one (containers) killed at
//! every system call of its in-place rewrite is never empty or without its unmanaged lines, and
//! the next run converges; a symlinked one is edited through the link; owner, group and mode are
//! kept; bytes that are not UTF-8 outside the block are kept.

use crate::support;

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::Path;
use std::process::Command;

use support::bed::{Bed, NodeKind};
use support::block::unmount_below;

/// Unmanaged lines every version of the file must keep.
const UNMANAGED: &str =
    "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost\n10.9.9.9\tregistry.internal # keep me\n";

/// A hosts file with an old, longer block: the rewrite shrinks it.
fn old_hosts() -> String {
    format!(
        "{UNMANAGED}\n# Begin host entries managed by kops - do not edit\n\
         10.0.0.1\tapi.internal.minimal.k8s.local etcd-a.internal.minimal.k8s.local etcd-old1.internal.minimal.k8s.local etcd-old2.internal.minimal.k8s.local\n\
         10.0.0.2\tetcd-old3.internal.minimal.k8s.local etcd-old4.internal.minimal.k8s.local etcd-old5.internal.minimal.k8s.local\n\
         # End host entries managed by kops\n"
    )
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_bind_mounted_hosts_file_killed_mid_write_is_never_torn() {
    let bed = Bed::new(NodeKind::GossipWorker);
    let source_dir = tempfile::tempdir().unwrap();
    let source = source_dir.path().join("hosts");
    let target = bed.root.join("/etc/hosts");
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    std::fs::write(&target, "").unwrap();
    std::fs::write(&source, old_hosts()).unwrap();
    let bind = Command::new("mount")
        .args(["--bind", source.to_str().unwrap(), target.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(bind.success());
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            unmount_below(self.0);
        }
    }
    let _unmount = Unmount(&target);

    let spec = bed.spec();
    // Every system call of the in-place write: the one write, its sync, the cut, its sync.
    let kill_points = [
        ("pwrite64", 1),
        ("fsync", 1),
        ("ftruncate", 1),
        ("fsync", 2),
    ];
    let mut killed = 0;
    for (syscall, when) in kill_points {
        std::fs::write(&source, old_hosts()).unwrap();
        let out = bed.run_killed_at(syscall, when, "publish-dns", &spec);
        if out.code == 137 {
            killed += 1;
        }
        let text = std::fs::read(&target).unwrap();
        assert!(!text.is_empty(), "{syscall}#{when}: empty hosts file");
        assert!(
            text.starts_with(UNMANAGED.as_bytes()),
            "{syscall}#{when}: unmanaged lines lost: {:?}",
            String::from_utf8_lossy(&text)
        );
        // The next run converges, and the one after it changes nothing.
        let out = bed.run("publish-dns", &[]);
        assert_eq!(out.code, 0, "{syscall}#{when}: {out:#?}");
        let again = bed.run("publish-dns", &["--detailed-exitcode"]);
        assert_eq!(again.code, 0, "{syscall}#{when}: {again:#?}");
        let text = String::from_utf8(std::fs::read(&target).unwrap()).unwrap();
        assert!(text.starts_with(UNMANAGED), "{text}");
        // protokube's stale names are gone.
        assert!(!text.contains("etcd-old"), "{text}");
        assert!(text.contains("api.internal.minimal.k8s.local"), "{text}");
        assert!(
            !text.ends_with(" \n") && !text.contains("\n\n\n"),
            "padding left: {text:?}"
        );
    }
    assert_eq!(
        killed,
        kill_points.len(),
        "every kill point landed inside a run"
    );
}

#[test]
fn a_symlinked_hosts_file_is_edited_through_the_link() {
    let bed = Bed::new(NodeKind::GossipWorker);
    std::fs::create_dir_all(bed.root.join("/etc")).unwrap();
    std::fs::create_dir_all(bed.root.join("/run/hosts")).unwrap();
    std::fs::write(bed.root.join("/run/hosts/real"), UNMANAGED).unwrap();
    // Absolute, as the host sees it: resolved inside the root.
    std::os::unix::fs::symlink("/run/hosts/real", bed.root.join("/etc/hosts")).unwrap();
    let out = bed.run("publish-dns", &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    let link = bed.root.join("/etc/hosts");
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    let text = std::fs::read_to_string(bed.root.join("/run/hosts/real")).unwrap();
    assert!(
        text.starts_with(UNMANAGED) && text.contains("api.internal.minimal.k8s.local"),
        "{text}"
    );
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn owner_group_mode_and_foreign_bytes_are_kept() {
    let bed = Bed::new(NodeKind::GossipWorker);
    let path = bed.root.join("/etc/hosts");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut content = UNMANAGED.as_bytes().to_vec();
    content.extend_from_slice(b"10.1.1.1\tcaf\xe9.local \xff\xfe\n");
    std::fs::write(&path, &content).unwrap();
    std::os::unix::fs::chown(&path, Some(0), Some(4)).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    let out = bed.run("publish-dns", &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!(
        (meta.uid(), meta.gid(), meta.permissions().mode() & 0o7777),
        (0, 4, 0o640)
    );
    let text = std::fs::read(&path).unwrap();
    assert!(
        text.starts_with(&content),
        "{:?}",
        String::from_utf8_lossy(&text)
    );
    assert!(String::from_utf8_lossy(&text).contains("api.internal.minimal.k8s.local"));
}
