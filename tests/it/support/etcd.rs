//! Runs a rendered etcd pod's command and environment with Debian's etcd, as kubelet would: the
//! pod's host-path volumes bind-mounted where the container sees them, in a private mount
//! namespace, optionally inside a host's network namespace. Killed when dropped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use super::block::TestRoot;

pub(crate) struct EtcdPod {
    /// The pod as rendered.
    pub pod: serde_yaml::Value,
    /// Host paths (under the root) of the data directory and the log file.
    pub data_host: PathBuf,
    pub log_host: PathBuf,
    child: Child,
}

impl EtcdPod {
    /// Starts the pod of `manifest` (host paths taken under `root`). `hosts_file` is bound over
    /// `/etc/hosts` (not needed in a network namespace: `ip netns exec` binds
    /// `/etc/netns/<name>/hosts`). Output of the wrapper goes to `stderr`.
    pub(crate) fn start(
        manifest: &Path,
        root: &TestRoot,
        netns: Option<&str>,
        hosts_file: Option<&Path>,
        stderr: Stdio,
    ) -> Self {
        let pod: serde_yaml::Value =
            serde_yaml::from_str(&std::fs::read_to_string(manifest).unwrap()).unwrap();
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
        let hosts = hosts_file
            .map(|h| format!("mount --bind {} /etc/hosts\n", h.display()))
            .unwrap_or_default();
        let script = format!(
            "set -e\n\
             mount --make-rprivate /\n\
             {hosts}\
             mount -t tmpfs tmpfs /var\n\
             mkdir -p /var/etcd/data /var/log\n\
             touch /var/log/etcd.log\n\
             mount --bind {data} /var/etcd/data\n\
             mount --bind {log} /var/log/etcd.log\n\
             mount -t tmpfs tmpfs /usr/local/bin\n\
             ln -s /usr/bin/etcd /usr/local/bin/etcd\n\
             # This namespace copied every other test's mounts; on a real machine they are not\n\
             # there, and holding them would keep those devices busy.\n\
             for m in $(awk '$5 ~ \"^/tmp/\" {{print $5}}' /proc/self/mountinfo | sort -r); do umount -l \"$m\"; done\n\
             mount -t tmpfs tmpfs /tmp\n\
             exec \"$@\"\n",
            data = data_host.display(),
            log = log_host.display(),
        );
        let mut command = match netns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns, "unshare"]);
                c
            }
            None => Command::new("unshare"),
        };
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
