//! Every protokube unit line kOps' nodeup writes, version by version (the old protokube's job on
//! every kOps version): the golden lines of kOps' own nodeup tests on every
//! `release-1.N` branch that has them (1.18–1.36; for the docker and containerd forms the
//! arguments after the image's binary), and lines built from the code of branches without one
//! (1.12, 1.16), all under `tests/fixtures/kops/protokube-units/` with the branch they came
//! from. Each runs as nodeup runs it — no subcommand, the old daemon's loop — against the
//! emulator, the Kubernetes API stand-in, a recording `systemctl` and channels tool: no usage
//! error, the first run done as that kOps version's protokube did it (labels, RBAC, kubelet,
//! channels, etcd left alone where `--manage-etcd=false`), and SIGTERM ends it with 0.

use crate::support;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use support::block::TestRoot;
use support::kops::{all_unit_lines, flag, recording_systemctl, unit_line, Image, Layout, World};
use support::kube::{
    etcd_manager_pods, install_channels_tool, install_channels_tool_at, Certs, KubeApi,
};
use support::Protokube;

const MASTER: &str = "node-role.kubernetes.io/master";
const CONTROL_PLANE: &str = "node-role.kubernetes.io/control-plane";
const ROLE: &str = "kubernetes.io/role";
const PKI: &str = "kops.k8s.io/kops-controller-pki";
const EXCLUDE_LB: &str = "node.kubernetes.io/exclude-from-external-load-balancers";
const HOSTNAME: &str = "kubernetes.io/hostname";

/// The kOps minor version of the unit line `name` (`1.18-docker` → 18).
fn version_of(name: &str) -> u32 {
    name.trim_start_matches("1.")
        .split('-')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// The labels kOps' protokube of the line's version gave.
fn labels_of_version(name: &str, args: &[String]) -> Vec<&'static str> {
    if flag(args, "--bootstrap-master-node-labels") != Some("true") {
        return Vec::new();
    }
    match version_of(name) {
        16..=20 => vec![MASTER, PKI],
        21..=23 => vec![MASTER, CONTROL_PLANE, ROLE, PKI, EXCLUDE_LB],
        _ => vec![CONTROL_PLANE, PKI, EXCLUDE_LB],
    }
}

/// Each line runs where nodeup runs it: kOps 1.12–1.20's in that era's protokube image (the
/// host at `/rootfs`, the image's own channels tool), later ones on the host.
#[test]
#[ignore = "needs root: kOps' container images are mount namespaces; scripts/test runs it as root"]
fn every_kops_unit_line_runs_as_that_version_s_protokube() {
    let lines = all_unit_lines();
    assert!(lines.len() >= 20, "{lines:?}");
    let route53 = World::new("minimal.example.com");
    let gossip = World::new("minimal.k8s.local");
    for name in lines {
        let (args, origin) = unit_line(&name);
        let world = if flag(&args, "--dns") == Some("gossip") {
            &gossip
        } else {
            &route53
        };
        let node = Staged::new(&name, &args);
        let run = node.run(world, &args);
        let context = format!("{name} ({origin})\n{}", run.stderr);
        assert!(!run.stderr.contains("protokube: error:"), "{context}");
        assert_eq!(run.exit_on_sigterm, Some(0), "{context}");
        assert!(
            run.report.get("error").is_none(),
            "{context}\n{:#}",
            run.report
        );
        node.assert_api_objects(&name, &args, &context);
        node.assert_services_and_tools(&run, &context);
        assert_no_etcd_where_declined(world, &args, &run, &context);
        println!("{name}: first run done, SIGTERM → 0");
    }
}

/// A node staged for one unit line: its root with a kubeconfig for a stand-in API that has its
/// Node registered, etcd-manager's pods where the unit leaves etcd to it, and the channels tool
/// where that era has it.
struct Staged {
    root: TestRoot,
    _certs: Certs,
    api: KubeApi,
    node: String,
    registered: String,
    image: Option<Image>,
    image_tool: Option<PathBuf>,
    tool_log: Option<PathBuf>,
    _tools: tempfile::TempDir,
}

impl Staged {
    fn new(name: &str, args: &[String]) -> Self {
        let root = TestRoot::new();
        let certs = Certs::new();
        let api = KubeApi::start(&certs);
        certs.write_kubeconfig(&root, api.port, true);
        let node = flag(args, "--node-name").unwrap_or("master.hostname.invalid");
        // nodeup's --node-name is the host's name; on kOps 1.19–1.20 the Node may be
        // registered under another name and carry it as its hostname label.
        let registered = if node == "master.override.invalid" {
            "ip-172-20-32-10.ec2.internal"
        } else {
            node
        };
        api.register(registered, &[(HOSTNAME, node)]);
        // etcd-manager runs on every master of these versions but where the unit says
        // protokube manages etcd itself (legacy etcd, `--manage-etcd=true`).
        if flag(args, "--manage-etcd") != Some("true") {
            etcd_manager_pods(&root, "master-us-test-1a");
        }
        let containerized = flag(args, "--containerized") == Some("true");
        let image = containerized.then(|| Image::of_version(version_of(name)));
        // The channels tool where that era has it: in its image up to 1.20 (nowhere on the
        // host), where nodeup installs it from 1.21.
        let tools = tempfile::tempdir().unwrap();
        let (image_tool, tool_log) = match (flag(args, "--channels").is_some(), image) {
            (false, _) => (None, None),
            (true, Some(_)) => {
                let (tool, log) = (tools.path().join("channels"), tools.path().join("log"));
                install_channels_tool_at(&tool, &log);
                (Some(tool), Some(log))
            }
            (true, None) => (None, Some(install_channels_tool(&root))),
        };
        Self {
            root,
            _certs: certs,
            api,
            node: node.to_owned(),
            registered: registered.to_owned(),
            image,
            image_tool,
            tool_log,
            _tools: tools,
        }
    }

    /// The unit line run in `world`, where nodeup runs it, with nodeup's environment (its
    /// sysconfig file on the host, the container's own `/rootfs/...` for the container era).
    fn run(&self, world: &World, args: &[String]) -> support::kops::FirstRun {
        let kubeconfig = if self.image.is_some() {
            "/rootfs/var/lib/kops/kubeconfig"
        } else {
            "/var/lib/kops/kubeconfig"
        };
        let systemctl = recording_systemctl();
        world.bed.moto().reset_operations();
        let layout = match self.image {
            Some(image) => Layout::Image(image, self.image_tool.as_deref()),
            None => Layout::Host,
        };
        world.run_in(
            layout,
            args,
            &self.root,
            &[("KUBECONFIG", kubeconfig.to_owned())],
            &systemctl,
        )
    }

    /// Labels exactly the old version's, on the node kOps' labeller found; kOps' bootstrap RBAC
    /// objects exactly where `--initialize-rbac=true`.
    fn assert_api_objects(&self, name: &str, args: &[String], context: &str) {
        let labels = self.api.labels(&self.registered);
        let mut expected: BTreeMap<String, String> =
            [(HOSTNAME.to_owned(), self.node.clone())].into();
        for label in labels_of_version(name, args) {
            let value = if label == ROLE { "master" } else { "" };
            expected.insert(label.to_owned(), value.to_owned());
        }
        assert_eq!(labels, expected, "{context}");
        let objects = self.api.objects();
        let rbac = flag(args, "--initialize-rbac") == Some("true");
        for (kind, key) in [
            ("serviceaccounts", "kube-system/kube-dns"),
            ("serviceaccounts", "kube-system/kube-proxy"),
            ("clusterrolebindings", "/kubeadm:node-proxier"),
        ] {
            assert_eq!(
                objects[kind].get(key).is_some(),
                rbac,
                "{context}: {kind} {key}"
            );
        }
        if rbac {
            let binding = &objects["clusterrolebindings"]["/kubeadm:node-proxier"];
            assert_eq!(
                binding["roleRef"]["name"], "system:node-proxier",
                "{context}"
            );
            assert_eq!(binding["subjects"][0]["name"], "kube-proxy", "{context}");
        }
    }

    /// kubelet started where kOps 1.12–1.18 left it to protokube, never elsewhere (from 1.19
    /// nodeup starts it); channels applied with the tool nodeup installed.
    fn assert_services_and_tools(&self, run: &support::kops::FirstRun, context: &str) {
        if self.image == Some(Image::Debian) {
            assert_eq!(
                run.systemctl,
                ["is-active --quiet kubelet", "start --no-block kubelet"],
                "{context}"
            );
        } else {
            assert!(run.systemctl.is_empty(), "{context}: {:?}", run.systemctl);
        }
        if let Some(log) = &self.tool_log {
            let ran = std::fs::read_to_string(log).unwrap_or_default();
            assert!(
                ran.starts_with("ARGS apply channel s3://"),
                "{context}: {ran}"
            );
        }
    }
}

/// `--manage-etcd=false`: etcd is not protokube's, no volume asked for, no etcd change.
fn assert_no_etcd_where_declined(
    world: &World,
    args: &[String],
    run: &support::kops::FirstRun,
    context: &str,
) {
    if flag(args, "--manage-etcd") != Some("false") {
        return;
    }
    let operations = world.bed.moto().operations();
    assert!(
        !operations.iter().any(|o| o.contains("Volume")),
        "{context}: {operations:?}"
    );
    assert!(
        !run.report["changes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["target"].as_str().unwrap_or("").contains("etcd")),
        "{context}"
    );
}

/// kOps' container ran protokube with the host at `/rootfs` and no `--root`: the host's files
/// are read and written there (here kOps 1.18's Debian image in a mount namespace of its own,
/// a test root at its `/rootfs`).
#[test]
#[ignore = "needs root: kOps' container images are mount namespaces; scripts/test runs it as root"]
fn containerized_without_root_acts_under_rootfs() {
    let world = World::new("minimal.example.com");
    let root = TestRoot::new();
    let certs = Certs::new();
    let api = KubeApi::start(&certs);
    certs.write_kubeconfig(&root, api.port, true);
    api.register("example-hostname", &[(HOSTNAME, "example-hostname")]);
    etcd_manager_pods(&root, "master-us-test-1a");
    let (args, _) = unit_line("1.18-docker");
    let systemctl = recording_systemctl();
    let run = world.run_in(
        Layout::Image(Image::Debian, None),
        &args,
        &root,
        &[("KUBECONFIG", "/rootfs/var/lib/kops/kubeconfig".to_owned())],
        &systemctl,
    );
    assert_eq!(run.exit_on_sigterm, Some(0), "{}", run.stderr);
    // The kubeconfig under /rootfs was read (labels given), the state and lock are there.
    assert_eq!(api.labels("example-hostname")[MASTER], "");
    assert!(root.join("/var/lib/protokube/state.json").exists());
    assert!(root.join("/run/protokube.lock").exists());
}

#[test]
fn channels_wait_for_the_api_then_apply() {
    let root = TestRoot::new();
    let log = install_channels_tool(&root);
    let certs = Certs::new();
    // An API server still coming up for its first 6 s.
    let api = KubeApi::start_after(&certs, 6.0);
    let started = Instant::now();
    certs.write_kubeconfig(&root, api.port, true);
    let run = |timeout: &str| {
        Protokube::new()
            .env("KUBECONFIG", "/var/lib/kops/kubeconfig")
            .args([
                "apply-channels",
                "--channels",
                "s3://st/c/addons/bootstrap-channel.yaml",
            ])
            .args(["-o", "json", "--timeout", timeout])
            .arg_path("--root", root.path())
            .run()
    };
    let early = run("2s");
    assert_eq!(early.code, 75, "{early:#?}");
    assert!(early.error_lines()[0].contains("503"), "{early:#?}");
    assert!(!log.exists(), "the tool ran before the API answered");
    while started.elapsed() < Duration::from_secs(6) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let late = run("20s");
    assert_eq!(late.code, 0, "{late:#?}");
    assert!(std::fs::read_to_string(&log)
        .unwrap()
        .starts_with("ARGS apply channel"));
}

#[test]
fn rbac_objects_are_created_once_and_an_existing_one_is_left_as_it_is() {
    let world = World::new("minimal.example.com");
    let (args, _) = unit_line("1.22-host");
    let root = TestRoot::new();
    let certs = Certs::new();
    let api = KubeApi::start(&certs);
    certs.write_kubeconfig(&root, api.port, true);
    api.register(
        "master.hostname.invalid",
        &[(HOSTNAME, "master.hostname.invalid")],
    );
    // kube-proxy's account exists already, someone else's.
    let theirs = serde_json::json!({"apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": "kube-proxy", "namespace": "kube-system",
                     "labels": {"owner": "someone-else"}}});
    api.put_object("serviceaccounts", "kube-system/kube-proxy", theirs.clone());
    let systemctl = recording_systemctl();
    let env = [("KUBECONFIG", "/var/lib/kops/kubeconfig".to_owned())];
    for round in 0..2 {
        let run = world.run(&args, &root, &env, &systemctl);
        assert_eq!(run.exit_on_sigterm, Some(0), "{}", run.stderr);
        let posts: Vec<String> = api
            .requests()
            .into_iter()
            .filter(|r| r["method"] == "POST")
            .map(|r| r["path"].as_str().unwrap().to_owned())
            .collect();
        // Created once, the first time; never the existing account.
        assert_eq!(posts.len(), 2, "round {round}: {posts:?}");
        assert!(!posts.iter().any(|p| p.contains("kube-proxy")), "{posts:?}");
    }
    assert_eq!(
        api.objects()["serviceaccounts"]["kube-system/kube-proxy"],
        theirs
    );
    // Without --initialize-rbac=true nothing is asked for.
    let before = api.requests().len();
    let without: Vec<String> = args
        .iter()
        .map(|a| a.replace("--initialize-rbac=true", "--initialize-rbac=false"))
        .collect();
    let run = world.run(&without, &TestRoot::new(), &env, &systemctl);
    assert_eq!(run.exit_on_sigterm, Some(0));
    assert!(!api.requests()[before..].iter().any(|r| r["path"]
        .as_str()
        .unwrap_or("")
        .contains("rbac")
        || r["path"].as_str().unwrap_or("").contains("serviceaccounts")));
}
