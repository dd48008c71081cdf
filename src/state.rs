//! `<root>/var/lib/protokube/state.json`: what `mount` mounted, read by `render-manifests`.
//! Versioned; written atomically and only when it changes.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _, Result};
use serde::{Deserialize, Serialize};

use crate::etcd::EtcdMembership;

/// The state file's format version; a newer one is refused rather than misread.
pub const STATE_VERSION: u32 = 1;

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

    /// Reads the state file at `path`; `None` when there is none yet.
    pub fn load(path: &Path) -> Result<Option<Self>> {
        let text = match fs_err::read_to_string(path) {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn volume(id: &str) -> MountedVolume {
        MountedVolume {
            volume_id: id.into(),
            device: "/dev/xvdu".into(),
            mountpoint: crate::paths::volume_mountpoint(id),
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
        let path = dir.path().join("state.json");
        assert_eq!(State::load(&path).unwrap(), None);
        let state = State::new(vec![volume("vol-2"), volume("vol-1")]);
        std::fs::write(&path, state.to_bytes().unwrap()).unwrap();
        let loaded = State::load(&path).unwrap().unwrap();
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
    fn newer_versions_and_garbage_are_refused_with_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        std::fs::write(&path, r#"{"version": 2, "volumes": []}"#).unwrap();
        let err = State::load(&path).unwrap_err();
        assert!(format!("{err:#}").contains("version 2"), "{err:#}");
        std::fs::write(&path, "{").unwrap();
        let err = State::load(&path).unwrap_err();
        assert!(format!("{err:#}").contains("state.json"), "{err:#}");
    }
}
