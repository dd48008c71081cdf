//! A network namespace of a test's own, only its loopback up: where a test's etcd listens on its
//! well-known ports without meeting another test's, and where protokube runs to reach it.

use std::os::fd::AsRawFd as _;
use std::process::Command;
use std::time::{Duration, Instant};

use super::Protokube;

pub(crate) struct Netns {
    pub name: String,
}

impl Netns {
    /// A new namespace whose `/etc/hosts` (`/etc/netns/<name>/hosts`) holds `hosts`.
    pub(crate) fn new(hosts: &str) -> Self {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let sequence = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("pkt{}x{sequence}", std::process::id());
        ip(&["netns", "add", &name]);
        let netns = Self { name };
        ip(&["-n", &netns.name, "link", "set", "lo", "up"]);
        std::fs::create_dir_all(format!("/etc/netns/{}", netns.name)).unwrap();
        std::fs::write(format!("/etc/netns/{}/hosts", netns.name), hosts).unwrap();
        netns
    }

    /// protokube run inside this namespace (`nsenter --net`: unlike `ip netns exec`, no mount
    /// namespace of its own that would hold every other test's mounts while it runs).
    pub(crate) fn protokube(&self) -> Protokube {
        Protokube::under(&["nsenter", &format!("--net=/run/netns/{}", self.name)])
    }

    /// Runs `f` on a thread that has entered this namespace (a thread's network namespace is
    /// its own: the test's other threads stay where they are).
    pub(crate) fn run<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let file = std::fs::File::open(format!("/run/netns/{}", self.name)).unwrap();
                    // SAFETY: setns on a valid descriptor changes only this thread's namespace.
                    let entered = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
                    assert_eq!(entered, 0, "setns: {}", std::io::Error::last_os_error());
                    f()
                })
                .join()
                .unwrap()
        })
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = std::panic::catch_unwind(|| kill_all_in(&self.name));
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .output();
        let _ = std::fs::remove_dir_all(format!("/etc/netns/{}", self.name));
    }
}

/// Runs `ip` (iproute2) with `args`; it must succeed.
pub(crate) fn ip(args: &[&str]) {
    super::run("ip", args);
}

/// Kills every process in network namespace `ns`, and waits until none is left (10 s at most).
pub(crate) fn kill_all_in(ns: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let out = Command::new("ip")
            .args(["netns", "pids", ns])
            .output()
            .unwrap();
        let pids = String::from_utf8_lossy(&out.stdout).into_owned();
        if pids.trim().is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "processes left in {ns}: {pids}");
        for pid in pids.split_whitespace() {
            let _ = Command::new("kill").args(["-9", pid]).status();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
