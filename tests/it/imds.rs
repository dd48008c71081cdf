//! The instance metadata service as containers and IPv6-only subnets meet it (docs/commands.md): a
//! token request the hop limit drops names the fixes; `AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE=IPv6`
//! reaches IMDS at `[fd00:ec2::254]` (served here inside a network namespace of the test's own).

use crate::support;

use std::net::TcpListener;
use std::os::fd::AsRawFd as _;
use std::process::Command;

use support::{ImdsServer, Protokube};

#[test]
fn a_token_request_that_gets_no_answer_names_the_hop_limit_and_the_fixes() {
    // Accepts, never answers: what a container behind kOps' hop limit of 1 sees.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let _held = std::thread::spawn(move || {
        let mut open = Vec::new();
        for stream in listener.incoming().take(4) {
            open.push(stream);
        }
        std::thread::sleep(std::time::Duration::from_secs(30));
    });
    let out = Protokube::new()
        .env(
            "AWS_EC2_METADATA_SERVICE_ENDPOINT",
            format!("http://127.0.0.1:{port}/"),
        )
        .args(["discover-volumes", "--cluster-id", "c.example.com"])
        // One attempt's 10 s answer wait, then the next is cut short: not ready.
        .args(["--timeout", "12s"])
        .run();
    assert_eq!(out.code, 75, "{out:#?}");
    let line = &out.error_lines()[0];
    for needle in ["token", "hop limit", "host networking", "--instance-id"] {
        assert!(line.contains(needle), "`{needle}` not in {line}");
    }
}

/// A network namespace of its own, removed when dropped.
struct Netns(String);

impl Netns {
    fn new() -> Self {
        let name = format!("pk-imds-{}", std::process::id());
        let ip = |args: &[&str]| {
            let out = Command::new("ip").args(args).output().unwrap();
            assert!(out.status.success(), "ip {args:?}: {out:?}");
        };
        ip(&["netns", "add", &name]);
        let ns = Self(name);
        ip(&["-n", &ns.0, "link", "set", "lo", "up"]);
        ip(&[
            "-n",
            &ns.0,
            "addr",
            "add",
            "fd00:ec2::254/128",
            "dev",
            "lo",
            "nodad",
        ]);
        ns
    }

    /// A listener bound inside the namespace (a socket keeps the namespace it was made in).
    fn listen(&self, address: &str) -> TcpListener {
        let path = format!("/run/netns/{}", self.0);
        let address = address.to_owned();
        std::thread::spawn(move || {
            let file = std::fs::File::open(path).unwrap();
            // SAFETY: setns on a namespace file we opened, in this thread only.
            assert_eq!(
                unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) },
                0
            );
            TcpListener::bind(address).unwrap()
        })
        .join()
        .unwrap()
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).output();
    }
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn the_ipv6_endpoint_mode_reaches_imds_at_its_ipv6_address() {
    let ns = Netns::new();
    let imds = ImdsServer::serve_on(
        ns.listen("[fd00:ec2::254]:80"),
        &[
            ("instance-id", "i-0123456789abcdef0"),
            ("placement/availability-zone", "us-east-1a"),
            ("placement/region", "us-east-1"),
        ],
    );
    let out = Protokube::under(&["ip", "netns", "exec", &ns.0])
        .env_remove("AWS_EC2_METADATA_SERVICE_ENDPOINT")
        .env("AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE", "IPv6")
        .env("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
        .args([
            "discover-volumes",
            "--cluster-id",
            "c.example.com",
            "--timeout",
            "3s",
        ])
        .run();
    // Identity came from IMDS over IPv6; the (absent) EC2 endpoint is what failed.
    assert_ne!(out.code, 0, "{out:#?}");
    assert!(
        out.error_lines()[0].contains("ec2:DescribeVolumes"),
        "{out:#?}"
    );
    let requests = imds.requests();
    for wanted in [
        "PUT /latest/api/token",
        "GET /latest/meta-data/instance-id",
        "GET /latest/meta-data/placement/region",
    ] {
        assert!(
            requests.iter().any(|r| r == wanted),
            "{wanted} not in {requests:?}"
        );
    }
}
