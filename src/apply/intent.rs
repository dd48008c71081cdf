//! The record that protokube is formatting a volume, kept beside the state file: written
//! (synced) before `mkfs` starts, naming the volume, the device and the UUID `mkfs` is given;
//! removed once the volume carries its formatted tag. If a run is killed in between, the device
//! holds a half-made filesystem; this record proves it is protokube's own work, so the next run
//! may format it again — only it, recognised by that UUID.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};

use crate::apply::files::write_atomic;
use crate::paths::{HostRoot, FORMATTING_DIR};
use crate::plan::blank::IntentUuid;

#[derive(Serialize, Deserialize)]
struct Record {
    volume_id: String,
    device: PathBuf,
    uuid: String,
    /// `mkfs` finished but the cloud refused the formatted tag: the record stays as the node's
    /// witness that this filesystem is protokube's (never formatted again).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    formatted: bool,
}

fn path(root: &HostRoot, volume_id: &str) -> Result<PathBuf> {
    root.own(Path::new(FORMATTING_DIR).join(volume_id))
}

/// Records the intent to format `device` of `volume_id` with filesystem UUID `uuid`.
pub fn record(root: &HostRoot, volume_id: &str, device: &Path, uuid: &str) -> Result<()> {
    write(root, volume_id, device, uuid, false).context("recording the intent to format")
}

/// Records that the format of `volume_id` with `uuid` finished though the cloud refused its
/// formatted tag: from now on this record witnesses the filesystem in the tag's place.
pub fn record_formatted(root: &HostRoot, volume_id: &str, device: &Path, uuid: &str) -> Result<()> {
    write(root, volume_id, device, uuid, true).context("recording the format on this node")
}

fn write(
    root: &HostRoot,
    volume_id: &str,
    device: &Path,
    uuid: &str,
    formatted: bool,
) -> Result<()> {
    let record = Record {
        volume_id: volume_id.to_owned(),
        device: device.to_owned(),
        uuid: uuid.to_owned(),
        formatted,
    };
    let mut bytes = serde_json::to_vec(&record)?;
    bytes.push(b'\n');
    write_atomic(&path(root, volume_id)?, &bytes, 0o600)?;
    Ok(())
}

/// The intent an earlier run left for `volume_id` and did not finish, if any.
pub fn pending(root: &HostRoot, volume_id: &str) -> Result<Option<IntentUuid>> {
    let text = match fs_err::read_to_string(path(root, volume_id)?) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err).context("reading the intent to format"),
    };
    Ok(Some(match serde_json::from_str::<Record>(&text) {
        Ok(record) if record.volume_id == volume_id && record.formatted => {
            IntentUuid::Formatted(record.uuid)
        }
        Ok(record) if record.volume_id == volume_id => IntentUuid::Uuid(record.uuid),
        // An older protokube wrote only the device path.
        _ => IntentUuid::Unknown,
    }))
}

/// Removes the record once the format is finished.
pub fn clear(root: &HostRoot, volume_id: &str) -> Result<()> {
    let path = path(root, volume_id)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_with_the_uuid() {
        let dir = tempfile::tempdir().unwrap();
        let root = HostRoot::canonical(dir.path()).unwrap();
        assert_eq!(pending(&root, "vol-1").unwrap(), None);
        record(&root, "vol-1", Path::new("/dev/xvdu"), "u-1").unwrap();
        assert_eq!(
            pending(&root, "vol-1").unwrap(),
            Some(IntentUuid::Uuid("u-1".into()))
        );
        assert_eq!(pending(&root, "vol-2").unwrap(), None);
        record_formatted(&root, "vol-1", Path::new("/dev/xvdu"), "u-1").unwrap();
        assert_eq!(
            pending(&root, "vol-1").unwrap(),
            Some(IntentUuid::Formatted("u-1".into()))
        );
        clear(&root, "vol-1").unwrap();
        clear(&root, "vol-1").unwrap();
        assert_eq!(pending(&root, "vol-1").unwrap(), None);
        // A record from an older protokube: the device path alone.
        let legacy = root.path(FORMATTING_DIR).join("vol-3");
        std::fs::create_dir_all(legacy.parent().unwrap()).unwrap();
        std::fs::write(&legacy, "/dev/xvdu\n").unwrap();
        assert_eq!(pending(&root, "vol-3").unwrap(), Some(IntentUuid::Unknown));
    }
}
