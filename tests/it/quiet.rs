//! A healthy node is quiet; a failing one names the true cause.
//! `journalctl -p warning` and the report's `warnings` are what operators alert on: each kind
//! of healthy node — a kOps 1.24–1.35 master beside etcd-manager through nodeup's unit, kOps
//! 1.36's gossip unit on a control-plane instance and on a worker, a Route53 master, a gossip
//! worker — runs twice without one warning line and with an empty `warnings` (what is normal
//! there is in `info`). A metadata service failing the token request, and a kubeconfig whose
//! client certificate is X.509 version 1, are each said once in protokube's words.

use crate::support;

use std::path::Path;
use std::time::{Duration, Instant};

use support::bed::{Bed, NodeKind};
use support::kube::{etcd_manager_pods, install_channels_tool, Certs, KubeApi};
use support::{seed, Protokube};

/// Asserts a run's stderr has no warning or error line, naming the node kind.
fn assert_quiet(kind: &str, stderr: &str) {
    let loud: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains(" WARN ") || l.contains(" ERROR ") || l.starts_with("<4>"))
        .filter(|l| !l.is_empty())
        .chain(
            stderr
                .lines()
                .filter(|l| l.starts_with("protokube: error:")),
        )
        .collect();
    assert!(loud.is_empty(), "{kind}: {loud:#?}\n{stderr}");
}

/// The reports on stdout (`-o json`), one per run.
fn reports(stdout: &str) -> Vec<serde_json::Value> {
    serde_json::Deserializer::from_str(stdout)
        .into_iter::<serde_json::Value>()
        .map(Result::unwrap)
        .collect()
}

/// Starts nodeup's unit (`args`, no subcommand), waits for its first run, stops it with
/// SIGTERM: stderr, stdout, the exit code.
fn unit_run(bed: &Bed, args: &[String], env: &[(&str, String)]) -> (String, String, Option<i32>) {
    let logs = tempfile::tempdir().unwrap();
    let (out, err) = (logs.path().join("stdout"), logs.path().join("stderr"));
    let mut command = Protokube::new()
        .moto(bed.moto())
        .imds(bed.imds())
        .env("PROTOKUBE_ROOT", bed.root.path())
        .env("PROTOKUBE_OUTPUT", "json");
    for (key, value) in env {
        command = command.env(key, value);
    }
    let mut daemon = command.args(args).spawn_to(
        std::fs::File::create(&out).unwrap(),
        std::fs::File::create(&err).unwrap(),
    );
    let deadline = Instant::now() + Duration::from_mins(1);
    let read = |path: &Path| std::fs::read_to_string(path).unwrap_or_default();
    while !(read(&err).contains("run finished") || read(&err).contains("protokube: error:")) {
        assert!(Instant::now() < deadline, "no first run: {}", read(&err));
        assert!(daemon.try_wait().unwrap().is_none(), "{}", read(&err));
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(200));
    let code = support::stop_with_sigterm(&mut daemon, Duration::from_secs(20));
    (read(&err), read(&out), code)
}

#[test]
fn a_healthy_kops_1_35_master_beside_etcd_manager_is_quiet() {
    let node = Bed::new(NodeKind::Bare);
    node.tag_as_master("minimal.example.com");
    let zone = support::runtime()
        .block_on(async { seed::hosted_zone(&node.moto().route53().await, "example.com").await });
    etcd_manager_pods(&node.root, "master-us-test-1a");
    let certs = Certs::new();
    let api = KubeApi::start(&certs);
    api.register(
        "master.hostname.invalid",
        &[("kubernetes.io/hostname", "master.hostname.invalid")],
    );
    certs.write_kubeconfig(&node.root, api.port, true);
    install_channels_tool(&node.root);
    let mut flags: Vec<String> = support::nodeup_unit_flags("1.35.0")
        .into_iter()
        .map(|f| f.replace("Z1AFAKE1ZON3YO", &zone))
        .collect();
    flags.push("--channels=s3://st/minimal.example.com/addons/bootstrap-channel.yaml".to_owned());
    let env = [("KUBECONFIG", "/var/lib/kops/kubeconfig".to_owned())];
    for run in 1..=2 {
        let (stderr, stdout, code) = unit_run(&node, &flags, &env);
        assert_eq!(code, Some(0), "{stderr}");
        assert_quiet(&format!("kOps 1.35 master, run {run}"), &stderr);
        let report = &reports(&stdout)[0];
        assert_eq!(report["warnings"], serde_json::json!([]), "{report:#}");
        // What is normal here is said, as a fact.
        assert!(
            report["info"][0]
                .as_str()
                .unwrap()
                .contains("etcd-manager runs on this node"),
            "{report:#}"
        );
    }
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn kops_1_36_gossip_units_are_quiet_on_a_control_plane_node_and_a_worker() {
    for kind in [NodeKind::GossipMaster, NodeKind::GossipWorker] {
        let bed = Bed::new(kind);
        if kind == NodeKind::GossipMaster {
            etcd_manager_pods(&bed.root, "master-us-test-1a");
        }
        let mut flags = support::nodeup_unit_flags("1.36.0");
        // nodeup's gossip flags, on a port of the test's own (tests run side by side).
        flags.extend([
            "--gossip-listen=127.0.0.1:0".to_owned(),
            "--gossip-protocol=mesh".to_owned(),
            "--gossip-secret=s3cr3t".to_owned(),
        ]);
        for run in 1..=2 {
            let (stderr, stdout, code) = unit_run(&bed, &flags, &[]);
            assert_eq!(code, Some(0), "{stderr}");
            assert_quiet(&format!("kOps 1.36 {kind:?}, run {run}"), &stderr);
            let report = &reports(&stdout)[0];
            assert_eq!(report["warnings"], serde_json::json!([]), "{report:#}");
            // kOps' gossip flags are the member's now, not flags that mean nothing.
            let info = report["info"].to_string();
            assert!(!info.contains("--gossip-listen"), "{kind:?}: {info}");
        }
    }
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_healthy_route53_master_and_gossip_worker_are_quiet() {
    for kind in [NodeKind::HaMaster, NodeKind::GossipWorker] {
        let bed = Bed::new(kind);
        for run in 1..=2 {
            let out = bed.run("sync", &[]);
            assert_eq!(out.code, 0, "{kind:?}: {out:#?}");
            assert_quiet(&format!("{kind:?}, run {run}"), &out.stderr);
            assert!(out.report().warnings.is_empty(), "{kind:?}: {out:#?}");
        }
    }
}

#[test]
fn a_metadata_service_failing_the_token_request_is_named_with_its_status() {
    let node = Bed::new(NodeKind::Bare);
    node.imds().fail_tokens_with(500);
    let out = Protokube::new()
        .moto(node.moto())
        .imds(node.imds())
        .args([
            "discover-volumes",
            "--cluster-id",
            "c.example.com",
            "--timeout",
            "3s",
        ])
        .arg_path("--root", node.root.path())
        .run();
    assert_eq!(out.code, 75, "{out:#?}");
    let errors = out.error_lines();
    assert_eq!(errors.len(), 1, "{out:#?}");
    assert!(
        errors[0].contains("HTTP 500") && errors[0].contains("token request"),
        "{errors:?}"
    );
    assert!(!errors[0].contains("TTL header"), "{errors:?}");
}

#[test]
fn a_client_certificate_of_x509_version_1_is_named_with_its_kubeconfig() {
    let root = support::block::TestRoot::new();
    let certs = Certs::new();
    // The client's certificate made without extensions: X.509 version 1.
    certs.issue("client", "/O=system:masters/CN=kops", "");
    let api = KubeApi::start(&certs);
    api.register("n1", &[]);
    certs.write_kubeconfig(&root, api.port, true);
    let out = Protokube::new()
        .env("KUBECONFIG", "/var/lib/kops/kubeconfig")
        .args(["label-node", "--node-name", "n1", "--timeout", "5s"])
        .arg_path("--root", root.path())
        .run();
    assert_eq!(out.code, 1, "{out:#?}");
    let errors = out.error_lines();
    assert_eq!(errors.len(), 1, "{out:#?}");
    let line = errors[0];
    for needle in [
        "`client-certificate-data` of user `kops`",
        "var/lib/kops/kubeconfig",
        "X.509 version 1",
    ] {
        assert!(line.contains(needle), "`{needle}` not in {line}");
    }
    for debug_form in ["Other(", "OtherError", "UnsupportedCertVersion"] {
        assert!(!line.contains(debug_form), "{line}");
    }
    assert_eq!(line.matches("version 1").count(), 1, "{line}");
    assert!(
        api.requests().is_empty(),
        "nothing sent with a certificate TLS refuses"
    );
}
