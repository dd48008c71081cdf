//! What the integration tests share: moto (`moto_server` behind a request-recording, fault-
//! injecting wrapper) seeded through the real AWS SDK, an in-test IMDSv2 server, the stand-ins
//! for what has no emulator (GCE's metadata server and APIs, the Kubernetes API), kOps' files and
//! nodes, real loop devices, network namespaces, the gossip bed with the project's Go peer, and
//! a runner for the real `protokube` binary. Each module says which.

#![allow(dead_code)]

pub(crate) mod bed;
pub(crate) mod block;
pub(crate) mod clouds;
pub(crate) mod double;
pub(crate) mod etcd;
pub(crate) mod gce;
pub(crate) mod gossip;
pub(crate) mod iam;
pub(crate) mod imds;
pub(crate) mod kops;
pub(crate) mod kube;
pub(crate) mod moto;
pub(crate) mod netns;
pub(crate) mod report;
pub(crate) mod seed;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The repository's checkout, as `cargo test` says it when the tests run: the path baked in
/// at build time is another clone's where one target directory serves several (CI's).
pub(crate) fn repo() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
}

/// Runs `program` with `args`, which must succeed; its standard output.
pub(crate) fn run(program: &str, args: &[&str]) -> String {
    let output = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running {program}: {e}"));
    assert!(
        output.status.success(),
        "{program} {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A child process a test started: killed (and reaped) when the guard goes, pass or fail, so
/// that nothing a test starts outlives it. Derefs to the child.
pub(crate) struct Guard(std::process::Child);

impl Guard {
    pub(crate) fn new(child: std::process::Child) -> Self {
        Self(child)
    }
}

impl std::ops::Deref for Guard {
    type Target = std::process::Child;

    fn deref(&self) -> &std::process::Child {
        &self.0
    }
}

impl std::ops::DerefMut for Guard {
    fn deref_mut(&mut self) -> &mut std::process::Child {
        &mut self.0
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

/// Starts `command` (stdout piped) and reads the `PORT <n>` line a stand-in prints when it
/// listens: the child and the port.
pub(crate) fn spawn_listening(command: &mut Command, what: &str) -> (Guard, u16) {
    use std::io::BufRead as _;
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {what}: {e}"));
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line
        .trim()
        .strip_prefix("PORT ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{what} did not report its port: {line:?}"));
    (Guard::new(child), port)
}

pub(crate) use imds::ImdsServer;
pub(crate) use moto::Moto;

/// The completed cluster specs in `tests/fixtures/kops/cluster-completed/`, by file stem.
pub(crate) const COMPLETED_SPECS: [&str; 8] = [
    "complex",
    "ha",
    "many-addons-ccm-irsa",
    "minimal-1.28",
    "minimal-dns-none",
    "minimal-etcd",
    "minimal-ipv6",
    "minimal_gossip",
];

/// The ExecStart line kOps' nodeup (v1.30.3) writes into `protokube.service`, for its test
/// cluster `minimal.example.com` (`reference/README.md` §Invocation).
pub(crate) const NODEUP_EXEC_START: &str =
    "/opt/kops/bin/protokube --bootstrap-master-node-labels=true \
     --cloud=aws --cluster-id=minimal.example.com --containerized=false \
     --dns-internal-suffix=.internal.minimal.example.com --master=true \
     --node-name=master.hostname.invalid --v=4 --zone=*/Z1AFAKE1ZON3YO";

/// Reference data copied from kOps (see `tests/fixtures/kops/README.md`).
pub(crate) fn fixture(path: &str) -> PathBuf {
    crate::support::repo()
        .join("tests/fixtures/kops")
        .join(path)
}

/// The ExecStart flags of nodeup's protokube unit in its tasks file for kOps `version`.
pub(crate) fn nodeup_unit_flags(version: &str) -> Vec<String> {
    let text = std::fs::read_to_string(fixture(&format!("nodeup-protokube-v{version}.tasks.yaml")))
        .unwrap();
    text.lines()
        .find_map(|l| l.trim().strip_prefix("ExecStart=/opt/kops/bin/protokube "))
        .expect("an ExecStart line")
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

/// SIGTERM to `daemon`, then its exit code, which must come within `within`.
pub(crate) fn stop_with_sigterm(daemon: &mut std::process::Child, within: Duration) -> Option<i32> {
    let status = Command::new("kill")
        .args(["-TERM", &daemon.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let stopped = Instant::now();
    loop {
        if let Some(exit) = daemon.try_wait().unwrap() {
            return exit.code();
        }
        assert!(stopped.elapsed() < within, "SIGTERM did not stop it");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The names in directory `dir`, sorted; none when it does not exist.
pub(crate) fn dir_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// A copy of the reference spec `base` (e.g. `ha.yaml`) with one field set: `path` is a list of
/// keys; the file is written in `dir`.
pub(crate) fn spec_with(
    dir: &Path,
    base: &str,
    path: &[&str],
    value: yaml_serde::Value,
) -> PathBuf {
    let mut doc: yaml_serde::Value = yaml_serde::from_str(
        &std::fs::read_to_string(fixture(&format!("cluster-completed/{base}"))).unwrap(),
    )
    .unwrap();
    let mut node = &mut doc;
    for key in path {
        node = &mut node[*key];
    }
    *node = value;
    let file = dir.join(format!(
        "{}-{}.yaml",
        base.trim_end_matches(".yaml"),
        path.join("-")
    ));
    std::fs::write(&file, yaml_serde::to_string(&doc).unwrap()).unwrap();
    file
}

/// What a finished `protokube` run left.
#[derive(Debug)]
pub(crate) struct RunOutput {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl RunOutput {
    /// The JSON report on stdout (`-o json`), typed; a report of another shape fails the test.
    pub(crate) fn report(&self) -> report::Report {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not the JSON report ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }

    /// The YAML report on stdout (`-o yaml`): the same shape as the JSON one.
    pub(crate) fn yaml_report(&self) -> report::Report {
        yaml_serde::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not the YAML report ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }

    /// The stderr lines that are not log lines.
    pub(crate) fn error_lines(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .filter(|l| l.starts_with("protokube: error:"))
            .collect()
    }
}

/// The binary the tests run: this build's, or the one `PROTOKUBE_TEST_BINARY` names (to show
/// that a new test fails against an earlier build).
pub(crate) fn binary() -> std::path::PathBuf {
    std::env::var_os("PROTOKUBE_TEST_BINARY")
        .map_or_else(|| env!("CARGO_BIN_EXE_protokube").into(), Into::into)
}

/// A `protokube` invocation with a clean environment: no `PROTOKUBE_*` or `AWS_*` from the
/// developer's shell, test credentials, and the emulator and metadata endpoints when given.
pub(crate) struct Protokube {
    command: Command,
}

impl Protokube {
    pub(crate) fn new() -> Self {
        Self::under(&[])
    }

    /// `protokube` started by `wrapper` (e.g. `["strace", "-o", "/dev/null", …]`), with the same
    /// clean environment.
    pub(crate) fn under(wrapper: &[&str]) -> Self {
        let binary = binary();
        // `PROTOKUBE_TEST_RUNNER` runs the binary under an emulator (scripts/prove-arm64:
        // `qemu-aarch64-static -L /usr/aarch64-linux-gnu`), inside any wrapper of the test.
        let runner = std::env::var("PROTOKUBE_TEST_RUNNER").unwrap_or_default();
        let wrapper: Vec<&str> = wrapper
            .iter()
            .copied()
            .chain(runner.split_whitespace())
            .collect();
        let mut command = match wrapper.split_first() {
            Some((program, args)) => {
                let mut command = Command::new(program);
                command.args(args).arg(&binary);
                command
            }
            None => Command::new(&binary),
        };
        command.env_clear();
        for keep in ["PATH", "TMPDIR"] {
            if let Some(value) = std::env::var_os(keep) {
                command.env(keep, value);
            }
        }
        command
            .env("AWS_ACCESS_KEY_ID", "testing")
            .env("AWS_SECRET_ACCESS_KEY", "testing")
            .env("AWS_CONFIG_FILE", "/dev/null")
            .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
            // Nothing listens here: a run that forgets to use the in-test IMDS fails fast.
            .env("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:9/")
            // A gossip member (kOps' units of gossip clusters run one) on ports of its own:
            // tests run side by side, and kOps' 3999 and 4000 would be taken.
            .env("PROTOKUBE_GOSSIP_LISTEN", "127.0.0.1:0")
            .env("PROTOKUBE_GOSSIP_LISTEN_SECONDARY", "127.0.0.1:0")
            .stdin(Stdio::null());
        Self { command }
    }

    pub(crate) fn moto(mut self, moto: &Moto) -> Self {
        self.command.env("AWS_ENDPOINT_URL", moto.endpoint());
        self
    }

    /// Runs with these temporary credentials instead of the emulator's test keys.
    pub(crate) fn credentials(mut self, credentials: &iam::Credentials) -> Self {
        self.command
            .env("AWS_ACCESS_KEY_ID", &credentials.key)
            .env("AWS_SECRET_ACCESS_KEY", &credentials.secret)
            .env("AWS_SESSION_TOKEN", &credentials.token);
        self
    }

    pub(crate) fn imds(mut self, imds: &ImdsServer) -> Self {
        self.command
            .env("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.endpoint());
        self
    }

    pub(crate) fn env_remove(mut self, key: &str) -> Self {
        self.command.env_remove(key);
        self
    }

    pub(crate) fn env(mut self, key: &str, value: impl AsRef<std::ffi::OsStr>) -> Self {
        self.command.env(key, value);
        self
    }

    pub(crate) fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        self.command.args(args);
        self
    }

    pub(crate) fn current_dir(mut self, dir: &Path) -> Self {
        self.command.current_dir(dir);
        self
    }

    pub(crate) fn arg_path(mut self, flag: &str, path: &Path) -> Self {
        self.command.arg(flag).arg(path);
        self
    }

    /// Starts it (stdout and stderr discarded); the caller waits, the guard kills it at the
    /// latest when the test ends.
    pub(crate) fn spawn(mut self) -> Guard {
        Guard::new(
            self.command
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawning protokube"),
        )
    }

    /// Starts it with its output going to `stdout` and `stderr`; the caller waits.
    pub(crate) fn spawn_to(mut self, stdout: std::fs::File, stderr: std::fs::File) -> Guard {
        Guard::new(
            self.command
                .stdout(stdout)
                .stderr(stderr)
                .spawn()
                .expect("spawning protokube"),
        )
    }

    /// Runs to completion (killed after two minutes so a hang fails the test instead of CI).
    pub(crate) fn run(mut self) -> RunOutput {
        let dir = tempfile::tempdir().unwrap();
        let out_path = dir.path().join("stdout");
        let err_path = dir.path().join("stderr");
        self.command
            .stdout(std::fs::File::create(&out_path).unwrap())
            .stderr(std::fs::File::create(&err_path).unwrap());
        let mut child = Guard::new(self.command.spawn().expect("spawning protokube"));
        let deadline = Instant::now() + Duration::from_mins(2);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("protokube did not finish within two minutes");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        RunOutput {
            code: status.code().unwrap_or_else(|| {
                128 + std::os::unix::process::ExitStatusExt::signal(&status).unwrap_or(0)
            }),
            stdout: std::fs::read_to_string(out_path).unwrap(),
            stderr: std::fs::read_to_string(err_path).unwrap(),
        }
    }
}

/// A current-thread runtime for seeding the emulator from synchronous tests.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}
