//! Gossip test bed: the project's own Go peer (tests/gossip-peer: Debian's weaveworks mesh and
//! HashiCorp memberlist carrying kOps' state), nodes on loopback addresses of their own with a
//! root and an identity in moto, and `protokube gossip` members with their metrics files. Every
//! process started here is killed when its guard is dropped, pass or fail.

use std::io::{BufRead as _, Write as _};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::moto::Moto;
use super::Protokube;

/// The gossip cluster's name.
pub(crate) const CLUSTER: &str = "c.k8s.local";
/// How long a test waits for what should come at once.
pub(crate) const WITHIN: Duration = Duration::from_secs(20);

/// Where this user may build the Go peer: the target directory's test tmp when it can write
/// there, else a directory of its own under the system's temp (another user runs the suite).
fn build_dir() -> PathBuf {
    let shared = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("gossip-peer");
    let probe = shared.join(format!(".probe-{}", std::process::id()));
    if std::fs::create_dir_all(&shared).is_ok() && std::fs::write(&probe, b"").is_ok() {
        let _ = std::fs::remove_file(&probe);
        return shared;
    }
    let uid = super::run("id", &["-u"]).trim().to_owned();
    let own = std::env::temp_dir().join(format!("protokube-gossip-peer-{uid}"));
    std::fs::create_dir_all(&own).expect("a directory for the Go peer");
    own
}

/// The Go peer, built once per test run.
pub(crate) fn go_peer() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = build_dir();
        let out = dir.join("gossip-peer");
        let mut build = Command::new(super::repo().join("tests/gossip-peer/build"));
        build.arg(&out);
        if std::env::var_os("GOCACHE").is_none() {
            build.env("GOCACHE", dir.join("gocache"));
        }
        let status = build
            .status()
            .expect("running tests/gossip-peer/build (needs Debian's golang-go and the mesh, memberlist and protobuf packages: .ci/run installs them)");
        assert!(status.success(), "building the Go gossip peer failed");
        out
    })
}

/// A port free for TCP and UDP on every address.
pub(crate) fn free_port() -> u16 {
    loop {
        let tcp = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
        let port = tcp.local_addr().unwrap().port();
        if std::net::UdpSocket::bind(("0.0.0.0", port)).is_ok() {
            return port;
        }
    }
}

/// `127.0.0.1:port`.
pub(crate) fn addr(port: u16) -> String {
    at("127.0.0.1", port)
}

/// `ip:port`.
pub(crate) fn at(ip: &str, port: u16) -> String {
    format!("{ip}:{port}")
}

/// `--flag value` pairs.
pub(crate) fn flags(pairs: &[(&str, String)]) -> Vec<String> {
    pairs
        .iter()
        .flat_map(|(flag, value)| [format!("--{flag}"), value.clone()])
        .collect()
}

/// Waits until `test` holds; the time it took.
pub(crate) fn wait_until(what: &str, within: Duration, test: impl Fn() -> bool) -> Duration {
    let start = Instant::now();
    while start.elapsed() < within {
        if test() {
            return start.elapsed();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("never within {within:?}: {what}");
}

/// One Go peer: what it knows, line by line, and its stdin for commands.
pub(crate) struct GoPeer {
    child: Child,
    stdin: ChildStdin,
    pub(crate) lines: Arc<Mutex<Vec<serde_json::Value>>>,
}

/// How a Go peer runs: its name, addresses and seeds.
#[derive(Clone)]
pub(crate) struct PeerSpec<'a> {
    pub(crate) name: &'a str,
    pub(crate) host: &'a str,
    pub(crate) mesh: Option<u16>,
    pub(crate) mesh_seeds: Vec<String>,
    pub(crate) secret: &'a str,
    pub(crate) memberlist: Option<u16>,
    pub(crate) memberlist_seeds: Vec<String>,
}

impl Default for PeerSpec<'_> {
    fn default() -> Self {
        Self {
            name: "gossip-peer",
            host: "127.0.0.1",
            mesh: None,
            mesh_seeds: Vec::new(),
            secret: "",
            memberlist: None,
            memberlist_seeds: Vec::new(),
        }
    }
}

/// Seeds on 127.0.0.1 at `ports`.
pub(crate) fn local_seeds(ports: &[u16]) -> Vec<String> {
    ports.iter().map(|p| addr(*p)).collect()
}

impl GoPeer {
    pub(crate) fn start(spec: &PeerSpec<'_>) -> Self {
        let mut command = Command::new(go_peer());
        command.args(["--name", spec.name, "--mesh-secret", spec.secret]);
        if let Some(port) = spec.mesh {
            command.args([
                "--mesh-listen",
                &at(spec.host, port),
                "--mesh-seed",
                &spec.mesh_seeds.join(","),
            ]);
        }
        if let Some(port) = spec.memberlist {
            command.args([
                "--memberlist-listen",
                &at(spec.host, port),
                "--memberlist-seed",
                &spec.memberlist_seeds.join(","),
            ]);
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting the Go gossip peer");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Ok(value) = serde_json::from_str(&line) {
                    sink.lock().unwrap().push(value);
                }
            }
        });
        Self {
            child,
            stdin,
            lines,
        }
    }

    pub(crate) fn command(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// What it knows now.
    pub(crate) fn last(&self) -> serde_json::Value {
        self.lines
            .lock()
            .unwrap()
            .last()
            .cloned()
            .unwrap_or_default()
    }

    /// Waits until what the peer knows satisfies `test`; the time it took.
    pub(crate) fn wait_for(
        &self,
        what: &str,
        within: Duration,
        test: impl Fn(&serde_json::Value) -> bool,
    ) -> Duration {
        let start = Instant::now();
        while start.elapsed() < within {
            if self.lines.lock().unwrap().last().is_some_and(&test) {
                return start.elapsed();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "the Go peer never saw {what}; its last view: {:?}",
            self.last()
        );
    }

    pub(crate) fn value(line: &serde_json::Value, protocol: &str, key: &str) -> Option<String> {
        line[protocol][key].as_str().map(str::to_owned)
    }

    /// The members (memberlist) or connections (mesh) it counts now.
    pub(crate) fn peers(&self, protocol: &str) -> Option<u64> {
        self.last()["peers"][protocol].as_u64()
    }
}

impl Drop for GoPeer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The cloud of a test's cluster (moto), shared by its nodes.
pub(crate) struct Cloud {
    pub(crate) moto: Moto,
}

impl Cloud {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self {
            moto: Moto::start(),
        })
    }
}

/// A node of the cluster: an instance in moto, a loopback address of its own, and a root with
/// an empty hosts file.
pub(crate) struct Node {
    pub(crate) cloud: Arc<Cloud>,
    pub(crate) instance: String,
    pub(crate) ip: String,
    pub(crate) root: tempfile::TempDir,
}

impl Node {
    /// A node at 127.0.0.1 with a cloud of its own.
    pub(crate) fn new() -> Self {
        Self::at(&Cloud::new(), "127.0.0.1")
    }

    /// A node at `ip` in `cloud`.
    pub(crate) fn at(cloud: &Arc<Cloud>, ip: &str) -> Self {
        let instance = super::runtime().block_on(async {
            let ec2 = cloud.moto.ec2("us-east-1").await;
            super::seed::instance(&ec2, "us-east-1a", &[("KubernetesCluster", CLUSTER)]).await
        });
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("etc")).unwrap();
        std::fs::write(root.path().join("etc/hosts"), "127.0.0.1\tlocalhost\n").unwrap();
        Self {
            cloud: cloud.clone(),
            instance,
            ip: ip.to_owned(),
            root,
        }
    }

    pub(crate) fn moto(&self) -> &Moto {
        &self.cloud.moto
    }

    pub(crate) fn protokube(&self) -> Protokube {
        Protokube::new()
            .moto(&self.cloud.moto)
            .env("PROTOKUBE_INSTANCE_ID", &self.instance)
            .env("PROTOKUBE_AVAILABILITY_ZONE", "us-east-1a")
            .env("PROTOKUBE_REGION", "us-east-1")
            .env("PROTOKUBE_CLUSTER_ID", CLUSTER)
            .env("PROTOKUBE_INTERNAL_IP", &self.ip)
            .env("PROTOKUBE_ROOT", self.root.path())
    }

    pub(crate) fn hosts(&self) -> String {
        std::fs::read_to_string(self.root.path().join("etc/hosts")).unwrap()
    }

    /// Waits until the hosts file satisfies `test`; the time it took.
    pub(crate) fn wait_for_hosts(
        &self,
        what: &str,
        within: Duration,
        test: impl Fn(&str) -> bool,
    ) -> Duration {
        let start = Instant::now();
        while start.elapsed() < within {
            if test(&self.hosts()) {
                return start.elapsed();
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("the hosts file never had {what}:\n{}", self.hosts());
    }
}

/// `protokube gossip` running, its stderr in a file, its metrics file beside.
pub(crate) struct Member {
    child: Option<super::Guard>,
    log: tempfile::NamedTempFile,
    metrics: PathBuf,
}

impl Member {
    pub(crate) fn start(node: &Node, args: &[String]) -> Self {
        let log = tempfile::NamedTempFile::new().unwrap();
        let metrics = node.root.path().join("gossip.prom");
        let child = node
            .protokube()
            .args(["gossip", "-v"])
            .arg_path("--metrics-file", &metrics)
            .args(args)
            .spawn_to(
                std::fs::File::create("/dev/null").unwrap(),
                log.reopen().unwrap(),
            );
        Self {
            child: Some(child),
            log,
            metrics,
        }
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap()
    }

    /// The peers its metrics file counts for `protocol` now.
    pub(crate) fn peers(&self, protocol: &str) -> Option<u64> {
        let text = std::fs::read_to_string(&self.metrics).ok()?;
        let prefix = format!("protokube_gossip_peers{{protocol=\"{protocol}\"}} ");
        text.lines()
            .find_map(|line| line.strip_prefix(&prefix))
            .and_then(|n| n.trim().parse().ok())
    }

    /// Killed at once (no leave).
    pub(crate) fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stopped as systemd stops it; its exit code.
    pub(crate) fn stop(&mut self) -> Option<i32> {
        let mut child = self.child.take()?;
        super::stop_with_sigterm(&mut child, Duration::from_secs(20))
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A socket address from `ip:port` text.
pub(crate) fn socket(text: &str) -> SocketAddr {
    text.parse().unwrap()
}
