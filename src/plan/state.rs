//! The state file's contents (`<root>/var/lib/protokube/state.json`, read in `state.rs`): what
//! `mount` mounted, read by `render-manifests`; what the last full check of the cloud found, so
//! a converged `sync` asks the cloud once, or a gossip worker not at all (docs/performance.md); the hosted
//! zones found for the `--zone`
//! rules. Versioned; serialized deterministically.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context as _, Result};

use serde::{Deserialize, Serialize};

use crate::cloud::{CloudVolume, InstanceInfo};
use crate::etcd::EtcdMembership;
use crate::plan::dns::hosts_block::HostRecords;
use crate::plan::dns::records::DesiredRecord;
use crate::plan::dns::zones::{Zone, ZoneRule};

/// The state file's format version; a newer one is refused rather than misread.
pub(crate) const STATE_VERSION: u32 = 1;

/// The state file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct State {
    pub(crate) version: u32,
    /// Mounted etcd volumes, sorted by volume id.
    pub(crate) volumes: Vec<MountedVolume>,
    /// What the last full check of the cloud found, when it found the node converged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) verified: Option<Verified>,
    /// A gossip worker's last full check: the masters it wrote into the hosts file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) worker: Option<WorkerVerified>,
    /// The hosted zones the `--zone` rules chose, once found (zones do not move).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) zones: Option<KnownZones>,
    /// What this instance's kOps tags say it is, asked once for kOps 1.36's unit (which names
    /// neither the cluster nor the role).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) node: Option<LearnedNode>,
    /// Names the cluster owns in a DNS service's zones and no longer has, as full reads found them: deleted
    /// only once missing for `--verify-interval` (docs/safety.md).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) missing_names: BTreeMap<String, MissingName>,
    /// Device names an attachment got stuck `attaching` on here: the next attach tries another
    /// name first (as clouds' CSI drivers do).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) stuck_device_names: Vec<String>,
    /// The `--remove-dns-names` list whose placeholders were removed (kOps removed them once
    /// per start): not looked at again while the unit lists the same names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) placeholders_removed: Vec<String>,
}

/// An owned name first found missing from the cluster's names at `since`, holding `values`
/// then. Values that change later mean another master still publishes it: the wait restarts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct MissingName {
    #[serde(with = "rfc3339")]
    pub(crate) since: std::time::SystemTime,
    pub(crate) values: Vec<String>,
}

/// This instance's cluster and role, from its `KubernetesCluster` and kOps' control-plane tags.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LearnedNode {
    /// The instance the tags were read from (another instance id: asked again).
    pub(crate) instance_id: String,
    pub(crate) cluster: String,
    pub(crate) control_plane: bool,
}

/// What the last full check found: the cloud's two answers, and the names as they stood
/// afterwards. A converged `sync` compares one fresh `DescribeInstances` answer with `masters`
/// and, while they agree and `--verify-interval` has not passed since `at`, trusts the rest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Verified {
    /// When the check was made (RFC 3339, UTC, seconds).
    #[serde(with = "rfc3339")]
    pub(crate) at: std::time::SystemTime,
    /// The cluster's running masters (`DescribeInstances`).
    pub(crate) masters: Vec<InstanceInfo>,
    /// The cluster's volumes in every zone (`DescribeVolumes`).
    pub(crate) volumes: Vec<CloudVolume>,
    /// The names published to a DNS service and verified there (none for the hosts file, which is
    /// read on every run anyway).
    pub(crate) published: Vec<DesiredRecord>,
    /// Desired names the check found held by someone else and left alone (warned about then):
    /// a stable outcome, so trusted runs neither ask nor warn again until the next full check.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) left_alone: Vec<LeftAlone>,
}

/// A desired name left alone because someone else holds it: why, as the warning said.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LeftAlone {
    pub(crate) name: String,
    pub(crate) reason: String,
}

/// What a gossip worker's last full check found (docs/performance.md): the masters' addresses and the
/// hosts block written from them. Trusted — the cloud not asked — for `--verify-interval` less
/// `jitter_seconds` (drawn at the check, up to a tenth of the interval, so a fleet's checks
/// spread out), while the block on
/// disk is the one written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WorkerVerified {
    #[serde(with = "rfc3339")]
    pub(crate) at: std::time::SystemTime,
    pub(crate) jitter_seconds: u64,
    /// The cluster checked.
    pub(crate) cluster: String,
    /// The cluster's running masters (`DescribeInstances`).
    pub(crate) masters: Vec<InstanceInfo>,
    /// The hosts file's managed block as written then: name → addresses.
    pub(crate) hosts: HostRecords,
}

/// The hosted zones found for a set of `--zone` rules.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct KnownZones {
    pub(crate) rules: Vec<ZoneRule>,
    pub(crate) zones: Vec<Zone>,
}

impl KnownZones {
    /// The zones, when they were found for these `rules`.
    pub(crate) fn for_rules(&self, rules: &[ZoneRule]) -> Option<&[Zone]> {
        (self.rules == rules).then_some(self.zones.as_slice())
    }
}

/// `SystemTime` as RFC 3339 text.
mod rfc3339 {
    use serde::{de::Error as _, Deserialize, Deserializer, Serializer};
    use std::time::SystemTime;

    pub(super) fn serialize<S: Serializer>(
        at: &SystemTime,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&humantime::format_rfc3339_seconds(*at))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<SystemTime, D::Error> {
        let text = String::deserialize(deserializer)?;
        humantime::parse_rfc3339_weak(&text).map_err(D::Error::custom)
    }
}

/// One mounted etcd volume. Paths are host paths (without `--root`), as manifests need them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MountedVolume {
    pub volume_id: String,
    /// The block device it was found at, e.g. `/dev/vdb` or a `/dev/disk/by-id/` link.
    pub device: PathBuf,
    /// `/mnt/master-<volume id>`.
    pub mountpoint: PathBuf,
    pub etcd: Vec<EtcdMembership>,
}

impl State {
    pub(crate) fn new(mut volumes: Vec<MountedVolume>) -> Self {
        volumes.sort_by(|a, b| a.volume_id.cmp(&b.volume_id));
        Self {
            version: STATE_VERSION,
            volumes,
            ..Self::default()
        }
    }

    /// This state with `volumes` mounted, the rest kept.
    pub(crate) fn with_volumes(self, volumes: Vec<MountedVolume>) -> Self {
        Self {
            version: STATE_VERSION,
            volumes: Self::new(volumes).volumes,
            ..self
        }
    }

    /// The serialized form: pretty JSON with a final newline; same state, same bytes.
    pub(crate) fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut bytes = serde_json::to_vec_pretty(self).context("serializing the state")?;
        bytes.push(b'\n');
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verified_time_is_rfc3339_and_absent_parts_are_left_out() {
        let state = State::new(Vec::new());
        let text = String::from_utf8(state.to_bytes().unwrap()).unwrap();
        assert!(
            !text.contains("verified") && !text.contains("zones"),
            "{text}"
        );
        let verified = Verified {
            at: std::time::UNIX_EPOCH + std::time::Duration::from_hours(24),
            masters: vec![],
            volumes: vec![],
            published: vec![],
            left_alone: vec![],
        };
        let state = State {
            verified: Some(verified.clone()),
            ..state
        };
        let text = String::from_utf8(state.to_bytes().unwrap()).unwrap();
        assert!(text.contains(r#""at": "1970-01-02T00:00:00Z""#), "{text}");
        let back: State = serde_json::from_str(&text).unwrap();
        assert_eq!(back.verified, Some(verified));
        // A state file without them (an older protokube's) still reads.
        let old: State = serde_json::from_str(r#"{"version": 1, "volumes": []}"#).unwrap();
        assert_eq!(old, State::new(Vec::new()));
    }

    #[test]
    fn new_volumes_keep_the_rest_of_the_state() {
        let state = State {
            node: Some(LearnedNode {
                instance_id: "i-1".into(),
                cluster: "c.example.com".into(),
                control_plane: true,
            }),
            missing_names: [(
                "api.c.example.com".to_owned(),
                MissingName {
                    since: std::time::UNIX_EPOCH,
                    values: vec!["10.0.0.1".into()],
                },
            )]
            .into(),
            ..State::new(Vec::new())
        };
        let mounted = state.clone().with_volumes(Vec::new());
        assert_eq!(mounted, state);
    }
}
