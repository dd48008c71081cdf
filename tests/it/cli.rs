//! The command-line contract: help text, exit codes, and one clear line for bad input.

use crate::support;

use support::{fixture, Protokube};

fn assert_one_error_line(out: &support::RunOutput, code: i32, needles: &[&str]) {
    assert_eq!(out.code, code, "{out:#?}");
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "expected one line on stderr: {out:#?}");
    assert!(lines[0].starts_with("protokube: error: "), "{out:#?}");
    for needle in needles {
        assert!(
            lines[0].contains(needle),
            "`{needle}` not in {:?}",
            lines[0]
        );
    }
    assert_eq!(out.stdout, "", "nothing on stdout");
}

#[test]
fn help_texts() {
    // The help as a user sees it: without the gossip ports the test environment sets.
    let bare = || {
        Protokube::new()
            .env_remove("PROTOKUBE_GOSSIP_LISTEN")
            .env_remove("PROTOKUBE_GOSSIP_LISTEN_SECONDARY")
    };
    let out = bare().args(["--help"]).run();
    assert_eq!(out.code, 0);
    insta::assert_snapshot!("help", out.stdout);
    for command in [
        "discover-volumes",
        "mount",
        "render-manifests",
        "publish-dns",
        "sync",
    ] {
        let out = bare().args([command, "--help"]).run();
        assert_eq!(out.code, 0);
        insta::assert_snapshot!(format!("help_{}", command.replace('-', "_")), out.stdout);
    }
}

#[test]
fn version() {
    let out = Protokube::new().args(["--version"]).run();
    assert_eq!(out.code, 0);
    // `protokube 0.1.0 (<commit> <date>)`: the build, in one line.
    let prefix = format!("protokube {} (", env!("CARGO_PKG_VERSION"));
    assert!(out.stdout.starts_with(&prefix), "{}", out.stdout);
    assert_eq!(out.stdout.lines().count(), 1, "{}", out.stdout);
}

#[test]
fn usage_errors_exit_64_with_one_line() {
    let out = Protokube::new()
        .args(["--clusterid", "x", "discover-volumes"])
        .run();
    assert_one_error_line(&out, 64, &["--clusterid", "--cluster-id"]);
    let out = Protokube::new()
        .args(["discover-volumes", "--timeout", "soon"])
        .run();
    assert_one_error_line(&out, 64, &["--timeout", "soon"]);
    let out = Protokube::new()
        .args(["discover-volumes", "-o", "xml"])
        .run();
    assert_one_error_line(&out, 64, &["xml"]);
    let out = Protokube::new().args(["no-such-command"]).run();
    assert_one_error_line(&out, 64, &["no-such-command"]);
    let out = Protokube::new().run();
    assert_one_error_line(&out, 64, &["subcommand"]);
    let out = Protokube::new()
        .env("PROTOKUBE_INTERNAL_IP", "not-an-ip")
        .args(["discover-volumes"])
        .run();
    assert_one_error_line(&out, 64, &["not-an-ip"]);
}

#[test]
fn invalid_cluster_id_is_a_usage_error() {
    let out = Protokube::new()
        .args([
            "discover-volumes",
            "--cluster-id",
            "Bad_Name\ninjected: true",
        ])
        .run();
    assert_one_error_line(&out, 64, &["--cluster-id", r"Bad_Name\ninjected: true"]);
}

#[test]
fn bad_cluster_specs_exit_1_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.yaml");
    let out = Protokube::new()
        .args(["discover-volumes"])
        .arg_path("--cluster-spec", &missing)
        .run();
    assert_one_error_line(&out, 1, &[&missing.display().to_string()]);

    let broken = dir.path().join("broken.yaml");
    std::fs::write(
        &broken,
        "apiVersion: kops.k8s.io/v1alpha2\nkind: Cluster\nspec:\n  etcdClusters: [\n  x: }\n",
    )
    .unwrap();
    let out = Protokube::new()
        .args(["discover-volumes"])
        .arg_path("--cluster-spec", &broken)
        .run();
    assert_one_error_line(&out, 1, &[&broken.display().to_string(), "line 5 column"]);

    let wrong_kind = dir.path().join("ig.yaml");
    std::fs::write(
        &wrong_kind,
        "apiVersion: kops.k8s.io/v1alpha2\nkind: InstanceGroup\nmetadata:\n  name: nodes\n",
    )
    .unwrap();
    let out = Protokube::new()
        .args(["discover-volumes"])
        .arg_path("--cluster-spec", &wrong_kind)
        .run();
    assert_one_error_line(
        &out,
        1,
        &[&wrong_kind.display().to_string(), "InstanceGroup"],
    );

    let hostile_name = dir.path().join("hostile.yaml");
    std::fs::write(
        &hostile_name,
        "apiVersion: kops.k8s.io/v1alpha2\nkind: Cluster\nmetadata:\n  name: \"a\\nb: c\"\n",
    )
    .unwrap();
    let out = Protokube::new()
        .args(["discover-volumes"])
        .arg_path("--cluster-spec", &hostile_name)
        .run();
    assert_one_error_line(&out, 1, &["metadata.name", r"a\nb: c"]);

    // 100 000 nested `[`: refused by a linear scan before the YAML parser, which would spend
    // tens of seconds of CPU on it.
    let deep = dir.path().join("deep.yaml");
    std::fs::write(
        &deep,
        format!(
            "apiVersion: kops.k8s.io/v1alpha2\nkind: Cluster\nspec:\n  x: {}{}\n",
            "[".repeat(100_000),
            "]".repeat(100_000)
        ),
    )
    .unwrap();
    let out = Protokube::new()
        .args(["discover-volumes"])
        .arg_path("--cluster-spec", &deep)
        .run();
    assert_one_error_line(&out, 1, &[&deep.display().to_string(), "more than 64 deep"]);
}

#[test]
fn every_reference_cluster_spec_loads() {
    for name in support::COMPLETED_SPECS {
        let path = fixture(&format!("cluster-completed/{name}.yaml"));
        let doc = protokube::testing::read_spec(&protokube::testing::LinuxHost, &path)
            .unwrap_or_else(|e| panic!("{name}: {e:#}"));
        let cluster_name = doc.name().unwrap();
        assert!(cluster_name.ends_with(".example.com") || cluster_name.ends_with(".k8s.local"));
        let keys: Vec<&str> = doc
            .spec
            .etcd_clusters
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(keys, ["main", "events"], "{name}");
        assert!(doc.spec.kube_api_server.is_some(), "{name}");
        assert!(doc.spec.kube_controller_manager.is_some(), "{name}");
        assert!(doc.spec.kube_scheduler.is_some(), "{name}");
        assert!(doc.spec.kube_proxy.is_some(), "{name}");
        assert!(doc.spec.master_public_name.is_some(), "{name}");
    }
}
