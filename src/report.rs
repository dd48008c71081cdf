//! The run report (docs/commands.md): one shape for every command, printed as text, JSON or YAML on stdout.

use std::fmt::Write as _;

use anyhow::Result;
use serde::Serialize;

use crate::etcd::EtcdMembership;

/// The `-o` formats.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OutputFormat {
    #[default]
    Text,
    Json,
    Yaml,
}

/// What a change is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    Volume,
    Device,
    Filesystem,
    Mount,
    File,
    Dns,
    Hosts,
    /// An addon channel applied with kOps' `channels` tool.
    Channel,
    /// A Kubernetes Node object (its labels).
    Node,
    /// A bootstrap RBAC object kOps' protokube made (`--initialize-rbac=true`).
    Rbac,
    /// A service of the host protokube starts (kubelet, kOps 1.12–1.18).
    Service,
}

/// What happened (or, with `--dry-run`, would happen) to a target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Action {
    Attach,
    Detach,
    Format,
    Resize,
    Mount,
    Unmount,
    Create,
    Update,
    Delete,
    /// A service of the host started.
    Start,
    Unchanged,
}

/// One entry of `changes`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Change {
    pub kind: ChangeKind,
    pub(crate) target: String,
    pub(crate) action: Action,
    pub(crate) detail: String,
}

/// One entry of `volumes` (filled by `discover-volumes`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct VolumeReport {
    pub(crate) id: String,
    pub(crate) zone: String,
    pub(crate) state: String,
    pub(crate) attached_to: Option<String>,
    pub(crate) device: Option<String>,
    pub(crate) mountpoint: Option<String>,
    pub(crate) etcd: Vec<EtcdMembership>,
}

/// Why a run failed: its error line and exit code.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ReportError {
    pub message: String,
    pub exit_code: u8,
}

/// The report of one run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Report {
    pub(crate) command: String,
    pub(crate) dry_run: bool,
    /// True when any change is not `unchanged`; kept in step by `Report::push`.
    pub changed: bool,
    pub changes: Vec<Change>,
    pub(crate) volumes: Vec<VolumeReport>,
    /// What an operator should fix, or know is degraded.
    pub(crate) warnings: Vec<String>,
    /// Facts of the node's normal state worth knowing, that ask nothing of anyone (etcd-manager
    /// owns etcd here, the unit's flags that mean nothing here): logged at info level.
    pub(crate) info: Vec<String>,
    /// Set when the run failed; `changes` then holds what was done before the failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ReportError>,
    /// Requests sent to the cloud, by operation (for the metrics file and the last log line);
    /// none before the run connected to its cloud.
    #[serde(skip)]
    pub(crate) cloud_calls: Option<CloudCalls>,
    /// This node looks like a master and `--master` is not set (warned; exit 3 with
    /// `--detailed-exitcode`).
    #[serde(skip)]
    pub(crate) master_flag_missing: bool,
    /// The etcd volumes the state file records mounted here after the run (for the metrics
    /// file), as the run's snapshot — the state file's one reader — has it; `None` for a run
    /// that has no snapshot (the Kubernetes API's commands) or ended before it had one.
    #[serde(skip)]
    pub(crate) volumes_mounted: Option<usize>,
    /// `gossip --once`: the gossip view's records, and the hosts block they make.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) gossip: Option<GossipReport>,
}

/// What `gossip --once` saw: the view's A and AAAA records, and the hosts block.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct GossipReport {
    pub(crate) records: Vec<GossipRecord>,
    /// The managed block's lines, as written (or, in a dry run, as they would be).
    pub(crate) block: Vec<String>,
}

/// One record of the gossip view.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct GossipRecord {
    pub(crate) name: String,
    #[serde(rename = "type")]
    pub(crate) kind: String,
    pub(crate) addresses: Vec<String>,
    pub(crate) version: u64,
    pub(crate) protocol: &'static str,
    pub(crate) peer: String,
}

/// The requests a run sent to its cloud (its DNS service included), by operation, retries
/// included.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CloudCalls {
    /// The provider's name, which the metric is named after (`protokube_<name>_calls`).
    pub(crate) cloud: &'static str,
    pub(crate) by_operation: std::collections::BTreeMap<String, u64>,
}

impl Report {
    pub fn new(command: &str, dry_run: bool) -> Self {
        Self {
            command: command.to_owned(),
            dry_run,
            changed: false,
            changes: Vec::new(),
            volumes: Vec::new(),
            warnings: Vec::new(),
            info: Vec::new(),
            error: None,
            cloud_calls: None,
            master_flag_missing: false,
            volumes_mounted: None,
            gossip: None,
        }
    }

    /// Records a change; anything but `unchanged` marks the report as changed.
    pub(crate) fn push(&mut self, change: Change) {
        self.changed |= change.action != Action::Unchanged;
        self.changes.push(change);
    }

    /// Records a warning; it is also logged at once (stderr) so it shows up in the text form too.
    /// A warning already recorded (several steps see the same skipped volume) is not repeated.
    pub(crate) fn warn(&mut self, warning: String) {
        if self.warnings.contains(&warning) {
            return;
        }
        tracing::warn!("{warning}");
        self.warnings.push(warning);
    }

    /// Records a fact of the node's normal state (not a warning: nobody has to act); it is also
    /// logged at once, at info level. A fact already recorded is not repeated.
    pub(crate) fn note(&mut self, fact: String) {
        if self.info.contains(&fact) {
            return;
        }
        tracing::info!("{fact}");
        self.info.push(fact);
    }

    /// The report in the chosen format, ending with a newline (empty text when there is nothing
    /// to say in text form).
    pub fn render(&self, format: OutputFormat) -> Result<String> {
        Ok(match format {
            OutputFormat::Json => {
                let mut out = serde_json::to_string_pretty(self)?;
                out.push('\n');
                out
            }
            OutputFormat::Yaml => yaml_serde::to_string(self)?,
            OutputFormat::Text => self.render_text(),
        })
    }

    fn render_text(&self) -> String {
        let mut out = String::new();
        if self.error.is_some() && self.changes.is_empty() {
            // The error line on stderr says it all.
            return out;
        }
        if self.command == "discover-volumes" {
            out.push_str(&volume_table(&self.volumes));
            return out;
        }
        let verb = if self.dry_run { "would " } else { "" };
        if let (Some(gossip), true) = (&self.gossip, self.dry_run) {
            out.push_str(&gossip_text(gossip));
        }
        for change in &self.changes {
            let action = serde_plain(&change.action);
            let kind = serde_plain(&change.kind);
            let _ = write!(out, "{verb}{action:<9} {kind:<10} {}", change.target);
            if change.detail.contains('\n') {
                // A diff: on its own lines, indented.
                out.push('\n');
                for line in change.detail.lines() {
                    let _ = writeln!(out, "    {line}");
                }
                continue;
            }
            if !change.detail.is_empty() {
                let _ = write!(out, "  ({})", change.detail);
            }
            out.push('\n');
        }
        if !self.changed && self.error.is_none() {
            out.push_str("nothing to do\n");
        }
        out
    }
}

/// The view and the block, for `gossip --once --dry-run`.
fn gossip_text(gossip: &GossipReport) -> String {
    let mut out = String::from("gossip view:\n");
    for r in &gossip.records {
        let _ = writeln!(
            out,
            "  {} {} {} (version {}, {} from `{}`)",
            r.name,
            r.kind,
            r.addresses.join(","),
            r.version,
            r.protocol,
            r.peer.escape_debug()
        );
    }
    if gossip.records.is_empty() {
        out.push_str("  (no A or AAAA records)\n");
    }
    out.push_str("hosts block:\n");
    for line in &gossip.block {
        let _ = writeln!(out, "  {line}");
    }
    out
}

fn serde_plain<T: Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn volume_table(volumes: &[VolumeReport]) -> String {
    if volumes.is_empty() {
        return "no etcd volumes found\n".to_owned();
    }
    let header = [
        "VOLUME",
        "ZONE",
        "STATE",
        "ATTACHED TO",
        "DEVICE",
        "MOUNTPOINT",
        "ETCD",
    ];
    let dash = || "-".to_owned();
    let rows: Vec<[String; 7]> = volumes
        .iter()
        .map(|v| {
            [
                v.id.clone(),
                v.zone.clone(),
                v.state.clone(),
                v.attached_to.clone().unwrap_or_else(dash),
                v.device.clone().unwrap_or_else(dash),
                v.mountpoint.clone().unwrap_or_else(dash),
                v.etcd
                    .iter()
                    .map(|m| format!("{}:{}/{}", m.cluster, m.member, m.members.join(",")))
                    .collect::<Vec<_>>()
                    .join(" "),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut text = String::new();
        for (i, cell) in cells.enumerate() {
            let _ = write!(text, "{cell:<width$}  ", width = widths[i]);
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line(&mut header.iter().copied());
    for row in &rows {
        line(&mut row.iter().map(String::as_str));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_follows_the_changes() {
        let mut report = Report::new("mount", false);
        report.push(Change {
            kind: ChangeKind::Mount,
            target: "/mnt/master-vol-1".into(),
            action: Action::Unchanged,
            detail: String::new(),
        });
        assert!(!report.changed);
        assert_eq!(
            report.render(OutputFormat::Text).unwrap().lines().last(),
            Some("nothing to do")
        );
        report.push(Change {
            kind: ChangeKind::Volume,
            target: "vol-1".into(),
            action: Action::Attach,
            detail: "as /dev/xvdu".into(),
        });
        assert!(report.changed);
        let json: serde_json::Value =
            serde_json::from_str(&report.render(OutputFormat::Json).unwrap()).unwrap();
        assert_eq!(json["changed"], true);
        assert_eq!(json["changes"][1]["action"], "attach");
        assert_eq!(json["changes"][1]["kind"], "volume");
        let yaml: yaml_serde::Value =
            yaml_serde::from_str(&report.render(OutputFormat::Yaml).unwrap()).unwrap();
        assert_eq!(yaml["command"], yaml_serde::Value::from("mount"));
    }
}
