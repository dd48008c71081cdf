//! The old protokube's job on each kOps version (issue "Do the old protokube's job on every kOps
//! version"): `label-node` against a stand-in API server (HTTPS, its own CA, client-certificate
//! auth: `tests/it/support/kube.rs`), `apply-channels` with a recording channels tool, nodeup's
//! unit line of kOps ≤ 1.35 on a control-plane node where etcd-manager runs, and kOps 1.36's
//! gossip unit line on a control-plane instance and on a worker.

use crate::support;

use std::path::Path;
use std::time::{Duration, Instant};

use support::bed::{Bed, NodeKind, GOSSIP};
use support::block::TestRoot;
use support::kube::{closed_port, etcd_manager_pods, install_channels_tool, Certs, KubeApi};
use support::{fixture, seed, Protokube, RunOutput};

const NODE: &str = "master.hostname.invalid";
const LABELS: [&str; 3] = [
    "node-role.kubernetes.io/control-plane",
    "kops.k8s.io/kops-controller-pki",
    "node.kubernetes.io/exclude-from-external-load-balancers",
];

/// Asserts node `NODE` carries kOps' three control-plane labels, empty; its labels.
fn assert_control_plane_labels(api: &KubeApi) -> std::collections::BTreeMap<String, String> {
    let labels = api.labels(NODE);
    for label in LABELS {
        assert_eq!(
            labels.get(label).map(String::as_str),
            Some(""),
            "{labels:?}"
        );
    }
    labels
}

fn label_node(root: &TestRoot, extra: &[&str]) -> RunOutput {
    Protokube::new()
        .env("KUBECONFIG", "/var/lib/kops/kubeconfig")
        .args([
            "label-node",
            "--node-name",
            NODE,
            "-o",
            "json",
            "--timeout",
            "2s",
        ])
        .arg_path("--root", root.path())
        .args(extra)
        .run()
}

#[test]
fn label_node_waits_for_the_api_and_the_node_then_patches_once() {
    let root = TestRoot::new();
    let certs = Certs::new();
    // No API server yet: not ready, nothing written.
    certs.write_kubeconfig(&root, closed_port(), true);
    let down = label_node(&root, &[]);
    assert_eq!(down.code, 75, "{down:#?}");
    assert!(
        down.error_lines()[0].contains("does not answer"),
        "{down:#?}"
    );

    let api = KubeApi::start(&certs);
    certs.write_kubeconfig(&root, api.port, true);
    // The API answers, the node is not registered yet: not ready.
    let unknown = label_node(&root, &[]);
    assert_eq!(unknown.code, 75, "{unknown:#?}");
    assert!(
        unknown.error_lines()[0].contains("not registered"),
        "{unknown:#?}"
    );
    assert!(api.patches().is_empty());

    api.register(NODE, &[("kubernetes.io/hostname", NODE)]);
    // A dry run says so and writes nothing.
    let dry = label_node(&root, &["--dry-run"]);
    assert_eq!(dry.code, 0, "{dry:#?}");
    assert_eq!(dry.report().changes[0].action, "update");
    assert!(api.patches().is_empty());
    // The real run: one strategic-merge patch with the three labels, as the `kops` client;
    // exactly what the dry run said.
    let first = label_node(&root, &["--detailed-exitcode"]);
    assert_eq!(dry.report().change_set(), first.report().change_set());
    assert_eq!(first.code, 2, "{first:#?}");
    let patches = api.patches();
    assert_eq!(patches.len(), 1, "{patches:#?}");
    assert_eq!(
        patches[0]["content_type"],
        "application/strategic-merge-patch+json"
    );
    assert_eq!(patches[0]["subject"]["commonName"], "kops");
    let labels = assert_control_plane_labels(&api);
    assert_eq!(labels["kubernetes.io/hostname"], NODE);
    // Converged: a read, no write.
    let again = label_node(&root, &["--detailed-exitcode"]);
    assert_eq!(again.code, 0, "{again:#?}");
    assert_eq!(again.report().changes[0].action, "unchanged");
    assert_eq!(api.patches().len(), 1);
    // One label changed behind protokube's back: only it is patched back.
    api.register(NODE, &[(LABELS[0], ""), (LABELS[1], "no"), (LABELS[2], "")]);
    let mended = label_node(&root, &[]);
    assert_eq!(mended.code, 0, "{mended:#?}");
    let last = api.patches().pop().unwrap();
    assert_eq!(
        last["body"]["metadata"]["labels"],
        serde_json::json!({ LABELS[1]: "" })
    );
    // A client without the cluster's certificate is refused by the server: an error, not 75.
    certs.write_kubeconfig(&root, api.port, false);
    let refused = label_node(&root, &[]);
    assert_ne!(refused.code, 0, "{refused:#?}");
}

#[test]
fn a_relative_kubeconfig_is_refused_before_anything_by_the_steps_that_use_it() {
    // KUBECONFIG must name a host path; only the steps that use it look at it.
    // A relative one is refused before anything (the run lock included) is touched.
    let fresh = TestRoot::new();
    for args in [
        &["label-node", "--node-name", NODE][..],
        &[
            "sync",
            "--bootstrap-master-node-labels",
            "--node-name",
            NODE,
        ][..],
    ] {
        let relative = Protokube::new()
            .env("KUBECONFIG", "kubeconfig")
            .args(args)
            .arg_path("--root", fresh.path())
            .run();
        assert_eq!(relative.code, 64, "{relative:#?}");
        assert!(
            relative.error_lines()[0].contains("KUBECONFIG"),
            "{relative:#?}"
        );
        assert!(!fresh.join("/run/protokube.lock").exists());
    }
    let unused = Protokube::new()
        .env("KUBECONFIG", "kubeconfig")
        .args([
            "render-manifests",
            "--dry-run",
            "--cluster-id",
            "minimal.example.com",
        ])
        .arg_path(
            "--cluster-spec",
            &fixture("cluster-completed/minimal-1.28.yaml"),
        )
        .arg_path("--root", fresh.path())
        .run();
    assert_eq!(unused.code, 0, "{unused:#?}");
}

#[test]
fn apply_channels_tries_every_channel_and_names_the_failing_one() {
    let root = TestRoot::new();
    let log = install_channels_tool(&root);
    let certs = Certs::new();
    let api = KubeApi::start(&certs);
    certs.write_kubeconfig(&root, api.port, true);
    let run = |extra: &[&str]| {
        Protokube::new()
            .env("KUBECONFIG", "/var/lib/kops/kubeconfig")
            .args([
                "apply-channels",
                "--channels",
                "s3://state/c/addons/fail-first.yaml,s3://state/c/addons/bootstrap-channel.yaml",
                "-o",
                "json",
            ])
            .arg_path("--root", root.path())
            .args(extra)
            .run()
    };
    let dry = run(&["--dry-run"]);
    assert_eq!(dry.code, 0, "{dry:#?}");
    assert_eq!(dry.report().changes.len(), 2);
    assert!(!log.exists(), "a dry run ran the tool");
    let out = run(&[]);
    assert_eq!(out.code, 1, "{out:#?}");
    let line = out.error_lines()[0];
    assert!(line.contains("fail-first.yaml"), "{line}");
    assert!(!line.contains("bootstrap-channel.yaml"), "{line}");
    let runs = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        runs,
        "ARGS apply channel s3://state/c/addons/fail-first.yaml --v=4 --yes\n\
         KUBECONFIG=/var/lib/kops/kubeconfig\n\
         ARGS apply channel s3://state/c/addons/bootstrap-channel.yaml --v=4 --yes\n\
         KUBECONFIG=/var/lib/kops/kubeconfig\n"
    );
    let report = out.report();
    assert_eq!(
        report.changes[0].target,
        "s3://state/c/addons/bootstrap-channel.yaml"
    );
    assert_eq!(report.changes[0].action, "unchanged");
    // Without --channels: a usage error, nothing run.
    let none = Protokube::new()
        .args(["apply-channels"])
        .arg_path("--root", root.path())
        .run();
    assert_eq!(none.code, 64, "{none:#?}");
    // A channel the tool would read as a flag is refused before anything runs.
    let flag = Protokube::new()
        .args(["apply-channels", "--channels=--kubeconfig=/x"])
        .arg_path("--root", root.path())
        .run();
    assert_eq!(flag.code, 64, "{flag:#?}");
}

/// Waits until `ready` holds (30 s at most).
fn wait_for(what: &str, stderr: &Path, ready: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ready() {
        assert!(
            Instant::now() < deadline,
            "{what} never happened; stderr:\n{}",
            std::fs::read_to_string(stderr).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// SIGTERM, then the exit code (within 10 s).
fn stop(mut daemon: support::Guard) -> Option<i32> {
    support::stop_with_sigterm(&mut daemon, Duration::from_secs(10))
}

/// kOps ≤ 1.35's unit on a control-plane node where etcd-manager runs: within the first loop
/// run the channels tool ran with exactly `apply channel <url> --v=4 --yes` and nodeup's
/// `KUBECONFIG`, the node carries kOps' three labels, no volume was asked for or touched, and
/// SIGTERM ends it with 0.
#[test]
fn kops_1_35_unit_applies_channels_and_labels_the_node_beside_etcd_manager() {
    let node = Bed::new(NodeKind::Bare);
    let cluster = "minimal.example.com";
    let volume = node.etcd_volume(cluster, &[("main", "us-east-1a/us-east-1a")]);
    node.tag_as_master(cluster);
    let zone = support::runtime()
        .block_on(async { seed::hosted_zone(&node.moto().route53().await, "example.com").await });
    etcd_manager_pods(&node.root, "master-us-test-1a");
    let certs = Certs::new();
    let api = KubeApi::start(&certs);
    api.register(NODE, &[("kubernetes.io/hostname", NODE)]);
    certs.write_kubeconfig(&node.root, api.port, true);
    let log = install_channels_tool(&node.root);
    node.moto().reset_operations();
    let channel = "s3://placeholder-read-bucket/clusters.example.com/minimal.example.com/addons/bootstrap-channel.yaml";
    let mut flags: Vec<String> = support::nodeup_unit_flags("1.35.0")
        .into_iter()
        .map(|f| f.replace("Z1AFAKE1ZON3YO", &zone))
        .collect();
    flags.push(format!("--channels={channel}"));
    let logs = tempfile::tempdir().unwrap();
    let (out, err) = (logs.path().join("stdout"), logs.path().join("stderr"));
    let daemon = Protokube::new()
        .moto(node.moto())
        .imds(node.imds())
        .env("PROTOKUBE_ROOT", node.root.path())
        // nodeup's /etc/sysconfig/protokube
        .env("KUBECONFIG", "/var/lib/kops/kubeconfig")
        .args(&flags)
        .spawn_to(
            std::fs::File::create(&out).unwrap(),
            std::fs::File::create(&err).unwrap(),
        );
    wait_for("the first run", &err, || {
        std::fs::read_to_string(&err).is_ok_and(|t| t.contains("run finished"))
    });
    let runs = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(
        runs,
        format!("ARGS apply channel {channel} --v=4 --yes\nKUBECONFIG=/var/lib/kops/kubeconfig\n")
    );
    assert_control_plane_labels(&api);
    let operations = node.moto().operations();
    for volume_call in [
        "DescribeVolumes",
        "AttachVolume",
        "DetachVolume",
        "CreateTags",
    ] {
        assert!(
            !operations.iter().any(|o| o == volume_call),
            "{volume_call}: {operations:?}"
        );
    }
    assert!(node.attachments(&volume).is_empty());
    let stderr = std::fs::read_to_string(&err).unwrap();
    assert!(!stderr.contains("--master is not set"), "{stderr}");
    assert_eq!(stop(daemon), Some(0));
    println!("kOps 1.35 unit, first run (text log):\n{stderr}");
}

/// kOps 1.36's unit (`--cloud=aws --containerized=false --gossip=true --v=4 --gossip-*`: no
/// --master, no --cluster-id) on a gossip cluster: the control-plane instance (etcd-manager
/// runs there) gets the master's hosts block without a `--master` warning, the worker the
/// masters' `api.internal` and `kops-controller.internal`; a second start asks EC2 at most once
/// on the master and not at all on the worker; SIGTERM ends it with 0.
#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn kops_1_36_gossip_unit_takes_the_role_and_cluster_from_the_instance_tags() {
    for kind in [NodeKind::GossipMaster, NodeKind::GossipWorker] {
        let bed = Bed::new(kind);
        if kind == NodeKind::GossipMaster {
            etcd_manager_pods(&bed.root, "master-us-test-1a");
        }
        let mut flags = support::nodeup_unit_flags("1.36.0");
        flags.extend([
            "--gossip-listen=127.0.0.1:0".to_owned(),
            "--gossip-protocol=mesh".to_owned(),
            "--gossip-secret=s3cr3t".to_owned(),
        ]);
        let start = |run: usize| {
            let logs = tempfile::tempdir().unwrap().keep();
            let err = logs.join("stderr");
            let daemon = Protokube::new()
                .moto(bed.moto())
                .imds(bed.imds.as_ref().unwrap())
                .env("PROTOKUBE_ROOT", bed.root.path())
                .args(&flags)
                .spawn_to(
                    std::fs::File::create(logs.join("stdout")).unwrap(),
                    std::fs::File::create(&err).unwrap(),
                );
            wait_for(&format!("{kind:?} run {run}"), &err, || {
                std::fs::read_to_string(&err).is_ok_and(|t| t.contains("run finished"))
            });
            assert_eq!(stop(daemon), Some(0), "{kind:?} run {run}");
            std::fs::read_to_string(&err).unwrap()
        };
        let first = start(1);
        assert!(!first.contains("--master is not set"), "{kind:?}: {first}");
        assert!(!first.contains("ERROR"), "{kind:?}: {first}");
        let hosts = std::fs::read_to_string(bed.root.join("/etc/hosts")).unwrap();
        let api_internal = format!("api.internal.{GOSSIP}");
        if kind == NodeKind::GossipMaster {
            assert!(
                hosts.contains(&format!("127.0.0.1\t{api_internal}")),
                "{hosts}"
            );
            // etcd-manager's names are its own.
            assert!(!hosts.contains("etcd-"), "{hosts}");
        } else {
            let (_, master_ip) = bed.running_master();
            assert!(
                hosts.contains(&format!(
                    "{master_ip}\t{api_internal} kops-controller.internal.{GOSSIP}"
                )),
                "{hosts}"
            );
        }
        bed.moto().reset_operations();
        let second = start(2);
        let ec2_calls = bed.moto().operations();
        // The master asks for the masters once (its volumes are etcd-manager's); the worker
        // trusts the masters it verified a minute ago.
        let budget = usize::from(kind == NodeKind::GossipMaster);
        assert!(
            ec2_calls.len() <= budget,
            "{kind:?}: {ec2_calls:?}\n{second}"
        );
        println!("kOps 1.36 unit, {kind:?}, second start (text log):\n{second}");
    }
}
