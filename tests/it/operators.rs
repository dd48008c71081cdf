//! What operators read without logging in: the metrics file (parsed by the Prometheus text
//! parser of the `prometheus_client` Python package in the test virtualenv), JSON log lines,
//! the build information, and the warning (exit 3) for a master's job without `--master`.

use crate::support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use support::bed::{Bed, NodeKind};
use support::report::Report;
use support::{moto::python, Protokube};

/// Every sample of the metrics file, `name{labels}` → value, as the Prometheus parser reads it.
fn metrics(path: &Path) -> BTreeMap<String, f64> {
    let script = r#"
import json, sys
from prometheus_client.parser import text_string_to_metric_families
out = {}
for family in text_string_to_metric_families(open(sys.argv[1]).read()):
    for s in family.samples:
        labels = ",".join('%s="%s"' % kv for kv in sorted(s.labels.items()))
        out[s.name + ("{%s}" % labels if labels else "")] = s.value
print(json.dumps(out))
"#;
    let out = Command::new(python())
        .args(["-c", script])
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The report's changes counted by `kind`/`action` labels, as the metrics file counts them.
fn change_counts(report: &Report) -> BTreeMap<String, f64> {
    let mut counts = BTreeMap::new();
    for change in &report.changes {
        let key = format!(
            "protokube_changes{{action=\"{}\",kind=\"{}\"}}",
            change.action, change.kind
        );
        *counts.entry(key).or_insert(0.0) += 1.0;
    }
    counts
}

fn only(metrics: &BTreeMap<String, f64>, prefix: &str) -> BTreeMap<String, f64> {
    metrics
        .iter()
        .filter(|(k, _)| k.starts_with(prefix))
        .map(|(k, v)| (k.clone(), *v))
        .collect()
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn the_metrics_file_parses_and_matches_the_report_after_success_failure_and_dry_run() {
    let node = Bed::new(NodeKind::HaMaster);
    let file = node.root.path().join("protokube.prom");
    let file_flag = file.display().to_string();

    // A success that changed things (the cold run).
    node.moto().reset_operations();
    let out = node.run(
        "sync",
        &["--metrics-file", &file_flag, "--detailed-exitcode"],
    );
    assert_eq!(out.code, 2, "{out:#?}");
    let served = node.moto().operations().len() as f64;
    let m = metrics(&file);
    assert_eq!(m["protokube_last_run_exit_code"], 2.0);
    assert_eq!(m["protokube_last_run_dry_run"], 0.0);
    assert_eq!(m["protokube_volumes_mounted"], 2.0);
    assert_eq!(only(&m, "protokube_changes"), change_counts(&out.report()));
    let calls: f64 = only(&m, "protokube_aws_calls").values().sum();
    assert_eq!(
        calls, served,
        "every request the emulator served is counted"
    );
    assert!(m.contains_key("protokube_aws_calls{operation=\"DescribeVolumes\"}"));
    let version = env!("CARGO_PKG_VERSION");
    let build = m
        .keys()
        .find(|k| k.starts_with("protokube_build_info"))
        .unwrap();
    assert!(build.contains(&format!("version=\"{version}\"")), "{build}");
    let success = m["protokube_last_success_timestamp_seconds"];
    let started = m["protokube_last_run_timestamp_seconds"];
    assert!(success >= started && m["protokube_last_run_duration_seconds"] > 0.0);

    // A failure: the exit code, and the last success kept.
    let out = node.run(
        "sync",
        &[
            "--metrics-file",
            &file_flag,
            "--zone",
            "nowhere.example.org",
        ],
    );
    assert_eq!(out.code, 1, "{out:#?}");
    let m = metrics(&file);
    assert_eq!(m["protokube_last_run_exit_code"], 1.0);
    assert_eq!(m["protokube_last_success_timestamp_seconds"], success);

    // A dry run: marked, and not a success.
    let out = node.run("sync", &["--metrics-file", &file_flag, "--dry-run"]);
    assert_eq!(out.code, 0, "{out:#?}");
    let m = metrics(&file);
    assert_eq!(m["protokube_last_run_dry_run"], 1.0);
    assert_eq!(m["protokube_last_success_timestamp_seconds"], success);
    assert_eq!(only(&m, "protokube_changes"), change_counts(&out.report()));
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn json_log_lines_parse_and_the_report_is_the_same_whatever_the_log_format() {
    let node = Bed::new(NodeKind::GossipMaster);
    assert_eq!(node.run("sync", &[]).code, 0);
    let text = node.run("sync", &["-o", "text"]);
    let json = node.run("sync", &["-o", "text", "--log-format", "json"]);
    assert_eq!(json.code, 0, "{json:#?}");
    assert_eq!(json.stdout, text.stdout);
    let lines: Vec<serde_json::Value> = json
        .stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect();
    assert!(!lines.is_empty(), "{json:#?}");
    for line in &lines {
        let ts = line["ts"].as_str().unwrap();
        humantime::parse_rfc3339(ts).unwrap_or_else(|e| panic!("{ts}: {e}"));
        assert!(
            line["level"].is_string() && line["msg"].is_string(),
            "{line}"
        );
    }
    let finished = lines.iter().find(|l| l["msg"] == "run finished").unwrap();
    assert_eq!(finished["command"], "sync");
    assert_eq!(finished["exit_code"], 0);
    assert_eq!(finished["changed"], false);
    assert_eq!(finished["cloud"], "aws", "{finished}");
    assert!(finished["cloud_calls"].as_u64().unwrap() >= 1, "{finished}");
    // Text logs written to a pipe (not a terminal, not the journal) carry a timestamp.
    let stamped = text
        .stderr
        .lines()
        .find(|l| l.contains("run finished"))
        .unwrap();
    let first = stamped.split_whitespace().next().unwrap();
    humantime::parse_rfc3339_weak(first).unwrap_or_else(|e| panic!("{stamped}: {e}"));
}

#[test]
fn version_says_the_build() {
    let out = Protokube::new().args(["version", "-o", "json"]).run();
    assert_eq!(out.code, 0, "{out:#?}");
    // Not a run report: the build's facts.
    let info: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(info["version"], env!("CARGO_PKG_VERSION"));
    for key in ["commit", "build_date", "rustc", "target"] {
        let value = info[key].as_str().unwrap();
        assert!(!value.is_empty(), "{key}");
    }
    assert!(info["rustc"].as_str().unwrap().starts_with("rustc "));
    assert!(info["features"].is_array());
    let line = Protokube::new().args(["--version"]).run();
    let commit = info["commit"].as_str().unwrap();
    assert_eq!(
        line.stdout.trim(),
        format!(
            "protokube {} ({commit} {})",
            env!("CARGO_PKG_VERSION"),
            info["build_date"].as_str().unwrap()
        )
    );
}

#[test]
#[ignore = "needs root: loop devices, mounts or namespaces; scripts/test runs it as root"]
fn a_masters_job_without_master_is_warned_and_exits_3_with_detailed_exitcode() {
    // The gossip cluster's master, run without --master: `mount` asks whether it is a master.
    let node = Bed::new(NodeKind::GossipMaster);
    let spec = node.spec();
    let run = |command: &str| {
        Protokube::new()
            .args([
                command,
                "-o",
                "json",
                "--detailed-exitcode",
                "--timeout",
                "20s",
            ])
            .moto(node.moto())
            .imds(node.imds.as_ref().unwrap())
            .arg_path("--cluster-spec", &spec)
            .arg_path("--root", node.root.path())
            .run()
    };
    for command in ["mount", "sync"] {
        let out = run(command);
        assert_eq!(out.code, 3, "{command}: {out:#?}");
        let warnings = out.report().warnings.join("\n");
        assert!(
            warnings.contains("master tags") && warnings.contains("--master is not set"),
            "{command}: {warnings}"
        );
    }
    // A real worker of the same cluster: no warning, exit 0.
    let worker = Bed::new(NodeKind::GossipWorker);
    let out = worker.run("sync", &["--detailed-exitcode"]);
    assert!(matches!(out.code, 0 | 2), "{out:#?}");
    assert!(!out.report().warns("--master"));
}

#[test]
fn to_the_journal_every_line_carries_its_syslog_priority() {
    let dir = tempfile::tempdir().unwrap();
    let (stdout, stderr) = (dir.path().join("stdout"), dir.path().join("stderr"));
    let stderr_file = std::fs::File::create(&stderr).unwrap();
    let stream = {
        use std::os::unix::fs::MetadataExt as _;
        let meta = stderr_file.metadata().unwrap();
        format!("{}:{}", meta.dev(), meta.ino())
    };
    // A dead metadata service: info lines while waiting, then the error line.
    let status = Protokube::new()
        .env("JOURNAL_STREAM", &stream)
        .args([
            "discover-volumes",
            "--cluster-id",
            "c.example.com",
            "--timeout",
            "2s",
        ])
        .spawn_to(std::fs::File::create(&stdout).unwrap(), stderr_file)
        .wait()
        .unwrap();
    assert_eq!(status.code(), Some(75));
    let lines = std::fs::read_to_string(&stderr).unwrap();
    let lines: Vec<&str> = lines.lines().collect();
    assert!(
        lines.iter().any(|l| l.starts_with("<6> INFO ")),
        "{lines:#?}"
    );
    assert!(
        lines.last().unwrap().starts_with("<3>protokube: error: "),
        "{lines:#?}"
    );
    assert!(
        lines.iter().all(|l| l.starts_with('<')),
        "every line has its priority: {lines:#?}"
    );
}
