//! kOps' nodes as nodeup's unit runs protokube on them: the unit lines kOps' nodeup writes
//! (`tests/fixtures/kops/protokube-units/`, one per version and form), a recording `systemctl`,
//! and the world a unit line runs in (the emulator, a control-plane instance's metadata, a
//! hosted zone), run as nodeup runs them — no subcommand, the old daemon's loop — until the
//! first run is done, then stopped with SIGTERM.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::time::{Duration, Instant};

use super::bed::{Bed, NodeKind};
use super::block::TestRoot;
use super::{fixture, seed, Protokube};

/// The unit line of `name` (`1.18-docker`): its arguments, and where they came from.
pub(crate) fn unit_line(name: &str) -> (Vec<String>, String) {
    let text = std::fs::read_to_string(fixture(&format!("protokube-units/{name}.args"))).unwrap();
    let mut lines = text.lines();
    let origin = lines.next().unwrap().to_owned();
    let args = lines
        .next()
        .unwrap()
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    (args, origin)
}

/// Every unit line kept in the fixtures.
pub(crate) fn all_unit_lines() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixture("protokube-units"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter_map(|n| n.strip_suffix(".args").map(str::to_owned))
        .collect();
    names.sort();
    names
}

pub(crate) fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter()
        .find_map(|a| a.strip_prefix(name).and_then(|rest| rest.strip_prefix('=')))
}

/// A recording `systemctl` in a directory of its own, to put first on PATH: every call's
/// arguments go to `<dir>/calls`; `is-active` says inactive (3), anything else succeeds.
pub(crate) fn recording_systemctl() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls");
    let script = dir.path().join("systemctl");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$*\" >> {}\ncase \"$1\" in is-active) exit 3;; esac\nexit 0\n",
            calls.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// What a unit line's first loop run did.
pub(crate) struct FirstRun {
    pub stderr: String,
    /// The first run's report (`PROTOKUBE_OUTPUT=json`).
    pub report: serde_json::Value,
    pub systemctl: Vec<String>,
    pub exit_on_sigterm: Option<i32>,
}

/// The world a unit line runs in: the emulator and metadata of a control-plane instance of
/// `cluster`, a hosted zone, the Kubernetes API stand-in.
pub(crate) struct World {
    pub bed: Bed,
    pub zone: String,
}

impl World {
    pub(crate) fn new(cluster: &str) -> Self {
        let bed = Bed::new(NodeKind::Bare);
        bed.tag_as_master(cluster);
        let zone = super::runtime().block_on(async {
            seed::hosted_zone(&bed.moto().route53().await, "example.com").await
        });
        Self { bed, zone }
    }

    /// Runs `args` as nodeup's unit does on the host (kOps 1.21 and later: `--root` is `root`),
    /// until the first run is done, then stops it with SIGTERM; `env` adds to nodeup's
    /// environment.
    pub(crate) fn run(
        &self,
        args: &[String],
        root: &TestRoot,
        env: &[(&str, String)],
        systemctl: &tempfile::TempDir,
    ) -> FirstRun {
        self.run_in(Layout::Host, args, root, env, systemctl)
    }

    /// Runs `args` as nodeup's unit runs them in `layout`: on the host with `--root` at `root`,
    /// or in kOps' container image with `root` as the host at `/rootfs`.
    pub(crate) fn run_in(
        &self,
        layout: Layout<'_>,
        args: &[String],
        root: &TestRoot,
        env: &[(&str, String)],
        systemctl: &tempfile::TempDir,
    ) -> FirstRun {
        let args: Vec<String> = args
            .iter()
            .map(|a| a.replace("Z1AFAKE1ZON3YO", &self.zone))
            .collect();
        let logs = tempfile::tempdir().unwrap();
        let (out, err) = (logs.path().join("stdout"), logs.path().join("stderr"));
        let path = format!(
            "{}:{}",
            systemctl.path().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let image_dir = tempfile::tempdir().unwrap();
        let mut command = match layout {
            Layout::Host => Protokube::new().env("PROTOKUBE_ROOT", root.path()),
            Layout::Image(image, tool) => {
                let wrapper = image.wrapper(image_dir.path(), root.path(), tool);
                Protokube::under(&wrapper.iter().map(String::as_str).collect::<Vec<_>>())
            }
        }
        .moto(self.bed.moto())
        .imds(self.bed.imds())
        .env("PATH", path)
        .env("PROTOKUBE_OUTPUT", "json");
        for (key, value) in env {
            command = command.env(key, value);
        }
        let mut daemon = command.args(&args).spawn_to(
            std::fs::File::create(&out).unwrap(),
            std::fs::File::create(&err).unwrap(),
        );
        let deadline = Instant::now() + Duration::from_mins(1);
        let done = |text: &str| text.contains("run finished") || text.contains("protokube: error:");
        loop {
            let stderr = std::fs::read_to_string(&err).unwrap_or_default();
            if done(&stderr) {
                break;
            }
            if let Some(status) = daemon.try_wait().unwrap() {
                panic!("{args:?} exited before its first run was done ({status}): {stderr}");
            }
            assert!(
                Instant::now() < deadline,
                "{args:?}: no first run:\n{stderr}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        // The report is printed right after the last log line.
        std::thread::sleep(Duration::from_millis(200));
        let exit = super::stop_with_sigterm(&mut daemon, Duration::from_secs(20));
        let stdout = std::fs::read_to_string(&out).unwrap();
        let report = serde_json::Deserializer::from_str(&stdout)
            .into_iter::<serde_json::Value>()
            .next()
            .and_then(Result::ok)
            .unwrap_or_else(|| panic!("{args:?}: no report on stdout: {stdout}"));
        FirstRun {
            stderr: std::fs::read_to_string(&err).unwrap(),
            report,
            systemctl: std::fs::read_to_string(systemctl.path().join("calls"))
                .unwrap_or_default()
                .lines()
                .map(str::to_owned)
                .collect(),
            exit_on_sigterm: exit,
        }
    }
}

/// Where a unit line runs: on the host (kOps 1.21 and later), or in kOps' protokube image of
/// its era (kOps 1.12–1.20), with that image's channels tool, when given (a path of this
/// machine, put where the image keeps it).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Layout<'a> {
    Host,
    Image(Image, Option<&'a Path>),
}

/// kOps' protokube images, laid out as their build files lay them out, with the host at
/// `/rootfs` (nodeup mounts it there): 1.12–1.18's Debian image
/// (`release-1.18:images/protokube/Dockerfile`: `FROM k8s.gcr.io/debian-base-amd64:0.3`,
/// protokube and channels in `/usr/bin/`), 1.19–1.20's distroless image
/// (`release-1.19:protokube/cmd/protokube/BUILD.bazel`: `protokube` and `channels` at `/`, the
/// host's libraries mounted in).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Image {
    Debian,
    /// The Debian image with a stray `/protokube` beside `/usr/bin/protokube` (an operator's
    /// copy): still 1.12–1.18's image, which never has `/channels`.
    DebianWithStrayProtokube,
    Distroless,
}

impl Image {
    /// The image of kOps `version` (`1.18`), for a container unit line.
    pub(crate) fn of_version(version: u32) -> Self {
        if version >= 19 {
            Self::Distroless
        } else {
            Self::Debian
        }
    }

    /// Where the image keeps protokube and kOps' channels tool.
    pub(crate) fn paths(self) -> (&'static str, &'static str) {
        match self {
            Self::Debian | Self::DebianWithStrayProtokube => {
                ("/usr/bin/protokube", "/usr/bin/channels")
            }
            Self::Distroless => ("/protokube", "/channels"),
        }
    }

    /// The command that runs protokube (the binary given after it) in this image: a private
    /// mount namespace of its own whose root is the image — this machine's system
    /// directories, the image's own files (protokube, and `channels` when given), `host_root`
    /// at `/rootfs` — built under `work`, gone with the process.
    pub(crate) fn wrapper(
        self,
        work: &Path,
        host_root: &Path,
        channels: Option<&Path>,
    ) -> Vec<String> {
        let (protokube, tool) = self.paths();
        let script = format!(
            r#"set -eu
binary=$1; shift
work='{work}'
mount -t tmpfs image "$work"
image=$work/root
mkdir -p "$image" "$work/usr-upper" "$work/usr-work"
# The system: this machine's, the image's own files added over /usr.
for dir in bin sbin lib lib64; do
  if [ -L "/$dir" ]; then ln -s "$(readlink "/$dir")" "$image/$dir"
  elif [ -d "/$dir" ]; then mkdir "$image/$dir"; mount --rbind "/$dir" "$image/$dir"; fi
done
mkdir -p "$image/usr"
mount -t overlay usr -o "lowerdir=/usr,upperdir=$work/usr-upper,workdir=$work/usr-work" "$image/usr"
for dir in etc proc dev sys tmp root var run; do
  mkdir -p "$image/$dir"; mount --rbind "/$dir" "$image/$dir"
done
# The host, where nodeup mounts it.
mkdir -p "$image/rootfs"; mount --rbind '{host_root}' "$image/rootfs"
# protokube, and the channels tool, where the image keeps them.
touch "$image{protokube}"; mount --bind "$binary" "$image{protokube}"
if [ -n '{channels}' ]; then cp '{channels}' "$image{tool}"; chmod 755 "$image{tool}"; fi
if [ '{stray}' = yes ]; then cp "$binary" "$image/protokube"; fi
# The distroless image always has kOps' channels tool at its root.
if [ '{distroless}' = yes ] && [ ! -e "$image/channels" ]; then
  printf '#!/bin/sh\nexit 0\n' > "$image/channels"; chmod 755 "$image/channels"
fi
exec chroot "$image" '{protokube}' "$@"
"#,
            work = work.display(),
            host_root = host_root.display(),
            channels = channels
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            distroless = if self == Self::Distroless {
                "yes"
            } else {
                "no"
            },
            stray = if self == Self::DebianWithStrayProtokube {
                "yes"
            } else {
                "no"
            },
        );
        [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            &script,
            "kops-image",
        ]
        .map(str::to_owned)
        .to_vec()
    }
}
