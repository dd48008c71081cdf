//! Reading `<root>/var/lib/protokube/state.json` (its contents are `plan::state`) from the node's
//! files: a missing file is no state; a garbled or newer one is refused with the path and the way
//! out.

use std::path::Path;

use anyhow::{bail, Context as _, Result};

use crate::host::Files;
pub(crate) use crate::plan::state::{KnownZones, MountedVolume, State, Verified, STATE_VERSION};

/// The largest state file read (a cluster's is a few KiB).
const MAX_STATE_BYTES: u64 = 16 << 20;

impl State {
    /// Reads the state file at `path` on the node's `files`; `None` when there is none yet.
    pub(crate) fn load(files: &dyn Files, path: &Path) -> Result<Option<Self>> {
        let Some(bytes) = files
            .read(path, MAX_STATE_BYTES)
            .context("reading the protokube state")?
        else {
            return Ok(None);
        };
        let state: State = serde_json::from_slice(&bytes).with_context(|| {
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
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;
    use crate::etcd::EtcdMembership;
    use crate::host::linux::LinuxHost;

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
        assert_eq!(State::load(&LinuxHost, &path).unwrap(), None);
        let state = State::new(vec![volume("vol-2"), volume("vol-1")]);
        std::fs::write(&path, state.to_bytes().unwrap()).unwrap();
        let loaded = State::load(&LinuxHost, &path).unwrap().unwrap();
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
        let err = State::load(&LinuxHost, &path).unwrap_err();
        assert!(format!("{err:#}").contains("version 2"), "{err:#}");
        std::fs::write(&path, "{").unwrap();
        let err = State::load(&LinuxHost, &path).unwrap_err();
        assert!(format!("{err:#}").contains("state.json"), "{err:#}");
    }
}
