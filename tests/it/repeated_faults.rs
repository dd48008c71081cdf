//! Runs under repeated faults: `sync` killed with SIGKILL at random moments of a cold bring-up
//! never leaves a torn or empty manifest, state file or hosts file, and the next run converges;
//! a killed run leaves no orphan `mkfs`; AWS faults (throttling, 5xx, slow answers) injected at a
//! high rate in front of moto are retried or end in a clean failure.
//!
//! `PROTOKUBE_KILL_RUNS` sets the number of kills (CI: 30; `scripts/reliability`: 100).

use crate::support;

use std::process::Command;
use std::time::Instant;

use support::bed::{Bed, NodeKind, REGION};
use support::block::{unmount_below, LoopDevice, TestRoot};
use support::Protokube;

/// `sync` on the gossip master quietly, with the default timeout, and `extra` flags.
fn sync(bed: &Bed, extra: &[&str]) -> Protokube {
    let flags = [&["-q", "--timeout", "5m"][..], extra].concat();
    bed.command("sync", &bed.spec(), &flags)
}

/// Back to a cold node: nothing mounted, volumes detached, blank and new (no formatted
/// tag), no files.
fn make_cold(bed: &Bed) {
    unmount_below(&bed.root.join("/mnt"));
    support::runtime().block_on(async {
        let ec2 = bed.moto().ec2(REGION).await;
        for volume in &bed.volumes {
            ec2.delete_tags()
                .resources(volume)
                .tags(
                    aws_sdk_ec2::types::Tag::builder()
                        .key("k8s.io/protokube/formatted")
                        .build(),
                )
                .send()
                .await
                .unwrap();
        }
    });
    for volume in &bed.volumes {
        if !bed.attachments(volume).is_empty() {
            bed.detach(volume);
        }
    }
    for disk in &bed.disks {
        let status = Command::new("blkdiscard")
            .arg("-f")
            .arg(&disk.path)
            .status()
            .unwrap();
        assert!(status.success(), "blkdiscard (util-linux)");
    }
    for dir in ["/etc", "/var", "/mnt", "/run"] {
        let _ = std::fs::remove_dir_all(bed.root.join(dir));
    }
}

/// No file a node depends on is torn or empty: manifests are one Pod document, the state file
/// is valid JSON, the hosts file's managed block is whole.
fn assert_no_torn_files(root: &TestRoot, context: &str) {
    let manifests = root.join("/etc/kubernetes/manifests");
    if let Ok(entries) = std::fs::read_dir(&manifests) {
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue; // kubelet ignores dot files: temporaries of a killed run
            }
            // An etcd link may point at a volume that is not mounted right now.
            let Ok(text) = std::fs::read_to_string(&path) else {
                assert!(path.is_symlink(), "{context}: unreadable {name}");
                continue;
            };
            assert!(!text.is_empty(), "{context}: empty {name}");
            protokube::testing::validate_pod(&text, &name)
                .unwrap_or_else(|e| panic!("{context}: torn {name}: {e:#}"));
        }
    }
    let state = root.join("/var/lib/protokube/state.json");
    if let Ok(text) = std::fs::read_to_string(&state) {
        serde_json::from_str::<serde_json::Value>(&text)
            .unwrap_or_else(|e| panic!("{context}: torn state.json ({e}): {text:?}"));
    }
    if let Ok(text) = std::fs::read_to_string(root.join("/etc/hosts")) {
        assert!(!text.is_empty(), "{context}: empty hosts file");
        let begin = text.matches(protokube::testing::GUARD_BEGIN).count();
        let end = text.matches(protokube::testing::GUARD_END).count();
        assert_eq!((begin, end), (1, 1), "{context}: torn hosts file {text:?}");
        assert!(text.ends_with('\n'), "{context}: torn hosts file {text:?}");
    }
}

fn converge(bed: &Bed, context: &str) {
    let status = sync(bed, &[]).run().code;
    assert_eq!(
        status, 0,
        "{context}: sync after the kill failed: exit {status}"
    );
    let again = sync(bed, &["--detailed-exitcode"]).run().code;
    assert_eq!(again, 0, "{context}: not converged after one run");
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn sync_killed_at_random_moments_never_tears_a_file_and_the_next_run_converges() {
    let runs: usize = std::env::var("PROTOKUBE_KILL_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let bed = Bed::new(NodeKind::GossipMaster);
    // How long a cold bring-up takes here, to spread the kills over it.
    make_cold(&bed);
    let started = Instant::now();
    assert_eq!(sync(&bed, &[]).run().code, 0);
    let cold = started.elapsed();
    let mut seed_state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut killed_mid_run = 0;
    for run in 0..runs {
        make_cold(&bed);
        seed_state ^= seed_state << 13;
        seed_state ^= seed_state >> 7;
        seed_state ^= seed_state << 17;
        let delay = cold.mul_f64((seed_state % 1000) as f64 / 1000.0);
        let mut child = sync(&bed, &[]).spawn();
        std::thread::sleep(delay);
        if child.try_wait().unwrap().is_none() {
            killed_mid_run += 1;
        }
        let _ = child.kill();
        let _ = child.wait();
        let context = format!("run {run} (killed after {delay:?})");
        assert_no_torn_files(&bed.root, &context);
        converge(&bed, &context);
        assert_no_torn_files(&bed.root, &context);
    }
    // The kills really landed inside runs, not after them.
    assert!(
        killed_mid_run * 2 >= runs,
        "only {killed_mid_run} of {runs} kills hit a running sync"
    );
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn aws_faults_at_a_high_rate_are_retried_or_fail_cleanly() {
    let bed = Bed::new(NodeKind::GossipMaster);
    make_cold(&bed);
    // A quarter of all EC2 calls throttled or failing with 5xx, and slow.
    bed.moto().set_faults(serde_json::json!([
        {"match": "Describe", "rate": 0.25, "status": 503, "code": "RequestLimitExceeded", "style": "query", "delay": 0.05},
        {"match": "AttachVolume", "rate": 0.25, "status": 500, "code": "InternalError", "style": "query"},
    ]));
    for round in 0..3 {
        let status = sync(&bed, &[]).run().code;
        let context = format!("round {round} under faults: exit {status}");
        assert!(matches!(status, 0 | 1 | 75), "{context}");
        assert_no_torn_files(&bed.root, &context);
    }
    let faulted = bed.moto().operations().len();
    bed.moto().set_faults(serde_json::json!([]));
    converge(&bed, "after the faults stopped");
    assert!(faulted > 0);
}

/// The pid of a live process named `name` whose parent is `parent`.
fn child_named(parent: u32, name: &str) -> Option<u32> {
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // pid (comm) state ppid …
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let comm = &stat[open + 1..close];
        let mut rest = stat[close + 2..].split(' ');
        let state = rest.next();
        let ppid = rest.next().and_then(|p| p.parse::<u32>().ok());
        if comm == name && ppid == Some(parent) && state != Some("Z") {
            return Some(pid);
        }
    }
    None
}

/// What `/proc` says of a process that still runs (state, flags, pending signals, where it
/// waits), or `None` when it is gone, a zombie, or exiting with SIGKILL delivered.
fn running_state(pid: u32) -> Option<String> {
    const PF_EXITING: u64 = 0x4;
    const SIGKILL_BIT: u64 = 1 << (libc::SIGKILL - 1);
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let mut fields = stat[stat.rfind(')')? + 2..].split(' ');
    let state = fields.next()?.to_owned();
    let flags: u64 = fields.nth(5)?.parse().ok()?;
    let pending = |key: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(key))
            .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
            .unwrap_or(0)
    };
    let sigkill = (pending("SigPnd:") | pending("ShdPnd:")) & SIGKILL_BIT != 0;
    if state == "Z" || state == "X" || flags & PF_EXITING != 0 || sigkill {
        return None;
    }
    let wchan = std::fs::read_to_string(format!("/proc/{pid}/wchan")).unwrap_or_default();
    Some(format!(
        "state {state}, flags {flags:#x}, waiting in {wchan:?}"
    ))
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_killed_run_leaves_no_orphan_mkfs() {
    let node = support::bed::Bed::new(support::bed::NodeKind::Bare);
    let disk = LoopDevice::blank(64);
    let cluster = "orphan.example.com";
    let volume = node.etcd_volume(cluster, &[("main", "a/a")]);
    node.root.link_by_id(&volume, &disk.path);
    // mkfs's writes are held for a minute: it is caught running, protokube killed under it.
    let child = Protokube::under(&[
        "strace",
        "-f",
        "-qq",
        "-o",
        "/dev/null",
        "-e",
        "inject=pwrite64:delay_enter=60000000",
    ])
    .moto(node.moto())
    .imds(node.imds())
    .args(["mount", "--master", "--cluster-id", cluster])
    .arg_path("--root", node.root.path())
    .spawn();
    // Whatever happens below, nothing this test started outlives it.
    struct Reap(support::Guard, std::cell::Cell<Option<u32>>);
    impl Drop for Reap {
        fn drop(&mut self) {
            if let Some(pid) = self.1.get() {
                // SAFETY: kill(2) of a pid this test found.
                unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            }
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let strace = child.id();
    let child = Reap(child, std::cell::Cell::new(None));
    let deadline = Instant::now() + std::time::Duration::from_secs(30);
    let (protokube, mkfs) = loop {
        let protokube = child_named(strace, "protokube");
        if let Some(mkfs) = protokube.and_then(|p| child_named(p, "mkfs.ext4")) {
            child.1.set(Some(mkfs));
            break (protokube.unwrap(), mkfs);
        }
        assert!(Instant::now() < deadline, "mkfs.ext4 never started");
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    // SAFETY: kill(2) on a pid we just found.
    assert_eq!(unsafe { libc::kill(protokube as i32, libc::SIGKILL) }, 0);
    // Killed means the kernel is taking it down: a zombie, gone, or exiting (`PF_EXITING`) with
    // SIGKILL delivered. A dying process closes its device last, and closing a block device
    // writes its dirty pages back, which on a machine busy with other tests' I/O can take seconds
    // in state D; the next run below waits for that like a new run on the node would.
    let killed = Instant::now() + std::time::Duration::from_secs(10);
    while let Some(alive) = running_state(mkfs) {
        assert!(
            Instant::now() < killed,
            "mkfs.ext4 {mkfs} outlived protokube ({alive})"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let gone = Instant::now() + std::time::Duration::from_mins(2);
    while std::fs::read_to_string(format!("/proc/{mkfs}/stat"))
        .is_ok_and(|stat| !stat.contains(") Z "))
    {
        assert!(
            Instant::now() < gone,
            "mkfs.ext4 {mkfs} took two minutes to exit"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // The next run finds no orphan holding the device: it finishes the format.
    let out = node.mount(cluster, &[]);
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(disk.fs_type().as_deref(), Some("ext4"));
}
