//! The hosts file under hostile conditions (docs/commands.md): a bind-mounted one (containers) killed at
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

/// etcd-manager's writer of its own blocks in the host's `/etc/hosts`, as its `pkg/hosts`
/// writes (`updateHostsFileWithRecords`, `pseudoAtomicWrite`; kubernetes-sigs/etcd-manager):
/// its block taken out (a blank line after it skipped), trailing blank lines trimmed, one blank
/// line, its block last; written whole with `os.WriteFile` (truncate, then write, no lock),
/// then read back after 1–20 ms and written again while someone else wrote, up to 10 times.
struct EtcdManagerHosts {
    key: String,
}

impl EtcdManagerHosts {
    fn new(cluster: &str) -> Self {
        Self {
            key: format!("etcd-manager[{cluster}]"),
        }
    }

    fn guards(&self) -> (String, String) {
        (
            format!("# Begin host entries managed by {} - do not edit", self.key),
            format!("# End host entries managed by {}", self.key),
        )
    }

    /// The file etcd-manager computes from `data` for `records` (address → names).
    fn update(&self, data: &str, records: &[(&str, &[&str])]) -> String {
        let (begin, end) = self.guards();
        let mut out: Vec<&str> = Vec::new();
        let (mut in_block, mut skip_blank) = (false, false);
        for line in data.split('\n') {
            let k = line.trim();
            if k.is_empty() && skip_blank {
                skip_blank = false;
                continue;
            }
            skip_blank = false;
            if k == begin {
                in_block = true;
            }
            if !in_block {
                out.push(line);
            }
            if k == end {
                if !in_block {
                    out.pop();
                }
                in_block = false;
                skip_blank = true;
            }
        }
        while out.last() == Some(&"") {
            out.pop();
        }
        out.push("");
        let mut lines: Vec<String> = records
            .iter()
            .map(|(addr, names)| {
                let mut names = names.to_vec();
                names.sort_unstable();
                names.dedup();
                format!("{addr}\t{}", names.join(" "))
            })
            .collect();
        lines.sort();
        let mut text: Vec<String> = out.iter().map(|s| (*s).to_owned()).collect();
        text.push(begin);
        text.extend(lines);
        text.push(end);
        text.push(String::new());
        text.join("\n")
    }

    /// One update of the file at `path`, as etcd-manager's provider makes it.
    fn write(&self, path: &Path, records: &[(&str, &[&str])]) {
        let data = std::fs::read_to_string(path).unwrap();
        let updated = self.update(&data, records);
        if updated == data {
            return;
        }
        for _ in 0..10 {
            // os.WriteFile: O_TRUNC, then the bytes.
            std::fs::write(path, &updated).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(fastrand::u64(1..=20)));
            if std::fs::read_to_string(path).unwrap() == updated {
                return;
            }
        }
    }
}

const ETCD_MAIN: &[(&str, &[&str])] = &[("10.0.0.9", &["etcd-a.internal.minimal.k8s.local"])];

/// Counts of each guard line of `text`.
fn guard_counts(text: &str) -> std::collections::BTreeMap<&str, usize> {
    let mut counts = std::collections::BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| l.starts_with("# Begin ") || l.starts_with("# End "))
    {
        *counts.entry(line).or_default() += 1;
    }
    counts
}

/// A well-formed file: the unmanaged lines first, kOps' block and each of etcd-manager's once,
/// each begun and ended, no hole.
fn assert_well_formed(text: &str, em: &[&EtcdManagerHosts]) {
    assert!(
        text.starts_with(UNMANAGED),
        "unmanaged lines lost: {text:?}"
    );
    assert!(!text.contains('\0'), "a hole: {text:?}");
    let counts = guard_counts(text);
    let mut expected = vec![
        "# Begin host entries managed by kops - do not edit".to_owned(),
        "# End host entries managed by kops".to_owned(),
    ];
    for writer in em {
        let (begin, end) = writer.guards();
        expected.extend([begin, end]);
    }
    for guard in &expected {
        assert_eq!(counts.get(guard.as_str()), Some(&1), "{guard}: {text:?}");
    }
    assert_eq!(counts.len(), expected.len(), "{text:?}");
    assert!(text.ends_with('\n'), "{text:?}");
}

/// A second master of the gossip bed's cluster; its private address.
fn add_master(bed: &Bed) -> String {
    support::runtime().block_on(async {
        let ec2 = bed.moto().ec2(support::bed::REGION).await;
        let master = support::seed::instance(
            &ec2,
            support::bed::ZONE,
            &[
                ("KubernetesCluster", support::bed::GOSSIP),
                ("k8s.io/role/master", "1"),
            ],
        )
        .await;
        support::seed::instance_addresses(&ec2, &master).await.0
    })
}

#[test]
fn beside_etcd_managers_own_blocks_the_file_settles() {
    let bed = Bed::new(NodeKind::GossipWorker);
    let path = bed.root.join("/etc/hosts");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, UNMANAGED).unwrap();
    let publish = |extra: &[&str]| {
        bed.run(
            "publish-dns",
            &[&["--detailed-exitcode", "--verify-interval", "0"], extra].concat(),
        )
    };
    assert_eq!(publish(&[]).code, 2);
    let (main, events) = (
        EtcdManagerHosts::new("etcd"),
        EtcdManagerHosts::new("etcd-events"),
    );
    // etcd-manager puts its blocks after kOps' one; neither writer moves anything again.
    main.write(&path, ETCD_MAIN);
    events.write(&path, ETCD_MAIN);
    let settled = std::fs::read_to_string(&path).unwrap();
    for _ in 0..3 {
        let out = publish(&[]);
        assert_eq!(out.code, 0, "{out:#?}");
        main.write(&path, ETCD_MAIN);
        events.write(&path, ETCD_MAIN);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), settled);
    }
    // A new master: kOps' block changes where it stands, etcd-manager's stay as they were.
    let added = add_master(&bed);
    let out = publish(&[]);
    assert_eq!(out.code, 2, "{out:#?}");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(&added), "{text}");
    assert_well_formed(&text, &[&main, &events]);
    let kops_end = text.find("# End host entries managed by kops").unwrap();
    let em_begin = text
        .find("# Begin host entries managed by etcd-manager")
        .unwrap();
    assert!(kops_end < em_begin, "kOps' block moved: {text}");
    assert!(settled.ends_with(&text[em_begin..]), "{text}");
}

#[test]
fn a_write_racing_etcd_manager_leaves_no_block_cut_and_says_not_ready_at_worst() {
    let bed = Bed::new(NodeKind::GossipWorker);
    let path = bed.root.join("/etc/hosts");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, UNMANAGED).unwrap();
    assert_eq!(bed.run("publish-dns", &[]).code, 0);
    let main = EtcdManagerHosts::new("etcd");
    main.write(&path, ETCD_MAIN);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (stop, path) = (stop.clone(), path.clone());
        std::thread::spawn(move || {
            let main = EtcdManagerHosts::new("etcd");
            let mut n = 0_u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                // A member's address moving back and forth: a write each time.
                let address = format!("10.0.0.{}", 10 + n % 2);
                main.write(
                    &path,
                    &[(address.as_str(), &["etcd-a.internal.minimal.k8s.local"][..])],
                );
                n += 1;
                std::thread::sleep(std::time::Duration::from_millis(fastrand::u64(0..=3)));
            }
            n
        })
    };
    let mut added = Vec::new();
    for _ in 0..6 {
        added.push(add_master(&bed));
        let out = bed.run("publish-dns", &["--verify-interval", "0"]);
        assert!(
            out.code == 0 || out.code == 75,
            "another writer is never a failed run: {out:#?}"
        );
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let writes = writer.join().unwrap();
    assert!(writes > 10, "etcd-manager wrote {writes} times");
    // Alone again, the next run converges: every master in kOps' block, both blocks whole.
    let out = bed.run("publish-dns", &["--verify-interval", "0"]);
    assert_eq!(out.code, 0, "{out:#?}");
    let text = std::fs::read_to_string(&path).unwrap();
    assert_well_formed(&text, &[&main]);
    for address in &added {
        assert!(text.contains(address.as_str()), "{address}: {text}");
    }
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn on_a_full_disk_the_file_is_left_as_it_was() {
    let bed = Bed::new(NodeKind::GossipWorker);
    let etc = bed.root.join("/etc");
    std::fs::create_dir_all(&etc).unwrap();
    // Two pages: the hosts file fills one to the brim, a filler the other.
    let mount = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=8k,nr_inodes=16", "tmpfs"])
        .arg(&etc)
        .status()
        .unwrap();
    assert!(mount.success());
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            unmount_below(self.0);
        }
    }
    let _unmount = Unmount(&etc);
    let path = etc.join("hosts");
    let mut content = UNMANAGED.to_owned();
    while content.len() < 4000 {
        content.push_str("# a comment the node's image carries, to fill the first page\n");
    }
    std::fs::write(&path, &content).unwrap();
    let filler = etc.join("filler");
    let _ = std::fs::write(&filler, vec![b'x'; 4096]);
    let out = bed.run("publish-dns", &[]);
    assert_eq!(out.code, 1, "{out:#?}");
    assert!(
        out.error_lines()[0].contains("no room") && out.error_lines()[0].contains("hosts"),
        "{out:#?}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), content, "changed");
    // Room again: the block is written.
    std::fs::remove_file(&filler).unwrap();
    let out = bed.run("publish-dns", &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with(&content), "{text}");
    assert!(text.contains("api.internal.minimal.k8s.local"), "{text}");
}

#[test]
fn a_fifo_at_the_hosts_path_is_refused_at_once() {
    let bed = Bed::new(NodeKind::GossipWorker);
    let path = bed.root.join("/etc/hosts");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let made = Command::new("mkfifo").arg(&path).status().unwrap();
    assert!(made.success());
    // Nobody writes into the FIFO: a run that opened it for reading would wait forever.
    let mut child = bed
        .command("publish-dns", &bed.spec(), &["--timeout", "600s"])
        .spawn();
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > std::time::Duration::from_mins(1) {
            let _ = child.kill();
            panic!("the run waited on the FIFO");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(1));
    // The lock is free for the next run, which says the same.
    let out = bed.run("publish-dns", &[]);
    assert_eq!(out.code, 1, "{out:#?}");
    assert!(out.error_lines()[0].contains("is a FIFO"), "{out:#?}");
}
