//! The run report (docs/commands.md) as the tests read it: typed, and written apart from the binary's own
//! types so that a renamed, missing or extra field fails here instead of passing unnoticed.

use std::collections::BTreeSet;

use serde::Deserialize;

/// The JSON report of one run (`-o json`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Report {
    pub command: String,
    pub dry_run: bool,
    pub changed: bool,
    pub changes: Vec<Change>,
    pub volumes: Vec<Volume>,
    pub warnings: Vec<String>,
    pub info: Vec<String>,
    #[serde(default)]
    pub error: Option<ReportError>,
}

/// One entry of `changes`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Change {
    pub kind: String,
    pub target: String,
    pub action: String,
    pub detail: String,
}

/// One entry of `volumes`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Volume {
    pub id: String,
    pub zone: String,
    pub state: String,
    #[serde(deserialize_with = "present")]
    pub attached_to: Option<String>,
    #[serde(deserialize_with = "present")]
    pub device: Option<String>,
    #[serde(deserialize_with = "present")]
    pub mountpoint: Option<String>,
    pub etcd: Vec<Membership>,
}

/// One etcd membership of a volume.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Membership {
    pub cluster: String,
    pub member: String,
    pub members: Vec<String>,
}

/// `error`, set when the run failed.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReportError {
    pub message: String,
    pub exit_code: u8,
}

/// An optional field that must still be written (`null`), as docs/commands.md shows it.
fn present<'de, D: serde::Deserializer<'de>>(de: D) -> Result<Option<String>, D::Error> {
    Option::deserialize(de)
}

impl Report {
    /// `(kind, target, action)` of every change: what a dry run and the run it plans must share.
    pub(crate) fn change_set(&self) -> BTreeSet<(String, String, String)> {
        self.changes
            .iter()
            .map(|c| (c.kind.clone(), c.target.clone(), c.action.clone()))
            .collect()
    }

    /// `(kind, action)` of every change, in order.
    pub(crate) fn actions(&self) -> Vec<(String, String)> {
        self.changes
            .iter()
            .map(|c| (c.kind.clone(), c.action.clone()))
            .collect()
    }

    /// The change to `target`, if the report has one.
    pub(crate) fn change_to(&self, target: &str) -> Option<&Change> {
        self.changes.iter().find(|c| c.target == target)
    }

    /// Whether some change does `action` to `target`.
    pub(crate) fn has(&self, action: &str, target: &str) -> bool {
        self.changes
            .iter()
            .any(|c| c.action == action && c.target == target)
    }

    /// The changes that are not `unchanged`.
    pub(crate) fn real_changes(&self) -> impl Iterator<Item = &Change> {
        self.changes.iter().filter(|c| c.action != "unchanged")
    }

    /// The failure of a run that failed (panics, showing the report, when it did not).
    pub(crate) fn failure(&self) -> &ReportError {
        self.error
            .as_ref()
            .unwrap_or_else(|| panic!("the run did not fail: {self:#?}"))
    }

    /// Whether any warning contains `needle`.
    pub(crate) fn warns(&self, needle: &str) -> bool {
        self.warnings.iter().any(|w| w.contains(needle))
    }
}
