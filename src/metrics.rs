//! The metrics file (`--metrics-file`): Prometheus text format for node-exporter's textfile
//! collector, written atomically after every run, failed runs and dry runs too. Gauges only
//! (the classic text format the collector parses has no `info` type); encoded by
//! `prometheus-client`.

use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, SystemTime};

use anyhow::{Context as _, Result};
use prometheus_client::encoding::text::encode_registry;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::gossip::store::Figures;
use crate::host::Files;
use crate::report::Report;
use crate::version::BuildInfo;

/// What one run leaves in the metrics file.
#[derive(Clone, Debug)]
pub(crate) struct RunMetrics<'a> {
    pub(crate) report: &'a Report,
    pub(crate) exit_code: u8,
    pub(crate) started: SystemTime,
    pub(crate) duration: Duration,
    /// The etcd volumes mounted here after the run (the state file), when the run knows.
    pub(crate) volumes_mounted: Option<usize>,
}

/// The largest metrics file read back (ours are a few KiB).
const MAX_METRICS_BYTES: u64 = 1 << 20;

/// The name of the last-success gauge (kept from the previous file by runs that did not
/// succeed).
const LAST_SUCCESS: &str = "protokube_last_success_timestamp_seconds";

type Labels = Vec<(String, String)>;

/// The file's text. `previous` is the file as the last run left it: a run that did not succeed
/// (an error, exit 3, or a dry run, which converges nothing) keeps its last-success time.
pub(crate) fn render(
    run: &RunMetrics<'_>,
    previous: Option<&str>,
    gossip: Option<&Figures>,
) -> Result<String> {
    let mut registry = Registry::with_prefix("protokube");
    let build = BuildInfo::current();
    family(
        &mut registry,
        "build_info",
        "The protokube build that ran (always 1)",
    )
    .get_or_create(&vec![
        ("version".into(), build.version.into()),
        ("commit".into(), build.commit.into()),
    ])
    .set(1);
    run_gauges(&mut registry, run, previous);
    report_families(&mut registry, run.report)?;
    if let Some(figures) = gossip {
        gossip_gauges(&mut registry, figures);
    }
    let mut text = String::new();
    encode_registry(&mut text, &registry).context("encoding the metrics")?;
    Ok(text)
}

/// Seconds since the epoch.
fn seconds(at: SystemTime) -> f64 {
    at.duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
}

/// Registers a gauge `name` holding `value`.
fn gauge(registry: &mut Registry, name: &str, help: &str, value: f64) {
    let gauge = Gauge::<f64, AtomicU64>::default();
    gauge.set(value);
    registry.register(name, help, gauge);
}

/// Registers a labelled family of gauges `name`.
fn family(registry: &mut Registry, name: &str, help: &str) -> Family<Labels, Gauge> {
    let family = Family::<Labels, Gauge>::default();
    registry.register(name, help, family.clone());
    family
}

/// The gossip member's figures: peers per protocol, records in the view, the age of its
/// last change.
fn gossip_gauges(registry: &mut Registry, figures: &Figures) {
    let peers = family(
        registry,
        "gossip_peers",
        "Peers the gossip member is connected to, by protocol",
    );
    for (protocol, count) in &figures.peers {
        peers
            .get_or_create(&vec![("protocol".into(), protocol.as_str().into())])
            .set(i64::try_from(*count).unwrap_or(i64::MAX));
    }
    gauge(
        registry,
        "gossip_records",
        "A and AAAA records in the gossip member's view",
        figures.records as f64,
    );
    gauge(
        registry,
        "gossip_seconds_since_change",
        "Seconds since the gossip member's view last changed",
        SystemTime::now()
            .duration_since(figures.changed_at)
            .unwrap_or_default()
            .as_secs_f64(),
    );
}

/// The run's own figures: when it started, how long it took, how it ended, the volumes it left
/// mounted, and when a run last succeeded.
fn run_gauges(registry: &mut Registry, run: &RunMetrics<'_>, previous: Option<&str>) {
    gauge(
        registry,
        "last_run_timestamp_seconds",
        "When the last run started, in seconds since the epoch",
        seconds(run.started),
    );
    gauge(
        registry,
        "last_run_duration_seconds",
        "How long the last run took",
        run.duration.as_secs_f64(),
    );
    gauge(
        registry,
        "last_run_exit_code",
        "The last run's exit code (0 done, 1 failed, 2 changed, 3 master job without --master, 64 usage, 75 not ready)",
        f64::from(run.exit_code),
    );
    gauge(
        registry,
        "last_run_dry_run",
        "1 when the last run was a dry run",
        f64::from(u8::from(run.report.dry_run)),
    );
    if let Some(mounted) = run.volumes_mounted {
        gauge(
            registry,
            "volumes_mounted",
            "etcd volumes mounted on this node after the last run",
            mounted as f64,
        );
    }
    let succeeded = matches!(run.exit_code, 0 | 2) && !run.report.dry_run;
    let last_success = if succeeded {
        Some(seconds(run.started + run.duration))
    } else {
        previous.and_then(previous_success)
    };
    if let Some(at) = last_success {
        gauge(
            registry,
            "last_success_timestamp_seconds",
            "When a run last succeeded (exit 0 or 2, not a dry run), in seconds since the epoch",
            at,
        );
    }
}

/// What the report says: the changes by kind and action, the cloud's calls by operation.
fn report_families(registry: &mut Registry, report: &Report) -> Result<()> {
    let changes = family(
        registry,
        "changes",
        "The last run's changes by kind and action (unchanged targets included)",
    );
    for change in &report.changes {
        let labels = vec![
            ("kind".into(), label(&change.kind)?),
            ("action".into(), label(&change.action)?),
        ];
        changes.get_or_create(&labels).inc();
    }
    if let Some(cloud_calls) = &report.cloud_calls {
        let cloud = cloud_calls.cloud;
        let calls = family(
            registry,
            &format!("{cloud}_calls"),
            &format!(
                "Requests the last run sent to the cloud ({cloud}, retries included), by \
                 operation"
            ),
        );
        for (operation, count) in &cloud_calls.by_operation {
            let count = i64::try_from(*count).unwrap_or(i64::MAX);
            calls
                .get_or_create(&vec![("operation".into(), operation.clone())])
                .set(count);
        }
    }
    Ok(())
}

/// A report enum's name as the report spells it (`volume`, `attach`, …).
fn label(value: &impl serde::Serialize) -> Result<String> {
    match serde_json::to_value(value).context("naming a change")? {
        serde_json::Value::String(name) => Ok(name),
        other => Ok(other.to_string()),
    }
}

/// The last-success time a metrics file holds.
fn previous_success(text: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(LAST_SUCCESS)?.strip_prefix(' '))
        .and_then(|value| value.trim().parse().ok())
}

/// Reads the previous metrics file, if any (unreadable counts as none).
pub(crate) fn read_previous(files: &dyn Files, path: &Path) -> Option<String> {
    let bytes = files.read(path, MAX_METRICS_BYTES).ok()??;
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Action, Change, ChangeKind};

    fn run(report: &Report, exit_code: u8) -> String {
        let report = Report {
            cloud_calls: Some(crate::report::CloudCalls {
                cloud: "aws",
                by_operation: std::collections::BTreeMap::from([(
                    "DescribeInstances".to_owned(),
                    1,
                )]),
            }),
            ..report.clone()
        };
        let metrics = RunMetrics {
            report: &report,
            exit_code,
            started: SystemTime::UNIX_EPOCH + Duration::from_secs(1_000),
            duration: Duration::from_millis(250),
            volumes_mounted: Some(2),
        };
        render(
            &metrics,
            Some("protokube_last_success_timestamp_seconds 900.5\n"),
            None,
        )
        .unwrap()
    }

    #[test]
    fn gauges_for_the_run_and_the_last_success_kept_by_a_failure() {
        let mut report = Report::new("sync", false);
        report.push(Change {
            kind: ChangeKind::Volume,
            target: "vol-1".into(),
            action: Action::Attach,
            detail: String::new(),
        });
        let text = run(&report, 0);
        for line in [
            "protokube_last_run_exit_code 0.0",
            "protokube_changes{kind=\"volume\",action=\"attach\"} 1",
            "protokube_aws_calls{operation=\"DescribeInstances\"} 1",
            "protokube_volumes_mounted 2.0",
            "protokube_last_success_timestamp_seconds 1000.25",
            "protokube_last_run_duration_seconds 0.25",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
        let failed = run(&report, 1);
        assert!(
            failed.contains("protokube_last_success_timestamp_seconds 900.5"),
            "{failed}"
        );
        let dry = run(&Report::new("sync", true), 0);
        assert!(
            dry.contains("protokube_last_success_timestamp_seconds 900.5"),
            "{dry}"
        );
        assert!(dry.contains("protokube_last_run_dry_run 1.0"), "{dry}");
    }

    #[test]
    fn a_members_figures_are_gauges() {
        let report = Report::new("gossip", false);
        let figures = Figures {
            peers: [
                (crate::gossip::view::Protocol::Mesh, 3),
                (crate::gossip::view::Protocol::Memberlist, 4),
            ]
            .into(),
            records: 2,
            changed_at: SystemTime::now(),
        };
        let metrics = RunMetrics {
            report: &report,
            exit_code: 0,
            started: SystemTime::now(),
            duration: Duration::ZERO,
            volumes_mounted: None,
        };
        let text = render(&metrics, None, Some(&figures)).unwrap();
        for line in [
            "protokube_gossip_peers{protocol=\"mesh\"} 3",
            "protokube_gossip_peers{protocol=\"memberlist\"} 4",
            "protokube_gossip_records 2.0",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
        assert!(!render(&metrics, None, None).unwrap().contains("gossip"));
    }
}
