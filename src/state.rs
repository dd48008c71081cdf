//! `<root>/var/lib/protokube/state.json`: what `mount` mounted, read by `render-manifests`.
//! Versioned; written atomically and only when it changes.

use std::path::PathBuf;

use anyhow::{bail, Context as _, Result};
use serde::{Deserialize, Serialize};

use crate::fsutil::{write_atomic, HostRoot, WriteOutcome};
use crate::volumes::EtcdMembership;

/// The state file's format version; a newer one is refused rather than misread.
pub const STATE_VERSION: u32 = 1;

/// Host path of the state file.
pub const STATE_HOST_PATH: &str = "/var/lib/protokube/state.json";

/// The state file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    pub version: u32,
    /// Mounted etcd volumes, sorted by volume id.
    pub volumes: Vec<MountedVolume>,
}

/// One mounted etcd volume. Paths are host paths (without `--root`), as manifests need them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MountedVolume {
    pub volume_id: String,
    /// The block device it was found at, e.g. `/dev/xvdu` or `/dev/disk/by-id/nvme-…`.
    pub device: PathBuf,
    /// `/mnt/master-<volume id>`.
    pub mountpoint: PathBuf,
    pub etcd: Vec<EtcdMembership>,
}

impl State {
    pub fn new(mut volumes: Vec<MountedVolume>) -> Self {
        volumes.sort_by(|a, b| a.volume_id.cmp(&b.volume_id));
        Self {
            version: STATE_VERSION,
            volumes,
        }
    }

    /// The serialized form: pretty JSON with a final newline; same state, same bytes.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut bytes = serde_json::to_vec_pretty(self).context("serializing the state")?;
        bytes.push(b'\n');
        Ok(bytes)
    }

    /// Reads the state file; `None` when there is none yet.
    pub fn load(root: &HostRoot) -> Result<Option<Self>> {
        let path = root.path(STATE_HOST_PATH);
        let text = match fs_err::read_to_string(&path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(err).context("reading the protokube state"),
        };
        let state: State = serde_json::from_str(&text).with_context(|| {
            format!(
                "state file `{}` is not valid; remove it and run `protokube mount` again",
                path.display()
            )
        })?;
        if state.version != STATE_VERSION {
            bail!(
                "state file `{}` has version {}, this protokube reads version {STATE_VERSION}; \
                 use the protokube that wrote it or run `protokube mount` after removing it",
                path.display(),
                state.version
            );
        }
        Ok(Some(state))
    }

    /// Writes the state file atomically (nothing when the bytes are equal).
    pub fn save(&self, root: &HostRoot) -> Result<WriteOutcome> {
        write_atomic(&root.path(STATE_HOST_PATH), &self.to_bytes()?, 0o644)
            .context("saving the protokube state")
    }
}

/// The record that protokube is formatting a volume: written before `mkfs` starts and removed
/// when the new filesystem has been verified. If a run is killed in between, the device holds a
/// half-made filesystem that no probe recognises; this record is the proof that the data is
/// protokube's own interrupted work, so the next run may format it again.
pub struct FormatIntent;

impl FormatIntent {
    fn path(root: &HostRoot, volume_id: &str) -> PathBuf {
        root.path(format!("/var/lib/protokube/formatting/{volume_id}"))
    }

    /// Records the intent (atomically, synced) before formatting `device`.
    pub fn record(root: &HostRoot, volume_id: &str, device: &std::path::Path) -> Result<()> {
        write_atomic(
            &Self::path(root, volume_id),
            format!("{}\n", device.display()).as_bytes(),
            0o600,
        )
        .context("recording the intent to format")?;
        Ok(())
    }

    /// Whether an earlier run started formatting the volume and did not finish.
    pub fn pending(root: &HostRoot, volume_id: &str) -> bool {
        Self::path(root, volume_id).exists()
    }

    /// Removes the record once the filesystem is verified.
    pub fn clear(root: &HostRoot, volume_id: &str) -> Result<()> {
        let path = Self::path(root, volume_id);
        match fs_err::remove_file(&path) {
            Ok(()) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(err) => return Err(err).context("clearing the intent to format"),
        }
        if let Some(dir) = path.parent() {
            fs_err::File::open(dir)?.sync_all()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn volume(id: &str) -> MountedVolume {
        MountedVolume {
            volume_id: id.into(),
            device: "/dev/xvdu".into(),
            mountpoint: HostRoot::volume_mountpoint_host_path(id),
            etcd: vec![EtcdMembership {
                cluster: "main".into(),
                member: "a".into(),
                members: vec!["a".into()],
            }],
        }
    }

    #[test]
    fn round_trip_sorted_and_deterministic() {
        let dir = tempfile::tempdir().unwrap();
        let root = HostRoot::new(dir.path());
        assert_eq!(State::load(&root).unwrap(), None);
        let state = State::new(vec![volume("vol-2"), volume("vol-1")]);
        assert_eq!(state.save(&root).unwrap(), WriteOutcome::Created);
        assert_eq!(state.save(&root).unwrap(), WriteOutcome::Unchanged);
        let loaded = State::load(&root).unwrap().unwrap();
        assert_eq!(loaded, state);
        assert_eq!(loaded.volumes[0].volume_id, "vol-1");
        assert_eq!(
            State::new(vec![volume("vol-1"), volume("vol-2")])
                .to_bytes()
                .unwrap(),
            state.to_bytes().unwrap()
        );
    }

    #[test]
    fn format_intent_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let root = HostRoot::new(dir.path());
        assert!(!FormatIntent::pending(&root, "vol-1"));
        FormatIntent::record(&root, "vol-1", std::path::Path::new("/dev/xvdu")).unwrap();
        assert!(FormatIntent::pending(&root, "vol-1"));
        assert!(!FormatIntent::pending(&root, "vol-2"));
        FormatIntent::clear(&root, "vol-1").unwrap();
        FormatIntent::clear(&root, "vol-1").unwrap();
        assert!(!FormatIntent::pending(&root, "vol-1"));
    }

    #[test]
    fn newer_versions_and_garbage_are_refused_with_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let root = HostRoot::new(dir.path());
        let path = root.path(STATE_HOST_PATH);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, r#"{"version": 2, "volumes": []}"#).unwrap();
        let err = State::load(&root).unwrap_err();
        assert!(format!("{err:#}").contains("version 2"), "{err:#}");
        std::fs::write(&path, "{").unwrap();
        let err = State::load(&root).unwrap_err();
        assert!(format!("{err:#}").contains("state.json"), "{err:#}");
    }
}
