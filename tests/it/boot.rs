//! Early boot (docs/commands.md): the metadata service, credentials and the AWS endpoints may not be
//! there yet; protokube waits for them with backoff up to `--timeout`, then exits 75 naming what
//! it waited for. The operator's `AWS_MAX_ATTEMPTS` wins over protokube's retry default.

use crate::support;

use std::time::Duration;

use serde_json::json;
use support::bed::{Bed, NodeKind};
use support::Protokube;

const CLUSTER: &str = "c.example.com";

fn discover(node: &Bed) -> Protokube {
    Protokube::new().moto(node.moto()).imds(node.imds()).args([
        "discover-volumes",
        "--cluster-id",
        CLUSTER,
        "-o",
        "json",
    ])
}

#[test]
fn a_metadata_service_that_comes_up_late_is_waited_for() {
    let node = Bed::new(NodeKind::Bare);
    let volume = node.etcd_volume(CLUSTER, &[("main", "a/a")]);
    // Connections are closed unanswered for 8 s, as a metadata service still starting does.
    node.imds().unavailable_for(Duration::from_secs(8));
    let out = discover(&node).run();
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(out.report().volumes[0].id, volume);
    assert!(out.stderr.contains("not there yet"), "{out:#?}");
}

#[test]
fn a_metadata_service_that_never_answers_is_not_ready_within_the_timeout() {
    // Support's default metadata endpoint is a closed local port.
    let out = Protokube::new()
        .args([
            "discover-volumes",
            "--cluster-id",
            CLUSTER,
            "--timeout",
            "3s",
        ])
        .run();
    assert_eq!(out.code, 75, "{out:#?}");
    let lines = out.error_lines();
    assert_eq!(lines.len(), 1, "{out:#?}");
    for needle in [
        "instance metadata",
        "--timeout (3s",
        "--instance-id, --availability-zone, --region",
    ] {
        assert!(lines[0].contains(needle), "`{needle}` not in {}", lines[0]);
    }
}

#[test]
fn credentials_that_appear_late_are_waited_for() {
    let node = Bed::new(NodeKind::Bare);
    let volume = node.etcd_volume(CLUSTER, &[("main", "a/a")]);
    let dir = tempfile::tempdir().unwrap();
    let credentials = dir.path().join("credentials.json");
    let config = dir.path().join("config");
    std::fs::write(
        &config,
        format!(
            "[default]\ncredential_process = /bin/cat {}\n",
            credentials.display()
        ),
    )
    .unwrap();
    let with_process = |timeout: &str| {
        discover(&node)
            .env_remove("AWS_ACCESS_KEY_ID")
            .env_remove("AWS_SECRET_ACCESS_KEY")
            .env("AWS_CONFIG_FILE", &config)
            .args(["--timeout", timeout])
    };
    // No credentials within the timeout: not ready, naming what was waited for.
    let out = with_process("3s").run();
    assert_eq!(out.code, 75, "{out:#?}");
    assert!(
        out.error_lines()[0].contains("endpoint and credentials"),
        "{out:#?}"
    );
    // Credentials that appear after 4 s (an instance profile still propagating).
    let (stdout, stderr) = (dir.path().join("stdout"), dir.path().join("stderr"));
    let mut child = with_process("2m").spawn_to(
        std::fs::File::create(&stdout).unwrap(),
        std::fs::File::create(&stderr).unwrap(),
    );
    std::thread::sleep(Duration::from_secs(4));
    std::fs::write(
        &credentials,
        r#"{"Version": 1, "AccessKeyId": "testing", "SecretAccessKey": "testing"}"#,
    )
    .unwrap();
    let status = child.wait().unwrap();
    let out = support::RunOutput {
        code: status.code().unwrap(),
        stdout: std::fs::read_to_string(&stdout).unwrap(),
        stderr: std::fs::read_to_string(&stderr).unwrap(),
    };
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(out.report().volumes[0].id, volume);
    assert!(out.stderr.contains("not there yet"), "{out:#?}");
}

#[test]
fn an_aws_endpoint_that_refuses_connections_is_not_ready() {
    let node = Bed::new(NodeKind::Bare);
    let out = Protokube::new()
        .imds(node.imds())
        // Nothing listens on the discard port.
        .env("AWS_ENDPOINT_URL", "http://127.0.0.1:9/")
        .args([
            "discover-volumes",
            "--cluster-id",
            CLUSTER,
            "--timeout",
            "4s",
        ])
        .run();
    assert_eq!(out.code, 75, "{out:#?}");
    // Not reached within --timeout: refused connections retried by the SDK, then by the wait
    // (the line says which, naming the call either way).
    let line = out.error_lines()[0];
    assert!(
        line.contains("`ec2:DescribeVolumes`") && line.contains("--timeout"),
        "{line}"
    );
}

#[test]
fn the_operators_max_attempts_win_over_protokubes_default() {
    let node = Bed::new(NodeKind::Bare);
    node.etcd_volume(CLUSTER, &[("main", "a/a")]);
    node.moto().set_faults(json!([{
        "match": "DescribeVolumes", "rate": 1.0, "status": 503, "code": "RequestLimitExceeded"
    }]));
    let out = discover(&node).env("AWS_MAX_ATTEMPTS", "2").run();
    assert_eq!(out.code, 75, "{out:#?}");
    let tries = node.moto().count("DescribeVolumes");
    assert_eq!(tries, 2, "AWS_MAX_ATTEMPTS=2: two attempts, then 75");
}
