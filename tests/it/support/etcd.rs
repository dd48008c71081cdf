//! Runs a rendered etcd pod's command and environment with Debian's etcd, as kubelet would: the
//! pod's host-path volumes bind-mounted where the container sees them, in a private mount
//! namespace, inside a network namespace of the test's. Killed when dropped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use super::block::TestRoot;

pub(crate) struct EtcdPod {
    /// The pod as rendered.
    pub pod: yaml_serde::Value,
    /// Host paths (under the root) of the data directory and the log file.
    pub data_host: PathBuf,
    pub log_host: PathBuf,
    child: Child,
}

impl EtcdPod {
    /// Starts the pod of `manifest` (host paths taken under `root`) inside network namespace
    /// `netns`, with `/etc/netns/<netns>/hosts` bound over `/etc/hosts` (as `ip netns exec`
    /// would; entered with `nsenter --net`, which makes no mount namespace of its own to hold
    /// every other test's mounts while etcd runs). Output of the wrapper goes to `stderr`.
    pub(crate) fn start(manifest: &Path, root: &TestRoot, netns: &str, stderr: Stdio) -> Self {
        let pod: yaml_serde::Value =
            yaml_serde::from_str(&std::fs::read_to_string(manifest).unwrap()).unwrap();
        let container = &pod["spec"]["containers"][0];
        let host = |i: usize| {
            root.join(
                pod["spec"]["volumes"][i]["hostPath"]["path"]
                    .as_str()
                    .unwrap(),
            )
        };
        let (data_host, log_host) = (host(0), host(1));
        std::fs::create_dir_all(&data_host).unwrap();
        // The pod's certificate directories (volumes after data, log and hosts), from under the
        // root; the tests keep them under /var, which is the pod's own tmpfs here.
        let mut tls_dirs = String::new();
        for volume in pod["spec"]["volumes"].as_sequence().unwrap().iter().skip(3) {
            let path = volume["hostPath"]["path"].as_str().unwrap();
            assert!(
                path.starts_with("/var/"),
                "a test pod's TLS files live under /var: {path}"
            );
            tls_dirs.push_str(&format!(
                "mkdir -p {path}\nmount --bind {} {path}\n",
                root.join(path).display()
            ));
        }
        let script = format!(
            "set -e\n\
             mount --make-rprivate /\n\
             if [ -f /etc/netns/{netns}/hosts ]; then mount --bind /etc/netns/{netns}/hosts /etc/hosts; fi\n\
             mount -t tmpfs tmpfs /var\n\
             mkdir -p /var/etcd/data /var/log\n\
             touch /var/log/etcd.log\n\
             mount --bind {data} /var/etcd/data\n\
             mount --bind {log} /var/log/etcd.log\n\
             {tls_dirs}\
             mount -t tmpfs tmpfs /usr/local/bin\n\
             ln -s /usr/bin/etcd /usr/local/bin/etcd\n\
             # This namespace copied every other test's mounts; on a real machine they are not\n\
             # there, and holding them would keep those devices busy. A mount another test\n\
             # mounted over is out of reach until the one above it is gone: a few passes.\n\
             for pass in 1 2 3; do\n\
               for m in $(awk '$5 ~ \"^/tmp/\" {{print $5}}' /proc/self/mountinfo | sort -r); do umount -l \"$m\" 2>/dev/null || true; done\n\
             done\n\
             mount -t tmpfs tmpfs /tmp\n\
             exec \"$@\"\n",
            data = data_host.display(),
            log = log_host.display(),
        );
        let mut command = Command::new("nsenter");
        command
            .arg(format!("--net=/run/netns/{netns}"))
            .arg("unshare");
        // `--kill-child`: etcd dies with the process the test holds.
        command
            .args([
                "--mount",
                "--fork",
                "--kill-child",
                "sh",
                "-c",
                &script,
                "sh",
            ])
            .env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .stdout(Stdio::null())
            .stderr(stderr);
        for arg in container["command"].as_sequence().unwrap() {
            command.arg(arg.as_str().unwrap());
        }
        for e in container["env"].as_sequence().unwrap() {
            command.env(e["name"].as_str().unwrap(), e["value"].as_str().unwrap());
        }
        let child = command.spawn().expect("unshare (util-linux)");
        Self {
            pod,
            data_host,
            log_host,
            child,
        }
    }

    /// Port and path of the pod's HTTP liveness probe.
    pub(crate) fn probe(&self) -> (u16, String) {
        let probe = &self.pod["spec"]["containers"][0]["livenessProbe"]["httpGet"];
        (
            probe["port"].as_u64().unwrap() as u16,
            probe["path"].as_str().unwrap().to_owned(),
        )
    }

    pub(crate) fn stop(mut self) {
        self.kill();
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for EtcdPod {
    fn drop(&mut self) {
        self.kill();
    }
}
